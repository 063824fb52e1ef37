"""Per-code-point tables for BERT's text normalization, computed from Python's `unicodedata`.

Core TensorFlow has no Unicode normalization or case-folding op that matches Python's, so the exact
behaviour of BERT's `BasicTokenizer` (which is written with `str.lower()`, `unicodedata.normalize("NFD")`
and `unicodedata.category`) is captured here, once per process, as tables that `text/bert.py` applies in the
graph. Nothing in this module imports TensorFlow.

Every code point becomes a short sequence of *elements*. An element is a code point plus a kind:

- `NORMAL`: part of a word;
- `OWN`: a word by itself (BERT punctuation, or a CJK ideograph when `split_on_cjk`);
- `SPACE`: a word separator;
- `DROP`: a nonspacing mark that accent stripping removes; kept until canonical reordering is done,
  because NFD orders combining marks before BERT drops them.

Each element also carries its canonical combining class, which the graph needs only for the rare
canonical reordering of marks that survive accent stripping.
"""

import functools
import unicodedata

import numpy as np

NORMAL, OWN, SPACE, DROP = 0, 1, 2, 3

# Elements are packed into one non-negative int32: code point (21 bits), kind (2 bits), combining
# class (8 bits).
KIND_SHIFT = 21
CCC_SHIFT = 23
CODE_POINT_MASK = (1 << KIND_SHIFT) - 1

MAX_CODE_POINT = 0x10FFFF
CAPITAL_SIGMA, SMALL_SIGMA, FINAL_SIGMA = 0x3A3, 0x3C3, 0x3C2

# BERT's `_is_chinese_char`: the CJK Unified Ideographs blocks and their extensions and compatibility
# blocks. Hiragana, Katakana and Hangul are deliberately not included.
CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)

# Characters that survive BERT's cleaning step but that `str.split()` still splits on (line and
# paragraph separators are categories Zl and Zp, not Zs).
_LINE_SEPARATORS = ("\u2028", "\u2029")

# Sigma context classes for `str.lower()`'s Final_Sigma rule, as Python applies it.
SIGMA_OTHER, SIGMA_CASE_IGNORABLE, SIGMA_CASED = 0, 1, 2


def is_cjk(code_point):
    for low, high in CJK_RANGES:  # a plain loop: `any` over a generator is several times slower here
        if low <= code_point <= high:
            return True
    return False


def is_punctuation(char):
    """BERT's punctuation: all non-alphanumeric printable ASCII, and every Unicode category P*."""
    code_point = ord(char)
    if 33 <= code_point <= 47 or 58 <= code_point <= 64 or 91 <= code_point <= 96 or 123 <= code_point <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def is_deleted(char):
    """Characters BERT's cleaning removes: NUL, U+FFFD and control/format characters except tab/newlines."""
    if char in "\t\n\r":
        return False
    return char in ("\x00", "\ufffd") or unicodedata.category(char) in ("Cc", "Cf")


def is_separator(char):
    """Characters that separate words once cleaning is done."""
    return char in " \t\n\r" or char in _LINE_SEPARATORS or unicodedata.category(char) == "Zs"


@functools.cache
def _candidate_code_points():
    """Code points that might need a table entry.

    Unassigned (Cn), surrogate (Cs) and private-use (Co) code points have no case, no decomposition and
    no punctuation or control category, and the ideographs of `CJK_RANGES` (other than the
    compatibility ideographs, which decompose) are all plain letters: none of them needs an entry.
    """
    skipped = sorted((low, high) for low, high in CJK_RANGES if low not in (0xF900, 0x2F800))
    scanned, start = [], 0
    for low, high in skipped:
        scanned.append(range(start, low))
        start = high + 1
    scanned.append(range(start, MAX_CODE_POINT + 1))
    return tuple(
        code_point
        for span in scanned
        for code_point in span
        if unicodedata.category(chr(code_point)) not in ("Cn", "Co", "Cs")
    )


def pack(code_point, kind, combining_class):
    return code_point | kind << KIND_SHIFT | combining_class << CCC_SHIFT


