"""The models of Hugging Face `tokenizers` that `from_huggingface` cannot take from tfsubword's layers
as they are: `Unigram` and `WordPiece` on words that the file's pre-tokenizer cut.

`HuggingFaceWordPiece` pieces each text as one word, with nothing of BERT's normalization or
splitting around it (`WordPieceLayer` does those).

`HuggingFaceUnigram`: where SentencePiece segments a whole line in single precision and never matches
its control pieces, Hugging Face segments each pre-tokenized word alone, in double precision, over
every piece of the vocabulary; a character that starts no piece is an unknown piece scoring the lowest
score less 10, and unknown pieces side by side in a word (the unknown token read in the text included) become one.
"""

import keras
import numpy as np
import tensorflow as tf

from tfsubword import checks
from tfsubword import graph_ops as ops
from tfsubword.layers.base import TokenizerLayer
from tfsubword.segment.sampling import MAX_NBEST_SIZE, LatticeSampler
from tfsubword.segment.viterbi import Viterbi
from tfsubword.segment.wordpiece import WordPiece

_UNKNOWN_PENALTY = 10.0
_BYTE_PIECES = [f"<0x{byte:02X}>" for byte in range(256)]


@keras.saving.register_keras_serializable(package="tfsubword")
class HuggingFaceUnigram(TokenizerLayer):
    """Hugging Face's `Unigram` model: pre-tokenized text -> ids.

    Args:
        vocabulary: the pieces, a list of str (ids are positions).
        scores: the score (log-probability) of each piece, a list of float.
        unknown_id: int, the id of the unknown piece.
        split_at: str or None. One character that starts each word (the `Metaspace` replacement of
            a pre-tokenizer that splits); None: each text is one word.
        byte_fallback: bool. Runs of unknown pieces in a word become the pieces `<0x00>` to `<0xFF>`
            of their UTF-8 bytes (the unknown piece alone, written in the text, stays itself); all
            256 must be in the vocabulary. Defaults to False.
        alpha, nbest_size: subword regularization with `training=True`, as Hugging Face's
            `Unigram(alpha=..., nbest_size=...)` samples: `alpha` None or 0 (the default): none;
            `nbest_size` None or 0: among all segmentations of each word (Hugging Face's forward pass,
            which scales the paths before each piece by `alpha` too: see `sampling.LatticeSampler`),
            1: none, k from 2 to 512: among the k best, in proportion to exp(alpha * score).
        seed: int or None. The seed of the sampled segmentations (`keras.random.SeedGenerator`).
        pad_token: str. Defaults to "<pad>".
        dtype: an integer dtype. Defaults to "int32".
    """

    def __init__(
        self,
        vocabulary=None,
        *,
        scores=(),
        unknown_id=0,
        split_at=None,
        byte_fallback=False,
        alpha=None,
        nbest_size=None,
        seed=None,
        pad_token="<pad>",
        dtype="int32",
        **kwargs,
    ):
        self.scores = [float(score) for score in scores]
        self.alpha = checks.nonnegative("alpha", alpha, optional=True)
        self.nbest_size = checks.integer("nbest_size", nbest_size, optional=True, minimum=0)
        if nbest_size is not None and nbest_size > MAX_NBEST_SIZE:
            raise checks.invalid("nbest_size", nbest_size, f"an int from 0 to {MAX_NBEST_SIZE}, or None")
        self._init_sampling(bool(self.alpha) and self.nbest_size != 1, seed)
        self.byte_fallback = checks.boolean("byte_fallback", byte_fallback)
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
        present = set(tokens) if self.byte_fallback else set()
        missing = [byte for byte in _BYTE_PIECES if self.byte_fallback and byte not in present]
        if missing:
            raise ValueError(f"`byte_fallback` needs the 256 byte pieces; the vocabulary lacks {missing[0]!r}.")

    def _build(self, tokens):
        n = len(tokens)
        keys = [(i, token) for i, token in enumerate(tokens) if token]
        # Read in the lattice at id n: a character that starts no piece.
        path_scores = np.array(self.scores + [min(self.scores) - _UNKNOWN_PENALTY], np.float64)
        piece_chars = np.array([len(token) for token in tokens] + [1], np.int64)
        self._sampler = None
        segmenter = self._segmenter = Viterbi(
            [token for _, token in keys],
            [i for i, _ in keys],
            path_scores,
            n,
            max([len(token) for _, token in keys] + [1]),
            piece_chars,
            space=None if self.split_at is None else ord(self.split_at),
            byte_ids=[self._token_ids[byte] for byte in _BYTE_PIECES] if self.byte_fallback else None,
            words_alone=True,
            unknown_as=self.unknown_id,
            unknown_text=tokens[self.unknown_id],
        )
        if self._samples():
            nbest_size = self.nbest_size if self.nbest_size else -1
            self._sampler = LatticeSampler(segmenter.lattice, path_scores, self.alpha, nbest_size, scaled_prefixes=True)

    def _unknown_token_id(self):
        return self.unknown_id

    def _special_tokens(self):
        return [self._tokens[self.unknown_id]]

    def _tokenize_strings(self, strings):
        ids, splits = self._segmenter(*ops.decode_utf8(strings))
        return tf.RaggedTensor.from_row_splits(ids, splits, validate=False)

    def _sample(self, strings, seed):
        ids, splits = self._segmenter.sample(*ops.decode_utf8(strings), self._sampler, seed)
        return tf.RaggedTensor.from_row_splits(ids, splits, validate=False)

    def tokenize_spaced(self, strings, replacement, seed=None):
        """`tokenize` of `strings` with each space (U+0020) written as the character `replacement`, as
        `Metaspace` writes them: done on the decoded text, where a regex rewrite would cost a match
        per space. With `seed` (int32 `[2]`), sampled as `training=True` samples."""
        code_points, splits = ops.decode_utf8(strings)
        code_points = tf.where(code_points == ord(" "), ord(replacement), code_points)
        if seed is None:
            ids, id_splits = self._segmenter(code_points, splits)
        else:
            ids, id_splits = self._segmenter.sample(code_points, splits, self._sampler, seed)
        return tf.RaggedTensor.from_row_splits(ids, id_splits, validate=False)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "scores": self.scores,
                "unknown_id": self.unknown_id,
                "split_at": self.split_at,
                "byte_fallback": self.byte_fallback,
                "alpha": self.alpha,
                "nbest_size": self.nbest_size,
                "seed": self.seed,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="tfsubword")
