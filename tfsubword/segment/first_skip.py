"""Dropout rules sampled from the deterministic segmentation: draw where the first skip falls.

Under Hugging Face's BPE-dropout and MaxMatch-dropout an occurrence of a word ends as the word's
deterministic segmentation unless one of the m steps that rule takes (merges, greedy matches longer
than one character) is skipped, each with probability p, on its own. So each occurrence draws how many of
those steps it keeps before its first skip, k with probability (1 - p)^k p: with k >= m it takes the
segmentation found once per distinct word, and only the others run the sampler, with the first k
steps kept and the next one skipped (the rest drawn as usual). The law is the sampler's own; most
occurrences cost a table read.
"""

import tensorflow as tf

from tfsubword import graph_ops as ops


def kept_before_skip(occurrences, dropout, seed):
    """How many steps each of `occurrences` (a count) keeps before its first skip: float32, k with
    probability (1 - dropout)^k dropout. (As floats: with no dropout, infinity or NaN, which no count
    of steps exceeds.)"""
    drawn = tf.random.stateless_uniform([occurrences], seed)
    return tf.math.floor(tf.math.log1p(-drawn) / tf.math.log1p(-tf.cast(dropout, tf.float32)))


def greedy_or_walked(ids, splits, rows, walked, walked_ids, walked_splits):
    """One row per occurrence: row `rows` (int64) of (`ids`, `splits`), or, where `walked`, the next
    row of (`walked_ids`, `walked_splits`). Returns (ids, row splits)."""
    number_of_rows = tf.size(splits, out_type=tf.int64) - 1
    table_ids = tf.concat([ids, walked_ids], axis=0)
    table_splits = tf.concat([splits, splits[-1] + walked_splits[1:]], axis=0)
    rows = tf.where(walked, number_of_rows + tf.cumsum(tf.cast(walked, tf.int64), exclusive=True), rows)
    return ops.gather_rows(table_ids, table_splits, rows)
