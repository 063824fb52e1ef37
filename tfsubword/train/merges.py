"""The pair-merge engine of the WordPiece and BPE trainers: a segmented corpus that merges pairs in place,
and the loop that grows a vocabulary from merges. Python and NumPy, no TensorFlow, no I/O.

Every word starts as its characters (with WordPiece, all but the first carry the suffix indicator:
`h ##u ##g`). A merge of a pair of adjacent symbols rewrites only the places that hold it (left to
right, without overlap) and reports the pairs that may rank higher now (count risen, first occurrence
earlier), so that a trainer re-ranks those only. Symbols are identified by their text: two different
pairs that produce the same text produce the same symbol.

The corpus is one array of character slots, the distinct words of two characters or more one after
another; a symbol sits in the slot of its first character, and each slot links to the next and the
previous symbol of its word. A pair is known by where it may occur: the slots of its left part, kept
per pair and checked when read (a merge leaves the old places of the pairs around it to be dropped
then). So a merge costs a few array operations over the places it rewrites, not a Python step per word,
and a slot's number orders occurrences as the corpus does (words in the order of the word counts, then
left to right): the order that breaks ties.
"""

import bisect
import contextlib
import gc
import warnings

import numpy as np

# A pair (left, right) of symbol ids as one int64: left << _SHIFT | right.
_SHIFT = 32
_RIGHT = (1 << _SHIFT) - 1
# A merge in at most this many places is worked out in Python, in more with array operations.
_FEW = 48


def grow_vocabulary(initial, merges, vocab_size, stopped_because, progress=None):
    """The tokens `initial` (in order, each once), then the text each merge makes, in the order of
    `merges` (an iterator of merge texts), until there are `vocab_size` tokens or no merge is left (a
    warning then says `stopped_because`). `progress`, if given, is called with the size after each new
    token."""
    vocabulary = list(dict.fromkeys(initial))
    if vocab_size < len(vocabulary):
        raise ValueError(
            f"`vocab_size` must be at least {len(vocabulary)} for this corpus (the special tokens plus the "
            f"alphabet). Received: vocab_size={vocab_size}."
        )
    known = set(vocabulary)
    if progress:
        progress(len(vocabulary))
    with _without_cycle_collection():
        while len(vocabulary) < vocab_size:
            token = next(merges, None)
            if token is None:
                warnings.warn(
                    f"Stopped at {len(vocabulary)} tokens, short of vocab_size={vocab_size}: {stopped_because}.",
                    stacklevel=3,
                )
                break
            if token not in known:
                known.add(token)
                vocabulary.append(token)
                if progress:
                    progress(len(vocabulary))
    return vocabulary


