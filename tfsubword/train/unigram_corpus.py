"""The corpus of the unigram trainer: its distinct words as one code-point array, the characters that
must be pieces, and the seed pieces (step 1 of `unigram`). Pure Python + NumPy.
"""

import unicodedata

import numpy as np

from tfsubword.files.sentencepiece_model import SPACE_SYMBOL
from tfsubword.files.unigram_vocabulary import META_PIECES

# What a meta piece's text becomes in a word (SentencePiece's kPretokenizationBoundaryChar): never a
# required character, so always unknown.
_BOUNDARY = "\x1f"


class Corpus:
    """The distinct words as one code-point array: word w holds [starts[w], ends[w]), followed by -1.
    `line_ends[w]` of word w's `counts[w]` occurrences end a line (none if not given)."""

    def __init__(self, words, counts, character_coverage, line_ends=None):
        self.counts = counts
        self.line_ends = np.zeros(len(words)) if line_ends is None else line_ends
        lengths = np.array([len(word) for word in words], np.int64)
        self.starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]])
        self.ends = self.starts + lengths
        text = "\x00".join(words) + "\x00"
        self.chars = np.frombuffer(text.encode("utf-32-le"), np.uint32).astype(np.int32)
        self.chars[self.ends] = -1
        # Positions and pieces are counted in this type: int32, unless the text is longer.
        self.index_type = np.int32 if len(self.chars) < 2**31 - 1 else np.int64
        # Required characters: the most frequent, until they cover `character_coverage` of the text.
        inside = self.chars >= 0
        codes, inverse = np.unique(self.chars[inside], return_inverse=True)
        char_counts = np.bincount(inverse, weights=self.weights()[inside])
        order = sorted(range(len(codes)), key=lambda i: (-char_counts[i], codes[i]))
        total, covered, required = char_counts.sum(), 0.0, []
        for i in order:
            if covered / total >= character_coverage:
                break
            covered += char_counts[i]
            if codes[i] != ord(_BOUNDARY):  # counted as covered, but never a piece (as SentencePiece)
                required.append(i)
        self.required = {chr(codes[i]): float(char_counts[i]) for i in required}
        known = np.zeros(len(codes), bool)
        known[required] = True
        self.known = np.zeros(len(self.chars), bool)
        self.known[np.nonzero(inside)[0]] = known[inverse]
        self.max_length = int(lengths.max())

    def weights(self):
        """The count of the word each position belongs to (float64, made when asked: as large as the text)."""
        return np.repeat(self.counts, self.ends - self.starts + 1)

    def seeds(self, max_piece_length, seed_size, split_by_script, min_frequency=1):
        """Seed pieces and their initial log-probabilities; also records, per length, the windows of the
        text that are seeds and their pieces, for the first lattice. Substrings occurring fewer than
        `min_frequency` times are no seeds."""
        chars, n = self.chars, len(self.chars)
        weights = self.weights()
        bad = ~self.known  # separators and unknown characters
        space = chars == ord(SPACE_SYMBOL)
        scripts = _scripts(chars) if split_by_script else np.zeros(n, np.int64)
        index = self.index_type
        changes = np.concatenate([[False], scripts[1:] != scripts[:-1]])
        del scripts
        bad_sum, space_sum, change_sum = (np.cumsum(np.append(False, x), dtype=index) for x in (bad, space, changes))
        del changes
        # The character after each position, as in SentencePiece's whole lines: unknown characters are
        # all one character, and a word's end is followed by the next word's "▁" or by the end of its
        # line (-3), or by both (`both`) if the word occurs in both places.
        follow = np.where(bad, -2, chars)
        follow[self.ends] = np.where(self.line_ends < self.counts, ord(SPACE_SYMBOL), -3)
        both = np.zeros(n, bool)
        both[self.ends] = (self.line_ends > 0) & (self.line_ends < self.counts)
        scores, lengths, keys = [], [], []  # of each frequent substring, by its window key
        windows = {}  # length -> (window positions, their key ids, the distinct keys)
        for length in range(2, min(max_piece_length, self.max_length) + 1):
            first = np.arange(n - length + 1, dtype=index)
            last = first + length
            valid = (bad_sum[last] - bad_sum[first] == 0) & (space_sum[last] - space_sum[first + 1] == 0)
            # A script change is allowed only right after a leading "▁".
            after = first + 1 + space[: len(first)]
            valid &= change_sum[last] - change_sum[np.minimum(after, last)] == 0
            positions = np.nonzero(valid)[0]
            if not len(positions):
                continue
            window_chars = np.lib.stride_tricks.sliding_window_view(chars, length)[positions]
            window_keys = np.ascontiguousarray(window_chars, np.int32).view(np.dtype((np.void, 4 * length))).ravel()
            unique, inverse = np.unique(window_keys, return_inverse=True)
            frequency = np.bincount(inverse, weights=weights[positions])
            # Seeds are the nodes of SentencePiece's suffix array: substrings followed by two different
            # characters somewhere (so occurring at least twice).
            after = follow[positions + length]
            some = np.empty(len(unique), np.int64)
            some[inverse] = after
            branching = (after != some[inverse]) | both[positions + length]
            frequent = np.nonzero(np.bincount(inverse, weights=branching, minlength=len(unique)))[0]
            frequent = frequent[frequency[frequent] >= min_frequency]
            # Only the windows of candidate seeds are kept, their keys renumbered among the candidates.
            candidate = np.full(len(unique), -1, np.int64)
            candidate[frequent] = np.arange(len(frequent))
            keep = np.nonzero(candidate[inverse] >= 0)[0]
            windows[length] = (positions[keep].astype(index), candidate[inverse[keep]].astype(index), unique[frequent])
            scores.append(frequency[frequent] * length)
            lengths.append(np.full(len(frequent), length))
            keys.append(np.arange(len(frequent)))
        scores, lengths, keys = (np.concatenate(x) if x else np.zeros(0, np.int64) for x in (scores, lengths, keys))
        chosen = np.argsort(-scores, kind="stable")[:seed_size]
        pieces = list(self.required)
        frequencies = list(self.required.values())
        self._piece_of_window = {}
        for length in np.unique(lengths[chosen]).tolist():
            selected = chosen[lengths[chosen] == length]
            positions, inverse, unique = windows[length]
            piece_of_key = np.full(len(unique), -1, np.int64)
            piece_of_key[keys[selected]] = len(pieces) + np.arange(len(selected))
            text = unique[keys[selected]].tobytes().decode("utf-32-le")
            pieces += [text[i : i + length] for i in range(0, len(text), length)]
            frequencies += scores[selected].tolist()  # frequency x length, as SentencePiece's seeds
            piece = piece_of_key[inverse]
            hit = np.nonzero(piece >= 0)[0]
            # The windows that are seeds.
            self._piece_of_window[length] = (positions[hit], piece[hit].astype(index))
        frequencies = np.array(frequencies)
        return pieces, np.log(frequencies) - np.log(frequencies.sum())

    def single_pieces(self, pieces):
        """The one-character piece (its index in `pieces`) at each position of the text, or -1."""
        single = self._single_pieces({piece: i for i, piece in enumerate(pieces) if len(piece) == 1})
        return single.astype(self.index_type)

    def _single_pieces(self, index):
        codes = np.array([ord(c) for c in index], np.int64)
        values = np.array(list(index.values()), np.int64)
        order = np.argsort(codes)
        codes, values = codes[order], values[order]
        slot = np.clip(np.searchsorted(codes, self.chars), 0, max(len(codes) - 1, 0))
        found = (codes[slot] == self.chars) & (self.chars >= 0) if len(codes) else np.zeros(len(self.chars), bool)
        return np.where(found, values[slot] if len(codes) else -1, -1)


