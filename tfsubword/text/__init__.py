"""Normalize and pre-tokenize: text -> words, in the graph, by each tokenizer family's exact rules.

The per-code-point rules are tabulated in Python (`unicode_data`, `normalization_rules`,
`unicode_classes`) and applied with core ops (`bert`, `sentencepiece`, `byte_level`). Layers and
trainers use the same functions, so a vocabulary is trained on the words the layer will see.
"""


def packed_ranges(text):
    """Inclusive code-point ranges written as hexadecimal `FIRST-LAST` (or `FIRST` alone), separated by
    spaces, as the generated tables hold them -> a tuple of (first, last) pairs."""
    return tuple(
        (int(first, 16), int(last or first, 16)) for first, _, last in (r.partition("-") for r in text.split())
    )


def re2_class(ranges, negate=False, extra=""):
    """An RE2 character class of the inclusive code point `ranges` (after `extra`, RE2 text)."""
    parts = [f"\\x{{{low:X}}}" if low == high else f"\\x{{{low:X}}}-\\x{{{high:X}}}" for low, high in ranges]
    return "[" + ("^" if negate else "") + extra + "".join(parts) + "]"
