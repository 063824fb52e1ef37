"""Added tokens (`[CLS]`, `<mask>`, `<|endoftext|>` ...) found in raw text, as Hugging Face finds them.

Before normalizing, Hugging Face cuts each text at its added tokens: at every place, the leftmost
match, the longest of those starting there; a token with `lstrip` (`rstrip`) takes the whitespace
on its left (right) with it. The pieces between are tokenized each on its own, so a token and the
text around it never merge. Here one RE2 pass does the cut: an alternation of the tokens, longest
first (RE2 takes the first alternative that matches at the leftmost place), writes each match
between two 0xFF bytes behind a 0xFE byte. Neither byte occurs in UTF-8, so after invalid UTF-8 is
replaced, one split at 0xFF gives the pieces and a leading 0xFE tells the tokens.
"""

import re

import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables
from tfsubword.text import byte_level, unicode_classes

_MARK = b"\xff"
_TOKEN = b"\xfe"


def _alternative(token):
    escaped = re.escape(token.content)
    space = byte_level.character_class(unicode_classes.WHITE_SPACE)
    return (f"{space}*" if token.lstrip else "") + escaped + (f"{space}*" if token.rstrip else "")


class AddedTokens(tf.Module):
    """Cuts texts at `tokens` (a list of `files.huggingface.AddedToken`)."""

    def __init__(self, tokens, name=None):
        super().__init__(name=name)
        ordered = sorted(tokens, key=lambda token: -len(token.content.encode("utf-8")))
        self._pattern = "|".join(_alternative(token) for token in ordered)
        self._strips = any(token.lstrip or token.rstrip for token in tokens)
        self._space = byte_level.character_class(unicode_classes.WHITE_SPACE)
        self._ids = tables.hash_table(
            [token.content.encode("utf-8") for token in tokens], [token.id for token in tokens], -1, tf.string, tf.int32
        )

    def split(self, texts):
        """`[n]` strings -> (pieces `[p]`, row splits int64 `[n + 1]`, ids int32 `[p]`): the pieces of each
        text in order; a piece that is an added token has its id and is "", the others have id -1."""
        text = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
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
        ids = tf.where(is_token, ids, -1)
        return tf.where(is_token, "", flat), tf.cast(pieces.row_splits, tf.int64), ids


def join_pieces(piece_ids, token_ids, piece_splits):
    """The ids of each text: the pieces' ids (ragged `[p, (ids)]`, empty for added tokens) with each
    added token's id (`token_ids`, -1 elsewhere) in its place, grouped by `piece_splits`."""
    is_token = token_ids >= 0
    tokens = tf.RaggedTensor.from_row_lengths(
        tf.gather(token_ids, ops.indices_where(is_token)), tf.cast(is_token, tf.int64), validate=False
    )
    joined = tf.concat([tf.cast(piece_ids, tf.int32), tokens], axis=1)
    return tf.RaggedTensor.from_row_splits(joined, piece_splits, validate=False).merge_dims(1, 2)
