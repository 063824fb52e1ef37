"""`BertPreprocessor`: raw text (one segment or a pair) -> BERT's model inputs, inside the graph."""

import keras
import tensorflow as tf

from tfsubword.packing import TRUNCATIONS, SegmentPacker
from tfsubword.wordpiece import WordPieceLayer


@keras.saving.register_keras_serializable(package="tfsubword")
class BertPreprocessor(keras.layers.Layer):
    """Strings -> `{"token_ids", "segment_ids", "padding_mask"}`, each `[batch, sequence_length]`.

    `[CLS] a [SEP]` for one input, `[CLS] a [SEP] b [SEP]` for a pair `(a, b)`: BERT's tokenizer
    (`WordPieceLayer`), then `SegmentPacker`. Core TensorFlow ops only, so a model whose first layer
    this is exports with `model.export()` and serves from plain TensorFlow.

    Args:
        vocabulary: list of str or the path of a one-token-per-line file.
        sequence_length: int. Defaults to 512.
        truncate: "round_robin" (the default, as keras-hub), "waterfall" or "longest_first" (as Hugging
            Face). See `SegmentPacker`.
        lowercase, strip_accents, split_on_cjk, max_chars_per_word, unknown_token, suffix_indicator:
            passed to `WordPieceLayer`.
        cls_token, sep_token, pad_token: str. The special tokens; they must be in the vocabulary, except
            `pad_token` (padding is id 0 without it). Default "[CLS]", "[SEP]", "[PAD]".

    Examples:

    >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "fox", "runs"]
    >>> preprocessor = BertPreprocessor(vocab, sequence_length=8)
    >>> inputs = preprocessor((tf.constant(["The fox"]), tf.constant(["runs"])))
    >>> inputs["token_ids"].numpy().tolist()
    [[2, 4, 5, 3, 6, 3, 0, 0]]
    >>> inputs["segment_ids"].numpy().tolist()
    [[0, 0, 0, 0, 1, 1, 0, 0]]
    >>> inputs["padding_mask"].numpy().tolist()
    [[True, True, True, True, True, True, False, False]]
    """

    def __init__(
        self,
        vocabulary=None,
        *,
        sequence_length=512,
        truncate="round_robin",
        lowercase=True,
        strip_accents=None,
        split_on_cjk=True,
        max_chars_per_word=100,
        unknown_token="[UNK]",
        suffix_indicator="##",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        **kwargs,
    ):
        if truncate not in TRUNCATIONS:
            raise ValueError(f"`truncate` must be one of {TRUNCATIONS}. Received: truncate={truncate!r}.")
        if isinstance(sequence_length, bool) or not isinstance(sequence_length, int) or sequence_length < 3:
            raise ValueError(f"`sequence_length` must be an int of at least 3. Received: sequence_length={sequence_length!r}.")
        for name, token in (("cls_token", cls_token), ("sep_token", sep_token), ("pad_token", pad_token)):
            if not isinstance(token, str) or not token:
                raise ValueError(f"`{name}` must be a non-empty str. Received: {name}={token!r}.")
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.sequence_length, self.truncate = sequence_length, truncate
        self.cls_token, self.sep_token, self.pad_token = cls_token, sep_token, pad_token
        self.tokenizer = WordPieceLayer(
            lowercase=lowercase,
            strip_accents=strip_accents,
            split_on_cjk=split_on_cjk,
            max_chars_per_word=max_chars_per_word,
            unknown_token=unknown_token,
            suffix_indicator=suffix_indicator,
            name="tokenizer",
        )
        self.packer = None
        self.built = True
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def set_vocabulary(self, vocabulary):
        self.tokenizer.set_vocabulary(vocabulary)
        self._make_packer()

    def _make_packer(self):
        tokens = set(self.tokenizer.get_vocabulary())
        for name in ("cls_token", "sep_token"):
            if getattr(self, name) not in tokens:
                raise ValueError(f"The vocabulary does not contain `{name}`={getattr(self, name)!r}.")
        ids = self.tokenizer.token_to_id
        self.packer = SegmentPacker(
            self.sequence_length,
            start_value=ids(self.cls_token),
            end_value=ids(self.sep_token),
            pad_value=ids(self.pad_token) if self.pad_token in tokens else 0,
            truncate=self.truncate,
            name="packer",
        )

    @tf.autograph.experimental.do_not_convert
    def call(self, inputs):
        if self.packer is None:  # a model loaded from .keras: the tokenizer's vocabulary came as an asset
            self._make_packer()
        segments = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
        if not 1 <= len(segments) <= 2:
            raise ValueError(f"BertPreprocessor takes one string tensor or a pair; received {len(segments)} inputs.")
        return self.packer(tuple(self.tokenizer(segment) for segment in segments))

    def compute_output_spec(self, inputs):
        first = inputs[0] if isinstance(inputs, (tuple, list)) else inputs
        shape = (self.sequence_length,) if len(first.shape) == 0 else (first.shape[0], self.sequence_length)
        return {
            "token_ids": keras.KerasTensor(shape, dtype="int32"),
            "segment_ids": keras.KerasTensor(shape, dtype="int32"),
            "padding_mask": keras.KerasTensor(shape, dtype="bool"),
        }

    def get_config(self):
        config = super().get_config()
        tokenizer = self.tokenizer.get_config()
        config.update({name: tokenizer[name] for name in (
            "lowercase", "strip_accents", "split_on_cjk", "max_chars_per_word", "unknown_token", "suffix_indicator")})
        config.update(
            {
                "vocabulary": None,  # saved with the tokenizer, as an asset
                "sequence_length": self.sequence_length,
                "truncate": self.truncate,
                "cls_token": self.cls_token,
                "sep_token": self.sep_token,
                "pad_token": self.pad_token,
            }
        )
        return config
