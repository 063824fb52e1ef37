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
pairs whose counts changed or whose parts' counts changed, through max-heaps with lazy deletion
(outdated entries are dropped or refreshed when they reach the top). Both priorities rise when a part
loses occurrences, and a frequent part (`##e`) is in thousands of pairs, so:

- heap keys use reference frequencies that frequent symbols keep a little below their true counts:
  their pairs' keys are upper bounds that stay valid over many merges, and selection examines entries
  until the next key cannot beat the best exact priority found;
- the score rule also groups pairs by their right part. `freq(ab) / (freq(a) freq(b))` is the group's
  common factor `1 / freq(b)` times `freq(ab) / freq(a)`, so a change of `freq(b)` leaves the order
  inside the group alone and only re-keys the group's one entry in the global heap.

Symbols are identified by their text: two different pairs that produce the same text produce the same
symbol, and the text enters the vocabulary once.
"""

import heapq
import math
import warnings

SCORE, LIKELIHOOD = "score", "likelihood"

# Heap keys use a reference frequency per symbol, never above its true frequency. A symbol in at most
# EAGER_DEGREE pairs keeps it exact (its pairs are re-ranked whenever it changes); a symbol in more
# pairs keeps it 1/SLACK below, and its pairs are re-ranked only when it falls under that. When more
# than CONTEST_LIMIT of its pairs are examined in one selection without winning, its headroom narrows
# four times.
EAGER_DEGREE = 4
SLACK = 128
CONTEST_LIMIT = 8


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
    corpus = _Corpus(word_counts, suffix_indicator, min_frequency, max_token_length, algorithm == LIKELIHOOD)
    ranking = _ScoreRanking(corpus) if algorithm == SCORE else _LikelihoodRanking(corpus)
    while True:
        pair = ranking.best()
        if pair is None:
            return
        left, right = pair
        merge = (corpus.texts[left], corpus.texts[right], corpus.merged_text(pair))
        merged, touched = corpus.apply(pair)
        ranking.update(touched, {left, right}, merged)
        yield merge


class _Corpus:
    """The segmented corpus: its symbols and their frequencies, its pairs, their counts and first occurrences."""

    def __init__(self, word_counts, suffix_indicator, min_frequency, max_token_length, index_producers):
        self.indicator = suffix_indicator
        self.min_frequency = max(1, min_frequency)
        self.max_token_length = max_token_length
        self.filtered = self.min_frequency > 1 or max_token_length is not None  # is `eligible` ever False?
        self.texts = []  # symbol id -> text
        self.widths = []  # symbol id -> number of characters covered
        self.ids = {}  # text -> symbol id
        self.freq = []  # symbol id -> occurrences in the corpus, weighted by word count
        self.sequences = []  # word index -> symbol ids (words of two symbols or more)
        self.counts = []  # word index -> word count
        self.pair_count = {}
        self.pair_words = {}  # pair -> set of word indices that contain it
        self.first = {}  # pair -> (word index, character offset) of its first occurrence; None: unknown
        self.left_pairs = {}  # symbol id -> set of live pairs with it on the left
        self.right_pairs = {}  # symbol id -> set of live pairs with it on the right
        # merged text -> set of live pairs that would make it (kept for the likelihood rule only)
        self.producers = {} if index_producers else None
        total = 0
        for word, count in word_counts.items():
            if not word or count <= 0:
                continue
            symbols = [self.symbol(word[0], 1)] + [self.symbol(suffix_indicator + c, 1) for c in word[1:]]
            for symbol in symbols:
                self.freq[symbol] += count
            total += count * len(symbols)
            if len(symbols) < 2:
                continue
            index = len(self.sequences)
            self.sequences.append(symbols)
            self.counts.append(count)
            for offset, pair in enumerate(zip(symbols, symbols[1:])):
                if pair in self.pair_count:
                    self.pair_count[pair] += count
                    self.pair_words[pair].add(index)
                else:
                    self._add_pair(pair, count, index, (index, offset))
        self.total = total  # symbols in the corpus (N), weighted by word count

    def symbol(self, text, width):
        symbol = self.ids.get(text)
        if symbol is None:
            symbol = self.ids[text] = len(self.texts)
            self.texts.append(text)
            self.widths.append(width)
            self.freq.append(0)
        return symbol

    def pairs_of(self, symbol):
        return self.left_pairs.get(symbol, set()) | self.right_pairs.get(symbol, set())

    def _add_pair(self, pair, count, index, first):
        self.pair_count[pair] = count
        self.pair_words[pair] = {index}
        self.first[pair] = first
        self.left_pairs.setdefault(pair[0], set()).add(pair)
        self.right_pairs.setdefault(pair[1], set()).add(pair)
        if self.producers is not None:
            self.producers.setdefault(self.merged_text(pair), set()).add(pair)

    def _remove_pair(self, pair):
        del self.pair_count[pair]
        del self.pair_words[pair]
        del self.first[pair]
        self.left_pairs[pair[0]].discard(pair)
        self.right_pairs[pair[1]].discard(pair)
        if self.producers is not None:
            self.producers[self.merged_text(pair)].discard(pair)

    def merged_text(self, pair):
        right = self.texts[pair[1]]
        if self.indicator and right.startswith(self.indicator):
            right = right[len(self.indicator) :]
        return self.texts[pair[0]] + right

    def first_occurrence(self, pair):
        """(word index, character offset of the left part) of the pair's first occurrence."""
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

    def eligible(self, pair):
        if self.pair_count[pair] < self.min_frequency:
            return False
        if self.max_token_length is not None:
            return self.widths[pair[0]] + self.widths[pair[1]] <= self.max_token_length
        return True

    def merge_count(self, pair):
        """How many merges the pair would make: its count, except for runs of a pair like (x, x)."""
        left, right = pair
        if left != right:
            return self.pair_count[pair]
        merges = 0
        for index in self.pair_words[pair]:
            run = 0
            for symbol in self.sequences[index] + [-1]:
                if symbol == left:
                    run += 1
                else:
                    merges += self.counts[index] * (run // 2)
                    run = 0
        return merges

    def apply(self, pair):
        """Merge `pair` everywhere, left to right. Returns the merged symbol and the live pairs that may
        rank higher than before: new pairs, pairs whose count rose, pairs whose first occurrence moved.
        (Pairs whose count fell rank lower: their outdated heap entries are corrected when popped.)"""
        left, right = pair
        merged = self.symbol(self.merged_text(pair), self.widths[left] + self.widths[right])
        changes = {}
        moved = set()  # pairs whose first occurrence may have moved
        merges = 0
        pair_words, firsts, sequences, pair_count = self.pair_words, self.first, self.sequences, self.pair_count
        counts = self.counts
        for index in list(pair_words[pair]):
            sequence, count = sequences[index], counts[index]
            last = len(sequence) - 1
            positions, position = [], 0
            while position < last:
                if sequence[position] == left and sequence[position + 1] == right:
                    positions.append(position)
                    position += 2
                else:
                    position += 1
            merges += count * len(positions)
            # Only the pairs next to a merge change: old pair indices p-1, p, p+1 around each merge at
            # p; new pair indices q-1, q around each merged symbol at q. (Character offsets of the
            # other pairs do not move either.)
            if len(positions) == 1:
                position = positions[0]
                rewritten = sequence[:position]
                rewritten.append(merged)
                rewritten += sequence[position + 2 :]
                if position:
                    removed = [position - 1, position, position + 1] if position + 1 < last else [position - 1, position]
                    added = [position - 1, position] if position + 1 < last else [position - 1]
                else:
                    removed = [0, 1] if 1 < last else [0]
                    added = [0] if 1 < last else []
            else:
                rewritten, start, merged_at = [], 0, []
                for position in positions:
                    rewritten += sequence[start:position]
                    merged_at.append(len(rewritten))
                    rewritten.append(merged)
                    start = position + 2
                rewritten += sequence[start:]
                removed = sorted({k for p in positions for k in (p - 1, p, p + 1) if 0 <= k < last})
                added = sorted({k for q in merged_at for k in (q - 1, q) if 0 <= k < len(rewritten) - 1})
            local = {}
            for k in removed:
                old = (sequence[k], sequence[k + 1])
                local[old] = local.get(old, 0) - 1
            for k in added:
                new = (rewritten[k], rewritten[k + 1])
                local[new] = local.get(new, 0) + 1
            remaining = None
            for changed, number in local.items():
                if number:
                    changes[changed] = changes.get(changed, 0) + number * count
                if changed not in pair_count:
                    self._add_pair(changed, 0, index, None)
                    continue
                if number < 0 and changed != pair:  # the merged pair goes entirely
                    if remaining is None:
                        remaining = set(zip(rewritten, rewritten[1:]))
                    if changed not in remaining:
                        pair_words[changed].discard(index)
                elif number > 0:
                    pair_words[changed].add(index)
                # Its occurrences here moved, appeared or went: if its first one may be here, find it again.
                first = firsts[changed]
                if first is not None and first[0] >= index:
                    firsts[changed] = None
                    moved.add(changed)
            sequences[index] = rewritten
        self.freq[left] -= merges
        self.freq[right] -= merges
        self.freq[merged] += merges
        self.total -= merges
        touched = moved
        for changed, delta in changes.items():
            count = self.pair_count[changed] + delta
            if count <= 0:
                self._remove_pair(changed)
            else:
                self.pair_count[changed] = count
                if delta > 0:
                    touched.add(changed)
        return merged, {p for p in touched if p in self.pair_count}


class _BoundedRanking:
    """What both rankings share: per-symbol reference frequencies with headroom (see EAGER_DEGREE)."""

    def __init__(self, corpus):
        self.corpus = corpus
        self.reference = list(corpus.freq)  # symbol id -> frequency used in heap keys, at most `freq`
        self.slack = {}  # symbol id -> its headroom denominator, when narrower than SLACK

    def _set_reference(self, symbol, reference):
        """Set `symbol`'s reference and re-key the pairs whose key depends on it."""
        raise NotImplementedError

    def _headroom(self, symbol):
        frequency = self.corpus.freq[symbol]
        return max(1, frequency - frequency // self.slack.get(symbol, SLACK))

    def _follow(self, symbol, dependents):
        """After `symbol` lost occurrences: exact if it keys at most EAGER_DEGREE pairs (`dependents`),
        else a new headroom once it falls below its reference."""
        frequency = self.corpus.freq[symbol]
        if dependents <= EAGER_DEGREE:
            if frequency != self.reference[symbol]:
                self._set_reference(symbol, frequency)
        elif frequency < self.reference[symbol]:
            self._set_reference(symbol, self._headroom(symbol))

    def _narrow(self, contested):
        """A few inexact keys near the top are cheap to examine again; many, at every step, are not:
        narrow the headroom of the symbols behind them."""
        for symbol, number in contested.items():
            if number > CONTEST_LIMIT:
                self.slack[symbol] = self.slack.get(symbol, SLACK) * 4
                self._set_reference(symbol, self._headroom(symbol))

    def _add_symbols(self, merged):
        self.reference.extend(self.corpus.freq[len(self.reference) :])
        if self.reference[merged] == 0:
            self.reference[merged] = self.corpus.freq[merged]


class _ScoreRanking(_BoundedRanking):
    """Pairs ranked by the exact score `count / (freq(left) * freq(right))`, in groups that share a factor.

    Each pair is *anchored* at one of its parts, the one in more pairs when the pair appears, and sits
    in that part's group (one group per symbol and side), ranked by `count / reference(other part)`,
    with the group's common factor `1 / freq(anchor)`. The global heap holds one entry per group: its
    top pair's key. `reference` equals `freq` for symbols in few pairs and stays a little below it for
    the others (see EAGER_DEGREE), so keys are upper bounds, exact for most pairs. When a symbol's
    frequency falls, its two groups are re-keyed at once, and the pairs it is the other part of only
    when it is light, or falls below its reference. Selection examines entries, in both levels, until
    the next key cannot beat the best exact score found (ties: first occurrence).
    """

    def __init__(self, corpus):
        super().__init__(corpus)
        bits = max(corpus.total, 2).bit_length()
        # Fractions with denominators below 2**bits (count / freq) or 2**(2*bits) (scores) that differ,
        # differ by more than the key resolution: the order is exact and ties are true ties.
        self.inner_shift = 2 * bits + 2
        self.shift = 4 * bits + 2
        self.anchor = {}  # pair -> 0 (left part) or 1 (right part)
        self.as_other = {}  # symbol id -> pairs it is the non-anchor part of
        self._rebuild()

    def _anchor(self, pair):
        side = self.anchor.get(pair)
        if side is None:
            corpus = self.corpus
            left, right = pair
            degree_left = len(corpus.left_pairs.get(left, ())) + len(corpus.right_pairs.get(left, ()))
            degree_right = len(corpus.left_pairs.get(right, ())) + len(corpus.right_pairs.get(right, ()))
            side = self.anchor[pair] = 0 if degree_left >= degree_right else 1
            self.as_other.setdefault(pair[1 - side], set()).add(pair)
        return side

    def _rebuild(self):
        corpus = self.corpus
        self.groups = {}  # (side, symbol) -> heap
        for pair in corpus.pair_count:
            if corpus.eligible(pair):
                key, entry = self._group_entry(pair)
                self.groups.setdefault(key, []).append(entry)
        self.heap = []
        for key, group in self.groups.items():
            heapq.heapify(group)
            top = self._group_top(key)
            if top is not None:
                self.heap.append(self._global_entry(top, self.reference))
        heapq.heapify(self.heap)
        self.entries = sum(map(len, self.groups.values())) + len(self.heap)

    def _group_entry(self, pair):
        """(group key, entry) of a live pair."""
        corpus = self.corpus
        side = self._anchor(pair)
        other = pair[1 - side]
        inner = (corpus.pair_count[pair] << self.inner_shift) // self.reference[other]
        return (side, pair[side]), (-inner, *corpus.first_occurrence(pair), other)

    def _global_entry(self, pair, other_freq):
        """The global entry of `pair`'s group, ranked by `pair`; `other_freq`: self.reference (a bound)
        or corpus.freq (exact)."""
        corpus = self.corpus
        side = self.anchor[pair]
        anchor, other = pair[side], pair[1 - side]
        score = (corpus.pair_count[pair] << self.shift) // (other_freq[other] * corpus.freq[anchor])
        return (-score, *corpus.first_occurrence(pair), side, anchor)

    def _group_top(self, key):
        """The group's live pair with the best key, its heap cleaned down to a current top; None if empty."""
        corpus, group = self.corpus, self.groups.get(key)
        side, anchor = key
        while group:
            other = group[0][-1]
            pair = (anchor, other) if side == 0 else (other, anchor)
            if pair not in corpus.pair_count or not corpus.eligible(pair) or self.anchor.get(pair) != side:
                heapq.heappop(group)
                continue
            current = self._group_entry(pair)[1]
            if current == group[0]:
                return pair
            heapq.heapreplace(group, current)
        return None

    def best(self):
        heap, best, held, contested, seen = self.heap, None, [], {}, set()
        while heap and (best is None or heap[0][:3] <= best[:3]):
            entry = heapq.heappop(heap)
            key = entry[3:]
            if key in seen:  # a duplicate entry: drop it
                continue
            top = self._group_top(key)
            if top is None:
                continue
            current = self._global_entry(top, self.reference)
            if current != entry:
                heapq.heappush(heap, current)
                continue
            held.append(entry)
            seen.add(key)
            other = top[1 - key[0]]
            if self.reference[other] == self.corpus.freq[other]:
                # An exact key on top: the group's best, as every other entry's key is an upper bound.
                if best is None or current[:3] < best[:3]:
                    best = (*current[:3], top)
            else:
                best = self._best_in_group(key, best, contested)
        for entry in held:
            heapq.heappush(heap, entry)
        self._narrow(contested)
        return None if best is None else best[3]

    def _best_in_group(self, key, best, contested):
        """The group's pair of best exact score if it beats `best` (else `best`), examining entries in key
        order while their bounds could; inexact keys that come close count as contested."""
        group, held, seen = self.groups[key], [], set()
        while True:
            pair = self._group_top(key)
            if pair is None:
                break
            bound = self._global_entry(pair, self.reference)
            if best is not None and bound[:3] > best[:3]:
                break
            if pair in seen:  # a duplicate entry: drop it
                heapq.heappop(group)
                continue
            seen.add(pair)
            held.append(heapq.heappop(group))
            exact = (*self._global_entry(pair, self.corpus.freq)[:3], pair)
            if best is None or exact[:3] < best[:3]:
                best = exact
            if bound[0] != exact[0]:
                other = pair[1 - key[0]]
                contested[other] = contested.get(other, 0) + 1
        for entry in held:
            heapq.heappush(group, entry)
        return best

    def _set_reference(self, symbol, reference):
        """Re-key the pairs whose key depends on `symbol`'s reference: those it is the other part of."""
        self.reference[symbol] = reference
        pairs = self.as_other.get(symbol, set())
        for pair in list(pairs):
            if pair in self.corpus.pair_count:
                self._raise(pair)
            else:
                pairs.discard(pair)
                del self.anchor[pair]

    def _raise(self, pair):
        """`pair` may rank higher than its entries say: push it in its group and the group globally.

        (The hot path: the same keys as `_group_entry` and `_global_entry`, computed once.)
        """
        corpus = self.corpus
        if corpus.filtered and not corpus.eligible(pair):
            return
        side = self.anchor.get(pair)
        if side is None:
            side = self._anchor(pair)
        anchor, other = pair[side], pair[1 - side]
        count = corpus.pair_count[pair]
        index, offset = corpus.first_occurrence(pair)
        reference = self.reference[other]
        inner = (count << self.inner_shift) // reference
        heapq.heappush(self.groups.setdefault((side, anchor), []), (-inner, index, offset, other))
        score = (count << self.shift) // (reference * corpus.freq[anchor])
        heapq.heappush(self.heap, (-score, index, offset, side, anchor))
        self.entries += 2

    def update(self, touched, decreased, merged):
        self._add_symbols(merged)
        for pair in touched:
            self._raise(pair)
        for symbol in decreased:
            self._follow(symbol, len(self.as_other.get(symbol, ())))
            # Its two groups rose by a common factor.
            for side in (0, 1):
                top = self._group_top((side, symbol))
                if top is not None:
                    heapq.heappush(self.heap, self._global_entry(top, self.reference))
                    self.entries += 1
        if self.entries > 8 * len(self.corpus.pair_count) + 100_000:
            self._rebuild()


class _LikelihoodRanking(_BoundedRanking):
    """Pairs ranked by likelihood gain, with bounded keys (see EAGER_DEGREE)."""

    def __init__(self, corpus):
        super().__init__(corpus)
        self.merged_texts = {}  # pair -> the text its merge would make
        self._rebuild()

    def _rebuild(self):
        self.heap = []
        for pair in self.corpus.pair_count:
            if self.corpus.eligible(pair):
                self.heap.append(self._entry(pair))
        heapq.heapify(self.heap)

    def _gain(self, pair, freq):
        """The gain in log-likelihood of merging `pair`, with the parts' frequencies `freq`.

        With the true frequencies it is exact; with `self.reference` (never above them) an upper bound,
        as the gain only falls when a part's frequency rises.
        """
        corpus = self.corpus
        left, right = pair
        merges = corpus.pair_count[pair] if left != right else corpus.merge_count(pair)
        text = self.merged_texts.get(pair)
        if text is None:
            text = self.merged_texts[pair] = corpus.merged_text(pair)
        merged = corpus.ids.get(text)
        existing = corpus.freq[merged] if merged is not None else 0
        total, log, lost = corpus.total, math.log, merges
        # f(x) = x log x, inlined; the same terms, in the same order, as the module docstring's formula
        # (float sums depend on their order, and equal gains must stay equal).
        before_left = freq[left]
        if left == right:
            after = before_left - 2 * lost
            parts = (after * log(after) if after > 0 else 0.0) - before_left * log(before_left)
        else:
            before_right = freq[right]
            after_left, after_right = before_left - lost, before_right - lost
            parts = (
                (after_left * log(after_left) if after_left > 0 else 0.0) - before_left * log(before_left)
                + (after_right * log(after_right) if after_right > 0 else 0.0) - before_right * log(before_right)
            )
        grown = existing + lost
        return (
            parts + grown * log(grown) - (existing * log(existing) if existing > 0 else 0.0)
            - (total - lost) * log(total - lost) + total * log(total)
        )

    def _entry(self, pair):
        return (-self._gain(pair, self.reference), *self.corpus.first_occurrence(pair), pair)

    def _push(self, pair):
        if pair in self.corpus.pair_count and self.corpus.eligible(pair):
            heapq.heappush(self.heap, self._entry(pair))

    def best(self):
        """The live pair of highest exact gain (earliest first occurrence among equals), or None.

        Every live pair has a heap entry that ranks no lower than its exact (gain, first occurrence), so
        once the heap's top ranks below the best exact value found, nothing left can beat it.
        """
        corpus, heap, best, held, seen, contested = self.corpus, self.heap, None, [], set(), {}
        while heap and (best is None or heap[0][:3] <= best[:3]):
            entry = heapq.heappop(heap)
            pair = entry[3]
            if pair in seen or pair not in corpus.pair_count or not corpus.eligible(pair):
                continue
            current = self._entry(pair)
            if current != entry:
                # Outdated: the pair ranks lower now, or a newer entry of it exists. Either way this one
                # goes, and a current entry takes its place (a duplicate at worst, also dropped).
                heapq.heappush(heap, current)
                continue
            seen.add(pair)
            held.append(entry)
            exact = (-self._gain(pair, corpus.freq), *current[1:3], pair)
            if best is None or exact[:3] < best[:3]:
                best = exact
            for part in set(pair):
                if self.reference[part] != corpus.freq[part]:
                    contested[part] = contested.get(part, 0) + 1
        for entry in held:
            if entry[3] != best[3]:
                heapq.heappush(heap, entry)
        self._narrow(contested)
        if best is None or best[0] >= 0:
            return None
        return best[3]

    def _set_reference(self, symbol, reference):
        self.reference[symbol] = reference
        for pair in self.corpus.pairs_of(symbol):
            self._push(pair)

    def update(self, touched, decreased, merged):
        corpus = self.corpus
        self._add_symbols(merged)
        raised = set(touched)
        # A more frequent merged symbol raises the gain of the other pairs that would make it too.
        raised.update(corpus.producers.get(corpus.texts[merged], ()))
        for pair in raised:
            self._push(pair)
        for symbol in decreased:
            self._follow(symbol, len(corpus.left_pairs.get(symbol, ())) + len(corpus.right_pairs.get(symbol, ())))
        if len(self.heap) > 8 * len(corpus.pair_count) + 100_000:
            self._rebuild()
