"""The segmentation lattice of the unigram trainer: every piece's edges in the corpus's distinct words,
laid out for the EM step's forward and backward passes and for pruning's lookups. Pure NumPy.
"""

import ctypes

import numpy as np

# The lattice is made again when fewer than this share of its edges are alive.
_KEPT_EDGES = 0.75
# Edges per part of the passes, of the expectations and of the Viterbi counts.
_CHUNK = 1 << 20


class Lattice:
    """The edges of the corpus's windows that are pieces, made for the pieces alive.

    The lattice is its edges' (start, length, piece) arrays (an unknown character's piece is -1) in the
    order of the forward pass: by the place of the edge's end in its word, then by that end, then by
    length, so that the sums of a pass run in one order every time. The backward pass, the same pass
    over the mirrored text (each word reversed in place), reads it through an order of its own.
    Positions and pieces are int32 (`Corpus.index_type`), lengths one byte: the lattice is the
    trainer's largest structure, some three edges per character of the distinct words. It is kept
    while few of its edges die: a dropped piece's edges score -inf, which leaves every sum and maximum
    as it was.
    """

    def __init__(self, corpus, pieces):
        self.corpus = corpus
        index = corpus.index_type
        self._one_character = np.flatnonzero(np.array([len(p) == 1 for p in pieces], bool))
        # The one-character piece at each position, or -1: the first lattice's one-character edges.
        self._single = corpus.single_pieces(pieces)
        # One occurrence of each piece, where its own lattice is read from the corpus's: its first (the
        # windows are in text order, and the last of repeated assignments holds).
        self.occurrence = np.full(len(pieces), -1, np.int64)
        singles = np.flatnonzero(self._single >= 0)
        for positions, piece in [(singles, self._single[singles]), *corpus._piece_of_window.values()]:
            self.occurrence[piece[::-1]] = positions[::-1]
        del singles
        separator = corpus.chars < 0
        self.word_of_position = np.cumsum(separator, dtype=index) - separator  # a separator ends its word
        # Edges are counted in int32 too, unless the first lattice (the largest) could hold more.
        most = len(corpus.chars) + sum(len(positions) for positions, _ in corpus._piece_of_window.values())
        self._edge_index = np.int32 if most < 2**31 - 1 - _CHUNK else np.int64
        # Position p of word w is position flip[w] - p of the mirrored text.
        self._flip = (corpus.starts + corpus.ends).astype(index)
        # (start, length, piece) of the edges the next lattice is made from (the lattice's, once made),
        # in any order; None: the corpus's windows.
        self._edges = None
        self._covering = None  # the one-character pieces of the lattice; None: no lattice yet
        self._forward = self._backward = self._by_start = None

    def stale(self, alive):
        """Whether the lattice must be made (again) for the pieces `alive`: not made yet, a
        one-character piece of it dropped (its unknown edges change), or a quarter of its edges dead."""
        if self._covering is None or not alive[self._covering].all():
            return True
        return np.count_nonzero(np.append(alive, True)[self._edges[2]]) < _KEPT_EDGES * len(self._edges[2])

    def make(self, alive):
        """The lattice (see the class) of the pieces `alive` (bool per piece): their edges, and an
        unknown edge at each position where no alive one-character piece starts; and each pass's
        plan. Each length's edges are placed straight into the new lattice, one length at a time."""
        corpus, index = self.corpus, self.corpus.index_type
        source = self._edges
        self._edges = self._forward = self._backward = self._by_start = None  # the old plans go first
        self._covering = self._one_character[alive[self._one_character]]
        alive = np.append(alive, False)  # piece -1 (none, or unknown) reads False
        if source is None:
            longer = sorted(corpus._piece_of_window)
        else:
            longer = [each for each in np.flatnonzero(np.bincount(source[1])).tolist() if each > 1]

        def parts(each):
            """The lattice's edges of `each` characters (unknown ones too), as (starts, pieces) in parts."""
            if each == 1 and source is None:  # every character: its piece, or unknown
                for a in range(0, len(corpus.chars), _CHUNK):
                    starts = (a + np.flatnonzero(corpus.chars[a : a + _CHUNK] >= 0)).astype(index)
                    pieces = self._single[starts]
                    yield starts, np.where(alive[pieces], pieces, -1).astype(index)
            elif each == 1:  # the old lattice's: a dropped piece's edge becomes unknown
                for a in range(0, len(source[0]), _CHUNK):
                    members = a + np.flatnonzero(source[1][a : a + _CHUNK] == 1)
                    pieces = source[2][members]
                    yield source[0][members], np.where(alive[pieces], pieces, -1).astype(index)
            elif source is None:
                all_starts, all_pieces = corpus._piece_of_window[each]
                for a in range(0, len(all_starts), _CHUNK):
                    starts, pieces = all_starts[a : a + _CHUNK], all_pieces[a : a + _CHUNK]
                    keep = alive[pieces]
                    yield starts[keep], pieces[keep]
            else:
                for a in range(0, len(source[0]), _CHUNK):
                    members = a + np.flatnonzero(source[1][a : a + _CHUNK] == each)
                    pieces = source[2][members]
                    keep = alive[pieces]
                    yield source[0][members[keep]], pieces[keep]

        # Each position's place in its word, and its rank among positions ordered by place, then position.
        size = len(corpus.chars) + 1
        relative = np.arange(size, dtype=index)
        relative[:-1] -= corpus.starts[self.word_of_position].astype(index)
        relative[-1] = 0
        rank = np.empty(size, index)
        rank[np.argsort(relative, kind="stable")] = np.arange(size, dtype=index)
        # The first rank of each place in a word (its positions' ranks follow).
        place_ranks = np.cumsum(np.append(0, np.bincount(relative, minlength=corpus.max_length + 1)))
        del relative

        lengths = [1, *longer]
        offsets = self._offsets([rank[starts + each] for starts, _ in parts(each)] for each in lengths)
        total = int(offsets[-1])
        forward = self._plan(offsets, place_ranks)
        start = np.empty(total, index)
        length = np.empty(total, np.min_scalar_type(max(lengths)))
        piece = np.empty(total, index)
        for each in lengths:  # edges ending at one position go in order of length
            for starts, pieces in parts(each):
                keys = rank[starts + each]
                slots = offsets[keys]
                start[slots], length[slots], piece[slots] = starts, each, pieces
                offsets[keys] += 1
            if source is None and each > 1:  # the lattice holds them now (and pruning reads them there)
                del corpus._piece_of_window[each]
        del starts, pieces, keys, slots, offsets
        source = self._single = None  # the old lattice goes
        self._edges = (start, length, piece)
        self._forward = (None, *forward)

        # The backward pass: edge [s, e) of word w is [flip - e, flip - s) in the mirrored text.
        def mirror_parts(each):
            """The lattice's edges of `each` characters, as (edges, their keys in the backward order) in parts."""
            for a in range(0, total, _CHUNK):
                members = a + np.flatnonzero(length[a : a + _CHUNK] == each)
                starts = start[members]
                yield members, rank[self._flip[self.word_of_position[starts]] - starts]

        offsets = self._offsets([keys for _, keys in mirror_parts(each)] for each in lengths)
        backward = self._plan(offsets, place_ranks)
        order = np.empty(total, self._edge_index)
        for each in lengths:
            for members, keys in mirror_parts(each):
                order[offsets[keys]] = members
                offsets[keys] += 1
        del members, keys
        # Pruning reads each start's edges (shortest first) in the backward order: from offsets[k - 1]
        # (0 for k = 0) to offsets[k], k the rank of the start's mirror (placing them moved each
        # offset to its rank's end).
        self._by_start = (rank, offsets)
        self._backward = (order, *backward)
        release_freed_memory()

    def _offsets(self, classes):
        """Where each key's edges start in a pass's order, from the keys (ranks of ends) of each class of
        edges, in parts; its last element, past the last key's, is the number of edges."""
        sizes = np.zeros(len(self.corpus.chars) + 2, self._edge_index)
        for parts in classes:
            keys = np.concatenate(parts)
            sizes[1:] += np.bincount(keys, minlength=len(sizes) - 1)
            del keys
        return np.cumsum(sizes, out=sizes)

    @staticmethod
    def _plan(offsets, place_ranks):
        """A pass's plan from its `_offsets` (before edges are placed): the bounds of each place in a
        word (`place_ranks`: its first rank), the first edge of each end, and their bounds by place."""
        heads = offsets[:-1][np.diff(offsets) > 0]
        bounds = offsets[place_ranks]
        return bounds, heads, np.searchsorted(heads, bounds)

    def passes(self, forward, table, reduce):
        """Values at every position (word starts 0) with `reduce` over incoming edges, by the forward
        pass or the backward one (over the mirrored text: its values are the mirrored positions'),
        edges scored by their piece's entry in `table` (its last entry: unknown edges')."""
        order, bounds, heads, head_bounds = self._forward if forward else self._backward
        start, length, piece = self._edges
        values = np.full(len(self.corpus.chars) + 1, -np.inf)
        values[self.corpus.starts] = 0.0
        for t in range(1, self.corpus.max_length + 1):
            first, last = head_bounds[t], head_bounds[t + 1]
            while first < last:  # a place's edges in parts of some _CHUNK edges, each holding whole ends
                cut = min(last, max(first + 1, int(np.searchsorted(heads, heads[first] + _CHUNK))))
                a, b = heads[first], heads[cut] if cut < last else bounds[t + 1]
                firsts = heads[first:cut]  # the first edge of each end
                first = cut
                if order is None:
                    origins, scores = start[a:b], table[piece[a:b]]
                    ends = start[firsts] + length[firsts]
                else:  # the mirrored text: an edge ends at the mirror of its start
                    edges = order[a:b]
                    origins = start[edges]
                    ends = self._flip[self.word_of_position[origins]] - origins
                    origins = ends - length[edges]
                    scores = table[piece[edges]]
                    ends = ends[firsts - a]
                values[ends] = reduce.reduceat(values[origins] + scores, firsts - a)
        return values

    def expected_counts(self, alpha, beta_mirrored, table):
        """Each piece's expected count (then the unknown edges', last) from the passes' values, edges
        scored by `table`, in parts: each part's temporaries are an edge array each."""
        corpus = self.corpus
        total = alpha[corpus.ends]
        start, length, piece = self._edges
        unknown = len(table) - 1
        expected = np.zeros(len(table))
        for a in range(0, len(start), _CHUNK):
            b = a + _CHUNK
            edge_start, edge_piece = start[a:b], piece[a:b]
            word = self.word_of_position[edge_start]
            beta = beta_mirrored[self._flip[word] - (edge_start + length[a:b])]
            posterior = np.exp(alpha[edge_start] + table[edge_piece] + beta - total[word])
            posterior *= corpus.counts[word]
            expected += np.bincount(np.where(edge_piece < 0, unknown, edge_piece), posterior, len(expected))
        return expected

    def best_path_counts(self, best, table):
        """How often each piece is on the best paths of the corpus, given each position's best value
        (`passes` with a maximum over `table`); an unknown edge counts as piece 0."""
        start, length, piece = self._edges
        # The incoming edge of each position on its best path: the first edge (in the forward order)
        # achieving the position's best. Parts from the last, each backwards: the first write lasts.
        incoming = np.full(len(best), -1, self._edge_index)
        for a in reversed(range(0, len(start), _CHUNK)):
            b = a + _CHUNK
            edge_start = start[a:b]
            end = edge_start + length[a:b]
            achieving = np.flatnonzero(best[edge_start] + table[piece[a:b]] == best[end])[::-1]
            incoming[end[achieving]] = a + achieving
        on_paths, weights = [], []
        position = self.corpus.ends.copy()
        word = np.arange(len(position))
        while len(position):
            edge = incoming[position]
            on_paths.append(np.maximum(piece[edge], 0))
            weights.append(self.corpus.counts[word])
            position = start[edge]
            more = position > self.corpus.starts[word]
            position, word = position[more], word[more]
        # Word counts are whole numbers: their sums are exact in any order.
        return np.bincount(np.concatenate(on_paths), np.concatenate(weights), len(table) - 1)

    def pieces_at(self, positions, length):
        """The piece of the lattice's edge of `length` characters starting at each of `positions`, or -1
        (dropped since the lattice was made or not: the caller checks)."""
        rank, ends = self._by_start
        order, (_, lengths, pieces) = self._backward[0], self._edges
        key = rank[self._flip[self.word_of_position[positions]] - positions]
        first, limit = np.where(key > 0, ends[np.maximum(key - 1, 0)], 0), ends[key]
        piece = np.full(len(positions), -1, np.int64)
        for slot in range(length):  # its start's edges have distinct lengths, shortest first
            edge = order[np.minimum(first + slot, len(order) - 1)]
            found = (first + slot < limit) & (lengths[edge] == length)
            piece = np.where(found, pieces[edge], piece)
        return piece


def release_freed_memory():
    """Hand the memory that NumPy freed back to the system. glibc keeps freed heap pages for reuse, but
    a phase's many mid-sized arrays leave them in pieces too small for the next phase's: on the 45.6 MB
    corpus the peak was 0.35 GB higher without this. Elsewhere than glibc, nothing."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError, TypeError):
        pass
