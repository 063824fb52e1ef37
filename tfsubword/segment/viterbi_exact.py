"""Near-ties: the words whose segmentation single-precision rounding could change, segmented again exactly.

`Viterbi` segments each distinct word once, in double precision, with the lead of every chosen piece
over the runner-up. SentencePiece adds scores along a whole line in single precision, so a word's
decisions are taken at an offset B (the score of the line before the word), and rounding there can
change one only if a lead is within the rounding error, at most (word length + 1) ulps at |B| plus the
word's scores. A word that close to a tie (rare: equal pieces in another order, like "......") is
segmented again alone, in single precision from B as SentencePiece has it: the scores of the pieces
before it added in order, and the words before it that are fragile too or where a restart could happen
(see `lattice`) segmented exactly, one by one, from the score before each (one loop step per such word
of a line, for all lines at once). With restarts, no score exceeds 100,000 + the largest score
magnitude, which bounds the ulps of the check.
"""

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword.segment.lattice import RESET

_EXPONENT_BITS = np.int64(0x7FF0000000000000)  # of a float64


def suspects(lattice, smallest_gap, length, occurrence, word_lines):
    """The word occurrences (int64, sorted) that could be fragile somewhere, by one bound for all lines:
    no score on a line's paths exceeds its characters times the largest score magnitude, so the ulp
    there bounds every ulp of the exact check. `smallest_gap` and `length` are per distinct word."""
    line_chars = tf.math.segment_sum(ops.take(length, occurrence), word_lines)
    longest_line = tf.cast(tf.reduce_max(tf.concat([[0], line_chars], axis=0)), tf.float64)
    magnitude = longest_line * (lattice.max_score_magnitude + lattice.half_ulp) * (1 + 1e-6) + 1
    magnitude = tf.minimum(magnitude, lattice.largest_score)
    fragile_anywhere = ~(smallest_gap > tf.cast(length + 2, tf.float64) * ulp(magnitude))
    return ops.indices_where(ops.take(fragile_anywhere, occurrence))


def fragile(lattice, suspects, occurrence, word_lines, line_word_splits, total, smallest_gap, length):
    """Which of the word occurrences `suspects` (sorted) could be segmented differently in single
    precision at their place in their lines: those whose smallest gap is within (length + 2) ulps
    at the magnitude of the line's score before them plus the word's, or of the largest score
    SentencePiece keeps before restarting from 0. Reads only the lines of the suspects."""
    lines = tf.unique(ops.take(word_lines, suspects))[0]
    spans = tf.ragged.range(ops.take(line_word_splits, lines), ops.take(line_word_splits, lines + 1))
    in_lines = spans.flat_values  # sorted: the occurrences of those lines, in order
    # The exact score of the line before each word, and its characters: SentencePiece's sum
    # is off by at most half an ulp per piece (at most one per character).
    occurrences = ops.take(occurrence, in_lines)
    before = tf.cumsum(
        tf.stack([ops.take(total, occurrences), tf.cast(ops.take(length, occurrences), tf.float64)], axis=1),
        axis=0,
        exclusive=True,
    )
    before -= ops.take(before, ops.take(spans.row_splits, ops.row_ids(spans.row_splits)))
    before_score, before_chars = tf.unstack(ops.take(before, ops.search_sorted(in_lines, suspects)), axis=1)
    words = ops.take(occurrence, suspects)
    word_length = tf.cast(ops.take(length, words), tf.float64)
    magnitude = (
        tf.abs(before_score) * (1 + 1e-6)
        + before_chars * lattice.half_ulp
        + word_length * lattice.max_score_magnitude
        + 1
    )
    fragile = ops.indices_where(
        ~(ops.take(smallest_gap, words) > (word_length + 2) * ulp(tf.minimum(magnitude, lattice.largest_score)))
    )
    return ops.take(suspects, fragile)


def ulp(magnitude, mantissa_bits=23):
    """An ulp at float64 `magnitude` (positive) of a float with `mantissa_bits` (23: single precision,
    52: double): 2 ** (floor(log2(magnitude)) - mantissa_bits), read off the exponent bits."""
    exponent = tf.bitwise.bitwise_and(tf.bitcast(magnitude, tf.int64), _EXPONENT_BITS)
    return tf.bitcast(exponent, tf.float64) * 2.0**-mantissa_bits