@contextlib.contextmanager
def _without_cycle_collection():
    """The merge loop makes millions of small tuples and sets, none in a reference cycle: Python's cycle
    collector would scan them all again and again (a seventh of the BPE trainer's time on 46 MB)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


class PairCorpus:
    """The segmented corpus: its symbols and their frequencies, its pairs, their counts and first occurrences."""

    def __init__(self, word_counts, suffix_indicator, min_frequency, max_token_length, index_producers):
        self.indicator = suffix_indicator
        self.min_frequency = max(1, min_frequency)
        self.max_token_length = max_token_length
        self.filtered = self.min_frequency > 1 or max_token_length is not None  # is `eligible` ever False?
        self.texts = []  # symbol id -> text
        self.widths = []  # symbol id -> number of characters covered
        self.ids = {}  # text -> symbol id
        self.pair_count = {}
        self.first = {}  # pair -> slot of its first occurrence; None: unknown
        self.left_pairs = {}  # symbol id -> set of live pairs with it on the left
        self.right_pairs = {}  # symbol id -> set of live pairs with it on the right
        # merged text -> set of live pairs that would make it (kept for the likelihood rule only)
        self.producers = {} if index_producers else None
        self._places = {}  # pair -> arrays of slots where it may occur (checked when read)
        self.freq = []  # symbol id -> occurrences in the corpus, weighted by word count
        words = [(word, count) for word, count in word_counts.items() if word and count > 0]
        symbols, lengths, counts = self._symbols_of(words)
        self.freq = np.bincount(symbols, np.repeat(counts, lengths), len(self.texts)).astype(np.int64).tolist()
        self.total = int(np.dot(counts, lengths))  # symbols in the corpus (N), weighted by word count
        self._link(symbols, lengths, counts)

    def _symbols_of(self, words):
        """The symbol id of every character of `words` (registered in order of appearance), the words'
        lengths and counts."""
        lengths = np.fromiter((len(word) for word, _ in words), np.int64, len(words))
        counts = np.fromiter((count for _, count in words), np.int64, len(words))
        text = "".join(word for word, _ in words)
        code_points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32).astype(np.int64)
        # A character's key: its code point, and with a suffix indicator, whether it starts its word.
        keys = code_points * 2
        if self.indicator:
            keys += 1
            keys[np.cumsum(lengths) - lengths] -= 1
        distinct, first_seen, inverse = np.unique(keys, return_index=True, return_inverse=True)
        order = np.argsort(first_seen, kind="stable")
        for key in distinct[order].tolist():
            character = chr(key >> 1)
            self.symbol(self.indicator + character if key & 1 else character, 1)
        ids = np.empty(len(order), np.int32)
        ids[order] = np.arange(len(order), dtype=np.int32)
        return ids[inverse.reshape(-1)], lengths, counts

    def _link(self, symbols, lengths, counts):
        """The slots of the words of two symbols or more, their links, and every pair's places."""
        several = lengths >= 2
        self._symbol = symbols[np.repeat(several, lengths)]
        lengths = lengths[several]
        ends = np.cumsum(lengths)
        self._word_starts = (ends - lengths).tolist()
        self._weight = np.repeat(counts[several], lengths)  # slot -> the count of its word
        size = len(self._symbol)
        self._next = np.arange(1, size + 1, dtype=np.int64)
        self._next[ends - 1] = -1
        self._previous = np.arange(-1, size - 1, dtype=np.int64)
        self._previous[self._word_starts] = -1
        self._marks = np.zeros(size, bool)  # scratch: the right parts of the merge being made
        slots = np.flatnonzero(self._next >= 0)
        keys = _pair_keys(self._symbol[slots], self._symbol[slots + 1])
        order = np.argsort(keys, kind="stable")
        keys, slots = keys[order], slots[order]
        starts = np.flatnonzero(np.diff(keys, prepend=-1))
        totals = np.add.reduceat(self._weight[slots], starts) if len(slots) else np.zeros(0, np.int64)
        bounds = np.append(starts, len(slots)).tolist()
        for i, (key, total) in enumerate(zip(keys[starts].tolist(), totals.tolist())):
            self._add_pair((key >> _SHIFT, key & _RIGHT), total, slots[bounds[i] : bounds[i + 1]])

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

    def _add_pair(self, pair, count, places):
        """A new live pair, with `places` (sorted slots, its occurrences)."""
        self.pair_count[pair] = count
        self._places[pair] = [places]
        self.first[pair] = int(places[0])
        self.left_pairs.setdefault(pair[0], set()).add(pair)
        self.right_pairs.setdefault(pair[1], set()).add(pair)
        if self.producers is not None:
            self.producers.setdefault(self.merged_text(pair), set()).add(pair)

    def _remove_pair(self, pair):
        del self.pair_count[pair]
        del self._places[pair]
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

    def _occurrences(self, pair):
        """The sorted slots where `pair` occurs now (overlapping ones too, as in `x x x`)."""
        places = self._places[pair]
        slots = np.unique(np.concatenate(places)) if len(places) > 1 else places[0]
        right = self._next[slots]
        held = (self._symbol[slots] == pair[0]) & (right >= 0)
        held[held] = self._symbol[right[held]] == pair[1]
        if not held.all():
            slots = slots[held]
        self._places[pair] = [slots]
        return slots

    def _merged_places(self, pair):
        """The slots where merging `pair` left to right merges: runs of `(x, x)` merge every other one."""
        slots = self._occurrences(pair)
        if pair[0] != pair[1]:
            return slots
        kept, taken_right = [], -1
        for slot, right in zip(slots.tolist(), self._next[slots].tolist()):
            if slot != taken_right:
                kept.append(slot)
                taken_right = right
        return np.array(kept, np.int64)

    def first_slot(self, pair):
        """The slot of the pair's first occurrence: slots number the corpus's characters in order."""
        slot = self.first[pair]
        if slot is None:
            slot = self.first[pair] = int(self._occurrences(pair)[0])
        return slot

    def first_occurrence(self, pair):
        """(word index, character offset of the left part) of the pair's first occurrence."""
        slot = self.first_slot(pair)
        index = bisect.bisect_right(self._word_starts, slot) - 1
        return index, slot - self._word_starts[index]

    def eligible(self, pair):
        if self.pair_count[pair] < self.min_frequency:
            return False
        if self.max_token_length is not None:
            return self.widths[pair[0]] + self.widths[pair[1]] <= self.max_token_length
        return True

    def merge_count(self, pair):
        """How many merges the pair would make: its count, except for runs of a pair like (x, x)."""
        if pair[0] != pair[1]:
            return self.pair_count[pair]
        return int(self._weight[self._merged_places(pair)].sum())

    def _not_held(self, pairs, slots):
        """The `pairs` that no longer occur at their `slots`."""
        slots = np.array(slots, np.int64)
        lefts, rights = np.array(pairs, np.int64).reshape(-1, 2).T
        following = self._next[slots]
        held = (following >= 0) & (self._symbol[slots] == lefts) & (self._symbol[following] == rights)
        return [pair for pair, kept in zip(pairs, held.tolist()) if not kept]

    def apply(self, pair):
        """Merge `pair` everywhere, left to right. Returns the merged symbol and the live pairs that may
        rank higher than before: new pairs, pairs whose count rose, pairs whose first occurrence moved
        earlier. (The others rank lower: their outdated heap entries are corrected when popped.)"""
        left, right = pair
        merged = self.symbol(self.merged_text(pair), self.widths[left] + self.widths[right])
        symbol, following, preceding, marks = self._symbol, self._next, self._previous, self._marks
        slots = self._merged_places(pair)
        rights = following[slots]
        after = following[rights]
        before = preceding[slots]
        weight = self._weight[slots]
        # The symbol before a merge belongs to another pair when it is the right part of a merge just
        # before: that merge's pair with its own right side covers the two.
        marks[rights] = True
        has_before = before >= 0
        has_before[has_before] = ~marks[before[has_before]]
        marks[rights] = False
        has_after = after >= 0
        before, before_weight, after_slots, after_weight = (
            before[has_before],
            weight[has_before],
            slots[has_after],
            weight[has_after],
        )
        after = after[has_after]
        old_before, old_after = symbol[before], symbol[after]
        symbol[slots] = merged
        symbol[rights] = -1
        following[slots[~has_after]] = -1
        following[after_slots] = after
        preceding[after] = after_slots
        # (slots, weights, left symbols, right symbols) of the pairs gone, then of the pairs made.
        gone = [
            (slots, weight, left, right),
            (before, before_weight, old_before, left),
            (after_slots, after_weight, right, old_after),
        ]
        made = [(before, before_weight, old_before, merged), (after_slots, after_weight, merged, symbol[after])]
        changes = _changes_few(gone, made) if len(slots) <= _FEW else _changes_many(gone, made)
        merges = int(weight.sum())
        self.freq[left] -= merges
        self.freq[right] -= merges
        self.freq[merged] += merges
        self.total -= merges
        return merged, self._record(*changes)

    def _record(self, deltas, lost, found):
        """Update the pairs from a merge's `deltas` (pair -> change of count), the pairs that `lost`
        places, and the places `found` (pair -> sorted slots). Returns the pairs that may rank higher."""
        pair_count, firsts, touched = self.pair_count, self.first, set()
        for changed, places in found.items():
            if changed not in pair_count:
                self._add_pair(changed, 0, places)
                continue
            self._places[changed].append(places)
            first = firsts[changed]
            if first is not None and places[0] < first:
                firsts[changed] = int(places[0])
                touched.add(changed)
        checked = []  # pairs that lost places: is their first occurrence still theirs?
        for changed, delta in deltas.items():
            count = pair_count[changed] + delta
            if count <= 0:
                self._remove_pair(changed)
                continue
            pair_count[changed] = count
            if delta > 0:
                touched.add(changed)
            if changed in lost and firsts[changed] is not None:
                checked.append(changed)
        if checked:
            for changed in self._not_held(checked, [firsts[changed] for changed in checked]):
                firsts[changed] = None  # found again when asked: the pair ranks lower, not higher
        return touched


