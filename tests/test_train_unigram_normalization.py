"""train_unigram's normalization: the precompiled character map against SentencePiece's reader and tables,
hand-checked NFKC rewriting in trained models, parity with SentencePiece, argument and CLI checks."""

import dataclasses
import functools
import io
import unicodedata

import hypothesis
import hypothesis.strategies as st
import pytest

from tests.conftest import nonempty_lines, shared_file
from tfsubword import UnigramLayer, train_unigram
from tfsubword.files import darts
from tfsubword.files import sentencepiece_model as spm_model
from tfsubword.files.sentencepiece_model import decode_charsmap, encode_charsmap
from tfsubword.text import normalization_rules

COMPATIBILITY_LINES = [
    "The ﬁrst ﬁsh was ﬁne… ① then ② then ③.",
    "ＦＵＬＬ ｗｉｄｔｈ letters and ｶﾀｶﾅ, ㍿ and ㎏.",
    "cafe\u0301 and re\u0301sume\u0301\tafter a tab",
    "zero\u200bwidth, bell\x07 and ～tilde～ and ▁marks▁",
]


def shared_charsmap():
    return spm_model.load(shared_file("sentencepiece-test-unigram-en-1000.model")).normalizer.charsmap


@functools.cache
def sentencepiece_nmt_nfkc_model():
    """A tiny model from SentencePiece's own trainer, for its default `nmt_nfkc` table."""
    spm = pytest.importorskip("sentencepiece")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(["hello world"] * 50), model_writer=model, vocab_size=12, minloglevel=2
    )
    return model.getvalue()


# The character map's double array.


@pytest.mark.parametrize(
    "rules",
    [
        {"a": "b"},
        {"a": "x", "ab": "y", "abc": "", "b": "x"},  # nested keys, a shared and an empty replacement
        {"ﬁ": "fi", "①": "1", "\t": " ", "\u0301": "", "e\u0301": "é", "\U0001d400": "A"},
        {chr(code_point): "+" for code_point in range(1, 0x800)},  # every one- and two-byte character
        {chr(0x4E00 + i) + chr(0x4E00 + j): str(i * j) for i in range(40) for j in range(40)},
    ],
)
def test_round_trip_by_hand(rules):
    assert decode_charsmap(encode_charsmap(rules)) == rules


_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=4)


@hypothesis.given(st.dictionaries(_TEXT.filter(bool), _TEXT, min_size=1, max_size=40))
def test_round_trip_random(rules):
    assert decode_charsmap(encode_charsmap(rules)) == rules


def _offset(unit):
    return (unit >> 10) << ((unit & 512) >> 6)


def _prefix_search(units, text):
    """Darts-clone's `commonPrefixSearch`, as SentencePiece's normalizer runs it: (length, value) of every
    key that starts `text`. Like it, no bounds check: the array must hold every unit a walk reaches."""
    found, position = [], _offset(int(units[0]))
    for length, byte in enumerate(text, 1):
        position ^= byte
        unit = int(units[position])
        if unit & 0x800000FF != byte:  # a leaf's label has bit 31 set: it matches no byte
            break
        position ^= _offset(unit)
        if unit >> 8 & 1:
            found.append((length, int(units[position]) & 0x7FFFFFFF))
    return found


@hypothesis.given(
    st.dictionaries(
        st.binary(min_size=1, max_size=5).filter(lambda key: 0 not in key),
        st.integers(0, 2**31 - 1),
        min_size=1,
        max_size=60,
    ),
    st.lists(st.binary(max_size=6), max_size=20),
)
def test_double_array_prefix_search_finds_exactly_the_keys(pairs, probes):
    units = darts.build(pairs.items())
    assert units.dtype == "<u4" and len(units) % 256 == 0
    # A NUL byte inside a key is the walk most likely to land on a unit no node uses.
    texts = [key[:cut] + extra + key[cut:] for key in pairs for cut in range(len(key) + 1) for extra in (b"", b"\0")]
    for text in texts + probes:
        expected = [(length, pairs[text[:length]]) for length in range(1, len(text) + 1) if text[:length] in pairs]
        assert _prefix_search(units, text) == expected


def test_round_trip_of_the_shared_models_nfkc_map():
    rules = shared_charsmap()
    assert len(rules) > 200_000
    assert decode_charsmap(encode_charsmap(rules)) == rules


def test_sentencepiece_reads_the_encoded_map_as_its_own():
    spm = pytest.importorskip("sentencepiece")
    path = shared_file("sentencepiece-test-unigram-en-1000.model")
    model = spm_model.load(path)
    rebuilt = dataclasses.replace(model.normalizer, precompiled_charsmap=encode_charsmap(model.normalizer.charsmap))
    theirs = spm.SentencePieceProcessor(model_file=str(path))
    ours = spm.SentencePieceProcessor(model_proto=spm_model.serialize(model.pieces, rebuilt))
    keys = sorted(model.normalizer.charsmap)
    texts = ["".join(keys[i : i + 7]) for i in range(0, len(keys), 97)]  # every kind of rule, side by side
    texts += ["a\0b\0", "\0", "e\u0301\u0301 ﬁ"] + nonempty_lines(shared_file("wagahaiwa_nekodearu.txt"))[:200]
    assert [ours.normalize(text) for text in texts] == [theirs.normalize(text) for text in texts]


