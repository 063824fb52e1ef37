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
from tfsubword.train.unigram_lattice import Lattice, release_freed_memory

_UNKNOWN_PENALTY = 10.0


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
    release_freed_memory()  # what counting the words freed
    pieces, scores = corpus.seeds(max_piece_length, seed_size, split_by_script, min_frequency)
    release_freed_memory()
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
        self.piece_length = np.array([len(p) for p in pieces], np.int64)
        self.lattice = Lattice(corpus, pieces)
        self.occurrence = self.lattice.occurrence

    def alive_pieces(self):
        return np.nonzero(self.alive)[0]

    def _piece_scores(self):
        """(Makes the lattice first if pieces were dropped since.) The score of each piece on an edge,
        -inf for pieces dropped since, and last (at index -1) an unknown character's."""
        if self.lattice.stale(self.alive):
            self.lattice.make(self.alive)
        return np.append(np.where(self.alive, self.scores, -np.inf), self._unknown_score())

    def em_step(self):
        table = self._piece_scores()
        # Forward, and backward: the same pass over the mirrored text. NumPy releases the GIL in its
        # loops, so the two run on two cores.
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            forward = pool.submit(self.lattice.passes, True, table, np.logaddexp)
            beta_mirrored = self.lattice.passes(False, table, np.logaddexp)
            alpha = forward.result()
        expected = self.lattice.expected_counts(alpha, beta_mirrored, table)[:-1]
        # M-step: digamma(count) - digamma(total), dropping pieces expected less than half a time.
        self.alive &= expected >= 0.5
        kept = expected[self.alive]
        self.scores = np.where(self.alive, _digamma(np.maximum(expected, 0.5)) - _digamma(kept.sum()), -np.inf)

    def _viterbi_counts(self):
        """How often each piece is on the best paths of the corpus, unknown characters counted as
        piece 0 (see the module's docstring)."""
        table = self._piece_scores()
        return self.lattice.best_path_counts(self.lattice.passes(True, table, np.maximum), table)

    def _piece_at(self, positions, length):
        """The alive piece of `length` characters starting at each of `positions`, and its score on a
        path (-inf where there is none; an unknown character scores like SentencePiece's `<unk>`)."""
        piece = self.lattice.pieces_at(positions, length)
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