def _elements(char, lowercase, strip_accents, split_on_cjk):
    if is_deleted(char):
        return []
    if is_separator(char):
        return [pack(0x20, SPACE, 0)]
    text = char.lower() if lowercase else char
    if strip_accents:
        text = unicodedata.normalize("NFD", text)
    own_word = split_on_cjk and is_cjk(ord(char))
    elements = []
    for piece in text:
        if strip_accents and unicodedata.category(piece) == "Mn":
            kind = DROP
        elif own_word or is_punctuation(piece):
            kind = OWN
        else:
            kind = NORMAL
        combining_class = unicodedata.combining(piece) if strip_accents else 0
        elements.append(pack(ord(piece), kind, combining_class))
    return elements


def _may_need_entry(char, lowercase, strip_accents):
    """False only for a character that `_elements` keeps as itself, one element of combining class 0
    and of its implicit kind: it is not deleted, not a separator, not punctuation, unchanged by the
    case and accent rules. A quick test (most characters are plain letters, digits or symbols) that
    saves calling `_elements` on them."""
    category = unicodedata.category(char)
    if category in ("Cc", "Cf", "Zs", "Zl", "Zp") or char == "\ufffd" or is_punctuation(char):
        return True  # deleted (U+0000 and the ASCII whitespace are Cc), a separator, or punctuation
    if lowercase and char.lower() != char:
        return True
    return bool(strip_accents) and (
        category == "Mn" or unicodedata.combining(char) != 0 or unicodedata.normalize("NFD", char) != char
    )


@functools.cache
def normalization_table(lowercase, strip_accents, split_on_cjk):
    """The code points whose BERT normalization is not "itself, as a plain word character".

    Returns `(code_points, elements)`: `code_points` is a sorted int32 array of length E, `elements` an
    int32 array of shape `[E, K]` holding each code point's packed elements, padded with -1. A code
    point that is absent maps to itself as a `NORMAL` element, or as an `OWN` element when it lies in
    `CJK_RANGES` and `split_on_cjk` is set (the graph checks those ranges arithmetically rather than
    storing ~98,000 entries).
    """
    code_points, rows = [], []
    for code_point in _candidate_code_points():
        char = chr(code_point)
        if not _may_need_entry(char, lowercase, strip_accents):
            continue
        elements = _elements(char, lowercase, strip_accents, split_on_cjk)
        implicit_kind = OWN if split_on_cjk and is_cjk(code_point) else NORMAL
        if elements == [pack(code_point, implicit_kind, 0)]:
            continue
        code_points.append(code_point)
        rows.append(elements)
    width = max(len(row) for row in rows)
    table = np.full((len(rows), width), -1, dtype=np.int32)
    for index, row in enumerate(rows):
        table[index, : len(row)] = row
    return np.asarray(code_points, dtype=np.int32), table


@functools.cache
def sigma_context_table():
    """Code points that matter to `str.lower()`'s Final_Sigma rule, with their class.

    CPython lowercases U+03A3 to the final form when it follows a cased character and is not followed
    by one, skipping case-ignorable characters in both directions. Python does not expose its
    Cased/Case_Ignorable properties, so each character is classified by asking `str.lower()` itself:

    - `("A" + c + "Σ").lower()` ends in the final sigma exactly when `c` is case-ignorable or cased;
    - `("AΣ" + c).lower()` has the final sigma exactly when `c` is case-ignorable or not cased.

    Returns `(code_points, classes)`, int32 arrays; absent code points are `SIGMA_OTHER`.
    """
    final = chr(FINAL_SIGMA)
    code_points, classes = [], []
    for code_point in _candidate_code_points():
        char = chr(code_point)
        ignorable_or_cased = ("A" + char + "\u03a3").lower()[-1] == final
        ignorable_or_uncased = ("A\u03a3" + char).lower()[1] == final
        if ignorable_or_cased and ignorable_or_uncased:
            sigma_class = SIGMA_CASE_IGNORABLE
        elif ignorable_or_cased:
            sigma_class = SIGMA_CASED
        else:
            continue
        code_points.append(code_point)
        classes.append(sigma_class)
    return np.asarray(code_points, dtype=np.int32), np.asarray(classes, dtype=np.int32)
