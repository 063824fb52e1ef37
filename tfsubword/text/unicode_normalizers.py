"""Hugging Face's `NFD`, `NFKD`, `StripAccents` and `Lowercase` normalizers in the graph: strings -> strings.

Each replaces characters one at a time from a table (a decomposition, nothing for a mark, a lowercase
letter); the decompositions then put each run of marks in canonical order (by combining class, stably).
The tables are what `tokenizers` 0.23 knows (`text/huggingface_unicode.py`): the decompositions of the
characters Unicode 11.0 had assigned (a later character is kept), the combining classes of those of
Unicode 9.0 (a later character counts as a starter), the marks of Unicode 9.0, the lowercase letters
of Unicode 17.0 (each character alone, no context: a capital sigma is always σ).
"""

import functools
import unicodedata

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables
from tfsubword.text import huggingface_unicode as data
from tfsubword.text.bert import canonical_order

# The normalizers this module reproduces, by the `type` of their JSON object.
KINDS = ("NFD", "NFKD", "StripAccents", "Lowercase")


class CharacterRewrite(tf.Module):
    """Each character of a string replaced by `mapping[code point]` (a str) where it has one; with
    `combining` (code point -> combining class), runs of marks then put in canonical order."""

    def __init__(self, mapping, combining=None, name=None):
        super().__init__(name=name)
        targets = sorted(set(mapping.values()))
        index = {target: i for i, target in enumerate(targets)}
        rows = [[ord(char) for char in target] for target in targets]
        values = [c for row in rows for c in row] + [0]  # a spare value for `ops.replace_values`
        self._target_values = tables.constant(values, tf.int32, shape=[len(values)])
        self._target_splits = tables.constant(np.cumsum([0] + [len(row) for row in rows]), tf.int64)
        entries = np.zeros(0x110000, np.int32)
        for code_point, target in mapping.items():
            entries[code_point] = index[target] + 1
        self._entries = tables.CodePointTable(entries, tf.int32)
        self._combining = None
        special = entries > 0
        if combining:
            classes = np.zeros(0x110000, np.int32)
            for code_point, value in combining.items():
                classes[code_point] = value
            self._combining = tables.CodePointTable(classes, tf.int32)
            special |= classes > 0
        # Texts without a character to replace or order, or U+FFFD (maybe invalid UTF-8), are left
        # as they are, without decoding them.
        special[0xFFFD] = True
        self._plain = ops.re2_none_of(special)
        # Where the table does to ASCII what `tf.strings.lower` does (capitals to small letters, the
        # rest kept), ASCII texts take that op instead of decoding.
        self._ascii_lower = {c: mapping[c] for c in range(128) if c in mapping} == {
            c: chr(c).lower() for c in range(ord("A"), ord("Z") + 1)
        }

    def __call__(self, strings):
        rewritten = ~tf.strings.regex_full_match(strings, self._plain)
        if self._ascii_lower:
            ascii = rewritten & tf.strings.regex_full_match(strings, "[\\x00-\\x7f]*")
            strings = tf.where(ascii, tf.strings.lower(strings), strings)
            rewritten &= ~ascii
        rewritten = ops.indices_where(rewritten)
        return tf.tensor_scatter_nd_update(strings, rewritten[:, None], self._rewrite(ops.take(strings, rewritten)))

    def _rewrite(self, strings):
        code_points, splits = ops.decode_utf8(strings)
        entry = self._entries.lookup(code_points) - 1
        values, value_splits = ops.replace_values(code_points, entry, self._target_values, self._target_splits)
        splits = ops.take(value_splits, splits)
        if self._combining is not None:
            combining = self._combining.lookup(values)

            def reordered():
                return ops.take(values, canonical_order(ops.row_ids(splits), combining))

            values = ops.rare_cond(tf.reduce_any(combining > 0), reordered, lambda: values)
        return ops.encode_utf8(values, splits)


def rewrite(kind):
    """The `CharacterRewrite` of the normalizer `kind` (one of `KINDS`)."""
    return rewrites([kind])[0]


def rewrites(kinds):
    """`CharacterRewrite`s that do what the normalizers `kinds` (each one of `KINDS`) do in turn, in as
    few passes as they can: steps that rewrite characters one at a time join into one table. A
    decomposition puts marks in canonical order, which only a pass of its own can do, unless
    `StripAccents` comes after it: every character with a combining class of Unicode 9.0 is one of
    its marks, so the order of marks never shows."""
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"`kind` must be one of {', '.join(KINDS)}. Received: kind={kind!r}.")
    passes, run = [], []
    for index, kind in enumerate(kinds):
        run.append(kind)
        ordered = kind in ("NFD", "NFKD") and "StripAccents" not in kinds[index + 1 :]
        if ordered or index == len(kinds) - 1:
            passes.append(CharacterRewrite(_composed(tuple(run)), _combining_classes() if ordered else None))
            run = []
    return passes


@functools.cache
def _composed(kinds):
    """code point -> what the per-character tables of `kinds` make of it, one after the other."""
    tables_ = [_table(kind) for kind in kinds]
    mapping = {}
    for c in sorted(set().union(*tables_)):
        text = chr(c)
        for table in tables_:
            text = "".join(table.get(ord(char), char) for char in text)
        if text != chr(c):
            mapping[c] = text
    return mapping


def _table(kind):
    if kind in ("NFD", "NFKD"):
        return _decompositions(kind)
    if kind == "StripAccents":
        return _marks()
    return _lowercase()


@functools.cache
def _marks():
    return {c: "" for low, high in data.MARKS for c in range(low, high + 1)}


def _assigned(ranges):
    return (c for low, high in ranges for c in range(low, high + 1))


@functools.cache
def _decompositions(form):
    mapping = {}
    for c in _assigned(data.ASSIGNED_BY_9 + data.ASSIGNED_IN_10_OR_11):
        target = unicodedata.normalize(form, chr(c))
        if target != chr(c):
            mapping[c] = target
    return mapping


@functools.cache
def _combining_classes():
    return {c: unicodedata.combining(chr(c)) for c in _assigned(data.ASSIGNED_BY_9) if unicodedata.combining(chr(c))}


@functools.cache
def _lowercase():
    mapping = {}
    for c in range(0x110000):
        char = chr(c)
        if c in data.NEWER_LOWERCASE and unicodedata.category(char) == "Cn":
            mapping[c] = chr(data.NEWER_LOWERCASE[c])
        elif not 0xD800 <= c < 0xE000 and char.lower() != char:
            mapping[c] = char.lower()
    return mapping
