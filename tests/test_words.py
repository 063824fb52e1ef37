"""The shared word pipeline (`tfsubword.words`), the tables and the argument checks, by hand."""

import numpy as np
import pytest
import tensorflow as tf

from tfsubword import checks, tables, words
from tfsubword import graph_ops as ops


def letters(batch):
    """A segmenter for the tests: each word's characters, as ids `ord(c) - 96` (a = 1), int32."""
    code_points, splits = ops.decode_utf8(batch)
    return code_points - 96, splits


def test_encode_looks_up_whole_words_and_segments_each_distinct_miss_once():
    calls = []

    def segment(batch):
        calls.append(batch)
        return letters(batch)

    table = tables.hash_table([b"ab", b"c"], [100, 200], -1, tf.string, tf.int32)
    line_words = tf.constant(["ab", "ba", "c", "ba", "", "ab"])
    line_splits = tf.constant([0, 3, 3, 6], tf.int64)  # lines: [ab ba c] [] [ba "" ab]
    values, splits = words.encode(line_words, line_splits, segment, table)
    assert tf.RaggedTensor.from_row_splits(values, splits).to_list() == [[100, 2, 1, 200], [], [2, 1, 100]]
    (distinct_misses,) = calls
    assert sorted(distinct_misses.numpy().tolist()) == [b"", b"ba"]


def test_many_distinct_words_are_segmented_in_two_halves():
    calls = []

    def segment(batch):
        calls.append(int(tf.size(batch)))
        return letters(batch)

    count = words._HALVES_FROM + 5
    distinct = ["".join(chr(97 + (i // 26**k) % 26) for k in range(3)) for i in range(count)]
    line_words = distinct + distinct[:7]
    values, splits = words.encode(tf.constant(line_words), tf.constant([0, 3, len(line_words)], tf.int64), segment)
    expected = [[ord(c) - 96 for c in word] for word in line_words]
    got = tf.RaggedTensor.from_row_splits(values, splits).to_list()
    assert got == [sum(expected[:3], []), sum(expected[3:], [])]
    assert calls == [count // 2, count - count // 2]


def test_many_texts_are_split_and_made_distinct_in_two_halves():
    calls = []

    def split(texts):
        calls.append(int(tf.size(texts)))
        parts = tf.strings.split(texts)
        return parts.flat_values, parts.row_splits

    count = words._TEXT_HALVES_FROM + 3
    texts = [f"w{i % 7} x{i % 3}" for i in range(count)]
    unique, index, line_splits = (t.numpy().tolist() for t in words.split_distinct(tf.constant(texts), split))
    in_order = [word.encode() for text in texts for word in text.split()]
    assert sorted(unique) == sorted(set(in_order))
    assert [unique[i] for i in index] == in_order
    assert line_splits == list(range(0, 2 * count + 1, 2))
    assert calls == [count // 2, count - count // 2]


def test_encode_with_spans_adds_each_word_start():
    def spans(batch):
        values, splits = letters(batch)
        rows, places = ops.row_ids_and_places(splits)
        return tf.stack([tf.cast(values, tf.int64), places, places + 1], axis=1), splits

    table = tables.hash_table([b"xy"], [7], -1, tf.string, tf.int32)
    ids, starts, ends, splits = words.encode(
        tf.constant(["xy", "ab", "xy"]),
        tf.constant([0, 2, 3], tf.int64),
        spans,
        table,
        word_starts=tf.constant([0, 3, 2], tf.int64),
    )
    assert tf.RaggedTensor.from_row_splits(ids, splits).to_list() == [[7, 1, 2], [7]]
    assert starts.numpy().tolist() == [0, 3, 4, 2] and ends.numpy().tolist() == [2, 4, 5, 4]


def test_empty_hash_table_answers_the_default_for_every_key():
    table = tables.hash_table([], [], -1, tf.string, tf.int32)
    assert table.lookup(tf.constant(["", "a"])).numpy().tolist() == [-1, -1]
    numbers = tables.hash_table([], [], 0, tf.int64, tf.int32)
    assert numbers.lookup(tf.constant([0, 5], tf.int64)).numpy().tolist() == [0, 0]


def test_code_point_table_stores_equal_pages_once():
    values = np.zeros(0x110000, np.int8)
    values[[0x41, 0x3042, 0x10FFFF]] = [1, 2, 3]
    table = tables.CodePointTable(values, tf.int8)
    assert table.pages.shape[0] == 4 * 256  # the zero page and three others
    probe = tf.constant([0x41, 0x42, 0x3042, 0x10FFFF, 0], tf.int32)
    assert table.lookup(probe).numpy().tolist() == [1, 0, 2, 3, 0]


def test_traced_functions_are_traced_once_per_key():
    traced, traces = ops.Traced(), []

    def double(x):
        traces.append(1)
        return x * 2

    signature = [tf.TensorSpec([None], tf.int32)]

    @tf.function
    def twice(x):
        return traced("double", double, signature, x) + traced("double", double, signature, x + 1)

    assert twice(tf.constant([1, 2])).numpy().tolist() == [6, 10]
    assert twice(tf.constant([1, 2, 3])).numpy().tolist() == [6, 10, 14]
    assert len(traces) == 1


@pytest.mark.parametrize(
    "check, arguments, message",
    [
        (checks.boolean, ("lowercase", 1), r"`lowercase` must be True or False. Received: lowercase=1."),
        (checks.integer, ("vocab_size", 0), r"`vocab_size` must be an int of at least 1. Received: vocab_size=0."),
        (checks.integer, ("vocab_size", True), r"Received: vocab_size=True"),
        (checks.string, ("unknown_token", ""), r"`unknown_token` must be a non-empty str"),
        (checks.choice, ("truncate", "left"), r"`truncate` must be one of 'a', 'b'. Received: truncate='left'."),
        (checks.fraction, ("coverage", 1.5, 0, 1), r"`coverage` must be a number in \(0, 1\]"),
        (checks.tokens, ("special_tokens", "[UNK]"), r"not a single str"),
    ],
)
def test_checks_name_the_argument_the_value_and_what_is_valid(check, arguments, message):
    if check is checks.choice:
        arguments = (*arguments, ("a", "b"))
    with pytest.raises(ValueError, match=message):
        check(*arguments)


def test_checks_return_what_they_accept():
    assert checks.integer("n", np.int64(3)) == 3 and checks.integer("n", None, optional=True) is None
    assert checks.tokens("special_tokens", ["a", "b"]) == ("a", "b")
    assert checks.fraction("coverage", 1, 0, 1) == 1.0
