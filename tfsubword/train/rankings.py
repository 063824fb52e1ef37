"""The two WordPiece rankings of pairs, as max-heaps with lazy deletion over a `merges.PairCorpus`.

Outdated entries are dropped or refreshed when they reach the top. Both priorities rise when a part
loses occurrences, and a frequent part (`##e`) is in thousands of pairs, so:

- heap keys use reference frequencies that frequent symbols keep a little below their true counts:
  their pairs' keys are upper bounds that stay valid over many merges, and selection examines entries
  until the next key cannot beat the best exact priority found;
- the score rule also groups pairs by their right part. `freq(ab) / (freq(a) freq(b))` is the group's
  common factor `1 / freq(b)` times `freq(ab) / freq(a)`, so a change of `freq(b)` leaves the order
  inside the group alone and only re-keys the group's one entry in the global heap.
"""

import heapq
import math

# Heap keys use a reference frequency per symbol, never above its true frequency. A symbol in at most
# EAGER_DEGREE pairs keeps it exact (its pairs are re-ranked whenever it changes); a symbol in more
# pairs keeps it 1/SLACK below, and its pairs are re-ranked only when it falls under that. When more
# than CONTEST_LIMIT of its pairs are examined in one selection without winning, its headroom narrows
# four times.
EAGER_DEGREE = 4
SLACK = 128
CONTEST_LIMIT = 8


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


class ScoreRanking(_BoundedRanking):
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


class LikelihoodRanking(_BoundedRanking):
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
                (after_left * log(after_left) if after_left > 0 else 0.0)
                - before_left * log(before_left)
                + (after_right * log(after_right) if after_right > 0 else 0.0)
                - before_right * log(before_right)
            )
        grown = existing + lost
        return (
            parts
            + grown * log(grown)
            - (existing * log(existing) if existing > 0 else 0.0)
            - (total - lost) * log(total - lost)
            + total * log(total)
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
