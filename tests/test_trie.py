"""The trie walk and the greedy path, on cases worked out by hand."""

import numpy as np
import tensorflow as tf

from tfsubword.trie import Trie, greedy_path


def code_points(text):
    return tf.constant([ord(c) for c in text], tf.int32)


def test_longest_match_from_every_position():
    trie = Trie(["a", "ab", "abc", "b", "bcd"], [10, 11, 12, 13, 14])
    text = "abcb"
    ends, values = trie.longest_matches(code_points(text), tf.zeros([4], tf.int32), tf.fill([4], 4))
    # From 0: "abc" (ends at 3). From 1: "bcd" would need a 'd', so "b". From 2: nothing starts with 'c'.
    assert ends.numpy().tolist() == [3, 2, -1, 4]
    assert values.numpy().tolist() == [12, 13, -1, 13]


def test_walks_stop_at_the_limit_and_skip_unrooted_positions():
    trie = Trie(["ab", "abc"], [1, 2])
    # Two words, "abc" | "abc" cut after "ab": the second walk may not read past position 5.
    ends, values = trie.longest_matches(
        code_points("abcabc"), tf.constant([0, -1, 0, 0, -1, -1]), tf.constant([3, 3, 3, 5, 5, 5])
    )
    assert ends.numpy().tolist() == [3, -1, -1, 5, -1, -1]
    assert values.numpy().tolist() == [2, -1, -1, 1, -1, -1]


def test_keys_longer_than_a_chunk_of_steps():
    # Runs of "a" of these lengths, value = length: from each position of one 75-character word, the
    # longest run that fits in what is left of it. Walks end within a chunk of steps or after many,
    # in a graph and eagerly.
    lengths = [1, 5, 31, 32, 33, 40, 70]
    trie = Trie(["a" * n for n in lengths], lengths)
    expected = [max(n for n in lengths if n <= 75 - p) for p in range(75)]
    args = (code_points("a" * 75), tf.zeros([75], tf.int32), tf.fill([75], 75))
    for walk in (trie.longest_matches, tf.function(trie.longest_matches)):
        ends, values = walk(*args)
        assert values.numpy().tolist() == expected
        assert ends.numpy().tolist() == [p + n for p, n in enumerate(expected)]


def test_continuation_root():
    trie = Trie(["un", "##aff", "##able", "##a"], [0, 1, 2, 3])
    assert trie.node("##") > 0
    assert trie.node("x") == -1
    assert trie.node("") == 0


def test_empty_text():
    trie = Trie(["a"], [0])
    ends, values = trie.longest_matches(tf.zeros([0], tf.int32), tf.zeros([0], tf.int32), tf.zeros([0], tf.int32))
    assert ends.shape == (0,) and values.shape == (0,)


def test_greedy_path():
    # Six positions (n = 6): stop sink 6, fail sink 7. Path from 0: 0 -> 2 -> 5 -> stop.
    # Path from 3: 3 -> fail. Positions 1 and 4 are never reached.
    jumps = tf.constant([2, 3, 5, 7, 6, 6])
    starts = tf.constant([True, False, False, True, False, False])
    assert greedy_path(jumps, starts, max_steps=6).numpy().tolist() == [True, False, True, True, False, True]


def test_greedy_path_long_chain():
    # A chain through all 100 positions needs every one of the log2 rounds.
    jumps = tf.concat([tf.range(1, 100), [100]], axis=0)
    starts = tf.one_hot(0, 100, on_value=True, off_value=False)
    assert greedy_path(jumps, starts, max_steps=100).numpy().all()
    assert not greedy_path(jumps, starts, max_steps=64).numpy().all()


def by_end(trie, text, limits, width, *args, columns=None, **kwargs):
    """`matches_by_end` in a [width, n] layout: the key of k characters ending at position e in row
    width - k, column columns[e] (e by default): cell (width - k) * n + columns[e]. The words of
    `text` are given by `limits`, the exclusive end of the word of each position."""
    points = code_points(text)
    n = len(text)
    word_starts = [i == 0 or limits[i] != limits[i - 1] for i in range(n)]
    column = tf.range(n, dtype=tf.int64) if columns is None else tf.constant(columns, tf.int64)
    cells = (column + width * n, tf.fill([n], tf.constant(n, tf.int64)), width * n)
    found = trie.matches_by_end(points, tf.constant(word_starts, tf.bool, shape=[n]), width, cells, *args, **kwargs)
    return (
        tuple(tf.reshape(table, [width, n]) for table in found)
        if isinstance(found, tuple)
        else tf.reshape(found, [width, n])
    )


def test_every_key_by_where_it_ends():
    trie = Trie(["a", "ab", "abc", "b", "bcd"], [1, 2, 3, 4, 5])
    low = -1  # cells with no key
    # Two words, "abc" and "bcd" (positions 0-2 and 3-5). Row j of the table, column e: the key of
    # 3 - j characters ending at e; written below one end per line. "bc" is only a prefix of "bcd",
    # not a key; no key runs across the two words ("cb").
    table = by_end(trie, "abcbcd", [3, 3, 3, 6, 6, 6], 3)
    assert table.numpy().T.tolist() == [
        [low, low, 1],  # "a"
        [low, 2, 4],  # "ab", "b"
        [3, low, low],  # "abc"
        [low, low, 4],  # "b" (a word start: "cb" and "bcb" would cross)
        [low, low, low],
        [5, low, low],  # "bcd"
    ]
    # "a" | "b": "ab" would cross the words.
    assert by_end(trie, "ab", [1, 2], 2).numpy().T.tolist() == [[low, 1], [low, 4]]
    # One row: one-character keys only.
    assert by_end(trie, "abx", [3, 3, 3], 1).numpy().tolist() == [[1, 4, low]]
    assert by_end(trie, "", [], 3).shape == (3, 0)


