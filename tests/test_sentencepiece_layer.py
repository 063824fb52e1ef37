"""SentencePieceLayer against `sentencepiece`: BPE models it trains here on shared text, random models
with ties, unused and user-defined pieces, hand-worked examples, bad models, the layer contract."""

import functools
import io

import hypothesis
import hypothesis.strategies as st
import pytest
import tensorflow as tf

from tests import contract
from tests.conftest import nonempty_lines, parity_call, real_texts, shared_file, shared_texts
from tests.test_unigram import model_bytes
from tfsubword import SentencePieceLayer, UnigramLayer
from tfsubword.files import sentencepiece_model as spm_model

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = (
    spm_model.NORMAL,
    spm_model.UNKNOWN,
    spm_model.CONTROL,
    spm_model.USER_DEFINED,
    spm_model.UNUSED,
    spm_model.BYTE,
)
TRAINING_TEXTS = (
    "botchan.txt",
    "realtext/fortunes-it.txt",
    "realtext/fortunes-bg.txt",
    "realtext/debian-reference-ja.txt",
)

# BPE models SentencePiece trains in the tests: name -> trainer options.
TRAINED = {
    # The default rules (nmt_nfkc), and characters left out (unknown pieces).
    "nmt_nfkc": dict(vocab_size=2000, character_coverage=0.995),
    "byte_fallback": dict(
        vocab_size=2000,
        character_coverage=0.995,
        byte_fallback=True,
        split_digits=True,
        user_defined_symbols=["<sep>", "ab", "\u3002"],
        control_symbols=["<cls>"],
    ),
    # Llama-2's settings: identity rules, spaces kept (pieces of several `▁`), byte fallback, digits split.
    "llama2_style": dict(
        vocab_size=2000,
        character_coverage=0.999,
        byte_fallback=True,
        split_digits=True,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        allow_whitespace_only_pieces=True,
    ),
}
# Llama-2's settings and a user-defined symbol: the model tests/test_huggingface.py converts to a tokenizer.json.
TRAINED["llama2_converted"] = dict(TRAINED["llama2_style"], vocab_size=3000, user_defined_symbols=["<sep>"])


def spm_module():
    return pytest.importorskip("sentencepiece")


@functools.cache
def trained_model(name):
    """The bytes of a BPE model SentencePiece trains on shared text (cached for the session)."""
    spm = spm_module()
    lines = [line for source in TRAINING_TEXTS for line in nonempty_lines(shared_file(source))]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        model_type="bpe",
        num_threads=2,
        minloglevel=2,
        **TRAINED[name],
    )
    return model.getvalue()


@functools.cache
def encoders(name):
    """(ids, (id, begin, end) spans) of SentencePieceLayer in tf.functions, and the SentencePieceProcessor."""
    data = trained_model(name)
    layer = SentencePieceLayer(data)
    ids = parity_call(layer)
    with_offsets = parity_call(layer.tokenize_with_offsets)

    def spans(texts):
        rows = (ragged.to_list() for ragged in with_offsets(tf.constant(texts)))
        return [list(zip(*row)) for row in zip(*rows)]

    return (
        (lambda texts: ids(tf.constant(texts)).to_list()),
        spans,
        spm_module().SentencePieceProcessor(model_proto=data),
    )


def reference_spans(processor, texts):
    return [[(p.id, p.begin, p.end) for p in text.pieces] for text in processor.encode(texts, return_type="proto")]


def differences(name, texts, batch=512):
    """The texts whose ids or spans differ from SentencePiece's."""
    ids, spans, processor = encoders(name)
    different = []
    for start in range(0, len(texts), batch):
        chunk = texts[start : start + batch]
        different += [(t, g, e) for t, g, e in zip(chunk, ids(chunk), processor.encode(chunk)) if g != e]
        different += [(t, g, e) for t, g, e in zip(chunk, spans(chunk), reference_spans(processor, chunk)) if g != e]
    return different


def test_sample_of_every_shared_text_matches_sentencepiece():
    """The quick tier's parity sample: every 100th line of every shared text, Llama-2-style model."""
    lines = [line for path in shared_texts() + real_texts() for line in nonempty_lines(path)][::100]
    if not lines:
        pytest.skip("no shared text")
    different = differences("llama2_style", lines)
    assert not different, different[:3]


@pytest.mark.full
@pytest.mark.parametrize("model", ["nmt_nfkc", "byte_fallback", "llama2_style"])
@pytest.mark.parametrize("path", shared_texts() + real_texts(), ids=lambda p: p.name)
def test_identical_to_sentencepiece_on_every_line(model, path):
    lines = nonempty_lines(path)
    different = differences(model, lines)
    assert not different, f"{len(different)} of {len(lines)} differ: {different[:3]}"


