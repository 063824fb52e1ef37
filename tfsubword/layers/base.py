"""`TokenizerLayer`: what every tfsubword tokenizer layer shares.

A subclass supplies only the algorithm: `_build(tokens)` to make its tables from a validated token
list, `_tokenize_strings(strings)` mapping a 1-D string tensor to a `tf.RaggedTensor` of int32 ids
(and `_tokenize_strings_with_offsets`, the same with byte offsets), `_detokenize_tokens(tokens)`
mapping a `tf.RaggedTensor` `[n, (tokens)]` of token strings to `[n]` strings, and `_special_tokens()`.
The shape contract, padding, output dtype, vocabulary and special-token accessors, config and asset
saving live here, once.
"""

import numbers
import types

import keras
import numpy as np
import tensorflow as tf

from tfsubword import checks, tables
from tfsubword import graph_ops as ops
from tfsubword.files import storage
from tfsubword.files import vocab as vocab_lib

_VOCABULARY_ASSET = "vocabulary.txt"
# The encoders take a batch of strings: each is traced once per layer (see `graph_ops.Traced`).
_STRINGS = [tf.TensorSpec([None], tf.string)]
_SAMPLED = [*_STRINGS, tf.TensorSpec([2], tf.int32)]
# From this many texts, sampled calls draw for two halves of them at once (`_sample_halves`).
_SAMPLED_IN_HALVES_FROM = 256
# `adapt` counts arrays and lists this many texts at a time, as the trainers count lines.
_ADAPT_BATCH = 1024


