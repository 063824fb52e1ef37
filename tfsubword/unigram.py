"""`UnigramLayer`: SentencePiece's unigram tokenizer (normalizer + Viterbi) in the graph, core ops only."""

import dataclasses
import os

import keras
import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import matching
from tfsubword import normalization_rules
from tfsubword import sentencepiece_model as spm_model
from tfsubword import vocab as vocab_lib
from tfsubword.layers import TokenizerLayer

SPACE_SYMBOL = "\u2581"
_SPACE, _ESCAPED_SPACE, _REPLACEMENT = 0x20, 0x2581, 0xFFFD
_MODEL_ASSET = "sentencepiece.model"
_UNK_PENALTY = np.float32(10.0)
_FLT_MAX = np.finfo(np.float32).max
_EXPONENT_BITS = np.int64(0x7FF0000000000000)  # of a float64
# SentencePiece's Viterbi restarts its scores from 0 beyond this magnitude (see `Viterbi`).
_RESET = 100000.0
# Per code point: it is a one-character key, the first or the second character of a longer key.
_SINGLE, _FIRST, _SECOND = 1, 2, 4
# What `tf.strings.split` without a separator splits at, besides the space.
_SPLIT_WHITESPACE = [0x09, 0x0A, 0x0B, 0x0C, 0x0D]
# Viterbi paths are walked back one position per loop step over at least this many positions, in
# rows of at most this many or of at most 1/_STEPS_PER_POSITION of the positions (text without
# spaces at batch 1024, whose longest parts have a few hundred characters: the Japanese novel 1.08x
# faster than by doubling, in a paired A/B); otherwise by pointer doubling.
_WALK_BY_STEPS_FROM, _WALK_BY_STEPS_UP_TO, _STEPS_PER_POSITION = 4096, 256, 256
# SentencePiece refuses models with pieces of this many UTF-8 bytes or more.
_MAX_PIECE_BYTES = 8000
# Beyond this many ranges of special characters, every line goes through the full normalizer.
_MAX_RANGES = 5000
# Inputs of at most this many cells (rows x steps x piece lengths) whose rows have at most one of
# these numbers of characters are segmented by `Viterbi._unrolled_paths` (its graph holds a few ops
# per step).
_UNROLLED_CELLS = 1 << 15
_UNROLLED_STEPS = (16, 32)
# Words of more UTF-8 bytes than this (with their `▁`) are cut where no piece crosses (see
# `Viterbi.segment_words`): the Viterbi loop takes one step per character of the longest word.
_CUT_WORDS_LONGER_THAN = 64
_CODE_POINT_BITS = 21  # U+10FFFF fits: the key of two code points side by side (`_pair_keys`) is below 1 << 42
# From this many distinct words (in wikitext, a batch of 300 lines or so), `Viterbi._word_paths`
# segments them in two halves at once (paired A/B, 7k pieces: 1.08x at batch 1024; from 1,024 words
# on, batches of 128 lines, 2,500 distinct words, were 0.97x).
_HALVES_FROM = 4096


class SentencePieceNormalizer(tf.Module):
    """SentencePiece's `Normalizer` in the graph: strings -> normalized code points, one row per string.

    At each position, the longest user-defined symbol is copied as it is; otherwise the longest rule of
    the precompiled character map is replaced by its target; otherwise one character is copied. Invalid
    UTF-8 gives one U+FFFD per invalid byte. Then, as configured: spaces at the start of the text and
    after a space are removed (only those at the start of a rule's output, as SentencePiece does), a
    space is added in front (`add_dummy_prefix`), spaces become U+2581 and trailing ones are removed.
    """

    def __init__(self, spec, user_defined=(), name=None):
        super().__init__(name=name)
        self.spec = spec
        rules = list(spec.charsmap.items())
        self._rules = matching.Trie([source for source, _ in rules], range(len(rules))) if rules else None
        self._user_defined = matching.Trie(list(user_defined), range(len(user_defined))) if user_defined else None
        with tf.init_scope():
            targets = [[ord(c) for c in target] for _, target in rules]
            self._target_values = tf.constant([c for t in targets for c in t], tf.int32, shape=[sum(map(len, targets))])
            self._target_splits = tf.constant(np.cumsum([0] + [len(t) for t in targets]), tf.int64)
            # Walks start only where a key can match: at a one-character key, or at the first character
            # of a longer key followed by a possible second character.
            keys = [key for key, _ in rules] + list(user_defined)
            flags = np.zeros(0x110000, np.int8)
            for key in keys:
                if len(key) == 1:
                    flags[ord(key)] |= _SINGLE
                else:
                    flags[ord(key[0])] |= _FIRST
                    flags[ord(key[1])] |= _SECOND
            self._flags = tf.constant(flags)
        self.space = _ESCAPED_SPACE if spec.escape_whitespaces else _SPACE
        # With these switches, a line that no rule touches normalizes to "▁" + its space-separated
        # words joined by "▁": `words` then splits it with one string op. A key can match only where
        # a character is a one-character key or the second character of a longer key; U+FFFD may
        # stand for invalid bytes, and U+2581 splits words. Lines made of other characters only are
        # found with one regular expression (invalid UTF-8 never matches it).
        special = flags & (_SINGLE | _SECOND) != 0
        special[[_REPLACEMENT, _ESCAPED_SPACE]] = True
        special[_SPLIT_WHITESPACE] = True  # `tf.strings.split` would split there
        ranges = _ranges(np.nonzero(special)[0])
        self._plain_line = "[^" + "".join(f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in ranges) + "]*"
        self.splits_words = (
            spec.add_dummy_prefix and spec.remove_extra_whitespaces and spec.escape_whitespaces and len(ranges) <= _MAX_RANGES
        )

    def words(self, strings):
        """`[n]` strings -> (words, row splits int64, row ids int64): the words of each normalized
        string, each without the `▁` that starts it. Needs `splits_words`."""
        pool, occurrences, splits, rows = self.word_pool(strings)
        return ops.take(pool, occurrences), splits, rows

    def word_pool(self, strings):
        """`words` as indices into a pool of words: (pool, occurrences int64, row splits int64, row
        ids int64), the words of the strings being `pool[occurrences]`. Needs `splits_words`. The
        pool holds each word once, except that a word of a line normalized here (below) can also be
        the word of a line split as it is.

        Every line is split at spaces as it is, and the split's distinct words are found at once:
        for a line with no character that a rule, a user-defined symbol or the invalid-UTF-8 rule
        could touch (most lines), those are its words. The other lines are normalized meanwhile
        (neither the split nor the distinct-word search waits for them), and their words, read off
        their normalized text, join the pool, their occurrences in place of their split's.
        """
        ruled = ops.indices_where(~self.plain(strings))
        split, _, splits = ops.split_strings(strings)
        distinct, occurrences = tf.unique(split, out_idx=tf.int64)

        any_ruled = tf.size(ruled) > 0
        # An `If` (no run visits its nodes unless taken) that needs only the input, so that the
        # ruled lines are normalized while the split runs.
        ruled_words = ops.rare_cond(
            any_ruled,
            lambda: self.words_of_normalized(*self.normalize(ops.take(strings, ruled)), tf.size(ruled, out_type=tf.int64)),
            lambda: (tf.zeros([0], tf.string), tf.zeros([1], tf.int64)),
        )
        pool, occurrences, splits = tf.cond(
            any_ruled, lambda: _with_ruled_lines(distinct, occurrences, splits, ruled, *ruled_words)[:3], lambda: (distinct, occurrences, splits)
        )
        return pool, occurrences, splits, ops.row_ids(splits)

    def plain(self, strings):
        """Whether each string has no character that a rule, a user-defined symbol or the invalid-UTF-8
        rule could touch, nor one that `tf.strings.split` splits at other than U+0020 (with
        `splits_words`, its words are then its space-separated parts as they are)."""
        return tf.strings.regex_full_match(strings, self._plain_line)

    def words_of_normalized(self, values, value_splits, n):
        """`words` of `n` lines that a split of the input cannot read, from their normalized code
        points (`values`, grouped by `value_splits`): the runs of characters after each `▁` (the
        first at the dummy prefix), empty ones too (after a `▁` of the input that follows a space or
        another `▁`)."""
        size = tf.size(values, out_type=tf.int64)
        is_space = values == self.space
        starts = ops.indices_where(is_space)
        count = tf.size(starts, out_type=tf.int64)
        inner_splits = tf.concat([starts - tf.range(count), [size - count]], axis=0)
        word_lines = ops.take(ops.row_ids(value_splits), starts)
        words = ops.encode_utf8(ops.take(values, ops.indices_where(~is_space)), inner_splits)
        return words, ops.splits_from_row_ids(word_lines, n)

    def normalize(self, strings, offsets=False):
        """`[n]` strings -> (code points int32, row splits int64) of the normalized strings.

        With `offsets`, also where each normalized character comes from and where each text ends, as
        SentencePiece's `norm_to_orig` has them (int64 byte offsets into `strings`): a character
        comes from the start of the chunk (the rewriting step) that wrote it; the dummy prefix from
        the first chunk that is not a lone space (0 if extra whitespace is kept); a text ends at its
        last byte, or at the first of the trailing spaces that were removed.
        """
        code_points, starts, splits = ops.decode_utf8_with_offsets(strings)
        code_points, starts, splits, invalid = ops.rare_cond(
            tf.reduce_any(code_points == _REPLACEMENT),
            lambda: _one_replacement_per_invalid_byte(strings, code_points, starts, splits),
            lambda: (code_points, starts, splits, tf.zeros([0], tf.int64)),
        )
        values, value_splits, chunks, rewritten, on_path = self._rewrite(code_points, splits, invalid)
        n = tf.size(splits, out_type=tf.int64) - 1
        rows = ops.row_ids(ops.take(value_splits, splits))
        nonempty_input = tf.strings.length(strings) > 0
        if not offsets:
            return self._whitespace(values, rows, n, chunks, rewritten, nonempty_input)
        chunk_starts = ops.indices_where(on_path)  # the input position of each chunk
        sources = ops.take(starts, ops.take(chunk_starts, chunks))
        prefix_sources = tf.zeros([n], tf.int64)
        if self.spec.add_dummy_prefix and self.spec.remove_extra_whitespaces:
            # SentencePiece skips the chunks whose output is one space before it adds the prefix.
            size = tf.size(code_points, out_type=tf.int64)
            first_value = ops.take(value_splits, chunk_starts)
            chunk_lengths = ops.take(value_splits, tf.concat([chunk_starts[1:], [size]], axis=0)) - first_value
            lone_space = (chunk_lengths == 1) & (ops.take(tf.concat([values, [0]], axis=0), first_value) == _SPACE)
            chunk_lines = ops.take(ops.row_ids(splits), chunk_starts)
            first_chunk, _ = ops.first_and_last_in_rows(~lone_space, chunk_lines, n)
            first = ops.take(tf.concat([chunk_starts, [size]], axis=0), first_chunk)
            # Lines of lone spaces only normalize to nothing: their prefix goes too.
            prefix_sources = ops.take(tf.concat([starts, [0]], axis=0), tf.minimum(first, size))
        spans = sources, prefix_sources, tf.cast(tf.strings.length(strings), tf.int64)
        return self._whitespace(values, rows, n, chunks, rewritten, nonempty_input, spans)

    def _whitespace(self, values, rows, n, chunks, rewritten, nonempty_input, spans=None):
        """SentencePiece's whitespace rules over the rewritten text, in one compaction.

        With `remove_extra_whitespaces`, a space at the start of a chunk's output (before its first
        other character) goes when the text so far is empty or ends with a space, and spaces at the
        end of the text go (any U+2581, once escaped). `add_dummy_prefix` puts a space symbol first in
        every text that is not empty, unless nothing but spaces would follow it.

        `spans`: (the byte offset each value comes from, that of each text's dummy prefix, and the
        byte length of each text) to return also the offsets of the normalized values and where each
        text ends (see `normalize`).
        """
        spec, space_symbol = self.spec, self.space
        size = tf.size(values)
        first_of_line = rows != tf.concat([[-1], rows], axis=0)[:size]
        keep = tf.ones_like(first_of_line)
        if spec.remove_extra_whitespaces:
            space = values == _SPACE
            after_space = first_of_line | tf.concat([[True], space], axis=0)[:size]
            leading = tf.cond(rewritten, lambda: _leading_in_chunk(space, chunks), lambda: space)
            keep = ~(leading & after_space)
        if spec.escape_whitespaces:
            values = tf.where(values == _SPACE, _ESCAPED_SPACE, values)
        if spans is not None:
            sources, prefix_sources, line_ends = spans
        if spec.remove_extra_whitespaces:
            # Trailing spaces: kept characters after the last kept non-space of their line.
            _, last_other = ops.first_and_last_in_rows(keep & (values != space_symbol), rows, n)
            trailing = keep & (tf.range(size, dtype=tf.int64) > ops.take(last_other, rows))
            keep &= ~trailing
            if spans is not None:
                first_trailing, _ = ops.first_and_last_in_rows(trailing, rows, n)
                line_ends = tf.where(
                    first_trailing < tf.size(trailing, out_type=tf.int64),
                    ops.take(tf.concat([sources, [0]], axis=0), first_trailing),
                    line_ends,
                )
        kept = ops.indices_where(keep)
        values, rows = ops.take(values, kept), ops.take(rows, kept)
        lengths = tf.math.unsorted_segment_sum(tf.ones_like(rows), rows, n)
        if spans is not None:
            sources = ops.take(sources, kept)
        splits = tf.concat([[0], tf.cumsum(lengths)], axis=0)
        if not spec.add_dummy_prefix:
            return (values, splits) if spans is None else (values, splits, sources, line_ends)
        prefixed = nonempty_input & (lengths > 0) if spec.remove_extra_whitespaces else nonempty_input
        values, prefixed_splits = _with_prefixes(values, splits, prefixed, tf.fill([n], tf.constant(space_symbol, tf.int32)))
        if spans is None:
            return values, prefixed_splits
        return values, prefixed_splits, _with_prefixes(sources, splits, prefixed, prefix_sources)[0], line_ends

    def _rewrite(self, code_points, splits, invalid):
        """Apply the user-defined symbols and the character map: (values, splits per input character,
        the chunk - the rewriting step - each value comes from, whether any rule applied, and whether
        each input character starts a chunk). At the positions `invalid` (int64, sorted), U+FFFD stands for an
        invalid byte, which SentencePiece copies as U+FFFD: no rule or symbol applies to it."""
        size = tf.size(code_points)
        positions = tf.range(size)
        unchanged = code_points, tf.range(tf.cast(size, tf.int64) + 1), positions, tf.constant(False), tf.ones([size], tf.bool)
        if self._rules is None and self._user_defined is None:
            return unchanged
        flags = ops.take(self._flags, code_points)
        following = tf.concat([flags[1:], [0]], axis=0)
        initial = tf.bitwise.bitwise_and(flags, _SINGLE) + tf.bitwise.bitwise_and(
            tf.bitwise.bitwise_and(flags, _FIRST) * 2, tf.bitwise.bitwise_and(following, _SECOND)
        ) > 0
        initial = tf.tensor_scatter_nd_update(initial, invalid[:, None], tf.zeros_like(invalid, tf.bool))
        return ops.rare_cond(
            tf.reduce_any(initial), lambda: self._rewrite_rules(code_points, splits, initial, invalid), lambda: unchanged
        )

    def _rewrite_rules(self, code_points, splits, initial, invalid):
        size = tf.size(code_points)
        positions = tf.range(size)
        rows = ops.row_ids(splits)
        line_ends = tf.cast(ops.take(splits[1:], rows), tf.int32)
        # A match ends before an invalid byte (no key holds one).
        limits = tf.cond(
            tf.size(invalid) > 0,
            lambda: tf.minimum(line_ends, ops.take(tf.concat([tf.cast(invalid, tf.int32), [size]], axis=0), tf.searchsorted(tf.cast(invalid, tf.int32), positions))),
            lambda: line_ends,
        )
        line_first = positions == tf.cast(ops.take(splits[:-1], rows), tf.int32)
        roots = tf.where(initial, 0, -1)
        none = -tf.ones_like(code_points)
        user_end = self._user_defined.longest_matches(code_points, roots, limits)[0] if self._user_defined else none
        rule_end, rule = self._rules.longest_matches(code_points, roots, limits) if self._rules else (none, none)
        user = user_end >= 0
        ruled = ~user & (rule_end >= 0)
        ends = tf.where(user, user_end, tf.where(ruled, rule_end, positions + 1))
        # The path of a line ends at the line's end; an invalid byte is on it like any character (with
        # `limits` here, a path stopped before one and dropped the rest of its line, 2026-11-26).
        jumps = tf.where(ends >= line_ends, size, ends)
        longest_line = tf.reduce_max(tf.concat([[0], splits[1:] - splits[:-1]], axis=0))
        on_path = tf.cond(
            tf.reduce_any(ends > positions + 1),  # only matches of several characters hide positions
            lambda: matching.greedy_path(jumps, line_first, longest_line),
            lambda: tf.ones_like(line_first),
        )
        replaced = on_path & ruled
        copied = on_path & ~ruled
        if self._user_defined is not None:
            # The characters of a user-defined symbol on the path are copied as they are.
            user_starts = ops.indices_where(on_path & user)
            marks = tf.scatter_nd(
                tf.concat([user_starts, tf.cast(ops.take(ends, user_starts), tf.int64)], axis=0)[:, None],
                tf.concat([tf.ones_like(user_starts), -tf.ones_like(user_starts)], axis=0),
                tf.cast(size, tf.int64)[None] + 1,
            )
            copied |= tf.cumsum(marks)[:-1] > 0
        # The table: the targets of the rules applied, in order, then the characters. (Only the
        # targets used: all of them, 225,276 for nmt_nfkc, cost more to copy than a batch of lines.)
        applied = ops.indices_where(replaced)
        targets, target_splits = ops.gather_rows(self._target_values, self._target_splits, ops.take(rule, applied))
        # Each value of the table goes with the chunk of the position it stands for.
        chunk_of_position = tf.cumsum(tf.cast(on_path, tf.int32)) - 1
        target_chunks = ops.take(ops.take(chunk_of_position, applied), ops.row_ids(target_splits))
        table_values = tf.stack([tf.concat([targets, code_points], axis=0), tf.concat([target_chunks, chunk_of_position], axis=0)], axis=1)
        # Each position reads a range of the table: its rule's targets, itself, or nothing (one range
        # per position: several times cheaper than a ragged gather of one-value rows).
        bounds = tf.cast(target_splits, tf.int32)
        starts = tf.tensor_scatter_nd_update(bounds[-1] + positions, applied[:, None], bounds[:-1])
        lengths = tf.tensor_scatter_nd_update(tf.cast(copied, tf.int32), applied[:, None], bounds[1:] - bounds[:-1])
        value_splits, index = tf.raw_ops.RaggedRange(starts=starts, limits=starts + lengths, deltas=tf.constant(1), Tsplits=tf.int64)
        values = ops.take(table_values, index)
        return values[:, 0], value_splits, values[:, 1], tf.constant(True), on_path


