"""Where each piece of `UnigramLayer` comes from: SentencePiece's `begin` and `end`, byte offsets into
the original strings, through the character map and the whitespace rules.

As in SentencePiece, a character comes from the start of the rewrite that wrote it, so a piece spans from
there to where the next piece's first character comes from: "▁world" in "Hello  world" spans both
spaces, the dummy prefix comes from the first character after leading spaces, removed trailing spaces
end the last piece where they start, and merged unknown characters span all theirs (byte pieces: the
last spans the character, the others are empty at its start).
"""

import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword.segment import unknowns
from tfsubword.text import sentencepiece


class PieceSpans:
    """The spans of the pieces of a `SentencePieceNormalizer` and a segmenter (`Viterbi`, or
    `SentencePieceBPE`, which reads whole texts only): `of_words` for lines
    segmented word by word (when both allow it), `of_normalized` otherwise. `starts_word`: a bool
    constant per id, whether the piece starts a word, or None when the unknown piece could start one."""

    def __init__(self, normalizer, segmenter, unknown_id, starts_word):
        self._normalizer = normalizer
        self._segmenter = segmenter
        self._unknown_id = unknown_id
        self._starts_word = starts_word

    def of_words(self, strings):
        """`of_normalized` by words, as `SentencePieceNormalizer.word_pool` finds them: a
        split of every line at each space says where each word of a plain line (see
        `SentencePieceNormalizer.plain`) is; the other lines, the ruled ones, are normalized, which
        says where each of their characters comes from (`sources`, grouped by `source_splits`, and
        `line_ends`), and their words are read off their normalized text. A line normalizes to the
        `▁` and the characters of each of its words in turn. In a plain line, a character comes
        from its own byte; a `▁` from the space after the word before it (the first of a run: extra
        ones are removed), the first one (the dummy prefix) from the line's first word. A piece that
        ends a word ends where the word does: at the next `▁`'s source, or at the end of the line
        (its last byte, or the first of its trailing spaces). Needs `splits_words` and segmenting by
        words."""
        normalizer = self._normalizer
        n = tf.size(strings, out_type=tf.int64)
        ruled = ops.indices_where(~normalizer.plain(strings))
        # "" before, between and after spaces (a tab or a line feed of a plain line is one)
        tokens, token_lines, token_splits = ops.split_strings(normalizer.spaced(strings), sep=" ")
        distinct_tokens, token_occurrences = tf.unique(tokens, out_idx=tf.int64)
        lengths = tf.cast(tf.strings.length(tokens), tf.int64)
        # Each token's first byte, counted over all lines, then from its line's first token.
        from_first = tf.cumsum(lengths + 1, exclusive=True)
        positions = from_first - ops.take(from_first, ops.take(token_splits, token_lines))
        words = ops.indices_where(lengths > 0)  # an empty token is an extra space
        word_starts = ops.take(positions, words)
        spans = tf.stack([word_starts, word_starts + ops.take(lengths, words)], axis=1)
        plain = (
            distinct_tokens,
            ops.take(token_occurrences, words),
            ops.splits_from_row_ids(ops.take(token_lines, words), n),
            spans,
            tf.zeros([0], tf.int64),
            tf.zeros([1], tf.int64),
            tf.zeros([0], tf.int64),
        )

        def with_ruled_lines():
            values, value_splits, sources, line_ends = normalizer.normalize(ops.take(strings, ruled), offsets=True)
            ruled_words, ruled_splits = normalizer.words_of_normalized(
                values, value_splits, tf.size(ruled, out_type=tf.int64)
            )
            pool, occurrences, splits, at = sentencepiece.with_ruled_lines(*plain[:3], ruled, ruled_words, ruled_splits)
            # A ruled line's words are placed by `sources`: no spans in the line.
            no_spans = tf.zeros([tf.size(ruled_words), 2], tf.int64)
            return (
                pool,
                occurrences,
                splits,
                ops.take(tf.concat([spans, no_spans], axis=0), at),
                sources,
                value_splits,
                line_ends,
            )

        # Inlined, not `ops.rare_cond`: most large batches have ruled lines.
        pool, occurrences, word_splits, spans, sources, source_splits, line_ends = tf.cond(
            tf.size(ruled) > 0, with_ruled_lines, lambda: plain
        )
        word_starts, word_ends = tf.unstack(spans, axis=1)
        word_lines = ops.row_ids(word_splits)
        ids, id_splits, distinct = self._segmenter.segment_words(
            pool,
            word_splits,
            word_lines,
            merge=False,
            distinct=True,
            occurrences=occurrences,
        )
        # The pieces cover the words in order, each word's first piece from its `▁`: those pieces
        # number the words of the pieces (or a mark at the first character of each word, if the
        # `▁` could be an unknown piece).
        word_values = ops.take(distinct["splits"], occurrences)  # where each word's characters start
        word_chars = ops.take(distinct["splits"][1:], occurrences) - word_values
        char_splits = tf.concat([[0], tf.cumsum(word_chars)], axis=0)  # and in the lines, all in turn
        chars = ops.take(self._segmenter.piece_chars, ids)
        piece_starts = tf.cumsum(chars, exclusive=True)
        if self._starts_word is not None:
            starts_word = ops.take(self._starts_word, ids)
        else:
            starts_word = (
                ops.take(
                    tf.scatter_nd(char_splits[:-1, None], tf.ones_like(word_chars), char_splits[-1:]), piece_starts
                )
                > 0
            )
        word = tf.cumsum(tf.cast(starts_word, tf.int64)) - 1
        # Per word: the source of its `▁`, and where a table holds those of its characters (plus a
        # number to add). In a plain line, the table holds the byte where each character of the
        # distinct words starts in its word (after a `▁` of 3 bytes).
        first_in_line = tf.range(tf.size(word_lines, out_type=tf.int64)) == ops.take(word_splits, word_lines)
        space_sources = tf.where(first_in_line, word_starts, tf.concat([[0], word_ends[:-1]], axis=0))
        in_word = distinct["starts"] - len(sentencepiece.SPACE_SYMBOL.encode())
        to_distinct = word_values - char_splits[:-1]  # a character's index among the distinct words' ones, less its own
        # Where each line ends: at the end of its last word (where trailing spaces start).
        has_words = ops.indices_where(word_splits[1:] > word_splits[:-1])
        line_ends_at = tf.scatter_nd(
            has_words[:, None], ops.take(word_ends, ops.take(word_splits, has_words + 1) - 1), [n]
        )

        def in_ruled_lines():
            # In a ruled line, the table is `sources`, from the line's `▁` that starts each word. Only
            # the words of those lines (few) are read, and written over the plain lines' values.
            first, limit = ops.take(word_splits, ruled), ops.take(word_splits, ruled + 1)
            k, place = ops.row_ids_and_places(
                tf.concat([[0], tf.cumsum(limit - first)], axis=0)
            )  # of each word: its line's rank
            line_first = ops.take(first, k)
            words = line_first + place
            line_start = ops.take(source_splits, k) - ops.take(char_splits, line_first)
            ruled_words = (
                ops.take(sources, line_start + ops.take(char_splits, words)),
                tf.size(in_word, out_type=tf.int64) + line_start,
                tf.zeros_like(words),
            )
            plain_words = (space_sources, to_distinct, word_starts)
            ruled_words = tuple(
                tf.tensor_scatter_nd_update(p, words[:, None], r) for r, p in zip(ruled_words, plain_words)
            )
            return ruled_words + (tf.tensor_scatter_nd_update(line_ends_at, ruled[:, None], line_ends),)

        space_sources, to_table, added, line_ends_at = tf.cond(
            tf.size(ruled) > 0, in_ruled_lines, lambda: (space_sources, to_distinct, word_starts, line_ends_at)
        )
        table = tf.concat([in_word, sources], axis=0)
        starts = tf.where(
            starts_word,
            ops.take(space_sources, word),
            ops.take(added, word) + ops.take(table, ops.take(to_table, word) + piece_starts),
        )
        # Within a word, a piece ends at its next character's source; at the end of a word, at the
        # next `▁`'s source: where the next piece starts.
        ends = _ends_at_next_starts(starts, id_splits, line_ends_at)
        characters = None
        if self._segmenter.byte_ids is not None:
            characters = ops.take(distinct["values"], ops.take(to_distinct, word) + piece_starts)
        return self._unknown_spans(ids, id_splits, starts, ends, characters)

    def of_normalized(self, strings):
        """`[n]` strings -> (ids int32, starts int64, ends int64, row splits int64) of their pieces:
        every text goes through the whole normalizer, which says where each character comes from."""
        values, splits, sources, line_ends = self._normalizer.normalize(strings, offsets=True)
        ids, id_splits = self._segmenter(values, splits, merge=False)
        return self._spans(ids, id_splits, values, sources, line_ends)

    def _spans(self, ids, id_splits, values, sources, line_ends):
        """Pieces (ids, row splits; unknown ones one per character) over normalized texts (their
        code points `values`, needed with byte fallback only) -> (ids, starts, ends, row splits) as
        SentencePiece gives them. `sources`: where each normalized character
        comes from; `line_ends`: where each text ends."""
        # The pieces of each text cover it in order, so where each starts is a running sum over all texts.
        first = tf.cumsum(ops.take(self._segmenter.piece_chars, ids), exclusive=True)
        starts = ops.take(sources, first)
        # A piece ends at the source of the character after it, where the next piece starts.
        ends = _ends_at_next_starts(starts, id_splits, line_ends)
        characters = ops.take(values, first) if self._segmenter.byte_ids is not None else None
        return self._unknown_spans(ids, id_splits, starts, ends, characters)

    def _unknown_spans(self, ids, id_splits, starts, ends, characters):
        """Pieces with unknown ones one per character, with their spans -> the same as SentencePiece
        gives them: with byte fallback, each unknown one becomes the byte pieces of its character
        (`characters`: the first character of each piece); otherwise consecutive ones become one."""
        if self._segmenter.byte_ids is not None:
            # The byte pieces of an unknown character: all but the last are empty, at its start.
            ids, new_splits, old, last = unknowns.unknowns_as_bytes(
                ids, characters, self._unknown_id, self._segmenter.byte_ids
            )
            starts = ops.take(starts, old)
            ends = tf.where(last, ops.take(ends, old), starts)
            return ids, starts, ends, ops.take(new_splits, id_splits)
        # Consecutive unknown pieces become one, from the start of the first to the end of the last.
        merged = unknowns.merged_unknowns(ids, id_splits, self._unknown_id)
        dropped = ops.indices_where(merged)

        def merge():
            kept = ops.indices_where(~merged)
            # A run's first piece ends where its last does. Runs of dropped pieces are consecutive:
            # the j-th dropped piece d follows d - j kept ones, the run's first the last of them.
            last = ops.indices_where(tf.concat([dropped[1:] - dropped[:-1] > 1, [True]], axis=0))
            run_ends = ops.take(dropped, last)
            ends_kept = tf.tensor_scatter_nd_update(
                ops.take(ends, kept), (run_ends - last - 1)[:, None], ops.take(ends, run_ends)
            )
            return ops.take(ids, kept), ops.take(starts, kept), ends_kept

        ids, starts, ends = ops.rare_cond(tf.size(dropped) > 0, merge, lambda: (ids, starts, ends))
        return ids, starts, ends, unknowns.less_dropped(id_splits, dropped)


def _ends_at_next_starts(starts, splits, row_ends):
    """Where pieces end that each end where the next one of their row starts (`starts`, int64,
    grouped by the row `splits`): the last piece of a row at its row's end (`row_ends`, one per row)."""
    nonempty = ops.indices_where(splits[1:] > splits[:-1])
    last = ops.take(splits, nonempty + 1) - 1
    return tf.tensor_scatter_nd_update(
        tf.concat([starts, [0]], axis=0)[1:], last[:, None], ops.take(row_ends, nonempty)
    )
