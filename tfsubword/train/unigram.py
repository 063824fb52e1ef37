"""Unigram vocabulary learning (seed 001): frequent substrings, EM over the segmentation lattice, pruning.

Pure Python + NumPy over word counts (words carry their `▁` word-boundary mark). The steps follow
SentencePiece's unigram trainer, so that the result is a drop-in vocabulary:

0. The meta pieces' texts (`<unk>`, `<s>`, `</s>`) inside words are not text to learn: each occurrence
   becomes one unknown character (SentencePiece's `LoadSentences` replaces them by a boundary that is
   never a required character), so no piece holds them, and `<`, `>` are required only if other text
   has them.
1. Seed pieces: the substrings of words, up to `max_piece_length` characters, that SentencePiece's
   suffix array over whole lines has as nodes: followed by two different characters somewhere (so
   occurring at least twice), where a word's end is followed by the next word's `▁` or by the end of
   its line (the word counter marks each line's last word with a trailing space). So on text where a
   word is always followed by another (wikitext's `▁from`), the whole word is no seed, as in
   SentencePiece. (Its array also ends after the text's last word, which it then seeds if that word
   occurs twice only at the ends of lines; not here: word counts do not say which word that is.)
   Counted exactly, length by length, with NumPy; never holding `▁` after the first character, unknown
   characters, or characters of two scripts (ASCII digits count as punctuation, SentencePiece's
   `Common` script); the `seed_size` with the largest frequency x length, plus every required
   character. Scores start as log(frequency x length) normalized (SentencePiece's "character
   coverage" score; a required character's is its count).
2. EM: expected piece counts by forward-backward over each word's lattice (all words at once, one
   position per step), then new scores digamma(count) - digamma(total) (a sparse Bayesian prior), and
   pieces expected less than 0.5 times are dropped.
3. Pruning: for each piece, the best segmentation of its own text by the other pieces; the loss of the
   corpus likelihood if its Viterbi occurrences were split that way. The pieces losing the least go,
   keeping `shrinking_factor` of them per round, until `1.1 x vocab_size` remain (after that last
   pruning, no more EM: the scores are the last EM's, as SentencePiece 0.2's trainer). An unknown
   character on a path counts as the first piece (the most frequent character), as in SentencePiece,
   whose trainer lattices give unknown nodes the id 0: so a piece whose only alternative holds an
   unknown character is not always kept ("▁=" once "=" is no piece, as in wikitext's " = Heading = ").
   Without this rule, the tokens per line on wikitext-2 valid were 2.7% fewer than SentencePiece's at
   2,000 and 4,000 pieces; with it, equal to 0.1%.
4. The vocabulary: the required characters, then the best-scored pieces up to `vocab_size`.
"""

import concurrent.futures
import ctypes
import warnings

import numpy as np

from tfsubword.files.unigram_vocabulary import META_PIECES
from tfsubword.train.unigram_corpus import Corpus, training_words

_UNKNOWN_PENALTY = 10.0
# The lattice is made again when fewer than this share of its edges are alive.
_KEPT_EDGES = 0.75
# Edges per part of the EM step's expectations and of the Viterbi counts.
_CHUNK = 1 << 20


