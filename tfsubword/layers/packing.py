"""`SegmentPacker`: token-id segments -> fixed-length model inputs, with core ops only.

`[start] segment_1 [separator] segment_2 ... [end]`, truncated to fit, then padded: the inputs a
BERT-style model was trained with. The three truncation strategies are computed in closed form per
row, so no custom op (such as tensorflow-text's `RoundRobinTrim`) is needed at serving time.
"""

import keras
import tensorflow as tf

from tfsubword import graph_ops as ops

TRUNCATIONS = ("round_robin", "waterfall", "longest_first")


def _as_ids(value, name):
    if value is None:
        return []
    values = [value] if isinstance(value, int) else list(value)
    if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ValueError(f"`{name}` must be an int id, a list of int ids or None. Received: {name}={value!r}.")
    return values


@keras.saving.register_keras_serializable(package="tfsubword")
class SegmentPacker(keras.layers.Layer):
    """Pack one or more segments of token ids into dense model inputs.

    Each row becomes `start_value`, then the segments, each followed by `separator_value` except the
    last, which is followed by `end_value`; segments are truncated so that the whole fits in
    `sequence_length`, and the rest is padded with `pad_value`. Outputs a dict:
    `token_ids`, `segment_ids` (the segment's index; a separator belongs to the segment before it, the
    start to the first segment) and `padding_mask` (True on real tokens), each `[batch, sequence_length]`.

    Args:
        sequence_length: int. The length of every output row.
        start_value: int, list of ints or None. Ids placed first (BERT: the id of "[CLS]").
        end_value: int, list of ints or None. Ids placed after the last segment (BERT: "[SEP]").
        separator_value: int, list of ints or None. Ids placed between segments. Defaults to
            `end_value` (BERT: "[SEP]").
        pad_value: int. The id that fills the rest of each row. Defaults to 0.
        truncate: how to make the segments fit:
            - "round_robin": take one token from each segment in turn (as tensorflow-text and keras-hub);
            - "waterfall": keep the first segment whole as far as possible, then the next;
            - "longest_first": Hugging Face's `longest_first` (one or two segments): the longer segment
              is cut first, and if both must be cut they share the room, the extra token to the longer.

    Inputs: a `tf.RaggedTensor` `[batch, (tokens)]` of ids, or a tuple/list of them (one per segment);
    a 1-D tensor is one example and gives 1-D outputs.

    Examples:

    >>> packer = SegmentPacker(8, start_value=101, end_value=102)
    >>> outputs = packer((tf.ragged.constant([[1, 2, 3, 4, 5]]), tf.ragged.constant([[6, 7]])))
    >>> outputs["token_ids"].numpy().tolist()  # 5 places for tokens: 1, 6, 2, 7, 3 in turn
    [[101, 1, 2, 3, 102, 6, 7, 102]]
    >>> outputs["segment_ids"].numpy().tolist()
    [[0, 0, 0, 0, 0, 1, 1, 1]]
    """

    def __init__(
        self,
        sequence_length,
        *,
        start_value=None,
        end_value=None,
        separator_value=None,
        pad_value=0,
        truncate="round_robin",
        **kwargs,
    ):
        if isinstance(sequence_length, bool) or not isinstance(sequence_length, int) or sequence_length < 1:
            raise ValueError(
                f"`sequence_length` must be a positive int. Received: sequence_length={sequence_length!r}."
            )
        if truncate not in TRUNCATIONS:
            raise ValueError(f"`truncate` must be one of {TRUNCATIONS}. Received: truncate={truncate!r}.")
        self._start = _as_ids(start_value, "start_value")
        self._end = _as_ids(end_value, "end_value")
        self._separator = self._end if separator_value is None else _as_ids(separator_value, "separator_value")
        (pad,) = _as_ids(pad_value, "pad_value") or [None]
        if pad is None:
            raise ValueError("`pad_value` must be an int id.")
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True  # ragged segments, on every Keras backend
        self.sequence_length = sequence_length
        self.start_value, self.end_value, self.separator_value = start_value, end_value, separator_value
        self.pad_value = pad_value
        self.truncate = truncate
        self.built = True

    @tf.autograph.experimental.do_not_convert
    def call(self, inputs):
        segments = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
        if not segments:
            raise ValueError("SegmentPacker needs at least one segment.")
        single_example = (
            not isinstance(segments[0], tf.RaggedTensor) and tf.convert_to_tensor(segments[0]).shape.rank == 1
        )
        segments = [_as_ragged_batch(segment) for segment in segments]
        if self.truncate == "longest_first" and len(segments) > 2:
            raise ValueError(f"truncate='longest_first' packs one or two segments; received {len(segments)}.")
        specials = len(self._start) + len(self._separator) * (len(segments) - 1) + len(self._end)
        budget = self.sequence_length - specials
        if budget < 0:
            raise ValueError(
                f"sequence_length={self.sequence_length} cannot hold the {specials} start, separator and end ids."
            )
        lengths = tf.stack([segment.row_lengths() for segment in segments], axis=1)
        keep = _kept_lengths(lengths, budget, self.truncate, self.sequence_length)
        dtype = segments[0].dtype
        pieces, segment_ids = [], []
        rows = segments[0].nrows()
        for index, segment in enumerate(segments):
            kept = _truncate_rows(segment, keep[:, index])
            before = self._start if index == 0 else []
            after = self._end if index == len(segments) - 1 else self._separator
            part = tf.concat([_constant_rows(before, rows, dtype), kept, _constant_rows(after, rows, dtype)], axis=1)
            pieces.append(part)
            segment_ids.append(tf.ones_like(part, dtype=tf.int32) * index)
        token_ids = tf.concat(pieces, axis=1)
        segment_ids = tf.concat(segment_ids, axis=1)
        shape = [None, self.sequence_length]
        outputs = {
            "token_ids": token_ids.to_tensor(default_value=tf.cast(self.pad_value, dtype), shape=shape),
            "segment_ids": segment_ids.to_tensor(default_value=0, shape=shape),
            "padding_mask": tf.ones_like(token_ids, dtype=tf.bool).to_tensor(default_value=False, shape=shape),
        }
        if single_example:
            outputs = {name: value[0] for name, value in outputs.items()}
        return outputs

    def compute_output_spec(self, inputs):
        first = inputs[0] if isinstance(inputs, (tuple, list)) else inputs
        shape = (
            (self.sequence_length,)
            if len(first.shape) == 1 and not getattr(first, "ragged", False)
            else (first.shape[0], self.sequence_length)
        )
        return {
            "token_ids": keras.KerasTensor(shape, dtype=first.dtype),
            "segment_ids": keras.KerasTensor(shape, dtype="int32"),
            "padding_mask": keras.KerasTensor(shape, dtype="bool"),
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "start_value": self.start_value,
                "end_value": self.end_value,
                "separator_value": self.separator_value,
                "pad_value": self.pad_value,
                "truncate": self.truncate,
            }
        )
        return config


