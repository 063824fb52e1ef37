"""tfsubword: subword tokenizers that run inside the TensorFlow graph with core ops only.

The public names are imported on first use, so that the pure-Python parts (such as the trainers'
merge loop in `tfsubword.train.wordpiece`) can be used without loading TensorFlow.
"""

import importlib

__all__ = [
    "BPELayer",
    "BertPreprocessor",
    "HuggingFaceTokenizer",
    "SegmentPacker",
    "SentencePieceLayer",
    "UnigramLayer",
    "WordPieceLayer",
    "from_huggingface",
    "train_bpe",
    "train_unigram",
    "train_wordpiece",
]
__version__ = "0.1.0"

_PUBLIC = {
    "BPELayer": "tfsubword.layers.bpe",
    "BertPreprocessor": "tfsubword.layers.bert",
    "HuggingFaceTokenizer": "tfsubword.layers.huggingface",
    "SegmentPacker": "tfsubword.layers.packing",
    "SentencePieceLayer": "tfsubword.layers.sentencepiece",
    "UnigramLayer": "tfsubword.layers.unigram",
    "WordPieceLayer": "tfsubword.layers.wordpiece",
    "from_huggingface": "tfsubword.layers.huggingface",
    "train_bpe": "tfsubword.train",
    "train_unigram": "tfsubword.train",
    "train_wordpiece": "tfsubword.train",
}


def __getattr__(name):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'tfsubword' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
