"""Greedy longest-match-first WordPiece of normalized words, in the graph, for a batch of words at once.

Each word is cut into the longest vocabulary token from its start, then the longest continuation token
(`##` + characters) from there, and so on. A word with any position where no token matches, or longer
than `max_chars_per_word` characters, is one unknown token. Words that are tokens themselves are looked
up whole first; for the rest, the longest token from every position, then one greedy path through
those matches (`trie.greedy_path`).

The longest tokens come from one of two routes with the same answers. A few words (a line or two)
look every substring up in a table of the tokens at once: a dozen ops, where the trie walk
(`trie.Trie.longest_matches`) runs a loop step per character of the longest match, each a few
dozen ops that cost more than their work on a short text. Many words take the walk, whose work
grows with the matches, not with every substring up to the longest token.
"""

import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables, trie
from tfsubword.segment import first_skip

# The substring route takes texts with at most this many substrings to look up.
_SUBSTRINGS_AT_MOST = 2048
# The compiled walk pads the characters to a power of two, at least this many, so that a process
# compiles one variant per size, a handful in all; each lane walks about this many characters.
_COMPILED_AT_LEAST = 1024
_CHARACTERS_PER_LANE = 32


# What `_greedy_walk` writes at the first character of a word it cannot piece together.
_FAILED = -2


def _bit_length(n):
    """The bits of a positive int32 scalar `n`: `2 ** _bit_length(n) > n`."""
    return tf.reduce_sum(tf.cast(tf.bitwise.right_shift(n, tf.range(31)) > 0, tf.int32))


@tf.function(jit_compile=True, input_signature=[tf.TensorSpec([None], tf.int32)] * 7 + [tf.TensorSpec([], tf.int32)])
def _greedy_walk(characters, word_ends, lane_starts, lane_ends, base, check, value, continuation):
    """Greedy longest-match-first through a `trie.CharacterArray`, compiled with XLA.

    `characters` (the keys' character numbers, 0 for none) hold words end to end, one more (0) at
    the end; `word_ends` each position's word's end (the last entry: the padded size). Lane k walks
    the whole words from `lane_starts[k]` to `lane_ends[k]`, one character (or one piece taken) a
    step: a walk goes on while the trie has a child, remembering the last node with a value; when it
    stops, that value is the piece from where the walk began, and the next walk begins where the
    piece ends, from `continuation` (the suffix indicator's node) inside a word, from the root at a
    word's start. A stop with no piece fails the word. Returns, for each position, the id of the
    piece that starts there, `_FAILED` at the first character of a failed word, -1 elsewhere.
    """
    dump = tf.size(characters) - 1  # scatters of lanes that take no piece write here

    def walking(start, *_):
        return tf.reduce_any(start < lane_ends)

    def step(start, word_start, word_end, node, at, piece_end, piece, taken):
        live = start < lane_ends
        child = tf.gather(base, node) + tf.gather(characters, at)
        moves = (
            live & (node >= 0) & (at < word_end) & (tf.gather(characters, at) > 0) & (tf.gather(check, child) == node)
        )
        child_value = tf.gather(value, tf.where(moves, child, 0))
        found = moves & (child_value >= 0)
        stops = live & ~moves
        takes = stops & (piece_end > start)
        fails = stops & (piece_end <= start)
        # An empty word fails at once, but it has no character to mark: the next word starts there.
        marked = fails & (word_start < word_end)
        taken = tf.tensor_scatter_nd_update(
            taken, tf.where(takes, start, tf.where(marked, word_start, dump))[:, None], tf.where(takes, piece, _FAILED)
        )
        next_start = tf.where(takes, piece_end, tf.where(fails, word_end, start))
        new_word = stops & (next_start >= word_end)
        word_start = tf.where(new_word, next_start, word_start)
        word_end = tf.where(new_word, tf.gather(word_ends, next_start), word_end)
        node = tf.where(moves, child, tf.where(new_word, 0, tf.where(stops, continuation, node)))
        at = tf.where(moves, at + 1, tf.where(stops, next_start, at))
        piece_end = tf.where(found, at, tf.where(stops, next_start, piece_end))
        piece = tf.where(found, child_value, piece)
        return next_start, word_start, word_end, node, at, piece_end, piece, taken

    none = tf.zeros_like(lane_starts)
    first_ends = tf.gather(word_ends, lane_starts)
    start = (lane_starts, lane_starts, first_ends, none, lane_starts, lane_starts, none - 1)
    return tf.while_loop(walking, step, (*start, tf.fill(tf.shape(characters), -1)))[-1]


