"""Hugging Face's `NFD`, `NFKD`, `NFC`, `NFKC`, `StripAccents` and `Lowercase` normalizers in the graph:
strings -> strings.

Each replaces characters one at a time from a table (a decomposition, nothing for a mark, a lowercase
letter); the decompositions then put each run of marks in canonical order (by combining class, stably),
and `NFC`/`NFKC` compose them again (`compose`). The tables are what `tokenizers` 0.23 knows
(`text/huggingface_unicode.py`): the decompositions and compositions of the characters Unicode 11.0 had
assigned (a later character is kept), the combining classes of those of Unicode 9.0 (a later character
counts as a starter), the marks of Unicode 9.0, the lowercase letters of Unicode 17.0 (each character
alone, no context: a capital sigma is always σ).
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
KINDS = ("NFD", "NFKD", "NFC", "NFKC", "StripAccents", "Lowercase")
_COMPOSED = ("NFC", "NFKC")
_KEY_BITS = 21  # a pair of code points (first, second) is looked up as first << 21 | second


class CharacterRewrite(tf.Module):
    """Each character of a string replaced by `mapping[code point]` (a str) where it has one; with
    `combining` (code point -> combining class), runs of marks then put in canonical order; with
    `compositions` too (a dict (first, second) -> composite), composed (see `compose`)."""

    def __init__(self, mapping, combining=None, compositions=None, name=None):
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
        self._compositions = None
        if compositions:
            keys = [(first << _KEY_BITS) | second for first, second in compositions]
            self._compositions = tables.hash_table(keys, list(compositions.values()), -1, tf.int64, tf.int32)
            seconds = np.zeros(0x110000, np.int32)
            seconds[[second for _, second in compositions]] = 1
            self._seconds = tables.CodePointTable(seconds, tf.int32)
            special |= seconds > 0  # a text holding one may compose
            # A starter that its rewrite decomposes and composes back to itself changes nothing (é
            # is é again), unless its rewrite starts with a second of a pair.
            for code_point, target in mapping.items():
                if _recomposed(target, combining, compositions) == chr(code_point) and not seconds[ord(target[0])]:
                    special[code_point] = classes[code_point] > 0
        # Texts without a character to replace or order, or U+FFFD (maybe invalid UTF-8), are left
        # as they are, without decoding them.
        special[0xFFFD] = True
        self._plain = ops.re2_none_of(special)
        # Where the table does to ASCII what `tf.strings.lower` does (capitals to small letters, the
        # rest kept), texts whose only special characters are ASCII take that op instead of decoding.
        self._ascii_lower = {c: mapping[c] for c in range(128) if c in mapping} == {
            c: chr(c).lower() for c in range(ord("A"), ord("Z") + 1)
        }
        beyond_ascii = special.copy()
        beyond_ascii[:128] = False
        self._no_special_but_ascii = ops.re2_none_of(beyond_ascii) if self._ascii_lower else None

    def __call__(self, strings):
        if self._ascii_lower:
            # Plain texts match too, and lowering leaves them as they are (their capitals would be special).
            ascii = tf.strings.regex_full_match(strings, self._no_special_but_ascii)
            strings = tf.where(ascii, tf.strings.lower(strings), strings)
            rewritten = ~ascii
        else:
            rewritten = ~tf.strings.regex_full_match(strings, self._plain)
        return ops.rewrite_rows(strings, ops.indices_where(rewritten), self.rewrite)

    def rewrite(self, strings):
        """Every one of the `[n]` strings decoded and rewritten (`__call__` first picks those it changes)."""
        code_points, splits = ops.decode_utf8(strings)
        entry = self._entries.lookup(code_points) - 1
        values, value_splits = ops.replace_values(code_points, entry, self._target_values, self._target_splits)
        splits = ops.take(value_splits, splits)
        if self._combining is not None:
            combining = self._combining.lookup(values)

            def reordered():
                return ops.take(values, canonical_order(ops.row_ids(splits), combining))

            values = ops.rare_cond(tf.reduce_any(combining > 0), reordered, lambda: values)
            if self._compositions is not None:
                values, splits = compose(
                    values, splits, self._combining.lookup(values), self._compositions, self._seconds
                )
        return ops.encode_utf8(values, splits)


def compose(values, splits, combining, compositions, seconds):
    """Canonical composition of decomposed, canonically ordered rows (code points `values` int32, row
    `splits` int64; `combining`: the class of each): each starter takes in, one after the other, the
    characters after it that compose with it (the table `compositions`, keyed by `first << 21 |
    second`; `seconds`: a `CodePointTable`, 1 for each second of a pair) and that nothing blocks (a
    character between them of class 0 or of a class as high).

    The characters a starter may take in follow it: runs of marks, and starters that are the second
    of a pair (Hangul vowels and finals, a few Indic vowel signs). Each such run is a chain, and a
    loop walks all chains at once, one character a step: as many steps as the longest chain."""
    size = tf.size(values, out_type=tf.int64)
    row_start = tf.scatter_nd(splits[:-1, None], tf.ones_like(splits[:-1], tf.int32), size[None] + 1)[:-1] > 0
    # A starter goes on a chain only if it is the second of some pair.
    head = row_start | ((combining == 0) & (seconds.lookup(values) == 0))
    chain_starts = ops.indices_where(head)
    chain_ends = tf.concat([chain_starts[1:], size[None]], axis=0)
    # Chains that can compose: at least two characters, from a starter.
    chosen = ops.indices_where((chain_ends - chain_starts > 1) & (ops.take(combining, chain_starts) == 0))
    starts, lengths = ops.take(chain_starts, chosen), ops.take(chain_ends - chain_starts, chosen)

    def step(k, composee, place, last, values, removed):
        active = k < lengths
        at = tf.where(active, starts + k, 0)
        char, char_class = ops.take(values, at), ops.take(combining, at)
        composite = compositions.lookup(_pair_keys(composee, char))
        # `last`: the class of the last character kept since the starter, -1 if none.
        composes = active & (composite >= 0) & ((last < 0) | (last < char_class))
        new_starter = active & ~composes & (char_class == 0)
        values = tf.tensor_scatter_nd_update(
            values, tf.boolean_mask(place, new_starter)[:, None], tf.boolean_mask(composee, new_starter)
        )
        removed = tf.tensor_scatter_nd_update(
            removed, tf.boolean_mask(at, composes)[:, None], tf.ones_like(tf.boolean_mask(at, composes), tf.bool)
        )
        composee = tf.where(composes, composite, tf.where(new_starter, char, composee))
        place = tf.where(new_starter, at, place)
        last = tf.where(composes, last, tf.where(new_starter, -1, tf.where(active, char_class, last)))
        return k + 1, composee, place, last, values, removed

    first = ops.take(values, starts)
    state = (tf.constant(1, tf.int64), first, starts, -tf.ones_like(first), values, tf.zeros([size], tf.bool))
    longest = tf.reduce_max(tf.concat([[0], lengths], axis=0))
    _, composee, place, _, values, removed = tf.while_loop(lambda k, *_: k < longest, step, state)
    values = tf.tensor_scatter_nd_update(values, place[:, None], composee)
    kept = ops.indices_where(~removed)
    return ops.take(values, kept), splits - ops.search_sorted(ops.indices_where(removed), splits, out_type=tf.int64)


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
        composed = kind in _COMPOSED
        ordered = composed or (kind in ("NFD", "NFKD") and "StripAccents" not in kinds[index + 1 :])
        if ordered or index == len(kinds) - 1:
            combining = _combining_classes() if ordered else None
            passes.append(CharacterRewrite(_composed(tuple(run)), combining, _compositions() if composed else None))
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
    if kind in ("NFD", "NFKD", "NFC", "NFKC"):
        return _decompositions(kind.replace("C", "D"))
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


def _recomposed(text, combining, compositions):
    """`compose` of one short, canonically ordered text, in Python."""
    result, starter, last = [], None, -1  # `last`: the class of the last character kept after the starter
    for char in map(ord, text):
        char_class = combining.get(char, 0)
        composite = compositions.get((result[starter], char)) if starter is not None else None
        if composite is not None and (last < 0 or last < char_class):
            result[starter] = composite
            continue
        if char_class == 0:
            starter, last = len(result), -1
        else:
            last = char_class
        result.append(char)
    return "".join(map(chr, result))


def _pair_keys(first, second):
    return tf.bitwise.left_shift(tf.cast(first, tf.int64), _KEY_BITS) | tf.cast(second, tf.int64)


@functools.cache
def _compositions():
    """(first, second) -> composite: the primary composites of Unicode 11.0 (those NFC keeps), and
    Hangul syllables from their jamo."""
    pairs = {}
    for c in _assigned(data.ASSIGNED_BY_9 + data.ASSIGNED_IN_10_OR_11):
        parts = unicodedata.decomposition(chr(c)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            if unicodedata.normalize("NFC", unicodedata.normalize("NFD", chr(c))) == chr(c):
                pairs[int(parts[0], 16), int(parts[1], 16)] = c
    for leading in range(19):
        for vowel in range(21):
            syllable = 0xAC00 + (leading * 21 + vowel) * 28
            pairs[0x1100 + leading, 0x1161 + vowel] = syllable
            for final in range(1, 28):
                pairs[syllable, 0x11A7 + final] = syllable + final
    return pairs
