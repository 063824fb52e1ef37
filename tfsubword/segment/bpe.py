"""Byte-pair encoding of words, in the graph, with Hugging Face `tokenizers`' exact merge order.

Each word starts as its bytes (or, not byte-level, its characters), and merges apply as Hugging Face's
BPE model applies them: repeatedly, the adjacent pair whose merge has the lowest rank, the leftmost such
pair first, until no pair of the word has a merge. In the graph that is one `tf.while_loop` over all the
words at once (integer pair keys in one hash table). Each step makes that merge in every word, and with
it every merge that is sure to come whatever happens first (`_sure_merges`): a line of Japanese
without spaces, one word of hundreds of bytes, takes a third of the steps. A word with no merge left
leaves the loop, so the long words' last steps do not carry the short ones. A word that is itself a
token encoding to itself (most frequent words) is looked up whole instead.
"""

import math

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables
from tfsubword.segment import bpe_dropout, first_skip
from tfsubword.text import byte_level as byte_level_lib


def merge_word(symbols, ranks):
    """Reference BPE of one word (a list of symbol ids) with `ranks` (pair -> (rank, merged id)), in
    plain Python: the lowest-rank pair merges first, the leftmost among equals."""
    symbols = list(symbols)
    while len(symbols) > 1:
        best = None
        for position in range(len(symbols) - 1):
            found = ranks.get((symbols[position], symbols[position + 1]))
            if found is not None and (best is None or found[0] < best[0]):
                best = (found[0], position, found[1])
        if best is None:
            break
        _, position, merged = best
        symbols[position : position + 2] = [merged]
    return symbols


# In the merge table's values: rank << 32 | _SURE (if a sure merge) | the merged token's id.
_SURE = 2**31


def _sure_merges(ranks):
    """The pairs that merge wherever they stand, whatever else the word holds, as the set of
    `ranks`' keys: a step may merge them all with the word's lowest pair, not one by one.

    A pair (x, y) of rank r is sure when every merge that could take x from its left, (., x), and
    every one that could take y from its right, (y, .), ranks after r: nothing touches x or y
    before (x, y) merges. Merging it early changes nothing else when no merge that uses a token
    ranks before the merge that makes it (as in every trained list). Lists where one does have no
    sure merges.
    """
    first_as_left, first_as_right = {}, {}
    for (left, right), (rank, _) in ranks.items():
        first_as_left[left] = min(rank, first_as_left.get(left, rank))
        first_as_right[right] = min(rank, first_as_right.get(right, rank))
    never = math.inf
    for rank, merged in ranks.values():
        if min(first_as_left.get(merged, never), first_as_right.get(merged, never)) <= rank:
            return set()
    return {
        (left, right)
        for (left, right), (rank, _) in ranks.items()
        if rank < first_as_right.get(left, never) and rank < first_as_left.get(right, never)
    }


