"""Hugging Face's pre-tokenizers that cut text into words at the matches of a pattern, in the graph:
`Split`, `Whitespace`, `WhitespaceSplit`, `Punctuation`, `Digits` and `BertPreTokenizer`, alone or in
a `Sequence`.

Each step runs on every word the steps before it made. It puts a byte that UTF-8 never holds (0xFF) on
both sides of each match and splits the words there, so the parts alternate: text between matches,
a match, text, ... (empty parts included). The step's behavior then says which parts are delimiters,
which of them go and which join a neighbour. Empty words are dropped, as Hugging Face drops them.
"""

import json

import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword.text import pre_tokenizer_classes, unicode_classes
from tfsubword.text.oniguruma import re2_pattern

_MARK = b"\xff"
_SPACE = ops.re2_class(unicode_classes.WHITE_SPACE)
_WORD = ops.re2_class(pre_tokenizer_classes.WORD)
_NEITHER_WORD_NOR_SPACE = ops.re2_class(pre_tokenizer_classes.WORD + unicode_classes.WHITE_SPACE, negate=True)
_PUNCTUATION = ops.re2_class(pre_tokenizer_classes.PUNCTUATION)
_NUMERIC = ops.re2_class(pre_tokenizer_classes.NUMERIC)


def splits(step):
    """The splits of one checked step (see `components.pre_tokenizer_steps`): a list of (RE2 pattern,
    behavior, invert)."""
    kind = step["type"]
    if kind == "Whitespace":  # the words of `\w+|[^\w\s]+`, Rust `regex` classes
        return [(f"{_WORD}+|{_NEITHER_WORD_NOR_SPACE}+", "Removed", True)]
    if kind == "WhitespaceSplit":
        return [(_SPACE, "Removed", False)]
    if kind == "BertPreTokenizer":
        return [(_SPACE, "Removed", False), (_PUNCTUATION, "Isolated", False)]
    if kind == "Punctuation":
        return [(_PUNCTUATION, step["behavior"], False)]
    if kind == "Digits":  # runs of digits are one piece (Contiguous), or each digit is
        return [(_NUMERIC if step["individual_digits"] else _NUMERIC + "+", "Isolated", False)]
    pattern = step["pattern"]
    text = ops.re2_literal(pattern["String"]) if "String" in pattern else re2_pattern(pattern["Regex"])
    return [(text, step["behavior"], step["invert"])]


class PreTokenizer:
    """Checked pre-tokenizer `steps` as a function of `[n]` texts -> their words, a `[n, (words)]`
    ragged string tensor."""

    def __init__(self, steps):
        self._splits = [split for step in steps for split in splits(step)]
        for step in steps:
            if step["type"] == "Split":
                ops.check_re2(splits(step)[0][0], f"tokenizer.json: Split pattern {json.dumps(step['pattern'])[:200]}")

    def __call__(self, texts):
        count = tf.size(texts, out_type=tf.int64)
        # Invalid UTF-8 reads as U+FFFD, and no text holds the mark.
        words = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
        rows = tf.range(count)
        for pattern, behavior, invert in self._splits:
            words, rows = _split(words, rows, pattern, behavior, invert)
        return tf.RaggedTensor.from_value_rowids(words, rows, nrows=count, validate=False)


def _split(words, rows, pattern, behavior, invert):
    """The words of one split of `words` (`rows`: the text of each) and the text of each."""
    parts = tf.strings.split(tf.strings.regex_replace(words, f"({pattern})", _MARK + b"\\1" + _MARK), sep=_MARK)
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
    after = tf.concat([[False], delimiter[:-1]], axis=0)  # the part before is a delimiter
    if behavior == "MergedWithPrevious":
        joins = delimiter & ~after
    elif behavior == "MergedWithNext":
        joins = ~delimiter & after
    else:  # Contiguous: parts of one kind side by side (with invert, matches too)
        joins = tf.equal(delimiter, after)
    starts = ~joins | tf.not_equal(word_of, tf.concat([[-1], word_of[:-1]], axis=0))
    groups = tf.cumsum(tf.cast(starts, tf.int64)) - 1
    joined = tf.strings.unsorted_segment_join(values, groups, tf.reduce_sum(tf.cast(starts, tf.int64)))
    return joined, tf.boolean_mask(rows, starts)
