"""The word-cutting pre-tokenizers of `from_huggingface` against Hugging Face's `pre_tokenizers` themselves.

`Whitespace`, `WhitespaceSplit`, `Punctuation`, `Digits` and `BertPreTokenizer` on a character between
two letters, for every code point (`--full`; every 97th otherwise), so each character class is checked
whole; `Split` with every behavior, inverted or not, on random text made of the pattern's parts; and
`Sequence`s of them; random Oniguruma regexes (classes, groups, lazy and greedy repeats) on random text.
The words must equal `pre_tokenize_str`'s pieces exactly.
"""

import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import strategies as st

from tfsubword.files import huggingface_components as components
from tfsubword.text.pre_tokenizers import PreTokenizer

CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
BEHAVIORS = {
    "Removed": "removed",
    "Isolated": "isolated",
    "MergedWithPrevious": "merged_with_previous",
    "MergedWithNext": "merged_with_next",
    "Contiguous": "contiguous",
}
CHARACTER_STEPS = [
    {"type": "Whitespace"},
    {"type": "WhitespaceSplit"},
    {"type": "BertPreTokenizer"},
    {"type": "Digits", "individual_digits": True},
    {"type": "Digits", "individual_digits": False},
    *({"type": "Punctuation", "behavior": behavior} for behavior in BEHAVIORS),
]


def tokenizers_module():
    return pytest.importorskip("tokenizers")


def reference(step):
    """The `tokenizers` pre-tokenizer of a step's JSON object."""
    tokenizers = tokenizers_module()
    pre = tokenizers.pre_tokenizers
    kind = step["type"]
    if kind == "Sequence":
        return pre.Sequence([reference(inner) for inner in step["pretokenizers"]])
    if kind == "Split":
        pattern = step["pattern"]
        text = pattern["String"] if "String" in pattern else tokenizers.Regex(pattern["Regex"])
        return pre.Split(text, BEHAVIORS[step["behavior"]], invert=step["invert"])
    if kind == "Punctuation":
        return pre.Punctuation(BEHAVIORS[step["behavior"]])
    if kind == "Digits":
        return pre.Digits(individual_digits=step["individual_digits"])
    return getattr(pre, kind)()


def check_words(step, texts):
    steps = components.pre_tokenizer_steps(step)
    got = PreTokenizer(steps)(tf.constant(texts, tf.string)).to_list()
    got = [[word.decode("utf-8") for word in words] for words in got]
    expected = [[piece for piece, _ in reference(step).pre_tokenize_str(text)] for text in texts]
    different = [(text, g, e) for text, g, e in zip(texts, got, expected) if g != e]
    assert not different, f"{len(texts) - len(different)}/{len(texts)} identical; first: {different[0]}"


@pytest.mark.parametrize("step", CHARACTER_STEPS, ids=lambda step: "-".join(map(str, step.values())))
def test_every_character_class_matches(request, step):
    stride = 1 if request.config.getoption("--full") else 97
    texts = [f"a{chr(c)}a{chr(c)}{chr(c)} 1" for c in CODE_POINTS[::stride]]
    for start in range(0, len(texts), 50000):
        check_words(step, texts[start : start + 50000])


# Split patterns, and the characters random texts are made of for each (the parts of its matches,
# spaces, and others).
SPLITS = {
    "string": ({"String": "ab"}, "ab x"),
    "string of a space": ({"String": " "}, "ab "),
    "regex": ({"Regex": "a+|bc?"}, "abc x"),
    "regex with an anchor": ({"Regex": "\\Aa|b{2,3}"}, "ab x"),
    "regex of a group": ({"Regex": "(?:é|e\u0301)+"}, "ée\u0301 x"),
}


@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize("behavior", list(BEHAVIORS))
@pytest.mark.parametrize("split", list(SPLITS))
@given(data=st.data())
def test_split_matches_every_behavior(split, behavior, invert, data):
    pattern, alphabet = SPLITS[split]
    texts = data.draw(st.lists(st.text(alphabet, max_size=12), min_size=1, max_size=8))
    check_words({"type": "Split", "pattern": pattern, "behavior": behavior, "invert": invert}, texts)