def _changes_few(gone, made):
    """`PairCorpus._record`'s arguments from the pairs a merge made and those gone (lists of (slots,
    weights, left symbols, right symbols); a symbol may be one for all), in Python: for a merge in a few
    places, cheaper than array operations."""
    deltas, lost, found = {}, set(), {}
    for slots, weights, lefts, rights in gone:
        for pair, weight in zip(_pairs(lefts, rights, len(slots)), weights.tolist()):
            deltas[pair] = deltas.get(pair, 0) - weight
            lost.add(pair)
    for slots, weights, lefts, rights in made:
        for pair, slot, weight in zip(_pairs(lefts, rights, len(slots)), slots.tolist(), weights.tolist()):
            deltas[pair] = deltas.get(pair, 0) + weight
            found.setdefault(pair, []).append(slot)
    return deltas, lost, {pair: np.array(sorted(places), np.int64) for pair, places in found.items()}


def _pairs(lefts, rights, size):
    lefts = lefts.tolist() if isinstance(lefts, np.ndarray) else [lefts] * size
    rights = rights.tolist() if isinstance(rights, np.ndarray) else [rights] * size
    return zip(lefts, rights)


def _pair_keys(lefts, rights, size=None):
    """Pairs of symbol ids (arrays, or one id for all `size`) as int64 keys."""
    lefts = np.asarray(lefts, np.int64)
    if size is not None:
        lefts = np.broadcast_to(lefts, (size,))
    return (lefts << _SHIFT) | np.asarray(rights, np.int64)


