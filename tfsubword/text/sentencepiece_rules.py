"""SentencePiece's rewriting step in the graph: at each position of a text, the longest user-defined
symbol is copied as it is; otherwise the longest rule of the precompiled character map is replaced by
its target; otherwise one character is copied. `text.sentencepiece` applies the whitespace rules after it.
"""

import functools

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables, trie
from tfsubword.files import sentencepiece_model as spm_model
from tfsubword.text import normalization_rules

# Per code point: it is a one-character key, the first or the second character of a longer key.
SINGLE, FIRST, SECOND = 1, 2, 4


class CharacterRules(tf.Module):
    """The character map of a `NormalizerSpec` (`spec`) and the `user_defined` symbols, applied at
    each position. `rule_flags` and `symbol_flags` (int8 per code point) say where a key of either
    can start or go on (see `key_flags`)."""

    def __init__(self, spec, user_defined=(), name=None):
        super().__init__(name=name)
        self._rules, replacements = None, []
        if spec.charsmap:
            blob = spec.precompiled_charsmap or normalization_rules.precompiled_charsmap(spec.name)
            units, values, replacements, longest = spm_model.charsmap_arrays(blob)
            self._rules = trie.DoubleArray(units, values, longest)
        targets = [[ord(c) for c in replacement] for replacement in replacements]
        self._target_values = tables.constant([c for t in targets for c in t], tf.int32, shape=[sum(map(len, targets))])
        self._target_splits = tables.constant(np.cumsum([0] + [len(t) for t in targets]), tf.int64)
        self._user_defined = trie.Trie(list(user_defined), range(len(user_defined))) if user_defined else None
        # Walks start only where a key can match: at a one-character key, or at the first character
        # of a longer key followed by a possible second character.
        self.rule_flags, self.symbol_flags = key_flags(tuple(spec.charsmap)), key_flags(tuple(user_defined))
        self._flags = tables.CodePointTable(self.rule_flags | self.symbol_flags, tf.int8)

    def apply(self, strings, code_points, starts, splits, invalid):
        """Apply the user-defined symbols and the character map: (values, splits per input character,
        the chunk - the rewriting step - each value comes from, whether any rule applied, and whether
        each input character starts a chunk). `starts`: the byte where each character starts in its string.
        At the positions `invalid` (int64, sorted), U+FFFD stands for an invalid byte, which SentencePiece
        copies as U+FFFD: no rule or symbol applies to it."""
        size = tf.size(code_points)
        positions = tf.range(size)
        unchanged = (
            code_points,
            tf.range(tf.cast(size, tf.int64) + 1),
            positions,
            tf.constant(False),
            tf.ones([size], tf.bool),
        )
        if self._rules is None and self._user_defined is None:
            return unchanged
        flags = self._flags.lookup(code_points)
        following = tf.concat([flags[1:], [0]], axis=0)
        initial = (
            tf.bitwise.bitwise_and(flags, SINGLE)
            + tf.bitwise.bitwise_and(
                tf.bitwise.bitwise_and(flags, FIRST) * 2, tf.bitwise.bitwise_and(following, SECOND)
            )
            > 0
        )
        initial = tf.tensor_scatter_nd_update(initial, invalid[:, None], tf.zeros_like(invalid, tf.bool))
        return ops.rare_cond(
            tf.reduce_any(initial),
            lambda: self._rewrite_rules(strings, code_points, starts, splits, initial, invalid),
            lambda: unchanged,
        )

    def _rewrite_rules(self, strings, code_points, starts, splits, initial, invalid):
        size = tf.size(code_points)
        positions = tf.range(size)
        rows = ops.row_ids(splits)
        line_ends = tf.cast(ops.take(splits[1:], rows), tf.int32)
        # A match ends before an invalid byte (no key holds one).
        limits = tf.cond(
            tf.size(invalid) > 0,
            lambda: tf.minimum(
                line_ends,
                ops.take(
                    tf.concat([tf.cast(invalid, tf.int32), [size]], axis=0),
                    ops.search_sorted(tf.cast(invalid, tf.int32), positions),
                ),
            ),
            lambda: line_ends,
        )
        line_first = positions == tf.cast(ops.take(splits[:-1], rows), tf.int32)
        roots = tf.where(initial, 0, -1)
        none = -tf.ones_like(code_points)
        user_end = self._user_defined.longest_matches(code_points, roots, limits)[0] if self._user_defined else none
        rule_end, rule = self._rule_matches(strings, starts, rows, initial) if self._rules else (none, none)
        user = user_end >= 0
        ruled = ~user & (rule_end >= 0)
        ends = tf.where(user, user_end, tf.where(ruled, rule_end, positions + 1))
        # The path of a line ends at the line's end; an invalid byte is on it like any character.
        jumps = tf.where(ends >= line_ends, size, ends)
        longest_line = tf.reduce_max(tf.concat([[0], splits[1:] - splits[:-1]], axis=0))
        on_path = tf.cond(
            tf.reduce_any(ends > positions + 1),  # only matches of several characters hide positions
            lambda: trie.greedy_path(jumps, line_first, longest_line),
            lambda: tf.ones_like(line_first),
        )
        replaced = on_path & ruled
        copied = on_path & ~ruled
        if self._user_defined is not None:
            # The characters of a user-defined symbol on the path are copied as they are.
            user_starts = ops.indices_where(on_path & user)
            marks = tf.scatter_nd(
                tf.concat([user_starts, tf.cast(ops.take(ends, user_starts), tf.int64)], axis=0)[:, None],
                tf.concat([tf.ones_like(user_starts), -tf.ones_like(user_starts)], axis=0),
                tf.cast(size, tf.int64)[None] + 1,
            )
            copied |= tf.cumsum(marks)[:-1] > 0
        # The table: the targets of the rules applied, in order, then the characters. (Only the
        # targets used: all of them cost more to copy than a batch of lines.)
        applied = ops.indices_where(replaced)
        targets, target_splits = ops.gather_rows(self._target_values, self._target_splits, ops.take(rule, applied))
        # Each value of the table goes with the chunk of the position it stands for.
        chunk_of_position = tf.cumsum(tf.cast(on_path, tf.int32)) - 1
        target_chunks = ops.take(ops.take(chunk_of_position, applied), ops.row_ids(target_splits))
        table_values = tf.stack(
            [tf.concat([targets, code_points], axis=0), tf.concat([target_chunks, chunk_of_position], axis=0)], axis=1
        )
        # Each position reads a range of the table: its rule's targets, itself, or nothing (one range
        # per position: several times cheaper than a ragged gather of one-value rows).
        bounds = tf.cast(target_splits, tf.int32)
        starts = tf.tensor_scatter_nd_update(bounds[-1] + positions, applied[:, None], bounds[:-1])
        lengths = tf.tensor_scatter_nd_update(tf.cast(copied, tf.int32), applied[:, None], bounds[1:] - bounds[:-1])
        value_splits, index = tf.raw_ops.RaggedRange(
            starts=starts, limits=starts + lengths, deltas=tf.constant(1), Tsplits=tf.int64
        )
        values = ops.take(table_values, index)
        return values[:, 0], value_splits, values[:, 1], tf.constant(True), on_path

    def _rule_matches(self, strings, starts, rows, initial):
        """The longest rule of the character map at each `initial` position (int32, -1 elsewhere): its
        exclusive end and the index of its target. The double array is walked over the UTF-8 bytes
        that follow each such position (`starts`: the byte where each character starts in its string,
        `rows`: its string), as SentencePiece walks it; a key is whole characters, so a match ends
        where a character starts."""
        candidates = ops.indices_where(initial)
        positions = ops.take(starts, candidates)
        longest = tf.fill(tf.shape(positions), tf.constant(self._rules.longest, tf.int64))
        windows = tf.strings.substr(ops.take(strings, ops.take(rows, candidates)), positions, longest)
        data, splits = ops.decode_bytes(windows)
        length, rule = self._rules.longest_matches(data, splits[:-1], splits[1:])
        # The characters matched: the bytes among them that start one (not 0b10xxxxxx).
        leads = tf.concat([[0], tf.cumsum(tf.cast(tf.bitwise.bitwise_and(data, 0xC0) != 0x80, tf.int64))], axis=0)
        characters = ops.take(leads, splits[:-1] + length) - ops.take(leads, splits[:-1])
        matched = ops.indices_where(length > 0)
        at = ops.take(candidates, matched)
        ends = at + ops.take(characters, matched)
        none = -tf.ones(tf.shape(initial), tf.int32)
        return (
            tf.tensor_scatter_nd_update(none, at[:, None], tf.cast(ends, tf.int32)),
            tf.tensor_scatter_nd_update(none, at[:, None], tf.cast(ops.take(rule, matched), tf.int32)),
        )


@functools.lru_cache(maxsize=8)
def key_flags(keys):
    """Per code point (int8 `[0x110000]`): whether it is a key of one character, the first or the second
    character of a longer key."""
    flags = np.zeros(0x110000, np.int8)
    single = np.array([ord(key) for key in keys if len(key) == 1], np.int64)
    longer = [key for key in keys if len(key) > 1]
    flags[single] |= SINGLE
    flags[np.array([ord(key[0]) for key in longer], np.int64)] |= FIRST
    flags[np.array([ord(key[1]) for key in longer], np.int64)] |= SECOND
    return flags
