"""`Viterbi`: texts or words -> the pieces of a unigram model, exactly as SentencePiece's encoder gives them.

A line is segmented by the best path through it (`lattice`). Lines are long and repeat their words, so
when no piece holds a space symbol after its first character (then every path passes through each word
start), the distinct words are segmented instead, in double precision with the lead of each choice
over the runner-up, and the few words near a tie are segmented again exactly where they stand in their
line (`viterbi_exact`). By size: few short words (a text or two) take the unrolled pass, many distinct
words are segmented in two halves that run at once, and words of more than 64 bytes (text without
spaces) are first cut where no piece crosses.
"""

import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables
from tfsubword import words as words_lib
from tfsubword.segment import unknowns, viterbi_exact
from tfsubword.segment.lattice import Lattice
from tfsubword.text.sentencepiece import word_starts

# Inputs of at most this many cells (rows x steps x piece lengths) whose rows have at most one of these
# numbers of characters are segmented by `Lattice.unrolled_paths` (its graph holds a few ops per step).
_UNROLLED_CELLS = 1 << 15
_UNROLLED_STEPS = (16, 32)
# Words of more UTF-8 bytes than this (with their `▁`) are cut where no piece crosses (see
# `segment_words`): the Viterbi loop takes one step per character of the longest word.
_CUT_WORDS_LONGER_THAN = 64
# Hugging Face's words (`words_alone`) are cut when one has more bytes than this.
_CUT_ALONE_WORDS_LONGER_THAN = 128
# From this many distinct words, `_word_paths` segments them in two halves at once.
_HALVES_FROM = 4096
_CODE_POINT_BITS = 21  # U+10FFFF fits: the key of two code points side by side (`_pair_keys`) is below 1 << 42


