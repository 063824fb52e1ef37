"""Words -> pieces, once per distinct word: the step between pre-tokenizing and ids that every layer shares.

A batch of text repeats its words (a thousand lines of English hold some 100,000 words, 15,000 of them
distinct), so each distinct word is segmented once, and words that are vocabulary tokens standing for
themselves are not segmented at all but looked up whole. Then every word of every line reads its
pieces back:

    words of the lines -> distinct words -> (whole-word lookup | segment the misses) -> pieces per line

`encode` runs it all (`encode_texts` from the texts and a split, which a large batch runs in halves);
a layer with steps of its own in between (the unigram model's near-tie words) calls `distinct`,
`segment_distinct` and `to_lines` itself.
"""

import tensorflow as tf

from tfsubword import graph_ops as ops

# From this many words to segment, `segment_distinct` segments them in two halves that run at once.
_HALVES_FROM = 1024
# From this many texts, `split_distinct` splits them and finds their distinct words in two halves at once.
_TEXT_HALVES_FROM = 512


def distinct(words):
    """`[m]` words -> (the distinct words `[d]`, the index of each word among them, int64 `[m]`)."""
    return tf.unique(words, out_idx=tf.int64)


def split_distinct(texts, split):
    """`[n]` texts -> (the distinct words `[d]`, the index of each word among them int64 `[m]`, the row
    splits of the words by text int64 `[n + 1]`), where `split` maps texts to (words `[m]`, row splits).

    Many texts in two halves at once, whose distinct words are then merged: splitting and `tf.unique`
    each run on one thread, and a batch's distinct words are a fraction of its words."""

    def whole(texts):
        words, line_splits = split(texts)
        return (*distinct(words), line_splits)

    def in_halves():
        half = tf.size(texts) // 2
        first_words, first_index, first_splits = whole(texts[:half])
        second_words, second_index, second_splits = whole(texts[half:])
        merged, index = distinct(tf.concat([first_words, second_words], axis=0))
        second_index += tf.size(first_words, out_type=tf.int64)
        return (
            merged,
            ops.take(index, tf.concat([first_index, second_index], axis=0)),
            tf.concat([first_splits, first_splits[-1] + second_splits[1:]], axis=0),
        )

    return ops.rare_cond(tf.size(texts) >= _TEXT_HALVES_FROM, in_halves, lambda: whole(texts))


def segment_distinct(words, segment, whole_words=None, spans=False, span_unit="BYTE"):
    """The pieces of each of the `[d]` distinct `words`: (values, row splits int64), one row per word.

    `segment` maps `[k]` words to their pieces (values, row splits). With `whole_words`, a table from
    words to the id of the token each stands for (-1 when none), the words it holds are that token and
    only the others go to `segment`, whose values must have the table's type. With `spans`, values are
    int64 rows `[pieces, 3]` of (id, first byte, end byte) within the word (in characters with
    `span_unit="UTF8_CHAR"`); a whole word spans itself.
    """
    if whole_words is None:
        return _segment_in_halves(segment, words)
    whole = whole_words.lookup(words)
    missed = whole < 0
    misses = ops.indices_where(missed)
    values, splits = _segment_in_halves(segment, ops.take(words, misses))
    if spans:
        whole = tf.cast(whole, tf.int64)
        length = tf.cast(tf.strings.length(words, unit=span_unit), tf.int64)
        whole = tf.stack([whole, tf.zeros_like(whole), length], axis=1)
    return ops.substitute_rows(whole, missed, values, splits)


def _segment_in_halves(segment, words):
    """`segment(words)`; many words in two halves at once: its ops mostly run on one core each."""
    return ops.ragged_in_halves(segment, words, from_rows=_HALVES_FROM)


def to_lines(values, splits, rows, line_splits):
    """The pieces of every word, grouped into lines: word i reads row `rows[i]` of (`values`, `splits`),
    and `line_splits` groups the words into lines. Returns (values, line splits, word splits)."""

    def gather(part):
        return ops.gather_rows(values, splits, part)

    # In two halves that run at once: one gather over a batch's 100,000 words runs on one core. Always
    # in halves: a conditional would wait for all its inputs, where each half starts as its own arrive.
    values, word_splits = ops.ragged_in_halves(gather, rows, from_rows=None)
    return values, ops.take(word_splits, line_splits), word_splits


def encode(words, line_splits, segment, whole_words=None, word_starts=None, span_unit="BYTE"):
    """`[m]` words grouped into lines by `line_splits` -> (piece values, line splits): see the module.

    With `word_starts` (int64 `[m]`, the byte where each word starts in its line), `segment` gives spans
    as in `segment_distinct`, and the result is (ids, starts, ends, line splits), spans in the lines
    (`span_unit`: as in `segment_distinct`, of `word_starts` too).
    """
    return _encode_distinct(*distinct(words), line_splits, segment, whole_words, word_starts, span_unit)


def encode_texts(texts, split, segment, whole_words=None):
    """`encode` of the words that `split` finds in `[n]` texts (as in `split_distinct`)."""
    return _encode_distinct(*split_distinct(texts, split), segment, whole_words)


def _encode_distinct(unique, occurrence, line_splits, segment, whole_words=None, word_starts=None, span_unit="BYTE"):
    spans = word_starts is not None
    values, splits = segment_distinct(unique, segment, whole_words, spans, span_unit)
    values, line_value_splits, word_splits = to_lines(values, splits, occurrence, line_splits)
    if not spans:
        return values, line_value_splits
    shift = ops.take(word_starts, ops.row_ids(word_splits))
    return values[:, 0], values[:, 1] + shift, values[:, 2] + shift, line_value_splits
