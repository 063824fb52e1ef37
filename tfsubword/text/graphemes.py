"""Where extended grapheme clusters start (Unicode's UAX #29, the rules of Unicode 16.0), in the graph.

Hugging Face's `Precompiled` normalizer rewrites text one cluster at a time, so reproducing it needs
the clusters. A cluster boundary between two characters depends on their properties and, for three
rules, on what comes before: emoji joined by ZWJ (GB11), pairs of regional indicators (GB12, GB13)
and Indic conjuncts (GB9c). Each of those looks back over a run of characters; a running maximum of
positions finds the run's start for all characters at once.
"""

import functools

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables
from tfsubword.text import grapheme_classes as classes

# Grapheme_Cluster_Break values (the low four bits of a character's entry); Other is 0.
CR, LF, CONTROL, EXTEND, ZWJ, REGIONAL_INDICATOR, PREPEND, SPACING_MARK = range(1, 9)
L, V, T, LV, LVT = range(9, 14)
_BREAKS = {
    CR: classes.CR,
    LF: classes.LF,
    CONTROL: classes.CONTROL,
    EXTEND: classes.EXTEND,
    ZWJ: classes.ZWJ,
    REGIONAL_INDICATOR: classes.REGIONAL_INDICATOR,
    PREPEND: classes.PREPEND,
    SPACING_MARK: classes.SPACING_MARK,
    L: classes.HANGUL_L,
    V: classes.HANGUL_V,
    T: classes.HANGUL_T,
}
# Hangul syllables: LV every 28 code points from the first (no final consonant), LVT between.
_SYLLABLES = (0xAC00, 0xD7A4)
_SYLLABLES_PER_LV = 28
BREAK_MASK = 0xF
_PICTOGRAPHIC = 0x10  # Extended_Pictographic
# Indic_Conjunct_Break values, in two bits above.
_CONJUNCT_SHIFT = 5
CONSONANT, CONJUNCT_EXTEND, LINKER = 1, 2, 3
_CONJUNCTS = {
    CONSONANT: classes.CONJUNCT_CONSONANT,
    CONJUNCT_EXTEND: classes.CONJUNCT_EXTEND,
    LINKER: classes.CONJUNCT_LINKER,
}


@functools.cache
def property_values():
    """Every code point's entry: its Grapheme_Cluster_Break value, `_PICTOGRAPHIC` if it is
    Extended_Pictographic, its Indic_Conjunct_Break value shifted by `_CONJUNCT_SHIFT` (int8; shared,
    not to be changed)."""
    values = np.zeros(0x110000, np.int8)
    for value, ranges in _BREAKS.items():
        for low, high in ranges:
            values[low : high + 1] = value
    first, end = _SYLLABLES
    values[first:end] = LVT
    values[first:end:_SYLLABLES_PER_LV] = LV
    for low, high in classes.EXTENDED_PICTOGRAPHIC:
        values[low : high + 1] |= _PICTOGRAPHIC
    for value, ranges in _CONJUNCTS.items():
        for low, high in ranges:
            values[low : high + 1] |= value << _CONJUNCT_SHIFT
    return values


class GraphemeClusters(tf.Module):
    """The starts of extended grapheme clusters in rows of code points."""

    def __init__(self, name=None):
        super().__init__(name=name)
        self._properties = tables.CodePointTable(property_values(), tf.int8)

    def starts(self, code_points, splits):
        """Code points (int32) in rows (`splits`, int64) -> whether each starts a cluster (bool)."""
        entries = tf.cast(self._properties.lookup(code_points), tf.int32)
        kind = entries & BREAK_MASK
        conjunct = tf.bitwise.right_shift(entries, _CONJUNCT_SHIFT)
        pictographic = (entries & _PICTOGRAPHIC) != 0
        position = tf.range(tf.size(code_points, out_type=tf.int64))
        row_start = ops.take(splits, ops.row_ids(splits))
        first = position == row_start
        # The character before each; a row's first character has a CONTROL before it: a break (GB4).
        previous = tf.where(first, CONTROL, tf.concat([[CONTROL], kind[:-1]], axis=0))

        def is_in(values, *kinds):
            return tf.reduce_any(tf.stack([values == k for k in kinds]), axis=0)

        def last_before(mask):
            # For each position, the last position before it in its row where `mask` holds, else -1.
            found = ops.indices_where(mask)
            k = ops.search_sorted(found, position, out_type=tf.int64)  # 0: none before (maybe none at all)
            last = ops.take(tf.concat([[-1], found], axis=0), k)
            return tf.where(last >= row_start, last, -1)

        def at(values, positions, fill):
            return tf.where(positions >= 0, ops.take(values, tf.maximum(positions, 0)), fill)

        joined = is_in(kind, EXTEND, ZWJ, SPACING_MARK) | (previous == PREPEND)  # GB9, GB9a, GB9b
        joined |= (previous == L) & is_in(kind, L, V, LV, LVT)  # GB6
        joined |= is_in(previous, LV, V) & is_in(kind, V, T)  # GB7
        joined |= is_in(previous, LVT, T) & (kind == T)  # GB8
        # GB11: ExtPict Extend* ZWJ x ExtPict.
        not_extend = last_before(kind != EXTEND)
        before_joiner = at(not_extend, not_extend, -1)  # the last non-Extend before the ZWJ
        joined |= pictographic & (previous == ZWJ) & at(pictographic, before_joiner, False)
        # GB12, GB13: regional indicators pair up from the start of their run.
        indicator = kind == REGIONAL_INDICATOR
        run = position - last_before(~indicator) - 1  # indicators right before this one (row start: -1)
        run = tf.where(last_before(~indicator) >= 0, run, position - row_start)
        joined |= indicator & (previous == REGIONAL_INDICATOR) & (run % 2 == 1)
        # GB9c: Consonant [Extend Linker]* Linker [Extend Linker]* x Consonant.
        outside = last_before((conjunct != CONJUNCT_EXTEND) & (conjunct != LINKER))
        linkers = tf.cumsum(tf.cast(conjunct == LINKER, tf.int64))
        linked = ops.take(linkers, tf.maximum(position - 1, 0)) - at(linkers, outside, 0) > 0
        joined |= (conjunct == CONSONANT) & at(conjunct == CONSONANT, outside, False) & linked & ~first
        # GB3, GB4, GB5: CR x LF; otherwise a break after and before controls.
        controls = is_in(previous, CR, LF, CONTROL) | is_in(kind, CR, LF, CONTROL)
        joined = tf.where(controls, (previous == CR) & (kind == LF) & ~first, joined)
        return ~joined
