"""Hugging Face's `Precompiled` normalizer in the graph: SentencePiece's character map, applied one
grapheme cluster at a time as `tokenizers` applies it (not as SentencePiece does).

For each extended grapheme cluster of fewer than 6 UTF-8 bytes that starts with a key of the map
(the shortest such key), the whole cluster becomes that key's replacement, even where the key is
shorter than the cluster: "e" + U+0301 + U+0301 becomes "é" when "e" + U+0301 is a key. Every other
character is replaced on its own when it is a key, else kept. Longer keys apply only as whole
clusters, so "ᄀ" + "ᅡ" (a cluster of 6 bytes) stays as it is where SentencePiece joins it.
"""

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables
from tfsubword.files import sentencepiece_model as spm_model
from tfsubword.text import graphemes
from tfsubword.text.graphemes import GraphemeClusters

# Clusters of fewer bytes than this are looked up whole.
_WHOLE_CLUSTER_BYTES = 6
# The most characters such a cluster can hold (only the first can be ASCII, the rest take 2 bytes or more).
_MOST_CHARS = 3


class PrecompiledNormalizer(tf.Module):
    """`normalizers.Precompiled(blob)` of Hugging Face `tokenizers`: strings -> strings."""

    def __init__(self, precompiled_charsmap, name=None):
        super().__init__(name=name)
        rules = spm_model.decode_charsmap(precompiled_charsmap)
        replacements = sorted(set(rules.values()))
        index = {replacement: i for i, replacement in enumerate(replacements)}
        # Then an empty replacement, for the characters of a cluster after its first.
        targets = [[ord(char) for char in replacement] for replacement in replacements] + [[]]
        self._nothing = len(replacements)
        values = [c for t in targets for c in t] + [0]  # a spare value for `ops.replace_values`
        self._target_values = tables.constant(values, tf.int32, shape=[len(values)])
        self._target_splits = tables.constant(np.cumsum([0] + [len(t) for t in targets]), tf.int64)
        # The replacement of each one-character key, + 1 (0: not a key).
        single = np.zeros(0x110000, np.int32)
        for key, replacement in rules.items():
            if len(key) == 1:
                single[ord(key)] = index[replacement] + 1
        self._single = tables.CodePointTable(single, tf.int32)
        # Keys that can start a short cluster of two characters or more.
        keys = [key for key in rules if len(key.encode("utf-8")) < _WHOLE_CLUSTER_BYTES]
        self._keys = tables.hash_table(
            [key.encode("utf-8") for key in keys], [index[rules[key]] for key in keys], -1, tf.string, tf.int32
        )
        self._clusters = GraphemeClusters()
        kinds = graphemes.property_values() & graphemes.BREAK_MASK
        joins = np.isin(
            kinds, [graphemes.CR, graphemes.EXTEND, graphemes.ZWJ, graphemes.SPACING_MARK, graphemes.PREPEND]
        )
        self._joins = tables.CodePointTable(joins.astype(np.int8), tf.int8)
        # Texts without a one-character key, a joining character or U+FFFD (maybe invalid UTF-8) are
        # left as they are, without decoding them.
        special = joins | (single > 0)
        special[0xFFFD] = True
        self._plain = ops.re2_none_of(special)
        # Keys that become a space (tabs, no-break and ideographic spaces): in a text where no other
        # character is special, no character joins them, so one RE2 rewrite does the whole map.
        to_space = np.zeros(0x110000, bool)
        to_space[[ord(key) for key, replacement in rules.items() if len(key) == 1 and replacement == " "]] = True
        to_space &= ~joins
        self._spaces = ops.re2_class(ops.code_point_ranges(np.nonzero(to_space)[0])) if to_space.any() else None
        self._plain_but_spaces = ops.re2_none_of(special & ~to_space)

    def __call__(self, strings):
        """`[n]` UTF-8 strings -> `[n]` normalized strings (invalid UTF-8: one U+FFFD per sequence)."""
        rewritten = ops.indices_where(~tf.strings.regex_full_match(strings, self._plain))
        return ops.rewrite_rows(strings, rewritten, self._rewrite if self._spaces is None else self._spaced)

    def _spaced(self, strings):
        """`_rewrite` of `strings`, the texts whose only special characters become spaces rewritten by RE2."""
        spaced = tf.strings.regex_full_match(strings, self._plain_but_spaces)
        strings = tf.where(spaced, tf.strings.regex_replace(strings, self._spaces, " "), strings)
        return ops.rewrite_rows(strings, ops.indices_where(~spaced), self._rewrite)

    def _rewrite(self, strings):
        code_points, splits = ops.decode_utf8(strings)
        replacement = self._single.lookup(code_points) - 1
        # Without a character that joins the one before it (or the one after it), every cluster of
        # fewer than 6 bytes is one character: Hangul clusters, pairs of flags and emoji joined by
        # ZWJ take 6 bytes or more.
        joins = self._joins.lookup(code_points) > 0
        replacement = ops.rare_cond(
            tf.reduce_any(joins), lambda: self._by_clusters(code_points, splits, replacement), lambda: replacement
        )
        values, value_splits = ops.replace_values(code_points, replacement, self._target_values, self._target_splits)
        return ops.encode_utf8(values, ops.take(value_splits, splits))

    def _by_clusters(self, code_points, splits, replacement):
        """`replacement` (per character: the row it is replaced by, or -1) with each short cluster of
        several characters that starts with a key: its first character replaced by the shortest
        key's replacement, the others by nothing."""
        starts = self._clusters.starts(code_points, splits)
        cluster_of = tf.cumsum(tf.cast(starts, tf.int64)) - 1
        cluster_starts = ops.indices_where(starts)
        clusters = tf.size(cluster_starts, out_type=tf.int64)
        lengths = tf.math.unsorted_segment_sum(tf.ones_like(cluster_of), cluster_of, clusters)
        sizes = tf.math.unsorted_segment_sum(_utf8_lengths(code_points), cluster_of, clusters)
        short = ops.indices_where((lengths > 1) & (sizes < _WHOLE_CLUSTER_BYTES))
        first = ops.take(cluster_starts, short)
        found = tf.fill(tf.shape(short), -1)
        last = tf.size(code_points, out_type=tf.int64) - 1
        for length in range(_MOST_CHARS, 0, -1):  # the shortest key last, so that it wins
            at = tf.minimum(first[:, None] + tf.range(length, dtype=tf.int64)[None, :], last)
            prefix = tf.strings.unicode_encode(ops.take(code_points, at), "UTF-8")
            hit = tf.where(ops.take(lengths, short) >= length, self._keys.lookup(prefix), -1)
            found = tf.where(hit >= 0, hit, found)
        hit_clusters = tf.boolean_mask(short, found >= 0)
        whole = tf.scatter_nd(hit_clusters[:, None], tf.boolean_mask(found, found >= 0) + 1, [clusters]) - 1
        in_whole = ops.take(whole, cluster_of) >= 0
        return tf.where(in_whole, tf.where(starts, ops.take(whole, cluster_of), self._nothing), replacement)


def _utf8_lengths(code_points):
    return 1 + sum(tf.cast(code_points >= bound, tf.int64) for bound in (0x80, 0x800, 0x10000))
