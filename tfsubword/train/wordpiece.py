"""WordPiece vocabulary learning over word counts: pure Python, no TensorFlow, no I/O.

Every word starts as its characters, all but the first carrying the suffix indicator (`h ##u ##g`).
Each step merges one pair of adjacent symbols everywhere it occurs (left to right, without overlap)
into a new symbol `a + b` without `b`'s indicator. Which pair:

- `algorithm="score"` (the seeds' rule): the highest `freq(ab) / (freq(a) * freq(b))`, compared exactly
  as integers; ties go to the pair that occurs first in the corpus (words in first-occurrence order,
  then left to right).
- `algorithm="likelihood"` (seed 004): the pair whose merge most increases the log-likelihood of the
  segmented corpus under a unigram model, `L = sum_t c_t log(c_t / N)`; training stops when no merge
  increases it. Merging `k` occurrences of `(a, b)` changes `L` by
  `f(c_a - k) - f(c_a) + f(c_b - k) - f(c_b) + f(c_ab + k) - f(c_ab) - f(N - k) + f(N)`, `f(x) = x log x`,
  so both rules are computed from the same counts. For `k` small against the counts, that gain is about
  `k * log(k N / (c_a c_b))`: `k` times the log of the score rule's ratio (times `N`). The score rule
  ranks pairs by how much more often they occur together than chance alone; the likelihood rule
  weighs that by how often, so it prefers frequent pairs and stops once nothing beats chance.

Both run incrementally: a merge rewrites only the words that contain the pair, and re-ranks only the
pairs whose counts changed or whose parts' counts changed, through a max-heap with lazy deletion
(every change that raises a pair's priority pushes a new entry; outdated entries are dropped, or
refreshed, when they reach the top).

Symbols are identified by their text: two different pairs that produce the same text produce the same
symbol, and the text enters the vocabulary once.
"""

import heapq
import math
import warnings

SCORE, LIKELIHOOD = "score", "likelihood"


def initial_alphabet(words, suffix_indicator):
    """Every first character of a word, and `suffix_indicator` + every non-initial character, sorted."""
    alphabet = set()
    for word in words:
        alphabet.add(word[0])
        alphabet.update(suffix_indicator + char for char in word[1:])
    return sorted(alphabet)