class BytePairEncoding(tf.Module):
    """The merges of a vocabulary `tokens` (id = position): `merges` in rank order, `(left, right)`.

    `byte_level`: words are bytes, written as GPT-2's byte alphabet; otherwise characters. A byte (or
    character) that is no token becomes `unknown_id`, or is dropped when it is -1. `whole_words` (the
    attribute) is the table of the words that are tokens encoding to themselves; with `ignore_merges`,
    of every word that is a token (Hugging Face's option: such a word is its token, merges or not).
    `byte_fallback` (characters only): a character that is no token becomes the tokens of its UTF-8
    bytes, `<0x00>` to `<0xFF>`, which must all be tokens. `prefix` and `suffix` (Hugging Face's
    `continuing_subword_prefix` and `end_of_word_suffix`): a word's symbols after its first are
    written with `prefix` in front, its last with `suffix` after; a merge of `(a, prefix + b)` makes
    `a + b`.
    """

    def __init__(
        self,
        tokens,
        merges,
        byte_level,
        unknown_id=-1,
        ignore_merges=False,
        byte_fallback=False,
        prefix="",
        suffix="",
        name=None,
    ):
        super().__init__(name=name)
        ids = {token: index for index, token in enumerate(tokens)}
        self._size = size = len(tokens)
        self._byte_level = byte_level
        self._unknown_id = unknown_id
        self._affixed = bool(prefix or suffix)
        if self._affixed and (ignore_merges or byte_fallback):
            raise ValueError(
                "A subword prefix or an end-of-word suffix does not go with ignore_merges or byte_fallback."
            )
        ranks = {}
        for rank, (left, right) in enumerate(merges):
            if not right.startswith(prefix):
                raise ValueError(f"Merge {rank} {(left, right)!r}: its second token does not start with {prefix!r}.")
            merged = left + right[len(prefix) :]
            for token in (left, right, merged):
                if token not in ids:
                    raise ValueError(
                        f"Merge {rank} {(left, right)!r} needs the token {token!r}, which is not in the vocabulary."
                    )
            ranks[(ids[left], ids[right])] = (rank, ids[merged])
        # The first symbols: byte (or code point) -> id.
        if byte_level:
            initial = {byte: ids[char] for byte, char in enumerate(byte_level_lib.byte_to_char()) if char in ids}
            self.token_bytes = [byte_level_lib.from_byte_level(token) for token in tokens]
        else:
            initial = {ord(token): index for token, index in ids.items() if len(token) == 1}
            self.token_bytes = [token.encode("utf-8") for token in tokens]
        whole_keys, whole_ids = [], []
        for index, data in enumerate(self.token_bytes):
            if not data or self._affixed:  # (affixed tokens do not spell words)
                continue
            units = list(data) if byte_level else [ord(c) for c in tokens[index]]
            symbols = [initial.get(unit, unknown_id) for unit in units]
            if ignore_merges or (-1 not in symbols and merge_word(symbols, ranks) == [index]):
                whole_keys.append(data)
                whole_ids.append(index)
        self.whole_words = tables.hash_table(whole_keys, whole_ids, -1, tf.string, tf.int32)
        # The words that merge into themselves (with `ignore_merges` unknown: sampled words all merge).
        self._merged_whole = None if ignore_merges else self.whole_words
        self._merges = Merges(ranks, size)
        # Units are cut by the characters merged tokens spell: not with `ignore_merges` (a word that
        # is a token stands whole), nor when a merge takes the unknown or a byte token, which stand
        # for characters they do not spell.
        stand_ins = {f"<0x{b:02X}>" for b in range(256)} if byte_fallback else set()
        stand_ins |= {tokens[unknown_id]} if unknown_id >= 0 else set()
        spelled = not any(left in stand_ins or right in stand_ins for left, right in merges)
        cut = not byte_level and not ignore_merges and spelled and not self._affixed
        self.cuts = Cuts([left + right for left, right in merges]) if cut else None
        self._byte_fallback = byte_fallback and not byte_level
        if self._byte_fallback:
            missing = [f"<0x{b:02X}>" for b in range(256) if f"<0x{b:02X}>" not in ids]
            if missing:
                raise ValueError(f"Byte fallback needs the 256 byte tokens; the vocabulary lacks {missing[:3]}.")
            self._byte_ids = tables.constant([ids[f"<0x{b:02X}>"] for b in range(256)], tf.int64)
        if self._affixed:
            self._affixed_initial = self._affixed_symbols(ids, prefix, suffix)
        elif byte_level:
            self._byte_ids = tables.constant([initial.get(b, unknown_id) for b in range(256)], tf.int64)
        else:
            code_points = sorted(initial)
            self._initial = tables.hash_table(code_points, [initial[c] for c in code_points], -1, tf.int64, tf.int64)

    def _affixed_symbols(self, ids, prefix, suffix):
        """The table of first symbols with `prefix` and `suffix`: key `unit << 2 | variant`, where the
        variant's bit 0 says the unit is not its word's first and bit 1 that it is its last."""
        keys, values = [], []
        for variant in range(4):
            before, after = (prefix if variant & 1 else ""), (suffix if variant & 2 else "")
            if self._byte_level:
                spelled = {unit: before + char + after for unit, char in enumerate(byte_level_lib.byte_to_char())}
            else:  # the tokens that are one character with these affixes
                spelled = {
                    ord(token[len(before) : len(token) - len(after)]): token
                    for token in ids
                    if len(token) == len(before) + 1 + len(after) and token.startswith(before) and token.endswith(after)
                }
            for unit, token in spelled.items():
                if token in ids:
                    keys.append(unit << 2 | variant)
                    values.append(ids[token])
        return tables.hash_table(keys, values, -1, tf.int64, tf.int64)

    def units(self, texts):
        """`[n]` texts of characters -> ragged `[n, (units)]`: each cut where no merge crosses
        (`Cuts`), so that the units, segmented as words, give the text's tokens. Only when `cuts`.
        Invalid UTF-8 reads as U+FFFD, as `segment` reads it."""
        code_points, splits = ops.decode_utf8(texts)
        rows = ops.row_ids(splits)
        size = tf.size(code_points, out_type=tf.int64)
        starts = (tf.range(size) == ops.take(splits, rows)) | self.cuts.apart(code_points)
        unit_starts = ops.indices_where(starts)
        units = ops.encode_utf8(code_points, tf.concat([unit_starts, [size]], axis=0))
        line_splits = ops.splits_from_row_ids(ops.take(rows, unit_starts), tf.size(texts, out_type=tf.int64))
        return tf.RaggedTensor.from_row_splits(units, line_splits, validate=False)

    def segment(self, words):
        """`[k]` words (UTF-8) -> their tokens: (ids int32, row splits int64), one row per word."""
        symbols, rows, _ = self._initial_symbols(words)
        return self._merges.merge(symbols, rows, tf.size(words, out_type=tf.int64))

    def segment_spans(self, words):
        """`[k]` words -> their tokens with where they come from: int64 rows `[tokens, 3]` of (id,
        first character, end character) within the word, and row splits (int64), as `words.encode`
        takes them with `span_unit="UTF8_CHAR"`. A token spans the characters that its bytes (or
        characters) are part of, as Hugging Face's offsets: two tokens that split a character both
        span it."""
        return self._spans(words, self._merges.merge)

    def sample(self, words, dropout, seed):
        """`segment` with Hugging Face's BPE-dropout (`bpe_dropout.queue_dropout`): each of the
        `[k]` words drawn on its own with `seed` (int32 `[2]`). Hugging Face merges every word when it
        samples, `ignore_merges` or not.

        An occurrence whose pops of entries that merge are all kept (entries whose pair is gone only
        set aside or spent) ends as its word's merge: so each draws how many of its word's m merges
        it keeps before the first skip (geometric), and only those that skip one run the queue, with
        those draws fixed. The merges are found once per distinct word."""
        keep_seed, queue_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
        distinct, occurrence = tf.unique(words, out_idx=tf.int64)
        number_of_words = tf.size(distinct, out_type=tf.int64)
        # Words that merge into a token of their own take m = (their symbols - 1) merges; the others
        # are merged here.
        whole = tf.fill([number_of_words], -1) if self._merged_whole is None else self._merged_whole.lookup(distinct)
        token = whole >= 0
        merged = ops.indices_where(~token)
        symbols, rows, _ = self._initial_symbols(ops.take(distinct, merged))
        number_merged = tf.size(merged, out_type=tf.int64)
        ids, splits = self._merges.merge(symbols, rows, number_merged)
        symbol_splits = ops.splits_from_row_ids(rows, number_merged)
        merges = (symbol_splits[1:] - symbol_splits[:-1]) - (splits[1:] - splits[:-1])
        units = tf.strings.length(distinct, unit="BYTE" if self._byte_level else "UTF8_CHAR")
        merges = tf.scatter_nd(merged[:, None], merges, [number_of_words])
        merges = tf.where(token, tf.cast(units, tf.int64) - 1, merges)
        kept_first = first_skip.kept_before_skip(tf.size(occurrence), dropout, keep_seed)
        walking = kept_first < tf.cast(ops.take(merges, occurrence), tf.float32)
        going = ops.indices_where(walking)
        walked_symbols, walked_rows, _ = self._initial_symbols(ops.take(words, going))
        walked_ids, walked_splits, _ = bpe_dropout.queue_dropout(
            self._merges,
            walked_symbols,
            walked_rows,
            tf.size(going, out_type=tf.int64),
            dropout,
            queue_seed,
            first_skip=tf.cast(ops.take(kept_first, going), tf.int64),
        )
        # The others read their word's token, or its merge.
        ids = tf.concat([whole, ids], axis=0)
        splits = tf.concat([tf.range(number_of_words), number_of_words + splits], axis=0)
        local = tf.cumsum(tf.cast(~token, tf.int64), exclusive=True)
        row = tf.where(ops.take(token, occurrence), occurrence, number_of_words + ops.take(local, occurrence))
        return first_skip.greedy_or_walked(ids, splits, row, walking, walked_ids, walked_splits)

    def sample_spans(self, words, dropout, seed):
        """`segment_spans` of a `sample`."""
        return self._spans(
            words, lambda *merged, origins: bpe_dropout.queue_dropout(self._merges, *merged, dropout, seed, origins)
        )

    def _spans(self, words, merge):
        number_of_words = tf.size(words, out_type=tf.int64)
        symbols, rows, characters = self._initial_symbols(words, with_characters=True)
        origins = tf.range(tf.size(symbols, out_type=tf.int64))
        ids, splits, first = merge(symbols, rows, number_of_words, origins=origins)
        # A token's symbols run up to the next token's first, or to the last symbol of its word.
        token_rows = ops.row_ids(splits)
        last_of_word = tf.range(tf.size(ids, out_type=tf.int64)) == ops.take(splits, token_rows + 1) - 1
        symbol_ends = ops.take(ops.splits_from_row_ids(rows, number_of_words), token_rows + 1)
        last = tf.where(last_of_word, symbol_ends, tf.concat([first[1:], [0]], axis=0)) - 1
        spans = [tf.cast(ids, tf.int64), ops.take(characters, first), ops.take(characters, last) + 1]
        return tf.stack(spans, axis=1), splits

    def _initial_symbols(self, words, with_characters=False):
        """`[k]` words -> their first symbols (ids, int64), the word of each (int64) and, if asked,
        the character (of the word) each comes from; symbols of no token are dropped."""
        characters = None
        if self._affixed:
            units, splits = (ops.decode_bytes if self._byte_level else ops.decode_utf8)(words)
            index, unit_rows = tf.range(tf.size(units, out_type=tf.int64)), ops.row_ids(splits)
            continuing = tf.cast(index != ops.take(splits, unit_rows), tf.int64)
            last = tf.cast(index == ops.take(splits, unit_rows + 1) - 1, tf.int64)
            symbols = self._affixed_initial.lookup(tf.cast(units, tf.int64) * 4 + continuing + 2 * last)
            if self._unknown_id >= 0:
                symbols = tf.where(symbols < 0, tf.constant(self._unknown_id, tf.int64), symbols)
        elif self._byte_level:
            units, splits = ops.decode_bytes(words)
            symbols = ops.take(self._byte_ids, units)
        else:
            units, splits = ops.decode_utf8(words)
            symbols = self._initial.lookup(tf.cast(units, tf.int64))
            if self._unknown_id >= 0 and not self._byte_fallback:
                symbols = tf.where(symbols < 0, tf.constant(self._unknown_id, tf.int64), symbols)
        rows = ops.row_ids(splits)
        if with_characters:
            if self._byte_level:  # a character starts at each byte that is not 0b10xxxxxx
                leads = tf.cumsum(tf.cast(tf.bitwise.bitwise_and(units, 0xC0) != 0x80, tf.int64)) - 1
                characters = leads - ops.take(leads, ops.take(splits, rows))
            else:
                characters = tf.range(tf.size(units, out_type=tf.int64)) - ops.take(splits, rows)
        if self._byte_fallback:
            symbols, rows, of_character = self._bytes_of_unknown_characters(units, symbols, rows)
            if with_characters:
                characters = ops.take(characters, of_character)
        known = ops.indices_where(symbols >= 0)
        symbols, rows = ops.take(symbols, known), ops.take(rows, known)
        return symbols, rows, None if characters is None else ops.take(characters, known)

    def _bytes_of_unknown_characters(self, code_points, symbols, rows):
        """Each character that is no token (symbol -1) replaced by the tokens of its UTF-8 bytes: the
        new symbols, their rows, and the character each comes from."""
        unknown = symbols < 0
        missing = ops.take(code_points, ops.indices_where(unknown))
        one_each = tf.RaggedTensor.from_row_lengths(missing, tf.ones_like(missing, tf.int64), validate=False)
        units, splits = ops.decode_bytes(tf.strings.unicode_encode(one_each, "UTF-8"))
        symbols, char_splits = ops.substitute_rows(symbols, unknown, ops.take(self._byte_ids, units), splits)
        of_character = ops.row_ids(char_splits)
        return symbols, ops.take(rows, of_character), of_character


