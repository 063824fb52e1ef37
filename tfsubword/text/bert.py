"""BERT's basic tokenization (cleaning, CJK spacing, lowercasing, accent stripping, punctuation and
whitespace splitting) inside the TensorFlow graph, with core ops only.

The work is split in two stages so that layers can skip the expensive one for most words:

1. `coarse_split`: ASCII lowercasing, then a split on ASCII whitespace. Cheap, byte-level.
2. `normalize_words`: the exact per-code-point rules (`unicode_data`) for coarse words that need them:
   Unicode cleaning, case and accents, punctuation and CJK splitting, Unicode whitespace.

A coarse word that is already a normalized word (say `"the"`) comes out of stage 2 unchanged, so a
layer may look coarse words up in its vocabulary first and send only the misses to stage 2.
`words` runs both stages on everything, for trainers and tests.
"""

import functools

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword.text import unicode_data as ud


def _kinds(elements):
    return tf.bitwise.bitwise_and(tf.bitwise.right_shift(elements, ud.KIND_SHIFT), 3)


def _combining_classes(elements):
    return tf.bitwise.bitwise_and(tf.bitwise.right_shift(elements, ud.CCC_SHIFT), 0xFF)


class BertNormalizer(tf.Module):
    """In-graph equivalent of BERT's `BasicTokenizer`.

    The graph code uses tf.cond / tf.while_loop explicitly, so its methods are exempt from autograph,
    which would only slow tracing down.

    Args:
        lowercase: bool. Apply Python's `str.lower()` (including the final-sigma rule). Defaults to True.
        strip_accents: bool or None. Decompose (NFD) and drop nonspacing marks. None follows `lowercase`,
            as BERT does.
        split_on_cjk: bool. Make each CJK ideograph a word of its own. Defaults to True.
        final_sigma: bool. With `lowercase`, a capital sigma that ends a word becomes `ς`, as in
            `str.lower()`. False: every capital sigma becomes `σ`, as Hugging Face's `BertNormalizer`
            lowercases one character at a time. Defaults to True.
    """

    def __init__(self, lowercase=True, strip_accents=None, split_on_cjk=True, final_sigma=True, name=None):
        super().__init__(name=name)
        self.lowercase = bool(lowercase)
        self.final_sigma = self.lowercase and bool(final_sigma)
        self.strip_accents = self.lowercase if strip_accents is None else bool(strip_accents)
        self.split_on_cjk = bool(split_on_cjk)
        code_points, elements = ud.normalization_table(self.lowercase, self.strip_accents, self.split_on_cjk)
        with tf.init_scope():
            self._entries = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(code_points, np.arange(len(code_points), dtype=np.int32)),
                default_value=-1,
            )
            self._elements = tf.constant(elements)
            self._single_elements = tf.constant(
                _single_elements(code_points, elements, self.final_sigma, self.strip_accents)
            )
            if self.final_sigma:
                sigma_code_points, sigma_classes = ud.sigma_context_table()
                self._sigma_classes = tf.lookup.StaticHashTable(
                    tf.lookup.KeyValueTensorInitializer(sigma_code_points, sigma_classes),
                    default_value=ud.SIGMA_OTHER,
                )

    @tf.autograph.experimental.do_not_convert
    def coarse_split(self, text):
        """`[n]` strings -> (coarse words `[m]`, row splits `[n + 1]` int64).

        ASCII lowercasing, then a split on ASCII whitespace. BERT deletes vertical tab and form feed
        as control characters, but `tf.strings.split` splits on them, so they become U+0001 first:
        another control character that BERT deletes and that does not split. Removing them outright
        would join the bytes on either side, and could turn two invalid UTF-8 fragments into one
        valid character.
        """
        words, _, splits = ops.split_strings(self._coarse_text(text))
        return words, splits

    @tf.autograph.experimental.do_not_convert
    def coarse_split_with_offsets(self, text):
        """`coarse_split`, and the byte where each coarse word starts in its string (int64 `[m]`).

        The other ASCII whitespace becomes spaces (one byte for one), and a split at every space gives
        empty parts between the spaces of a run: so each part starts one byte after the end of the
        one before it in its string, and the empty ones go.
        """
        text = tf.strings.regex_replace(self._coarse_text(text), "[\t\n\r]", " ")
        parts, rows, splits = ops.split_strings(text, sep=" ")
        lengths = tf.cast(tf.strings.length(parts), tf.int64)
        from_first = tf.cumsum(lengths + 1, exclusive=True)
        starts = from_first - ops.take(from_first, ops.take(splits, rows))
        words = ops.indices_where(lengths > 0)
        n = tf.size(text, out_type=tf.int64)
        return ops.take(parts, words), ops.splits_from_row_ids(ops.take(rows, words), n), ops.take(starts, words)

    def _coarse_text(self, text):
        if self.lowercase:
            text = tf.strings.lower(text)
        return tf.strings.regex_replace(text, "[\x0b\x0c]", "\x01")

    @tf.autograph.experimental.do_not_convert
    def normalize_words(self, words):
        """`[n]` coarse words -> `[n, (words), (code points)]` int32: the normalized words of each.

        Invalid UTF-8 is decoded as U+FFFD, one per maximal invalid subsequence, which cleaning then
        deletes. A coarse word made only of deleted characters gives no words. Whole texts work too
        (their ASCII whitespace separates words): `coarse_split` only makes the common case cheaper.
        """
        code_points, splits = ops.decode_utf8(words)
        return self.normalize_code_points(code_points, splits)[0]

    @tf.autograph.experimental.do_not_convert
    def normalize_code_points(self, code_points, splits):
        """Texts given as code points (int32) and row splits -> (`[n, (words), (code points)]`, sources).

        `sources` (int64, one per output code point) is the index, in `code_points`, of the character each
        output code point comes from: the way back to offsets in the original text.
        """
        rows = ops.row_ids(splits)
        entries = self._entries.lookup(code_points)
        implicit = code_points
        if self.split_on_cjk:
            implicit = code_points + _in_cjk_ranges(code_points) * (ud.OWN << ud.KIND_SHIFT)
        single = tf.where(entries >= 0, ops.take(self._single_elements, tf.maximum(entries, 0)), implicit)

        def one_element_each():
            kept = ops.indices_where(single >= 0)
            return ops.take(single, kept), ops.take(rows, kept), kept

        elements, element_rows, sources = ops.rare_cond(
            tf.reduce_min(single) >= _NO_ELEMENT,
            one_element_each,
            lambda: self._elements_in_full(code_points, rows, entries, implicit),
        )
        return _group_words(elements, element_rows, sources, tf.size(splits, out_type=tf.int64) - 1)

    def _elements_in_full(self, code_points, rows, entries, implicit):
        """`normalize_code_points`' elements, their rows and sources, when some character has several
        elements (Hangul syllables), or is a capital sigma, or leaves a mark that NFD may reorder."""
        known = entries >= 0
        width = self._elements.shape[1]
        implicit_rows = tf.pad(implicit[:, None], [[0, 0], [0, width - 1]], constant_values=-1)
        matrix = tf.where(known[:, None], tf.gather(self._elements, tf.maximum(entries, 0)), implicit_rows)
        flat_matrix = tf.reshape(matrix, [-1])
        positions = ops.indices_where(flat_matrix >= 0)
        elements = tf.gather(flat_matrix, positions)
        sources = positions // width
        element_rows = tf.gather(rows, sources)

        if self.final_sigma:
            elements = tf.cond(
                tf.reduce_any(code_points == ud.CAPITAL_SIGMA),
                lambda: self._apply_final_sigma(code_points, rows, matrix[:, 0] >= 0, positions, width, elements),
                lambda: elements,
            )
        if self.strip_accents:
            combining = _combining_classes(elements)
            order = tf.cond(
                tf.reduce_any((combining > 0) & (_kinds(elements) != ud.DROP)),
                lambda: canonical_order(element_rows, combining),
                lambda: tf.range(tf.size(elements, out_type=tf.int64)),
            )
            kept = tf.gather(order, ops.indices_where(tf.gather(_kinds(elements), order) != ud.DROP))
            elements, element_rows, sources = (tf.gather(t, kept) for t in (elements, element_rows, sources))
        return elements, element_rows, sources

    @tf.autograph.experimental.do_not_convert
    def words(self, text):
        """`[n]` strings -> `[n, (words)]` strings: BERT's basic tokenization of each string."""
        coarse, splits = self.coarse_split(text)
        unique, index = tf.unique(coarse, out_idx=tf.int64)
        normalized = self.normalize_words(unique)
        word_splits, char_splits = normalized.nested_row_splits
        strings = ops.encode_utf8(normalized.flat_values, char_splits)
        values, word_splits = ops.gather_rows(strings, word_splits, index)
        return tf.RaggedTensor.from_row_splits(values, tf.gather(word_splits, splits), validate=False)

    def is_normalized_word(self, token):
        """Whether `token` (a Python str) is its own normalization and a single word.

        Such a token, met as a coarse word, needs no normalization: a layer can look it up directly.
        """
        if not token:
            return False
        table = _normalization_dict(self.lowercase, self.strip_accents, self.split_on_cjk)
        allowed_kinds = (ud.NORMAL, ud.OWN) if len(token) == 1 else (ud.NORMAL,)
        for char in token:
            code_point = ord(char)
            implicit_kind = ud.OWN if self.split_on_cjk and ud.is_cjk(code_point) else ud.NORMAL
            row = table.get(code_point, (ud.pack(code_point, implicit_kind, 0),))
            if not any(row == (ud.pack(code_point, kind, 0),) for kind in allowed_kinds):
                return False
        return True

    def _apply_final_sigma(self, code_points, rows, kept, positions, width, elements):
        """Lowercase each capital sigma to the final form where `str.lower()` would.

        CPython scans from the sigma in both directions over case-ignorable characters, within the
        whitespace-delimited token, after cleaning: characters that cleaning deletes (not `kept`) are
        invisible, and separators, CJK ideographs and coarse-word boundaries all stop the scan like
        an uncased character does. A sigma is one element, the first of its matrix row, so its
        element index is found among `positions` (the kept matrix cells) at `sigma * width`.
        """
        classes = self._sigma_classes.lookup(code_points)
        stoppers = ops.indices_where(kept & (classes != ud.SIGMA_CASE_IGNORABLE))
        sigmas = ops.indices_where(code_points == ud.CAPITAL_SIGMA)
        rank = ops.search_sorted(stoppers, sigmas)
        last = tf.size(stoppers) - 1

        def cased_neighbour(neighbour_rank):
            exists = (neighbour_rank >= 0) & (neighbour_rank <= last)
            neighbour = tf.gather(stoppers, tf.clip_by_value(neighbour_rank, 0, last))
            same_word = tf.gather(rows, neighbour) == tf.gather(rows, sigmas)
            return exists & same_word & (tf.gather(classes, neighbour) == ud.SIGMA_CASED)

        final = cased_neighbour(rank - 1) & ~cased_neighbour(rank + 1)
        lowered = tf.where(final, ud.pack(ud.FINAL_SIGMA, ud.NORMAL, 0), ud.pack(ud.SMALL_SIGMA, ud.NORMAL, 0))
        element_indices = ops.search_sorted(positions, sigmas * width)
        return tf.tensor_scatter_nd_update(elements, element_indices[:, None], lowered)


