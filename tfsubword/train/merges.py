"""The pair-merge engine of the WordPiece and BPE trainers: a segmented corpus that merges pairs in place,
and the loop that grows a vocabulary from merges. Pure Python, no TensorFlow, no I/O.

Every word starts as its characters (with WordPiece, all but the first carry the suffix indicator:
`h ##u ##g`). A merge of a pair of adjacent symbols rewrites only the words that hold it (left to right,
without overlap) and reports the pairs whose counts or first occurrences changed, so that a trainer
re-ranks those only. Symbols are identified by their text: two different pairs that produce the same
text produce the same symbol.
"""

import warnings


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
                    removed = (
                        [position - 1, position, position + 1] if position + 1 < last else [position - 1, position]
                    )
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
