"""SentencePiece's named normalization rules, built from Python's `unicodedata` when first asked. No TensorFlow.

- `identity`: no rules.
- `nfkc`: the rules of SentencePiece's builder (`BuildNFKCMap`): each character whose NFKC form
  differs maps to it, and each sequence of characters that NFKC composes into something else (a
  letter and its combining accent, conjoining or compatibility Hangul jamo, ...) maps to its
  composition; a rule that shorter rules already perform is dropped.
- `nmt_nfkc`, SentencePiece's default: `nfkc` plus its `MergeNmtMap`: tab, line breaks, U+2581, U+FFFD
  and invisible separators and marks (U+061C, U+1680, U+200B, U+200C, U+200E, U+200F, U+2028, U+2029,
  U+FEFF) become a space; the other ASCII controls, U+007F, U+008F and U+009F are removed; the
  full-width tilde U+FF5E is kept (Japanese tells it from "~"). U+061C is in sentencepiece 0.2.3's
  table, though not in the 0.2.1 builder's list.

The known differences from SentencePiece's own tables come from Unicode versions: these follow
`unicodedata.unidata_version` (14.0 on Python 3.11), SentencePiece's the ICU it was built with. Rules
both have are the same (tested); an older table lacks the rules of characters added since (U+32FF
SQUARE ERA NAME REIWA, ...), a newer one has rules for characters Python does not know yet.
"""

import collections
import functools
import itertools
import unicodedata

NAMES = ("nmt_nfkc", "nfkc", "identity")

_NMT_SPACES = "\t\n\f\r\u061c\u1680\u200b\u200c\u200e\u200f\u2028\u2029\u2581\ufeff\ufffd"
_NMT_REMOVED = "".join(map(chr, [*range(0x01, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F, 0x8F, 0x9F]))
_NMT_KEPT = "\uff5e"


def check_name(name):
    """`name` if it is one of `NAMES`; otherwise a `ValueError` naming the choices."""
    if not isinstance(name, str) or name not in NAMES:
        raise ValueError(
            f"`normalization` must be one of {', '.join(map(repr, NAMES))}. Received: normalization={name!r}."
        )
    return name


@functools.cache
def charsmap(name):
    """The `{source: replacement}` rules called `name`, one of `NAMES` (shared: do not modify them).

    Examples:

    >>> rules = charsmap("nmt_nfkc")
    >>> rules["ﬁ"], rules["①"], rules["Ａ"], rules["…"], rules["e\\u0301"], rules["\\t"], rules["\\x07"]
    ('fi', '1', 'A', '...', 'é', ' ', '')
    """
    if name not in NAMES:
        raise ValueError(f"Unknown normalization {name!r}: choose one of {', '.join(map(repr, NAMES))}.")
    if name == "identity":
        return {}
    rules = _nfkc_rules()
    if name == "nmt_nfkc":
        rules = {**rules, **dict.fromkeys(_NMT_SPACES, " "), **dict.fromkeys(_NMT_REMOVED, "")}
        rules.pop(_NMT_KEPT)
        rules = _without_redundant(rules)
    return rules


@functools.cache
def precompiled_charsmap(name):
    """`charsmap(name)` as a `.model` file stores it (`b""` for `identity`). Encoding takes seconds."""
    from tfsubword.files.sentencepiece_model import encode_charsmap

    return encode_charsmap(charsmap(name))


@functools.lru_cache(maxsize=1)
def _nfkc_rules():
    rules = {}
    originals = collections.defaultdict(set)  # a character of an NFKD form -> the characters decomposing to it alone
    decomposed = set()  # the NFKD forms of several characters
    for character in _characters():
        if unicodedata.is_normalized("NFKD", character):
            continue  # a character with no decomposition is its own NFKC form too
        nfkc = unicodedata.normalize("NFKC", character)
        if nfkc != character:
            rules[character] = nfkc
        nfkd = unicodedata.normalize("NFKD", character)
        if len(nfkd) == 1:
            originals[nfkd].add(character)
        else:
            decomposed.add(nfkd)
    for nfkd in decomposed:
        nfkc = unicodedata.normalize("NFKC", nfkd)
        if nfkc == nfkd:
            continue
        for sequence in itertools.product(*({c} | originals[c] for c in nfkd)):
            if "".join(sequence) != nfkc:
                rules["".join(sequence)] = nfkc
    return _without_redundant(rules)


def _characters():
    """Every Unicode scalar value but U+0000 and the noncharacters, as SentencePiece's builder visits them."""
    for code_point in range(1, 0x110000):
        if not (0xD800 <= code_point <= 0xDFFF or 0xFDD0 <= code_point <= 0xFDEF or code_point & 0xFFFE == 0xFFFE):
            yield chr(code_point)


def _without_redundant(rules):
    """Drop each rule of several characters that the shorter rules, applied longest first, already do."""
    kept = {source: target for source, target in rules.items() if len(source) == 1}
    for length in range(2, max(map(len, rules)) + 1):
        for source, target in rules.items():
            if len(source) == length and _apply(kept, source, length - 1) != target:
                kept[source] = target
    return kept


def _apply(rules, text, longest):
    """`text` rewritten left to right, at each position by the longest rule of at most `longest` characters."""
    out, position = [], 0
    while position < len(text):
        for length in range(min(longest, len(text) - position), 0, -1):
            target = rules.get(text[position : position + length])
            if target is not None:
                out.append(target)
                position += length
                break
        else:
            out.append(text[position])
            position += 1
    return "".join(out)