class TokenizerLayer(keras.layers.Layer):
    """Base class of the tokenizer layers.

    Args:
        vocabulary: list of str, or the path of a one-token-per-line file; the id of a token is its
            position. May be None only to be set later with `set_vocabulary` (as `.keras` loading does).
        sequence_length: int or None. If set, outputs are dense, truncated or padded to this length
            with the id of `pad_token` (0 if the vocabulary does not have it). Defaults to None: ragged.
        pad_token: str. The token whose id pads outputs.
        dtype: an integer dtype for ids, or `"string"` for the tokens themselves. Defaults to "int32".
    """

    def __init__(self, vocabulary=None, *, sequence_length=None, pad_token=None, dtype="int32", **kwargs):
        if dtype != "string" and not _is_integer_dtype(dtype):
            raise checks.invalid("dtype", dtype, "an integer type or 'string'")
        checks.integer("sequence_length", sequence_length, optional=True)
        checks.string("pad_token", pad_token)
        super().__init__(dtype=dtype, **kwargs)
        self.sequence_length = sequence_length
        self.pad_token = pad_token
        # Strings stay TensorFlow strings; Python strings and lists are accepted as inputs.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
        self._tokens = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    # Vocabulary.

    def set_vocabulary(self, vocabulary):
        """Replace the vocabulary (a list of tokens or a file path) and rebuild the tables."""
        tokens = self._load_vocabulary(vocabulary)
        # Read-only views: Keras and TensorFlow would wrap a dict or list attribute entry by entry (seconds).
        self._token_ids = types.MappingProxyType({token: index for index, token in enumerate(tokens)})
        self._tokens = tuple(tokens)
        self._token_strings = tables.constant(tokens, tf.string)
        self._build(tokens)
        self._traced = ops.Traced()

    def get_vocabulary(self):
        """The tokens, as a list of str; the id of a token is its position."""
        return list(self._require_vocabulary())

    def vocabulary_size(self):
        return len(self._require_vocabulary())

    def id_to_token(self, id):
        """The token of `id` (an int, numpy integers included)."""
        tokens = self._require_vocabulary()
        if isinstance(id, bool) or not isinstance(id, numbers.Integral) or not 0 <= id < len(tokens):
            raise ValueError(f"`id` must be an int in [0, {len(tokens)}). Received: id={id!r}.")
        return tokens[int(id)]

    def token_to_id(self, token):
        self._require_vocabulary()
        if token not in self._token_ids:
            raise ValueError(f"Token {token!r} is not in the vocabulary.")
        return self._token_ids[token]

    @property
    def pad_token_id(self):
        """The id that pads outputs: `pad_token`'s, or 0 when the vocabulary does not have it."""
        self._require_vocabulary()
        return self._token_ids.get(self.pad_token, 0)

    @property
    def unknown_token_id(self):
        """The id of the token that stands for what the vocabulary cannot spell; None when there is none."""
        self._require_vocabulary()
        return self._unknown_token_id()

    @property
    def special_tokens(self):
        """The tokens that stand for no text (the unknown token, padding, markers), in id order."""
        self._require_vocabulary()
        return sorted(set(self._special_tokens()), key=self._token_ids.get)

    @property
    def special_token_ids(self):
        """The ids of `special_tokens`, in the same order."""
        return [self._token_ids[token] for token in self.special_tokens]

    def _require_vocabulary(self):
        if self._tokens is None:
            raise ValueError(
                f"{type(self).__name__} has no vocabulary yet: pass `vocabulary` to the constructor or call "
                "`set_vocabulary()` first."
            )
        return self._tokens

    def _load_vocabulary(self, vocabulary):
        """The validated token list of `vocabulary`, as `set_vocabulary` received it."""
        tokens = vocab_lib.as_token_list(vocabulary)
        self._validate_vocabulary(tokens)
        return tokens

    def _validate_vocabulary(self, tokens):
        """Subclasses check their own requirements here (such as an unknown token), raising ValueError."""

    # Learning a vocabulary.

    def adapt(self, data, batch_size=None, steps=None, **options):
        """Learn the vocabulary from `data`, Keras's way, with this layer's trainer: the words are
        counted with the layer's own normalization and pre-tokenizer, and the vocabulary learned
        replaces any the layer had (as `StringLookup.adapt` does).

        Args:
            data: the texts: a `tf.data.Dataset` of strings (single texts or batches of any shape), a
                NumPy array, a tensor or a list of strings.
            batch_size: int or None. For arrays and lists: the texts counted at a time (default 1024);
                a dataset comes in its own batches and takes none.
            steps: int or None. Read only this many batches (of the dataset, or of `batch_size`).
            **options: the trainer's learning options (`min_frequency`, `max_token_length`,
                `max_sentences`, ...; see `train_wordpiece`, `train_unigram`, `train_bpe`);
                `show_progress` defaults to False. The vocabulary size and the special tokens are the
                layer's (`vocab_size=`, `special_tokens=`).
        """
        corpus = _adapt_corpus(data, batch_size, steps)
        self._adapt(corpus, {"show_progress": False, **options})

    def _adapt(self, corpus, options):
        """Train on `corpus` (a `tf.data.Dataset` of strings) with the trainer's `options`, then
        `set_vocabulary`. Layers that have no trainer keep this."""
        raise NotImplementedError(
            f"{type(self).__name__} does not learn a vocabulary: adapt WordPieceLayer, UnigramLayer or BPELayer."
        )

    def _check_adapt_options(self, options, allowed):
        """Each of `options` must be a learning option of the trainer (`allowed`); the ones that belong
        to the layer's constructor, or to no trainer, raise a `ValueError` naming them."""
        for name in options:
            if name not in allowed:
                where = (
                    "is set on the layer (its constructor's argument)"
                    if name in ("vocab_size", "special_tokens") or hasattr(self, name)
                    else "is not a learning option of this layer's trainer"
                )
                takes = ", ".join(sorted(allowed))
                raise ValueError(f"`adapt` got `{name}`, which {where}. Options it takes: {takes}.")

    # Encoding and decoding.

    # The graph code uses tf.cond / tf.while_loop explicitly: autograph would only slow tracing (3x).
    @tf.autograph.experimental.do_not_convert
    def call(self, inputs, training=None):
        """`tokenize`; with `training` (as `model.fit` calls it), a sampled segmentation where the layer
        was built to sample one, a new one at each call."""
        if _is_training(training) and self._samples():
            return self._sampled(inputs)
        return self.tokenize(inputs)

    def _samples(self):
        """Whether the layer samples segmentations in training (see `_init_sampling`)."""
        return self._seeds() is not None

    def _seeds(self):
        """The seed generator of sampled calls, or None when the layer does not sample."""
        return getattr(self, "_seed_generator", None)

    def _init_sampling(self, sampling, seed):
        """Layers that sample call this in their constructor: with `sampling`, a seed generator in Keras's
        way (`keras.random.SeedGenerator`), whose state moves on at every sampled call."""
        checks.integer("seed", seed, minimum=0, optional=True)
        self.seed = seed
        self._seed_generator = keras.random.SeedGenerator(seed) if sampling else None

    @tf.autograph.experimental.do_not_convert
    def _sampled(self, inputs, offsets=False):
        """`tokenize` (or `tokenize_with_offsets`) with a sampled segmentation."""
        self._require_vocabulary()
        flat, restore = _flatten_strings(_as_string_tensor(inputs))
        seed = tf.cast(self._seeds().next(), tf.int32)
        if offsets:
            key, function = "sampled offsets", self._sample_with_offsets
        else:
            key, function = "sampled", self._sample_halves if self._samples_in_halves else self._sample
        result = self._traced(key, function, _SAMPLED, flat, seed)
        if not offsets:
            return restore(self._finish(result))
        ids, starts, ends = result
        return restore(self._finish(ids)), restore(self._pad(starts, 0)), restore(self._pad(ends, 0))

    # Whether sampled calls draw two halves of a large batch at once (`_sample_halves`).
    _samples_in_halves = False

    def _sample_halves(self, strings, seed):
        """`_sample`; many texts in two halves drawn at once, each with a seed of its own: most ops run
        on one thread, and a sampler whose work is mostly per occurrence has little for the halves to
        share (a unigram model's forward passes, once per distinct word, are not so)."""

        def sample(texts, seed):
            ids = self._sample(texts, seed)
            return ids.values, ids.row_splits

        ids, splits = ops.ragged_in_halves(sample, strings, _SAMPLED_IN_HALVES_FROM, seed)
        return tf.RaggedTensor.from_row_splits(ids, splits, validate=False)

    def _sample(self, strings, seed):
        """`_tokenize_strings` with a sampled segmentation drawn with `seed` (int32 `[2]`)."""
        raise NotImplementedError

    def _sample_with_offsets(self, strings, seed):
        """`_tokenize_strings_with_offsets` with a sampled segmentation."""
        raise NotImplementedError(f"{type(self).__name__} does not give offsets of sampled segmentations yet.")

    @tf.autograph.experimental.do_not_convert
    def tokenize(self, inputs):
        """Strings -> ids (or tokens, with `dtype="string"`).

        Shapes: a scalar gives a 1-D tensor; `[batch]` and Keras's `[batch, 1]` give a
        `tf.RaggedTensor` `[batch, (tokens)]`; any other shape `[..., n]` gives `[..., n, (tokens)]`;
        a ragged input gains one ragged dimension. With `sequence_length`, the token dimension is dense.
        """
        self._require_vocabulary()
        flat, restore = _flatten_strings(_as_string_tensor(inputs))
        return restore(self._finish(self._traced("encode", self._tokenize_strings, _STRINGS, flat)))

    @tf.autograph.experimental.do_not_convert
    def tokenize_with_offsets(self, inputs, training=False):
        """Strings -> `(tokens, starts, ends)`: what `tokenize` gives, and where each token comes from.
        With `training=True`, a sampled segmentation as `call` gives it in training, with its offsets.

        `starts` and `ends` (int64, the shape of `tokens`) are byte offsets into the *original* strings:
        token i covers bytes `[starts[i], ends[i])`, through lowercasing, accent stripping and deleted
        characters (a token's span runs from its first character's first byte to its last character's
        last byte, so characters deleted inside a word fall within it). An unknown token spans its whole
        word. Padding positions (with `sequence_length`) have offsets 0.
        """
        if _is_training(training) and self._samples():
            return self._sampled(inputs, offsets=True)
        self._require_vocabulary()
        flat, restore = _flatten_strings(_as_string_tensor(inputs))
        ids, starts, ends = self._traced("offsets", self._tokenize_strings_with_offsets, _STRINGS, flat)
        return restore(self._finish(ids)), restore(self._pad(starts, 0)), restore(self._pad(ends, 0))

    def _finish(self, ids):
        """Ragged ids -> the output dtype, padded to `sequence_length` if set."""
        if self.compute_dtype == "string":
            return self._pad(
                ids.with_flat_values(tf.gather(self._token_strings, ids.flat_values)), self._tokens[self.pad_token_id]
            )
        return self._pad(tf.cast(ids, self.compute_dtype), self.pad_token_id)

    def _pad(self, ragged, value):
        if self.sequence_length is None:
            return ragged
        return ragged.to_tensor(default_value=value, shape=[None, self.sequence_length])

    @tf.autograph.experimental.do_not_convert
    def detokenize(self, inputs):
        """Ids (or tokens) -> text, over the last dimension: `[..., tokens]` gives `[...]` strings.

        Every id is mapped, padding and special tokens included; an id outside the vocabulary raises
        `InvalidArgumentError`.
        """
        self._require_vocabulary()
        if not isinstance(inputs, (tf.Tensor, tf.RaggedTensor)):
            inputs = tf.convert_to_tensor(inputs)
        if not inputs.shape.rank:
            raise ValueError(f"`detokenize` needs inputs with a dimension of tokens. Received shape {inputs.shape}.")
        return _map_rows(inputs, self._detokenize_rows)

    def _detokenize_rows(self, rows):
        if rows.dtype != tf.string:
            ids = tf.cast(rows.flat_values, tf.int64)
            size = tf.constant(len(self._tokens), tf.int64)
            with tf.control_dependencies(
                [
                    tf.debugging.assert_non_negative(ids, message="detokenize: negative token id"),
                    tf.debugging.assert_less(ids, size, message="detokenize: token id beyond the vocabulary"),
                ]
            ):
                rows = rows.with_flat_values(tf.gather(self._token_strings, ids))
        return self._detokenize_tokens(rows)

    def compute_output_spec(self, inputs):
        shape = tuple(inputs.shape)
        if len(shape) == 2 and shape[-1] == 1:
            shape = shape[:1]
        if self.sequence_length is not None:
            return keras.KerasTensor(shape + (self.sequence_length,), dtype=self.compute_dtype)
        if not shape:
            return keras.KerasTensor((None,), dtype=self.compute_dtype)
        return keras.KerasTensor(shape + (None,), dtype=self.compute_dtype, ragged=True)

    # Saving.

    def get_config(self):
        config = super().get_config()
        config.update({"vocabulary": None, "sequence_length": self.sequence_length, "pad_token": self.pad_token})
        return config

    def save_assets(self, dir_path):
        vocab_lib.write_vocabulary(self._require_vocabulary(), storage.join(dir_path, _VOCABULARY_ASSET))

    def load_assets(self, dir_path):
        self.set_vocabulary(storage.join(dir_path, _VOCABULARY_ASSET))

    # For subclasses.

    def _build(self, tokens):
        raise NotImplementedError

    def _tokenize_strings(self, strings):
        raise NotImplementedError

    def _tokenize_strings_with_offsets(self, strings):
        """`[n]` strings -> ragged (ids, start bytes, end bytes), each `[n, (tokens)]`."""
        raise NotImplementedError(f"{type(self).__name__} does not give offsets yet; `tokenize` gives the ids.")

    def _detokenize_tokens(self, tokens):
        raise NotImplementedError

    def _unknown_token_id(self):
        raise NotImplementedError

    def _special_tokens(self):
        """The special tokens the vocabulary has, in any order."""
        raise NotImplementedError


