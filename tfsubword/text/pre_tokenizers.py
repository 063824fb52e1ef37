"""Hugging Face's pre-tokenizers that cut text into words, in the graph: `Split`, `Whitespace`,
`WhitespaceSplit`, `Punctuation`, `Digits` and `BertPreTokenizer`, alone or in a `Sequence`. Each step
runs on every word the steps before it made; empty words are dropped, as Hugging Face drops them.

Steps that cut at characters of a class (all but `Split`) run on the decoded text, several in one
pass: each character carries whether it starts a word, and each step sets more starts (or removes
characters, which start the word after them) from its class and behavior. A `Split` puts a byte that
UTF-8 never holds (0xFF) on both sides of each match of its RE2 pattern and splits the words there,
so the parts alternate: text between matches, a match, text, ... (empty parts included); the behavior
then says which parts are delimiters, which of them go and which join a neighbour.
"""

import json

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables
from tfsubword.text import pre_tokenizer_classes, unicode_classes
from tfsubword.text.oniguruma import re2_pattern

_MARK = b"\xff"
# The classes of the character steps, as bits of one table.
_SPACE, _WORD, _PUNCTUATION, _NUMERIC = 1, 2, 4, 8
_CLASS_RANGES = {
    _SPACE: unicode_classes.WHITE_SPACE,
    _WORD: pre_tokenizer_classes.WORD,
    _PUNCTUATION: pre_tokenizer_classes.PUNCTUATION,
    _NUMERIC: pre_tokenizer_classes.NUMERIC,
}


def character_steps(step):
    """The character cuts of a checked step other than `Split` (see `components.pre_tokenizer_steps`):
    a list of (class bit, behavior), where the behavior "Runs" cuts where the class begins or ends."""
    kind = step["type"]
    if kind == "Whitespace":  # the runs of `\w+` and `[^\w\s]+`, Rust `regex` classes
        return [(_SPACE, "Removed"), (_WORD, "Runs")]
    if kind == "WhitespaceSplit":
        return [(_SPACE, "Removed")]
    if kind == "BertPreTokenizer":
        return [(_SPACE, "Removed"), (_PUNCTUATION, "Isolated")]
    if kind == "Punctuation":  # each character a match: Contiguous joins side by side matches
        return [(_PUNCTUATION, "Runs" if step["behavior"] == "Contiguous" else step["behavior"])]
    return [(_NUMERIC, "Isolated" if step["individual_digits"] else "Runs")]  # Digits


