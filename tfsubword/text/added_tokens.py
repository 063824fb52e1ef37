"""Added tokens (`[CLS]`, `<mask>`, `<|endoftext|>` ...) found in raw text, as Hugging Face finds them.

Before normalizing, Hugging Face cuts each text at its added tokens: at every place, the leftmost
match, the longest of those starting there; a token with `lstrip` (`rstrip`) takes the whitespace
on its left (right) with it. The pieces between are tokenized each on its own, so a token and the
text around it never merge. Here one RE2 pass does the cut: an alternation of the tokens, longest
first (RE2 takes the first alternative that matches at the leftmost place), writes each match
between two 0xFF bytes behind a 0xFE byte. Neither byte occurs in UTF-8, so after invalid UTF-8 is
replaced, one split at 0xFF gives the pieces and a leading 0xFE tells the tokens. A `single_word`
token's match with a word character beside it is text again, joined to the text around it.
"""

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables
from tfsubword.text import pre_tokenizer_classes, unicode_classes

_MARK = b"\xff"
_TOKEN = b"\xfe"


def _alternative(token):
    escaped = ops.re2_literal(token.content)
    space = ops.re2_class(unicode_classes.WHITE_SPACE)
    return (f"{space}*" if token.lstrip else "") + escaped + (f"{space}*" if token.rstrip else "")


class AddedTokens(tf.Module):
    """Cuts texts at `tokens` (a list of `files.huggingface.AddedToken`)."""

    def __init__(self, tokens, name=None):
        super().__init__(name=name)
        ordered = sorted(tokens, key=lambda token: -len(token.content.encode("utf-8")))
        self._pattern = "|".join(_alternative(token) for token in ordered)
        self._strips = any(token.lstrip or token.rstrip for token in tokens)
        self._space = ops.re2_class(unicode_classes.WHITE_SPACE)
        self._ids = tables.hash_table(
            [token.content.encode("utf-8") for token in tokens], [token.id for token in tokens], -1, tf.string, tf.int32
        )
        single = [token.content.encode("utf-8") for token in tokens if token.single_word]
        self._single = tables.hash_table(single, [1] * len(single), 0, tf.string, tf.int32) if single else None
        if single:
            words = np.zeros(0x110000, np.int8)
            for low, high in pre_tokenizer_classes.WORD:
                words[low : high + 1] = 1
            self._word_characters = tables.CodePointTable(words, tf.int8)

    def valid_text(self, texts):
        """`texts` with invalid UTF-8 replaced (one U+FFFD per invalid sequence): what `split` takes."""
        return tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)

    def found_in(self, texts):
        """Whether any of the `[n]` strings holds an added token (a bool scalar). `\\C` is any byte, so
        the texts need no replacing of invalid UTF-8 first, as `split` does."""
        return tf.reduce_any(tf.strings.regex_full_match(texts, f"\\C*(?:{self._pattern})\\C*"))

    def split(self, text):
        """`[n]` valid UTF-8 strings -> (pieces `[p]`, row splits int64 `[n + 1]`, ids int32 `[p]`): the
        pieces of each text in order, an added token's piece with its id, the others with id -1."""
        marked = tf.strings.regex_replace(text, self._pattern, _MARK + _TOKEN + b"\\0" + _MARK)
        pieces = tf.strings.split(marked, sep=_MARK)
        flat = pieces.flat_values
        first = tf.minimum(tf.strings.length(flat), 1)
        is_token = tf.strings.substr(flat, tf.zeros_like(first), first) == _TOKEN
        content = tf.strings.substr(flat, first, tf.strings.length(flat) - first)
        ids = self._ids.lookup(content)
        if self._strips:  # a token's match may hold the whitespace it took
            bare = tf.strings.regex_replace(content, f"^{self._space}+|{self._space}+$", "")
            ids = tf.where(ids < 0, self._ids.lookup(bare), ids)
        splits = tf.cast(pieces.row_splits, tf.int64)
        if self._single is not None:
            return self._single_words(tf.where(is_token, content, flat), splits, is_token, ids)
        return flat, splits, tf.where(is_token, ids, -1)

    def _single_words(self, pieces, splits, is_token, ids):
        """`split`'s output with the `single_word` tokens that touch a word character made text, and
        each run of text pieces in a row joined into one. `pieces`: the tokens' pieces without 0xFE."""
        size = tf.size(pieces, out_type=tf.int64)
        index, rows = tf.range(size), ops.row_ids(splits)
        row_first, row_last = ops.take(splits, rows), ops.take(splits, rows + 1) - 1
        characters = tf.strings.length(pieces, unit="UTF8_CHAR")
        ones = tf.ones_like(characters)
        ends = [
            tf.strings.substr(pieces, at, ones, unit="UTF8_CHAR") for at in (0 * ones, tf.maximum(characters - 1, 0))
        ]
        first_word, last_word = (
            self._word_characters.lookup(tf.strings.unicode_decode(end, "UTF-8").to_tensor(0, shape=[size, 1])[:, 0])
            > 0
            for end in ends
        )
        filled = characters > 0
        # The piece before (after) a token, skipping an empty one: two tokens side by side hold one.
        before = tf.where(ops.take(filled, tf.maximum(index - 1, 0)), index - 1, index - 2)
        after = tf.where(ops.take(filled, tf.minimum(index + 1, size - 1)), index + 1, index + 2)
        word_before = (before >= row_first) & ops.take(last_word, tf.clip_by_value(before, 0, size - 1))
        word_after = (after <= row_last) & ops.take(first_word, tf.clip_by_value(after, 0, size - 1))
        is_token &= ~((self._single.lookup(pieces) > 0) & (word_before | word_after))
        previous_token = tf.concat([[False], is_token], axis=0)[:-1]
        starts = is_token | previous_token | (index == row_first)
        groups = tf.cumsum(tf.cast(starts, tf.int64)) - 1
        count = tf.reduce_sum(tf.cast(starts, tf.int64))
        joined = tf.strings.unsorted_segment_join(pieces, groups, count)
        firsts = ops.indices_where(starts)
        group_splits = ops.splits_from_row_ids(ops.take(rows, firsts), tf.size(splits, out_type=tf.int64) - 1)
        return joined, group_splits, tf.where(ops.take(is_token, firsts), ops.take(ids, firsts), -1)


def tokenize_around(texts, splitter, tokenize, first=None):
    """The ids of each of the `[n]` strings: added tokens (`splitter`, an `AddedTokens`) found and
    given their ids, the text between them through `tokenize(pieces, first)` (strings -> ragged ids;
    `first`: bool, whether each piece starts its text, and the text is `first`), in order. `first`:
    bool `[n]`, whether each text starts where its original text starts (None: all do)."""
    first = tf.ones(tf.shape(texts), tf.bool) if first is None else first

    def with_added_tokens():
        pieces, piece_splits, token_ids = splitter.split(splitter.valid_text(texts))
        is_text = token_ids < 0
        rows = ops.row_ids(piece_splits)
        starts = tf.range(tf.size(pieces, out_type=tf.int64)) == ops.take(piece_splits, rows)
        between = ops.indices_where(is_text)
        pieces_first = ops.take(starts & ops.take(first, rows), between)
        between = tokenize(ops.take(pieces, between), pieces_first)
        values, splits = ops.substitute_rows(token_ids, is_text, tf.cast(between.values, tf.int32), between.row_splits)
        return tf.RaggedTensor.from_row_splits(values, ops.take(splits, piece_splits), validate=False)

    return ops.rare_cond(splitter.found_in(texts), with_added_tokens, lambda: tf.cast(tokenize(texts, first), tf.int32))