# `_single_elements`: a character that normalizes to nothing (deleted, or only marks stripped).
_NO_ELEMENT = -1
# ... and one that `_elements_in_full` must normalize.
_SEVERAL_ELEMENTS = -2


def _single_elements(code_points, elements, final_sigma, strip_accents):
    """For each row of the normalization table, the one element that survives accent stripping, or
    `_NO_ELEMENT`, or `_SEVERAL_ELEMENTS` where the whole rules are needed: several survivors, a
    surviving mark that canonical reordering could move, or the capital sigma (its case depends on
    its neighbours). Most text is characters of one element each: its elements need no matrix."""
    kinds = (elements >> ud.KIND_SHIFT) & 3
    survives = elements >= 0
    if strip_accents:
        survives &= kinds != ud.DROP
    counts = survives.sum(axis=1)
    several = (counts >= 2) | (survives & (((elements >> ud.CCC_SHIFT) & 0xFF) > 0)).any(axis=1)
    if final_sigma:
        several |= code_points == ud.CAPITAL_SIGMA
    first = np.take_along_axis(elements, np.argmax(survives, axis=1)[:, None], axis=1)[:, 0]
    single = np.where(counts == 0, _NO_ELEMENT, first)
    return np.where(several, _SEVERAL_ELEMENTS, single).astype(np.int32)