def test_encode_charsmap_checks_its_rules():
    assert encode_charsmap({}) == b""
    for rules in ({"": "x"}, {"a\0": "x"}, {"a": "x\0"}, {"a": 1}):
        with pytest.raises(ValueError, match="Rules must map"):
            encode_charsmap(rules)
    with pytest.raises(ValueError, match="prefixes"):
        encode_charsmap({"a" * length: "x" for length in range(1, 40)})


# The rule sets against SentencePiece's tables (built with ICU and another Unicode version).


def _differences(ours, theirs):
    changed = [key for key in ours.keys() & theirs.keys() if ours[key] != theirs[key]]
    return changed, sorted(ours.keys() - theirs.keys()), sorted(theirs.keys() - ours.keys())


def _unassigned_here(key):
    return any(unicodedata.category(character) == "Cn" for character in key)


def test_nfkc_rules_equal_the_shared_models_but_for_newer_characters():
    changed, only_ours, only_theirs = _differences(normalization_rules.charsmap("nfkc"), shared_charsmap())
    assert changed == [] and only_theirs == []
    assert len(only_ours) < 200  # characters Unicode added after that table was built
    assert "\u32ff" in only_ours  # SQUARE ERA NAME REIWA (Unicode 12.1)


def test_nmt_nfkc_rules_equal_sentencepieces_but_for_characters_python_does_not_know():
    theirs = spm_model.load(sentencepiece_nmt_nfkc_model()).normalizer
    assert theirs.name == "nmt_nfkc"
    changed, only_ours, only_theirs = _differences(normalization_rules.charsmap("nmt_nfkc"), theirs.charsmap)
    assert changed == [] and len(only_ours) < 200
    assert all(_unassigned_here(key) for key in only_theirs)


def test_rule_sets_by_hand():
    nmt, nfkc = normalization_rules.charsmap("nmt_nfkc"), normalization_rules.charsmap("nfkc")
    for rules in (nmt, nfkc):
        assert rules["ﬁ"] == "fi" and rules["①"] == "1" and rules["Ａ"] == "A" and rules["…"] == "..."
        assert rules["e\u0301"] == "é" and rules["\u1100\u1161"] == "가" and rules["ｶ"] == "カ"
        assert "a" not in rules and "é" not in rules
    assert nfkc["～"] == "~" and "～" not in nmt
    assert nmt["\t"] == nmt["\n"] == nmt["\u200b"] == nmt["\u2581"] == " " and "\t" not in nfkc
    assert nmt["\x07"] == nmt["\x7f"] == "" and "\x07" not in nfkc
    assert normalization_rules.charsmap("identity") == {}


# Trained models.


@functools.cache
def trained_model(directory, normalization):
    """A model trained on text with compatibility characters; `nmt_nfkc` is not passed: it is the default."""
    lines = nonempty_lines(shared_file("botchan.txt"))[:1000] + COMPATIBILITY_LINES * 30
    path = directory / f"{normalization}.model"
    chosen = {} if normalization == "nmt_nfkc" else {"normalization": normalization}
    vocabulary = train_unigram(
        lines, vocab_size=800, output=str(path), character_coverage=1.0, show_progress=False, **chosen
    )
    return path, vocabulary


