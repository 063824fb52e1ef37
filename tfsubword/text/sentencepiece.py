"""SentencePiece's normalizer in the graph: strings -> normalized code points, or straight to words.

The rewriting step (user-defined symbols and the character map, `text.sentencepiece_rules`), with
invalid UTF-8 as one U+FFFD per invalid byte; then, as configured: spaces at the start of the text and
after a space are removed (only those at the start of a rule's output, as SentencePiece does), a space
is added in front (`add_dummy_prefix`), spaces become U+2581 and trailing ones are removed.

Most lines need none of the rules: `SentencePieceNormalizer.word_pool` splits every line at spaces and
reads apart only the lines that a rule could touch, whose words then join the others'.
"""

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword.files import sentencepiece_model as spm_model
from tfsubword.text.sentencepiece_rules import SECOND, SINGLE, CharacterRules
from tfsubword.text.unicode_normalizers import CharacterRewrite

SPACE_SYMBOL = spm_model.SPACE_SYMBOL
SPACE, ESCAPED_SPACE, REPLACEMENT = 0x20, 0x2581, 0xFFFD
# What `tf.strings.split` without a separator splits at, besides the space.
_SPLIT_WHITESPACE = [0x09, 0x0A, 0x0B, 0x0C, 0x0D]
# What a rule's output written in a line before the split must not hold (see `word_pool`), but for
# one space alone.
_NOT_IN_SIMPLE_OUTPUTS = {chr(c) for c in [SPACE, ESCAPED_SPACE, REPLACEMENT, *_SPLIT_WHITESPACE]}
# Beyond this many ranges of special characters, every line goes through the full normalizer.
_MAX_RANGES = 5000


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
        self._character_rules = CharacterRules(spec, user_defined)
        rule_flags, symbol_flags = self._character_rules.rule_flags, self._character_rules.symbol_flags
        flags = rule_flags | symbol_flags
        self.space = ESCAPED_SPACE if spec.escape_whitespaces else SPACE
        # With these switches, a line that no rule touches normalizes to "▁" + its space-separated
        # words joined by "▁": `words` then splits it with one string op. A key can match only where
        # a character is a one-character key or the second character of a longer key; U+FFFD may
        # stand for invalid bytes, and U+2581 splits words. Lines made of other characters only are
        # found with one regular expression (invalid UTF-8 never matches it).
        special = flags & (SINGLE | SECOND) != 0
        special[[REPLACEMENT, ESCAPED_SPACE]] = True
        special[_SPLIT_WHITESPACE] = True  # `tf.strings.split` would split there
        ranges = ops.code_point_ranges(np.nonzero(special)[0])
        # The split splits at the ASCII whitespace that a rule makes one space (nmt_nfkc's tabs and
        # line feeds) as at a space. Where no longer key can match there (the character is no
        # second character of a key, nor in a user-defined symbol), such lines are plain too.
        split_at = [
            c
            for c in _SPLIT_WHITESPACE
            if spec.charsmap.get(chr(c)) == " " and not rule_flags[c] & SECOND and not symbol_flags[c]
        ]
        words_special = special.copy()
        words_special[split_at] = False
        self._plain_words_line = ops.re2_none_of(words_special)
        self._split_at = ops.re2_class(ops.code_point_ranges(split_at)) if split_at else None
        # Lines whose other special characters are keys that are no second character of a longer
        # key (whose second character would then be special too) nor in a user-defined symbol, and
        # that become a space or text without one, are rewritten character by character and then
        # split: no key there can match another way, and no space is made beside another that
        # SentencePiece would keep (as it keeps those inside a rule's output).
        simple = {
            ord(key): value
            for key, value in spec.charsmap.items()
            if len(key) == 1
            and not rule_flags[ord(key)] & SECOND
            and not symbol_flags[ord(key)]
            and ord(key) not in (REPLACEMENT, ESCAPED_SPACE, *_SPLIT_WHITESPACE)
            and (value == " " or not set(value) & _NOT_IN_SIMPLE_OUTPUTS)
        }
        self._simple_rules = CharacterRewrite(simple) if simple else None
        words_special[list(simple)] = False
        self._easy_line = ops.re2_none_of(words_special) if simple else None
        self.splits_words = (
            spec.add_dummy_prefix
            and spec.remove_extra_whitespaces
            and spec.escape_whitespaces
            and len(ranges) <= _MAX_RANGES
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
        could touch, but for tabs or line feeds that a rule makes spaces (most lines), those are
        its words. The other lines, the ruled ones, are read meanwhile (neither the split nor the
        distinct-word search waits for them; see `words_of_ruled`), and their words join the
        pool, their occurrences in place of their split's.
        """
        ruled = ops.indices_where(~self.plain(strings))
        split, _, splits = ops.split_strings(strings)
        distinct, occurrences = tf.unique(split, out_idx=tf.int64)

        any_ruled = tf.size(ruled) > 0
        # An `If` (no run visits its nodes unless taken) that needs only the input, so that the
        # ruled lines are read while the split runs.
        ruled_words = ops.rare_cond(
            any_ruled,
            lambda: self.words_of_ruled(ops.take(strings, ruled)),
            lambda: (tf.zeros([0], tf.string), tf.zeros([1], tf.int64)),
        )
        pool, occurrences, splits = tf.cond(
            any_ruled,
            lambda: with_ruled_lines(distinct, occurrences, splits, ruled, *ruled_words)[:3],
            lambda: (distinct, occurrences, splits),
        )
        return pool, occurrences, splits, ops.row_ids(splits)

    def words_of_ruled(self, lines):
        """`words` of lines that a split cannot read as they are: (words, row splits int64). Lines
        whose special characters are simple keys (fullwidth punctuation, no-break spaces: see
        `__init__`) are rewritten character by character and split; the others are normalized."""

        def normalized(lines):
            return self.words_of_normalized(*self.normalize(lines), tf.size(lines, out_type=tf.int64))

        if self._simple_rules is None:
            return normalized(lines)
        n = tf.size(lines, out_type=tf.int64)
        easy = tf.strings.regex_full_match(lines, self._easy_line)
        simple, hard = ops.indices_where(easy), ops.indices_where(~easy)
        simple_words, _, simple_splits = ops.split_strings(self._simple_rules.rewrite(ops.take(lines, simple)))
        hard_words, hard_splits = ops.rare_cond(
            tf.size(hard) > 0,
            lambda: normalized(ops.take(lines, hard)),
            lambda: (tf.zeros([0], tf.string), tf.zeros([1], tf.int64)),
        )
        # Back in the lines' order, as rows of one table: the simple lines', then the others'.
        words = tf.concat([simple_words, hard_words], axis=0)
        table_splits = tf.concat([simple_splits, simple_splits[-1] + hard_splits[1:]], axis=0)
        simple_before = tf.cumsum(tf.cast(easy, tf.int64), exclusive=True)
        order = tf.where(easy, simple_before, tf.size(simple, out_type=tf.int64) + tf.range(n) - simple_before)
        return ops.gather_rows(words, table_splits, order)

    def plain(self, strings):
        """Whether each string has no character that a rule, a user-defined symbol or the invalid-UTF-8
        rule could touch, nor one that `tf.strings.split` splits at other than U+0020, but for the
        tabs and line feeds that a rule makes a space (see `__init__`): with `splits_words`, the
        words of such a string are the space-separated parts of `spaced(string)`."""
        return tf.strings.regex_full_match(strings, self._plain_words_line)

    def spaced(self, strings):
        """`strings` with each tab or line feed that `plain` admits written as a space. Both take one
        byte: byte offsets into the result are offsets into the strings."""
        return strings if self._split_at is None else tf.strings.regex_replace(strings, self._split_at, " ")

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
            tf.reduce_any(code_points == REPLACEMENT),
            lambda: one_replacement_per_invalid_byte(strings, code_points, starts, splits),
            lambda: (code_points, starts, splits, tf.zeros([0], tf.int64)),
        )
        values, value_splits, chunks, rewritten, on_path = self._character_rules.apply(
            strings, code_points, starts, splits, invalid
        )
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
            lone_space = (chunk_lengths == 1) & (ops.take(tf.concat([values, [0]], axis=0), first_value) == SPACE)
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
            space = values == SPACE
            after_space = first_of_line | tf.concat([[True], space], axis=0)[:size]
            leading = tf.cond(rewritten, lambda: _leading_in_chunk(space, chunks), lambda: space)
            keep = ~(leading & after_space)
        if spec.escape_whitespaces:
            values = tf.where(values == SPACE, ESCAPED_SPACE, values)
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
        values, prefixed_splits = _with_prefixes(
            values, splits, prefixed, tf.fill([n], tf.constant(space_symbol, tf.int32))
        )
        if spans is None:
            return values, prefixed_splits
        return values, prefixed_splits, _with_prefixes(sources, splits, prefixed, prefix_sources)[0], line_ends


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


def with_ruled_lines(distinct, occurrences, splits, ruled, ruled_words, ruled_splits):
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
        starts=ops.take(table_splits[:-1], rows),
        limits=ops.take(table_splits[1:], rows),
        deltas=tf.constant(1, tf.int64),
    )
    table = tf.concat([occurrences, tf.size(distinct, out_type=tf.int64) + ruled_occurrences], axis=0)
    return tf.concat([distinct, ruled_distinct], axis=0), ops.take(table, positions), line_splits, positions


def one_replacement_per_invalid_byte(strings, code_points, starts, splits):
    """TensorFlow reads a truncated sequence as one U+FFFD; SentencePiece reads one per byte. Returns
    the code points, the byte offset where each starts, the row splits, and the positions (int64,
    sorted) of the U+FFFD that stand for invalid bytes."""
    size = tf.size(code_points, out_type=tf.int64)
    rows = ops.row_ids(splits)
    lengths = tf.cast(tf.strings.length(strings), tf.int64)
    next_starts = tf.concat([starts[1:], [0]], axis=0)
    last = tf.range(size) == ops.take(splits[1:], rows) - 1
    byte_lengths = tf.where(last, ops.take(lengths, rows), next_starts) - starts
    suspects = ops.indices_where((code_points == REPLACEMENT) & (byte_lengths != 3))
    genuine_three = ops.indices_where((code_points == REPLACEMENT) & (byte_lengths == 3))
    # A three-byte error (a truncated four-byte sequence) is not the character U+FFFD itself.
    three_starts = ops.take(starts, genuine_three)
    three = tf.fill(tf.shape(three_starts), tf.constant(3, tf.int64))
    bytes_of_three = tf.strings.substr(ops.take(strings, ops.take(rows, genuine_three)), three_starts, three)
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


def word_starts(code_points, splits, space):
    """Where the words of normalized texts start (at a space symbol, or at the start of a line), and
    the row splits grouping those words into lines."""
    size = tf.size(code_points)
    position = tf.range(tf.cast(size, tf.int64))
    rows = ops.row_ids(splits)
    starts = ops.indices_where((position == ops.take(splits[:-1], rows)) | (code_points == space))
    return starts, ops.splits_from_row_ids(ops.take(rows, starts), tf.size(splits, out_type=tf.int64) - 1)