class PreTokenizer:
    """Checked pre-tokenizer `steps` as a function of `[n]` texts -> their words, a `[n, (words)]`
    ragged string tensor."""

    def __init__(self, steps):
        self._passes = []  # lists of character cuts, or (RE2 pattern, behavior, invert) of a `Split`
        for step in steps:
            if step["type"] != "Split":
                if not self._passes or not isinstance(self._passes[-1], list):
                    self._passes.append([])
                self._passes[-1].extend(character_steps(step))
                continue
            pattern = step["pattern"]
            text = ops.re2_literal(pattern["String"]) if "String" in pattern else re2_pattern(pattern["Regex"], "Split")
            ops.check_re2(text, f"tokenizer.json: Split pattern {json.dumps(pattern)[:200]}")
            self._passes.append((text, step["behavior"], step["invert"]))
        if any(isinstance(cuts, list) for cuts in self._passes):
            bits = np.zeros(0x110000, np.int8)
            for bit, ranges in _CLASS_RANGES.items():
                for low, high in ranges:
                    bits[low : high + 1] |= bit
            self._classes = tables.CodePointTable(bits, tf.int8)

    @property
    def ends_with_characters(self):
        """Whether the last pass cuts at characters of a class (then `__call__` takes `also_apart`)."""
        return bool(self._passes) and isinstance(self._passes[-1], list)

    def __call__(self, texts, valid_utf8=False, also_apart=None):
        """`valid_utf8`: the texts are known to be valid UTF-8 (a normalizer has decoded them).
        `also_apart`: a function of the code points (int32) left after the last pass's cuts, true
        where a part starts inside a word (so the parts of words come out in place of the words; a
        BPE layer's units); only when `ends_with_characters`."""
        count = tf.size(texts, out_type=tf.int64)
        words, rows = texts, tf.range(count)
        if self._passes and not isinstance(self._passes[0], list) and not valid_utf8:
            # Invalid UTF-8 reads as U+FFFD (the character passes decode so), and no text holds the mark.
            words = tf.strings.unicode_transcode(words, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
        if also_apart is not None and not self.ends_with_characters:
            raise ValueError("`also_apart` needs a last pass that cuts at characters.")
        for index, cuts in enumerate(self._passes):
            if isinstance(cuts, list):
                last = index == len(self._passes) - 1
                words, rows = self._cut_characters(words, rows, cuts, also_apart if last else None)
            else:
                words, rows = _split(words, rows, *cuts)
        return tf.RaggedTensor.from_value_rowids(words, rows, nrows=count, validate=False)

    def _cut_characters(self, words, rows, cuts, also_apart=None):
        """The words of `words` (`rows`: the text of each) after character `cuts` (and `also_apart`),
        and the text of each."""
        code_points, splits = ops.decode_utf8(words)
        size = tf.size(code_points, out_type=tf.int64)
        text_of = ops.take(rows, ops.row_ids(splits))
        starts = tf.scatter_nd(splits[:-1, None], tf.ones_like(splits[:-1], tf.int32), size[None] + 1)[:-1] > 0
        classes = tf.cast(self._classes.lookup(code_points), tf.int32)
        for bit, behavior in cuts:
            match = tf.bitwise.bitwise_and(classes, bit) > 0
            # Whether the character before, in the same word, is a match.
            before = tf.concat([[False], match], axis=0)[:-1]
            after_match = before & ~starts
            if behavior == "Removed":
                kept = ops.indices_where(~match)
                starts = ops.take(starts | after_match, kept)
                code_points, classes, text_of = (ops.take(t, kept) for t in (code_points, classes, text_of))
                continue
            if behavior == "Isolated":
                starts |= match | after_match
            elif behavior == "MergedWithPrevious":  # a match joins the word before it, unless a match
                starts |= after_match
            elif behavior == "MergedWithNext":  # a match starts a word that what follows joins
                starts |= match
            else:  # Runs: where the class begins or ends
                starts |= match != before
        if also_apart is not None:
            starts |= also_apart(code_points)
        word_starts = ops.indices_where(starts)
        word_splits = tf.concat([word_starts, tf.size(code_points, out_type=tf.int64)[None]], axis=0)
        return ops.encode_utf8(code_points, word_splits), ops.take(text_of, word_starts)


def _split(words, rows, pattern, behavior, invert):
    """The words of one `Split` of `words` (`rows`: the text of each) and the text of each."""
    parts = tf.strings.split(tf.strings.regex_replace(words, pattern, _MARK + b"\\0" + _MARK), sep=_MARK)
    values, word_of = parts.flat_values, parts.value_rowids()
    position = tf.range(tf.size(values, out_type=tf.int64)) - tf.gather(parts.row_splits, word_of)
    delimiter = tf.not_equal(position % 2 == 1, invert)  # with invert, the text between matches
    keep = tf.strings.length(values) > 0
    if behavior == "Removed":
        keep &= ~delimiter
    values, word_of, delimiter = (tf.boolean_mask(t, keep) for t in (values, word_of, delimiter))
    rows = tf.gather(rows, word_of)
    if behavior in ("Removed", "Isolated"):
        return values, rows
    after = tf.concat([[False], delimiter], axis=0)[:-1]  # the part before is a delimiter
    if behavior == "MergedWithPrevious":
        joins = delimiter & ~after
    elif behavior == "MergedWithNext":
        joins = ~delimiter & after
    else:  # Contiguous: parts of one kind side by side (with invert, matches too)
        joins = tf.equal(delimiter, after)
    starts = ~joins | tf.not_equal(word_of, tf.concat([[-1], word_of], axis=0)[:-1])
    groups = tf.cumsum(tf.cast(starts, tf.int64)) - 1
    joined = tf.strings.unsorted_segment_join(values, groups, tf.reduce_sum(tf.cast(starts, tf.int64)))
    return joined, tf.boolean_mask(rows, starts)
