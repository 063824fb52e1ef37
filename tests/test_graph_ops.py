"""The small graph helpers, on values worked out by hand."""

import pytest
import tensorflow as tf

from tfsubword import graph_ops as ops


def branches(x):
    # Taken when x has more than two elements: their sum; otherwise minus their count.
    return ops.rare_cond(tf.size(x) > 2, lambda: tf.reduce_sum(x), lambda: -tf.size(x))


def test_rare_cond_gives_the_taken_branch_eagerly_and_in_a_function():
    traced = tf.function(branches, input_signature=[tf.TensorSpec([None], tf.int32)])
    for run in (branches, traced):
        assert int(run(tf.constant([1, 2, 3, 4]))) == 10
        assert int(run(tf.constant([5, 6]))) == -2
        assert int(run(tf.constant([], tf.int32))) == 0


def test_rare_cond_stays_one_if_op_in_the_graph():
    graph = tf.function(branches).get_concrete_function(tf.TensorSpec([None], tf.int32)).graph
    conds = [op for op in graph.get_operations() if op.type in ("If", "StatelessIf")]
    assert len(conds) == 1
    assert conds[0].get_attr("_lower_using_switch_merge") is False
    # Plain tf.cond, for contrast, is marked to be inlined (lowered) when the function runs.
    plain = tf.function(lambda x: tf.cond(tf.size(x) > 2, lambda: tf.reduce_sum(x), lambda: -tf.size(x)))
    plain_graph = plain.get_concrete_function(tf.TensorSpec([None], tf.int32)).graph
    (plain_cond,) = [op for op in plain_graph.get_operations() if op.type in ("If", "StatelessIf")]
    assert plain_cond.get_attr("_lower_using_switch_merge") is True


