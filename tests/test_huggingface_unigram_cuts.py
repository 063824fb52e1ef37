"""Hugging Face `Unigram` on long words (text without spaces), which the layer cuts where no piece
crosses: against `tokenizers` itself, on a vocabulary full of exact ties (a part decided from 0
can choose otherwise than the whole word decided from its start, so those words must be segmented
again whole), with unknown characters whose runs cross the cuts, with and without byte fallback."""

import random

import pytest
import tensorflow as tf

from tests.conftest import parity_call
from tfsubword import from_huggingface

# "ab" and "ba" score alike, so "aba" ties between [ab, a] and [a, ba]; "c" and "y" form no pair
# with anything, so a word is cut around each; "x" is in no piece (unknown).
PIECES = [
    ("<unk>", 0.0),
    ("\u2581", -1.5),
    ("\u2581a", -1.7),
    ("a", -1.1),
    ("b", -1.3),
    ("ab", -2.0),
    ("ba", -2.0),
    ("aba", -3.1),
    ("bab", -3.7),
    ("c", -2.9),
    ("y", -3.3),
]
BYTES = [(f"<0x{byte:02X}>", -20.0) for byte in range(256)]


def tokenizer(byte_fallback):
    tokenizers = pytest.importorskip("tokenizers")
    vocab = PIECES + (BYTES if byte_fallback else [])
    reference = tokenizers.Tokenizer(tokenizers.models.Unigram(vocab, unk_id=0, byte_fallback=byte_fallback))
    reference.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace("\u2581", prepend_scheme="always")
    return reference


def long_texts(count, seed):
    """Texts of 130 to 260 characters (longer than the words the layer leaves whole) over a, b, c, x
    and y, without spaces but for a few."""
    rng = random.Random(seed)
    weights = [30, 30, 4, 4, 3, 1]
    texts = []
    for _ in range(count):
        length = rng.randrange(130, 260)
        texts.append("".join(rng.choices("abcxy ", weights, k=length)))
    return texts


@pytest.mark.parametrize("count", [60, pytest.param(300, marks=pytest.mark.full)])
@pytest.mark.parametrize("byte_fallback", [False, True], ids=["unknown piece", "byte fallback"])
def test_long_words_match_tokenizers(byte_fallback, count):
    reference = tokenizer(byte_fallback)
    layer = from_huggingface(reference.to_str())
    encode = parity_call(layer)
    texts = long_texts(count, seed=7) + ["x" * 140, "ab" * 70 + "xx" + "c" * 30, "y" * 130 + "xax"]
    got = []
    for start in range(0, len(texts), 64):
        got += encode(tf.constant(texts[start : start + 64])).to_list()
    expected = [encoding.ids for encoding in reference.encode_batch(texts)]
    bad = [text for text, ids, want in zip(texts, got, expected) if ids != want]
    assert not bad, f"identical on {len(texts) - len(bad)}/{len(texts)} texts; first difference: {bad[0]!r}"