def scores_before(lattice, fragile, occurrence, word_lines, line_word_splits, raw, distinct):
    """The single-precision score of SentencePiece's best path before each of the word
    occurrences `fragile` (sorted), as SentencePiece's Viterbi adds it up: the scores of the
    pieces of a line added in order, except at some words, segmented exactly from the score
    before them, which gives the score after them. Those are the fragile words themselves, and
    the words where the score could pass 100,000 in magnitude (a restart: see `lattice`). Every
    other word is safe: its pieces are the same from any score before it. One loop step per
    such word of a line, for all lines at once."""
    distinct_values, distinct_splits = distinct
    # One row per line, over its occurrences up to its last fragile one.
    lines, line_of_fragile = tf.unique(ops.take(word_lines, fragile), out_idx=tf.int64)
    k = tf.size(lines)
    earlier = tf.ragged.range(ops.take(line_word_splits, lines), tf.math.segment_max(fragile, line_of_fragile) + 1)
    in_lines = earlier.flat_values  # sorted
    n = tf.size(in_lines, out_type=tf.int64)
    fragile_at = ops.search_sorted(in_lines, fragile, out_type=tf.int64)
    is_fragile = tf.scatter_nd(fragile_at[:, None], tf.ones_like(fragile, tf.bool), [n])
    # Their pieces, unknown characters unmerged (each is a node).
    words = ops.take(occurrence, in_lines)
    earlier_ids, occurrence_splits = ops.gather_rows(*raw, words)
    row_splits = ops.take(occurrence_splits, earlier.row_splits)
    padded = tf.RaggedTensor.from_row_splits(
        ops.take(lattice.scores[tf.float32], earlier_ids + 1), row_splits, validate=False
    ).to_tensor(0.0)
    columns = tf.range(tf.shape(padded)[1])
    # Each occurrence: its row, the column of its first piece and its number of pieces.
    row = ops.row_ids(earlier.row_splits)
    first = tf.cast(occurrence_splits[:-1] - ops.take(row_splits, row), tf.int32)
    count = tf.cast(occurrence_splits[1:] - occurrence_splits[:-1], tf.int32)
    # No score inside a word moves further than this from the score before it.
    length = tf.cast(ops.take(distinct_splits[1:] - distinct_splits[:-1], words), tf.float32)
    reach = length * (lattice.max_score_magnitude + lattice.half_ulp) * (1 + 1e-6) + 1

    def step(start, score, scores_before, _):
        # tf.cumsum adds along a row in order (adding the zeros before `start` changes nothing).
        counted = tf.where(columns[None, :] >= start[:, None], padded, 0.0)
        sums = tf.cumsum(tf.concat([score[:, None], counted], axis=1), axis=1)
        before = tf.gather_nd(sums, tf.stack([tf.cast(row, tf.int32), first], axis=1))
        stops = (first >= ops.take(start, row)) & (is_fragile | (tf.abs(before) + reach > RESET))
        next_stop = tf.math.unsorted_segment_min(tf.where(stops, tf.range(n), n), row, k)
        rows = ops.indices_where(next_stop < n)
        at = ops.take(next_stop, rows)
        scores_before = tf.tensor_scatter_nd_update(scores_before, at[:, None], ops.take(before, at))

        def segment_exactly():
            values, splits = ops.gather_rows(distinct_values, distinct_splits, ops.take(words, at))
            after = lattice.best_paths(values, splits, tf.float32, gaps=True, offsets=ops.take(before, at))["total"]
            return (
                tf.tensor_scatter_nd_update(start, rows[:, None], ops.take(first + count, at)),
                tf.tensor_scatter_nd_update(score, rows[:, None], after),
            )

        start, score = ops.rare_cond(tf.size(rows) > 0, segment_exactly, lambda: (start, score))
        return start, score, scores_before, tf.size(rows) > 0

    _, _, scores_before, _ = tf.while_loop(
        lambda start, score, scores_before, more: more,
        step,
        (tf.zeros([k], tf.int32), tf.zeros([k], tf.float32), tf.zeros([n], tf.float32), tf.constant(True)),
    )
    return ops.take(scores_before, fragile_at)


def segment_again(lattice, fragile, occurrence, word_lines, line_word_splits, raw, distinct):
    """The word occurrences `fragile` (sorted) segmented again, exactly: in single precision from the
    score of their line's path before them (see `scores_before`). `raw`: the distinct words' pieces,
    unknown ones unmerged; `distinct`: their code points and row splits. Returns the pieces, their row
    splits and the words' code points."""
    k = tf.size(fragile, out_type=tf.int64)
    offsets = scores_before(lattice, fragile, occurrence, word_lines, line_word_splits, raw, distinct)
    word_values, word_splits = ops.gather_rows(*distinct, ops.take(occurrence, fragile))
    paths = lattice.best_paths(word_values, word_splits, tf.float32, offsets=offsets)
    return paths["piece"], ops.splits_from_row_ids(paths["rows"], k), word_values