def _changes_many(gone, made):
    """`_changes_few` with array operations, for a merge in many places."""
    gone_keys = np.concatenate([_pair_keys(lefts, rights, len(slots)) for slots, _, lefts, rights in gone])
    made_keys = np.concatenate([_pair_keys(lefts, rights, len(slots)) for slots, _, lefts, rights in made])
    made_places = np.concatenate([slots for slots, *_ in made])
    weights = np.concatenate([-weights for _, weights, *_ in gone] + [weights for _, weights, *_ in made])
    distinct, inverse = np.unique(np.concatenate([gone_keys, made_keys]), return_inverse=True)
    inverse = inverse.reshape(-1)
    changes = np.bincount(inverse, weights, len(distinct)).astype(np.int64)  # exact below 2**53
    deltas = {(key >> _SHIFT, key & _RIGHT): delta for key, delta in zip(distinct.tolist(), changes.tolist())}
    lost = {(key >> _SHIFT, key & _RIGHT) for key in np.unique(gone_keys).tolist()}
    order = np.lexsort((made_places, made_keys))
    made_keys, made_places = made_keys[order], made_places[order]
    starts = np.flatnonzero(np.diff(made_keys, prepend=-1))
    bounds = np.append(starts, len(made_keys)).tolist()
    found = {
        (key >> _SHIFT, key & _RIGHT): made_places[bounds[i] : bounds[i + 1]]
        for i, key in enumerate(made_keys[starts].tolist())
    }
    return deltas, lost, found
