"""Small core-op building blocks for lean graphs.

The layers run on every request of a served model, and a `tf.data` pipeline instantiates their graph
again for every epoch, so graph size matters: each helper here does with two or three ops what the
general-purpose wrappers (`tf.boolean_mask`, `tf.repeat`, validated `tf.RaggedTensor` constructors)
do with dozens. Ragged structure is passed around as flat values plus int64 row splits.
"""

import collections
import threading
import time

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import attr_value_pb2

from tfsubword.text import re2_class  # noqa: F401 (the layers' RE2 classes are built here)


class Traced:
    """Graph functions traced once each, whatever calls them.

    A graph that calls one several times (a pass in a loop and after it, a model's export tracing its call
    again) then holds one copy of its ops: faster to trace, smaller to save, quicker to load. This is
    no tracked attribute of a layer or module, so a SavedModel saves only what its signatures call.

    Called eagerly, a function runs op by op until its eager calls have cost `EAGER_SECONDS` in all, then
    is traced and runs as a graph: a trace costs 0.5 to 12 s and an eager call tens of milliseconds
    against one or two in the graph, so a few calls never pay a trace and a loop pays it once, early.
    """

    EAGER_SECONDS = 5.0
    # Functions run eagerly from inside another one's eager run count as part of it.
    _eager_depth = threading.local()

    def __init__(self):
        self._functions = {}
        self._eager_seconds = collections.Counter()

    @tf.autograph.experimental.do_not_convert
    def __call__(self, key, function, signature, *args):
        """`function(*args)`, traced once for `key` with the input `signature` (a list of `tf.TensorSpec`)."""
        if tf.executing_eagerly():  # (even when traced: a graph's first run instantiates it, seconds)
            depth = getattr(self._eager_depth, "value", 0)
            if depth or self._eager_seconds[key] < self.EAGER_SECONDS:
                return self._run_eagerly(key, function, args, depth)
        traced = self._functions.get(key)
        if traced is None:  # the concrete function: a `tf.function` would trace again inside `tf.saved_model.save`
            function = tf.function(function, input_signature=signature, autograph=False)
            traced = self._functions[key] = function.get_concrete_function()
        return traced(*args)

    def _run_eagerly(self, key, function, args, depth):
        self._eager_depth.value = depth + 1
        start = time.perf_counter()
        try:
            return function(*args)
        finally:
            self._eager_depth.value = depth
            if not depth:
                self._eager_seconds[key] += time.perf_counter() - start


# `ragged_in_halves` makes two calls from this many rows.
_HALVES_FROM_ROWS = 512


def indices_where(mask):
    """The positions where the 1-D bool `mask` is True, as int64."""
    return tf.reshape(tf.where(mask), [-1])


def row_ids(row_splits):
    """For each value grouped by `row_splits`, the index of its row (int64). Two ranges over each
    row, one counting from the row's index and one from 0, differ by the row's index: linear time,
    where a binary search per value is not."""
    return row_ids_and_places(row_splits)[0]


def row_ids_and_places(row_splits):
    """`row_ids`, and the place of each value in its row (from 0), both int64."""
    row_splits = tf.cast(row_splits, tf.int64)
    lengths = row_splits[1:] - row_splits[:-1]
    rows = tf.range(tf.size(lengths, out_type=tf.int64))
    one = tf.constant(1, tf.int64)
    _, from_row = tf.raw_ops.RaggedRange(starts=rows, limits=rows + lengths, deltas=one, Tsplits=tf.int64)
    _, from_zero = tf.raw_ops.RaggedRange(starts=tf.constant(0, tf.int64), limits=lengths, deltas=one, Tsplits=tf.int64)
    return from_row - from_zero, from_zero


