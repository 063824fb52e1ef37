"""The Keras layers: `TokenizerLayer` (`base`) and the tokenizers built on it, then packing."""
