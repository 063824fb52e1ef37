"""The Unicode normalizers of `from_huggingface` against Hugging Face's `normalizers` themselves.

`PrecompiledNormalizer` (with `GraphemeClusters`): Hugging Face looks each grapheme cluster of fewer
than 6 bytes up whole, so what it makes of a key followed (or preceded) by another character tells
whether the two form one cluster: with the key "a", `a` + c normalizes to the key's replacement alone
exactly when c joins `a`'s cluster. `NFD`, `NFKD`, `StripAccents`, `Lowercase`: every code point alone,
and random runs of marks (canonical order).
"""

import functools
import random
import unicodedata

import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import strategies as st

from tfsubword.files import sentencepiece_model as spm_model
from tfsubword.text import grapheme_classes, normalization_rules, unicode_normalizers
from tfsubword.text.precompiled import PrecompiledNormalizer

CODE_POINTS = [c for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000]
PROBE = {"a": "X", "b": "Y"}
# One character of each cluster property (and letters), for random mixes.
_PROPERTIES = [
    grapheme_classes.CR,
    grapheme_classes.LF,
    grapheme_classes.CONTROL,
    grapheme_classes.EXTEND,
    grapheme_classes.ZWJ,
    grapheme_classes.REGIONAL_INDICATOR,
    grapheme_classes.PREPEND,
    grapheme_classes.SPACING_MARK,
    grapheme_classes.HANGUL_L,
    grapheme_classes.HANGUL_V,
    grapheme_classes.HANGUL_T,
    ((0xAC00, 0xD7A3),),  # Hangul syllables, LV and LVT
    grapheme_classes.EXTENDED_PICTOGRAPHIC,
    grapheme_classes.CONJUNCT_CONSONANT,
    grapheme_classes.CONJUNCT_EXTEND,
    grapheme_classes.CONJUNCT_LINKER,
]


@functools.cache
def precompiled(blob):
    """(our normalizer of a `Precompiled` map in a tf.function, Hugging Face's), once per map."""
    reference = pytest.importorskip("tokenizers").normalizers.Precompiled(blob)
    signature = [tf.TensorSpec([None], tf.string)]
    return tf.function(PrecompiledNormalizer(blob).__call__, input_signature=signature), reference


def check(rules, texts, blob=None):
    normalize, reference = precompiled(blob or spm_model.encode_charsmap(rules))
    got = normalize(tf.constant([text.encode("utf-8") for text in texts], tf.string)).numpy()
    different = [
        (text, g.decode("utf-8"), reference.normalize_str(text))
        for text, g in zip(texts, got)
        if g.decode("utf-8") != reference.normalize_str(text)
    ]
    assert not different, f"{len(texts) - len(different)}/{len(texts)} identical; first: {ascii(different[0])}"


def test_golden_values_by_hand():
    """Read off the rules: a short cluster is its shortest key's replacement, whole; a cluster of 6
    bytes or more is rewritten character by character."""
    rules = {"e\u0301": "\u00e9", "\uff21": "A", "\u1100\u1161": "\uac00", "\u3099": "\u309b"}
    normalize = PrecompiledNormalizer(spm_model.encode_charsmap(rules))
    texts = ["e\u0301\u0301x", "\uff21\u0301", "\u1100\u1161", "\u304b\u3099", "plain", ""]
    got = [t.decode("utf-8") for t in normalize(tf.constant(texts)).numpy()]
    assert got == ["\u00e9x", "A", "\u1100\u1161", "\u304b\u309b", "plain", ""]


@pytest.mark.full  # the nmt_nfkc rules take seconds to build
def test_texts_made_only_of_joining_characters():
    """No character in the batch but ones that join the one before (hypothesis found '🏻' crashing
    a lookup of the last other character, of which there was none)."""
    blob = normalization_rules.precompiled_charsmap("nmt_nfkc")
    check(None, ["\U0001f3fb"], blob)
    check(None, ["\u0301", "\u0301\u0308", "\u200d", "abc"], blob)