def _is_training(training):
    """`training` as Keras passes it (a Python bool, or None for "not training"), checked."""
    if training is None or isinstance(training, (bool, np.bool_)):
        return bool(training)
    raise ValueError(f"`training` must be True, False or None. Received: training={training!r}.")


def _is_integer_dtype(dtype):
    try:
        return tf.as_dtype(dtype).is_integer
    except TypeError:
        return False


def _as_string_tensor(inputs):
    if not isinstance(inputs, (tf.Tensor, tf.RaggedTensor)):
        try:
            inputs = tf.convert_to_tensor(inputs)
        except (ValueError, TypeError) as error:
            raise ValueError(f"Tokenizer inputs must be strings. Received: {inputs!r}") from error
    if inputs.dtype != tf.string:
        raise ValueError(f"Tokenizer inputs must be strings. Received a tensor of dtype {inputs.dtype.name}.")
    return inputs


def _adapt_corpus(data, batch_size, steps):
    """`adapt`'s `data` as a `tf.data.Dataset` of strings, `steps` batches of it at most."""
    checks.integer("batch_size", batch_size, optional=True)
    checks.integer("steps", steps, optional=True)
    if isinstance(data, tf.data.Dataset):
        if batch_size is not None:
            raise ValueError(
                "`batch_size` is for arrays and lists: a dataset comes in its own batches. "
                f"Received: batch_size={batch_size}."
            )
        spec = data.element_spec
        if not isinstance(spec, tf.TensorSpec) or spec.dtype != tf.string:
            raise ValueError(f"`data` must be a dataset of string tensors. Received a dataset of {spec}.")
        return data if steps is None else data.take(steps)
    if isinstance(data, (str, bytes)):
        raise ValueError("`data` must hold texts (a dataset, an array or a list of strings), not one string.")
    if not isinstance(data, (np.ndarray, tf.Tensor, list, tuple)):
        raise ValueError(
            f"`data` must be a `tf.data.Dataset`, a NumPy array, a tensor or a list of strings. Received: {type(data)}."
        )
    try:
        texts = tf.reshape(tf.convert_to_tensor(data, tf.string), [-1])
    except (ValueError, TypeError) as error:
        raise ValueError(f"`data` must hold strings only. Received: {data!r:.200}") from error
    batches = tf.data.Dataset.from_tensor_slices(texts).batch(batch_size or _ADAPT_BATCH)
    return batches if steps is None else batches.take(steps)