def test_rare_cond_survives_a_saved_model(tmp_path):
    module = tf.Module()
    module.f = tf.function(branches, input_signature=[tf.TensorSpec([None], tf.int32)])
    tf.saved_model.save(module, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    (function,) = loaded.f.concrete_functions
    (cond,) = [op for op in function.graph.get_operations() if op.type in ("If", "StatelessIf")]
    assert cond.get_attr("_lower_using_switch_merge") is False
    assert int(loaded.f(tf.constant([1, 2, 3]))) == 6
    assert int(loaded.f(tf.constant([7]))) == -1


def test_row_ids_with_empty_rows_by_hand():
    # Rows [], [a b c], [], [d], [e f g], []: values 0-2 in row 1, 3 in row 3, 4-6 in row 4.
    splits = tf.constant([0, 0, 3, 3, 4, 7, 7], tf.int64)
    traced = tf.function(ops.row_ids)
    for run in (ops.row_ids, traced):
        assert run(splits).numpy().tolist() == [1, 1, 1, 3, 4, 4, 4]
        assert run(tf.constant([0], tf.int64)).numpy().tolist() == []
        assert run(tf.constant([0, 0, 0], tf.int64)).numpy().tolist() == []


def test_first_and_last_in_rows_by_hand():
    # Values in rows 0 0 0 2 2 3 3 3 (row 1 and row 4 empty); the mask holds at 1, 2, 5 and 7:
    # row 0 -> first 1, last 2; row 1 none; row 2 none (its values are unmarked); row 3 -> 5 and 7.
    rows = tf.constant([0, 0, 0, 2, 2, 3, 3, 3], tf.int64)
    mask = tf.constant([False, True, True, False, False, True, False, True])
    first, last = ops.first_and_last_in_rows(mask, rows, 5)
    assert first.numpy().tolist() == [1, 8, 8, 5, 8]
    assert last.numpy().tolist() == [2, -1, -1, 7, -1]
    first, last = ops.first_and_last_in_rows(tf.zeros([0], tf.bool), tf.zeros([0], tf.int64), 2)
    assert first.numpy().tolist() == [0, 0] and last.numpy().tolist() == [-1, -1]


def test_ragged_in_halves_of_a_gather_by_hand():
    # Rows [a b], [], [c], [d e f] of values 1..6; row splits 0 2 2 3 6.
    values = tf.constant([1, 2, 3, 4, 5, 6])
    splits = tf.constant([0, 2, 2, 3, 6], tf.int64)

    def gathered(indices):
        return ops.ragged_in_halves(lambda part: ops.gather_rows(values, splits, part), indices)

    cases = [
        # Rows 3, 0, 1, 3, 2 -> [d e f] [a b] [] [d e f] [c]; halves 3 0 | 1 3 2.
        ([3, 0, 1, 3, 2], [4, 5, 6, 1, 2, 4, 5, 6, 3], [0, 3, 5, 5, 8, 9]),
        # One row: the first half is empty.
        ([0], [1, 2], [0, 2]),
        # Empty rows only, in both halves.
        ([1, 1, 1], [], [0, 0, 0, 0]),
        # No rows at all.
        ([], [], [0]),
    ]
    for run in (gathered, tf.function(gathered)):
        for indices, expected_values, expected_splits in cases:
            got_values, got_splits = run(tf.constant(indices, tf.int64))
            assert got_values.numpy().tolist() == expected_values
            assert got_splits.numpy().tolist() == expected_splits
            assert got_splits.dtype == tf.int64


def test_ragged_in_halves_of_a_decode_with_offsets_by_hand():
    # "ab", "", "é" (2 bytes), "xé", invalid "\xff" -> U+FFFD: halves "ab" "" | "é" "xé" "\xff".
    strings = tf.constant([b"ab", b"", "é".encode(), "xé".encode(), b"\xff"])
    code_points, starts, splits = ops.ragged_in_halves(ops.decode_utf8_with_offsets, strings)
    assert code_points.numpy().tolist() == [97, 98, 0xE9, 120, 0xE9, 0xFFFD]
    assert starts.numpy().tolist() == [0, 1, 0, 0, 1, 0]
    assert splits.numpy().tolist() == [0, 2, 2, 3, 5, 6]
    code_points, splits = ops.ragged_in_halves(ops.decode_utf8, strings[:1])
    assert code_points.numpy().tolist() == [97, 98] and splits.numpy().tolist() == [0, 2]


def test_rows_in_halves_by_hand():
    values = tf.constant([1, 2, 3, 4, 5, 6])
    cases = [
        # Rows [1 2] [] [3] [4 5 6]: 6 values, middle 3; the first boundary at or past it is after row 3.
        ([0, 2, 2, 3, 6], 3, ([1, 2, 3], [0, 2, 2, 3]), ([4, 5, 6], [0, 3])),
        # One row: its end is the first boundary past the middle, so it is the first half; the second has none.
        ([0, 6], 1, ([1, 2, 3, 4, 5, 6], [0, 6]), ([], [0])),
        # Rows [1] [2 3 4 5] [6]: middle 3, boundaries 0 1 5 6: after row 2.
        ([0, 1, 5, 6], 2, ([1, 2, 3, 4, 5], [0, 1, 5]), ([6], [0, 1])),
    ]
    for splits, half, first, second in cases:
        got_half, got_first, got_second = ops.rows_in_halves(values, tf.constant(splits, tf.int64))
        assert int(got_half) == half
        for got, expected in ((got_first, first), (got_second, second)):
            assert [t.numpy().tolist() for t in got] == list(expected)
    # No rows at all.
    got_half, got_first, got_second = ops.rows_in_halves(tf.zeros([0], tf.int32), tf.constant([0], tf.int64))
    assert int(got_half) == 0 and [t.numpy().tolist() for t in got_first + got_second] == [[], [0], [], [0]]


def test_take_is_a_gather_along_the_first_axis():
    table = tf.constant([10, 11, 12, 13])
    assert ops.take(table, tf.constant([3, 0, 0, 2])).numpy().tolist() == [13, 10, 10, 12]
    assert ops.take(table, tf.constant([2, 1], tf.int64)).numpy().tolist() == [12, 11]
    assert int(ops.take(table, tf.constant(1))) == 11  # a scalar index: one value
    assert ops.take(table, tf.zeros([0], tf.int32)).shape == (0,)
    # Rows of a matrix, and a matrix of indices: the shape of the indices, then of a row.
    rows = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert ops.take(rows, tf.constant([2, 0])).numpy().tolist() == [[5.0, 6.0], [1.0, 2.0]]
    assert ops.take(table, tf.constant([[0, 1], [3, 3]])).numpy().tolist() == [[10, 11], [13, 13]]
    assert ops.take(tf.constant(["a", "b"]), tf.constant([1, 1, 0])).numpy().tolist() == [b"b", b"b", b"a"]
    # Out of range: an error, as tf.gather gives on CPU, never a silent value.
    with pytest.raises(tf.errors.InvalidArgumentError):
        ops.take(table, tf.constant([4]))


def test_split_strings_by_hand():
    strings = tf.constant(["a b", "", "  c\td ", "e"])
    parts, rows, splits = ops.split_strings(strings)
    assert parts.numpy().tolist() == [b"a", b"b", b"c", b"d", b"e"]
    assert rows.numpy().tolist() == [0, 0, 2, 2, 3] and splits.numpy().tolist() == [0, 2, 2, 4, 5]
    # With a separator, every one splits: "" before, between and after.
    parts, rows, splits = ops.split_strings(tf.constant([" x  y", "z"]), sep=" ")
    assert parts.numpy().tolist() == [b"", b"x", b"", b"y", b"z"]
    assert rows.numpy().tolist() == [0, 0, 0, 0, 1] and splits.numpy().tolist() == [0, 4, 5]


def test_search_sorted_by_hand():
    bounds = tf.constant([2, 4, 4, 7], tf.int64)
    values = tf.constant([0, 2, 3, 4, 7, 9], tf.int64)
    assert ops.search_sorted(bounds, values).numpy().tolist() == [0, 0, 1, 1, 3, 4]
    assert ops.search_sorted(bounds, values, side="right").numpy().tolist() == [0, 1, 1, 3, 4, 4]
    assert ops.search_sorted(bounds, tf.zeros([0], tf.int64), out_type=tf.int64).dtype == tf.int64
    assert ops.search_sorted(tf.zeros([0], tf.int64), values).numpy().tolist() == [0] * 6


def test_substitute_rows_by_hand():
    # Rows 1 and 3 are replaced by the replacement's rows 0 ([7, 8]) and 1 (empty), in order.
    values, splits = ops.substitute_rows(
        tf.constant([10, 11, 12, 13]),
        tf.constant([False, True, False, True]),
        tf.constant([7, 8]),
        tf.constant([0, 2, 2], tf.int64),
    )
    assert values.numpy().tolist() == [10, 7, 8, 12]
    assert splits.numpy().tolist() == [0, 1, 3, 4, 4]
    values, splits = ops.substitute_rows(
        tf.constant([5, 6]), tf.constant([False, False]), tf.zeros([0], tf.int32), tf.constant([0], tf.int64)
    )
    assert values.numpy().tolist() == [5, 6] and splits.numpy().tolist() == [0, 1, 2]


def test_traced_functions_run_eagerly_until_their_eager_time_pays_for_a_trace(monkeypatch):
    runs = []

    def doubled(x):
        runs.append(tf.executing_eagerly())
        return x * 2

    signature = [tf.TensorSpec([None], tf.int32)]
    traced = ops.Traced()
    monkeypatch.setattr(ops.Traced, "EAGER_SECONDS", 1e9)
    for _ in range(3):
        assert traced("f", doubled, signature, tf.constant([1, 2])).numpy().tolist() == [2, 4]
    assert runs == [True, True, True]  # op by op, each time
    monkeypatch.setattr(ops.Traced, "EAGER_SECONDS", 0.0)
    for _ in range(3):
        assert traced("f", doubled, signature, tf.constant([3])).numpy().tolist() == [6]
    assert runs == [True, True, True, False]  # traced once, then the graph runs

    # A function called from another's eager run is part of it: not traced on its own.
    monkeypatch.setattr(ops.Traced, "EAGER_SECONDS", 1.0)
    inner, outer = ops.Traced(), ops.Traced()
    inner_runs = []

    def plus_one(x):
        inner_runs.append(tf.executing_eagerly())
        return x + 1

    inner._eager_seconds["g"] = 5.0  # alone, it would be traced now
    assert outer("o", lambda x: inner("g", plus_one, signature, x), signature, tf.constant([1])).numpy() == [2]
    assert inner_runs == [True]
    assert inner("g", plus_one, signature, tf.constant([1])).numpy() == [2]
    assert inner_runs == [True, False]