@pytest.mark.full
def test_trained_models_exercise_what_they_claim():
    """The models hold what their names promise: unknown characters, byte and user-defined pieces, `▁▁`."""
    processor = encoders("nmt_nfkc")[2]
    assert processor.encode("\u2603") == [processor.piece_to_id("\u2581"), processor.unk_id()]
    processor = encoders("byte_fallback")[2]
    assert processor.encode("ab<sep>", out_type=str) == ["\u2581", "ab", "<sep>"]
    assert processor.encode("\u2603", out_type=str) == ["\u2581", "<0xE2>", "<0x98>", "<0x83>"]
    processor = encoders("llama2_style")[2]
    assert "\u2581\u2581" in processor.encode("a  b", out_type=str)


_ALPHABET = st.one_of(
    st.sampled_from(["<sep>", "ab", "\u3002", "<cls>", "<unk>", " ", "  ", "\u2581", "\t", "1234", "\ufffd", "👍🏽"]),
    st.characters(codec="utf-8"),
    st.sampled_from("etaoinsh Ciao città ПРИВЕТ 日本語の"),
)
_TEXT = st.lists(_ALPHABET, max_size=40).map("".join)


@pytest.mark.parametrize("model", ["byte_fallback", pytest.param("llama2_style", marks=pytest.mark.full)])
@hypothesis.given(texts=st.lists(_TEXT, min_size=1, max_size=16))
def test_random_text_matches_sentencepiece(model, texts):
    different = differences(model, texts)
    assert not different, different[0]


@pytest.mark.parametrize("model", ["byte_fallback", pytest.param("nmt_nfkc", marks=pytest.mark.full)])
def test_detokenize_equals_sentencepiece_decode(model):
    _, _, processor = encoders(model)
    lines = [line for path in shared_texts() + real_texts() for line in nonempty_lines(path)][::97]
    if not lines:
        pytest.skip("no shared text")
    ids = processor.encode(lines)
    layer = SentencePieceLayer(trained_model(model))
    decoded = layer.detokenize(tf.ragged.constant(ids, dtype=tf.int32)).numpy().tolist()
    assert [text.decode("utf-8") for text in decoded] == [processor.decode(row) for row in ids]


# Random models: few characters, so pieces overlap and compete; scores are small integers, so ties are
# common; some pieces are unused or user-defined.
_CHARACTERS = "ab\u2581c\u00e9"


@st.composite
def random_models(draw):
    pieces = [("<unk>", 0.0, UNKNOWN), ("<s>", 0.0, CONTROL), ("</s>", 0.0, CONTROL)]
    characters = draw(st.lists(st.sampled_from(_CHARACTERS), min_size=1, unique=True))
    pieces += [(c, float(draw(st.integers(-5, 0))), NORMAL) for c in characters]
    longer = st.lists(st.sampled_from(characters), min_size=2, max_size=5).map("".join)
    kinds = st.sampled_from([NORMAL] * 5 + [UNUSED, USER_DEFINED])
    seen = {piece for piece, _, _ in pieces}
    for text, score, kind in draw(st.lists(st.tuples(longer, st.integers(-5, 0), kinds), max_size=20)):
        if text not in seen:
            seen.add(text)
            pieces.append((text, float(score), kind))
    byte_fallback = draw(st.booleans())
    if byte_fallback:
        pieces += [(spm_model.byte_piece(byte), 0.0, BYTE) for byte in range(256)]
    normalizer = spm_model.Normalizer(
        name="identity", add_dummy_prefix=draw(st.booleans()), remove_extra_whitespaces=draw(st.booleans())
    )
    return spm_model.serialize(pieces, normalizer, model_type="bpe", byte_fallback=byte_fallback)


@hypothesis.given(
    model=random_models(),
    texts=st.lists(st.lists(st.sampled_from(_CHARACTERS + " xa"), max_size=14).map("".join), min_size=1, max_size=8),
)
def test_random_models_match_sentencepiece(model, texts):
    """Ties in score go to the leftmost pair, unused pieces are split back, user-defined ones never merge."""
    try:
        layer = SentencePieceLayer(model)
    except ValueError as error:  # the two refusals, each tested by hand below
        assert "can be made by" in str(error)
        return
    processor = spm_module().SentencePieceProcessor(model_proto=model)
    assert layer(tf.constant(texts)).to_list() == processor.encode(texts)
    ids, starts, ends = (ragged.to_list() for ragged in layer.tokenize_with_offsets(tf.constant(texts)))
    assert [list(zip(*row)) for row in zip(ids, starts, ends)] == reference_spans(processor, texts)