def _with_prefixes(values, splits, prefixed, prefix_values):
    """Rows (`values`, `splits`) with `prefix_values[i]` put first in each row i where `prefixed[i]`:
    (values, row splits). One gather of whole rows (a scatter of every value costs several times more)."""
    n = tf.size(splits, out_type=tf.int64) - 1
    # Rows of the table: the rows given, then each prefix alone, then an empty row.
    table = tf.concat([values, prefix_values], axis=0)
    table_splits = tf.concat([splits, splits[-1] + tf.range(1, n + 1), splits[-1:] + n], axis=0)
    rows = tf.range(n)
    order = tf.reshape(tf.stack([tf.where(prefixed, n + rows, 2 * n), rows], axis=1), [-1])
    values, value_splits = ops.gather_rows(table, table_splits, order)
    return values, value_splits[::2]


def _with_ruled_lines(distinct, occurrences, splits, ruled, ruled_words, ruled_splits):
    """Words of `n` lines as indices into a pool of distinct words (`distinct`, `occurrences` int64,
    grouped into lines by `splits`), with the `k`-th of the lines at `ruled` having instead the words
    in row `k` of `ruled_words` (grouped by `ruled_splits`) -> (pool, occurrences, line splits,
    positions): the pool with the ruled lines' distinct words added, and for each word of the lines
    its index in the pool and its position among the words of `splits` followed by the ruled ones."""
    ruled_distinct, ruled_occurrences = tf.unique(ruled_words, out_idx=tf.int64)
    n = tf.size(splits, out_type=tf.int64) - 1
    table_splits = tf.concat([splits, splits[-1] + ruled_splits[1:]], axis=0)
    rows = tf.tensor_scatter_nd_update(tf.range(n), ruled[:, None], n + tf.range(tf.size(ruled, out_type=tf.int64)))
    line_splits, positions = tf.raw_ops.RaggedRange(
        starts=ops.take(table_splits[:-1], rows), limits=ops.take(table_splits[1:], rows), deltas=tf.constant(1, tf.int64)
    )
    table = tf.concat([occurrences, tf.size(distinct, out_type=tf.int64) + ruled_occurrences], axis=0)
    return tf.concat([distinct, ruled_distinct], axis=0), ops.take(table, positions), line_splits, positions


def _ranges(sorted_values):
    """Sorted distinct ints -> the (first, last) of each run of consecutive ones."""
    if not len(sorted_values):
        return []
    breaks = np.nonzero(np.diff(sorted_values) > 1)[0]
    firsts = np.concatenate([[sorted_values[0]], sorted_values[breaks + 1]])
    lasts = np.concatenate([sorted_values[breaks], [sorted_values[-1]]])
    return list(zip(firsts.tolist(), lasts.tolist()))