class WordPiece(tf.Module):
    """The greedy segmenter of the vocabulary `tokens` (id = position).

    Args:
        tokens: the vocabulary, a list of str.
        unknown_id: the id of the token of a word that cannot be pieced together.
        suffix_indicator: the prefix of continuation tokens.
        max_chars_per_word: longer words are the unknown token.
        whole_words: the `(token, id)` pairs to look up whole before segmenting (tokens that are
            normalized words); `whole_words` (the attribute) is their table, for the layer too.
        jit_compile: whether many words take the greedy walk compiled with XLA (`_compiled_match`)
            rather than the executor's walk from every position; the same pieces.
    """

    def __init__(
        self, tokens, unknown_id, suffix_indicator, max_chars_per_word, whole_words, jit_compile=False, name=None
    ):
        super().__init__(name=name)
        self._unknown_id = unknown_id
        self._max_chars_per_word = max_chars_per_word
        self._trie = trie.Trie(tokens, range(len(tokens)))
        self._array = trie.CharacterArray(self._trie) if jit_compile else None
        self._continuation_root = self._trie.node(suffix_indicator)
        self._suffix_indicator = suffix_indicator
        self._token_ids = tables.hash_table(
            [token.encode("utf-8") for token in tokens], range(len(tokens)), -1, tf.string, tf.int32
        )
        self._longest_token = max(len(token) for token in tokens)
        keys = [token.encode("utf-8") for token, _ in whole_words]
        self.whole_words = tables.hash_table(keys, [index for _, index in whole_words], -1, tf.string, tf.int32)

    def segment(self, code_points, splits, spans=False):
        """The pieces of words given as code points and row splits: (ids int32, row splits int64), one
        row per word; with `spans`, `[pieces, 3]` int32 rows of (id, first character, end character) in
        `code_points` instead of ids (an unknown word's span is the word)."""
        words = ops.encode_utf8(code_points, splits)
        whole_ids = self.whole_words.lookup(words)
        missed = whole_ids < 0
        misses = ops.indices_where(missed)
        missed_values, missed_splits = ops.gather_rows(code_points, splits, misses)
        pieces, piece_splits = self._match(missed_values, missed_splits, spans)
        if spans:
            # Pieces of the missed words were placed relative to the gathered words: move them back.
            shift = tf.gather(splits, misses) - missed_splits[:-1]
            shift = tf.cast(tf.gather(shift, ops.row_ids(piece_splits)), tf.int32)
            pieces = pieces + tf.stack([tf.zeros_like(shift), shift, shift], axis=1)
            bounds = tf.cast(splits, tf.int32)
            whole_ids = tf.stack([whole_ids, bounds[:-1], bounds[1:]], axis=1)
        return ops.substitute_rows(whole_ids, missed, pieces, piece_splits)

    def _match(self, code_points, splits, spans=False):
        """`segment` of words that are not tokens themselves: the longest matches, then the greedy path."""
        size = tf.size(code_points)
        rows, first, start_nodes, limits = self._starts(code_points, splits)
        lengths = tf.where(start_nodes >= 0, tf.minimum(limits - tf.range(size), self._longest_token), 0)
        few = tf.reduce_sum(tf.cast(lengths, tf.int64)) <= _SUBSTRINGS_AT_MOST

        def by_lookup():
            ends, ids = self._longest_by_lookup(code_points, splits, rows, first, lengths)
            return self._greedy_path(splits, rows, first, limits, ends, ids, spans)[:2]

        if self._array is not None:
            return ops.rare_cond(few, by_lookup, lambda: self._compiled_match(code_points, splits, rows, first, spans))
        ends, ids = ops.rare_cond(
            few,
            lambda: self._longest_by_lookup(code_points, splits, rows, first, lengths),
            lambda: self._trie.longest_matches(code_points, start_nodes, limits),
        )
        return self._greedy_path(splits, rows, first, limits, ends, ids, spans)[:2]

    def _compiled_match(self, code_points, splits, rows, first, spans):
        """`_match` by the greedy walk itself, compiled (`_greedy_walk`): the words laid end to end and
        cut into lanes of whole words, each lane walking its words one character a step."""
        size = tf.size(code_points)
        n_words = tf.size(splits) - 1
        bounds = tf.cast(splits, tf.int32)
        padded = tf.maximum(_COMPILED_AT_LEAST, tf.bitwise.left_shift(1, _bit_length(size)))
        # Characters of no token, and every character of a word too long, end every walk there.
        too_long = ops.take(bounds[1:] - bounds[:-1] > self._max_chars_per_word, rows)
        characters = tf.where(too_long, 0, self._array.characters(code_points))
        characters = tf.pad(characters, [[0, padded + 1 - size]])
        word_ends = tf.pad(ops.take(bounds[1:], rows), [[0, padded + 1 - size]], constant_values=padded)
        lanes = padded // _CHARACTERS_PER_LANE
        # Lane k starts at the first word that starts at or after k * size / lanes (in int64: a
        # million characters times their lanes overflows int32).
        cuts = tf.cast(tf.range(lanes, dtype=tf.int64) * tf.cast(size, tf.int64) // tf.cast(lanes, tf.int64), tf.int32)
        lane_starts = ops.take(bounds, ops.search_sorted(bounds[:-1], cuts))
        lane_ends = tf.concat([lane_starts[1:], [size]], axis=0)
        taken = _greedy_walk(
            characters,
            word_ends,
            lane_starts,
            lane_ends,
            self._array.base,
            self._array.check,
            self._array.value,
            tf.constant(self._array.node(self._suffix_indicator), tf.int32),
        )
        # Read in the padded array: an empty word at the end starts at `size`.
        failed = ops.take(ops.take(taken, bounds[:-1]) == _FAILED, rows)
        taken = taken[:size]
        kept = ops.indices_where(tf.where(failed, first, taken >= 0))
        ids = ops.take(tf.where(failed, self._unknown_id, taken), kept)
        piece_rows = ops.take(rows, kept)
        piece_splits = ops.splits_from_row_ids(piece_rows, tf.cast(n_words, tf.int64))
        if spans:
            # A piece ends where the next one of its word starts, or where its word does.
            starts = tf.cast(kept, tf.int32)
            following = tf.concat([starts[1:], [size]], axis=0)
            same_word = tf.concat([piece_rows[1:] == piece_rows[:-1], [False]], axis=0)
            ends = tf.where(same_word, following, ops.take(bounds[1:], piece_rows))
            ids = tf.stack([ids, starts, ends], axis=1)
        return ids, piece_splits

    def _starts(self, code_points, splits):
        """Each position's word (int64), whether it starts its word, the node its walks start from
        (-1 in words longer than `max_chars_per_word`) and its word's end (int32)."""
        size = tf.size(code_points)
        rows = ops.row_ids(splits)
        word_bounds = tf.cast(splits, tf.int32)
        starts = ops.take(word_bounds, rows)
        limits = ops.take(word_bounds[1:], rows)
        first = tf.range(size) == starts
        start_nodes = tf.where(first, 0, self._continuation_root)
        return rows, first, tf.where(limits - starts > self._max_chars_per_word, -1, start_nodes), limits

    def sample(self, code_points, splits, dropout, seed, spans=False):
        """`segment` with MaxMatch-dropout: at each step, the tokens that match from the position are
        tried from the longest, each but a one-character token skipped with probability `dropout`
        (a word with a position where none is left is the unknown token). Every word is drawn on its
        own, from `seed` (int32 `[2]`); the matches are found once per distinct word."""
        words = ops.encode_utf8(code_points, splits)
        distinct, occurrence = tf.unique(words, out_idx=tf.int64)
        first_occurrence = tf.math.unsorted_segment_min(
            tf.range(tf.size(words, out_type=tf.int64)), occurrence, tf.size(distinct, out_type=tf.int64)
        )
        values, value_splits = ops.gather_rows(code_points, splits, first_occurrence)
        return self.sample_occurrences(values, value_splits, occurrence, dropout, seed, spans)

    def sample_occurrences(self, values, splits, occurrence, dropout, seed, spans=False):
        """`sample` of the words `occurrence` (int64) among words given as code points (`values`) and
        row splits: the result has one row per occurrence (spans in the occurrences' characters).

        Without `spans`, most occurrences take their word's greedy segmentation, found once per
        word: an occurrence differs from it only if some step of the greedy path skips its match,
        each of the path's m matches longer than one character with probability `dropout`. So each
        occurrence draws how many of those it keeps before the first skip (geometric); one that
        keeps all m is the greedy segmentation, the others walk with those draws fixed."""
        if spans:
            return self._walk_occurrences(values, splits, occurrence, dropout, seed, spans=True)
        keep_seed, walk_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
        n_words = tf.size(splits, out_type=tf.int64) - 1
        whole_ids = self.whole_words.lookup(ops.encode_utf8(values, splits))
        kept_first = first_skip.kept_before_skip(tf.size(occurrence), dropout, keep_seed)
        # A token's greedy path is itself: its words need no walk unless an occurrence skips it at once.
        skipped_at_once = tf.math.unsorted_segment_max(tf.cast(kept_first < 1, tf.int32), occurrence, n_words) > 0
        candidate = (whole_ids < 0) | (skipped_at_once & (splits[1:] - splits[:-1] > 1))
        local = tf.cumsum(tf.cast(candidate, tf.int64), exclusive=True)
        candidates = ops.indices_where(candidate)
        values, splits = ops.gather_rows(values, splits, candidates)
        rows, first, start_nodes, limits = self._starts(values, splits)
        matches = self._trie.matches(values, start_nodes, limits)
        ends, ids = trie.longest_of(*matches, tf.size(values))
        greedy_ids, greedy_splits, on_path = self._greedy_path(splits, rows, first, limits, ends, ids, spans)
        # The path's matches a draw may skip, numbered within their word.
        skippable = tf.cast(on_path & (ends - tf.range(tf.size(values)) > 1), tf.int64)
        before = tf.cumsum(skippable, exclusive=True)
        rank = before - ops.take(before, ops.take(splits, rows))
        steps = tf.math.unsorted_segment_sum(skippable, rows, tf.size(candidates, out_type=tf.int64))
        steps = tf.scatter_nd(candidates[:, None], steps, [n_words])  # 0 for the others
        walking = kept_first < tf.cast(ops.take(steps, occurrence), tf.float32)
        going = ops.indices_where(walking)
        fixed = (tf.cast(ops.take(kept_first, going), tf.int64), skippable > 0, rank, ends)
        walked_ids, walked_splits = self._walk_occurrences(
            values, splits, ops.take(local, ops.take(occurrence, going)), dropout, walk_seed, fixed, matches
        )
        # The occurrences that do not walk read every word's token, or the greedy rows of the others.
        ids = tf.concat([whole_ids, greedy_ids], axis=0)
        splits = tf.concat([tf.range(n_words), n_words + greedy_splits], axis=0)
        row = tf.where(ops.take(whole_ids >= 0, occurrence), occurrence, n_words + ops.take(local, occurrence))
        return first_skip.greedy_or_walked(ids, splits, row, walking, walked_ids, walked_splits)

    def _walk_occurrences(self, values, splits, occurrence, dropout, seed, fixed=None, matches=None, spans=False):
        """`sample_occurrences` by walks only. `matches`: the trie's matches in the words, if found.
        `fixed`: the draws the occurrences made along their word's greedy path, as (the matches each
        kept before skipping one, int64 per occurrence; whether each position's greedy match may be
        skipped, its number among those of its word, and its end, per position of the words)."""
        _, _, start_nodes, limits = self._starts(values, splits)
        origins, keys = matches or self._trie.matches(values, start_nodes, limits)
        order = tf.argsort(origins, stable=True)
        keys, key_splits = ops.take(keys, order), ops.splits_from_row_ids(ops.take(origins, order), tf.size(values))
        # Each position of every occurrence reads the matches of the same position of its word.
        at, splits = ops.gather_rows(tf.range(tf.size(values, out_type=tf.int64)), splits, occurrence)
        code_points = ops.take(values, at)
        keys, key_splits = ops.gather_rows(keys, key_splits, at)
        rows, first, _, limits = self._starts(code_points, splits)
        lengths = tf.bitwise.right_shift(keys, trie.VALUE_BITS)
        kept = (tf.random.stateless_uniform(tf.shape(keys), seed) >= dropout) | (lengths == 1)
        position = ops.row_ids(key_splits)
        if fixed is not None:
            kept_first, skippable, rank, ends = fixed
            word_position = ops.take(at, position)
            greedy = ops.take(skippable, word_position) & (
                lengths == tf.cast(ops.take(ends, word_position) - tf.cast(word_position, tf.int32), tf.int64)
            )
            drawn_rank = ops.take(rank, word_position) - ops.take(kept_first, ops.take(rows, position))
            kept = tf.where(greedy & (drawn_rank <= 0), drawn_rank < 0, kept)
        kept = ops.indices_where(kept)
        ends, ids = trie.longest_of(ops.take(position, kept), ops.take(keys, kept), tf.size(code_points))
        ids, id_splits, _ = self._greedy_path(splits, rows, first, limits, ends, ids, spans)
        return ids, id_splits

    def _greedy_path(self, splits, rows, first, limits, ends, ids, spans):
        """`_match` from the token taken at each position (`ends` and `ids`, int32, -1 where none is),
        with what `_starts` gives of the positions; and whether each position is on its word's path."""
        size = tf.size(ends)
        jumps = tf.where(ends < 0, size + 1, tf.where(ends >= limits, size, ends))
        on_path = trie.greedy_path(jumps, first, self._max_chars_per_word)
        n_words = tf.size(splits) - 1
        failed_words = tf.math.unsorted_segment_max(tf.cast(on_path & (ends < 0), tf.int32), rows, n_words)
        failed = ops.take(failed_words, rows) > 0
        kept = ops.indices_where(tf.where(failed, first, on_path))
        ids = ops.take(tf.where(failed, self._unknown_id, ids), kept)
        if spans:
            piece_ends = ops.take(tf.where(failed, limits, ends), kept)
            ids = tf.stack([ids, tf.cast(kept, tf.int32), piece_ends], axis=1)
        return ids, ops.splits_from_row_ids(ops.take(rows, kept), tf.cast(n_words, tf.int64)), on_path

    def _longest_by_lookup(self, code_points, splits, rows, first, lengths):
        """`trie.Trie.longest_matches` for `_match`, by looking up every substring of up to `lengths`
        (int32 `[n]`) characters from each position: the token itself at a word's first position,
        the suffix indicator and it elsewhere."""
        longest = self._longest_token
        # Substrings as (position, length), in the order of a `[size, longest]` matrix.
        wanted = tf.range(1, longest + 1)[None, :] <= lengths[:, None]
        cells = ops.indices_where(tf.reshape(wanted, [-1]))
        origins, substring_lengths = cells // longest, cells % longest + 1
        # Byte offsets of the characters, in all the words and in their own word.
        widths = 1 + tf.add_n([tf.cast(code_points >= bound, tf.int64) for bound in (0x80, 0x800, 0x10000)])
        offsets = tf.cumsum(tf.concat([[0], widths], axis=0))
        in_word = offsets[:-1] - ops.take(offsets, ops.take(splits, rows))
        begins = ops.take(offsets, origins)
        substrings = tf.strings.substr(
            ops.take(ops.encode_utf8(code_points, splits), ops.take(rows, origins)),
            ops.take(in_word, origins),
            ops.take(offsets, origins + substring_lengths) - begins,
        )
        prefixes = tf.where(ops.take(first, origins), "", self._suffix_indicator)
        ids = self._token_ids.lookup(tf.strings.join([prefixes, substrings]))
        found = ops.indices_where(ids >= 0)
        return trie.longest_of(
            ops.take(origins, found),
            trie.pack_key(ops.take(substring_lengths, found), ops.take(ids, found)),
            tf.size(code_points),
        )