def _map_rows(inputs, function):
    """Apply `function` (`[n, (tokens)]` ragged -> `[n]`) to every row of the last dimension."""
    if isinstance(inputs, tf.RaggedTensor):
        if inputs.flat_values.shape.rank > 1:
            return inputs.with_flat_values(_map_rows(inputs.flat_values, function))
        splits = inputs.nested_row_splits
        result = function(tf.RaggedTensor.from_row_splits(inputs.flat_values, splits[-1], validate=False))
        if len(splits) == 1:
            return result
        return tf.RaggedTensor.from_nested_row_splits(result, splits[:-1], validate=False)
    shape = tf.shape(inputs)
    result = function(tf.RaggedTensor.from_tensor(tf.reshape(inputs, [-1, shape[-1]])))
    return tf.reshape(result, shape[:-1])


def _flatten_strings(inputs):
    """A 1-D tensor of all the strings, and a function that gives results per string the input's shape."""
    if isinstance(inputs, tf.RaggedTensor):
        return inputs.flat_values, inputs.with_flat_values
    rank = inputs.shape.rank
    if rank is None:
        raise ValueError("Tokenizer inputs must have a known rank.")
    if rank == 0:
        return inputs[None], lambda result: result[0]
    if rank == 1:
        return inputs, lambda result: result
    if rank == 2 and inputs.shape[-1] == 1:
        return inputs[:, 0], lambda result: result
    outer_shape = tf.shape(inputs, out_type=tf.int64)

    def restore(result):
        if isinstance(result, tf.RaggedTensor):
            for dimension in range(rank - 1, 0, -1):
                result = tf.RaggedTensor.from_uniform_row_length(result, outer_shape[dimension])
            return result
        return tf.reshape(result, tf.concat([outer_shape, tf.shape(result, out_type=tf.int64)[1:]], axis=0))

    return tf.reshape(inputs, [-1]), restore