def _model(pieces, add_dummy_prefix=False, byte_fallback=False):
    pieces = [("<unk>", 0.0, UNKNOWN)] + pieces
    normalizer = spm_model.Normalizer(name="identity", add_dummy_prefix=add_dummy_prefix)
    return spm_model.serialize(pieces, normalizer, model_type="bpe", byte_fallback=byte_fallback)


def _pieces_of(model, text):
    layer = SentencePieceLayer(model, dtype="string")
    return [piece.decode() for piece in layer(text).numpy()]


def test_equal_scores_merge_leftmost_first_by_hand():
    """ "bc" has the lower id, but "ab" and "bc" score alike, so the leftmost pair of "abc" goes first."""
    model = _model([(c, -1.0, NORMAL) for c in "abc"] + [("bc", -2.0, NORMAL), ("ab", -2.0, NORMAL)])
    assert _pieces_of(model, "abc") == ["ab", "c"]
    assert _pieces_of(model, "bcab") == ["bc", "ab"]
    processor = spm_module().SentencePieceProcessor(model_proto=model)
    assert processor.encode(["abc", "bcab"], out_type=str) == [["ab", "c"], ["bc", "ab"]]


def test_higher_score_merges_first_by_hand():
    """ "▁a" (-2) merges before "aa" (-3): "▁aaa" -> ▁a, aa; a Llama-2-style run of spaces is one piece."""
    pieces = [(c, -1.0, NORMAL) for c in "\u2581a"] + [("\u2581a", -2.0, NORMAL), ("aa", -3.0, NORMAL)]
    pieces += [("\u2581\u2581", -1.5, NORMAL)]
    model = _model(pieces, add_dummy_prefix=True)
    assert _pieces_of(model, "aaa") == ["\u2581a", "aa"]
    normalizer = spm_model.Normalizer(name="identity", remove_extra_whitespaces=False)
    model = spm_model.serialize([("<unk>", 0.0, UNKNOWN)] + pieces, normalizer, model_type="bpe")
    # "▁a▁▁a": "▁▁" (-1.5) before "▁a" (-2), so the second "a" is alone.
    assert _pieces_of(model, "a  a") == ["\u2581a", "\u2581\u2581", "a"]


def test_pieces_across_spaces_by_hand():
    """ "a▁b" is a piece, so the text is merged whole, not unit by unit: "a b" is one piece."""
    pieces = [(c, -1.0, NORMAL) for c in "\u2581ab"] + [("a\u2581", -2.0, NORMAL), ("a\u2581b", -3.0, NORMAL)]
    model = _model(pieces)
    assert _pieces_of(model, "a b") == ["a\u2581b"]
    assert _pieces_of(model, "b a a") == ["b", "\u2581", "a\u2581", "a"]
    processor = spm_module().SentencePieceProcessor(model_proto=model)
    assert processor.encode(["a b", "b a a"], out_type=str) == [["a\u2581b"], ["b", "\u2581", "a\u2581", "a"]]


def test_unused_pieces_are_split_back_by_hand():
    """ "ab" is unused: alone it comes out as a, b; inside "abb" it is merged on."""
    model = _model([(c, -1.0, NORMAL) for c in "ab"] + [("ab", -2.0, UNUSED), ("abb", -3.0, NORMAL)])
    assert _pieces_of(model, "ab") == ["a", "b"]
    assert _pieces_of(model, "abb") == ["abb"]
    assert _pieces_of(model, "abab") == ["a", "b", "a", "b"]


def test_user_defined_pieces_stay_whole_by_hand():
    """The user-defined "ab" never merges with what is around it, though "▁ab" and "abc" are pieces."""
    pieces = [(c, -1.0, NORMAL) for c in "\u2581abc"] + [("ab", 0.0, USER_DEFINED)]
    pieces += [("\u2581ab", -2.0, NORMAL), ("abc", -2.0, NORMAL), ("bc", -3.0, NORMAL)]
    model = _model(pieces, add_dummy_prefix=True)
    assert _pieces_of(model, "abc") == ["\u2581", "ab", "c"]
    assert _pieces_of(model, "aabc") == ["\u2581", "a", "ab", "c"]
    assert _pieces_of(model, "a bc") == ["\u2581", "a", "\u2581", "bc"]