def learn_wordpiece(
    word_counts,
    vocab_size,
    *,
    special_tokens=("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
    suffix_indicator="##",
    min_frequency=1,
    max_token_length=None,
    algorithm=SCORE,
    progress=None,
):
    """The WordPiece vocabulary learned from `word_counts` (a mapping word -> count, in first-occurrence order).

    Returns the special tokens, then the alphabet sorted by code point, then each new token in the
    order learned: exactly `vocab_size` tokens, or fewer (with a warning) when the merges run out
    first. `min_frequency`: pairs occurring fewer times are not merged. `max_token_length`: no token
    covering more characters (not counting the indicator) is made. `progress`, if given, is called
    with the vocabulary size after each new token.
    """
    if algorithm not in (SCORE, LIKELIHOOD):
        raise ValueError(f"`algorithm` must be 'score' or 'likelihood'. Received: algorithm={algorithm!r}.")
    words = [word for word, count in word_counts.items() if word and count > 0]
    if not words:
        raise ValueError("The corpus has no words to learn from.")
    vocabulary = list(dict.fromkeys(special_tokens))
    known = set(vocabulary)
    vocabulary += [token for token in initial_alphabet(words, suffix_indicator) if token not in known]
    if vocab_size < len(vocabulary):
        raise ValueError(
            f"`vocab_size` must be at least {len(vocabulary)} for this corpus (the special tokens plus the "
            f"alphabet). Received: vocab_size={vocab_size}."
        )
    if progress:
        progress(len(vocabulary))
    known = set(vocabulary)
    merges = iter_merges(
        word_counts,
        suffix_indicator=suffix_indicator,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        algorithm=algorithm,
    )
    while len(vocabulary) < vocab_size:
        merge = next(merges, None)
        if merge is None:
            reason = "no pair improves the likelihood" if algorithm == LIKELIHOOD else "no pairs are left to merge"
            warnings.warn(
                f"Stopped at {len(vocabulary)} tokens, short of vocab_size={vocab_size}: {reason}.", stacklevel=2
            )
            break
        token = merge[2]
        if token not in known:
            known.add(token)
            vocabulary.append(token)
            if progress:
                progress(len(vocabulary))
    return vocabulary


def iter_merges(word_counts, *, suffix_indicator="##", min_frequency=1, max_token_length=None, algorithm=SCORE):
    """The merges in the order learned, as `(left, right, merged)` texts, until none is left."""
    merger = _Merger(word_counts, suffix_indicator, min_frequency, max_token_length, algorithm)
    while True:
        merge = merger.merge_best()
        if merge is None:
            return
        yield merge


def _x_log_x(x):
    return x * math.log(x) if x > 0 else 0.0


class _Merger:
    """The segmented corpus and its pair statistics, merged one pair at a time."""

    def __init__(self, word_counts, suffix_indicator, min_frequency, max_token_length, algorithm):
        self.indicator = suffix_indicator
        self.min_frequency = max(1, min_frequency)
        self.max_token_length = max_token_length
        self.algorithm = algorithm
        self.texts = []  # symbol id -> text
        self.widths = []  # symbol id -> number of characters covered
        self.ids = {}  # text -> symbol id
        self.freq = []  # symbol id -> occurrences in the corpus, weighted by word count
        self.sequences = []  # word index -> symbol ids (words of two symbols or more)
        self.counts = []  # word index -> word count
        self.pair_count = {}
        self.pair_words = {}  # pair -> set of word indices that contain it
        self.first = {}  # pair -> (word index, character offset) of its first occurrence; None: unknown
        self.by_symbol = {}  # symbol id -> set of live pairs it is part of
        self.producers = {}  # likelihood only: merged text -> set of live pairs that would make it
        total = 0
        for word, count in word_counts.items():
            if not word or count <= 0:
                continue
            symbols = [self._symbol(word[0], 1)] + [self._symbol(suffix_indicator + c, 1) for c in word[1:]]
            for symbol in symbols:
                self.freq[symbol] += count
            total += count * len(symbols)
            if len(symbols) < 2:
                continue
            index = len(self.sequences)
            self.sequences.append(symbols)
            self.counts.append(count)
            offset = 0
            for pair in zip(symbols, symbols[1:]):
                if pair in self.pair_count:
                    self.pair_count[pair] += count
                    self.pair_words[pair].add(index)
                else:
                    self._add_pair(pair, count, index, (index, offset))
                offset += 1
        self.total = total  # symbols in the corpus (N), weighted by word count
        # Scores are ordered by floor(count * 2**shift / (freq_a * freq_b)): with freq_a * freq_b below
        # total**2, two different fractions differ by more than 2**-shift, so the order is exact.
        self.shift = 4 * max(total, 2).bit_length() + 2
        self.heap = []
        for pair in self.pair_count:
            self._push(pair)
        heapq.heapify(self.heap)

    def _symbol(self, text, width):
        symbol = self.ids.get(text)
        if symbol is None:
            symbol = self.ids[text] = len(self.texts)
            self.texts.append(text)
            self.widths.append(width)
            self.freq.append(0)
        return symbol

    def _add_pair(self, pair, count, index, first):
        self.pair_count[pair] = count
        self.pair_words[pair] = {index}
        self.first[pair] = first
        self.by_symbol.setdefault(pair[0], set()).add(pair)
        self.by_symbol.setdefault(pair[1], set()).add(pair)
        if self.algorithm == LIKELIHOOD:
            self.producers.setdefault(self._merged_text(pair), set()).add(pair)

    def _remove_pair(self, pair):
        del self.pair_count[pair]
        del self.pair_words[pair]
        del self.first[pair]
        self.by_symbol[pair[0]].discard(pair)
        self.by_symbol[pair[1]].discard(pair)
        if self.algorithm == LIKELIHOOD:
            self.producers[self._merged_text(pair)].discard(pair)

    # Priorities.

    def _merge_count(self, pair):
        """How many merges the pair would make: its count, except for runs of a pair like (x, x)."""
        left, right = pair
        if left != right:
            return self.pair_count[pair]
        merges = 0
        for index in self.pair_words[pair]:
            sequence, run = self.sequences[index], 0
            for symbol in sequence + [-1]:
                if symbol == left:
                    run += 1
                else:
                    merges += self.counts[index] * (run // 2)
                    run = 0
        return merges

    def _priority(self, pair):
        """Larger is better: the exact score key, or the likelihood gain."""
        left, right = pair
        if self.algorithm == SCORE:
            return (self.pair_count[pair] << self.shift) // (self.freq[left] * self.freq[right])
        merges = self._merge_count(pair)
        merged = self.ids.get(self._merged_text(pair))
        merged_freq = self.freq[merged] if merged is not None else 0
        freq = self.freq
        if left == right:
            parts = _x_log_x(freq[left] - 2 * merges) - _x_log_x(freq[left])
        else:
            parts = (
                _x_log_x(freq[left] - merges) - _x_log_x(freq[left]) + _x_log_x(freq[right] - merges)
                - _x_log_x(freq[right])
            )
        return (
            parts + _x_log_x(merged_freq + merges) - _x_log_x(merged_freq)
            - _x_log_x(self.total - merges) + _x_log_x(self.total)
        )

    def _merged_text(self, pair):
        right = self.texts[pair[1]]
        if self.indicator and right.startswith(self.indicator):
            right = right[len(self.indicator) :]
        return self.texts[pair[0]] + right

    def _first(self, pair):
        first = self.first[pair]
        if first is None:
            index = min(self.pair_words[pair])
            sequence, offset = self.sequences[index], 0
            for position in range(len(sequence) - 1):
                if (sequence[position], sequence[position + 1]) == pair:
                    break
                offset += self.widths[sequence[position]]
            first = self.first[pair] = (index, offset)
        return first

    def _eligible(self, pair):
        if self.pair_count[pair] < self.min_frequency:
            return False
        if self.max_token_length is not None:
            return self.widths[pair[0]] + self.widths[pair[1]] <= self.max_token_length
        return True

    def _push(self, pair):
        if self._eligible(pair):
            index, offset = self._first(pair)
            self.heap.append((-self._priority(pair), index, offset, pair))

    def _push_now(self, pair):
        if self._eligible(pair):
            index, offset = self._first(pair)
            heapq.heappush(self.heap, (-self._priority(pair), index, offset, pair))

    # Merging.

    def merge_best(self):
        """Merge the best pair; return `(left, right, merged)` texts, or None when nothing can be merged."""
        pair = self._pop_best()
        if pair is None:
            return None
        text = self._merged_text(pair)
        merge = (self.texts[pair[0]], self.texts[pair[1]], text)
        merged = self._symbol(text, self.widths[pair[0]] + self.widths[pair[1]])
        self._apply(pair, merged)
        if len(self.heap) > 4 * len(self.pair_count) + 10_000:
            self.heap = []
            for live in self.pair_count:
                self._push(live)
            heapq.heapify(self.heap)
        return merge

    def _pop_best(self):
        heap = self.heap
        while heap:
            negative_priority, index, offset, pair = heapq.heappop(heap)
            if pair not in self.pair_count or not self._eligible(pair):
                continue
            current = (-self._priority(pair), *self._first(pair))
            if current == (negative_priority, index, offset):
                if self.algorithm == LIKELIHOOD and negative_priority >= 0:
                    return None
                return pair
            # Exact priorities only ever fall behind their heap entries; float gains may round up.
            if self.algorithm == SCORE and current < (negative_priority, index, offset):
                raise AssertionError(f"internal error: heap entry below the priority of {pair}")
            heapq.heappush(heap, (*current, pair))
        return None

    def _apply(self, pair, merged):
        left, right = pair
        changes = {}
        refresh = set()  # pairs whose first occurrence may have moved
        merges = 0
        for index in list(self.pair_words[pair]):
            sequence, count = self.sequences[index], self.counts[index]
            rewritten, position, end = [], 0, len(sequence) - 1
            while position <= end:
                if position < end and sequence[position] == left and sequence[position + 1] == right:
                    rewritten.append(merged)
                    position += 2
                    merges += count
                else:
                    rewritten.append(sequence[position])
                    position += 1
            before, after = {}, {}
            for old in zip(sequence, sequence[1:]):
                before[old] = before.get(old, 0) + 1
            for new in zip(rewritten, rewritten[1:]):
                after[new] = after.get(new, 0) + 1
            for old, number in before.items():
                now = after.get(old, 0)
                if now != number:
                    changes[old] = changes.get(old, 0) + (now - number) * count
                    if now == 0:
                        self.pair_words[old].discard(index)
                # Occurrences that touch the merged symbols may have moved even when their number has not.
                if now != number or left in old or right in old or merged in old:
                    first = self.first[old]
                    if first is not None and first[0] == index:
                        self.first[old] = None
                        refresh.add(old)
            for new, number in after.items():
                if new in before:
                    continue
                changes[new] = changes.get(new, 0) + number * count
                if new in self.pair_count:
                    self.pair_words[new].add(index)
                    first = self.first[new]
                    if first is not None and index <= first[0]:
                        self.first[new] = None
                else:
                    self._add_pair(new, 0, index, None)
            self.sequences[index] = rewritten
        self.freq[left] -= merges
        self.freq[right] -= merges
        self.freq[merged] += merges
        self.total -= merges
        touched = refresh
        for changed, delta in changes.items():
            count = self.pair_count[changed] + delta
            if count <= 0:
                self._remove_pair(changed)
            else:
                self.pair_count[changed] = count
                touched.add(changed)
        # Fewer `left`s and `right`s raise the priority of every pair they are part of.
        touched.update(self.by_symbol.get(left, ()))
        touched.update(self.by_symbol.get(right, ()))
        if self.algorithm == LIKELIHOOD:
            # A more frequent merged symbol raises the gain of the other pairs that would make it too.
            touched.update(self.producers.get(self.texts[merged], ()))
        for candidate in touched:
            if candidate in self.pair_count:
                self._push_now(candidate)