def test_keys_that_become_spaces():
    """Texts whose only keys become a space take one RE2 rewrite; a key that joins the one before
    keeps them out of it: no-break space + acute is one cluster, and one space (read off the rules)."""
    rules = {"\t": " ", "\u00a0": " ", "\u0301": " ", "\uff21": "A"}
    normalize = PrecompiledNormalizer(spm_model.encode_charsmap(rules))
    texts = ["a\tb\u00a0c", "\u00a0\u0301x", "\t\u0301", "\uff21\tb", "plain", "\t"]
    got = [t.decode("utf-8") for t in normalize(tf.constant(texts)).numpy()]
    assert got == ["a b c", " x", "  ", "A b", "plain", " "]
    check(rules, texts)


@pytest.mark.full  # the nmt_nfkc rules take seconds to build
def test_random_runs_of_keys_that_become_spaces_under_nmt_nfkc():
    rng = random.Random(7)
    sample = list("a \t\n\r\u00a0\u3000\u2581\ufeff\ufffd\u0301\u200d\uff21")
    weights = [6, 3, 3, 2, 1, 2, 2, 1, 1, 1, 1, 1, 1]
    texts = ["".join(rng.choices(sample, weights, k=rng.randint(1, 8))) for _ in range(3000)]
    check(None, texts, normalization_rules.precompiled_charsmap("nmt_nfkc"))


@pytest.mark.parametrize("where", ["after", "before"])
def test_every_code_point_joins_a_cluster_as_in_hugging_face(where, request):
    step = 1 if request.config.getoption("--full") else 97
    points = CODE_POINTS[::step]
    texts = ["a" + chr(c) for c in points] if where == "after" else [chr(c) + "b" for c in points]
    check(PROBE, texts)


def random_mix(seed, count):
    rng = random.Random(seed)
    sample = []
    for ranges in _PROPERTIES:
        for _ in range(6):
            low, high = rng.choice(ranges)
            sample.append(chr(rng.randint(low, high)))
    sample += ["a", "b"]
    rules = {char: f"<{i}>" for i, char in enumerate(sample[::2])}
    for _ in range(300):
        key = "".join(rng.choice(sample) for _ in range(rng.choice([2, 2, 3])))
        rules[key] = "{" + key + "}"
    texts = ["".join(rng.choice(sample) for _ in range(rng.randint(1, 10))) for _ in range(count)]
    return rules, texts


@pytest.mark.parametrize("seed", [0, 1])
def test_random_mixes_of_every_cluster_property(seed, request):
    rules, texts = random_mix(seed, 100000 if request.config.getoption("--full") else 5000)
    check(rules, texts)


@given(texts=st.lists(st.text(max_size=16), min_size=1, max_size=8))
def test_random_text_with_sentencepiece_rules(texts):
    blob = normalization_rules.precompiled_charsmap("nmt_nfkc")
    check(None, texts, blob)