def learn_unigram(
    word_counts,
    vocab_size,
    *,
    max_piece_length=16,
    character_coverage=0.9995,
    seed_size=1_000_000,
    shrinking_factor=0.75,
    num_sub_iterations=2,
    split_by_script=True,
    min_frequency=1,
    progress=None,
    take_counts=False,
):
    """`word -> count` -> `[(piece, log_probability)]`, best first, `vocab_size - 3` pieces (the three
    meta pieces `<unk>`, `<s>`, `</s>` are the caller's). Fewer, with a warning, when the corpus lacks
    pieces. With `take_counts`, `word_counts` is emptied once read: a mapping the caller no longer
    needs gives its memory back before the lattice takes its own."""
    words, counts, line_ends = training_words(word_counts)
    if take_counts:
        word_counts.clear()
    if not words:
        raise ValueError("The word counts are empty: there is nothing to learn from.")
    wanted = vocab_size - len(META_PIECES)
    if wanted < 1:
        raise ValueError(f"`vocab_size` must be more than {len(META_PIECES)} (the meta pieces). Received {vocab_size}.")
    corpus = Corpus(words, counts, character_coverage, line_ends)
    del words  # the corpus holds them as code points
    if len(corpus.required) > wanted:
        # Every covered character stays a piece (as SentencePiece refuses this too): pruning could never end.
        raise ValueError(
            f"`vocab_size` must be at least {len(corpus.required) + len(META_PIECES)} for this corpus (its "
            f"{len(corpus.required)} characters within `character_coverage` plus the meta pieces). "
            f"Received: vocab_size={vocab_size}."
        )
    _release_freed_memory()  # what counting the words freed
    pieces, scores = corpus.seeds(max_piece_length, seed_size, split_by_script, min_frequency)
    _release_freed_memory()
    model = _Model(corpus, pieces, scores)
    desired = int(vocab_size * 1.1)
    rounds = 0
    while True:
        for _ in range(num_sub_iterations):
            model.em_step()
        rounds += 1
        if progress:
            progress(len(model.alive_pieces()), desired)
        if len(model.alive_pieces()) <= desired:
            break
        before = len(model.alive_pieces())
        model.prune(max(desired, int(shrinking_factor * before)))
        if len(model.alive_pieces()) <= desired or len(model.alive_pieces()) == before:
            break  # as SentencePiece 0.2's trainer: no EM after the last pruning (or pruning found none)
    final = model.finalize(wanted)
    if len(final) < wanted:
        warnings.warn(
            f"The corpus yields only {len(final) + len(META_PIECES)} pieces; returning them instead of {vocab_size}.",
            stacklevel=3,
        )
    return final