def _one_replacement_per_invalid_byte(strings, code_points, starts, splits):
    """TensorFlow reads a truncated sequence as one U+FFFD; SentencePiece reads one per byte. Returns
    the code points, the byte offset where each starts, the row splits, and the positions (int64,
    sorted) of the U+FFFD that stand for invalid bytes."""
    size = tf.size(code_points, out_type=tf.int64)
    rows = ops.row_ids(splits)
    lengths = tf.cast(tf.strings.length(strings), tf.int64)
    next_starts = tf.concat([starts[1:], [0]], axis=0)
    last = tf.range(size) == ops.take(splits[1:], rows) - 1
    byte_lengths = tf.where(last, ops.take(lengths, rows), next_starts) - starts
    suspects = ops.indices_where((code_points == _REPLACEMENT) & (byte_lengths != 3))
    genuine_three = ops.indices_where((code_points == _REPLACEMENT) & (byte_lengths == 3))
    # A three-byte error (a truncated four-byte sequence) is not the character U+FFFD itself.
    three_starts = ops.take(starts, genuine_three)
    bytes_of_three = tf.strings.substr(
        ops.take(strings, ops.take(rows, genuine_three)), three_starts, tf.fill(tf.shape(three_starts), tf.constant(3, tf.int64))
    )
    false_three = ops.take(genuine_three, ops.indices_where(bytes_of_three != "\ufffd"))
    invalid = tf.concat([suspects, false_three], axis=0)
    repeats = tf.tensor_scatter_nd_update(tf.ones([size], tf.int64), invalid[:, None], ops.take(byte_lengths, invalid))
    expanded_splits = tf.concat([[0], tf.cumsum(repeats)], axis=0)
    # The k-th replacement of an invalid sequence starts at its k-th byte.
    expanded_starts = tf.repeat(starts - expanded_splits[:-1], repeats) + tf.range(expanded_splits[-1])
    from_invalid = tf.scatter_nd(invalid[:, None], tf.ones_like(invalid, tf.bool), [size])
    expanded_invalid = ops.indices_where(tf.repeat(from_invalid, repeats))
    return tf.repeat(code_points, repeats), expanded_starts, ops.take(expanded_splits, splits), expanded_invalid


def _leading_in_chunk(space, chunks):
    """Whether each space comes before the first other character of its chunk."""
    size = tf.size(space)
    index = tf.range(size)
    n_chunks = tf.reduce_max(tf.concat([[-1], chunks], axis=0)) + 1
    first_other = tf.math.unsorted_segment_min(tf.where(space, size, index), chunks, n_chunks)
    return space & (index < ops.take(first_other, chunks))


