"""Greedy longest-match-first WordPiece of normalized words, in the graph, for a batch of words at once.

Each word is cut into the longest vocabulary token from its start, then the longest continuation token
(`##` + characters) from there, and so on. A word with any position where no token matches, or longer
than `max_chars_per_word` characters, is one unknown token. Words that are tokens themselves are looked
up whole first; the rest take one trie walk from every position (`trie.Trie.longest_matches`) and one
greedy path through the matches (`trie.greedy_path`).
"""

import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables, trie


class WordPiece(tf.Module):
    """The greedy segmenter of the vocabulary `tokens` (id = position).

    Args:
        tokens: the vocabulary, a list of str.
        unknown_id: the id of the token of a word that cannot be pieced together.
        suffix_indicator: the prefix of continuation tokens.
        max_chars_per_word: longer words are the unknown token.
        whole_words: the `(token, id)` pairs to look up whole before segmenting (tokens that are
            normalized words); `whole_words` (the attribute) is their table, for the layer too.
    """

    def __init__(self, tokens, unknown_id, suffix_indicator, max_chars_per_word, whole_words, name=None):
        super().__init__(name=name)
        self._unknown_id = unknown_id
        self._max_chars_per_word = max_chars_per_word
        self._trie = trie.Trie(tokens, range(len(tokens)))
        self._continuation_root = self._trie.node(suffix_indicator)
        keys = [token.encode("utf-8") for token, _ in whole_words]
        self.whole_words = tables.hash_table(keys, [index for _, index in whole_words], -1, tf.string, tf.int32)

    def segment(self, code_points, splits, spans=False):
        """The pieces of words given as code points and row splits: (ids int32, row splits int64), one
        row per word; with `spans`, `[pieces, 3]` int32 rows of (id, first character, end character) in
        `code_points` instead of ids (an unknown word's span is the word)."""
        words = ops.encode_utf8(code_points, splits)
        whole_ids = self.whole_words.lookup(words)
        missed = whole_ids < 0
        misses = ops.indices_where(missed)
        missed_values, missed_splits = ops.gather_rows(code_points, splits, misses)
        pieces, piece_splits = self._match(missed_values, missed_splits, spans)
        if spans:
            # Pieces of the missed words were placed relative to the gathered words: move them back.
            shift = tf.gather(splits, misses) - missed_splits[:-1]
            shift = tf.cast(tf.gather(shift, ops.row_ids(piece_splits)), tf.int32)
            pieces = pieces + tf.stack([tf.zeros_like(shift), shift, shift], axis=1)
            bounds = tf.cast(splits, tf.int32)
            whole_ids = tf.stack([whole_ids, bounds[:-1], bounds[1:]], axis=1)
        return ops.substitute_rows(
            whole_ids, missed, tf.range(tf.size(misses, out_type=tf.int64)), pieces, piece_splits
        )

    def _match(self, code_points, splits, spans=False):
        """`segment` of words that are not tokens themselves, by the trie walk and the greedy path."""
        size = tf.size(code_points)
        rows = ops.row_ids(splits)
        word_bounds = tf.cast(splits, tf.int32)
        starts = tf.gather(word_bounds, rows)
        limits = tf.gather(word_bounds[1:], rows)
        first = tf.range(size) == starts
        start_nodes = tf.where(first, 0, self._continuation_root)
        start_nodes = tf.where(limits - starts > self._max_chars_per_word, -1, start_nodes)
        ends, ids = self._trie.longest_matches(code_points, start_nodes, limits)

        jumps = tf.where(ends < 0, size + 1, tf.where(ends >= limits, size, ends))
        on_path = trie.greedy_path(jumps, first, self._max_chars_per_word)
        n_words = tf.size(splits) - 1
        failed_words = tf.math.unsorted_segment_max(tf.cast(on_path & (ends < 0), tf.int32), rows, n_words)
        failed = tf.gather(failed_words, rows) > 0
        kept = ops.indices_where(tf.where(failed, first, on_path))
        ids = tf.gather(tf.where(failed, self._unknown_id, ids), kept)
        if spans:
            piece_ends = tf.gather(tf.where(failed, limits, ends), kept)
            ids = tf.stack([ids, tf.cast(kept, tf.int32), piece_ends], axis=1)
        return ids, ops.splits_from_row_ids(tf.gather(rows, kept), tf.cast(n_words, tf.int64))