@pytest.fixture(scope="module")
def model_directory(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


EXPECTED_NORMALIZATION = {
    "nmt_nfkc": [
        ("ﬁsh ﬁ", "▁fish▁fi"),
        ("① ②", "▁1▁2"),
        ("ＡＢＣ ｶ", "▁ABC▁カ"),
        ("wait…", "▁wait..."),
        ("cafe\u0301", "▁café"),
        ("a\tb\nc", "▁a▁b▁c"),
        ("x\u200by", "▁x▁y"),
        ("bell\x07", "▁bell"),
        ("～", "▁～"),
        ("㍿", "▁株式会社"),
        ("a▁b", "▁a▁b"),
    ],
    "nfkc": [("ﬁsh", "▁fish"), ("①", "▁1"), ("a\tb", "▁a\tb"), ("～", "▁~"), ("bell\x07", "▁bell\x07")],
    "identity": [("ﬁsh ①", "▁ﬁsh▁①"), ("a\tb", "▁a\tb"), ("cafe\u0301", "▁cafe\u0301")],
}


@pytest.mark.full
@pytest.mark.parametrize("normalization", sorted(EXPECTED_NORMALIZATION))
def test_trained_model_normalizes_in_sentencepiece_as_expected(model_directory, normalization):
    spm = pytest.importorskip("sentencepiece")
    path, _ = trained_model(model_directory, normalization)
    assert spm_model.load(path).normalizer.name == normalization
    processor = spm.SentencePieceProcessor(model_file=str(path))
    texts, expected = zip(*EXPECTED_NORMALIZATION[normalization])
    assert [processor.normalize(text) for text in texts] == list(expected)


def test_words_are_counted_normalized(model_directory):
    _, folded = trained_model(model_directory, "nmt_nfkc")
    _, kept = trained_model(model_directory, "identity")
    for character in "ﬁ①Ｆｗ…":  # each occurs 30 times or more in the corpus
        assert not any(character in piece for piece, _ in folded)
        assert any(character in piece for piece, _ in kept)


def test_layer_encodes_as_sentencepiece_with_the_default_normalization(model_directory):
    spm = pytest.importorskip("sentencepiece")
    path, _ = trained_model(model_directory, "nmt_nfkc")
    test_lines = nonempty_lines(shared_file("wikitext2-valid.txt"))[:300] + COMPATIBILITY_LINES
    test_lines += [line for line in nonempty_lines(shared_file("wagahaiwa_nekodearu.txt")) if len(line) < 80][:100]
    expected = spm.SentencePieceProcessor(model_file=str(path)).encode(test_lines)
    assert UnigramLayer(str(path))(test_lines).to_list() == expected


@pytest.mark.parametrize("normalization", ["nmt_nfkc", pytest.param("nfkc", marks=pytest.mark.full)])
def test_returned_vocabulary_encodes_as_the_model_file(model_directory, normalization):
    """`UnigramLayer(train_unigram(...))` applies the rules the vocabulary was trained with: the same
    ids as the `.model` file in SentencePiece, and its own `.model` bytes encode the same. A plain
    list of its pairs has no rules: with `normalization=` named, it encodes the same too."""
    spm = pytest.importorskip("sentencepiece")
    path, vocabulary = trained_model(model_directory, normalization)
    test_lines = nonempty_lines(shared_file("wikitext2-valid.txt"))[:100] + COMPATIBILITY_LINES
    expected = spm.SentencePieceProcessor(model_file=str(path)).encode(test_lines)
    layer = UnigramLayer(vocabulary)
    assert layer(test_lines).to_list() == expected
    rebuilt = spm.SentencePieceProcessor(model_proto=layer.serialized_model())
    assert rebuilt.encode(test_lines) == expected
    assert vocabulary[0][0] == "<unk>" and isinstance(vocabulary, list)
    named = UnigramLayer(list(vocabulary), normalization=normalization)
    assert named(test_lines).to_list() == expected
    assert named.get_config()["normalization"] == normalization
    # A plain list without rules (identity): "ﬁ" and "①" are not folded, and no piece holds them.
    assert 0 not in expected[100] and 0 in UnigramLayer(list(vocabulary))(COMPATIBILITY_LINES[:1]).to_list()[0]
    with pytest.raises(ValueError, match="differs from the vocabulary's own normalizer"):
        UnigramLayer(vocabulary, normalization="identity")


@pytest.mark.parametrize("normalization", ["NFKC", "nfc", "", None])
def test_bad_normalization_is_an_error(normalization):
    with pytest.raises(ValueError, match="normalization.*'nmt_nfkc', 'nfkc', 'identity'"):
        train_unigram(["some text"], vocab_size=10, normalization=normalization, show_progress=False)
    if normalization is not None:  # the layer's None: the vocabulary's own rules, identity for a list
        with pytest.raises(ValueError, match="normalization.*'nmt_nfkc', 'nfkc', 'identity'"):
            UnigramLayer([("<unk>", 0.0), ("a", -1.0)], normalization=normalization)


@pytest.mark.full
def test_cli_normalization_flag(tmp_path, capsys):
    from tfsubword.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(["the ﬁsh sat on the mat", "the cat ate", "a mat is ﬂat"] * 30), encoding="utf-8")
    for flags, name in (
        (["--normalization", "identity"], "identity"),
        (["--normalization", "nfkc"], "nfkc"),
        ([], "nmt_nfkc"),
    ):
        output = tmp_path / f"{name}.model"
        assert (
            main(["train", "unigram", "--vocab-size", "25", "--no-progress", *flags, "-o", str(output), str(corpus)])
            == 0
        )
        assert spm_model.load(output).normalizer.name == name
        pieces = [line.split("\t")[0] for line in (tmp_path / f"{name}.vocab").read_text(encoding="utf-8").splitlines()]
        assert ("ﬁ" in pieces) == (name == "identity")
    with pytest.raises(SystemExit):
        main(["train", "unigram", "--normalization", "nfc", "-o", str(tmp_path / "x.model"), str(corpus)])
    assert "invalid choice: 'nfc'" in capsys.readouterr().err