@keras.saving.register_keras_serializable(package="tfsubword")
class UnigramLayer(TokenizerLayer):
    """Tokenize text with a unigram language model, exactly as SentencePiece does.

    The text is normalized (SentencePiece's normalizer: its character map, whitespace handling and
    `▁` marks), then split into the pieces of highest total log-probability (Viterbi). Everything runs
    on core TensorFlow ops, so a model that contains this layer serves wherever plain TensorFlow runs.

    Args:
        vocabulary: one of
            - the path or the bytes of a SentencePiece `.model` file of type unigram (its normalizer,
              piece types and scores are used as they are);
            - a list of `(piece, log_probability)` pairs, or the path of a `piece<TAB>score` file (as
              SentencePiece's `.vocab` files), normalized by the `normalization` rules;
              `unknown_token` must be a piece, `control_tokens` are never produced from text.
        normalization: the character rules of a list vocabulary: "identity" (the text is not
            rewritten), "nmt_nfkc" or "nfkc", as `train_unigram`'s (see `tfsubword.normalization_rules`).
            Defaults to "identity". A `.model` file carries its own rules.
        unknown_token: str. The unknown piece of a list vocabulary. Defaults to "<unk>".
        control_tokens: the control pieces of a list vocabulary. Defaults to ("<s>", "</s>", "<pad>").
        add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces: bool, the normalizer's switches
            for a list vocabulary. Default True, as SentencePiece.
        sequence_length: int or None. If set, outputs are dense, padded with the id of "<pad>" (0 if
            absent). Defaults to None (ragged).
        dtype: an integer dtype, or "string" to return pieces instead of ids. Defaults to "int32".

    Examples:

    >>> vocab = [("<unk>", 0.0), ("▁the", -1.0), ("▁", -2.0), ("t", -3.0), ("h", -3.0), ("e", -3.0)]
    >>> layer = UnigramLayer(vocab)
    >>> layer("the  het").numpy()
    array([1, 2, 4, 5, 3], dtype=int32)
    """

    _pad_token = "<pad>"

    def __init__(
        self,
        vocabulary=None,
        *,
        unknown_token="<unk>",
        control_tokens=("<s>", "</s>", "<pad>"),
        normalization="identity",
        add_dummy_prefix=True,
        remove_extra_whitespaces=True,
        escape_whitespaces=True,
        sequence_length=None,
        dtype="int32",
        **kwargs,
    ):
        if not isinstance(unknown_token, str) or not unknown_token:
            raise ValueError(f"`unknown_token` must be a non-empty str. Received: unknown_token={unknown_token!r}.")
        for name, value in (
            ("add_dummy_prefix", add_dummy_prefix),
            ("remove_extra_whitespaces", remove_extra_whitespaces),
            ("escape_whitespaces", escape_whitespaces),
        ):
            if not isinstance(value, bool):
                raise ValueError(f"`{name}` must be True or False. Received: {name}={value!r}.")
        self.normalization = normalization_rules.check_name(normalization)
        self.unknown_token = unknown_token
        self.control_tokens = tuple(control_tokens)
        self.add_dummy_prefix = add_dummy_prefix
        self.remove_extra_whitespaces = remove_extra_whitespaces
        self.escape_whitespaces = escape_whitespaces
        super().__init__(vocabulary, sequence_length=sequence_length, dtype=dtype, **kwargs)

    # Vocabulary.

    def _load_vocabulary(self, vocabulary):
        model = self._as_model(vocabulary)
        if model.model_type != "unigram":
            raise ValueError(f"UnigramLayer needs a unigram model; this SentencePiece model is of type {model.model_type!r}.")
        if model.treat_whitespace_as_suffix:
            raise ValueError("SentencePiece models with `treat_whitespace_as_suffix` are not supported yet.")
        pieces = [piece for piece, _, _ in model.pieces]
        _check_byte_pieces(model)
        seen = {}
        for index, (piece, score, _) in enumerate(model.pieces):
            if piece in seen:
                raise ValueError(f"The vocabulary contains the piece {piece!r} twice, at ids {seen[piece]} and {index}.")
            if not np.isfinite(np.float32(score)):
                # SentencePiece refuses such models too (0.2.3: "score is NaN or Inf").
                raise ValueError(f"The piece {piece!r} (id {index}) has a score that is not finite in single precision: {score!r}.")
            # SentencePiece refuses these too ("piece is too long", "piece must not include null character").
            if len(piece.encode("utf-8")) >= _MAX_PIECE_BYTES:
                raise ValueError(f"The piece at id {index} has {len(piece.encode('utf-8'))} UTF-8 bytes; pieces must have fewer than {_MAX_PIECE_BYTES}.")
            if "\0" in piece:
                raise ValueError(f"The piece {piece!r} (id {index}) contains a NUL character.")
            seen[piece] = index
        unknown = [index for index, (_, _, kind) in enumerate(model.pieces) if kind == spm_model.UNKNOWN]
        if len(unknown) != 1:
            raise ValueError(f"A unigram vocabulary needs exactly one unknown piece; this one has {len(unknown)}.")
        self._model = model
        return pieces

    def _as_model(self, vocabulary):
        if isinstance(vocabulary, spm_model.Model):
            return vocabulary
        if isinstance(vocabulary, (bytes, bytearray)):
            return spm_model.load(vocabulary)
        if isinstance(vocabulary, (str, os.PathLike)):
            if not os.path.isfile(vocabulary):
                raise ValueError(f"`vocabulary` is not a file: {os.fspath(vocabulary)!r}.")
            with open(vocabulary, "rb") as file:
                data = file.read()
            if _looks_like_text(data):
                return self._model_from_pairs(_read_scores(data, vocabulary))
            return spm_model.load(data)
        try:
            pairs = [tuple(pair) for pair in vocabulary]
        except TypeError:
            raise ValueError(
                "`vocabulary` must be a SentencePiece model (path or bytes), a list of (piece, log_probability) "
                f"pairs or the path of a piece<TAB>score file. Received: {vocabulary!r}."
            ) from None
        return self._model_from_pairs(pairs)

    def _model_from_pairs(self, pairs):
        if not pairs:
            raise ValueError("`vocabulary` is empty.")
        pieces = []
        for index, pair in enumerate(pairs):
            if len(pair) != 2 or not isinstance(pair[0], str) or not pair[0]:
                raise ValueError(f"`vocabulary` entry {index} must be a (piece, log_probability) pair. Received: {pair!r}.")
            piece, score = pair
            try:
                score = float(score)
            except (TypeError, ValueError):
                raise ValueError(f"`vocabulary` entry {index} has a score that is not a number: {score!r}.") from None
            kind = (
                spm_model.UNKNOWN
                if piece == self.unknown_token
                else spm_model.CONTROL if piece in self.control_tokens else spm_model.NORMAL
            )
            with np.errstate(over="ignore"):  # a score beyond single precision is refused below
                pieces.append((piece, float(np.float32(score)), kind))
        if self.unknown_token not in {piece for piece, _, _ in pieces}:
            raise ValueError(f"The vocabulary does not contain the unknown token {self.unknown_token!r}.")
        normalizer = spm_model.Normalizer(
            name=self.normalization,
            charsmap=normalization_rules.charsmap(self.normalization),
            add_dummy_prefix=self.add_dummy_prefix,
            remove_extra_whitespaces=self.remove_extra_whitespaces,
            escape_whitespaces=self.escape_whitespaces,
        )
        return spm_model.Model(pieces=pieces, normalizer=normalizer)

    def get_scores(self):
        """The log-probability (score) of every piece, as a list of float; ids are positions."""
        self._require_vocabulary()
        return [score for _, score, _ in self._model.pieces]

    def serialized_model(self):
        """The vocabulary as the bytes of a SentencePiece `.model` file."""
        self._require_vocabulary()
        model = self._model
        if not model.serialized:  # a list vocabulary: its rules are encoded when first needed (seconds)
            normalizer = model.normalizer
            if normalizer.charsmap and not normalizer.precompiled_charsmap:
                normalizer = dataclasses.replace(
                    normalizer, precompiled_charsmap=normalization_rules.precompiled_charsmap(normalizer.name)
                )
            model.serialized = spm_model.serialize(model.pieces, normalizer)
        return model.serialized

    def _build(self, pieces):
        model = self._model
        kinds = np.array([kind for _, _, kind in model.pieces])
        scores = np.array([score for _, score, _ in model.pieces], np.float32)
        normal = kinds == spm_model.NORMAL
        min_score = np.float32(min(_FLT_MAX, scores[normal].min())) if normal.any() else np.float32(_FLT_MAX)
        self._unknown_id = int(np.nonzero(kinds == spm_model.UNKNOWN)[0][0])
        # The score of each piece on a path, as SentencePiece 0.2.3 gives it: a user-defined piece of
        # n UTF-8 bytes gets 0.1 * (n - 1) (single precision), unknown characters min_score - 10.
        path_scores = scores.copy()
        for index in np.nonzero(kinds == spm_model.USER_DEFINED)[0]:
            path_scores[index] = np.float32(0.1 * (len(pieces[index].encode("utf-8")) - 1))
        path_scores[self._unknown_id] = np.float32(min_score - _UNK_PENALTY)
        matched = np.nonzero((kinds == spm_model.NORMAL) | (kinds == spm_model.USER_DEFINED))[0]
        self._max_piece_chars = max([len(pieces[i]) for i in matched] + [1])
        space = SPACE_SYMBOL if model.normalizer.escape_whitespaces else " "
        # Words can be segmented one by one when no piece holds a space symbol after its start.
        by_words = not any(space in pieces[i][1:] for i in matched)
        # The normalized characters each piece covers; the unknown piece covers one, before merging.
        piece_chars = np.array([len(piece) for piece in pieces], np.int64)
        piece_chars[self._unknown_id] = 1
        # With byte fallback, an unknown character becomes the byte pieces of its UTF-8 instead.
        byte_ids = [pieces.index(_byte_piece(byte)) for byte in range(256)] if model.byte_fallback else None
        with tf.init_scope():
            # For decoding: the kind of each piece that is not decoded as text.
            special = [(piece, kind) for piece, _, kind in model.pieces if kind in (spm_model.CONTROL, spm_model.UNKNOWN, spm_model.BYTE)]
            self._piece_kinds = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer([p for p, _ in special], tf.constant([k for _, k in special], tf.int32)),
                spm_model.NORMAL,
            )
            if model.byte_fallback:
                self._bytes_of_pieces = tf.lookup.StaticHashTable(
                    tf.lookup.KeyValueTensorInitializer([_byte_piece(b) for b in range(256)], [bytes([b]) for b in range(256)]), ""
                )
        self._viterbi = Viterbi(
            [pieces[i] for i in matched], matched, path_scores, self._unknown_id, self._max_piece_chars, piece_chars, byte_ids,
            ord(space) if by_words else None,
        )
        user_defined = [pieces[i] for i in np.nonzero(kinds == spm_model.USER_DEFINED)[0]]
        self._normalizer = SentencePieceNormalizer(model.normalizer, user_defined)
        # For offsets of words: which pieces start a word; the unknown piece does not if `▁` is a piece.
        self._starts_word = None
        if space in {pieces[i] for i in matched}:
            starts_word = np.zeros(len(pieces), bool)
            starts_word[matched] = [pieces[i].startswith(space) for i in matched]
            with tf.init_scope():
                self._starts_word = tf.constant(starts_word)

    # Encoding.

    def _tokenize_strings(self, strings):
        normalizer = self._normalizer
        if normalizer.splits_words and self._viterbi.by_words:
            pool, occurrences, word_splits, word_lines = normalizer.word_pool(strings)
            ids, id_splits = self._viterbi.segment_words(pool, word_splits, word_lines, occurrences=occurrences)
        else:
            ids, id_splits = self._viterbi(*normalizer.normalize(strings))
        return tf.RaggedTensor.from_row_splits(ids, id_splits, validate=False)

    def _tokenize_strings_with_offsets(self, strings):
        # A piece spans from the source of its first normalized character to that of the character
        # after it (or the end of its text), as SentencePiece's begin and end.
        if self._normalizer.splits_words and self._viterbi.by_words:
            return _as_ragged(*self._offsets_of_words(strings))
        return _as_ragged(*self._offsets_of_normalized(strings))

    def _offsets_of_words(self, strings):
        """`_offsets_of_normalized` by words, as `SentencePieceNormalizer.word_pool` finds them: a
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
        tokens, token_lines, token_splits = ops.split_strings(strings, sep=" ")  # "" before, between and after spaces
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
            ruled_words, ruled_splits = normalizer.words_of_normalized(values, value_splits, tf.size(ruled, out_type=tf.int64))
            pool, occurrences, splits, at = _with_ruled_lines(*plain[:3], ruled, ruled_words, ruled_splits)
            # A ruled line's words are placed by `sources`: no spans in the line.
            no_spans = tf.zeros([tf.size(ruled_words), 2], tf.int64)
            return pool, occurrences, splits, ops.take(tf.concat([spans, no_spans], axis=0), at), sources, value_splits, line_ends

        # Inlined, not `ops.rare_cond`: most large batches have ruled lines.
        pool, occurrences, word_splits, spans, sources, source_splits, line_ends = tf.cond(tf.size(ruled) > 0, with_ruled_lines, lambda: plain)
        word_starts, word_ends = tf.unstack(spans, axis=1)
        word_lines = ops.row_ids(word_splits)
        ids, id_splits, distinct = self._viterbi.segment_words(
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
        occurrence = distinct["occurrence"]
        word_values = ops.take(distinct["splits"], occurrence)  # where each word's characters start
        word_chars = ops.take(distinct["splits"][1:], occurrence) - word_values
        char_splits = tf.concat([[0], tf.cumsum(word_chars)], axis=0)  # and in the lines, all in turn
        chars = ops.take(self._viterbi.piece_chars, ids)
        piece_starts = tf.cumsum(chars, exclusive=True)
        if self._starts_word is not None:
            starts_word = ops.take(self._starts_word, ids)
        else:
            starts_word = ops.take(tf.scatter_nd(char_splits[:-1, None], tf.ones_like(word_chars), char_splits[-1:]), piece_starts) > 0
        word = tf.cumsum(tf.cast(starts_word, tf.int64)) - 1
        # Per word: the source of its `▁`, and where a table holds those of its characters (plus a
        # number to add). In a plain line, the table holds the byte where each character of the
        # distinct words starts in its word (after a `▁` of 3 bytes).
        first_in_line = tf.range(tf.size(word_lines, out_type=tf.int64)) == ops.take(word_splits, word_lines)
        space_sources = tf.where(first_in_line, word_starts, tf.concat([[0], word_ends[:-1]], axis=0))
        in_word = distinct["starts"] - len(SPACE_SYMBOL.encode())
        to_distinct = word_values - char_splits[:-1]  # a character's index among the distinct words' ones, less its own
        # Where each line ends: at the end of its last word (where trailing spaces start).
        has_words = ops.indices_where(word_splits[1:] > word_splits[:-1])
        line_ends_at = tf.scatter_nd(has_words[:, None], ops.take(word_ends, ops.take(word_splits, has_words + 1) - 1), [n])

        def in_ruled_lines():
            # In a ruled line, the table is `sources`, from the line's `▁` that starts each word. Only
            # the words of those lines (few) are read, and written over the plain lines' values.
            first, limit = ops.take(word_splits, ruled), ops.take(word_splits, ruled + 1)
            k, place = ops.row_ids_and_places(tf.concat([[0], tf.cumsum(limit - first)], axis=0))  # of each word: its line's rank
            line_first = ops.take(first, k)
            words = line_first + place
            line_start = ops.take(source_splits, k) - ops.take(char_splits, line_first)
            ruled_words = (
                ops.take(sources, line_start + ops.take(char_splits, words)),
                tf.size(in_word, out_type=tf.int64) + line_start,
                tf.zeros_like(words),
            )
            plain_words = (space_sources, to_distinct, word_starts)
            ruled_words = tuple(tf.tensor_scatter_nd_update(p, words[:, None], r) for r, p in zip(ruled_words, plain_words))
            return ruled_words + (tf.tensor_scatter_nd_update(line_ends_at, ruled[:, None], line_ends),)

        space_sources, to_table, added, line_ends_at = tf.cond(
            tf.size(ruled) > 0, in_ruled_lines, lambda: (space_sources, to_distinct, word_starts, line_ends_at)
        )
        table = tf.concat([in_word, sources], axis=0)
        starts = tf.where(starts_word, ops.take(space_sources, word), ops.take(added, word) + ops.take(table, ops.take(to_table, word) + piece_starts))
        # Within a word, a piece ends at its next character's source; at the end of a word, at the
        # next `▁`'s source: where the next piece starts.
        ends = _ends_at_next_starts(starts, id_splits, line_ends_at)
        characters = None
        if self._viterbi.byte_ids is not None:
            characters = ops.take(distinct["values"], ops.take(to_distinct, word) + piece_starts)
        return self._unknown_spans(ids, id_splits, starts, ends, characters)

    def _offsets_of_normalized(self, strings):
        """`[n]` strings -> (ids int32, starts int64, ends int64, row splits int64) of their pieces:
        every text goes through the whole normalizer, which says where each character comes from."""
        values, splits, sources, line_ends = self._normalizer.normalize(strings, offsets=True)
        ids, id_splits = self._viterbi(values, splits, merge=False)
        return self._spans(ids, id_splits, values, sources, line_ends)

    def _spans(self, ids, id_splits, values, sources, line_ends):
        """Pieces (ids, row splits; unknown ones one per character) over normalized texts (their
        code points `values`, needed with byte fallback only) -> (ids, starts, ends, row splits) as
        SentencePiece gives them. `sources`: where each normalized character
        comes from; `line_ends`: where each text ends."""
        # The pieces of each text cover it in order, so where each starts is a running sum over all texts.
        first = tf.cumsum(ops.take(self._viterbi.piece_chars, ids), exclusive=True)
        starts = ops.take(sources, first)
        # A piece ends at the source of the character after it, where the next piece starts.
        ends = _ends_at_next_starts(starts, id_splits, line_ends)
        characters = ops.take(values, first) if self._viterbi.byte_ids is not None else None
        return self._unknown_spans(ids, id_splits, starts, ends, characters)

    def _unknown_spans(self, ids, id_splits, starts, ends, characters):
        """Pieces with unknown ones one per character, with their spans -> the same as SentencePiece
        gives them: with byte fallback, each unknown one becomes the byte pieces of its character
        (`characters`: the first character of each piece); otherwise consecutive ones become one."""
        viterbi = self._viterbi
        if viterbi.byte_ids is not None:
            # The byte pieces of an unknown character: all but the last are empty, at its start.
            ids, new_splits, old, last = _unknowns_as_bytes(ids, characters, self._unknown_id, viterbi.byte_ids)
            starts = ops.take(starts, old)
            ends = tf.where(last, ops.take(ends, old), starts)
            return ids, starts, ends, ops.take(new_splits, id_splits)
        # Consecutive unknown pieces become one, from the start of the first to the end of the last.
        merged = _merged_unknowns(ids, id_splits, self._unknown_id)
        dropped = ops.indices_where(merged)

        def merge():
            kept = ops.indices_where(~merged)
            # A run's first piece ends where its last does. Runs of dropped pieces are consecutive:
            # the j-th dropped piece d follows d - j kept ones, the run's first the last of them.
            last = ops.indices_where(tf.concat([dropped[1:] - dropped[:-1] > 1, [True]], axis=0))
            run_ends = ops.take(dropped, last)
            ends_kept = tf.tensor_scatter_nd_update(ops.take(ends, kept), (run_ends - last - 1)[:, None], ops.take(ends, run_ends))
            return ops.take(ids, kept), ops.take(starts, kept), ends_kept

        ids, starts, ends = ops.rare_cond(tf.size(dropped) > 0, merge, lambda: (ids, starts, ends))
        return ids, starts, ends, _less_dropped(id_splits, dropped)

    def _detokenize_tokens(self, tokens):
        """Pieces -> text as SentencePiece decodes it: control pieces vanish, the unknown piece is
        " \u2047 ", byte pieces are their bytes (those that form no valid UTF-8: one U+FFFD each),
        and `▁` is a space, except the first `▁` of the first piece that writes something (with
        `remove_extra_whitespaces`, also of the lone `▁` pieces before it)."""
        flat, rows = tokens.flat_values, tokens.value_rowids()
        spec = self._model.normalizer
        kind = self._piece_kinds.lookup(flat)
        normal = kind == spm_model.NORMAL
        index = tf.range(tf.size(flat, out_type=tf.int64))
        lone_space = normal & (flat == SPACE_SYMBOL)
        skipped = kind == spm_model.CONTROL
        if spec.remove_extra_whitespaces:
            skipped |= lone_space
        first = ops.take(
            tf.math.unsorted_segment_min(tf.where(skipped, tf.size(flat, out_type=tf.int64), index), rows, tokens.nrows()), rows
        )
        starts_with_space = normal & tf.strings.regex_full_match(flat, SPACE_SYMBOL + ".*")
        dropped = starts_with_space & (index == first) if spec.add_dummy_prefix or spec.remove_extra_whitespaces else tf.zeros_like(normal)
        if spec.remove_extra_whitespaces:
            dropped |= lone_space & (index < first)
        text = tf.where(dropped, tf.strings.regex_replace(flat, "^" + SPACE_SYMBOL, ""), flat)
        text = tf.where(normal, tf.strings.regex_replace(text, SPACE_SYMBOL, " "), text)
        text = tf.where(kind == spm_model.CONTROL, "", tf.where(kind == spm_model.UNKNOWN, " \u2047 ", text))
        if self._model.byte_fallback:
            text = tf.where(kind == spm_model.BYTE, self._bytes_of_pieces.lookup(flat), text)
        text = tf.strings.reduce_join(tokens.with_flat_values(text), axis=-1)
        if self._model.byte_fallback:
            code_points, starts, splits = ops.decode_utf8_with_offsets(text)
            code_points, _, splits, _ = _one_replacement_per_invalid_byte(text, code_points, starts, splits)
            text = ops.encode_utf8(code_points, splits)
        return text

    # Saving.

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "unknown_token": self.unknown_token,
                "control_tokens": list(self.control_tokens),
                "normalization": self.normalization,
                "add_dummy_prefix": self.add_dummy_prefix,
                "remove_extra_whitespaces": self.remove_extra_whitespaces,
                "escape_whitespaces": self.escape_whitespaces,
            }
        )
        return config

    def save_assets(self, dir_path):
        self._require_vocabulary()
        vocab_lib.write_atomically(os.path.join(dir_path, _MODEL_ASSET), self.serialized_model())

    def load_assets(self, dir_path):
        with open(os.path.join(dir_path, _MODEL_ASSET), "rb") as file:
            self.set_vocabulary(file.read())


class Viterbi(tf.Module):
    """The best segmentation of texts into pieces, exactly as SentencePiece's unigram encoder.

    For each position, the best score of a path ending there: the largest of (the score of a piece
    ending there + the best score where it starts), in single precision, the earliest start winning
    ties (SentencePiece visits candidates by increasing start and replaces only on a strictly larger
    score; `test_single_precision_rule_on_near_ties` holds this rule to SentencePiece on vocabularies
    full of near-ties, where a double-precision rule decides differently). A character that starts no
    single-character piece is an unknown piece of its own; consecutive unknown pieces are then merged
    into one. This is SentencePiece 0.2.3's encoder (0.2.1 and earlier compare in double precision
    and score user-defined pieces otherwise). It also restarts its scores from 0 whenever the best
    score at the start it is about to extend passes 100,000 in magnitude (in long lines: 10,000
    pieces or so): that score is subtracted from every score reached so far from there on, which
    changes how later sums round. The loop does the same. The subtraction is exact (Sterbenz) as
    long as no path across a few pieces moves by more than 100,000: every score below 100,000 /
    (2 * longest piece) in magnitude, true of any trained model.

    Rows run in parallel, one position per loop iteration. Lines are long, so when no piece holds a
    space symbol after its first character (then every path passes through each word start), the
    distinct words are segmented instead, in double precision, with the gap between the best and the
    second-best candidate at each position of each best path (few short words, as in a text or two,
    by `_unrolled_paths`, whose graph has a few ops per position instead of a loop's dozens per
    iteration, with the same results). Single precision with an offset B (the
    score of the line before the word) can change a decision only if that gap is within the rounding
    error, at most (word length + 1) ulps at |B| + the word's scores. A word that close to a tie
    (rare: ties between equal pieces in another order, like "......") is segmented again alone, in
    single precision from B as SentencePiece has it: the scores of the pieces before it added in
    order, and the words before it that are fragile too or where a restart could happen segmented
    exactly, one by one, from the score before each (one loop step per such word of a line, for all
    lines at once; a line is not segmented whole, which would take a step per character). With
    restarts, no score exceeds 100,000 + the largest score magnitude, which bounds the ulps of the
    check.
    """

    def __init__(self, keys, ids, path_scores, unknown_id, max_piece_chars, piece_chars, byte_ids=None, space=None, name=None):
        super().__init__(name=name)
        self._trie = matching.Trie(keys, ids)
        self._unknown_id = int(unknown_id)
        self._width = int(max_piece_chars)
        self._space = space
        self.by_words = space is not None
        self._max_score_magnitude = float(np.max(np.abs(path_scores))) if len(path_scores) else 0.0
        # No score on a path in SentencePiece exceeds this in magnitude (past _RESET, it restarts).
        self._largest_score = (_RESET + self._max_score_magnitude) * (1 + 1e-6) + 1
        self._half_ulp = float(np.spacing(np.float32(self._largest_score))) / 2  # of any single-precision sum
        with tf.init_scope():
            # Read at id + 1: first the score of no piece (the lowest finite value), for `matches_by_end`.
            self._scores = {
                dtype: tf.constant(np.concatenate([[dtype.min], path_scores]), dtype, shape=[len(path_scores) + 1])
                for dtype in (tf.float32, tf.float64)
            }
            # The characters of each piece (the unknown piece: one), and the ids of the byte pieces.
            self.piece_chars = tf.constant(piece_chars, tf.int64, shape=[len(piece_chars)])
            self.byte_ids = None if byte_ids is None else tf.constant(byte_ids, tf.int32, shape=[256])
            if self.by_words:
                # The pairs of characters side by side in a piece, as `_pair_keys`, for `_cut_words`:
                # no piece crosses between two characters that are not one of them. (A hash table:
                # 170,000 keys took half the time of a binary search in 5,000 sorted ones.)
                # Then a key that no pair has, since a table cannot be empty.
                pairs = sorted({(ord(key[i - 1]) << _CODE_POINT_BITS) | ord(key[i]) for key in keys for i in range(1, len(key))})
                pairs.append(1 << (2 * _CODE_POINT_BITS))
                self._pairs = tf.lookup.StaticHashTable(
                    tf.lookup.KeyValueTensorInitializer(tf.constant(pairs, tf.int64, shape=[len(pairs)]), tf.ones([len(pairs)], tf.int32)), 0
                )
                # The pieces as strings, for `_unrolled_paths`.
                keys, ids = tf.constant(list(keys), tf.string, shape=[len(keys)]), tf.constant(ids, tf.int32, shape=[len(ids)])
                self._ids = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, ids), -1)

    def __call__(self, code_points, splits, merge=True):
        """Normalized texts (code points, row splits) -> (ids int32, row splits int64). Without
        `merge`, each unknown character stays an unknown piece of its own (see `_unknowns`)."""
        if self._space is None:
            ids, id_splits = self._exact(code_points, splits, merge)
        else:
            starts, word_splits = _word_starts(code_points, splits, self._space)
            ends = tf.concat([starts[1:], [tf.size(code_points, out_type=tf.int64)]], axis=0)
            words = ops.encode_utf8(code_points, tf.concat([starts, ends[-1:]], axis=0))
            word_lines = ops.row_ids(word_splits)
            ids, id_splits = self._by_words(words, word_splits, word_lines, prefix="", merge=merge)
        return ids, id_splits

    def segment_words(self, words, word_splits, word_lines, merge=True, distinct=False, occurrences=None):
        """Words without their leading `▁` (as `SentencePieceNormalizer.words` gives them), grouped
        into lines by `word_splits` (and `word_lines`, the line of each) -> (ids int32, row splits
        int64). With `occurrences` (int64), the words are `words[occurrences]`, as
        `SentencePieceNormalizer.word_pool` gives them: `words` is then segmented as it is, each
        of its words once (it should hold few repeats). With `distinct`, also the distinct words
        (the words segmented) with their `▁`: a dict of their code points ("values", int32), the
        byte where each starts in its word ("starts", int64), their row splits ("splits") and the
        distinct word of each word ("occurrence", int64).

        Without `distinct`, given `occurrences`, words longer than `_CUT_WORDS_LONGER_THAN` (text
        without spaces) are first cut between each two characters that no piece holds side by side:
        no piece crosses there, so every path passes through those places, as through word starts,
        and the parts are segmented as words are."""
        space = chr(self._space)
        if distinct or occurrences is None:
            return self._by_words(
                words, word_splits, word_lines, prefix=space, merge=merge, distinct=distinct, occurrences=occurrences
            )
        words = tf.strings.join([space, words])
        longest = tf.reduce_max(tf.concat([[0], tf.strings.length(words)], axis=0))
        words, occurrences, word_splits, word_lines = ops.rare_cond(
            longest > _CUT_WORDS_LONGER_THAN,
            lambda: self._cut_words(words, occurrences, word_splits),
            lambda: (words, occurrences, word_splits, word_lines),
        )
        return self._by_words(words, word_splits, word_lines, prefix="", merge=merge, occurrences=occurrences)

    def _cut_words(self, words, occurrences, word_splits):
        """`segment_words`' cut: words (with their `▁`), the word of each occurrence and the line
        splits of the occurrences -> the same for the parts, the parts' distinct strings as words.
        Only the words that occur are cut: the pool also holds the words of lines as split before
        they were normalized (see `SentencePieceNormalizer.word_pool`), which in text without spaces
        are whole lines that nothing reads (in the Japanese novel, half of the characters)."""
        used, occurrences = tf.unique(occurrences, out_idx=tf.int64)
        # Decoded in halves, which run at once (one thread each).
        values, splits = ops.ragged_in_halves(ops.decode_utf8, ops.take(words, used))
        size = tf.size(values, out_type=tf.int64)
        # Each character with the one before it (the first of all: with code point 0, which a cut
        # before a `▁` makes moot).
        apart = self._pairs.lookup(_pair_keys(tf.concat([[0], values[:-1]], axis=0), values)) == 0
        # Also before each `▁` (no piece holds one after its start), which starts every word.
        starts = ops.indices_where(apart | (values == self._space))
        # (Encoded and made distinct in halves that run at once: 1.04x on the novel, as noisy as on
        # wikitext, which takes no cut; not kept.)
        distinct_parts, part = tf.unique(ops.encode_utf8(values, tf.concat([starts, [size]], axis=0)), out_idx=tf.int64)
        # The parts of each word: a range of `parts`, from the part where the word starts.
        part_splits = tf.searchsorted(starts, splits, out_type=tf.int64)
        part_of_occurrence, occurrence_splits = ops.gather_rows(part, part_splits, occurrences)
        line_splits = ops.take(occurrence_splits, word_splits)
        return distinct_parts, part_of_occurrence, line_splits, ops.row_ids(line_splits)

    def _exact(self, code_points, splits, merge=True):
        paths = self._best_paths(code_points, splits, tf.float32)
        ids_splits = ops.splits_from_row_ids(paths["rows"], tf.size(splits, out_type=tf.int64) - 1)
        return self._unknowns(paths["piece"], ids_splits, code_points) if merge else (paths["piece"], ids_splits)

    def _unknowns(self, ids, splits, code_points):
        """Unknown pieces (one per character) as SentencePiece gives them: consecutive ones merged
        into one, or with byte fallback each replaced by the byte pieces of its character's UTF-8.
        `code_points`: the text the rows of pieces cover."""
        if self.byte_ids is None:
            return _merge_unknowns(ids, splits, self._unknown_id)
        # The pieces cover their rows in order: a running sum of their lengths says where each starts.
        characters = ops.take(code_points, tf.cumsum(ops.take(self.piece_chars, ids), exclusive=True))
        ids, piece_splits, _, _ = _unknowns_as_bytes(ids, characters, self._unknown_id, self.byte_ids)
        return ids, ops.take(piece_splits, splits)

    def _by_words(self, words, line_word_splits, word_lines, prefix, merge=True, distinct=False, occurrences=None):
        if occurrences is None:
            distinct_words, occurrence = tf.unique(words, out_idx=tf.int64)
        else:
            distinct_words, occurrence = words, occurrences
        n_distinct = tf.size(distinct_words, out_type=tf.int64)
        decode = ops.decode_utf8_with_offsets if distinct else ops.decode_utf8

        def decoded(words):
            return decode(tf.strings.join([prefix, words]) if prefix else words)

        # Decoded in halves, which run at once: one decode (one thread) took 1.3 ms of 1,024 lines' 22.
        # (code points, [byte starts if `distinct`], row splits)
        decoded_words = ops.ragged_in_halves(decoded, distinct_words)
        distinct_values, distinct_splits = decoded_words[0], decoded_words[-1]

        paths = self._word_paths(distinct_values, distinct_splits)
        path_words = paths["rows"]
        smallest_gap = tf.math.unsorted_segment_min(paths["gap"], path_words, n_distinct)
        total = paths["total"]
        # Unknown pieces are merged within words here; across words below, only if a word starts with one.
        raw = paths["piece"], ops.splits_from_row_ids(path_words, n_distinct)
        pieces, piece_splits = self._unknowns(*raw, distinct_values) if merge else raw

        # Is each occurrence's decision safe from single-precision rounding at its place in its line?
        # First for all lines at once: no score on a line's paths exceeds its characters times the
        # largest score magnitude, so the ulp there bounds every ulp of the exact check.
        length = distinct_splits[1:] - distinct_splits[:-1]
        line_chars = tf.math.segment_sum(ops.take(length, occurrence), word_lines)
        longest_line = tf.cast(tf.reduce_max(tf.concat([[0], line_chars], axis=0)), tf.float64)
        magnitude = tf.minimum(longest_line * (self._max_score_magnitude + self._half_ulp) * (1 + 1e-6) + 1, self._largest_score)
        fragile_anywhere = ~(smallest_gap > tf.cast(length + 2, tf.float64) * self._ulp(magnitude))
        suspects = ops.indices_where(ops.take(fragile_anywhere, occurrence))

        def segment_fragile_again():
            fragile = self._fragile(suspects, occurrence, word_lines, line_word_splits, total, smallest_gap, length)
            return ops.rare_cond(
                tf.size(fragile) > 0,
                lambda: self._redo_words(
                    fragile, occurrence, word_lines, line_word_splits, raw, (pieces, piece_splits), (distinct_values, distinct_splits), merge
                ),
                lambda: (pieces, piece_splits, occurrence),
            )

        # Words whose segmentation single-precision rounding could change where they stand (few):
        # one `If` for all their steps, which a text without them skips. It gives the rows of a
        # table of pieces (the distinct words', then those redone) that the occurrences read.
        table, table_splits, rows = ops.rare_cond(tf.size(suspects) > 0, segment_fragile_again, lambda: (pieces, piece_splits, occurrence))
        values, occurrence_splits = ops.ragged_in_halves(lambda part: ops.gather_rows(table, table_splits, part), rows)
        line_splits = ops.take(occurrence_splits, line_word_splits)
        unknown_first = tf.reduce_any(ops.take(values, occurrence_splits[:-1]) == self._unknown_id)
        if merge and self.byte_ids is None:
            values, line_splits = ops.rare_cond(
                unknown_first, lambda: _merge_unknowns(values, line_splits, self._unknown_id), lambda: (values, line_splits)
            )
        if distinct:
            return values, line_splits, {"values": distinct_values, "starts": decoded_words[1], "splits": distinct_splits, "occurrence": occurrence}
        return values, line_splits

    def _fragile(self, suspects, occurrence, word_lines, line_word_splits, total, smallest_gap, length):
        """Which of the word occurrences `suspects` (sorted) could be segmented differently in single
        precision at their place in their lines: those whose smallest gap is within (length + 2) ulps
        at the magnitude of the line's score before them plus the word's, or of the largest score
        SentencePiece keeps before restarting from 0. Reads only the lines of the suspects."""
        lines = tf.unique(ops.take(word_lines, suspects))[0]
        spans = tf.ragged.range(ops.take(line_word_splits, lines), ops.take(line_word_splits, lines + 1))
        in_lines = spans.flat_values  # sorted: the occurrences of those lines, in order
        # The exact score of the line before each word, and its characters: SentencePiece's sum
        # is off by at most half an ulp per piece (at most one per character).
        occurrences = ops.take(occurrence, in_lines)
        before = tf.cumsum(tf.stack([ops.take(total, occurrences), tf.cast(ops.take(length, occurrences), tf.float64)], axis=1), axis=0, exclusive=True)
        before -= ops.take(before, ops.take(spans.row_splits, ops.row_ids(spans.row_splits)))
        before_score, before_chars = tf.unstack(ops.take(before, tf.searchsorted(in_lines, suspects)), axis=1)
        words = ops.take(occurrence, suspects)
        word_length = tf.cast(ops.take(length, words), tf.float64)
        magnitude = tf.abs(before_score) * (1 + 1e-6) + before_chars * self._half_ulp + word_length * self._max_score_magnitude + 1
        fragile = ops.indices_where(~(ops.take(smallest_gap, words) > (word_length + 2) * self._ulp(tf.minimum(magnitude, self._largest_score))))
        return ops.take(suspects, fragile)

    @staticmethod
    def _ulp(magnitude):
        """A single-precision ulp at float64 `magnitude` (positive): 2 ** (floor(log2(magnitude)) -
        23), read off the exponent bits."""
        return tf.bitcast(tf.bitwise.bitwise_and(tf.bitcast(magnitude, tf.int64), _EXPONENT_BITS), tf.float64) * 2.0**-23

    def _scores_before(self, fragile, occurrence, word_lines, line_word_splits, raw, distinct):
        """The single-precision score of SentencePiece's best path before each of the word
        occurrences `fragile` (sorted), as SentencePiece's Viterbi adds it up: the scores of the
        pieces of a line added in order, except at some words, segmented exactly from the score
        before them, which gives the score after them. Those are the fragile words themselves, and
        the words where the score could pass 100,000 in magnitude (a restart: see `Viterbi`). Every
        other word is safe: its pieces are the same from any score before it. One loop step per
        such word of a line, for all lines at once."""
        distinct_values, distinct_splits = distinct
        # One row per line, over its occurrences up to its last fragile one.
        lines, line_of_fragile = tf.unique(ops.take(word_lines, fragile), out_idx=tf.int64)
        k = tf.size(lines)
        earlier = tf.ragged.range(ops.take(line_word_splits, lines), tf.math.segment_max(fragile, line_of_fragile) + 1)
        in_lines = earlier.flat_values  # sorted
        n = tf.size(in_lines, out_type=tf.int64)
        fragile_at = tf.searchsorted(in_lines, fragile, out_type=tf.int64)
        is_fragile = tf.scatter_nd(fragile_at[:, None], tf.ones_like(fragile, tf.bool), [n])
        # Their pieces, unknown characters unmerged (each is a node).
        words = ops.take(occurrence, in_lines)
        earlier_ids, occurrence_splits = ops.gather_rows(*raw, words)
        row_splits = ops.take(occurrence_splits, earlier.row_splits)
        padded = tf.RaggedTensor.from_row_splits(ops.take(self._scores[tf.float32], earlier_ids + 1), row_splits, validate=False).to_tensor(0.0)
        columns = tf.range(tf.shape(padded)[1])
        # Each occurrence: its row, the column of its first piece and its number of pieces.
        row = ops.row_ids(earlier.row_splits)
        first = tf.cast(occurrence_splits[:-1] - ops.take(row_splits, row), tf.int32)
        count = tf.cast(occurrence_splits[1:] - occurrence_splits[:-1], tf.int32)
        # No score inside a word moves further than this from the score before it.
        length = tf.cast(ops.take(distinct_splits[1:] - distinct_splits[:-1], words), tf.float32)
        reach = length * (self._max_score_magnitude + self._half_ulp) * (1 + 1e-6) + 1

        def step(start, score, scores_before, _):
            # tf.cumsum adds along a row in order (adding the zeros before `start` changes nothing).
            counted = tf.where(columns[None, :] >= start[:, None], padded, 0.0)
            sums = tf.cumsum(tf.concat([score[:, None], counted], axis=1), axis=1)
            before = tf.gather_nd(sums, tf.stack([tf.cast(row, tf.int32), first], axis=1))
            stops = (first >= ops.take(start, row)) & (is_fragile | (tf.abs(before) + reach > _RESET))
            next_stop = tf.math.unsorted_segment_min(tf.where(stops, tf.range(n), n), row, k)
            rows = ops.indices_where(next_stop < n)
            at = ops.take(next_stop, rows)
            scores_before = tf.tensor_scatter_nd_update(scores_before, at[:, None], ops.take(before, at))

            def segment_exactly():
                values, splits = ops.gather_rows(distinct_values, distinct_splits, ops.take(words, at))
                after = self._best_paths(values, splits, tf.float32, gaps=True, offsets=ops.take(before, at))["total"]
                return (
                    tf.tensor_scatter_nd_update(start, rows[:, None], ops.take(first + count, at)),
                    tf.tensor_scatter_nd_update(score, rows[:, None], after),
                )

            start, score = ops.rare_cond(tf.size(rows) > 0, segment_exactly, lambda: (start, score))
            return start, score, scores_before, tf.size(rows) > 0

        _, _, scores_before, _ = tf.while_loop(
            lambda start, score, scores_before, more: more,
            step,
            (tf.zeros([k], tf.int32), tf.zeros([k], tf.float32), tf.zeros([n], tf.float32), tf.constant(True)),
        )
        return ops.take(scores_before, fragile_at)

    def _redo_words(self, fragile, occurrence, word_lines, line_word_splits, raw, segmented, distinct, merge=True):
        """Segment the word occurrences `fragile` (sorted) again, exactly: in single precision from
        the score of their line's path before them, as SentencePiece's Viterbi adds it up (see
        `_scores_before`). `raw` and `segmented` are the distinct words' pieces before and after
        merging unknown ones. Returns a table of pieces (values, row splits: the distinct words', then
        those redone) and the row of each occurrence in it."""
        pieces, piece_splits = segmented
        n_distinct = tf.size(piece_splits, out_type=tf.int64) - 1
        k = tf.size(fragile, out_type=tf.int64)
        offsets = self._scores_before(fragile, occurrence, word_lines, line_word_splits, raw, distinct)
        word_values, word_splits = ops.gather_rows(*distinct, ops.take(occurrence, fragile))
        paths = self._best_paths(word_values, word_splits, tf.float32, offsets=offsets)
        redone, redone_splits = paths["piece"], ops.splits_from_row_ids(paths["rows"], k)
        if merge:
            redone, redone_splits = self._unknowns(redone, redone_splits, word_values)
        table = tf.concat([pieces, redone], axis=0)
        table_splits = tf.concat([piece_splits, piece_splits[-1] + redone_splits[1:]], axis=0)
        return table, table_splits, tf.tensor_scatter_nd_update(occurrence, fragile[:, None], n_distinct + tf.range(k))

    def _word_paths(self, code_points, splits):
        """`_best_paths` in double precision with gaps, as `_by_words` needs it: few short rows (the
        words of a text or two) take `_unrolled_paths`, with identical results, in far fewer ops;
        many rows are segmented in two halves, in parallel."""
        lengths = splits[1:] - splits[:-1]
        longest = tf.reduce_max(tf.concat([[0], lengths], axis=0))
        rows = tf.size(lengths, out_type=tf.int64)

        def unrolled(steps, otherwise):
            fits = (longest <= steps) & (rows * steps * min(self._width, steps) <= _UNROLLED_CELLS)
            return lambda: ops.rare_cond(fits, lambda: self._unrolled_paths(code_points, splits, steps), otherwise)

        def looped():
            return self._best_paths(code_points, splits, tf.float64, gaps=True)

        def in_halves():
            # The rows before and after the middle character, in two passes that run at once (one
            # thread each: most of a pass's ops are small, and the loop's steps wait on each other).
            half, first, second = ops.rows_in_halves(code_points, splits)
            first, second = (self._best_paths(*rows, tf.float64, gaps=True) for rows in (first, second))
            paths = {key: tf.concat([first[key], second[key]], axis=0) for key in first}
            paths["rows"] = tf.concat([first["rows"], second["rows"] + half], axis=0)
            return paths

        def choose():
            return ops.rare_cond(rows >= _HALVES_FROM, in_halves, looped)

        for steps in reversed(_UNROLLED_STEPS):
            choose = unrolled(steps, choose)
        return choose()

    def _best_paths(self, code_points, splits, dtype, gaps=False, offsets=None):
        """The best path through each row: the rows of its pieces (int64, in order) and those pieces;
        with `gaps`, also the best score of each row (rows must not be empty) and, at each piece's
        end, the lead of the chosen piece over the runner-up. `offsets`: the score each row's paths
        start from (0 by default)."""
        width = self._width
        size = tf.size(code_points)
        n = tf.size(splits) - 1
        rows, steps = (tf.cast(x, tf.int32) for x in ops.row_ids_and_places(splits))  # steps: of each position, from 0
        row_lengths = tf.cast(splits[1:] - splits[:-1], tf.int32)
        order = tf.argsort(row_lengths, direction="DESCENDING", stable=True)
        longest = tf.reduce_max(tf.concat([[0], row_lengths], axis=0))
        sorted_lengths = ops.take(row_lengths, order)
        # The rows at least t long, for t = 1 .. longest.
        rows_of_length = tf.math.bincount(row_lengths, minlength=longest + 1, maxlength=longest + 1)
        active_per_step = tf.cumsum(rows_of_length, reverse=True)[1:]
        # Step t (position t - 1 of each row long enough) handles the records step_offsets[t - 1] +
        # the row's rank by length, so each step reads and writes slices.
        step_offsets = tf.concat([[0], tf.cumsum(active_per_step)], axis=0)
        rank = ops.take(tf.scatter_nd(order[:, None], tf.range(n), [n]), rows)
        record = ops.take(step_offsets, steps) + rank
        # The piece tables hold one block per step t: [reach, active] cells, where a piece of
        # `length` characters ending at the position of rank r is at row reach - length, column r.
        # Pieces ending at step t have at most reach = min(t, width) characters, so most blocks
        # of short words are narrower than `width` (a third of the cells, on English words).
        reach = tf.minimum(tf.range(1, longest + 1), width)
        block_ends = tf.cumsum(tf.cast(reach * active_per_step, tf.int64))
        block_starts = tf.concat([[0], block_ends], axis=0)
        base = ops.take(block_ends, steps) + tf.cast(rank, tf.int64)
        stride = tf.cast(ops.take(active_per_step, steps), tf.int64)
        # A character that starts no one-character piece is an unknown piece of its own.
        pieces, piece_scores = self._trie.matches_by_end(
            code_points, steps == 0, width, (base, stride, block_starts[-1]), self._scores[dtype], single_missing=self._unknown_id
        )

        # `best` holds, per row (a column of it), the best scores of the `reach` positions before
        # the step's, the latest last; its row j pairs with the block's row j, so the candidates run
        # by increasing start, as SentencePiece visits them, and argmax keeps the first of the best.
        # The winner is kept as the length of its piece; with `gaps`, also its lead over the others.
        #
        # Each step's reach, active rows and whether the oldest row of `best` leaves (from step width).
        # The loop takes two steps per iteration, which halves the loop's own ops per step; an odd
        # number of steps gets one more, over no rows.
        steps_run = longest + longest % 2
        step_numbers = tf.range(1, steps_run + 1)
        plan = tf.stack(
            [
                tf.minimum(step_numbers, width),
                tf.concat([active_per_step, tf.zeros([longest % 2], tf.int32)], axis=0),
                tf.cast(step_numbers >= width, tf.int32),
            ],
            axis=1,
        )

        # In single precision, SentencePiece (0.2.3) moves its scores to a new origin whenever the
        # best score at the start it is about to extend exceeds _RESET in magnitude: that score is
        # subtracted from it (which becomes 0) and from the scores already reached beyond it. Here
        # the pieces from earlier starts are added to their scores as they were, then moved by
        # `shift`, one per row of `best` (the subtraction is exact: see `Viterbi`). That costs a
        # few ops per step, so a loop without it runs when no row can get that far.
        def run(resets):
            def step(t, best, winners, *extra):
                reach_t, active, leaving = tf.unstack(plan[t - 1], num=3)
                block = tf.reshape(tf.slice(piece_scores, block_starts[t - 1 : t], tf.cast(reach_t * active, tf.int64)[None]), [reach_t, active])
                best = best[:, :active]  # `best` has reach_t rows
                if resets:
                    shift, *extra = extra
                    newest = best[-1]
                    offset = tf.where(tf.abs(newest) > _RESET, newest, 0.0)
                    older = tf.range(reach_t)[:, None] < reach_t - 1
                    shift = tf.where(older, shift[:, :active] + offset, 0.0)
                    best = tf.concat([best[:-1], (newest - offset)[None, :]], axis=0)
                    totals = block + best - shift
                else:
                    totals = block + best
                winner = tf.argmax(totals, axis=0, output_type=tf.int32)
                top = tf.reduce_max(totals, axis=0)
                if gaps:
                    # A select, not `tf.one_hot(..., axis=0)`: in a profile at batch 1024 that one-hot
                    # was the loop's costliest op; in isolation, the runner-up took 5 times as long with it.
                    others = tf.where(tf.range(reach_t)[:, None] == winner[None, :], tf.constant(-np.inf, dtype), totals)
                    extra = [extra[0].write(t - 1, top), extra[1].write(t - 1, top - tf.reduce_max(others, axis=0))]
                if resets:
                    extra = [tf.concat([shift[leaving:], tf.zeros([1, active], dtype)], axis=0)] + extra
                best = tf.concat([best[leaving:], top[None, :]], axis=0)
                return (t + 1, best, winners.write(t - 1, reach_t - winner), *extra)

            extra = ((tf.zeros([1, n], dtype),) if resets else ()) + ((array(dtype, steps_run), array(dtype, steps_run)) if gaps else ())
            _, _, winners, *extra = tf.while_loop(
                lambda t, *_: t < steps_run,
                lambda *state: step(*step(*state)),
                (1, start, array(tf.int32, steps_run)) + extra,
                shape_invariants=(tf.TensorShape([]), tf.TensorShape([None, None]), None)
                + ((tf.TensorShape([None, None]),) if resets else ())
                + ((None, None) if gaps else ()),
            )
            # Per record: the winner, and with `gaps` the best score and the lead over the runner-up.
            return (by_record(winners, tf.int32),) + ((by_record(extra[-2], dtype), by_record(extra[-1], dtype)) if gaps else ())

        def array(dtype, size):
            return tf.TensorArray(dtype, size=size, infer_shape=False, element_shape=[None])

        def by_record(records, dtype):
            return tf.cond(longest > 0, records.concat, lambda: tf.zeros([0], dtype))

        start = tf.zeros([1, n], dtype) + (0 if offsets is None else ops.take(offsets, order)[None, :])
        if dtype == tf.float32:
            # Each sum can round up to half an ulp further.
            farthest = tf.cast(longest, tf.float32) * (self._max_score_magnitude + self._half_ulp) + tf.reduce_max(tf.abs(tf.concat([[0.0], start[0]], axis=0)))
            winners, *records = ops.rare_cond(farthest * (1 + 1e-5) + 1 > _RESET, lambda: run(True), lambda: run(False))
        else:
            winners, *records = run(False)

        # Walk back from the end of each row, all rows at once, one position per step: `end` holds,
        # per row by rank, the step of the last character of the next piece to take.
        def back(t, end, taken):
            active = active_per_step[t - 1]
            take = end[:active] == t
            previous = t - tf.slice(winners, [step_offsets[t - 1]], [active])
            end = tf.concat([tf.where(take, previous, end[:active]), end[active:]], axis=0)
            return t - 1, end, taken.write(t - 1, take)

        def by_steps():
            _, _, taken = tf.while_loop(
                lambda t, *_: t > 0,
                back,
                (longest, sorted_lengths, array(tf.bool, longest)),
                shape_invariants=(tf.TensorShape([]), tf.TensorShape([None]), None),
            )
            return ops.take(by_record(taken, tf.bool), record)

        # Or by pointer doubling, in log2(longest row) rounds that each touch every position;
        # reversed, the walk moves forward, as `greedy_path` needs.
        def by_doubling():
            length = ops.take(winners, record)  # of the piece ending at each position
            # The piece before ends `length` back, unless this one starts its row (is `steps` + 1 long).
            back_reversed = tf.where(length > steps, size, size - 1 - tf.range(size) + length)
            row_ends = ops.take(tf.cast(splits[1:], tf.int32), ops.indices_where(row_lengths > 0)) - 1
            path_starts = tf.scatter_nd((size - 1 - row_ends)[:, None], tf.ones_like(row_ends, tf.bool), [size])
            return tf.reverse(matching.greedy_path(tf.reverse(back_reversed, [0]), path_starts, longest), [0])

        # Steps are cheap but one per position of the longest row: the better choice for many short rows.
        short = (longest <= _WALK_BY_STEPS_UP_TO) | (longest * _STEPS_PER_POSITION <= size)
        on_path = tf.cond((size >= _WALK_BY_STEPS_FROM) & short, by_steps, by_doubling)
        ends = ops.indices_where(on_path)
        end_lengths = tf.cast(ops.take(winners, ops.take(record, ends)), tf.int64)
        end_base, end_stride = ops.take(base, ends), ops.take(stride, ends)
        paths = {
            "rows": tf.cast(ops.take(rows, ends), tf.int64),
            "piece": ops.take(pieces, end_base - end_lengths * end_stride),
        }
        if gaps:
            paths["total"] = ops.take(records[0], ops.take(record, splits[1:] - 1))
            paths["gap"] = ops.take(records[1], ops.take(record, ends))
        return paths

    def _unrolled_paths(self, code_points, splits, steps):
        """`_best_paths` in double precision with gaps, for few rows of at most `steps` characters,
        in far fewer ops than the loop runs, which is what a call costs at batch 1. Every substring
        that could be a piece is looked up in one table of the pieces as strings, and their scores
        fill a grid [steps, rows, width] whose column c holds the piece of `width - c` characters
        ending at that position: columns run by increasing start, as SentencePiece visits them,
        and argmax keeps the first of the best. The Viterbi pass is unrolled (three ops per
        position) and walked back with one gather per position. It adds the same numbers as the
        loop, in the same order, so its pieces, scores and gaps are the loop's to the bit."""
        width = min(self._width, steps)
        lengths = splits[1:] - splits[:-1]
        n = tf.size(lengths, out_type=tf.int64)
        # Every (start, length) that fits in its row, by start, then length.
        row, start = ops.row_ids_and_places(splits)
        fits = tf.minimum(ops.take(lengths, row) - start, width)
        pair = ops.indices_where(tf.reshape(tf.range(1, width + 1, dtype=tf.int64) <= fits[:, None], [-1]))
        at, length = pair // width, pair % width + 1
        row, start = ops.take(row, at), ops.take(start, at)
        # The rows as UTF-8 again (each invalid byte of the input is U+FFFD by now, as in the loop).
        words = ops.encode_utf8(code_points, splits)
        found = self._ids.lookup(tf.strings.substr(ops.take(words, row), start, length, unit="UTF8_CHAR"))
        # A character that starts no one-character piece is an unknown piece of its own.
        found += tf.cast((found < 0) & (length == 1), tf.int32) * (self._unknown_id + 1)
        cell = ((start + length - 1) * n + row) * width + width - length
        # Cells without a piece get the lowest value, which `self._scores` gives no piece too.
        scores = tf.math.unsorted_segment_max(ops.take(self._scores[tf.float64], found + 1), cell, steps * n * width)
        scores = tf.unstack(tf.reshape(scores, [steps, -1, width]), num=steps)

        nothing = tf.fill([n], tf.constant(-np.inf, tf.float64))  # before the row starts
        best = [nothing] * (width - 1) + [tf.zeros([n], tf.float64)]
        totals = []
        for position in range(steps):
            totals.append(tf.stack(best[position : position + width], axis=1) + scores[position])
            best.append(tf.reduce_max(totals[-1], axis=1))
        totals = tf.stack(totals)
        column = tf.argmax(totals, axis=2, output_type=tf.int32)
        # The runner-up: the best of the others. (`tf.math.top_k` took 20 times as long, a
        # broadcast select 5 times.)
        runner_up = tf.reduce_max(totals + tf.one_hot(column, width, on_value=-np.inf, off_value=0.0, dtype=tf.float64), axis=2)
        best = tf.stack(best[width:])
        gap = best - runner_up
        piece_lengths = tf.cast(width - tf.transpose(column), tf.int64)  # [rows, steps]

        # Walk back from each row's end, through nodes `row * (steps + 1) + characters covered`;
        # node 0 of a row leads to itself.
        nodes = tf.range(n) * (steps + 1)
        back = tf.concat([tf.zeros([n, 1], tf.int64), tf.range(1, steps + 1, dtype=tf.int64) - piece_lengths], axis=1)
        back = tf.reshape(back + nodes[:, None], [-1])
        node = nodes + lengths
        walked = []
        for _ in range(steps):
            walked.append(node)
            node = ops.take(back, node)
        walked = tf.reshape(tf.stack(walked[::-1], axis=1), [-1])
        # The pieces of each row in order: the nodes walked through that are past the row's start.
        ends = ops.take(walked, ops.indices_where(walked % (steps + 1) > 0))
        end_rows = ends // (steps + 1)
        end = ends - end_rows * (steps + 1) - 1  # the piece's last character in its row
        piece_length = ops.take(tf.reshape(piece_lengths, [-1]), end_rows * steps + end)
        # The piece's pair: its start's first pair, plus its length - 1.
        first_pairs = tf.cumsum(fits, exclusive=True)
        piece = ops.take(found, ops.take(first_pairs, ops.take(splits, end_rows) + end + 1 - piece_length) + piece_length - 1)
        # In the [steps, rows] grids: each piece's end, and each row's last character.
        return {
            "rows": end_rows,
            "piece": piece,
            "total": ops.take(tf.reshape(best, [-1]), tf.maximum(lengths - 1, 0) * n + tf.range(n)),
            "gap": ops.take(tf.reshape(gap, [-1]), end * n + end_rows),
        }