def _in_cjk_ranges(code_points):
    """1 for the code points (int32 `[n]`) in a CJK range, else 0 (int32)."""
    # Inside a range, a code point has an odd number of bounds at or below it: one search, where
    # a test per range costs four ops each.
    return tf.bitwise.bitwise_and(ops.search_sorted(_CJK_BOUNDS, code_points, side="right"), 1)


def _range_bounds(ranges):
    """Inclusive (low, high) ranges -> the sorted starts and exclusive ends of their union, int32."""
    bounds = []
    for low, high in sorted(ranges):
        if bounds and low <= bounds[-1]:
            bounds[-1] = max(bounds[-1], high + 1)
        else:
            bounds += [low, high + 1]
    return np.array(bounds, np.int32)


_CJK_BOUNDS = _range_bounds(ud.CJK_RANGES)


def canonical_order(element_rows, combining):
    """NFD's canonical reordering, as a permutation: stable sort of each run of marks by combining class.

    A run starts at every starter (class 0, including marks about to be dropped) and at every coarse
    word boundary.
    """
    previous_rows = tf.concat([[-1], element_rows[:-1]], axis=0)
    run_starts = (combining == 0) | (element_rows != previous_rows)
    runs = tf.cumsum(tf.cast(run_starts, tf.int64))
    return tf.cast(tf.argsort(runs * 256 + tf.cast(combining, tf.int64), stable=True), tf.int64)