def test_unknown_characters_merge_or_fall_back_to_bytes_by_hand():
    model = _model([(c, -1.0, NORMAL) for c in "ab"])
    assert _pieces_of(model, "a\u00e9\u00e9b") == ["a", "<unk>", "b"]
    model = _model(
        [(c, -1.0, NORMAL) for c in "ab"] + [(spm_model.byte_piece(b), 0.0, BYTE) for b in range(256)],
        byte_fallback=True,
    )
    assert _pieces_of(model, "a\u00e9b") == ["a", "<0xC3>", "<0xA9>", "b"]


def test_bad_models_raise_value_error(tmp_path):
    # A piece with a character that is no piece: SentencePiece would merge an unknown symbol into it.
    with pytest.raises(ValueError, match="holds the character 'c', which is no piece"):
        SentencePieceLayer(_model([("a", -1.0, NORMAL), ("ac", -2.0, NORMAL)]))
    # An unused piece two pairs make.
    pieces = [(c, -1.0, NORMAL) for c in "ab"] + [("ab", -2.0, NORMAL), ("bb", -2.0, NORMAL), ("abb", -3.0, UNUSED)]
    with pytest.raises(ValueError, match="unused piece 'abb' .* can be made by 2 pairs"):
        SentencePieceLayer(_model(pieces))
    word_model = spm_model.serialize(
        [("<unk>", 0.0, UNKNOWN), ("a", 0.0, NORMAL)], spm_model.Normalizer(), model_type="word"
    )
    with pytest.raises(ValueError, match="type unigram or bpe; this one is of type 'word'"):
        SentencePieceLayer(word_model)
    with pytest.raises(ValueError, match="SentencePieceLayer reads BPE models"):
        UnigramLayer(_model([("a", -1.0, NORMAL)]))
    with pytest.raises(ValueError, match="`model` must be the path or the bytes"):
        SentencePieceLayer([("a", 0.0)])
    with pytest.raises(ValueError, match="Not a valid SentencePiece model"):
        SentencePieceLayer(_model([("a", -1.0, NORMAL)])[:-3])
    missing = tmp_path / "missing.model"
    with pytest.raises(ValueError, match="missing.model"):
        SentencePieceLayer(str(missing))


def test_unigram_models_encode_as_unigram_layer():
    data = model_bytes("shared")
    layer = SentencePieceLayer(data)
    assert layer.model_type == "unigram"
    lines = [line for path in shared_texts() for line in nonempty_lines(path)][::101]
    if not lines:
        pytest.skip("no shared text")
    processor = spm_module().SentencePieceProcessor(model_proto=data)
    assert layer(tf.constant(lines)).to_list() == processor.encode(lines)


TEXTS = ["The quick brown fox.", "unaffable caf\u00e9 \u4e2d", "", "  two  spaces ", "\xff bad", "a<sep>b 123"]


def test_config_round_trips_every_argument():
    def make(**arguments):
        return SentencePieceLayer(trained_model("byte_fallback"), **arguments)

    changed = {"alpha": 0.2, "nbest_size": -1, "seed": 5, "sequence_length": 9, "pad_token": "<s>", "dtype": "string"}
    changed["name"] = "pieces"
    contract.check_config(SentencePieceLayer, make, changed)


@functools.cache
def layer_of(model, sequence_length):
    """One layer per model and length for the tests below, on one worker: each traces once."""
    return SentencePieceLayer(trained_model(model), sequence_length=sequence_length)


@pytest.mark.xdist_group("test_sentencepiece_layer:layer_of")
@pytest.mark.parametrize("sequence_length", [pytest.param(None, marks=pytest.mark.full), 7])
def test_calls_and_keras_saving_agree(sequence_length, tmp_path):
    layer = layer_of("llama2_style", sequence_length)
    contract.check_calls_agree(layer, TEXTS)
    contract.check_keras_saving(layer, TEXTS, tmp_path)


@pytest.mark.xdist_group("test_sentencepiece_layer:layer_of")
@pytest.mark.parametrize("model", ["llama2_style", pytest.param("byte_fallback", marks=pytest.mark.full)])
def test_serves_from_plain_tensorflow(model, tmp_path):
    layer = layer_of(model, 7)
    contract.check_serving(layer, TEXTS, tmp_path)
    # And the ids served are SentencePiece's, cut to 7 and padded with <pad>'s id (0: none).
    expected = [
        (row + [0] * 7)[:7]
        for row in spm_module().SentencePieceProcessor(model_proto=trained_model(model)).encode(TEXTS)
    ]
    assert layer(tf.constant(TEXTS)).numpy().tolist() == expected