def word_counter(normalizer_spec):
    """For `count_words`: lines -> their words as this normalizer makes them, each starting at a
    space symbol (or at the start of its line); the last word of each line ends in a space (which
    normalized text never holds), for the trainer's seeds."""
    from tfsubword.train.counting import batch_counter

    normalizer = SentencePieceNormalizer(normalizer_spec)

    def words_of(lines):
        if normalizer.splits_words:
            words, line_splits, lines_of_words = normalizer.words(lines)
            words = tf.strings.join([SPACE_SYMBOL, words])
        else:
            values, splits = normalizer.normalize(lines)
            starts, line_splits = _word_starts(values, splits, normalizer.space)
            word_splits = tf.concat([starts, [tf.size(values, out_type=tf.int64)]], axis=0)
            words = ops.encode_utf8(values, word_splits)
            lines_of_words = ops.row_ids(line_splits)
        last = lines_of_words != tf.concat([lines_of_words, [-1]], axis=0)[1:]
        return tf.strings.join([words, tf.where(last, " ", "")])

    return batch_counter(words_of)


def _pair_keys(first, second):
    """Code points side by side -> one int64 key per pair."""
    return tf.bitwise.left_shift(tf.cast(first, tf.int64), _CODE_POINT_BITS) | tf.cast(second, tf.int64)


