"""`from_huggingface`: a Hugging Face `tokenizer.json` as a Keras layer built from tfsubword's parts.

    text -> added tokens cut out (`text.added_tokens`) -> the pieces between them normalized
    (`layers.huggingface_normalizer`), pre-tokenized (`text.pre_tokenizers`) and through the model's
    layer (`WordPieceLayer`, `BPELayer`, `layers.huggingface_models`) -> start and end ids (the
    post-processor) -> truncation -> padding

`files.huggingface` reads the file and refuses what these parts do not reproduce exactly.
"""

import functools

import keras
import tensorflow as tf

from tfsubword import checks, tables
from tfsubword import graph_ops as ops
from tfsubword.files import huggingface as file_lib
from tfsubword.files import huggingface_components as components
from tfsubword.layers import decoders
from tfsubword.layers.base import TokenizerLayer
from tfsubword.layers.bpe import BPELayer
from tfsubword.layers.huggingface_models import HuggingFaceUnigram, HuggingFaceWordPiece
from tfsubword.layers.huggingface_normalizer import normalizer_steps
from tfsubword.layers.wordpiece import WordPieceLayer
from tfsubword.text import unicode_normalizers
from tfsubword.text.added_tokens import AddedTokens, tokenize_around
from tfsubword.text.pre_tokenizers import PreTokenizer

_SIDES = ("right", "left")
# From this many texts, the normalizer runs on two halves at once.
_HALVES_FROM = 256


