"""`BertNormalizer` against Google's `BasicTokenizer`, on hand-written cases and whole corpora."""

import functools

import pytest
import tensorflow as tf

from tests.conftest import bert_reference, nonempty_lines, real_texts, shared_texts
from tfsubword.text.bert import BertNormalizer


def reference_words(text, lowercase=True, strip_accents=None, split_on_cjk=True):
    """BERT's `BasicTokenizer.tokenize`, with its three behaviours switchable independently.

    BERT couples accent stripping to lowercasing and always splits CJK; the steps themselves are
    BERT's own methods, in BERT's order.
    """
    basic = bert_reference().BasicTokenizer(do_lower_case=lowercase)
    strip_accents = lowercase if strip_accents is None else strip_accents
    text = basic._clean_text(text)
    if split_on_cjk:
        text = basic._tokenize_chinese_chars(text)
    words = []
    for token in text.split():
        if lowercase:
            token = token.lower()
        if strip_accents:
            token = basic._run_strip_accents(token)
        words.extend(basic._run_split_on_punc(token))
    return " ".join(words).split()


@functools.cache
def _traced_words(options):
    return tf.function(BertNormalizer(**dict(options)).words, input_signature=[tf.TensorSpec([None], tf.string)])


def normalized(texts, **options):
    words = _traced_words(tuple(sorted(options.items())))(tf.constant(texts, tf.string, shape=[len(texts)]))
    return [[word.decode("utf-8") for word in row] for row in words.to_list()]


SIGMA, SMALL, FINAL = "\u03a3", "\u03c3", "\u03c2"


CASES = [
    ("H\u00e9llo, WORLD!", ["hello", ",", "world", "!"]),
    ("\u0130stanbul", ["istanbul"]),
    # Final sigma at the end of a word, also before punctuation (case-ignorable) ...
    (f"{SIGMA}O{SIGMA}.", [f"{SMALL}o{FINAL}", "."]),
    # ... but not when a cased letter follows, or nothing cased precedes.
    (f"{SIGMA}A", [f"{SMALL}a"]),
    (f"1{SIGMA}", [f"1{SMALL}"]),
    # Whitespace ends the scan (the token ends), a format character is deleted first.
    (f"A{SIGMA} B", [f"a{FINAL}", "b"]),
    (f"A{SIGMA}\u00adB", [f"a{SMALL}b"]),
    ("\u00bd \u2026 \ufb01", ["\u00bd", "\u2026", "\ufb01"]),  # no NFKC
    ("a\u00adb a\x0bb a\x85b", ["ab", "ab", "ab"]),  # deleted control/format characters join
    ("a\u2028b a\u00a0b a\u3000b", ["a", "b", "a", "b", "a", "b"]),  # Unicode separators split
    ("a\x00b a\ufffdb", ["ab", "ab"]),
    ("\u4e2d\u6587abc", ["\u4e2d", "\u6587", "abc"]),
    ("\u3072\u3089\u304b\u306a", ["\u3072\u3089\u304b\u306a"]),  # Hiragana is not split
    ("\u304c", ["\u304b"]),  # が = か + voiced sound mark U+3099 (Mn), which accent stripping drops
    ("\ud55c", ["\u1112\u1161\u11ab"]),  # 한 -> jamo once accents are stripped
    # NFD orders marks by combining class before BERT drops the nonspacing ones: the two musical
    # marks (classes 226 and 216, spacing) swap, even across a dropped acute (230) ...
    ("a\U0001d16d\u0301\U0001d165", ["a\U0001d165\U0001d16d"]),
    # ... but a nonspacing mark of class 0 (Thai mai han-akat) starts a new run: no swap.
    ("a\U0001d16d\u0e31\U0001d165", ["a\U0001d16d\U0001d165"]),
    ("", []),
    (" \t\n ", []),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_uncased_cases(text, expected):
    assert normalized([text]) == [expected]
    assert reference_words(text) == expected


def test_uncased_cases_in_one_batch():
    """A capital sigma or a Hangul syllable anywhere in a batch sends all of it through the full
    rules, where a text alone may take the one-element-per-character path: both give BERT's words."""
    assert normalized([text for text, _ in CASES]) == [expected for _, expected in CASES]


def test_cased_keeps_case_and_accents():
    assert normalized(["H\u00e9llo, WORLD!"], lowercase=False) == [["H\u00e9llo", ",", "WORLD", "!"]]


def test_invalid_utf8_is_deleted_like_replacement_characters():
    texts = [b"a\xffb", b"\xe2\x82 x", b"caf\xc3", b"\xc3\x0c\xa9"]
    got = _traced_words(())(tf.constant(texts)).to_list()
    expected = [reference_words(text.decode("utf-8", "replace")) for text in texts]
    assert [[w.decode() for w in row] for row in got] == expected == [["ab"], ["x"], ["caf"], []]


def test_empty_batch():
    assert normalized([]) == []


OPTIONS = [
    {"lowercase": True},
    {"lowercase": False},
    {"lowercase": True, "strip_accents": False},
    {"lowercase": False, "strip_accents": True},
    {"lowercase": True, "split_on_cjk": False},
]


@pytest.mark.full
@pytest.mark.parametrize("path", shared_texts() + real_texts(), ids=lambda p: p.name)
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_whole_corpus_matches_reference(path, options):
    lines = nonempty_lines(path)
    got = []
    for start in range(0, len(lines), 1024):
        got += normalized(lines[start : start + 1024], **options)
    mismatches = [i for i, line in enumerate(lines) if got[i] != reference_words(line, **options)]
    assert not mismatches, (
        f"{len(lines) - len(mismatches)}/{len(lines)} lines identical; first: {lines[mismatches[0]]!r}"
    )


def test_reference_is_bert_itself_for_bert_options():
    basic = bert_reference().BasicTokenizer(do_lower_case=True)
    text = "H\u00e9llo, WORLD! \u4e2d\u6587 \u03a3O\u03a3."
    assert reference_words(text) == basic.tokenize(text)


def test_is_normalized_word():
    normalizer = BertNormalizer()
    assert normalizer.is_normalized_word("hello")
    assert normalizer.is_normalized_word(",")
    assert normalizer.is_normalized_word("\u4e2d")
    assert not normalizer.is_normalized_word("Hello")  # would be lowercased
    assert not normalizer.is_normalized_word("caf\u00e9")  # would lose its accent
    assert not normalizer.is_normalized_word("##ing")  # '#' is punctuation: three words
    assert not normalizer.is_normalized_word("[CLS]")
    assert not normalizer.is_normalized_word("\u4e2d\u6587")  # two words
    assert not normalizer.is_normalized_word("")
    assert BertNormalizer(lowercase=False).is_normalized_word("Hello")