def first_and_last_in_rows(mask, sorted_rows, nrows):
    """For each of `nrows` rows, the first and the last index `i` where `mask[i]` among the values
    whose (non-decreasing) row indices are `sorted_rows`: int64 `[nrows]` each, `size(mask)` and
    -1 where a row has none. One binary search per row, not one segment op over every value."""
    at = indices_where(mask)
    rows = tf.gather(tf.cast(sorted_rows, tf.int64), at)
    wanted = tf.range(tf.cast(nrows, tf.int64))
    count = tf.size(at, out_type=tf.int64)
    first = search_sorted(rows, wanted, side="left", out_type=tf.int64)
    last = search_sorted(rows, wanted, side="right", out_type=tf.int64) - 1
    has_any = last >= first
    at = tf.concat([at, [0]], axis=0)  # read where a row has none
    first = tf.where(has_any, tf.gather(at, tf.minimum(first, count)), tf.size(mask, out_type=tf.int64))
    return first, tf.where(has_any, tf.gather(at, tf.maximum(last, 0)), -1)


def search_sorted(sorted_values, values, side="left", out_type=tf.int32):
    """`tf.searchsorted` of a 1-D sorted sequence: four ops, where `tf.searchsorted` spends a dozen
    reshaping for batches of sequences (a cost per call that small inputs feel)."""
    search = tf.raw_ops.LowerBound if side == "left" else tf.raw_ops.UpperBound
    return search(sorted_inputs=sorted_values[None, :], values=values[None, :], out_type=out_type)[0]


def splits_from_row_ids(sorted_row_ids, nrows):
    """Row splits `[nrows + 1]` for values whose (non-decreasing) row indices are `sorted_row_ids`."""
    return search_sorted(sorted_row_ids, tf.range(nrows + 1, dtype=sorted_row_ids.dtype), out_type=tf.int64)


def split_strings(strings, sep=""):
    """`tf.strings.split(strings, sep or None)` of `[n]` strings as (the parts, the row of each
    int64, row splits int64): the op alone, without the dozen ops that build and check a ragged
    tensor from its output."""
    indices, parts, _ = tf.raw_ops.StringSplitV2(input=strings, sep=sep, maxsplit=-1)
    rows = indices[:, 0]
    return parts, rows, splits_from_row_ids(rows, tf.size(strings, out_type=tf.int64))


def decode_utf8(strings):
    """`[n]` strings -> (code points int32, row splits int64); each invalid sequence becomes U+FFFD."""
    splits, code_points = tf.raw_ops.UnicodeDecode(
        input=strings, input_encoding="UTF-8", errors="replace", replacement_char=0xFFFD, Tsplits=tf.int64
    )
    return code_points, splits


def decode_utf8_with_offsets(strings):
    """`[n]` strings -> (code points int32, the byte offset where each starts int64, row splits int64)."""
    splits, code_points, starts = tf.raw_ops.UnicodeDecodeWithOffsets(
        input=strings, input_encoding="UTF-8", errors="replace", replacement_char=0xFFFD, Tsplits=tf.int64
    )
    return code_points, starts, splits


def decode_bytes(strings):
    """`[n]` strings -> (their bytes as int32 in 0..255, row splits int64)."""
    splits, values = tf.raw_ops.UnicodeDecode(
        input=strings, input_encoding="ISO-8859-1", errors="strict", replacement_char=0xFFFD, Tsplits=tf.int64
    )
    return values, splits


def encode_utf8(code_points, row_splits):
    """Rows of code points (int32, int64 `row_splits`) -> one UTF-8 string per row."""
    return tf.strings.unicode_encode(tf.RaggedTensor.from_row_splits(code_points, row_splits, validate=False), "UTF-8")


def gather_rows(values, row_splits, indices):
    """Rows `indices` of the ragged (`values`, `row_splits`): returns (values, row splits)."""
    (splits,), gathered = tf.raw_ops.RaggedGather(
        params_nested_splits=[row_splits], params_dense_values=values, indices=indices, OUTPUT_RAGGED_RANK=1
    )
    return gathered, splits


