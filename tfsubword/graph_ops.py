"""Small core-op building blocks for lean graphs.

The layers run on every request of a served model, and a `tf.data` pipeline instantiates their graph
again for every epoch, so graph size matters: each helper here does with two or three ops what the
general-purpose wrappers (`tf.boolean_mask`, `tf.repeat`, validated `tf.RaggedTensor` constructors)
do with dozens. Ragged structure is passed around as flat values plus int64 row splits.
"""

import tensorflow as tf


def indices_where(mask):
    """The positions where the 1-D bool `mask` is True, as int64."""
    return tf.reshape(tf.where(mask), [-1])


def row_ids(row_splits, size):
    """For each of `size` values grouped by `row_splits`, the index of its row (int64)."""
    return tf.searchsorted(row_splits[1:], tf.range(tf.cast(size, row_splits.dtype)), side="right", out_type=tf.int64)


def splits_from_row_ids(sorted_row_ids, nrows):
    """Row splits `[nrows + 1]` for values whose (non-decreasing) row indices are `sorted_row_ids`."""
    return tf.searchsorted(
        sorted_row_ids, tf.range(nrows + 1, dtype=sorted_row_ids.dtype), side="left", out_type=tf.int64
    )


def decode_utf8(strings):
    """`[n]` strings -> (code points int32, row splits int64); each invalid sequence becomes U+FFFD."""
    splits, code_points = tf.raw_ops.UnicodeDecode(
        input=strings, input_encoding="UTF-8", errors="replace", replacement_char=0xFFFD, Tsplits=tf.int64
    )
    return code_points, splits


def gather_rows(values, row_splits, indices):
    """Rows `indices` of the ragged (`values`, `row_splits`): returns (values, row splits)."""
    (splits,), gathered = tf.raw_ops.RaggedGather(
        params_nested_splits=[row_splits], params_dense_values=values, indices=indices, OUTPUT_RAGGED_RANK=1
    )
    return gathered, splits


def merge_rows(nrows, single_rows, single_values, other_rows, other_values, other_splits):
    """Interleave two sets of rows into one ragged tensor of `nrows` rows.

    Rows `single_rows` hold one value each (`single_values`); rows `other_rows` are the ragged
    (`other_values`, `other_splits`). Together the row indices must cover 0..nrows-1 exactly once.
    Returns (values, row splits).
    """
    lengths = tf.scatter_nd(
        tf.concat([single_rows, other_rows], axis=0)[:, None],
        tf.concat([tf.ones_like(single_rows), other_splits[1:] - other_splits[:-1]], axis=0),
        [nrows],
    )
    splits = tf.concat([[0], tf.cumsum(lengths)], axis=0)
    other_row_of_value = row_ids(other_splits, tf.size(other_values))
    other_targets = (
        tf.range(tf.size(other_values, out_type=tf.int64))
        - tf.gather(other_splits, other_row_of_value)
        + tf.gather(splits, tf.gather(other_rows, other_row_of_value))
    )
    values = tf.scatter_nd(
        tf.concat([tf.gather(splits, single_rows), other_targets], axis=0)[:, None],
        tf.concat([single_values, other_values], axis=0),
        splits[-1:],
    )
    return values, splits
