"""The per-code-point tables, checked against facts written out by hand."""

import numpy as np
import pytest

from tfsubword.text import unicode_data as ud


def elements_of(char, lowercase=True, strip_accents=True, split_on_cjk=True):
    code_points, table = ud.normalization_table(lowercase, strip_accents, split_on_cjk)
    index = np.searchsorted(code_points, ord(char))
    if index < len(code_points) and code_points[index] == ord(char):
        return [(e & ud.CODE_POINT_MASK, (e >> ud.KIND_SHIFT) & 3, e >> ud.CCC_SHIFT) for e in table[index] if e >= 0]
    return None  # itself, implicitly


@pytest.mark.parametrize(
    "char, expected",
    [
        ("A", [(ord("a"), ud.NORMAL, 0)]),
        ("\u00c9", [(ord("e"), ud.NORMAL, 0), (0x301, ud.DROP, 230)]),  # É -> e + combining acute, dropped
        ("\u0130", [(ord("i"), ud.NORMAL, 0), (0x307, ud.DROP, 230)]),  # İ lowercases to i + dot above
        ("\u00ad", []),  # soft hyphen: format character, deleted
        ("\x00", []),
        ("\ufffd", []),
        ("\x0b", []),  # vertical tab is a control character for BERT, not whitespace
        ("\t", [(0x20, ud.SPACE, 0)]),
        ("\u3000", [(0x20, ud.SPACE, 0)]),  # ideographic space, category Zs
        ("\u2028", [(0x20, ud.SPACE, 0)]),  # line separator: kept by cleaning, split on by str.split
        (",", [(ord(","), ud.OWN, 0)]),
        ("$", [(ord("$"), ud.OWN, 0)]),  # ASCII symbols count as punctuation
        ("\u00bf", [(0xBF, ud.OWN, 0)]),  # ¿ is Po
        ("\u1fef", [(ord("`"), ud.OWN, 0)]),  # Greek varia (Sk) decomposes to a backtick, ASCII punctuation
        ("\uf900", [(0x8C48, ud.OWN, 0)]),  # CJK compatibility ideograph -> its unified ideograph
        ("\uac00", [(0x1100, ud.NORMAL, 0), (0x1161, ud.NORMAL, 0)]),  # Hangul syllable -> jamo
    ],
)
def test_uncased_elements(char, expected):
    assert elements_of(char) == expected


@pytest.mark.parametrize("char", ["a", "z", "1", "\u00bd", "\ufb01", "\u4e2d", "\u3072", "\U0001f600", "\ue000"])
def test_characters_that_map_to_themselves_have_no_entry(char):
    # ½ (No), ﬁ (Ll, NFKC-only decomposition), CJK, Hiragana, emoji, private use: untouched by BERT.
    assert elements_of(char) is None


def test_cased_table_keeps_case_and_accents():
    assert elements_of("A", lowercase=False, strip_accents=False) is None
    assert elements_of("\u00c9", lowercase=False, strip_accents=False) is None
    assert elements_of("!", lowercase=False, strip_accents=False) == [(ord("!"), ud.OWN, 0)]


def test_cjk_ideographs_are_plain_letters_without_cjk_splitting():
    assert elements_of("\uf900", split_on_cjk=False) == [(0x8C48, ud.NORMAL, 0)]


@pytest.mark.parametrize(
    "char, expected",
    [
        ("A", ud.SIGMA_CASED),
        ("\u03a3", ud.SIGMA_CASED),
        ("'", ud.SIGMA_CASE_IGNORABLE),
        (".", ud.SIGMA_CASE_IGNORABLE),
        ("\u0301", ud.SIGMA_CASE_IGNORABLE),
        ("\u0345", ud.SIGMA_CASE_IGNORABLE),  # both cased and case-ignorable: Python skips it
        ("1", ud.SIGMA_OTHER),
        (" ", ud.SIGMA_OTHER),
        ("\u4e2d", ud.SIGMA_OTHER),
    ],
)
def test_sigma_context_classes(char, expected):
    code_points, classes = ud.sigma_context_table()
    found = dict(zip(code_points.tolist(), classes.tolist()))
    assert found.get(ord(char), ud.SIGMA_OTHER) == expected


@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize("strip_accents", [False, True])
@pytest.mark.parametrize("split_on_cjk", [False, True])
def test_table_skips_only_characters_that_map_to_themselves(lowercase, strip_accents, split_on_cjk):
    # The table's quick test skips most characters without computing their elements: computing them
    # all, as the docstring of `normalization_table` defines the table, gives the same table.
    expected = {}
    for code_point in ud._candidate_code_points():
        elements = ud._elements(chr(code_point), lowercase, strip_accents, split_on_cjk)
        kind = ud.OWN if split_on_cjk and ud.is_cjk(code_point) else ud.NORMAL
        if elements != [ud.pack(code_point, kind, 0)]:
            expected[code_point] = elements
    code_points, table = ud.normalization_table(lowercase, strip_accents, split_on_cjk)
    found = {c: [e for e in row if e >= 0] for c, row in zip(code_points.tolist(), table.tolist())}
    assert found == expected
