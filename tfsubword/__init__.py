"""tfsubword: subword tokenizers that run inside the TensorFlow graph with core ops only."""

from tfsubword.wordpiece import WordPieceLayer

__all__ = ["WordPieceLayer"]
__version__ = "0.1.0"
