"""WordPieceLayer against Google's BERT tokenizer: every line of every shared text, and random Unicode."""

import functools

import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import (
    BERT_VOCAB,
    WORDPIECE_BATCH_ROUTES,
    WORDPIECE_ROUTES,
    BertReference,
    nonempty_lines,
    parity_call,
    real_texts,
    shared_file,
    shared_texts,
    traced_parity,
    wordpiece_route,
)
from tfsubword import WordPieceLayer
from tfsubword.files.vocab import read_vocabulary

# The trie walk of a layer built with `jit_compile=True`: the greedy walk compiled with XLA.
COMPILED = "compiled walk"
# Each route, and each batch route with the routes chosen by size: (route, batch route).
ROUTES = [(route, "chosen by size") for route in [*WORDPIECE_ROUTES, COMPILED]] + [
    ("chosen by size", batch_route) for batch_route in list(WORDPIECE_BATCH_ROUTES)[1:]
]
# Over whole corpora, batches of 1024 lines: the distinct words, unless whole texts are forced.
CORPUS_ROUTES = [routes for routes in ROUTES if routes[1] != "distinct words"]


@functools.cache
def tokenizers(lowercase, routes=ROUTES[0]):
    """(layer call, reference) for the BERT uncased vocabulary, built once per casing and routes."""
    # A traced layer keeps the route it was traced with; eagerly, one layer takes each call's route.
    compiled = routes[0] == COMPILED
    layer = _layer(lowercase, routes if traced_parity() else None, compiled)
    tokenize = parity_call(layer.tokenize)
    forced = ("trie walk", routes[1]) if compiled else routes

    def encode(texts):
        with wordpiece_route(*forced):  # read when the layer is traced, or eagerly at each call
            return tokenize(texts)

    return encode, reference(lowercase)


@functools.cache
def _layer(lowercase, routes, jit_compile=False):
    vocabulary = read_vocabulary(shared_file(BERT_VOCAB.name))
    return WordPieceLayer(vocabulary, lowercase=lowercase, jit_compile=jit_compile)


@functools.cache
def reference(lowercase):
    return BertReference(read_vocabulary(shared_file(BERT_VOCAB.name)), lowercase=lowercase)


def mismatches(texts, lowercase, routes=ROUTES[0]):
    encode, reference = tokenizers(lowercase, routes)
    got = []
    for start in range(0, len(texts), 1024):
        got += encode(tf.constant(texts[start : start + 1024], tf.string)).to_list()
    return [(text, ids) for text, ids in zip(texts, got) if ids != reference.ids(text)]


@pytest.mark.full
@pytest.mark.parametrize("routes", CORPUS_ROUTES, ids=" / ".join)
@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
@pytest.mark.parametrize("path", shared_texts(), ids=lambda p: p.name)
def test_every_line_of_the_shared_texts(path, lowercase, routes):
    lines = nonempty_lines(path)
    bad = mismatches(lines, lowercase, routes)
    assert not bad, f"identical on {len(lines) - len(bad)}/{len(lines)} lines; first difference: {bad[0][0]!r}"


@pytest.mark.full
@pytest.mark.parametrize(
    "routes", [ROUTES[0], ("chosen by size", "whole texts"), (COMPILED, "chosen by size")], ids=" / ".join
)
@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
@pytest.mark.parametrize("path", real_texts(), ids=lambda p: p.name)
def test_every_line_of_the_real_texts(path, lowercase, routes):
    lines = nonempty_lines(path)
    bad = mismatches(lines, lowercase, routes)
    assert not bad, f"identical on {len(lines) - len(bad)}/{len(lines)} lines; first difference: {bad[0][0]!r}"


def test_sample_of_every_shared_text():
    """The quick tier's parity sample: every 100th line of every shared text, both casings."""
    lines = [line for path in shared_texts() + real_texts() for line in nonempty_lines(path)][::100]
    if not lines:
        pytest.skip("reference data not available")
    for lowercase in (True, False):
        # The compiled walk: in `--full` on every line; here, words by hand in tests/test_wordpiece.py.
        for routes in [routes for routes in CORPUS_ROUTES if routes[0] != COMPILED]:
            bad = mismatches(lines, lowercase, routes)
            assert not bad, f"identical on {len(lines) - len(bad)}/{len(lines)} lines; first difference: {bad[0][0]!r}"


# Characters that exercise each of BERT's rules.
SPECIAL_CHARACTERS = (
    # whitespace of every kind, and the controls BERT deletes though str.split() would split on them
    " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2007\u200a\u2028\u2029\u202f\u205f\u3000"
    # control and format characters, NUL and the replacement character
    "\x00\x01\x7f\x9f\u00ad\u200b\u200d\u2060\ufeff\ufffd\U000e0001"
    # combining marks, including spacing marks with a combining class (NFD reorders those)
    "\u0300\u0301\u0327\u0345\u0e31\u20dd\u3099\U0001d165\U0001d16d\u302e"
    # case: sigma contexts, dotted capital I, titlecase, ß, case-ignorable apostrophe and period
    "\u03a3\u03c3\u03c2\u0130\u01c5\u00df'.:"
    # CJK ideographs (unified, extension, compatibility), kana, Hangul, punctuation, symbols, emoji
    "\u4e2d\u3400\U00020000\U0002b820\uf900\u3072\u30ab\uac00\u3001\uff01\u00bf\u1fef$^`\u00bd\u2026\ufb01"
    "\U0001f600\U0001f44d\U0001f3fb"
)

pieces = st.one_of(
    st.characters(exclude_categories=["Cs"]),
    st.sampled_from(SPECIAL_CHARACTERS),
    st.sampled_from(["the", "The", "unaffable", "ΣΟΦΟΣ", "İstanbul", "café", "naïve", "straße", "東京"]),
    st.text(alphabet="ab\u00e9", min_size=95, max_size=105),  # words around the 100-character limit
)
texts = st.lists(pieces, max_size=30).map("".join)


@pytest.mark.parametrize(
    "routes",
    # The compiled walk: in the full tier.
    [pytest.param(routes, marks=[pytest.mark.full] if routes[0] == COMPILED else []) for routes in ROUTES],
    ids=" / ".join,
)
@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
@given(batch=st.lists(texts, min_size=1, max_size=4))
def test_random_unicode_matches_reference(lowercase, routes, batch):
    assert mismatches(batch, lowercase, routes) == []


@given(data=st.lists(st.binary(max_size=40), min_size=1, max_size=4))
def test_random_bytes_match_reference_on_replaced_text(data):
    encode, reference = tokenizers(True)
    got = encode(tf.constant(data, tf.string)).to_list()
    assert got == [reference.ids(item.decode("utf-8", "replace")) for item in data]