def _as_ragged(ids, starts, ends, splits):
    return tuple(tf.RaggedTensor.from_row_splits(values, splits, validate=False) for values in (ids, starts, ends))


def _ends_at_next_starts(starts, splits, row_ends):
    """Where pieces end that each end where the next one of their row starts (`starts`, int64,
    grouped by the row `splits`): the last piece of a row at its row's end (`row_ends`, one per row)."""
    nonempty = ops.indices_where(splits[1:] > splits[:-1])
    last = ops.take(splits, nonempty + 1) - 1
    return tf.tensor_scatter_nd_update(tf.concat([starts, [0]], axis=0)[1:], last[:, None], ops.take(row_ends, nonempty))


def _word_starts(code_points, splits, space):
    """Where the words of normalized texts start (at a space symbol, or at the start of a line), and
    the row splits grouping those words into lines."""
    size = tf.size(code_points)
    position = tf.range(tf.cast(size, tf.int64))
    rows = ops.row_ids(splits)
    starts = ops.indices_where((position == ops.take(splits[:-1], rows)) | (code_points == space))
    return starts, ops.splits_from_row_ids(ops.take(rows, starts), tf.size(splits, out_type=tf.int64) - 1)


def _merge_unknowns(ids, splits, unknown_id):
    """Consecutive unknown pieces of a row become one."""
    merged = _merged_unknowns(ids, splits, unknown_id)
    return ops.take(ids, ops.indices_where(~merged)), _less_dropped(splits, ops.indices_where(merged))


