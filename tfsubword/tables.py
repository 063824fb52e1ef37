"""Constant tables of the layers' graphs, built in one place.

Everything is created inside `tf.init_scope()`: a layer built within a `tf.function` or a Keras model
still owns its tables, outside that graph. A `StaticHashTable` refuses to be empty, so an empty one
gets one key that maps to the default value: a lookup of that key answers as if it were absent.
"""

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops

# Code point tables are split into pages of this many code points; pages with equal values are stored once.
_PAGE_BITS = 8


def hash_table(keys, values, default, key_dtype, value_dtype):
    """A `tf.lookup.StaticHashTable` from `keys` to `values` (sequences or arrays), `default` elsewhere."""
    keys, values = list(keys), list(values)
    if not keys:
        keys, values = ["" if key_dtype == tf.string else 0], [default]
    with tf.init_scope():
        initializer = tf.lookup.KeyValueTensorInitializer(
            tf.constant(keys, key_dtype, shape=[len(keys)]), tf.constant(values, value_dtype, shape=[len(values)])
        )
        return tf.lookup.StaticHashTable(initializer, default_value=tf.constant(default, value_dtype))


def constant(value, dtype, shape=None):
    """`tf.constant(value, dtype, shape)`, owned by the layer that builds it (see the module docstring)."""
    with tf.init_scope():
        return tf.constant(value, dtype, shape=shape)


class CodePointTable:
    """A value for every code point (0 to U+10FFFF), stored as pages of 256 code points, each distinct
    page once: a lookup is two gathers, and a table that is mostly zeros takes kilobytes, not a megabyte."""

    def __init__(self, values, dtype):
        index_of, pages, starts = {}, [], []
        for page in np.asarray(values).reshape(-1, 1 << _PAGE_BITS):
            key = page.tobytes()
            if key not in index_of:
                index_of[key] = len(pages)
                pages.append(page)
            starts.append(index_of[key] << _PAGE_BITS)
        self.pages = constant(np.concatenate(pages), dtype)
        self.page_starts = constant(np.array(starts, np.int32), tf.int32)

    def lookup(self, code_points):
        """The values of `code_points` (int32, in 0..U+10FFFF)."""
        starts = ops.take(self.page_starts, tf.bitwise.right_shift(code_points, _PAGE_BITS))
        return ops.take(self.pages, starts + tf.bitwise.bitwise_and(code_points, (1 << _PAGE_BITS) - 1))
