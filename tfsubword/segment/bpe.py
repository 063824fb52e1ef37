"""Byte-pair encoding of words, in the graph, with Hugging Face `tokenizers`' exact merge order.

Each word starts as its bytes (or, not byte-level, its characters), and merges apply as Hugging Face's
BPE model applies them: repeatedly, the adjacent pair whose merge has the lowest rank, the leftmost such
pair first, until no pair of the word has a merge. In the graph that is one `tf.while_loop` over all the
words at once, one merge per word per step (integer pair keys in one hash table); a word that is itself
a token encoding to itself (most frequent words) is looked up whole instead.
"""

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables
from tfsubword.text import byte_level as byte_level_lib


def merge_word(symbols, ranks):
    """Reference BPE of one word (a list of symbol ids) with `ranks` (pair -> (rank, merged id)), in
    plain Python: the lowest-rank pair merges first, the leftmost among equals."""
    symbols = list(symbols)
    while len(symbols) > 1:
        best = None
        for position in range(len(symbols) - 1):
            found = ranks.get((symbols[position], symbols[position + 1]))
            if found is not None and (best is None or found[0] < best[0]):
                best = (found[0], position, found[1])
        if best is None:
            break
        _, position, merged = best
        symbols[position : position + 2] = [merged]
    return symbols


class BytePairEncoding(tf.Module):
    """The merges of a vocabulary `tokens` (id = position): `merges` in rank order, `(left, right)`.

    `byte_level`: words are bytes, written as GPT-2's byte alphabet; otherwise characters. A byte (or
    character) that is no token becomes `unknown_id`, or is dropped when it is -1. `whole_words` (the
    attribute) is the table of the words that are tokens encoding to themselves.
    """

    def __init__(self, tokens, merges, byte_level, unknown_id=-1, name=None):
        super().__init__(name=name)
        ids = {token: index for index, token in enumerate(tokens)}
        self._size = size = len(tokens)
        self._byte_level = byte_level
        self._unknown_id = unknown_id
        ranks = {}
        for rank, (left, right) in enumerate(merges):
            for token in (left, right, left + right):
                if token not in ids:
                    raise ValueError(
                        f"Merge {rank} {(left, right)!r} needs the token {token!r}, which is not in the vocabulary."
                    )
            ranks[(ids[left], ids[right])] = (rank, ids[left + right])
        # The first symbols: byte (or code point) -> id.
        if byte_level:
            initial = {byte: ids[char] for byte, char in enumerate(byte_level_lib.byte_to_char()) if char in ids}
            self.token_bytes = [byte_level_lib.from_byte_level(token) for token in tokens]
        else:
            initial = {ord(token): index for token, index in ids.items() if len(token) == 1}
            self.token_bytes = [token.encode("utf-8") for token in tokens]
        whole_keys, whole_ids = [], []
        for index, data in enumerate(self.token_bytes):
            if not data:
                continue
            units = list(data) if byte_level else [ord(c) for c in tokens[index]]
            symbols = [initial.get(unit, unknown_id) for unit in units]
            if -1 not in symbols and merge_word(symbols, ranks) == [index]:
                whole_keys.append(data)
                whole_ids.append(index)
        self.whole_words = tables.hash_table(whole_keys, whole_ids, -1, tf.string, tf.int32)
        keys = np.array([left * size + right for left, right in ranks], np.int64)
        values = np.array([rank * size + merged for rank, merged in ranks.values()], np.int64)
        self._merge_table = tables.hash_table(keys, values, -1, tf.int64, tf.int64)
        if byte_level:
            self._byte_ids = tables.constant([initial.get(b, unknown_id) for b in range(256)], tf.int64)
        else:
            code_points = sorted(initial)
            self._initial = tables.hash_table(code_points, [initial[c] for c in code_points], -1, tf.int64, tf.int64)

    def segment(self, words):
        """`[k]` words (UTF-8) -> their tokens: (ids int32, row splits int64), one row per word."""
        if self._byte_level:
            units, splits = ops.decode_bytes(words)
            symbols = ops.take(self._byte_ids, units)
        else:
            units, splits = ops.decode_utf8(words)
            symbols = self._initial.lookup(tf.cast(units, tf.int64))
            if self._unknown_id >= 0:
                symbols = tf.where(symbols < 0, tf.constant(self._unknown_id, tf.int64), symbols)
        known = ops.indices_where(symbols >= 0)
        symbols, rows = ops.take(symbols, known), ops.take(ops.row_ids(splits), known)
        size = tf.constant(self._size, tf.int64)
        table = self._merge_table
        number_of_words = tf.size(words, out_type=tf.int64)

        def step(symbols, rows, _):
            count = tf.size(symbols, out_type=tf.int64)
            pairs = tf.maximum(count - 1, 0)
            same_word = rows[:-1] == rows[1:]
            found = table.lookup(symbols[:-1] * size + symbols[1:])
            found = tf.where(same_word, found, -1)
            mergeable = found >= 0
            # The leftmost pair of lowest rank in each word: minimize rank * count + position.
            key = tf.where(mergeable, (found // size) * count + tf.range(pairs), tf.int64.max)
            best = tf.math.unsorted_segment_min(key, rows[:-1], number_of_words)
            chosen = mergeable & (key == ops.take(best, rows[:-1]))
            chosen_at = tf.concat([chosen, [False]], axis=0)
            merged = tf.where(chosen_at, tf.concat([found % size, [0]], axis=0), symbols)
            keep = ops.indices_where(~tf.concat([[False], chosen], axis=0))
            return ops.take(merged, keep), ops.take(rows, keep), tf.reduce_any(chosen)

        symbols, rows, _ = tf.while_loop(
            lambda symbols, rows, going: going,
            step,
            (symbols, rows, tf.size(symbols) > 1),
            shape_invariants=(tf.TensorShape([None]), tf.TensorShape([None]), tf.TensorShape([])),
        )
        return tf.cast(symbols, tf.int32), ops.splits_from_row_ids(rows, number_of_words)
