"""Hugging Face's decoders (tokens -> text) in core ops, for `HuggingFaceTokenizer.detokenize`.

A decoder is a chain of steps, each mapping the tokens of every row to new tokens (`[n, (tokens)]`
strings to the same); the text is the last step's tokens joined. `files.huggingface_components.decoder_steps`
reads and checks them; here each step is one function, by the step's type.
"""

import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables
from tfsubword.text import byte_level

# Hugging Face's WordPiece decoder `cleanup`: these replacements, in this order, in each token.
_CLEANUP = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)
_REPLACEMENT = "\ufffd"


def rewrite(text):
    """An RE2 rewrite string giving `text` literally."""
    return text.replace("\\", "\\\\")


class Decoder(tf.Module):
    """The decoder `steps` (a list of dicts, as `files.huggingface_components.decoder_steps` gives), with the
    tables its steps read, made once."""

    def __init__(self, steps, name=None):
        super().__init__(name=name)
        self.steps = steps
        kinds = {step["type"] for step in steps}
        if "ByteLevel" in kinds:
            alphabet = byte_level.char_to_byte()
            self._alphabet = tables.hash_table(
                [ord(c) for c in alphabet], list(alphabet.values()), -1, tf.int32, tf.int32
            )
            self._byte_strings = tables.constant([bytes([b]) for b in range(256)], tf.string)
        if "ByteFallback" in kinds:
            keys = [f"<0x{b:02{case}}>" for case in "Xx" for b in range(256)]
            self._bytes = tables.hash_table(keys, [bytes([int(k[3:5], 16)]) for k in keys], "", tf.string, tf.string)

    def __call__(self, tokens):
        """`[n, (tokens)]` strings -> `[n]` texts; without steps, the tokens joined by spaces."""
        if not self.steps:
            return tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        for step in self.steps:
            tokens = _STEPS[step["type"]](self, tokens, step)
        return tf.strings.reduce_join(tokens, axis=-1)


def _first_of_rows(tokens):
    return tf.range(tf.size(tokens.flat_values, out_type=tf.int64)) == ops.take(
        tokens.row_starts(), tokens.value_rowids()
    )


def _wordpiece(decoder, tokens, step):
    """Every token after the first of its row loses the prefix if it starts with it, else gains a
    space; with `cleanup`, `_CLEANUP` runs on each token."""
    prefix, flat = step["prefix"], tokens.flat_values
    continued = tf.strings.substr(flat, 0, len(prefix.encode("utf-8"))) == prefix
    stripped = (
        tf.strings.regex_replace(flat, "^" + ops.re2_literal(prefix), "", replace_global=False) if prefix else flat
    )
    flat = tf.where(_first_of_rows(tokens), flat, tf.where(continued, stripped, tf.strings.join([" ", flat])))
    if step["cleanup"]:
        for old, new in _CLEANUP:
            flat = tf.strings.regex_replace(flat, ops.re2_literal(old), rewrite(new))
    return tokens.with_flat_values(flat)


def _byte_level(decoder, tokens, step):
    """All tokens of a row as one: each token's characters as the bytes they stand for (a token with a
    character outside the byte alphabet stays as it is), invalid UTF-8 replaced."""
    flat = tokens.flat_values
    code_points, splits = ops.decode_utf8(flat)
    data = decoder._alphabet.lookup(code_points)
    outside = tf.math.unsorted_segment_max(tf.cast(data < 0, tf.int32), ops.row_ids(splits), tf.size(flat))
    as_bytes = tf.strings.reduce_join(
        tf.RaggedTensor.from_row_splits(ops.take(decoder._byte_strings, tf.maximum(data, 0)), splits, validate=False),
        axis=-1,
    )
    flat = tf.where(outside > 0, flat, as_bytes)
    text = tf.strings.reduce_join(tokens.with_flat_values(flat), axis=-1)
    text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
    return tf.RaggedTensor.from_uniform_row_length(text, 1)


def _replace(decoder, tokens, step):
    old = ops.re2_literal(step["pattern"]["String"])
    return tokens.with_flat_values(tf.strings.regex_replace(tokens.flat_values, old, rewrite(step["content"])))


def _fuse(decoder, tokens, step):
    return tf.RaggedTensor.from_uniform_row_length(tf.strings.reduce_join(tokens, axis=-1), 1)


def _strip(decoder, tokens, step):
    """Up to `start` copies of `content` off the start of each token, and up to `stop` off its end."""
    content, flat = ops.re2_literal(step["content"]), tokens.flat_values
    if step["start"]:
        flat = tf.strings.regex_replace(flat, f"^(?:{content}){{0,{step['start']}}}", "", replace_global=False)
    if step["stop"]:
        flat = tf.strings.regex_replace(flat, f"(?:{content}){{0,{step['stop']}}}$", "", replace_global=False)
    return tokens.with_flat_values(flat)


def _metaspace(decoder, tokens, step):
    """The replacement character back to spaces, except in the first token of a row, where (unless
    the prefix was never added) Hugging Face drops every one."""
    marks = ops.re2_literal(step["replacement"])
    flat = tf.strings.regex_replace(tokens.flat_values, marks, " ")
    if step["prepend_scheme"] != "never":
        flat = tf.where(_first_of_rows(tokens), tf.strings.regex_replace(tokens.flat_values, marks, ""), flat)
    return tokens.with_flat_values(flat)


def _byte_fallback(decoder, tokens, step):
    """Each run of byte tokens (`<0x41>`) becomes the text of its bytes, or, if they are not valid
    UTF-8, one U+FFFD per byte token; other tokens stay."""
    flat = tokens.flat_values
    is_byte = tf.strings.regex_full_match(flat, "<0x[0-9A-Fa-f]{2}>")
    data = tf.where(is_byte, decoder._bytes.lookup(flat), flat)
    # Groups: a run of byte tokens within a row, or one other token.
    previous = tf.concat([[False], is_byte[:-1]], axis=0)
    starts = ~is_byte | ~previous | _first_of_rows(tokens)
    group = tf.cumsum(tf.cast(starts, tf.int64)) - 1
    groups = tf.RaggedTensor.from_value_rowids(data, group, validate=False)
    joined = tf.strings.reduce_join(groups, axis=-1)
    counts = groups.row_lengths()
    of_bytes = ops.take(is_byte, ops.indices_where(starts))
    valid = tf.strings.unicode_transcode(joined, "UTF-8", "UTF-8", errors="replace") == joined
    replaced = tf.strings.reduce_join(
        tf.RaggedTensor.from_row_lengths(tf.fill([tf.reduce_sum(counts)], _REPLACEMENT), counts), axis=-1
    )
    joined = tf.where(of_bytes & ~valid, replaced, joined)
    rows = ops.take(tokens.value_rowids(), ops.indices_where(starts))
    return tf.RaggedTensor.from_value_rowids(joined, rows, nrows=tokens.nrows(), validate=False)


_STEPS = {
    "WordPiece": _wordpiece,
    "ByteLevel": _byte_level,
    "Replace": _replace,
    "Fuse": _fuse,
    "Strip": _strip,
    "Metaspace": _metaspace,
    "ByteFallback": _byte_fallback,
}
