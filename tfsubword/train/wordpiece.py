"""WordPiece vocabulary learning over word counts: Python and NumPy, no TensorFlow, no I/O.

Every word starts as its characters, all but the first carrying the suffix indicator (`h ##u ##g`).
Each step merges one pair of adjacent symbols everywhere it occurs (left to right, without overlap)
into a new symbol `a + b` without `b`'s indicator. Which pair:

- `algorithm="score"` (the seeds' rule): the highest `freq(ab) / (freq(a) * freq(b))`, compared exactly
  as integers; ties go to the pair that occurs first in the corpus (words in the order of the word
  counts, then left to right). The seeds count their words in the order first seen; `train_wordpiece`
  gives the words in an order of the counts alone (most frequent first, then by code point), so that its
  vocabulary does not depend on the order of the corpus (see `tfsubword.train`).
- `algorithm="likelihood"` (seed 004): the pair whose merge most increases the log-likelihood of the
  segmented corpus under a unigram model, `L = sum_t c_t log(c_t / N)`; training stops when no merge
  increases it. Merging `k` occurrences of `(a, b)` changes `L` by
  `f(c_a - k) - f(c_a) + f(c_b - k) - f(c_b) + f(c_ab + k) - f(c_ab) - f(N - k) + f(N)`, `f(x) = x log x`,
  so both rules are computed from the same counts. For `k` small against the counts, that gain is about
  `k * log(k N / (c_a c_b))`: `k` times the log of the score rule's ratio (times `N`). The score rule
  ranks pairs by how much more often they occur together than chance alone; the likelihood rule
  weighs that by how often, so it prefers frequent pairs and stops once nothing beats chance. Ties
  go as with the score rule.

Both run incrementally on the pair-merge engine BPE shares (`merges.PairCorpus`): a merge rewrites only
the places that hold the pair, and the rankings (`rankings`) re-rank only the pairs whose counts or
whose parts' counts changed. Symbols are identified by their text: two different pairs that produce the
same text produce the same symbol, and the text enters the vocabulary once.
"""

from tfsubword import checks
from tfsubword.files.vocab import BERT_SPECIAL_TOKENS
from tfsubword.train.merges import PairCorpus, grow_vocabulary
from tfsubword.train.rankings import LikelihoodRanking, ScoreRanking

SCORE, LIKELIHOOD = "score", "likelihood"
ALGORITHMS = (SCORE, LIKELIHOOD)


def initial_alphabet(words, suffix_indicator):
    """Every first character of a word, and `suffix_indicator` + every non-initial character, sorted."""
    alphabet = set()
    for word in words:
        alphabet.add(word[0])
        alphabet.update(suffix_indicator + char for char in word[1:])
    return sorted(alphabet)


def within_alphabet(word_counts, size):
    """`word_counts` with only the `size` most frequent characters (ties by code point) left in the
    words: the others are taken out (a word left empty goes), and words made equal add up (the kept
    characters depend on the counts alone, not on their order)."""
    frequency = {}
    for word, count in word_counts.items():
        for char in word:
            frequency[char] = frequency.get(char, 0) + count
    kept = set(sorted(frequency, key=lambda char: (-frequency[char], char))[:size])
    if len(kept) == len(frequency):
        return word_counts
    counts = {}
    for word, count in word_counts.items():
        word = "".join(char for char in word if char in kept)
        if word:
            counts[word] = counts.get(word, 0) + count
    return counts


def learn_wordpiece(
    word_counts,
    vocab_size,
    *,
    special_tokens=BERT_SPECIAL_TOKENS,
    suffix_indicator="##",
    min_frequency=1,
    max_token_length=None,
    algorithm=SCORE,
    progress=None,
):
    """The WordPiece vocabulary learned from `word_counts` (a mapping word -> count, whose order breaks ties:
    the seeds' worked examples come out with their words in the order first seen).

    Returns the special tokens, then the alphabet sorted by code point, then each new token in the
    order learned: exactly `vocab_size` tokens, or fewer (with a warning) when the merges run out
    first. `min_frequency`: pairs occurring fewer times are not merged. `max_token_length`: no token
    covering more characters (not counting the indicator) is made. `progress`, if given, is called
    with the vocabulary size after each new token.
    """
    checks.choice("algorithm", algorithm, ALGORITHMS)
    words = [word for word, count in word_counts.items() if word and count > 0]
    if not words:
        raise ValueError("The corpus has no words to learn from.")
    merges = iter_merges(
        word_counts,
        suffix_indicator=suffix_indicator,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        algorithm=algorithm,
    )
    reason = "no pair improves the likelihood" if algorithm == LIKELIHOOD else "no pairs are left to merge"
    initial = [*special_tokens, *initial_alphabet(words, suffix_indicator)]
    return grow_vocabulary(initial, (merged for _, _, merged in merges), vocab_size, reason, progress)


def iter_merges(word_counts, *, suffix_indicator="##", min_frequency=1, max_token_length=None, algorithm=SCORE):
    """The merges in the order learned, as `(left, right, merged)` texts, until none is left."""
    corpus = PairCorpus(word_counts, suffix_indicator, min_frequency, max_token_length, algorithm == LIKELIHOOD)
    ranking = ScoreRanking(corpus) if algorithm == SCORE else LikelihoodRanking(corpus)
    while True:
        pair = ranking.best()
        if pair is None:
            return
        left, right = pair
        merge = (corpus.texts[left], corpus.texts[right], corpus.merged_text(pair))
        merged, touched = corpus.apply(pair)
        ranking.update(touched, {left, right}, merged)
        yield merge