def from_huggingface(
    path_or_json,
    *,
    sequence_length=None,
    add_special_tokens=True,
    dropout=None,
    alpha=None,
    nbest_size=None,
    seed=None,
    jit_compile=False,
):
    """A Keras layer that encodes text exactly as a Hugging Face `tokenizer.json` does.

    Its ids equal `tokenizers.Tokenizer.from_file(path).encode(text, add_special_tokens=...).ids`,
    computed with core TensorFlow ops only, so the layer saves, exports and serves from plain
    TensorFlow. Added tokens written in the text (`[SEP]`, `<mask>`) are found as Hugging Face finds
    them. Truncation and padding follow the file: with fixed padding, the output is a dense
    `[batch, length]` tensor; with padding to the longest, dense to the batch's longest; without,
    ragged (truncated if the file truncates).

    Supported (the README's table lists the families):
    - models `WordPiece`, `BPE` (byte-level or of characters; `ignore_merges`, `byte_fallback`,
      `continuing_subword_prefix`, `end_of_word_suffix`) and `Unigram` (`byte_fallback`);
    - normalizers `BertNormalizer` (with `BertPreTokenizer`, for WordPiece), `NFD`, `NFKD`, `NFC`,
      `NFKC`, `StripAccents`, `Lowercase`, `Precompiled`, `Prepend`, `Strip` and `Replace`, in any
      `Sequence`;
    - pre-tokenizers `ByteLevel`, `Metaspace`, and steps that cut words (`Split`, `Whitespace`,
      `WhitespaceSplit`, `Punctuation`, `Digits`, `BertPreTokenizer`) alone, in a `Sequence`, or
      before `ByteLevel`; regexes with Oniguruma's classes, and the split regexes of Llama-3 and Qwen2;
    - post-processors `BertProcessing`, `RobertaProcessing`, `TemplateProcessing`, `ByteLevel`, `Sequence`.
    `detokenize` follows the file's decoder (see `layers.decoders`). Anything else raises
    `ValueError` naming the component and its setting.

    Args:
        path_or_json: the path of a `tokenizer.json` (local or any file system TensorFlow reads), or
            its JSON text.
        sequence_length: int or None. If set, outputs are dense `[batch, sequence_length]`: truncated
            to this many ids (start and end ids included) and padded, in place of the file's
            truncation and padding (padding with the file's pad id, else id 0).
        add_special_tokens: bool. Put the post-processor's start and end ids around each text, as
            `encode(..., add_special_tokens=True)`. Defaults to True.
        dropout: float or None. For BPE files: BPE-dropout in training (`training=True`, as
            `model.fit` calls the layer), as Hugging Face's `BPE(dropout=...)` samples (see
            `BPELayer`). None (the default): the file's `dropout`, which Hugging Face applies at every
            call and this layer only in training; 0: none. Other models raise `ValueError` for it.
        alpha, nbest_size: for Unigram files: sampling in training as Hugging Face's
            `Unigram(alpha=..., nbest_size=...)` samples (see `HuggingFaceUnigram`; `tokenizer.json`
            does not hold them). Other models raise `ValueError` for them.
        seed: int or None. The seed of the sampled segmentations (`keras.random.SeedGenerator`).
        jit_compile: bool. For WordPiece files: walk the words that are no token with a loop compiled
            by XLA (see `WordPieceLayer`). Defaults to False; other models raise `ValueError` for True.

    Returns:
        A `HuggingFaceTokenizer`.
    """
    checks.integer("sequence_length", sequence_length, optional=True)
    checks.boolean("add_special_tokens", add_special_tokens)
    checks.probability("dropout", dropout, optional=True)
    checks.boolean("jit_compile", jit_compile)
    spec = file_lib.read_tokenizer_json(path_or_json)
    if spec.layer not in ("WordPieceLayer", "HuggingFaceWordPiece") and jit_compile:
        raise ValueError(
            "`jit_compile` compiles the WordPiece walk; this file's model is not WordPiece. Received: True."
        )
    if spec.layer != "BPELayer" and dropout is not None:
        raise ValueError(f"`dropout` is BPE-dropout; this file's model is not BPE. Received: dropout={dropout}.")
    if spec.layer != "HuggingFaceUnigram" and (alpha, nbest_size) != (None, None):
        raise ValueError(
            f"`alpha` and `nbest_size` sample a Unigram model; this file's is not one. Received: alpha={alpha}, "
            f"nbest_size={nbest_size}."
        )
    if spec.layer == "WordPieceLayer":
        options = {"jit_compile": jit_compile}
        tokenizer = WordPieceLayer(spec.vocabulary, special_tokens=[], name="model", **spec.options, **options)
    elif spec.layer == "HuggingFaceWordPiece":
        tokenizer = HuggingFaceWordPiece(spec.vocabulary, name="model", jit_compile=jit_compile, **spec.options)
    elif spec.layer == "HuggingFaceUnigram":
        options = {"alpha": alpha, "nbest_size": nbest_size, "seed": seed}
        tokenizer = HuggingFaceUnigram(spec.vocabulary, name="model", **spec.options, **options)
    else:
        options = {**spec.options, "seed": seed}
        if dropout is not None:
            options["dropout"] = dropout
        tokenizer = BPELayer(spec.vocabulary, spec.merges, special_tokens=[], name="model", **options)
    padding = spec.padding or {"length": None, "multiple": None, "side": "right", "pad_id": 0}
    max_length, pad_to_longest = spec.max_length, False
    if sequence_length is not None:
        max_length = sequence_length
    elif spec.padding is not None and padding["length"] is None:
        pad_to_longest = True
    elif spec.padding is not None:
        sequence_length = padding["length"]
        if padding["multiple"]:
            sequence_length = -(-sequence_length // padding["multiple"]) * padding["multiple"]
        if max_length is None or max_length > sequence_length:
            raise ValueError(
                f"tokenizer.json pads to {sequence_length} ids but truncates to {max_length}: longer encodings "
                "would not fit one dense tensor. Pass `sequence_length` to truncate and pad to one length."
            )
    return HuggingFaceTokenizer(
        spec.tokens,
        tokenizer=tokenizer,
        added_tokens=[vars(token) for token in spec.added_tokens],
        start_ids=list(spec.start_ids),
        end_ids=list(spec.end_ids),
        add_special_tokens=add_special_tokens,
        max_length=max_length,
        truncation_side=spec.truncation_side,
        sequence_length=sequence_length,
        pad_to_longest=pad_to_longest,
        pad_to_multiple_of=padding["multiple"] if pad_to_longest else None,
        padding_side=padding["side"],
        pad_token=spec.tokens[padding["pad_id"]],
        normalizer=spec.normalizer,
        pre_tokenizer=spec.pre_tokenizer,
        decoder=spec.decoder,
    )


@keras.saving.register_keras_serializable(package="tfsubword")
class HuggingFaceTokenizer(TokenizerLayer):
    """The layer `from_huggingface` makes: Hugging Face's encoding, from tfsubword's parts.

    Each text is cut at its added tokens; the pieces between go through `tokenizer`; then
    `start_ids` + ids + `end_ids`, truncated to `max_length`, padded.

    Args:
        vocabulary: the whole id space, a list of tokens (the model's, with the added tokens).
        tokenizer: the layer that tokenizes the text between added tokens (a `WordPieceLayer` or a
            `BPELayer` with ids of `vocabulary`). It is saved with this layer.
        added_tokens: list of dicts `{"content", "id", "lstrip", "rstrip", "special", "normalized"}`:
            the tokens found in the text first. `lstrip`/`rstrip`: the whitespace on that side goes
            with them. `normalized` ones are found in a second pass, in the pieces between the others.
        start_ids, end_ids: lists of ids placed before and after each text's ids.
        add_special_tokens: bool. Whether to place them. Defaults to True.
        max_length: int or None. Truncate each encoding, start and end ids included, to this many ids.
        truncation_side: "right" (keep the first ids, the default) or "left" (keep the last).
        sequence_length: int or None. Dense outputs of this length, truncated to it too.
        pad_to_longest: bool. Dense outputs as long as the batch's longest encoding, rounded up to
            `pad_to_multiple_of`. Defaults to False.
        pad_to_multiple_of: int or None.
        padding_side: "right" (the default) or "left".
        pad_token: str. Its id pads. Defaults to the token with id 0.
        normalizer: list of the file's normalizer steps (their JSON objects; see
            `files.huggingface_components.string_normalizers`), run in order on the text between
            added tokens before `tokenizer`.
        pre_tokenizer: the file's `Metaspace` pre-tokenizer (its JSON object in a list), run on each
            piece between added tokens after the normalizer; when it splits, `tokenizer` is a
            `HuggingFaceUnigram` that cuts words at its character. Or the steps that cut such a piece
            into words (`Split`, `Whitespace`, ...: see `text.pre_tokenizers`), each word then
            through `tokenizer` alone. `[]` for none.
        decoder: the file's decoder (its JSON object), which `detokenize` follows (see `layers.decoders`).
        dtype: an integer dtype, or "string". Defaults to "int32".
    """

    def __init__(
        self,
        vocabulary=None,
        *,
        tokenizer=None,
        added_tokens=(),
        start_ids=(),
        end_ids=(),
        add_special_tokens=True,
        max_length=None,
        truncation_side="right",
        sequence_length=None,
        pad_to_longest=False,
        pad_to_multiple_of=None,
        padding_side="right",
        pad_token=None,
        normalizer=(),
        pre_tokenizer=(),
        decoder=None,
        dtype="int32",
        **kwargs,
    ):
        if (
            not isinstance(tokenizer, (WordPieceLayer, BPELayer, HuggingFaceUnigram, HuggingFaceWordPiece))
            or tokenizer.compute_dtype == "string"
            or tokenizer.sequence_length is not None
        ):
            raise checks.invalid(
                "tokenizer",
                tokenizer,
                "a WordPieceLayer, a BPELayer, a HuggingFaceUnigram or a HuggingFaceWordPiece giving ragged ids",
            )
        self.tokenizer = tokenizer
        self.added_tokens = [dict(token) for token in added_tokens]
        self._added = [file_lib.AddedToken(**token) for token in self.added_tokens]
        self.start_ids, self.end_ids = [int(i) for i in start_ids], [int(i) for i in end_ids]
        self.add_special_tokens = checks.boolean("add_special_tokens", add_special_tokens)
        self.max_length = checks.integer("max_length", max_length, optional=True)
        self.truncation_side = checks.choice("truncation_side", truncation_side, _SIDES)
        self.pad_to_longest = checks.boolean("pad_to_longest", pad_to_longest)
        self.pad_to_multiple_of = checks.integer("pad_to_multiple_of", pad_to_multiple_of, optional=True)
        self.padding_side = checks.choice("padding_side", padding_side, _SIDES)
        self.normalizer = components.string_normalizers({"type": "Sequence", "normalizers": list(normalizer)})
        pre_tokenizer = list(pre_tokenizer)
        self.pre_tokenizer = (
            components.metaspace(pre_tokenizer[0], split=True) if len(pre_tokenizer) == 1 else None
        ) or (components.pre_tokenizer_steps({"type": "Sequence", "pretokenizers": pre_tokenizer}))
        if self.pre_tokenizer is None:
            raise checks.invalid(
                "pre_tokenizer", pre_tokenizer, "[], [a Metaspace pre-tokenizer] or steps that cut words (Split, ...)"
            )
        self.decoder = decoder
        if pad_token is None:
            pad_token = vocabulary[0] if isinstance(vocabulary, list) and vocabulary else "[PAD]"
        super().__init__(vocabulary, sequence_length=sequence_length, pad_token=pad_token, dtype=dtype, **kwargs)

    def _validate_vocabulary(self, tokens):
        framing = self.start_ids + self.end_ids if self.add_special_tokens else []
        for token_id in framing + [token.id for token in self._added]:
            if not 0 <= token_id < len(tokens):
                raise ValueError(f"The id {token_id} is outside the vocabulary of {len(tokens)} tokens.")
        if self.max_length is not None and self.max_length < len(framing):
            raise ValueError(f"`max_length`={self.max_length} leaves no room for the {len(framing)} start and end ids.")

    def _build(self, tokens):
        # Hugging Face cuts the text at the tokens matched in raw text, then the pieces between at the
        # tokens matched in normalized text.
        passes = [[token for token in self._added if token.normalized == second] for second in (False, True)]
        self._splitters = [AddedTokens(tokens) if tokens else None for tokens in passes]
        try:
            self._decoder, self._decoder_problem = decoders.Decoder(components.decoder_steps(self.decoder)), None
        except ValueError as error:
            self._decoder, self._decoder_problem = None, str(error)
        self._normalizer_steps = normalizer_steps(self.normalizer)
        metaspace = self.pre_tokenizer and self.pre_tokenizer[0]["type"] == "Metaspace"
        self._words = PreTokenizer(self.pre_tokenizer) if self.pre_tokenizer and not metaspace else None
        # A normalizer that decodes the text leaves it valid UTF-8: the words need no second check.
        self._valid_utf8 = any(
            isinstance(step, unicode_normalizers.CharacterRewrite) for step in self._normalizer_steps
        )
        # Words go to the BPE model directly when its own split would keep them whole and put no
        # space in front (no pattern, or GPT-2's regex after a Split it never cuts again), or would
        # cut them into units the pre-tokenizer's last pass can cut at once.
        bpe = isinstance(self.tokenizer, BPELayer) and self._words is not None
        self._unit_cuts = self.tokenizer.unit_cuts() if bpe else None
        self._whole_words = (
            bpe
            and not self.tokenizer.add_prefix_space
            and (
                (self.tokenizer.pattern is None and (self._unit_cuts is None or self._words.ends_with_characters))
                or (self.tokenizer.pattern == "gpt2" and components.whole_for_gpt2(self.pre_tokenizer))
            )
        )
        specials = [token.content.encode("utf-8") for token in self._added if token.special]
        self._skipped = tables.hash_table(specials, [1] * len(specials), 0, tf.string, tf.int32)

    def _unknown_token_id(self):
        return self.tokenizer.unknown_token_id

    def _special_tokens(self):
        return [token.content for token in self._added if token.special]

    # Encoding.

    def _seeds(self):
        return self.tokenizer._seeds()

    def _sample(self, strings, seed):
        return self._tokenize_strings(strings, seed)

    def _tokenize_strings(self, strings, seed=None):
        """With `seed` (int32 `[2]`), the model's segmentations are sampled, as its `training=True` draws them."""
        raw = self._splitters[0]
        between = functools.partial(self._between_raw_tokens, seed=seed)
        ids = (
            between(strings, tf.ones(tf.shape(strings), tf.bool))
            if raw is None
            else tokenize_around(strings, raw, between)
        )
        ids = tf.cast(ids, tf.int32)
        framing = len(self.start_ids) + len(self.end_ids) if self.add_special_tokens else 0
        limits = [n for n in (self.max_length, self.sequence_length) if n is not None]
        if limits:
            ids = _truncate(ids, min(limits) - framing, self.truncation_side)
        if self.add_special_tokens and framing:
            ids = _framed(ids, self.start_ids, self.end_ids)
        return ids

    def _between_raw_tokens(self, texts, first, seed=None):
        """The ids of text between tokens matched in raw text, as Hugging Face makes them: normalized,
        cut at the tokens matched in normalized text, the rest pre-tokenized and through the model's
        layer. `first`: whether each text starts its original text."""
        texts = self._normalize(texts)
        normalized = self._splitters[1]
        model_ids = functools.partial(self._model_ids, seed=seed)
        if normalized is None:
            return model_ids(texts, first)
        return tokenize_around(texts, normalized, model_ids, first)

    def _model_ids(self, texts, first, seed=None):
        # Sampled, words are not cut in units: each word draws whole, as Hugging Face's model draws it.
        model = self.tokenizer.tokenize if seed is None else functools.partial(self.tokenizer._sample, seed=seed)
        if self._words is not None:
            if self._whole_words:  # (the words are valid UTF-8, as the layer's own split makes them)
                apart = None if self._unit_cuts is None or seed is not None else self._unit_cuts.apart
                return self.tokenizer.tokenize_words(self._words(texts, self._valid_utf8, apart), seed)
            words = self._words(texts, self._valid_utf8)
            ids = model(words.flat_values)
            return tf.RaggedTensor.from_row_splits(ids, words.row_splits, validate=False).merge_dims(1, 2)
        for step in self.pre_tokenizer:  # Metaspace: spaces become its character, one goes in front
            replacement = step["replacement"]
            if step["prepend_scheme"] != "never":
                prepended = _prepended(texts, replacement)
                texts = prepended if step["prepend_scheme"] == "always" else tf.where(first, prepended, texts)
            if isinstance(self.tokenizer, HuggingFaceUnigram):
                return self.tokenizer.tokenize_spaced(texts, replacement, seed)
            texts = tf.strings.regex_replace(texts, " ", decoders.rewrite(replacement))
        return model(texts)

    def _normalize(self, texts):
        """The steps of `normalizer`, in order, as Hugging Face runs them on each piece."""

        def normalized(texts):
            for step in self._normalizer_steps:
                texts = step(texts)
            return texts

        if not self._normalizer_steps:
            return texts
        return ops.strings_in_halves(normalized, texts, _HALVES_FROM)

    def _pad(self, ragged, value):
        if self.sequence_length is None and not self.pad_to_longest:
            return ragged
        left = self.padding_side == "left"
        if left:
            ragged = tf.reverse(ragged, axis=[1])
        width = self.sequence_length
        if width is None:
            width = tf.reduce_max(tf.concat([ragged.row_lengths(), [0]], axis=0))
            if self.pad_to_multiple_of:
                width = -(-width // self.pad_to_multiple_of) * self.pad_to_multiple_of
        dense = ragged.to_tensor(default_value=value, shape=tf.stack([tf.cast(ragged.nrows(), tf.int64), width]))
        return tf.reverse(dense, axis=[1]) if left else dense

    def compute_output_spec(self, inputs):
        spec = super().compute_output_spec(inputs)
        if self.pad_to_longest:
            return keras.KerasTensor(spec.shape, dtype=spec.dtype)
        return spec

    # Decoding.

    def _detokenize_tokens(self, tokens):
        """Hugging Face's `decode(ids)`: special tokens skipped, then the file's decoder."""
        if self._decoder is None:
            raise ValueError(f"detokenize follows the file's decoder: {self._decoder_problem}")
        tokens = tf.ragged.boolean_mask(tokens, tokens.with_flat_values(self._skipped.lookup(tokens.flat_values) == 0))
        return self._decoder(tokens)

    # Saving.

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "tokenizer": keras.layers.serialize(self.tokenizer),
                "added_tokens": self.added_tokens,
                "start_ids": self.start_ids,
                "end_ids": self.end_ids,
                "add_special_tokens": self.add_special_tokens,
                "max_length": self.max_length,
                "truncation_side": self.truncation_side,
                "pad_to_longest": self.pad_to_longest,
                "pad_to_multiple_of": self.pad_to_multiple_of,
                "padding_side": self.padding_side,
                "normalizer": self.normalizer,
                "pre_tokenizer": self.pre_tokenizer,
                "decoder": self.decoder,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        if isinstance(config.get("tokenizer"), dict):
            config = {**config, "tokenizer": keras.layers.deserialize(config["tokenizer"])}
        return super().from_config(config)


def _framed(ids, start_ids, end_ids):
    """Each row of the ragged `ids` as `start_ids` + row + `end_ids`: rows gathered from one table
    (the start row, the end row, then the rows of `ids`), three rows for each."""
    start, end = len(start_ids), len(end_ids)
    values = tf.concat([tf.constant(start_ids + end_ids, tf.int32), ids.values], axis=0)
    splits = tf.concat([tf.constant([0, start], tf.int64), start + end + ids.row_splits], axis=0)
    rows = tf.range(2, ids.nrows() + 2)
    parts = [part for part, used in ((tf.zeros_like(rows), start), (rows, True), (tf.ones_like(rows), end)) if used]
    values, row_splits = ops.gather_rows(values, splits, tf.reshape(tf.stack(parts, axis=1), [-1]))
    return tf.RaggedTensor.from_row_splits(values, row_splits[:: len(parts)], validate=False)


def _prepended(texts, character):
    """`character` before each of the `[n]` strings that is not empty and starts neither with a space
    nor with it, as `Metaspace` prepends it (a space in front becomes the character anyway): put
    before every text, then taken away again where one of those follows, in one RE2 pass."""
    mark = ops.re2_literal(character)
    return tf.strings.regex_replace(
        tf.strings.join([character, texts]), f"\\A{mark}( |{mark}|\\z)", "\\1", replace_global=False
    )


def _truncate(ids, limit, side):
    """Each row of `ids` cut to its first (side "right") or last ("left") `limit` ids."""
    if side == "right":
        return ids[:, :limit]
    return tf.reverse(tf.reverse(ids, axis=[1])[:, :limit], axis=[1])