def test_weights_of_the_keys_by_where_they_end():
    trie = Trie(["a", "ab", "b"], [0, 1, 2])
    low = np.finfo(np.float32).min
    weights = tf.constant([low, 0.5, 1.5, 2.5, -9.0])  # first: cells with no key
    ids, weighted = by_end(trie, "abc", [3, 3, 3], 2, weights)
    assert ids.numpy().T.tolist() == [[-1, 0], [1, 2], [-1, -1]]
    assert weighted.numpy().T.tolist() == [[low, 0.5], [1.5, 2.5], [low, low]]
    # The one-character row holds `single_missing` (here 3, weighing -9) where no key is.
    ids, weighted = by_end(trie, "abc", [3, 3, 3], 1, weights, single_missing=3)
    assert ids.numpy().tolist() == [[0, 2, 3]] and weighted.numpy().tolist() == [[0.5, 2.5, -9.0]]


def test_keys_by_where_they_end_in_another_column_order():
    trie = Trie(["a", "ab", "b"], [0, 1, 2])
    low = -1  # no key
    # Position e goes to column columns[e]: "a" (0) to column 2, "b" (1) to 0, "c" (2) to 1.
    table = by_end(trie, "abc", [3, 3, 3], 2, columns=[2, 0, 1])
    assert table.numpy().tolist() == [[1, low, low], [2, low, 0]]


def test_keys_by_where_they_end_in_a_triangular_layout():
    trie = Trie(["a", "ab", "abc", "b", "c"], [1, 2, 3, 4, 5])
    low = -1  # no key
    # Position e of the word "abc" gets e + 1 cells, one per key length that fits before it,
    # starting at cell e(e + 1) / 2, the longest key first: base = e(e + 1) / 2 + e + 1, stride 1.
    # Cells: 0 "a" | 1 "ab", 2 "b" | 3 "abc", 4 "bc" (not a key), 5 "c".
    cells = (tf.constant([1, 3, 6], tf.int64), tf.ones([3], tf.int64), 6)
    table = trie.matches_by_end(code_points("abc"), tf.constant([True, False, False]), 3, cells)
    assert table.numpy().tolist() == [1, 2, 4, 3, low, 5]


def test_keys_longer_than_a_chunk_of_walk_steps():
    # The walk takes its steps in chunks (of 4) and stops once no walk is alive: keys ending in the
    # second and third chunks are found, and a text whose walks die at once finds only its own.
    trie = Trie(["a", "abcdef", "abcdefghij", "cdefgh"], [1, 2, 3, 4])
    expected = np.full((10, 10), -1)
    expected[10 - 1, 0] = 1  # "a" ends at 0
    expected[10 - 6, 5] = 2  # "abcdef" ends at 5
    expected[10 - 6, 7] = 4  # "cdefgh" ends at 7
    expected[10 - 10, 9] = 3  # "abcdefghij" ends at 9
    assert by_end(trie, "abcdefghij", [10] * 10, 10).numpy().tolist() == expected.tolist()
    expected = np.full((10, 3), -1)
    expected[10 - 1, 0] = 1
    assert by_end(trie, "abx", [3, 3, 3], 10).numpy().tolist() == expected.tolist()


def test_walks_from_every_position_in_the_first_steps():
    # The first steps (up to 3 characters) walk from every position, dead walks included: a walk
    # that died stays dead, a walk that reaches the next word dies there, and the last positions
    # read past the end of the text without finding anything.
    trie = Trie(["ab", "abc", "bca", "ca", "xb", "b"], [1, 2, 3, 4, 5, 6])
    low = -1
    # Words "abc" (0-2), "ab" (3-4), "xab" (5-7). Columns are end positions; rows 3 - k for keys of k.
    table = by_end(trie, "abcabxab", [3, 3, 3, 5, 5, 8, 8, 8], 3)
    assert table.numpy().T.tolist() == [
        [low, low, low],  # "a" is no key
        [low, 1, 6],  # "ab", "b"
        [2, low, low],  # "abc"; "bc" and "c" are no keys
        [low, low, low],  # "bca" and "ca" would cross into the second word
        [low, 1, 6],  # "ab", "b"
        [low, low, low],  # "x" is no key; "bx" and "abx" would cross
        [low, low, low],  # "xa" is no key: the walk from "x" dies here
        [low, 1, 6],  # "ab", "b"; not "xab" (dead walks stay dead, whatever they read)
    ]


def test_double_array_longest_matches_over_bytes():
    """SentencePiece's trie format walked over UTF-8 bytes: the longest key from each start, and the
    index of its value among the sorted values."""
    from tfsubword.files import darts
    from tfsubword.trie import DoubleArray

    keys = {"a": 10, "ab": 30, "é": 20, "ée": 40}
    units = darts.build((key.encode("utf-8"), value) for key, value in keys.items())
    array = DoubleArray(units, sorted(set(keys.values())), max(len(k.encode("utf-8")) for k in keys))
    data = tf.constant(list("xabéex".encode()), tf.int32)  # x a b é(2 bytes) e x
    starts = tf.constant([0, 1, 2, 3, 5, 1], tf.int64)
    limits = tf.constant([8, 8, 8, 8, 8, 2], tf.int64)  # the last walk may not pass byte 2
    length, value = array.longest_matches(data, starts, limits)
    assert length.numpy().tolist() == [0, 2, 0, 3, 0, 1]
    assert value.numpy().tolist() == [-1, 2, -1, 3, -1, 0]
