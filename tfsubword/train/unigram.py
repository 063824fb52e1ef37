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
import warnings

import numpy as np

from tfsubword.files.unigram_vocabulary import META_PIECES
from tfsubword.train.unigram_corpus import Corpus, training_words

_UNKNOWN_PENALTY = 10.0
# The lattice is made again when fewer than this share of its edges are alive.
_KEPT_EDGES = 0.75
# Edges per part of the EM step's expectations.
_CHUNK = 1 << 22


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
):
    """`word -> count` -> `[(piece, log_probability)]`, best first, `vocab_size - 3` pieces (the three
    meta pieces `<unk>`, `<s>`, `</s>` are the caller's). Fewer, with a warning, when the corpus lacks
    pieces."""
    words, counts, line_ends = training_words(word_counts)
    if not words:
        raise ValueError("The word counts are empty: there is nothing to learn from.")
    wanted = vocab_size - len(META_PIECES)
    if wanted < 1:
        raise ValueError(f"`vocab_size` must be more than {len(META_PIECES)} (the meta pieces). Received {vocab_size}.")
    corpus = Corpus(words, counts, character_coverage, line_ends)
    if len(corpus.required) > wanted:
        # Every covered character stays a piece (as SentencePiece refuses this too): pruning could never end.
        raise ValueError(
            f"`vocab_size` must be at least {len(corpus.required) + len(META_PIECES)} for this corpus (its "
            f"{len(corpus.required)} characters within `character_coverage` plus the meta pieces). "
            f"Received: vocab_size={vocab_size}."
        )
    pieces, scores = corpus.seeds(max_piece_length, seed_size, split_by_script, min_frequency)
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
    """Pieces with scores and an alive mask, and the lattice of the corpus over them."""

    def __init__(self, corpus, pieces, scores):
        self.corpus, self.pieces = corpus, pieces
        self.scores = np.asarray(scores, np.float64)
        self.alive = np.ones(len(pieces), bool)
        edge_start, edge_length, edge_piece = corpus.edges(pieces)
        self.piece_length = np.array([len(p) for p in pieces], np.int64)
        # One occurrence of each piece, where its own lattice is read from the corpus's.
        self.occurrence = np.full(len(pieces), -1, np.int64)
        order = np.argsort(edge_start, kind="stable")[::-1]
        self.occurrence[edge_piece[order]] = edge_start[order]
        single = edge_length == 1
        self._single = np.full(len(corpus.chars), -1, np.int64)
        self._single[edge_start[single]] = edge_piece[single]
        chars = corpus.chars
        self.word_of_position = np.cumsum(chars < 0) - (chars < 0)  # separators belong to the word before
        self.word_start_of_position = corpus.starts[self.word_of_position]
        # Where each position of the text is in the mirrored text (each word reversed in place).
        position = np.arange(len(chars) + 1)
        word = np.minimum(self.word_of_position[np.minimum(position, len(chars) - 1)], len(corpus.starts) - 1)
        self._mirrored = np.clip(corpus.starts[word] + (corpus.ends[word] - position), 0, len(chars))
        # Positions by their place in their word (then in the text): the order of a pass.
        self._relative = np.arange(len(chars) + 1) - np.append(self.word_start_of_position, len(chars))
        self._by_relative = np.argsort(self._relative, kind="stable")
        self._edges = (edge_start, edge_start + edge_length, edge_piece)  # the pieces' edges, alive or not
        self._unknown = None  # the positions of the lattice's unknown edges
        self._start = None  # no lattice yet

    def alive_pieces(self):
        return np.nonzero(self.alive)[0]

    def _index_passes(self):
        """The lattice: the alive pieces' edges (in the order of `corpus.edges`), then an unknown edge
        at each position where no alive one-character piece starts; and the order of each pass. Made
        again only when a one-character piece of the lattice is dropped (unknown edges change) or when
        a quarter of its edges are dropped: a dropped piece's edges score -inf, which leaves every sum
        and maximum as it was."""
        start, end, piece = self._edges
        keep = self.alive[piece]
        single = keep & (end - start == 1)
        self._covering = np.unique(piece[single])
        covered = np.zeros(len(self.corpus.chars), bool)
        covered[start[single]] = True
        unknown = np.nonzero(~covered & (self.corpus.chars >= 0))[0]
        # The same unknown edges as before: the passes' orders, less the dropped edges, still hold.
        same = self._unknown is not None and np.array_equal(unknown, self._unknown)
        lattice_keep = np.concatenate([keep, np.ones(len(unknown), bool)]) if same else None
        old_orders = (self._forward[0], self._backward[0]) if same else None
        self._unknown, self._forward, self._backward = unknown, None, None  # the old plans go first
        pieces = int(np.count_nonzero(keep))
        for name, values, rest in (("_start", start, unknown), ("_end", end, unknown + 1), ("_piece", piece, -1)):
            lattice = np.empty(pieces + len(unknown), np.int64)
            np.compress(keep, values, out=lattice[:pieces])
            lattice[pieces:] = rest
            setattr(self, name, lattice)
        del start, end, piece
        self._edges = (self._start[:pieces], self._end[:pieces], self._piece[:pieces])  # views, not copies
        word = self.word_of_position[self._start]
        mirror_start = self.corpus.starts[word] + (self.corpus.ends[word] - self._end)
        del word
        mirror_end = mirror_start + (self._end - self._start)
        if same:
            kept_index = np.cumsum(lattice_keep) - 1
            orders = [kept_index[order[lattice_keep[order]]] for order in old_orders]
            del old_orders, kept_index
        else:
            # Runs of edges of one length (and kind): no two end at the same position.
            kind = np.where(self._piece < 0, 0, self._end - self._start)
            runs = np.flatnonzero(np.diff(kind, prepend=-1, append=-1)).tolist()
            orders = [self._pass_order(self._end, runs), self._pass_order(mirror_end, runs)]
        self._forward = self._plan(orders[0], self._start, self._end)
        self._backward = self._plan(orders[1], mirror_start, mirror_end)

    def _pass_order(self, end, runs):
        """The order of a pass: the edges by their end's place in its word, edges ending at one
        position together in lattice order (so sums run in the same order every time)."""
        sizes = np.bincount(end, minlength=len(self._relative))[self._by_relative]
        offsets = np.empty(len(self._relative), np.int64)
        offsets[self._by_relative] = np.cumsum(sizes) - sizes
        order = np.empty(len(end), np.int64)
        for a, b in zip(runs[:-1], runs[1:]):
            ends = end[a:b]
            order[offsets[ends]] = np.arange(a, b)
            offsets[ends] += 1
        return order

    def _plan(self, order, start, end):
        """A pass's plan: its `order`; the bounds of each place in a word; the first edge of each end;
        the sorted starts and ends."""
        sorted_end = end[order]
        bounds = np.searchsorted(self._relative[sorted_end], np.arange(self.corpus.max_length + 2))
        heads = np.flatnonzero(np.diff(sorted_end, prepend=-1))
        return order, bounds, heads, np.searchsorted(heads, bounds), start[order], sorted_end

    def _edge_scores(self):
        """(Makes the lattice first if pieces were dropped since.) Each lattice edge's score now: its
        piece's, or an unknown character's; -inf for pieces dropped since."""
        if self._start is None or not self.alive[self._covering].all():
            self._index_passes()
        piece = np.maximum(self._piece, 0)
        alive = self.alive[piece]
        if np.count_nonzero(alive) < _KEPT_EDGES * len(alive):
            self._index_passes()
            piece = np.maximum(self._piece, 0)
            alive = self.alive[piece]
        return np.where(self._piece < 0, self._unknown_score(), np.where(alive, self.scores[piece], -np.inf))

    def _passes(self, plan, scores, reduce):
        """Values at every position (word starts 0) with `reduce` over incoming edges, by the pass
        `plan`; and the scores in its order."""
        order, bounds, heads, head_bounds, start, end = plan
        scores = scores[order]
        values = np.full(len(self.corpus.chars) + 1, -np.inf)
        values[self.corpus.starts] = 0.0
        for t in range(1, self.corpus.max_length + 1):
            a, b = bounds[t], bounds[t + 1]
            if a == b:
                continue
            group_heads = heads[head_bounds[t] : head_bounds[t + 1]]
            values[end[group_heads]] = reduce.reduceat(values[start[a:b]] + scores[a:b], group_heads - a)
        return values, scores

    def em_step(self):
        scores = self._edge_scores()
        # Forward, and backward: the same pass over the reversed text (positions mirrored within each
        # word). NumPy releases the GIL in its loops, so the two run on two cores.
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            forward = pool.submit(self._passes, self._forward, scores, np.logaddexp)
            beta_mirrored, _ = self._passes(self._backward, scores, np.logaddexp)
            alpha, _ = forward.result()
        beta = beta_mirrored[self._mirrored]
        corpus = self.corpus
        total = alpha[corpus.ends]
        posterior = np.empty(len(scores))
        for a in range(0, len(scores), _CHUNK):  # in parts: each step's temporaries are an edge array each
            b = a + _CHUNK
            start = self._start[a:b]
            word = self.word_of_position[start]
            part = np.exp(alpha[start] + scores[a:b] + beta[self._end[a:b]] - total[word], out=posterior[a:b])
            part *= corpus.counts[word]
        # Unknown edges count in a bin past the pieces'.
        bins = np.where(self._piece >= 0, self._piece, len(self.pieces))
        expected = np.bincount(bins, weights=posterior, minlength=len(self.pieces) + 1)[:-1]
        # M-step: digamma(count) - digamma(total), dropping pieces expected less than half a time.
        self.alive &= expected >= 0.5
        kept = expected[self.alive]
        self.scores = np.where(self.alive, _digamma(np.maximum(expected, 0.5)) - _digamma(kept.sum()), -np.inf)

    def _viterbi_counts(self):
        """How often each piece is on the best paths of the corpus, unknown characters counted as
        piece 0 (see the module's docstring)."""
        scores = self._edge_scores()
        plan = self._forward
        best, scores = self._passes(plan, scores, np.maximum)
        order, start, end = plan[0], plan[4], plan[5]
        piece = np.maximum(self._piece[order], 0)
        # The incoming edge of each position on its best path: an edge achieving the position's best.
        achieving = np.nonzero(best[start] + scores == best[end])[0]
        incoming = np.full(len(best), -1, np.int64)
        incoming[end[achieving[::-1]]] = achieving[::-1]  # the first such edge wins
        on_paths, weights = [], []
        position = self.corpus.ends.copy()
        word = np.arange(len(position))
        while len(position):
            edge = incoming[position]
            on_paths.append(piece[edge])
            weights.append(self.corpus.counts[word])
            position = start[edge]
            more = position > self.corpus.starts[word]
            position, word = position[more], word[more]
        # Word counts are whole numbers: their sums are exact in any order.
        return np.bincount(np.concatenate(on_paths), np.concatenate(weights), len(self.pieces))

    def _piece_at(self, positions, length):
        """The alive piece of `length` characters starting at each of `positions`, and its score on a
        path (-inf where there is none; an unknown character scores like SentencePiece's `<unk>`)."""
        if length == 1:
            piece = self._single[positions]
        else:
            starts, pieces = self.corpus._piece_of_window.get(length, (np.zeros(0, np.int64), np.zeros(0, np.int64)))
            slot = np.minimum(np.searchsorted(starts, positions), max(len(starts) - 1, 0))
            piece = np.where((len(starts) > 0) & (starts[slot] == positions), pieces[slot] if len(starts) else -1, -1)
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