# The quick tier takes one decomposing and one composing form (NFKD, NFC) and the two others.
@pytest.mark.parametrize(
    "kind",
    [pytest.param(k, marks=pytest.mark.full) if k in ("NFD", "NFKC") else k for k in unicode_normalizers.KINDS],
)
def test_unicode_normalizers_on_every_code_point_and_runs_of_marks(kind, request):
    reference = getattr(pytest.importorskip("tokenizers").normalizers, kind)()
    step = 1 if request.config.getoption("--full") else 31
    rng = random.Random(kind)
    marks = [c for c in CODE_POINTS if unicodedata.combining(chr(c))]
    runs = [
        "".join(chr(rng.choice(marks if rng.random() < 0.6 else CODE_POINTS)) for _ in range(rng.randint(1, 8)))
        for _ in range(50000 // step)
    ]
    texts = (
        [chr(c) for c in CODE_POINTS[::step]]
        + runs
        + ["ΣΑΣ Σ", "İstanbul", "Plain ASCII, Capitals AND digits 42.", "Ạ̊́a", ""]
    )
    normalize = tf.function(unicode_normalizers.rewrite(kind).__call__)
    got = [t.decode("utf-8") for t in normalize(tf.constant([t.encode("utf-8") for t in texts])).numpy()]
    different = [(t, g, reference.normalize_str(t)) for t, g in zip(texts, got) if g != reference.normalize_str(t)]
    assert not different, f"{len(texts) - len(different)}/{len(texts)} identical; first: {ascii(different[0])}"


@pytest.mark.parametrize("kinds", [("Lowercase",), ("NFC", "Lowercase"), ("NFKD", "StripAccents", "Lowercase")])
def test_ascii_capitals_beside_other_scripts(kinds):
    """A text whose only characters to rewrite are ASCII capitals takes `tf.strings.lower`, whatever
    else it holds; with any other character to rewrite it is decoded."""
    normalizers = pytest.importorskip("tokenizers").normalizers
    reference = normalizers.Sequence([getattr(normalizers, kind)() for kind in kinds])
    passes = unicode_normalizers.rewrites(list(kinds))

    @tf.function
    def normalize(texts):
        for rewrite in passes:
            texts = rewrite(texts)
        return texts

    rng = random.Random(" ".join(kinds))
    sample = list("ABZaz 09.日本語мирαβ") + list("ÉΣДがe\u0301\ufffdＡ")
    texts = ["".join(rng.choices(sample, k=rng.randint(1, 10))) for _ in range(3000)]
    texts += ["ABC日本語", "Hello мир", "Ω日", "Xが", "Éa", ""]
    got = [t.decode("utf-8") for t in normalize(tf.constant([t.encode("utf-8") for t in texts])).numpy()]
    different = [(t, g, reference.normalize_str(t)) for t, g in zip(texts, got) if g != reference.normalize_str(t)]
    assert not different, f"{len(texts) - len(different)}/{len(texts)} identical; first: {ascii(different[0])}"
    # Invalid UTF-8 is decoded (one U+FFFD per sequence), never lowered as it stands.
    assert normalize(tf.constant([b"AB\xff\xe6\x97"])).numpy()[0].decode("utf-8") == "ab\ufffd\ufffd"


# Characters that compose: starters, marks, Hangul jamo and syllables, Indic vowel signs, kana voicing.
_COMPOSING = [
    chr(c) for c in [*range(0x300, 0x370), *range(0x1100, 0x1200), 0x41, 0x45, 0x61, 0x65, 0x6F, 0x3B1, 0x3B9]
]
_COMPOSING += [chr(c) for c in (0xB47, 0xB3E, 0xB56, 0xB57, 0xDD9, 0xDCF, 0xDCA, 0xDDF, 0x1025, 0x102E, 0x20, 0xAC00)]
_COMPOSING += [chr(c) for c in (0xAC01, 0x1EA0, 0xE9, 0xC7, 0x327, 0x342, 0x345, 0x3099, 0x309A, 0x304B, 0x30CF)]


@pytest.mark.parametrize("kind", ["NFC", "NFKC"])
def test_compositions_match(kind, request):
    """Every composite decomposed (then more marks, then itself), Hangul syllables, and random mixes of
    characters that compose, block or reorder."""
    reference = getattr(pytest.importorskip("tokenizers").normalizers, kind)()
    count = 20000 if request.config.getoption("--full") else 2000
    rng = random.Random(kind)
    composites = [c for c in CODE_POINTS if unicodedata.decomposition(chr(c))[:1] not in ("", "<")]
    texts = ["x" + unicodedata.normalize("NFD", chr(c)) + "\u0301\u0323" + chr(c) for c in composites]
    texts += [chr(c) for c in range(0xAC00, 0xD7A4, 7)]
    texts += ["".join(rng.choice(_COMPOSING) for _ in range(rng.randint(0, 12))) for _ in range(count)]
    normalize = tf.function(unicode_normalizers.rewrite(kind).__call__)
    got = [t.decode("utf-8") for t in normalize(tf.constant([t.encode("utf-8") for t in texts])).numpy()]
    different = [(t, g, reference.normalize_str(t)) for t, g in zip(texts, got) if g != reference.normalize_str(t)]
    assert not different, f"{len(texts) - len(different)}/{len(texts)} identical; first: {ascii(different[0])}"


def test_unicode_normalizers_by_hand():
    """Golden values: NFKD splits the ligature and İ and orders the marks (dot below, class 220, before
    the acute, 230); StripAccents removes them; Lowercase has no final sigma and gives İ two characters."""
    text = tf.constant(["\ufb01 a\u0301\u0323 \u0130"])
    nfkd = unicode_normalizers.rewrite("NFKD")(text)
    assert nfkd.numpy()[0].decode() == "fi a\u0323\u0301 I\u0307"
    assert unicode_normalizers.rewrite("StripAccents")(nfkd).numpy()[0].decode() == "fi a I"
    lowered = unicode_normalizers.rewrite("Lowercase")(tf.constant(["\u0130\u03a3\u03a3 \u03a3A"]))
    assert lowered.numpy()[0].decode() == "i\u0307\u03c3\u03c3 \u03c3a"
    # NFC: e + acute is é; a + circumflex + dot below is ordered, then composed twice into ậ; the
    # second acute after á is blocked by nothing but composes with nothing; jamo make 한; NFKC: ﬁ is fi.
    composed = unicode_normalizers.rewrite("NFC")(
        tf.constant(["e\u0301 a\u0302\u0323 a\u0301\u0301 \u1112\u1161\u11ab"])
    )
    assert composed.numpy()[0].decode() == "\u00e9 \u1ead \u00e1\u0301 \ud55c"
    assert unicode_normalizers.rewrite("NFKC")(tf.constant(["\ufb01e\u0301"])).numpy()[0].decode() == "fi\u00e9"


@pytest.mark.parametrize(
    "kinds, passes",
    [
        (("NFKD", "StripAccents", "Lowercase"), 1),
        pytest.param(("Lowercase", "NFKD"), 1, marks=pytest.mark.full),
        pytest.param(("NFD", "Lowercase", "StripAccents"), 1, marks=pytest.mark.full),
        (("StripAccents", "NFKD", "NFD"), 2),
        pytest.param(("Lowercase", "NFC"), 1, marks=pytest.mark.full),
        pytest.param(("NFKC", "Lowercase", "StripAccents"), 2, marks=pytest.mark.full),
        (("NFD", "StripAccents", "NFC"), 1),
    ],
)
def test_runs_of_unicode_normalizers_in_one_pass_each(kinds, passes, request):
    """A run joins into one table per decomposition that needs its marks ordered (none before
    StripAccents), and still equals Hugging Face's steps one after the other."""
    normalizers = pytest.importorskip("tokenizers").normalizers
    reference = normalizers.Sequence([getattr(normalizers, kind)() for kind in kinds])
    count, passes = passes, unicode_normalizers.rewrites(list(kinds))
    assert len(passes) == count
    step = 1 if request.config.getoption("--full") else 31
    rng = random.Random(" ".join(kinds))
    marks = [c for c in CODE_POINTS if unicodedata.combining(chr(c))]
    texts = [chr(c) for c in CODE_POINTS[::step]] + [
        "".join(chr(rng.choice(marks if rng.random() < 0.5 else CODE_POINTS)) for _ in range(rng.randint(1, 8)))
        for _ in range(50000 // step)
    ]
    texts += ["Plain ASCII, Capitals AND digits 42.", "\x00\x7f ~", "ÀB ﬁ"]

    def normalize(strings):
        for rewrite in passes:
            strings = rewrite(strings)
        return strings

    got = [t.decode("utf-8") for t in tf.function(normalize)(tf.constant([t.encode("utf-8") for t in texts])).numpy()]
    different = [(t, g, reference.normalize_str(t)) for t, g in zip(texts, got) if g != reference.normalize_str(t)]
    assert not different, f"{len(texts) - len(different)}/{len(texts)} identical; first: {ascii(different[0])}"