def ragged_in_halves(ragged_of, rows, from_rows=_HALVES_FROM_ROWS, seed=None):
    """`ragged_of(rows)` as two calls, on the first and second half of `rows`, that run at once,
    from `from_rows` rows (fewer take one call: the pair costs a dozen ops more, which a short
    text's call feels; None: always two, without the conditional).

    `ragged_of` maps a vector to a ragged tensor with one row per element, as value tensors
    followed by row splits (int64); the halves' are joined into the same result. One such op
    (`RaggedGather`, `UnicodeDecode`) runs on one thread: over a batch's tens of thousands of rows
    it is a stretch of milliseconds with a core idle, which halves shorten. With a `seed` (int32
    `[2]`), `ragged_of(rows, seed)` draws at random: each half gets a seed of its own.
    """
    with_seed = (lambda part, seed: ragged_of(part)) if seed is None else ragged_of
    seeds = (None, None) if seed is None else tf.unstack(tf.random.experimental.stateless_split(seed, 2))

    def in_halves():
        half = tf.size(rows) // 2
        *first, first_splits = with_seed(rows[:half], seeds[0])
        *second, second_splits = with_seed(rows[half:], seeds[1])
        values = [tf.concat([a, b], axis=0) for a, b in zip(first, second)]
        return (*values, tf.concat([first_splits, first_splits[-1] + second_splits[1:]], axis=0))

    if from_rows is None:
        return in_halves()
    return rare_cond(tf.size(rows) >= from_rows, in_halves, lambda: tuple(with_seed(rows, seed)))


def strings_in_halves(function, strings, from_size):
    """`function(strings)` for a function of `[n]` strings to `[n]` strings, one string each; from
    `from_size` strings, as two calls on the first and second half, which run at once (most of a
    normalizer's ops run on one thread each)."""

    def in_halves():
        half = tf.size(strings) // 2
        return tf.concat([function(strings[:half]), function(strings[half:])], axis=0)

    return rare_cond(tf.size(strings) >= from_size, in_halves, lambda: function(strings))


