"""`HuggingFaceUnigram`: the `Unigram` model of Hugging Face `tokenizers`, the part of a `tokenizer.json`
that `from_huggingface` cannot take from `UnigramLayer` as it is.

Where SentencePiece segments a whole line in single precision and never matches its control pieces,
Hugging Face segments each pre-tokenized word alone, in double precision, over every piece of the
vocabulary; a character that starts no piece is an unknown piece scoring the lowest score less 10, and
unknown pieces side by side in a word (the unknown token read in the text included) become one.
"""

import keras
import numpy as np
import tensorflow as tf

from tfsubword import checks
from tfsubword import graph_ops as ops
from tfsubword.layers.base import TokenizerLayer
from tfsubword.segment.viterbi import Viterbi

_UNKNOWN_PENALTY = 10.0


@keras.saving.register_keras_serializable(package="tfsubword")
class HuggingFaceUnigram(TokenizerLayer):
    """Hugging Face's `Unigram` model: pre-tokenized text -> ids.

    Args:
        vocabulary: the pieces, a list of str (ids are positions).
        scores: the score (log-probability) of each piece, a list of float.
        unknown_id: int, the id of the unknown piece.
        split_at: str or None. One character that starts each word (the `Metaspace` replacement of
            a pre-tokenizer that splits); None: each text is one word.
        pad_token: str. Defaults to "<pad>".
        dtype: an integer dtype. Defaults to "int32".
    """

    def __init__(
        self, vocabulary=None, *, scores=(), unknown_id=0, split_at=None, pad_token="<pad>", dtype="int32", **kwargs
    ):
        self.scores = [float(score) for score in scores]
        self.unknown_id = checks.integer("unknown_id", unknown_id, minimum=0)
        if split_at is not None and (not isinstance(split_at, str) or len(split_at) != 1):
            raise checks.invalid("split_at", split_at, "one character or None")
        self.split_at = split_at
        super().__init__(vocabulary, pad_token=pad_token, dtype=dtype, **kwargs)

    def _validate_vocabulary(self, tokens):
        if len(self.scores) != len(tokens):
            raise ValueError(f"`scores` has {len(self.scores)} values for {len(tokens)} pieces.")
        if not all(np.isfinite(self.scores)):
            raise ValueError("`scores` must be finite numbers.")
        if self.unknown_id >= len(tokens):
            raise ValueError(f"`unknown_id`={self.unknown_id} is outside the vocabulary of {len(tokens)} pieces.")

    def _build(self, tokens):
        n = len(tokens)
        keys = [(i, token) for i, token in enumerate(tokens) if token]
        # Read in the lattice at id n: a character that starts no piece.
        path_scores = np.array(self.scores + [min(self.scores) - _UNKNOWN_PENALTY], np.float64)
        piece_chars = np.array([len(token) for token in tokens] + [1], np.int64)
        self._segmenter = Viterbi(
            [token for _, token in keys],
            [i for i, _ in keys],
            path_scores,
            n,
            max([len(token) for _, token in keys] + [1]),
            piece_chars,
            space=None if self.split_at is None else ord(self.split_at),
            words_alone=True,
            unknown_as=self.unknown_id,
        )

    def _unknown_token_id(self):
        return self.unknown_id

    def _special_tokens(self):
        return [self._tokens[self.unknown_id]]

    def _tokenize_strings(self, strings):
        ids, splits = self._segmenter(*ops.decode_utf8(strings))
        return tf.RaggedTensor.from_row_splits(ids, splits, validate=False)

    def get_config(self):
        config = super().get_config()
        config.update({"scores": self.scores, "unknown_id": self.unknown_id, "split_at": self.split_at})
        return config