class HuggingFaceWordPiece(TokenizerLayer):
    """Hugging Face's `WordPiece` model: words -> ids, each text one word.

    A word is its longest token, then its longest continuation token (`suffix_indicator` + characters)
    from there, and so on; a word that cannot be pieced, or of more than `max_chars_per_word`
    characters, is the unknown token.

    Args:
        vocabulary: the tokens, a list of str (ids are positions).
        unknown_token: str, a token of the vocabulary. Defaults to "[UNK]".
        suffix_indicator: str. Defaults to "##".
        max_chars_per_word: int. Defaults to 100.
        jit_compile: bool. Walk the words that are no token with a loop compiled by XLA (see
            `WordPieceLayer`). Defaults to False.
        pad_token: str. Defaults to "[PAD]".
        dtype: an integer dtype. Defaults to "int32".
    """

    def __init__(
        self,
        vocabulary=None,
        *,
        unknown_token="[UNK]",
        suffix_indicator="##",
        max_chars_per_word=100,
        jit_compile=False,
        pad_token="[PAD]",
        dtype="int32",
        **kwargs,
    ):
        self.jit_compile = checks.boolean("jit_compile", jit_compile)
        self.unknown_token = checks.string("unknown_token", unknown_token)
        self.suffix_indicator = checks.string("suffix_indicator", suffix_indicator, empty=True)
        self.max_chars_per_word = checks.integer("max_chars_per_word", max_chars_per_word)
        super().__init__(vocabulary, pad_token=pad_token, dtype=dtype, **kwargs)

    def _validate_vocabulary(self, tokens):
        if self.unknown_token not in tokens:
            raise ValueError(f"The vocabulary does not contain the unknown token {self.unknown_token!r}.")

    def _build(self, tokens):
        # A word that is a token is that token (its longest match is itself).
        whole = [(token, i) for i, token in enumerate(tokens) if token and len(token) <= self.max_chars_per_word]
        unknown = self._token_ids[self.unknown_token]
        self._segmenter = WordPiece(
            tokens, unknown, self.suffix_indicator, self.max_chars_per_word, whole, self.jit_compile
        )

    def _unknown_token_id(self):
        return self._token_ids[self.unknown_token]

    def _special_tokens(self):
        return [self.unknown_token]

    def _tokenize_strings(self, strings):
        ids, splits = self._segmenter.segment(*ops.decode_utf8(strings))
        return tf.RaggedTensor.from_row_splits(ids, splits, validate=False)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "unknown_token": self.unknown_token,
                "suffix_indicator": self.suffix_indicator,
                "max_chars_per_word": self.max_chars_per_word,
                "jit_compile": self.jit_compile,
            }
        )
        return config