def _merged_unknowns(ids, splits, unknown_id):
    """Whether each piece is an unknown one after another of its row (`splits`: row splits, int64),
    which goes when consecutive unknown pieces become one."""
    size = tf.size(ids, out_type=tf.int64)
    unknown = ids == unknown_id
    # Mark where rows start (a start repeats for an empty row; a last one can be `size`).
    row_starts = tf.scatter_nd(splits[:-1, None], tf.ones_like(splits[:-1], tf.int32), size[None] + 1)[:-1] > 0
    return unknown & tf.concat([[False], unknown], axis=0)[:size] & ~row_starts


def _less_dropped(splits, dropped):
    """Row `splits` (int64) with the values at the sorted positions `dropped` (int64) taken out."""
    return splits - tf.searchsorted(dropped, splits, out_type=tf.int64)


def _unknowns_as_bytes(ids, characters, unknown_id, byte_ids):
    """SentencePiece's byte fallback: each unknown piece becomes the byte pieces of the UTF-8 of
    its character (`characters`: the first character of each piece, int32). Returns the new ids,
    the splits (int64) grouping them by old piece, and for each new piece its old piece and whether
    it is the last of them."""
    unknown = ids == unknown_id
    lengths = tf.where(unknown, 1 + sum(tf.cast(characters >= bound, tf.int32) for bound in (0x80, 0x800, 0x10000)), 1)
    piece_splits = tf.concat([[0], tf.cumsum(tf.cast(lengths, tf.int64))], axis=0)
    old = ops.row_ids(piece_splits)
    index = tf.cast(tf.range(piece_splits[-1]) - ops.take(piece_splits, old), tf.int32)  # of the byte in its character
    length, character = ops.take(lengths, old), ops.take(characters, old)
    bits = tf.bitwise.right_shift(character, 6 * (length - 1 - index))
    # A lead byte marks the length (none for one byte); the others hold 6 bits each after 0b10.
    lead_marks = tf.constant([0, 0, 0xC0, 0xE0, 0xF0], tf.int32)
    byte = tf.where(index == 0, ops.take(lead_marks, length) | bits, 0x80 | (bits & 0x3F))
    from_unknown = ops.take(unknown, old)
    # Elsewhere `byte` is a whole code point, perhaps past the table: read entry 0 there instead.
    new_ids = tf.where(from_unknown, ops.take(byte_ids, tf.where(from_unknown, byte, 0)), ops.take(ids, old))
    return new_ids, piece_splits, old, index == length - 1