class Viterbi(tf.Module):
    """The pieces `keys` (with their `ids`) of a unigram model and their scores on a path (`path_scores`,
    one per id, see `Lattice`); `piece_chars`: the characters each id covers (the unknown piece: one);
    `byte_ids`: with byte fallback, the ids of the 256 byte pieces; `space`: the code point of the
    space symbol when words can be segmented one by one (no piece holds it after its start), else None.

    With `words_alone` (Hugging Face's `Unigram`), each word (from a space symbol to the next, or the
    whole text without `space`) is segmented alone, from 0, in double precision (long words in parts:
    see `_alone_in_parts`), and its unknown pieces are merged within it; the unknown pieces of the
    lattice, and pieces `unknown_as` read in the text, then become `unknown_as`. With `byte_ids` too,
    such runs become bytes instead (see `unknowns.fused_as_bytes`; `unknown_text`: the text of the
    piece `unknown_as`).
    """

    def __init__(
        self,
        keys,
        ids,
        path_scores,
        unknown_id,
        max_piece_chars,
        piece_chars,
        byte_ids=None,
        space=None,
        words_alone=False,
        unknown_as=None,
        unknown_text=None,
        name=None,
    ):
        super().__init__(name=name)
        self.lattice = Lattice(
            keys, ids, path_scores, unknown_id, max_piece_chars, strings=space is not None or words_alone
        )
        self._unknown_id = int(unknown_id)
        self._unknown_as = self._unknown_id if unknown_as is None else int(unknown_as)
        self._words_alone = words_alone
        self._unknown_text = unknown_text
        self.space = space
        self.by_words = space is not None
        self.piece_chars = tables.constant(piece_chars, tf.int64, shape=[len(piece_chars)])
        self.byte_ids = None if byte_ids is None else tables.constant(byte_ids, tf.int32, shape=[256])
        if self.by_words or words_alone:
            # The pairs of characters side by side in a piece, for `_parts`: no piece crosses
            # between two characters that are not one of them.
            pairs = sorted(
                {(ord(key[i - 1]) << _CODE_POINT_BITS) | ord(key[i]) for key in keys for i in range(1, len(key))}
            )
            self._pairs = tables.hash_table(pairs, [1] * len(pairs), 0, tf.int64, tf.int32)

    def __call__(self, code_points, splits, merge=True):
        """Normalized texts (code points, row splits) -> (ids int32, row splits int64). Without
        `merge`, each unknown character stays an unknown piece of its own (see `_unknowns`)."""
        if self.space is None and not self._words_alone:
            ids, id_splits = self._exact(code_points, splits, merge)
        else:
            starts, word_splits = word_starts(code_points, splits, -1 if self.space is None else self.space)
            ends = tf.concat([starts[1:], [tf.size(code_points, out_type=tf.int64)]], axis=0)
            words = ops.encode_utf8(code_points, tf.concat([starts, ends[-1:]], axis=0))
            word_lines = ops.row_ids(word_splits)
            if self._words_alone:
                longest = tf.reduce_max(tf.concat([[0], tf.strings.length(words)], axis=0))
                ids, id_splits = ops.rare_cond(
                    longest > _CUT_ALONE_WORDS_LONGER_THAN,
                    lambda: self._alone_in_parts(words, word_splits, merge),
                    lambda: self._by_words(words, word_splits, word_lines, prefix="", merge=merge),
                )
            else:
                distinct_words, occurrences = words_lib.distinct(words)
                ids, id_splits = self._segment_pool(distinct_words, occurrences, word_splits, word_lines, merge)
        return ids, id_splits

    def sample(self, code_points, splits, sampler, seed):
        """`__call__` of Hugging Face's words (`words_alone`), each occurrence's path drawn by `sampler`
        (a `sampling.LatticeSampler` of this lattice) with `seed` (int32 `[2]`), whole: its draws
        depend on the whole word."""
        starts, word_splits = word_starts(code_points, splits, -1 if self.space is None else self.space)
        bounds = tf.concat([starts, [tf.size(code_points, out_type=tf.int64)]], axis=0)
        if sampler.nbest_size < 0:  # forward once per distinct word, each occurrence walks back
            unique, occurrence = words_lib.distinct(ops.encode_utf8(code_points, bounds))
            ids, id_splits, code_points = sampler.draw_occurrences(*ops.decode_utf8(unique), occurrence, seed)
        else:
            ids, id_splits = sampler(code_points, bounds, seed)
        ids, id_splits = self._unknowns(ids, id_splits, code_points)
        return ids, ops.take(id_splits, word_splits)

    def segment_words(self, words, word_splits, word_lines, occurrences, merge=True, distinct=False):
        """Words without their leading `▁`, as `SentencePieceNormalizer.word_pool` gives them: the
        words of the lines are `words[occurrences]` (int64), grouped into lines by `word_splits` (and
        `word_lines`, the line of each) -> (ids int32, row splits int64). `words` is segmented as it
        is, each of its words once (it should hold few repeats). With `distinct`, also the words of
        `words` with their `▁`: a dict of their code points ("values", int32), the byte where each
        starts in its word ("starts", int64) and their row splits ("splits")."""
        words = tf.strings.join([chr(self.space), words])
        return self._segment_pool(words, occurrences, word_splits, word_lines, merge, distinct)

    def _segment_pool(self, words, occurrences, word_splits, word_lines, merge=True, distinct=False):
        """`segment_words` of words that start with their `▁` (a line's first may lack it). Words
        longer than `_CUT_WORDS_LONGER_THAN` (text without spaces) are first cut between each two
        characters that no piece holds side by side: no piece crosses there, so every path passes
        through those places, as through word starts, and the parts are segmented as words are."""
        longest = tf.reduce_max(tf.concat([[0], tf.strings.length(words)], axis=0))
        cut = longest > _CUT_WORDS_LONGER_THAN

        def whole():
            # (With `distinct`, `_by_words` decodes the words themselves.)
            empty = (tf.zeros([0], tf.int32), tf.zeros([0], tf.int64), tf.zeros([1], tf.int64))
            return (words, occurrences, word_splits, word_lines) + (empty if distinct else ())

        def in_parts():
            parts = self._cut_words(words, occurrences, word_splits)
            return parts + (ops.ragged_in_halves(ops.decode_utf8_with_offsets, words) if distinct else ())

        segmented, occurrences, word_splits, word_lines, *decoded = ops.rare_cond(cut, in_parts, whole)
        result = self._by_words(
            segmented, word_splits, word_lines, prefix="", merge=merge, distinct=distinct, occurrences=occurrences
        )
        if not distinct:
            return result
        # The words' own characters: decoded with the cut, or by `_by_words` when nothing was cut.
        values, starts, splits = tf.cond(cut, lambda: tuple(decoded), lambda: result[2])
        return result[0], result[1], {"values": values, "starts": starts, "splits": splits}

    def pool_parts(self, words, occurrences, word_splits):
        """`segment_words`'s words (from their `▁`), the word of each occurrence and the line splits of
        the occurrences -> the same with the words of more than `_CUT_WORDS_LONGER_THAN` bytes cut
        where no piece crosses (see `_segment_pool`): (parts, the part of each occurrence, line splits)."""
        longest = tf.reduce_max(tf.concat([[0], tf.strings.length(words)], axis=0))
        return ops.rare_cond(
            longest > _CUT_WORDS_LONGER_THAN,
            lambda: self._cut_words(words, occurrences, word_splits)[:3],
            lambda: (words, occurrences, word_splits),
        )

    def _cut_words(self, words, occurrences, word_splits):
        """`_segment_pool`'s cut: words (from their `▁` or their line's start), the word of each
        occurrence and the line splits of the occurrences -> the same for the parts, the parts'
        distinct strings as words.
        Only the words that occur are cut: the pool also holds the words of lines as split before
        they were normalized (see `SentencePieceNormalizer.word_pool`), which in text without spaces
        are whole lines that nothing reads (in the Japanese novel, half of the characters)."""
        used, occurrences = tf.unique(occurrences, out_idx=tf.int64)
        # Also at each `▁` (no piece holds one after its start).
        _, _, distinct_parts, part, part_splits = self._parts(ops.take(words, used), at_space=True)
        part_of_occurrence, occurrence_splits = ops.gather_rows(part, part_splits, occurrences)
        line_splits = ops.take(occurrence_splits, word_splits)
        return distinct_parts, part_of_occurrence, line_splits, ops.row_ids(line_splits)

    def _parts(self, words, at_space=False):
        """Words cut at their start and between each two characters that no piece holds side by side
        (and at each `▁` with `at_space`) -> (their code points, row splits, the distinct parts, the
        part at each place, int64, and the row splits of the places by word: a word's parts are a
        range of them, from the part where it starts)."""
        # Decoded in halves, which run at once (one thread each).
        values, splits = ops.ragged_in_halves(ops.decode_utf8, words)
        size = tf.size(values, out_type=tf.int64)
        starts = ops.indices_where(self.cuts(values, splits, at_space))
        parts, part = tf.unique(ops.encode_utf8(values, tf.concat([starts, [size]], axis=0)), out_idx=tf.int64)
        return values, splits, parts, part, ops.search_sorted(starts, splits, out_type=tf.int64)

    def cuts(self, values, splits, at_space=True):
        """Whether each character of rows of code points (`values`, row `splits`) starts a row, or
        follows a character that no piece holds it after (or, with `at_space`, is a `▁`): no piece
        crosses there, so every path passes through it. Only when segmenting by words."""
        # Each character with the one before it (the first of all: with code point 0, which the cut
        # at a row's start makes moot).
        cuts = self._pairs.lookup(_pair_keys(tf.concat([[0], values[:-1]], axis=0), values)) == 0
        cuts |= ops.row_ids_and_places(splits)[1] == 0
        if at_space:
            cuts |= values == self.space
        return cuts

    def _alone_in_parts(self, words, word_splits, merge):
        """`_by_words` of Hugging Face's words when some are long (text without spaces): each distinct
        word cut where no piece crosses, each distinct part segmented once, from 0 in double
        precision, and the parts' pieces joined back into their words. A word's path passes through
        its cuts, but Hugging Face adds its scores from the word's start: a part decided at another
        offset rounds otherwise, which can change a choice only where a lead over the runner-up is
        within the rounding (at most 4 ulps per character at the scores' magnitude there). The
        words with such a part (rare: a near-tie) are segmented again whole."""
        unique, occurrence = words_lib.distinct(words)
        n = tf.size(unique, out_type=tf.int64)
        values, splits, parts, part, part_splits = self._parts(unique)
        part_values, part_value_splits = ops.ragged_in_halves(ops.decode_utf8, parts)
        paths = self._word_paths(part_values, part_value_splits)
        n_parts = tf.size(parts, out_type=tf.int64)
        pieces, splits_by_part = ops.gather_rows(paths["piece"], ops.splits_from_row_ids(paths["rows"], n_parts), part)
        piece_splits = ops.take(splits_by_part, part_splits)

        # Each part where it stands: the score of its word before it, and its smallest lead.
        word_of_part = ops.row_ids(part_splits)
        totals = tf.cumsum(ops.take(paths["total"], part), exclusive=True)
        before = totals - ops.take(totals, ops.take(part_splits, word_of_part))
        length = tf.cast(ops.take(part_value_splits[1:] - part_value_splits[:-1], part), tf.float64)
        lead = ops.take(tf.math.unsorted_segment_min(paths["gap"], paths["rows"], n_parts), part)
        magnitude = (tf.abs(before) + (length + 1) * self.lattice.max_score_magnitude) * (1 + 1e-6) + 1
        near_tie = ~(lead > 4 * (length + 2) * viterbi_exact.ulp(magnitude, mantissa_bits=52))
        fragile = tf.unique(ops.take(word_of_part, ops.indices_where(near_tie)))[0]

        def segment_again():
            again_values, again_splits = ops.gather_rows(values, splits, fragile)
            again = self.lattice.best_paths(again_values, again_splits, tf.float64)
            k = tf.size(fragile, out_type=tf.int64)
            table = tf.concat([pieces, again["piece"]], axis=0)
            table_splits = tf.concat(
                [piece_splits, piece_splits[-1] + ops.splits_from_row_ids(again["rows"], k)[1:]], axis=0
            )
            rows = tf.tensor_scatter_nd_update(tf.range(n), fragile[:, None], n + tf.range(k))
            return ops.gather_rows(table, table_splits, rows)

        pieces, piece_splits = ops.rare_cond(tf.size(fragile) > 0, segment_again, lambda: (pieces, piece_splits))
        if merge:
            pieces, piece_splits = self._unknowns(pieces, piece_splits, values)
        values, line_splits, _ = words_lib.to_lines(pieces, piece_splits, occurrence, word_splits)
        return values, line_splits

    def _exact(self, code_points, splits, merge=True):
        paths = self.lattice.best_paths(code_points, splits, tf.float32)
        ids_splits = ops.splits_from_row_ids(paths["rows"], tf.size(splits, out_type=tf.int64) - 1)
        return self._unknowns(paths["piece"], ids_splits, code_points) if merge else (paths["piece"], ids_splits)

    def _unknowns(self, ids, splits, code_points):
        if self._words_alone and self.byte_ids is not None:
            return unknowns.fused_as_bytes(
                ids,
                splits,
                code_points,
                self.piece_chars,
                self._unknown_id,
                self._unknown_as,
                self._unknown_text,
                self.byte_ids,
            )
        if self._unknown_as != self._unknown_id:
            ids = tf.where(ids == self._unknown_id, self._unknown_as, ids)
        return unknowns.finish(ids, splits, code_points, self.piece_chars, self._unknown_as, self.byte_ids)

    def _by_words(self, words, line_word_splits, word_lines, prefix, merge=True, distinct=False, occurrences=None):
        if occurrences is None:
            distinct_words, occurrence = words_lib.distinct(words)
        else:
            distinct_words, occurrence = words, occurrences
        n_distinct = tf.size(distinct_words, out_type=tf.int64)
        decode = ops.decode_utf8_with_offsets if distinct else ops.decode_utf8

        def decoded(words):
            return decode(tf.strings.join([prefix, words]) if prefix else words)

        # Decoded in halves, which run at once: one decode op runs on one thread.
        # (code points, [byte starts if `distinct`], row splits)
        decoded_words = ops.ragged_in_halves(decoded, distinct_words)
        distinct_values, distinct_splits = decoded_words[0], decoded_words[-1]

        paths = self._word_paths(distinct_values, distinct_splits)
        path_words = paths["rows"]
        smallest_gap = tf.math.unsorted_segment_min(paths["gap"], path_words, n_distinct)
        # Unknown pieces are merged within words here; across words below, only if a word starts with one.
        raw = paths["piece"], ops.splits_from_row_ids(path_words, n_distinct)
        pieces, piece_splits = self._unknowns(*raw, distinct_values) if merge else raw
        length = distinct_splits[1:] - distinct_splits[:-1]
        suspects = None
        if not self._words_alone:  # Hugging Face segments each word alone, in double precision
            suspects = viterbi_exact.suspects(self.lattice, smallest_gap, length, occurrence, word_lines)

        def segment_fragile_again():
            fragile = viterbi_exact.fragile(
                self.lattice, suspects, occurrence, word_lines, line_word_splits, paths["total"], smallest_gap, length
            )

            def redo():
                redone, redone_splits, word_values = viterbi_exact.segment_again(
                    self.lattice,
                    fragile,
                    occurrence,
                    word_lines,
                    line_word_splits,
                    raw,
                    (distinct_values, distinct_splits),
                )
                if merge:
                    redone, redone_splits = self._unknowns(redone, redone_splits, word_values)
                table = tf.concat([pieces, redone], axis=0)
                table_splits = tf.concat([piece_splits, piece_splits[-1] + redone_splits[1:]], axis=0)
                k = tf.size(fragile, out_type=tf.int64)
                return (
                    table,
                    table_splits,
                    tf.tensor_scatter_nd_update(occurrence, fragile[:, None], n_distinct + tf.range(k)),
                )

            return ops.rare_cond(tf.size(fragile) > 0, redo, lambda: (pieces, piece_splits, occurrence))

        # Words whose segmentation single-precision rounding could change where they stand (few):
        # one `If` for all their steps, which a text without them skips. It gives the rows of a
        # table of pieces (the distinct words', then those redone) that the occurrences read.
        table, table_splits, rows = (
            (pieces, piece_splits, occurrence)
            if suspects is None
            else ops.rare_cond(tf.size(suspects) > 0, segment_fragile_again, lambda: (pieces, piece_splits, occurrence))
        )
        values, line_splits, occurrence_splits = words_lib.to_lines(table, table_splits, rows, line_word_splits)
        if merge and self.byte_ids is None and not self._words_alone:
            unknown_first = tf.reduce_any(ops.take(values, occurrence_splits[:-1]) == self._unknown_id)
            values, line_splits = ops.rare_cond(
                unknown_first,
                lambda: unknowns.merge_unknowns(values, line_splits, self._unknown_id),
                lambda: (values, line_splits),
            )
        if distinct:
            return values, line_splits, (distinct_values, decoded_words[1], distinct_splits)
        return values, line_splits

    def _word_paths(self, code_points, splits):
        """`Lattice.best_paths` in double precision with gaps, as `_by_words` needs it: few short rows
        (the words of a text or two) take `Lattice.unrolled_paths`, with identical results, in far
        fewer ops; many rows are segmented in two halves, which run at once."""
        lengths = splits[1:] - splits[:-1]
        longest = tf.reduce_max(tf.concat([[0], lengths], axis=0))
        rows = tf.size(lengths, out_type=tf.int64)

        def looped():
            return self.lattice.best_paths(code_points, splits, tf.float64, gaps=True)

        def in_halves():
            # The rows before and after the middle character, in two passes (one thread each: most of
            # a pass's ops are small, and the loop's steps wait on each other).
            half, first, second = ops.rows_in_halves(code_points, splits)
            first, second = (
                self.lattice.best_paths(*rows, tf.float64, gaps=True, inline=True) for rows in (first, second)
            )
            paths = {key: tf.concat([first[key], second[key]], axis=0) for key in first}
            paths["rows"] = tf.concat([first["rows"], second["rows"] + half], axis=0)
            return paths

        def unrolled(steps, otherwise):
            fits = (longest <= steps) & (rows * steps * min(self.lattice.width, steps) <= _UNROLLED_CELLS)
            return lambda: ops.rare_cond(
                fits, lambda: self.lattice.unrolled_paths(code_points, splits, steps), otherwise
            )

        choose = lambda: ops.rare_cond(rows >= _HALVES_FROM, in_halves, looped)  # noqa: E731
        for steps in reversed(_UNROLLED_STEPS):
            choose = unrolled(steps, choose)
        return choose()


def _pair_keys(first, second):
    """Code points side by side -> one int64 key per pair."""
    return tf.bitwise.left_shift(tf.cast(first, tf.int64), _CODE_POINT_BITS) | tf.cast(second, tf.int64)