# Parts of random regexes: characters, escapes and classes of every kind the translation takes.
ATOMS = ["a", "b", "\u00e9", " ", "1", "\\.", ".", "\\s", "\\S", "\\d", "\\D", "\\w", "\\W", "\\p{L}", "\\P{N}"]
ATOMS += ["\\p{P}", "\\p{^L}", "[ab]", "[^a\\s]", "[a-c\\d]", "[\\p{P}\\s]", "[^\\w]", "[-.]", "[a-]", "\\n", "\\t"]
ATOMS += ["\\x{3A3}", "\\u0661", "[[ab]c]", "[^[^a]]", "\\x41"]
QUANTIFIERS = ["", "*", "+", "?", "{1,2}", "{2}", "+?", "*?", "??", "{0,3}?"]
TEXT = st.text("ab \u00e91.,-\n\t\u03a3\u0663AZ_!?\u0301\u00a0\u3000\U0001f600\u4e2d", max_size=14)


@st.composite
def regexes(draw, depth=0):
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        if depth < 2 and draw(st.booleans()) and draw(st.booleans()):
            inner = draw(st.lists(regexes(depth + 1), min_size=1, max_size=3))
            atom = draw(st.sampled_from(["(?:", "("])) + "|".join(inner) + ")"
        else:
            atom = draw(st.sampled_from(ATOMS))
        parts.append(atom + draw(st.sampled_from(QUANTIFIERS)))
    return "".join(parts)


@given(regex=regexes(), texts=st.lists(TEXT, min_size=1, max_size=8), behavior=st.sampled_from(list(BEHAVIORS)))
def test_random_regexes_match(regex, texts, behavior):
    step = {"type": "Split", "pattern": {"Regex": regex}, "behavior": behavior, "invert": False}
    try:
        components.pre_tokenizer_steps(step)
    except ValueError as error:  # the parts are all supported, but not every way of putting them together
        assert "nothing" in str(error)
        return
    check_words(step, texts)


@given(texts=st.lists(st.text(max_size=16) | st.text("ab1 .,-\u00e9\u3000\u0661", max_size=16), max_size=8))
def test_sequences_match(texts):
    steps = [
        {"type": "WhitespaceSplit"},
        {"type": "Punctuation", "behavior": "Contiguous"},
        {"type": "Split", "pattern": {"String": "b"}, "behavior": "MergedWithNext", "invert": False},
        {"type": "Digits", "individual_digits": True},
    ]
    check_words({"type": "Sequence", "pretokenizers": steps}, texts)
    check_words({"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}, steps[3]]}, texts)


def test_invalid_utf8_reads_as_the_replacement_character():
    words = PreTokenizer([{"type": "WhitespaceSplit"}])(tf.constant([b"a\xff b\xfe\xff", b"\xff"])).to_list()
    assert words == [["a\ufffd".encode(), "b\ufffd\ufffd".encode()], ["\ufffd".encode()]]


@pytest.mark.parametrize(
    "step, named",
    [
        ({"type": "Split", "pattern": {"Regex": "\\w+(?=a)"}, "behavior": "Isolated"}, "Split regex"),
        ({"type": "Split", "pattern": {"Regex": "(?:a?)+"}, "behavior": "Isolated"}, "repeat of something"),
        ({"type": "Split", "pattern": {"Regex": "[a&&b]"}, "behavior": "Isolated"}, "intersection"),
        ({"type": "Split", "pattern": {"Regex": "\\xE9"}, "behavior": "Isolated"}, "a byte"),
        ({"type": "Split", "pattern": {"Regex": "\\p{Greek}"}, "behavior": "Isolated"}, "property"),
        ({"type": "Split", "pattern": {"Regex": "[^\\s\\S]"}, "behavior": "Isolated"}, "no character"),
        ({"type": "Split", "pattern": {"Regex": "a++"}, "behavior": "Isolated"}, "possessive"),
        ({"type": "Split", "pattern": {"String": ""}, "behavior": "Isolated"}, "Split pattern"),
        ({"type": "Split", "pattern": {"Regex": "a*"}, "behavior": "Isolated"}, "match nothing"),
        ({"type": "Split", "pattern": {"String": "a"}, "behavior": "Sideways"}, "behavior"),
        ({"type": "Punctuation", "behavior": 3}, "behavior"),
        ({"type": "Digits", "individual_digits": "yes"}, "individual_digits"),
        ({"type": "Sequence", "pretokenizers": {"type": "Whitespace"}}, "pretokenizers"),
    ],
)
def test_bad_steps_are_refused_by_name(step, named):
    with pytest.raises(ValueError, match=named):
        components.pre_tokenizer_steps(step)


def test_other_pre_tokenizers_are_not_word_steps():
    assert components.pre_tokenizer_steps({"type": "UnicodeScripts"}) is None
    assert components.pre_tokenizer_steps({"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"}]}) is None
    assert components.pre_tokenizer_steps(None) == []
