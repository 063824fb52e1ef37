"""`BertPreprocessor`: raw text (one segment or a pair) -> BERT's model inputs, inside the graph."""

import keras
import tensorflow as tf

from tfsubword import checks
from tfsubword.files.vocab import BERT_SPECIAL_TOKENS
from tfsubword.layers.packing import TRUNCATIONS, SegmentPacker
from tfsubword.layers.wordpiece import WordPieceLayer

_PAD, _UNK, _CLS, _SEP, _ = BERT_SPECIAL_TOKENS


@keras.saving.register_keras_serializable(package="tfsubword")
class BertPreprocessor(keras.layers.Layer):
    """Strings -> `{"token_ids", "segment_ids", "padding_mask"}`, each `[batch, sequence_length]`.

    `[CLS] a [SEP]` for one input, `[CLS] a [SEP] b [SEP]` for a pair `(a, b)`: BERT's tokenizer
    (`WordPieceLayer`), then `SegmentPacker`. Core TensorFlow ops only, so a model whose first layer
    this is exports with `model.export()` and serves from plain TensorFlow.

    Args:
        vocabulary: list of str or the path of a one-token-per-line file, for a `WordPieceLayer` with
            BERT's uncased rules. Pass this or `tokenizer`.
        tokenizer: a `WordPieceLayer` with a vocabulary and the rules wanted (cased, say). It is saved
            with the preprocessor.
        sequence_length: int. Defaults to 512.
        truncate: "round_robin" (the default, as keras-hub), "waterfall" or "longest_first" (as Hugging
            Face). See `SegmentPacker`.
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
    >>> cased = BertPreprocessor(tokenizer=WordPieceLayer(vocab, lowercase=False), sequence_length=8)
    """

    def __init__(
        self,
        vocabulary=None,
        *,
        tokenizer=None,
        sequence_length=512,
        truncate="round_robin",
        cls_token=_CLS,
        sep_token=_SEP,
        pad_token=_PAD,
        **kwargs,
    ):
        checks.choice("truncate", truncate, TRUNCATIONS)
        checks.integer("sequence_length", sequence_length, minimum=3)
        for name, token in (("cls_token", cls_token), ("sep_token", sep_token), ("pad_token", pad_token)):
            checks.string(name, token)
        if vocabulary is not None and tokenizer is not None:
            raise ValueError("Pass `vocabulary` or `tokenizer`, not both: a tokenizer carries its vocabulary.")
        if tokenizer is not None and not isinstance(tokenizer, WordPieceLayer):
            raise checks.invalid("tokenizer", tokenizer, "a WordPieceLayer")
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.sequence_length, self.truncate = sequence_length, truncate
        self.cls_token, self.sep_token, self.pad_token = cls_token, sep_token, pad_token
        self.tokenizer = tokenizer if tokenizer is not None else WordPieceLayer(name="tokenizer")
        self.packer = None
        self.built = True
        if vocabulary is not None:
            self.tokenizer.set_vocabulary(vocabulary)
        if self.tokenizer._tokens is not None:
            self._make_packer()

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
    def call(self, inputs, training=None):
        if self.packer is None:  # a model loaded from .keras: the tokenizer's vocabulary came as an asset
            self._make_packer()
        segments = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
        if not 1 <= len(segments) <= 2:
            raise ValueError(f"BertPreprocessor takes one string tensor or a pair; received {len(segments)} inputs.")
        # `training` reaches the tokenizer: one built with `dropout` samples in `fit`.
        return self.packer(tuple(self.tokenizer(segment, training=training) for segment in segments))

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
        config.update(
            {
                "vocabulary": None,  # saved with the tokenizer, as an asset
                "tokenizer": keras.layers.serialize(self.tokenizer),
                "sequence_length": self.sequence_length,
                "truncate": self.truncate,
                "cls_token": self.cls_token,
                "sep_token": self.sep_token,
                "pad_token": self.pad_token,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        if isinstance(config.get("tokenizer"), dict):
            config = {**config, "tokenizer": keras.layers.deserialize(config["tokenizer"])}
        return cls(**config)