def _as_ragged_batch(segment):
    if isinstance(segment, tf.RaggedTensor):
        if segment.ragged_rank != 1 or segment.flat_values.shape.rank != 1:
            raise ValueError(f"Segments must be [batch, (tokens)]. Received a ragged tensor of shape {segment.shape}.")
        return segment
    segment = tf.convert_to_tensor(segment)
    if segment.shape.rank == 1:
        return tf.RaggedTensor.from_tensor(segment[None, :])
    if segment.shape.rank == 2:
        return tf.RaggedTensor.from_tensor(segment)
    raise ValueError(f"Segments must be [batch, (tokens)] or one example [tokens]. Received shape {segment.shape}.")


def _constant_rows(values, rows, dtype):
    return tf.RaggedTensor.from_tensor(tf.tile(tf.constant([values], dtype=dtype, shape=[1, len(values)]), [rows, 1]))


def _truncate_rows(segment, keep):
    positions = tf.range(tf.size(segment.flat_values, out_type=tf.int64)) - tf.gather(
        segment.row_starts(), segment.value_rowids()
    )
    kept = ops.indices_where(positions < tf.gather(keep, segment.value_rowids()))
    return tf.RaggedTensor.from_value_rowids(
        tf.gather(segment.flat_values, kept),
        tf.gather(segment.value_rowids(), kept),
        nrows=segment.nrows(),
        validate=False,
    )


def _kept_lengths(lengths, budget, truncate, max_budget):
    """`[batch, segments]` lengths -> how many tokens of each segment fit in `budget`."""
    budget = tf.constant(budget, tf.int64)
    if truncate == "waterfall":
        room_before = budget - tf.cumsum(lengths, axis=1, exclusive=True)
        return tf.clip_by_value(room_before, 0, lengths)
    if truncate == "longest_first":
        return _longest_first(lengths, budget)
    # Round robin: K full rounds (the most with sum(min(length, K)) <= budget), then one more token for
    # each of the first segments that still have one, while the budget lasts. K by binary search.
    low = tf.zeros_like(lengths[:, 0])
    high = tf.fill(tf.shape(low), budget)
    for _ in range(max(max_budget, 1).bit_length() + 1):
        middle = (low + high + 1) // 2
        fits = tf.reduce_sum(tf.minimum(lengths, middle[:, None]), axis=1) <= budget
        low, high = tf.where(fits, middle, low), tf.where(fits, high, middle - 1)
    full_rounds = tf.minimum(lengths, low[:, None])
    left_over = budget - tf.reduce_sum(full_rounds, axis=1)
    still = lengths > low[:, None]
    extra = still & (tf.cumsum(tf.cast(still, tf.int64), axis=1) <= left_over[:, None])
    return full_rounds + tf.cast(extra, tf.int64)


def _longest_first(lengths, budget):
    """Hugging Face's `longest_first` for one or two segments (tokenizers' `truncate_encodings`)."""
    if lengths.shape[1] == 1:
        return tf.minimum(lengths, budget)
    first, second = lengths[:, 0], lengths[:, 1]
    short = tf.minimum(first, second)
    short_keep = short
    long_keep = tf.where(short > budget, short, tf.maximum(short, budget - short))
    both_cut = short_keep + long_keep > budget
    short_keep = tf.where(both_cut, budget // 2, short_keep)
    long_keep = tf.where(both_cut, budget // 2 + budget % 2, long_keep)
    swapped = first > second
    fits = first + second <= budget
    keep_first = tf.where(fits, first, tf.minimum(first, tf.where(swapped, long_keep, short_keep)))
    keep_second = tf.where(fits, second, tf.minimum(second, tf.where(swapped, short_keep, long_keep)))
    return tf.stack([keep_first, keep_second], axis=1)
