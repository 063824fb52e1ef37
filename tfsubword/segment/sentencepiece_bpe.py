"""`SentencePieceBPE`: normalized texts -> the pieces of a SentencePiece BPE model, as `sentencepiece` encodes.

SentencePiece's BPE encoder starts a text as its characters, except that the longest user-defined piece
at a position is one symbol that never merges. Then, over the whole text, the adjacent pair whose
concatenation is a piece of highest score merges, the leftmost among equal scores, until no pair
makes a piece. A piece of type unused that comes out is split back into the pair that made it.

That is `segment.bpe`'s merge loop with each pair ranked by the score of the piece it makes (equal
scores, equal ranks). Merges in one place do not change those in another, so the texts are cut
where no merge can cross (`bpe.Cuts`) and at each user-defined symbol, and each distinct unit is
merged once. Unknown characters come out one
per character, for `unknowns.finish` (and the offsets) to treat as SentencePiece does.
"""

import numpy as np
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import tables, trie, words
from tfsubword.files import sentencepiece_model as spm_model
from tfsubword.segment import bpe, bpe_dropout, unknowns

# The key prefix of user-defined symbols among the units (`_by_units`): a byte UTF-8 never holds.
_FROZEN = b"\xff"
# The piece types that text is merged into (SentencePiece's `pieces_`); the others are looked up only.
_MERGED_KINDS = (spm_model.NORMAL, spm_model.USER_DEFINED, spm_model.UNUSED)