def rows_in_halves(values, row_splits):
    """Rows (`values`, int64 `row_splits`) cut in two at the first row boundary at or past their
    middle value, for work on each half that runs at once: (rows in the first half, (values, row
    splits) of the first half, the same of the second, its splits from 0). Either half may have no
    rows."""
    rows = tf.size(row_splits, out_type=tf.int64) - 1
    half = tf.minimum(search_sorted(row_splits, row_splits[-1:] // 2, out_type=tf.int64)[0], rows)
    middle = row_splits[half]
    return half, (values[:middle], row_splits[: half + 1]), (values[middle:], row_splits[half:] - middle)


def substitute_rows(values, replaced, replacement_values, replacement_splits):
    """Rows of one value each, some replaced by the rows of a ragged tensor, in order.

    Row i is `[values[i]]`, except where `replaced[i]`: the k-th replaced row becomes row k of the
    ragged (`replacement_values`, `replacement_splits`). Values may have inner dimensions (the same
    in both). Returns (values, row splits) of the `len(values)` rows.
    """
    size = tf.shape(values, out_type=tf.int64)[0]
    replacements = tf.size(replacement_splits, out_type=tf.int64) - 1
    # Gathered from one table: the replacement rows, then each value as a row of its own.
    rows = tf.where(replaced, tf.cumsum(tf.cast(replaced, tf.int64), exclusive=True), replacements + tf.range(size))
    table_values = tf.concat([replacement_values, values], axis=0)
    table_splits = tf.concat([replacement_splits, replacement_splits[-1] + tf.range(1, size + 1)], axis=0)
    return gather_rows(table_values, table_splits, rows)


def rare_cond(pred, true_fn, false_fn):
    """`tf.cond` for a branch that is large and seldom taken: it stays one `If` op at run time.

    In a `tf.function`, TensorFlow inlines both branches of a `tf.cond` into the graph around it
    (lowering to Switch/Merge), and every run then visits each node of the untaken branch to mark
    it dead: over thousands of nodes, a large share of encoding one short text. An `If` runs only
    its taken branch, as a function call. But it waits for all its inputs, where inlined branch ops
    start as soon as theirs are ready, so a branch taken by most large batches is better inlined.
    The setting is an attribute of the op, so it is saved with the model. Eagerly, this is `tf.cond`.
    """
    if tf.executing_eagerly():
        return tf.cond(pred, true_fn, false_fn)
    graph = tf.compat.v1.get_default_graph()
    known = len(graph.get_operations())
    result = tf.cond(pred, true_fn, false_fn)
    for op in graph.get_operations()[known:]:
        if op.type in ("If", "StatelessIf"):
            op._set_attr("_lower_using_switch_merge", attr_value_pb2.AttrValue(b=False))  # no public setter
    return result


def re2_none_of(mask):
    """An RE2 pattern that fully matches the strings holding none of the code points where the bool
    array `mask` (by code point) is set; invalid UTF-8 never matches it. `mask` must set one at least."""
    return re2_class(code_point_ranges(np.nonzero(mask)[0]), negate=True) + "*"


def code_point_ranges(sorted_values):
    """Sorted distinct ints -> the (first, last) of each run of consecutive ones."""
    if not len(sorted_values):
        return []
    sorted_values = np.asarray(sorted_values)
    breaks = np.nonzero(np.diff(sorted_values) > 1)[0]
    firsts = np.concatenate([[sorted_values[0]], sorted_values[breaks + 1]])
    lasts = np.concatenate([sorted_values[breaks], [sorted_values[-1]]])
    return list(zip(firsts.tolist(), lasts.tolist()))


def replace_values(values, entry, table_values, table_splits):
    """Each of `values` (int32) replaced by row `entry[i]` of the ragged table (`table_values` with one
    spare value at its end, `table_splits` int64) where `entry[i] >= 0`, else kept: (values, row splits
    int64, one row per value). When every row used has one value, one gather does it."""
    row = tf.maximum(entry, 0)
    starts = take(table_splits, row)
    lengths = tf.where(entry >= 0, take(table_splits, row + 1) - starts, 1)
    size = tf.size(values, out_type=tf.int64)

    def one_each():
        return tf.where(entry >= 0, take(table_values, starts), values), tf.range(size + 1)

    def in_rows():
        splits = tf.concat([[0], tf.cumsum(lengths)], axis=0)
        source = row_ids(splits)
        offset = tf.range(splits[-1]) - take(splits, source)
        from_table = take(entry, source) >= 0
        spare = tf.size(table_values, out_type=tf.int64) - 1
        replaced = take(table_values, tf.where(from_table, take(starts, source) + offset, spare))
        return tf.where(from_table, replaced, take(values, source)), splits

    return rare_cond(tf.reduce_all(lengths == 1), one_each, in_rows)


def rewrite_rows(strings, rows, rewrite):
    """`strings` with the rows `rows` (int64 indices) replaced by `rewrite` of them; without a row,
    `rewrite`'s ops do not run (on a line or a few, most often none needs it)."""

    def rewritten():
        return tf.tensor_scatter_nd_update(strings, rows[:, None], rewrite(take(strings, rows)))

    return rare_cond(tf.size(rows) > 0, rewritten, lambda: strings)


def check_re2(pattern, what):
    """Raise `ValueError` naming `what` if RE2 refuses `pattern` (too large, say): when a layer is
    built, not when it is first called."""
    with tf.init_scope():
        try:
            tf.strings.regex_full_match("", pattern)
        except tf.errors.InvalidArgumentError as error:
            raise ValueError(f"{what}: {error.message}") from None


def re2_literal(text):
    """An RE2 pattern that matches `text` literally (each character as its code point)."""
    return "".join(f"\\x{{{ord(char):X}}}" for char in text)


def take(params, indices):
    """`tf.gather(params, indices)` (along axis 0), as a GatherNd: on CPU, GatherV2 copies each
    value with a call of its own, and GatherNd's tighter loop is faster on the large index vectors
    of a batch (tiny gathers pay a few microseconds for the extra op)."""
    return tf.gather_nd(params, tf.expand_dims(indices, -1))