class Cuts(tf.Module):
    """Where text of characters can be cut without changing its merges: between two characters that
    no token a merge makes (`made`, strings) holds side by side, since no merge crosses there."""

    def __init__(self, made, name=None):
        super().__init__(name=name)
        pairs = sorted({_pair_key(ord(t[i - 1]), ord(t[i])) for t in made for i in range(1, len(t))})
        self._pairs = tables.hash_table(pairs, [1] * len(pairs), 0, tf.int64, tf.int32)

    def apart(self, code_points):
        """Whether each of the code points (int32) may be cut from the one before it (the first: from
        a NUL character, so texts should start a cut of their own)."""
        values = tf.cast(code_points, tf.int64)
        return self._pairs.lookup(_pair_key(tf.concat([[0], values[:-1]], axis=0), values)) == 0


def _pair_key(first, second):
    """Two code points (ints or int64 tensors) side by side as one int64 key: 21 bits each suffice."""
    return first * (1 << 21) + second


def rank_of(found):
    """The rank of the merges of `Merges.lookup` values."""
    return tf.bitwise.right_shift(found, 32)


def made_by(found):
    """The id each merge of `Merges.lookup` values makes."""
    return tf.bitwise.bitwise_and(found, _SURE - 1)


class Merges(tf.Module):
    """A merge table over `size` ids: `ranks` maps a pair of ids to (rank, merged id). Merges of equal
    rank are taken leftmost first, as merges of one rank."""

    def __init__(self, ranks, size, name=None):
        super().__init__(name=name)
        self._size = size
        keys = np.array([left * size + right for left, right in ranks], np.int64)
        sure = _sure_merges(ranks)
        values = np.array(
            [(rank << 32) + ((pair in sure) << 31) + merged for pair, (rank, merged) in ranks.items()], np.int64
        )
        self._merge_table = tables.hash_table(keys, values, -1, tf.int64, tf.int64)

    def merge(self, symbols, rows, number_of_words, origins=None):
        """Symbol ids (int64) of words (their `rows`, int64, sorted) -> (ids int32, row splits int64),
        merged until no pair of a word has a merge: the lowest rank first, the leftmost among equals.
        With `origins` (int64, one per symbol), also the origin of each token's first symbol."""
        carried = [] if origins is None else [origins]
        # Eagerly, an empty array cannot concat: each starts with an empty part.
        finished = [
            tf.TensorArray(tf.int64, size=1, dynamic_size=True, infer_shape=False, element_shape=[None]).write(
                0, tf.zeros([0], tf.int64)
            )
            for _ in range(2 + len(carried))
        ]
        vector = tf.TensorShape([None])
        _, _, _, finished, _ = tf.while_loop(
            lambda symbols, rows, carried, finished, step: tf.size(symbols) > 0,
            lambda symbols, rows, carried, finished, step: self._step(
                symbols, rows, carried, finished, step, number_of_words
            ),
            (symbols, rows, carried, finished, tf.constant(1)),
            shape_invariants=(vector, vector, [vector] * len(carried), [None] * len(finished), tf.TensorShape([])),
        )
        symbols, rows, *carried = (part.concat() for part in finished)
        return self.gathered(symbols, rows, number_of_words, carried)

    def lookup(self, left, right):
        """The table's value for each pair of symbol ids (int64): -1 for no merge, else the merge's
        rank and merged id (`rank_of`, `made_by`)."""
        return self._merge_table.lookup(left * self._size + right)

    def gathered(self, symbols, rows, number_of_words, carried=()):
        """The symbols of words that left the merge loop whole, each in one step (one run of them), in
        the order of the words: (ids int32, row splits int64, and each of `carried` in that order)."""
        positions = tf.range(tf.size(rows, out_type=tf.int64))
        first = tf.math.unsorted_segment_min(positions, rows, number_of_words)
        counts = tf.math.unsorted_segment_sum(tf.ones_like(rows), rows, number_of_words)
        splits = tf.concat([[0], tf.cumsum(counts)], axis=0)
        word_of, place = ops.row_ids_and_places(splits)
        order = ops.take(first, word_of) + place
        return (tf.cast(ops.take(symbols, order), tf.int32), splits, *(ops.take(t, order) for t in carried))

    def _step(self, symbols, rows, carried, finished, step, number_of_words):
        """In each word, the leftmost pair of lowest rank and the sure pairs merge; the words that have
        no merge leave the loop, written to `finished`. A merged token keeps the `carried` values of its
        first symbol."""
        size = tf.constant(self._size, tf.int64)
        count = tf.size(symbols, out_type=tf.int64)
        pairs = tf.maximum(count - 1, 0)
        found = self._merge_table.lookup(symbols[:-1] * size + symbols[1:])
        found = tf.where(rows[:-1] == rows[1:], found, -1)
        mergeable = found >= 0
        # The leftmost pair of lowest rank in each word: minimize rank * count + position.
        no_pair = tf.int64.max
        key = tf.where(mergeable, tf.bitwise.right_shift(found, 32) * count + tf.range(pairs), no_pair)
        best = ops.take(tf.math.unsorted_segment_min(key, rows[:-1], number_of_words), rows)
        # With it, every sure merge (see `_sure_merges`): they touch neither it nor each other.
        chosen = mergeable & ((key == best[:-1]) | (tf.bitwise.bitwise_and(found, _SURE) != 0))
        merged_ids = tf.bitwise.bitwise_and(found, _SURE - 1)
        merged = tf.where(tf.concat([chosen, [False]], axis=0), tf.concat([merged_ids, [0]], axis=0), symbols)
        # A symbol merged into the one before it goes; those of words without a merge leave the loop.
        done = best == no_pair
        going = ops.indices_where(~(tf.concat([[False], chosen], axis=0) | done))
        done = ops.indices_where(done)
        finished = [part.write(step, ops.take(t, done)) for part, t in zip(finished, (merged, rows, *carried))]
        going_carried = [ops.take(values, going) for values in carried]
        return ops.take(merged, going), ops.take(rows, going), going_carried, finished, step + 1
