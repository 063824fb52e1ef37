"""Byte-pair encoding training over word counts: Python and NumPy, no TensorFlow, no I/O.

Every word starts as its symbols (characters of the model's alphabet: with byte-level BPE, one per
byte). Each step merges the most frequent adjacent pair everywhere it occurs (left to right, without
overlap) into one symbol, its parts' texts joined; ties go to the pair that occurs first in the corpus
(words in the order of the word counts, then left to right), as in the seeds' worked example, whose
words are in the order first seen. `train_bpe` gives the words in an order of the counts alone (most
frequent first, then by code point), so that its merges do not depend on the order of the corpus (see
`tfsubword.train`).

It runs on the pair-merge engine the WordPiece trainer shares (`merges.PairCorpus`: a merge rewrites
only the places that hold the pair, and reports the pairs whose count rose or whose first occurrence
moved), with one max-heap of `(count, slot of the first occurrence)` and lazy deletion: a pair whose count fell keeps
an entry that ranks too high, and is re-ranked when that entry reaches the top.
"""

import heapq

from tfsubword.files.vocab import GPT2_SPECIAL_TOKENS
from tfsubword.train.merges import PairCorpus, grow_vocabulary


def learn_bpe(
    word_counts,
    vocab_size,
    *,
    special_tokens=GPT2_SPECIAL_TOKENS,
    alphabet=(),
    min_frequency=1,
    max_token_length=None,
    progress=None,
):
    """`(vocabulary, merges)` learned from `word_counts` (word -> count, whose order breaks ties).

    The vocabulary is the special tokens, then the alphabet (every character of the words, and the
    characters of `alphabet`), sorted by code point, then each new token in the order learned: exactly
    `vocab_size` tokens, or fewer (with a warning) when no pair is left first. `merges` lists the
    `(left, right)` pairs in the order learned. Pairs occurring fewer than `min_frequency` times are not
    merged, and no token longer than `max_token_length` symbols is made. `progress`, if given, is called
    with the vocabulary size after each new token.
    """
    words = [word for word, count in word_counts.items() if word and count > 0]
    if not words:
        raise ValueError("The corpus has no words to learn from.")
    characters = set(alphabet)
    for word in words:
        characters.update(word)
    merges = []

    def merged_texts():
        for left, right in iter_merges(word_counts, min_frequency=min_frequency, max_token_length=max_token_length):
            merges.append((left, right))
            yield left + right

    initial = [*special_tokens, *sorted(characters)]
    vocabulary = grow_vocabulary(initial, merged_texts(), vocab_size, "no pairs are left to merge", progress)
    return vocabulary, merges


def iter_merges(word_counts, *, min_frequency=1, max_token_length=None):
    """The merges in the order learned, as `(left, right)` texts, until no pair is left."""
    corpus = PairCorpus(word_counts, "", min_frequency, max_token_length, False)
    heap = [_entry(corpus, pair) for pair in corpus.pair_count if corpus.eligible(pair)]
    heapq.heapify(heap)
    while heap:
        entry = heapq.heappop(heap)
        pair = entry[2]
        if pair not in corpus.pair_count or not corpus.eligible(pair):
            continue
        current = _entry(corpus, pair)
        if current != entry:  # its count fell, or its first occurrence moved: rank it again
            heapq.heappush(heap, current)
            continue
        yield corpus.texts[pair[0]], corpus.texts[pair[1]]
        _, touched = corpus.apply(pair)
        for other in touched:
            if corpus.eligible(other):
                heapq.heappush(heap, _entry(corpus, other))


def _entry(corpus, pair):
    return (-corpus.pair_count[pair], corpus.first_slot(pair), pair)