def training_words(word_counts):
    """The words to learn from, their counts and how many of those end a line (float64): positive
    counts only, each meta piece's text one boundary character (words that become equal are merged). A
    word ending in a space (which normalized text never holds) is the last of its line, as the word
    counter marks them."""
    merged, line_ends = {}, {}
    for word, count in word_counts.items():
        last = word.endswith(" ")
        word = _without_meta_pieces(word[:-1] if last else word)
        if count > 0 and word:
            merged[word] = merged.get(word, 0) + count
            if last:
                line_ends[word] = line_ends.get(word, 0) + count
    words = list(merged)
    line_ends = np.array([line_ends.get(word, 0) for word in words], np.float64)
    return words, np.array(list(merged.values()), np.float64), line_ends


def _without_meta_pieces(word):
    """The word with each meta piece's text (leftmost first, as SentencePiece's `GlobalReplace`) one
    boundary character."""
    if "<" not in word:
        return word
    for meta in META_PIECES:
        word = word.replace(meta, _BOUNDARY)
    return word


def _scripts(chars):
    """A script class per code point: "▁", letters by script (Han with kana), other digits, and the
    rest (`Common`: punctuation, symbols and ASCII digits, as SentencePiece's script table, so "1," may
    be a piece but "a1" not)."""
    classes, labels = {}, {}
    out = np.zeros(len(chars), np.int64)
    for code in np.unique(chars).tolist():
        if code < 0:
            classes[code] = -1
            continue
        char = chr(code)
        category = unicodedata.category(char)
        if char == SPACE_SYMBOL:
            label = "SPACE"
        elif "0" <= char <= "9":
            label = "COMMON"
        elif category == "Nd":
            label = "DIGIT"
        elif category[0] in "LM":
            name = unicodedata.name(char, "")
            label = name.split(" ")[0] if name else "OTHER"
            if label in ("CJK", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA") or code == 0x30FC:
                label = "HAN"
        else:
            label = "COMMON"
        classes[code] = labels.setdefault(label, len(labels))
    lookup_codes = np.array(list(classes), np.int64)
    lookup_values = np.array(list(classes.values()), np.int64)
    order = np.argsort(lookup_codes)
    out = lookup_values[order][np.searchsorted(lookup_codes[order], chars)]
    return out