class SentencePieceBPE(tf.Module):
    """The pieces (`(piece, score, kind)` triples, id = position) of a BPE model, with its unknown
    piece's id and, with byte fallback, the ids of the 256 byte pieces. Raises `ValueError` for a
    model whose encoding would depend on more than its pieces say (see `_symbol_id`, `_unused_expansions`).
    Called as `Viterbi` is: `by_words` is False, `piece_chars` and `byte_ids` are there for the offsets."""

    by_words = False

    def __init__(self, pieces, unknown_id, byte_ids=None, name=None):
        super().__init__(name=name)
        self._unknown_id = int(unknown_id)
        texts = [piece for piece, _, _ in pieces]
        merged = {piece: index for index, (piece, _, kind) in enumerate(pieces) if kind in _MERGED_KINDS}
        # A character is the symbol of its one-character piece, whatever its type, as `PieceToId` reads it.
        single = {piece: index for index, piece in enumerate(texts) if len(piece) == 1}
        makes = _pairs_making(merged, single)
        scores = np.array([score for _, score, _ in pieces], np.float32)
        made = sorted({merged_id for pairs in makes.values() for _, _, merged_id in pairs})
        # Ranked by score, highest first; equal scores share a rank, and the leftmost pair goes first.
        order = np.unique(-scores[made]) if made else np.zeros([0], np.float32)
        ranks = {}
        for piece_id, pairs in makes.items():
            rank = int(np.searchsorted(order, -scores[piece_id]))
            for left, right, merged_id in pairs:
                ranks[(left, right)] = (rank, merged_id)
        self._merges = bpe.Merges(ranks, len(pieces))
        initial = sorted((ord(piece), index) for piece, index in single.items())
        self._initial = tables.hash_table([c for c, _ in initial], [i for _, i in initial], -1, tf.int64, tf.int64)
        self._expansions = _unused_expansions(pieces, makes)
        if self._expansions is not None:
            values, lengths = self._expansions
            self._expansion_values = tables.constant(values, tf.int32)
            self._expansion_splits = tables.constant(np.cumsum([0] + lengths), tf.int64)
        user_defined = [
            (piece, index) for index, (piece, _, kind) in enumerate(pieces) if kind == spm_model.USER_DEFINED
        ]
        self._user_defined = None
        if user_defined:
            self._user_defined = trie.Trie([p for p, _ in user_defined], [i for _, i in user_defined])
            firsts = sorted({ord(p[0]) for p, _ in user_defined})
            self._user_firsts = tables.hash_table(firsts, [1] * len(firsts), 0, tf.int64, tf.int32)
        piece_chars = np.array([len(piece) for piece in texts], np.int64)
        piece_chars[self._unknown_id] = 1
        self.piece_chars = tables.constant(piece_chars, tf.int64)
        self.byte_ids = None if byte_ids is None else tables.constant(byte_ids, tf.int32, shape=[256])
        # Texts are merged unit by unit (`_units`): each distinct one once, or looked up whole.
        self._cuts = bpe.Cuts([texts[index] for index in makes])
        keys, ids = [_FROZEN + str(i).encode() for _, i in user_defined], [i for _, i in user_defined]
        for piece, index in merged.items():
            if bpe.merge_word([single[c] for c in piece], ranks) == [index]:
                keys.append(piece.encode("utf-8"))
                ids.append(index)
        self._whole_units = tables.hash_table(keys, ids, -1, tf.string, tf.int32)

    def __call__(self, code_points, splits, merge=True):
        """Normalized texts (code points int32, row splits int64) -> (ids int32, row splits int64).
        Without `merge`, each unknown character stays an unknown piece of its own."""
        return self._finish(*self._units(code_points, splits), code_points, merge)

    def sample(self, code_points, splits, dropout, seed, merge=True):
        """`__call__` with SentencePiece's BPE-dropout (`alpha`): each merge, when its turn comes, is
        skipped with probability `dropout`; every unit of every text draws on its own, from `seed`."""
        kept, frozen, values, row_starts, rows_of_texts = self._cut(code_points, splits)
        # Each unit merged where it stands (no unit looked up whole: a piece may come out split);
        # a user-defined symbol is a unit of its own, which no pair holds.
        symbols = tf.where(frozen >= 0, tf.cast(frozen, tf.int64), self._symbols(values))
        unit_bounds = tf.concat([row_starts, [tf.size(kept, out_type=tf.int64)]], axis=0)
        n_units = tf.size(row_starts, out_type=tf.int64)
        ids, unit_splits = bpe_dropout.sentencepiece_dropout(
            self._merges, symbols, ops.row_ids(unit_bounds), n_units, dropout, seed
        )
        return self._finish(ids, ops.take(unit_splits, rows_of_texts), code_points, merge)

    def _finish(self, ids, id_splits, code_points, merge):
        """Unused pieces split into what made them; with `merge`, unknown pieces as SentencePiece gives them."""
        if self._expansions is not None:
            ids, piece_splits = ops.gather_rows(self._expansion_values, self._expansion_splits, ids)
            id_splits = ops.take(piece_splits, id_splits)
        if merge:
            ids, id_splits = unknowns.finish(
                ids, id_splits, code_points, self.piece_chars, self._unknown_id, self.byte_ids
            )
        return ids, id_splits

    def _symbols(self, code_points):
        symbols = self._initial.lookup(tf.cast(code_points, tf.int64))
        return tf.where(symbols < 0, tf.constant(self._unknown_id, tf.int64), symbols)

    def _any_user_defined(self, code_points):
        return tf.reduce_any(self._user_firsts.lookup(tf.cast(code_points, tf.int64)) > 0)

    def _user_defined_symbols(self, code_points, splits):
        """The user-defined pieces in the texts, the longest at each position, left to right (as
        SentencePiece's prefix matcher finds them): the positions that start a symbol (int64, the
        others are inside a user-defined one) and, for each, the user-defined piece's id or -1."""
        size = tf.size(code_points)
        positions = tf.range(size)
        rows = ops.row_ids(splits)
        line_ends = tf.cast(ops.take(splits[1:], rows), tf.int32)
        line_first = positions == tf.cast(ops.take(splits[:-1], rows), tf.int32)
        roots = tf.where(self._user_firsts.lookup(tf.cast(code_points, tf.int64)) > 0, 0, -1)
        ends, found = self._user_defined.longest_matches(code_points, roots, line_ends)
        jumps = tf.where(ends >= 0, ends, positions + 1)
        jumps = tf.where(jumps >= line_ends, size, jumps)
        longest_line = tf.reduce_max(tf.concat([[0], splits[1:] - splits[:-1]], axis=0))
        kept = ops.indices_where(trie.greedy_path(jumps, line_first, longest_line))
        return kept, ops.take(found, kept)

    def _rows_around(self, kept, frozen, splits, starts_unit):
        """Rows of the `kept` symbols (of texts `splits`) that start at each text's start, at each
        user-defined symbol (`frozen` >= 0), after it, and where `starts_unit` (bool per kept
        symbol): (where each row starts among the kept symbols, the splits grouping rows into texts)."""
        rows = ops.row_ids(splits)
        line_first = ops.take(tf.range(tf.size(rows, out_type=tf.int64)) == ops.take(splits, rows), kept)
        is_frozen = frozen >= 0
        starts_row = line_first | is_frozen | tf.concat([[False], is_frozen[:-1]], axis=0) | starts_unit
        row_starts = ops.indices_where(starts_row)
        text_of_row = ops.take(ops.take(rows, kept), row_starts)
        return row_starts, ops.splits_from_row_ids(text_of_row, tf.size(splits, out_type=tf.int64) - 1)

    def _units(self, code_points, splits):
        """Texts cut into units between two characters that no piece made by a merge holds side by
        side (no merge crosses there: "x▁" is rarely a piece, so words part at their spaces, and
        text without spaces at many places) and around the user-defined symbols; each distinct unit
        is merged once, or looked up whole."""
        kept, frozen, values, row_starts, rows_of_texts = self._cut(code_points, splits)
        units = ops.encode_utf8(values, tf.concat([row_starts, [tf.size(kept, out_type=tf.int64)]], axis=0))
        # A user-defined symbol's unit is looked up by its id, under a key no text can be (0xFF).
        starts_frozen = ops.take(frozen, row_starts)
        by_id = tf.strings.join([_FROZEN, tf.strings.as_string(starts_frozen)])
        units = tf.where(starts_frozen >= 0, by_id, units)
        return words.encode(units, rows_of_texts, self._segment_units, self._whole_units)

    def _cut(self, code_points, splits):
        """`_units`' cut: the positions that start a symbol (the others are inside a user-defined one),
        the user-defined piece of each or -1, their code points, where each unit starts among them
        and the splits grouping the units into texts."""
        size = tf.size(code_points, out_type=tf.int64)
        if self._user_defined is None:
            kept, frozen = tf.range(size), -tf.ones([size], tf.int32)
        else:
            kept, frozen = ops.rare_cond(
                self._any_user_defined(code_points),
                lambda: self._user_defined_symbols(code_points, splits),
                lambda: (tf.range(size), -tf.ones([size], tf.int32)),
            )
        values = ops.take(code_points, kept)
        return (kept, frozen, values, *self._rows_around(kept, frozen, splits, self._cuts.apart(values)))

    def _segment_units(self, units):
        code_points, splits = ops.decode_utf8(units)
        return self._merges.merge(self._symbols(code_points), ops.row_ids(splits), tf.size(units, tf.int64))