class _Model:
    """Pieces with scores and an alive mask, and the lattice of the corpus over them.

    The lattice is its edges' (start, length, piece) arrays (an unknown character's piece is -1) in the
    order of the forward pass: by the place of the edge's end in its word, then by that end, then by
    length, so that the sums of a pass run in one order every time. The backward pass, the same pass
    over the mirrored text (each word reversed in place), reads it through an order of its own.
    Positions and pieces are int32 (`Corpus.index_type`), lengths one byte: the lattice is the
    trainer's largest structure, some three edges per character of the distinct words.
    """

    def __init__(self, corpus, pieces, scores):
        self.corpus, self.pieces = corpus, pieces
        self.scores = np.asarray(scores, np.float64)
        self.alive = np.ones(len(pieces), bool)
        index = corpus.index_type
        self.piece_length = np.array([len(p) for p in pieces], np.int64)
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

    def alive_pieces(self):
        return np.nonzero(self.alive)[0]

    def _index_passes(self):
        """The lattice (see the class): the alive pieces' edges, and an unknown edge at each position
        where no alive one-character piece starts; and each pass's plan. Made again only when a
        one-character piece of the lattice is dropped (unknown edges change) or when a quarter of its
        edges are dropped: a dropped piece's edges score -inf, which leaves every sum and maximum as
        it was. Each length's edges are placed straight into the new lattice, one length at a time."""
        corpus, index = self.corpus, self.corpus.index_type
        source = self._edges
        self._edges = self._forward = self._backward = self._by_start = None  # the old plans go first
        alive = np.append(self.alive, False)  # piece -1 (none, or unknown) reads False
        self._covering = np.flatnonzero(self.alive & (self.piece_length == 1))
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
        _release_freed_memory()

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

    def _piece_scores(self):
        """(Makes the lattice first if pieces were dropped since.) The score of each piece on an edge,
        -inf for pieces dropped since, and last (at index -1) an unknown character's."""
        if self._covering is None or not self.alive[self._covering].all():
            self._index_passes()
        elif np.count_nonzero(np.append(self.alive, True)[self._edges[2]]) < _KEPT_EDGES * len(self._edges[2]):
            self._index_passes()
        return np.append(np.where(self.alive, self.scores, -np.inf), self._unknown_score())

    def _passes(self, plan, table, reduce):
        """Values at every position (word starts 0) with `reduce` over incoming edges, by the pass
        `plan`, edges scored by their piece's entry in `table`."""
        order, bounds, heads, head_bounds = plan
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

    def em_step(self):
        table = self._piece_scores()
        # Forward, and backward: the same pass over the mirrored text. NumPy releases the GIL in its
        # loops, so the two run on two cores.
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            forward = pool.submit(self._passes, self._forward, table, np.logaddexp)
            beta_mirrored = self._passes(self._backward, table, np.logaddexp)
            alpha = forward.result()
        corpus = self.corpus
        total = alpha[corpus.ends]
        start, length, piece = self._edges
        # Expected counts, in parts: each part's temporaries are an edge array each. Unknown edges
        # count in a bin past the pieces'.
        expected = np.zeros(len(self.pieces) + 1)
        for a in range(0, len(start), _CHUNK):
            b = a + _CHUNK
            edge_start, edge_piece = start[a:b], piece[a:b]
            word = self.word_of_position[edge_start]
            beta = beta_mirrored[self._flip[word] - (edge_start + length[a:b])]
            posterior = np.exp(alpha[edge_start] + table[edge_piece] + beta - total[word])
            posterior *= corpus.counts[word]
            expected += np.bincount(np.where(edge_piece < 0, len(self.pieces), edge_piece), posterior, len(expected))
        expected = expected[:-1]
        # M-step: digamma(count) - digamma(total), dropping pieces expected less than half a time.
        self.alive &= expected >= 0.5
        kept = expected[self.alive]
        self.scores = np.where(self.alive, _digamma(np.maximum(expected, 0.5)) - _digamma(kept.sum()), -np.inf)

    def _viterbi_counts(self):
        """How often each piece is on the best paths of the corpus, unknown characters counted as
        piece 0 (see the module's docstring)."""
        table = self._piece_scores()
        best = self._passes(self._forward, table, np.maximum)
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
        return np.bincount(np.concatenate(on_paths), np.concatenate(weights), len(self.pieces))

    def _piece_at(self, positions, length):
        """The alive piece of `length` characters starting at each of `positions`, and its score on a
        path (-inf where there is none; an unknown character scores like SentencePiece's `<unk>`)."""
        rank, ends = self._by_start
        order, (_, lengths, pieces) = self._backward[0], self._edges
        key = rank[self._flip[self.word_of_position[positions]] - positions]
        first, limit = np.where(key > 0, ends[np.maximum(key - 1, 0)], 0), ends[key]
        piece = np.full(len(positions), -1, np.int64)
        for slot in range(length):  # its start's edges have distinct lengths, shortest first
            edge = order[np.minimum(first + slot, len(order) - 1)]
            found = (first + slot < limit) & (lengths[edge] == length)
            piece = np.where(found, pieces[edge], piece)
        alive = (piece >= 0) & self.alive[np.maximum(piece, 0)]
        score = np.where(alive, self.scores[np.maximum(piece, 0)], -np.inf)
        if length == 1:
            score = np.where(alive, score, self._unknown_score())
        return np.where(alive, piece, -1), score

    def _unknown_score(self):
        alive_scores = self.scores[self.alive]
        return (alive_scores.min() if len(alive_scores) else 0.0) - _UNKNOWN_PENALTY

    def _alternatives(self, candidates, frequency):
        """For each candidate piece, its best segmentation into other pieces (read where the piece occurs
        in the corpus), all candidates of one length at once. Returns, per candidate: whether there is
        one, whether it beats the piece itself, its number of pieces, the sum over them of
        log(frequency[piece] + frequency[candidate]) (an unknown character is piece 0, as SentencePiece
        has it)."""
        n = len(candidates)
        found, beaten = np.zeros(n, bool), np.zeros(n, bool)
        count, log_sum = np.zeros(n), np.zeros(n)
        lengths = self.piece_length[candidates]
        for length in np.unique(lengths).tolist():
            group = np.nonzero(lengths == length)[0]
            group = group[np.argsort(self.occurrence[candidates[group]], kind="stable")]  # lookups in text order
            origin = self.occurrence[candidates[group]]
            rows = np.arange(len(group))
            best = np.full((len(group), length + 1), -np.inf)
            best[:, 0] = 0.0
            back_start = np.zeros((len(group), length + 1), np.int64)
            back_piece = np.full((len(group), length + 1), -1, np.int64)
            for e in range(1, length + 1):
                for s in range(e):
                    if s == 0 and e == length:
                        continue  # the piece itself
                    piece, score = self._piece_at(origin + s, e - s)
                    value = best[:, s] + score
                    better = value > best[:, e]
                    best[better, e] = value[better]
                    back_start[better, e] = s
                    back_piece[better, e] = piece[better]
            found[group] = best[:, length] > -np.inf
            beaten[group] = best[:, length] > self.scores[candidates[group]]
            own = frequency[candidates[group]]
            e = np.full(len(group), length)
            for _ in range(length):
                walking = e > 0
                piece = back_piece[rows, e]
                count[group] += walking
                log_sum[group] += np.where(walking, np.log(frequency[np.maximum(piece, 0)] + own), 0.0)
                e = np.where(walking, back_start[rows, e], 0)
        return found, beaten, count, log_sum

    def prune(self, size):
        alive = self.alive_pieces()
        frequency = self._viterbi_counts()
        total = frequency.sum()
        word_total = self.corpus.counts.sum()
        used = alive[frequency[alive] > 0]
        found, beaten, count, log_sum = self._alternatives(used, frequency)
        kept = used[~beaten & ~found]  # no other segmentation: always kept
        contest = ~beaten & found
        pieces, count, log_sum = used[contest], count[contest], log_sum[contest]
        with np.errstate(divide="ignore"):
            log_piece = np.log(frequency[pieces]) - np.log(total)
            log_alternative = log_sum - count * np.log(total + frequency[pieces] * (count - 1))
        loss = frequency[pieces] / word_total * (log_piece - log_alternative)
        order = np.lexsort((pieces, -loss))
        chosen = np.concatenate([kept, pieces[order][: max(size - len(kept), 0)]])
        self.alive = np.zeros(len(self.pieces), bool)
        self.alive[chosen] = True

    def finalize(self, wanted):
        alive = self.alive_pieces()
        scores = {self.pieces[i]: float(self.scores[i]) for i in alive}
        lowest = min(scores.values()) if scores else 0.0
        final, penalty = {}, 0.0
        for char in sorted(self.corpus.required, key=lambda c: (-self.corpus.required[c], c)):
            if char in scores:
                final[char] = scores[char]
            else:
                final[char] = lowest + penalty
                penalty += 0.0001
        for piece, score in sorted(scores.items(), key=lambda item: (-item[1], item[0])):
            if len(final) >= wanted:
                break
            final.setdefault(piece, score)
        return sorted(final.items(), key=lambda item: (-item[1], item[0]))[:wanted]


def _release_freed_memory():
    """Hand the memory that NumPy freed back to the system. glibc keeps freed heap pages for reuse, but
    a phase's many mid-sized arrays leave them in pieces too small for the next phase's: on the 45.6 MB
    corpus the peak was 0.35 GB higher without this. Elsewhere than glibc, nothing."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError, TypeError):
        pass


def _digamma(x):
    """The digamma function for positive x (recurrence up to 7, then the asymptotic series)."""
    x = np.asarray(x, np.float64)
    result = np.zeros_like(x)
    x = x.copy()
    while True:
        small = x < 7
        if not small.any():
            break
        result[small] -= 1 / x[small]
        x[small] += 1
    x -= 0.5
    inverse = 1 / x
    inverse2 = inverse * inverse
    series = inverse2 * (1 / 24 + inverse2 * (-7 / 960 + inverse2 * (31 / 8064 - 127 / 30720 * inverse2)))
    return result + np.log(x) + series