def _byte_piece(byte):
    return f"<0x{byte:02X}>"


def _check_byte_pieces(model):
    """As SentencePiece: byte pieces only with byte fallback, then all 256 of them, named <0x00> to <0xFF>."""
    names = {_byte_piece(byte) for byte in range(256)}
    byte_pieces = [piece for piece, _, kind in model.pieces if kind == spm_model.BYTE]
    for piece in byte_pieces:
        if not model.byte_fallback:
            raise ValueError(f"The model has the byte piece {piece!r} but not `byte_fallback`.")
        if piece not in names:
            raise ValueError(f"The model has a byte piece {piece!r} that names no byte (<0x00> to <0xFF>).")
    if model.byte_fallback and len(set(byte_pieces)) != 256:
        missing = sorted(names - set(byte_pieces))
        raise ValueError(f"A `byte_fallback` model needs the 256 byte pieces <0x00> to <0xFF>; this one lacks {len(missing)}, {missing[0]!r} first.")


def _looks_like_text(data):
    """A `piece<TAB>score` file is UTF-8 text with a tab on its first line; a `.model` file is a
    binary protobuf that starts with byte 0x0A (its first field)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not text.startswith("\n") and "\t" in text.split("\n", 1)[0]


def _read_scores(data, path):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{os.fspath(path)!r} is not valid UTF-8: {error}.") from None
    pairs = []
    for number, line in enumerate(text.split("\n"), 1):
        line = line[:-1] if line.endswith("\r") else line
        if not line:
            continue
        piece, tab, score = line.rpartition("\t")
        if not tab:
            raise ValueError(f"{os.fspath(path)!r} line {number} is not piece<TAB>score: {line!r}.")
        pairs.append((piece, score))
    return pairs