def _group_words(elements, element_rows, sources, n_rows):
    """Group normalized elements into words: separators split and vanish, `OWN` elements stand alone.

    Returns `[n_rows, (words), (code points)]` and the sources of its code points.
    """
    kinds = _kinds(elements)
    previous_kinds = tf.concat([[ud.SPACE], kinds[:-1]], axis=0)
    previous_rows = tf.concat([[-1], element_rows[:-1]], axis=0)
    starts = (
        (element_rows != previous_rows) | (kinds == ud.OWN) | (previous_kinds == ud.OWN) | (previous_kinds == ud.SPACE)
    )
    in_word = ops.indices_where(kinds != ud.SPACE)
    elements, element_rows, starts, sources = (ops.take(t, in_word) for t in (elements, element_rows, starts, sources))
    code_points = tf.bitwise.bitwise_and(elements, ud.CODE_POINT_MASK)
    word_starts = ops.indices_where(starts)
    word_splits = tf.concat([word_starts, tf.shape(code_points, out_type=tf.int64)], axis=0)
    row_splits = ops.splits_from_row_ids(ops.take(element_rows, word_starts), n_rows)
    words = tf.RaggedTensor.from_nested_row_splits(code_points, (row_splits, word_splits), validate=False)
    return words, sources


@functools.cache
def _normalization_dict(lowercase, strip_accents, split_on_cjk):
    code_points, elements = ud.normalization_table(lowercase, strip_accents, split_on_cjk)
    return {int(code_point): tuple(int(e) for e in row if e >= 0) for code_point, row in zip(code_points, elements)}