def _pairs_making(merged, single):
    """Piece id -> the `(left id, right id, piece id)` pairs of symbols whose concatenation it is."""
    makes = {}
    for piece, piece_id in merged.items():
        pairs = []
        for cut in range(1, len(piece)):
            left, right = _symbol_id(piece[:cut], merged, single, piece), _symbol_id(piece[cut:], merged, single, piece)
            if left is not None and right is not None:
                pairs.append((left, right, piece_id))
        if pairs:
            makes[piece_id] = pairs
    return makes


def _symbol_id(text, merged, single, piece):
    """The id of the symbol `text` can be while encoding: a piece merged into, or a character's piece;
    None when it can be no symbol (several characters that no merge makes)."""
    if text in merged:
        return merged[text]
    if len(text) > 1:
        return None
    if text in single:
        return single[text]
    # SentencePiece would merge an unknown character into `piece`: its id is that of no piece.
    raise ValueError(
        f"The piece {piece!r} holds the character {text!r}, which is no piece of the model: such models "
        "are not supported."
    )


def _unused_expansions(pieces, makes):
    """What each piece comes out as: itself, or for a piece of type unused the pieces of the pair
    that made it, recursively, as (values, lengths) of one row per id; None when nothing is split.
    An unused piece that two pairs could make is refused: SentencePiece splits it by the pair it
    saw last, which depends on the text."""
    unused = {index for index, (_, _, kind) in enumerate(pieces) if kind == spm_model.UNUSED and index in makes}
    if not unused:
        return None
    for index in sorted(unused):
        if len(makes[index]) > 1:
            raise ValueError(
                f"The unused piece {pieces[index][0]!r} (id {index}) can be made by {len(makes[index])} pairs of "
                "pieces; SentencePiece would split it by the one it met last: such models are not supported."
            )

    def expand(index):  # the halves are shorter: this ends
        if index not in unused:
            return [index]
        left, right, _ = makes[index][0]
        return expand(left) + expand(right)

    rows = [expand(index) for index in range(len(pieces))]
    return [i for row in rows for i in row], [len(row) for row in rows]
