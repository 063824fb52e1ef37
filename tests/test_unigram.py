"""UnigramLayer against SentencePiece: imported models, models SentencePiece trains here, random text."""

import functools
import io
import itertools
import math
import random

import hypothesis
import hypothesis.strategies as st
import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import SHARED_DATA, nonempty_lines, parity_call, shared_file, shared_texts
from tests.serving import serve, serve_ragged
from tfsubword import UnigramLayer
from tfsubword import graph_ops as ops
from tfsubword.files import sentencepiece_model as spm_model
from tfsubword.segment import viterbi
from tfsubword.segment.lattice import Lattice

SHARED_MODEL = "sentencepiece-test-unigram-en-1000.model"

# Models SentencePiece trains in the tests: name -> (training text, trainer options).
TRAINED = {
    "nmt_nfkc": ("wikitext2-test.txt", dict(vocab_size=4000)),
    "identity": ("botchan.txt", dict(vocab_size=2000, normalization_rule_name="identity")),
    "nfkc_no_dummy_prefix": (
        "wikitext2-valid.txt",
        dict(vocab_size=3000, normalization_rule_name="nfkc", add_dummy_prefix=False),
    ),
    "rare_characters": ("botchan.txt+wagahaiwa_nekodearu.txt", dict(vocab_size=1500, character_coverage=0.98)),
    "japanese": ("wagahaiwa_nekodearu.txt", dict(vocab_size=4000, character_coverage=0.9995)),
    "symbols_keep_spaces": (
        "botchan.txt",
        dict(
            vocab_size=1500,
            user_defined_symbols=["<sep>", "Botchan", "ab"],
            control_symbols=["<cls>"],
            remove_extra_whitespaces=False,
        ),
    ),
    "byte_fallback": (
        "botchan.txt+wagahaiwa_nekodearu.txt",
        dict(vocab_size=1500, character_coverage=0.98, byte_fallback=True),
    ),
}


# Random text runs on the shared model in the quick tier, on these trained ones too in the full suite.
TRAINED_IN_FULL_RANDOM = ("symbols_keep_spaces", "nfkc_no_dummy_prefix", "byte_fallback")


def spm_module():
    return pytest.importorskip("sentencepiece")


@functools.cache
def trained_model(name):
    """The bytes of a model SentencePiece trains on shared text (cached for the session)."""
    spm = spm_module()
    sources, options = TRAINED[name]
    lines = [line for source in sources.split("+") for line in nonempty_lines(shared_file(source))]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, model_type="unigram", num_threads=2, minloglevel=2, **options
    )
    return model.getvalue()


@functools.cache
def model_bytes(name):
    if name == "shared":
        return shared_file(SHARED_MODEL).read_bytes()
    return trained_model(name)


@functools.cache
def encoders(name):
    """(UnigramLayer in a tf.function, SentencePieceProcessor) for a model."""
    data = model_bytes(name)
    layer = UnigramLayer(data)
    return parity_call(layer), spm_module().SentencePieceProcessor(model_proto=data)


def differences(name, texts, batch=512):
    encode, reference = encoders(name)
    different = []
    for start in range(0, len(texts), batch):
        chunk = texts[start : start + batch]
        got = encode(tf.constant(chunk)).to_list()
        expected = reference.encode(chunk)
        different += [(text, g, e) for text, g, e in zip(chunk, got, expected) if g != e]
    return different


@functools.cache
def offsets_encoder(name):
    """`UnigramLayer.tokenize_with_offsets` in a tf.function, giving (id, begin, end) per piece."""
    layer = UnigramLayer(model_bytes(name))
    encode = parity_call(layer.tokenize_with_offsets)

    def spans(texts):
        ids, starts, ends = (ragged.to_list() for ragged in encode(tf.constant(texts)))
        return [list(zip(*row)) for row in zip(ids, starts, ends)]

    return spans


def reference_spans(name, texts):
    """SentencePiece's (id, begin, end) of each piece (bytes offsets into the UTF-8 text)."""
    reference = encoders(name)[1]
    return [
        [(piece.id, piece.begin, piece.end) for piece in text.pieces]
        for text in reference.encode(texts, return_type="proto")
    ]


def offset_differences(name, texts, batch=512):
    different = []
    for start in range(0, len(texts), batch):
        chunk = texts[start : start + batch]
        got, expected = offsets_encoder(name)(chunk), reference_spans(name, chunk)
        different += [(text, g, e) for text, g, e in zip(chunk, got, expected) if g != e]
    return different


@pytest.mark.parametrize("compare", [differences, offset_differences], ids=["ids", "offsets"])
def test_sample_of_every_shared_text_matches_sentencepiece(compare):
    """The quick tier's parity sample: every 20th line of every shared text, the shared model."""
    lines = [line for path in shared_texts() for line in nonempty_lines(path)][::20]
    if not lines:
        pytest.skip(f"reference data not available: {SHARED_DATA}")
    different = compare("shared", lines)
    assert not different, f"{len(lines) - len(different)}/{len(lines)} lines identical; first: {different[0]!r}"


@pytest.mark.full
@pytest.mark.parametrize("model", ["shared"] + list(TRAINED))
@pytest.mark.parametrize("path", shared_texts(), ids=lambda p: p.name)
@pytest.mark.parametrize("compare", [differences, offset_differences], ids=["ids", "offsets"])
def test_identical_to_sentencepiece_on_every_line(model, path, compare):
    """The ids of `UnigramLayer`, and those of `tokenize_with_offsets` with each piece's begin and end
    byte offsets, against SentencePiece's."""
    lines = nonempty_lines(path)
    different = compare(model, lines)
    assert not different, f"{len(lines) - len(different)}/{len(lines)} lines identical; first: {different[0]!r}"


@pytest.mark.full
@pytest.mark.parametrize("model", ["shared", "rare_characters", "symbols_keep_spaces", "byte_fallback"])
@pytest.mark.parametrize("compare", [differences, offset_differences], ids=["ids", "offsets"])
def test_one_line_at_a_time_matches_sentencepiece(model, compare):
    """Batch 1, where the words of a line take `Lattice.unrolled_paths` instead of the loop: every
    13th line of every shared text, one call each."""
    lines = [line for path in shared_texts() for line in nonempty_lines(path)][::13]
    if not lines:
        pytest.skip(f"reference data not available: {SHARED_DATA}")
    different = compare(model, lines, batch=1)
    assert not different, f"{len(lines) - len(different)}/{len(lines)} lines identical; first: {different[0]!r}"


@pytest.mark.full
def test_batch_one_takes_the_unrolled_viterbi(monkeypatch):
    """The words of one line go through `_unrolled_paths`; those of a large batch through the loop."""
    calls = tf.Variable(0)
    unrolled = Lattice.unrolled_paths

    def counted(self, *args):
        with tf.control_dependencies([calls.assign_add(1)]):
            return {key: tf.identity(value) for key, value in unrolled(self, *args).items()}

    monkeypatch.setattr(Lattice, "unrolled_paths", counted)
    encode = parity_call(UnigramLayer(model_bytes("shared")))
    encode(tf.constant(["The quick brown fox jumps over the lazy dog."]))
    assert calls.numpy() == 1
    lines = nonempty_lines(shared_file("wikitext2-valid.txt"))[:512]
    encode(tf.constant(lines))
    assert calls.numpy() == 1


def _engine_rows(model):
    """Rows for the two Viterbi engines: every distinct word (with its `▁`) of every shared text, long
    ones (text without spaces) in slices of 31 characters; for "near_ties", words of "a" and "b"."""
    if model == "near_ties":
        rng = random.Random(5)
        pieces = [("<unk>", 0.0, spm_model.UNKNOWN)] + _near_tie_pieces(rng)
        data = spm_model.serialize(pieces, spm_model.Normalizer(name="identity"))
        words = {"".join(rng.choice("ab") for _ in range(rng.randint(1, 31))) for _ in range(3000)}
    else:
        data = model_bytes(model)
        words = {word for path in shared_texts() for line in nonempty_lines(path) for word in line.split()}
    rows = sorted({"\u2581" + word[i : i + 31] for word in words for i in range(0, len(word), 31)})
    return data, rows


@pytest.mark.full
@pytest.mark.parametrize("model", ["shared", "nmt_nfkc", "rare_characters", "japanese", "byte_fallback", "near_ties"])
def test_unrolled_viterbi_equals_the_loop(model):
    """`Lattice.unrolled_paths` (few short rows: batch 1) against the Viterbi loop: the same pieces,
    best scores and gaps to the runner-up, to the bit, on every distinct word of every shared text,
    and on words of a vocabulary full of near ties."""
    data, rows = _engine_rows(model)
    if len(rows) < 100:
        pytest.skip(f"reference data not available: {SHARED_DATA}")
    lattice = UnigramLayer(data)._segmenter.lattice
    signature = [tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int64)]
    unrolled = tf.function(lambda values, splits: lattice.unrolled_paths(values, splits, 32), input_signature=signature)
    looped = tf.function(
        lambda values, splits: lattice.best_paths(values, splits, tf.float64, gaps=True), input_signature=signature
    )
    for start in range(0, len(rows), 1000):
        values, splits = ops.decode_utf8(tf.constant(rows[start : start + 1000]))
        got, expected = unrolled(values, splits), looped(values, splits)
        for key in ("rows", "piece", "total", "gap"):
            np.testing.assert_array_equal(got[key].numpy(), expected[key].numpy(), err_msg=f"{key}, rows {start}-")


@pytest.mark.full
def test_viterbi_in_halves_equals_one_pass(monkeypatch):
    """Many distinct words are segmented in two halves at once (`Viterbi._word_paths`): the same
    pieces, best scores and gaps as one pass of the loop, to the bit, also when one long row holds
    more than half of the characters (the second half is then empty) or starts the rows. (From
    fewer rows than in a real batch, to keep the long row short.)"""
    monkeypatch.setattr(viterbi, "_HALVES_FROM", 500)
    data, rows = _engine_rows("shared")
    if len(rows) < 100:
        pytest.skip(f"reference data not available: {SHARED_DATA}")
    engine = UnigramLayer(data)._segmenter
    signature = [tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int64)]
    halves = tf.function(engine._word_paths, input_signature=signature)
    whole = tf.function(
        lambda values, splits: engine.lattice.best_paths(values, splits, tf.float64, gaps=True),
        input_signature=signature,
    )
    few = rows[: viterbi._HALVES_FROM]
    long_row = "\u2581" + "".join(few).replace("\u2581", "") * 2  # more characters than all of `few`
    batches = [rows[start : start + 3000] for start in range(0, len(rows), 3000)] + [few + [long_row], [long_row] + few]
    for number, batch in enumerate(batches):
        values, splits = ops.decode_utf8(tf.constant(batch))
        got, expected = halves(values, splits), whole(values, splits)
        for key in ("rows", "piece", "total", "gap"):
            np.testing.assert_array_equal(got[key].numpy(), expected[key].numpy(), err_msg=f"{key}, batch {number}")


@pytest.mark.full
def test_batch_of_many_words_takes_the_halves(monkeypatch):
    """The parity tests' batches of 512 lines go through `_word_paths`' two halves."""
    calls = tf.Variable(0)
    best_paths = Lattice._best_paths

    def counted(self, code_points, splits, dtype, *args):
        with tf.control_dependencies([calls.assign_add(1 if dtype == tf.float64 else 0)]):
            paths = best_paths(self, code_points, splits, dtype, *args)
            return {key: tf.identity(value) for key, value in paths.items()}

    monkeypatch.setattr(Lattice, "_best_paths", counted)
    lines = nonempty_lines(shared_file("wikitext2-valid.txt"))[:512]
    if not lines:
        pytest.skip(f"reference data not available: {SHARED_DATA}")
    encode = parity_call(UnigramLayer(model_bytes("shared")))
    encode(tf.constant(lines))
    assert calls.numpy() == 2  # in double precision; near-tie words are redone in single precision


@pytest.mark.full
def test_trained_models_exercise_what_they_claim():
    """The test models really contain what they are meant to test."""
    unknown = encoders("rare_characters")[1].unk_id()
    lines = nonempty_lines(shared_file("wagahaiwa_nekodearu.txt"))[:200]
    assert any(unknown in ids for ids in encoders("rare_characters")[1].encode(lines))
    model = spm_model.load(model_bytes("symbols_keep_spaces"))
    kinds = {piece: kind for piece, _, kind in model.pieces}
    assert kinds["<sep>"] == spm_model.USER_DEFINED and kinds["<cls>"] == spm_model.CONTROL
    assert not model.normalizer.remove_extra_whitespaces
    assert not spm_model.load(model_bytes("nfkc_no_dummy_prefix")).normalizer.add_dummy_prefix
    assert spm_model.load(model_bytes("identity")).normalizer.name == "identity"
    # nmt_nfkc rewrites the character U+FFFD (to a space), not the U+FFFD of an invalid byte.
    assert spm_model.load(model_bytes("nmt_nfkc")).normalizer.charsmap["\ufffd"] == " "
    byte_pieces = encoders("byte_fallback")[1].encode(lines, out_type=str)
    assert any(piece.startswith("<0x") for pieces in byte_pieces for piece in pieces)


# Random text: every kind of whitespace, combining marks, compatibility characters (the NFKC rules),
# CJK, emoji, control and format characters, user-defined symbols, and words the vocabulary lacks.
_ALPHABET = st.one_of(
    st.sampled_from(list("abcdefghijklmnopqrstuvwxyz ABCXYZ  .,!?'-0123456789")),
    st.sampled_from(list("\t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u2007\u200a\u200b\u2028\u202f\u205f\u3000\ufeff")),
    st.sampled_from(list("\u0300\u0301\u0308\u0327\u0345\u20dd\u3099")),
    st.sampled_from(list("ﬁﬂ①Ⅻ㎏ｶﾞＡａ½²ſǅ㈱ℌ™…‥")),
    st.sampled_from(list("猫吾輩はであるカタカナ가나다αβγЖжé")),
    st.sampled_from(["<sep>", "Botchan", "ab", "<cls>", "<unk>", "\u2581", "\x00", "\ufffd", "😀", "👍🏽"]),
    st.characters(codec="utf-8"),
)
_TEXT = st.lists(_ALPHABET, max_size=40).map("".join)


@pytest.mark.parametrize(
    "model", ["shared", *(pytest.param(m, marks=pytest.mark.full) for m in TRAINED_IN_FULL_RANDOM)]
)
@hypothesis.given(texts=st.lists(_TEXT, min_size=1, max_size=16))
def test_random_text_matches_sentencepiece(model, texts):
    different = differences(model, texts)
    assert not different, different[0]
    different = offset_differences(model, texts)
    assert not different, different[0]


_BYTES = st.lists(
    st.one_of(st.binary(max_size=3), st.sampled_from([b"\xef\xbf\xbd", b" ", b"ab", b"\xe2\x82"])), max_size=10
)


@pytest.mark.parametrize(
    "model", ["shared", *(pytest.param(m, marks=pytest.mark.full) for m in ("nmt_nfkc", "byte_fallback"))]
)
@hypothesis.given(data=st.lists(st.one_of(st.binary(max_size=24), _BYTES.map(b"".join)), min_size=1, max_size=16))
# Found by hypothesis in CI: a rule ("a" + U+0300 -> "à") after an invalid byte, which stopped the
# rewriting path: the rest of the line was lost.
@hypothesis.example(data=[b"\x80a\xcc\x80", b"x\x80a\xcc\x80", b"a\xcc\x80\x80a\xcc\x80\xffb"])
def test_random_bytes_match_sentencepiece(model, data):
    """Invalid UTF-8: SentencePiece reads one U+FFFD per invalid byte, which no rule rewrites (the
    character U+FFFD itself becomes a space under nmt_nfkc)."""
    encode, reference = encoders(model)
    got = encode(tf.constant(data)).to_list()
    assert got == [reference.encode(text) for text in data]
    assert offsets_encoder(model)(data) == reference_spans(model, data)


def test_ascii_whitespace_other_than_space_is_text_under_identity_rules():
    """Under the identity rules a tab or a line feed is an ordinary (here unknown) character inside
    a word, not a place to split."""
    lines = ["a\tb c", "Botchan\nwent  home\r", "\x0bx\x0cy \t ", "the\t\tend"]
    encode, reference = encoders("identity")
    assert any(reference.unk_id() in ids for ids in reference.encode(lines))
    different = differences("identity", lines)
    assert not different, different[0]


def test_words_a_split_cannot_read():
    """A "▁" of the input after a space is a word of its own ("▁", from SentencePiece's split at
    every "▁"), which splitting the normalized line at spaces would drop: the words of such a line
    are read off its normalized text. Ruled lines ("ﬁ" has a rule) and plain ones are mixed in."""
    encode, reference = encoders("shared")
    space = reference.piece_to_id("\u2581")
    lines = ["the cat", "x \u2581y", "ﬁne day", "z\u2581", "\u2581", "a \u2581\u2581 b", "plain words here"]
    got = encode(tf.constant(lines)).to_list()
    assert got == reference.encode(lines)
    # By hand: "x ▁y" -> "▁x▁▁y": words "▁x", "▁", "▁y"; the lone "▁" is the piece "▁", and so
    # are the two after the space of "a ▁▁ b". A trailing "▁" goes, as trailing spaces do.
    assert got[1].count(space) >= 2 and got[5].count(space) >= 3
    assert got[3] == encode(tf.constant(["z"])).to_list()[0] and got[4] == []
    # The same lines one by one, and ruled lines with no such "▁" among plain ones.
    assert [encode(tf.constant([line])).to_list()[0] for line in lines] == reference.encode(lines)
    splittable = ["the cat", "ﬁne day", "plain words here", "① and ② ｶﾞ"]
    assert encode(tf.constant(splittable)).to_list() == reference.encode(splittable)
    # `tokenize_with_offsets` splits normalized ruled lines at every space: there an empty word is a
    # lone "▁". The same spans as SentencePiece's, in one batch and line by line.
    lines += ["\u2581\u2581ﬁ", "ﬁ \u2581", "  ﬁ\u2581\u2581x  "]
    assert offsets_encoder("shared")(lines) == reference_spans("shared", lines)
    assert [offsets_encoder("shared")([line])[0] for line in lines] == reference_spans("shared", lines)


# Lines whose rewritten characters are only split points (tabs, line feeds, ...), characters that are
# keys of their own only, and characters that take the normalizer; and all three mixed.
SPLIT_LINES = ["a\tb", "tab\t\tend\t", "\t", "car\rriage\nreturn", "f\x0cfeed", " \t lead and trail \t "]
SIMPLE_LINES = ["Ｈｅｌｌｏ，\u3000世界！", "x\u00a0y\tz", "（括弧）と…", "mix\tﬁne", "\u00a0", "end\u3000"]
HARD_LINES = ["v\x0btab", "e\u0341t acute", "ｶﾞ\u00a0x", "u\ufffd\tv", "w\u2581\tx", "Ｈｉ\x0b！"]
MIXED_LINES = [line for triple in zip(HARD_LINES, SIMPLE_LINES, SPLIT_LINES) for line in triple] + ["plain words"]


def test_lines_the_split_reads_after_simple_rules():
    """Under nmt_nfkc a tab, a line feed, a form feed and a carriage return each become a space:
    lines whose only rewritten characters are such are split there as at spaces. Lines whose other
    rewritten characters are keys of their own only, becoming a space or text without one
    (fullwidth letters and punctuation, a no-break space, "…"), are rewritten character by
    character, then split. A vertical tab is removed (its words join); U+0341 (a key, and the second
    character of "e" + U+0341), halfwidth ｶﾞ (a key of two), U+FFFD and U+2581 take the normalizer.
    Mixed in one batch, each line keeps its place."""
    encode, reference = encoders("nmt_nfkc")
    split, simple, hard, lines = SPLIT_LINES, SIMPLE_LINES, HARD_LINES, MIXED_LINES
    assert encode(tf.constant(lines)).to_list() == reference.encode(lines)
    for batch in (simple, hard, simple + hard, hard + simple):
        assert encode(tf.constant(batch)).to_list() == reference.encode(batch)
    # `tokenize_with_offsets` splits the tab lines at their tabs too (a tab is a byte, as a space).
    for batch in (lines, split, split + ["plain words"]):
        assert offsets_encoder("nmt_nfkc")(batch) == reference_spans("nmt_nfkc", batch)
    # By hand: "v<VT>tab" is one word "▁vtab"; "a<TAB>b" is two, "▁a" and "▁b"; fullwidth letters
    # and punctuation are ASCII ones, an ideographic space a space.
    texts = ["v\x0btab", "a\tb", "Ｈｅｌｌｏ，\u3000ｗｏｒｌｄ…"]
    pieces = [[reference.id_to_piece(i) for i in ids] for ids in encode(tf.constant(texts)).to_list()]
    assert ["".join(p) for p in pieces] == ["\u2581vtab", "\u2581a\u2581b", "\u2581Hello,\u2581world..."]
    normalizer = UnigramLayer(model_bytes("nmt_nfkc"))._normalizer
    kinds = [split, simple, hard]
    plain = [tf.strings.regex_full_match(k, normalizer._plain_words_line).numpy().tolist() for k in kinds]
    easy = [tf.strings.regex_full_match(k, normalizer._easy_line).numpy().tolist() for k in kinds]
    assert plain == [[True] * 6, [False] * 6, [False] * 6] and easy == [[True] * 6, [True] * 6, [False] * 6]


@pytest.mark.full
def test_lines_the_split_reads_one_at_a_time():
    """`test_lines_the_split_reads_after_simple_rules`'s lines, each alone in its batch."""
    encode, reference = encoders("nmt_nfkc")
    assert [encode(tf.constant([line])).to_list()[0] for line in MIXED_LINES] == reference.encode(MIXED_LINES)
    spans = reference_spans("nmt_nfkc", MIXED_LINES)
    assert [offsets_encoder("nmt_nfkc")([line])[0] for line in MIXED_LINES] == spans


@pytest.mark.full
def test_long_words_without_a_dummy_prefix_are_cut_at_their_start():
    """Words of more than 64 bytes are cut where no piece crosses before they are segmented. Without
    a dummy prefix a line's first word has no `▁`, and the distinct words are cut side by side: each
    is also cut at its start, where the pair with the word before it may well be in a piece."""
    lines = ["interestinginformationabout" * 3, "thethirdthingthattheytook" * 3, "tea time", "ttt" + "that" * 20]
    for batch in (lines, lines[::-1]):
        assert differences("nfkc_no_dummy_prefix", batch) == []
        assert offset_differences("nfkc_no_dummy_prefix", batch) == []


def test_invalid_utf8_by_hand():
    encode, reference = encoders("shared")
    # A truncated three-byte sequence is two invalid bytes: two U+FFFD, which form one unknown piece.
    for text in [b"a\xe2\x82b", b"\xff", b"\xf0\x9f\x98a", b"\xed\xa0\x80", b"\xef\xbf\xbd"]:
        assert encode(tf.constant([text])).to_list()[0] == reference.encode(text)
    # Under nmt_nfkc the character U+FFFD is a space, and an invalid byte stays U+FFFD (unknown here).
    encode, reference = encoders("nmt_nfkc")
    pieces = [
        [reference.id_to_piece(i) for i in ids] for ids in encode(tf.constant([b"\xffab", b"\xef\xbf\xbdab"])).to_list()
    ]
    assert pieces[0][:2] == ["\u2581", "<unk>"] and "".join(pieces[1]) == "\u2581ab"
    assert encode(tf.constant([b"\xffab", b"\xef\xbf\xbdab"])).to_list() == reference.encode(
        [b"\xffab", b"\xef\xbf\xbdab"]
    )


def test_worked_example_by_hand():
    # "the  het" -> "▁the▁het": "▁the" (-1) beats "▁"+"t"+"h"+"e" (-11); "▁het" has no piece longer
    # than one character, so it is "▁" "h" "e" "t". The doubled space is removed.
    vocab = [("<unk>", 0.0), ("▁the", -1.0), ("▁", -2.0), ("t", -3.0), ("h", -3.0), ("e", -3.0)]
    layer = UnigramLayer(vocab)
    assert layer("the  het").numpy().tolist() == [1, 2, 4, 5, 3]
    # Unknown characters: "x" and "y" are each unknown, and consecutive unknowns merge into one.
    assert layer("txyt").numpy().tolist() == [2, 3, 0, 3]
    # Ties go to the segmentation whose last piece starts first: "ab" (-2) + "c" vs "a" + "bc" (-2).
    tie = [("<unk>", 0.0), ("▁", -1.0), ("a", -1.0), ("c", -1.0), ("ab", -2.0), ("bc", -2.0)]
    assert UnigramLayer(tie, add_dummy_prefix=False)("abc").numpy().tolist() == [2, 5]


def test_list_and_tsv_vocabularies_agree_with_sentencepiece(tmp_path):
    model = spm_model.load(model_bytes("shared"))
    pairs = [(piece, score) for piece, score, _ in model.pieces]
    path = tmp_path / "vocab.tsv"
    path.write_text("".join(f"{piece}\t{score}\n" for piece, score in pairs), encoding="utf-8")
    # A list vocabulary is not rewritten (the identity normalizer): SentencePiece with the same pieces
    # and scores and the identity normalizer is the reference.
    rebuilt = spm_model.serialize(model.pieces, spm_model.Normalizer(name="identity"))
    reference = spm_module().SentencePieceProcessor(model_proto=rebuilt)
    texts = ["Hello world, this is a test.", "Ｆｕｌｌ width is not folded", "  spaced   out ", ""]
    expected = reference.encode(texts)
    assert UnigramLayer(pairs)(texts).to_list() == expected
    assert UnigramLayer(str(path))(texts).to_list() == expected
    assert UnigramLayer(pairs).get_scores() == [float(np.float32(score)) for _, score in pairs]


def test_pieces_across_words_and_exact_ties_match_sentencepiece():
    """A piece holding "▁" inside makes words inseparable (whole lines are segmented); equal pieces in
    another order ("....." as "." + "...." or "...." + ".") tie exactly, and lines with such ties are
    segmented exactly too."""
    pieces = [
        ("<unk>", 0.0, spm_model.UNKNOWN),
        ("▁", -2.0, 1),
        ("a", -3.0, 1),
        ("b", -3.0, 1),
        ("a▁b", -4.0, 1),
        ("▁a", -2.5, 1),
        (".", -1.5, 1),
        ("....", -3.0, 1),
        ("..", -2.75, 1),
    ]
    for inside in (True, False):
        chosen = [p for p in pieces if inside or p[0] != "a▁b"]
        data = spm_model.serialize(chosen, spm_model.Normalizer(name="identity"))
        reference = spm_module().SentencePieceProcessor(model_proto=data)
        texts = ["a b a b", "ab ..... a.....b", "b a b" * 20, "....... ...... ....."]
        assert UnigramLayer(data)(texts).to_list() == reference.encode(texts)


def test_long_words_are_cut_where_no_piece_crosses():
    """Words of more than 64 bytes (text without spaces) are segmented in parts, cut between each two
    characters that no piece holds side by side (here, those next to "." or the unknown "x", which no
    piece of two or more characters holds): every path passes there, as through word starts."""
    pieces = [
        ("<unk>", 0.0, spm_model.UNKNOWN),
        ("▁", -2.0, 1),
        ("a", -3.0, 1),
        ("b", -3.0, 1),
        ("ab", -2.0, 1),
        ("▁ab", -2.5, 1),
        (".", -1.5, 1),
        ("ba", -2.5, 1),
    ]
    data = spm_model.serialize(pieces, spm_model.Normalizer(name="identity"))
    layer = UnigramLayer(data)
    # By hand: "▁ab.ab." is "▁ab", ".", "ab", "." (a, b and ▁ are in longer pieces, "." is not).
    parts, occurrences, splits, lines = layer._segmenter._cut_words(
        tf.constant(["▁ab.ab."]), tf.constant([0], tf.int64), tf.constant([0, 1], tf.int64)
    )
    assert parts.numpy().tolist() == ["▁ab".encode(), b".", b"ab"]
    assert occurrences.numpy().tolist() == [0, 1, 2, 1]
    assert splits.numpy().tolist() == [0, 4] and lines.numpy().tolist() == [0, 0, 0, 0]
    reference = spm_module().SentencePieceProcessor(model_proto=data)
    texts = ["ab.ba.xab" * 12, "ab." * 30 + " abab" * 5, "xx" + "aba.b" * 20 + "x", "ab" * 40, "short ab.ab"]
    assert UnigramLayer(data)(texts).to_list() == reference.encode(texts)


def test_long_words_are_cut_between_characters_no_piece_holds_side_by_side():
    """Every character here is in a piece of two characters or more (where the rule was once "cut
    next to a character in none"), but "da", "ad" and "db" are in no piece: no piece crosses there."""
    pieces = [
        ("<unk>", 0.0, spm_model.UNKNOWN),
        ("▁", -2.0, 1),
        ("a", -3.0, 1),
        ("b", -3.0, 1),
        ("c", -3.0, 1),
        ("d", -3.0, 1),
        ("ab", -2.0, 1),
        ("cd", -2.0, 1),
        ("▁ab", -2.5, 1),
        ("bcd", -6.5, 1),
    ]
    data = spm_model.serialize(pieces, spm_model.Normalizer(name="identity"))
    layer = UnigramLayer(data)
    # By hand: "▁abcdadb" is cut before its last "a", "d" and "b" ("▁a", "ab", "bc" and "cd" are in pieces).
    parts, occurrences, splits, lines = layer._segmenter._cut_words(
        tf.constant(["▁abcdadb", "▁ab"]), tf.constant([0, 1, 0], tf.int64), tf.constant([0, 3], tf.int64)
    )
    assert parts.numpy().tolist() == ["▁abcd".encode(), b"a", b"d", b"b", "▁ab".encode()]
    assert occurrences.numpy().tolist() == [0, 1, 2, 3, 4, 0, 1, 2, 3]
    assert splits.numpy().tolist() == [0, 9] and lines.numpy().tolist() == [0] * 9
    reference = spm_module().SentencePieceProcessor(model_proto=data)
    texts = [
        "abcdab" * 12,
        "cdab" * 20 + " ab",
        "abcd" * 10 + "x" + "dcba" * 10,
        "bcda" * 20,
        "ab" * 40 + "xx" + "cd" * 30,
    ]
    assert UnigramLayer(data)(texts).to_list() == reference.encode(texts)
    # No piece of two characters at all: a cut between every two.
    single = spm_model.serialize(pieces[:6], spm_model.Normalizer(name="identity"))
    texts = ["abcd" * 20, "ab" * 40 + "x" + "dc" * 40 + " ba"]
    assert UnigramLayer(single)(texts).to_list() == spm_module().SentencePieceProcessor(model_proto=single).encode(
        texts
    )


def test_serialized_model_loads_in_sentencepiece():
    layer = UnigramLayer([("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0), ("▁a", -1.0), ("a", -2.0), ("b", -2.5)])
    reference = spm_module().SentencePieceProcessor(model_proto=layer.serialized_model())
    for text in ["a ab", "bba", "  a  "]:
        assert layer(text).numpy().tolist() == reference.encode(text)


@pytest.mark.full
@pytest.mark.parametrize("model", ["shared", "nfkc_no_dummy_prefix", "symbols_keep_spaces"])
def test_detokenize_matches_sentencepiece_decode(model):
    """Encoded lines, and random ids (control and unknown pieces, lone "▁" pieces first and so on)."""
    encode, reference = encoders(model)
    layer = UnigramLayer(model_bytes(model))
    lines = nonempty_lines(shared_file("wikitext2-test.txt"))[:300] + ["Ünïcödé ☃ text", "a  b"]
    rng = random.Random(3)
    space = reference.piece_to_id("\u2581")
    rows = [
        [rng.choice([space, 0, 1, 2, rng.randrange(reference.get_piece_size())]) for _ in range(rng.randint(0, 6))]
        for _ in range(300)
    ]
    rows += layer(lines).to_list()
    decoded = [t.decode("utf-8") for t in layer.detokenize(tf.ragged.constant(rows, dtype=tf.int32)).numpy().tolist()]
    assert decoded == [reference.decode(row) for row in rows]


def test_byte_fallback_by_hand():
    # "é" (U+00E9, UTF-8 C3 A9) has no piece: with byte fallback it is the pieces <0xC3> <0xA9>
    # instead of <unk>, the first empty at its start, the second spanning its two bytes; two unknown
    # characters in a row are not merged. Decoding gives the bytes back, and an invalid byte
    # sequence decodes to one U+FFFD per byte.
    pieces = [("<unk>", 0.0, spm_model.UNKNOWN), ("\u2581", -1.0, spm_model.NORMAL), ("a", -1.0, spm_model.NORMAL)]
    pieces += [(f"<0x{b:02X}>", 0.0, spm_model.BYTE) for b in range(256)]
    data = spm_model.serialize(pieces, spm_model.Normalizer(name="identity"), byte_fallback=True)
    byte = {b: 3 + b for b in range(256)}
    layer = UnigramLayer(data)
    assert layer(["a\u00e9", "\u00e9\u00e9"]).to_list() == [
        [1, 2, byte[0xC3], byte[0xA9]],
        [1] + [byte[0xC3], byte[0xA9]] * 2,
    ]
    ids, starts, ends = layer.tokenize_with_offsets("a\u00e9")
    assert list(zip(starts.numpy().tolist(), ends.numpy().tolist())) == [(0, 0), (0, 1), (1, 1), (1, 3)]
    assert layer.detokenize(
        tf.ragged.constant([[1, 2, byte[0xC3], byte[0xA9]], [2, byte[0xC3], 2]])
    ).numpy().tolist() == ["a\u00e9".encode(), "a\ufffda".encode()]
    reference = spm_module().SentencePieceProcessor(model_proto=data)
    assert reference.encode(["a\u00e9", "\u00e9\u00e9"]) == layer(["a\u00e9", "\u00e9\u00e9"]).to_list()
    assert reference.decode([2, byte[0xC3], 2]) == "a\ufffda"


@pytest.mark.full
def test_detokenize_byte_pieces_matches_sentencepiece_decode():
    """Random runs of byte pieces (most of them invalid UTF-8) between ordinary pieces."""
    layer = UnigramLayer(model_bytes("byte_fallback"))
    reference = encoders("byte_fallback")[1]
    bytes_ids = [reference.piece_to_id(f"<0x{b:02X}>") for b in range(256)]
    rng = random.Random(5)
    rows = [
        [rng.choice(bytes_ids if rng.random() < 0.6 else range(260, 1500)) for _ in range(rng.randint(0, 12))]
        for _ in range(300)
    ]
    rows += reference.encode(nonempty_lines(shared_file("wagahaiwa_nekodearu.txt"))[:100])
    decoded = [
        text.decode("utf-8") for text in layer.detokenize(tf.ragged.constant(rows, dtype=tf.int32)).numpy().tolist()
    ]
    assert decoded == [reference.decode(row) for row in rows]


def test_shapes_padding_and_string_output():
    layer = UnigramLayer(model_bytes("shared"), sequence_length=6)
    ids = layer(tf.constant([["Hello world"], ["a"]]))
    assert ids.shape == (2, 6)
    reference = encoders("shared")[1]
    assert ids.numpy()[0].tolist() == (reference.encode("Hello world") + [0] * 6)[:6]
    pieces = UnigramLayer(model_bytes("shared"), dtype="string")("Hello world").numpy().tolist()
    assert [p.decode("utf-8") for p in pieces] == reference.encode("Hello world", out_type=str)
    assert UnigramLayer(model_bytes("shared"))(tf.constant([], tf.string)).to_list() == []


@pytest.mark.full
def test_long_line_and_empty_strings():
    _, reference = encoders("shared")
    # In a graph: eagerly, the position-by-position loop over a 1.3 MB line takes most of a minute.
    encode = tf.function(UnigramLayer(model_bytes("shared")), input_signature=[tf.TensorSpec([None], tf.string)])
    line = " ".join(["tokenization"] * 100_000)  # 1.3 MB
    assert encode(tf.constant([line, "", "   "])).to_list() == [reference.encode(line), [], []]
    # A near-tie word after many restarts of the scores (the line scores -3.86 million: some 38 restarts).
    line = " ".join(["tokenization"] * 100_000 + ["......."] + ["tokenization"] * 10)
    assert encode(tf.constant([line])).to_list() == [reference.encode(line)]


def test_offsets_by_hand():
    vocab = [("<unk>", 0.0), ("\u2581the", -1.0), ("\u2581", -2.0), ("t", -3.0), ("h", -3.0), ("e", -3.0)]
    layer = UnigramLayer(vocab, normalization="nmt_nfkc")
    # "  the  h\u00e9t  " normalizes to "▁the▁h\u00e9t" (the accented e is two bytes, unknown here).
    # The dummy prefix comes from the first character after the leading spaces (byte 2), so "▁the"
    # is bytes 2-5; the "▁" of the next word is the first of the two spaces (byte 5); "h" is byte 7,
    # the unknown "\u00e9" bytes 8-10, "t" ends where the trailing spaces start (byte 11).
    ids, starts, ends = layer.tokenize_with_offsets("  the  h\u00e9t  ")
    assert ids.numpy().tolist() == [1, 2, 4, 0, 3]
    assert list(zip(starts.numpy().tolist(), ends.numpy().tolist())) == [(2, 5), (5, 7), (7, 8), (8, 10), (10, 11)]
    # A rule's output comes from the start of its source: the full-width "ｔ" (3 bytes) becomes "t".
    # Consecutive unknown characters are one piece, from the first's start to the last's end.
    ids, starts, ends = layer.tokenize_with_offsets(["\uff54he", "txy\u00e9t"])
    assert ids.to_list() == [[1], [2, 3, 0, 3]]
    assert starts.to_list() == [[0], [0, 0, 1, 5]] and ends.to_list() == [[5], [0, 1, 5, 6]]
    # Texts without pieces, alone in a batch.
    for texts in ([""], ["", "   "], tf.constant([], tf.string)):
        assert [r.to_list() for r in parity_call(layer.tokenize_with_offsets)(tf.constant(texts))] == [
            [[]] * len(texts)
        ] * 3


def test_offsets_where_a_word_space_is_unknown():
    """Without a "▁" piece, the `▁` of a word that no "▁..." piece starts is an unknown piece, merged
    with unknown characters after it: offsets then tell the words of the pieces apart otherwise.
    Plain lines and ruled ones ("ｔ" has a rule), with extra spaces, against SentencePiece."""
    vocab = [("<unk>", 0.0), ("\u2581the", -1.0), ("t", -3.0), ("h", -3.0), ("e", -3.0)]
    layer = UnigramLayer(vocab, normalization="nmt_nfkc")
    reference = spm_module().SentencePieceProcessor(model_proto=layer.serialized_model())
    texts = ["the  het", "  het the ", "x the", "\uff54he tt", "", "   ", "eh  \u2603 \u2603", "the"]
    expected = [
        [(piece.id, piece.begin, piece.end) for piece in text.pieces]
        for text in reference.encode(texts, return_type="proto")
    ]
    assert expected[0][1][0] == expected[2][0][0] == 0  # "▁" of "▁het", "▁x": unknown
    ids, starts, ends = parity_call(layer.tokenize_with_offsets)(tf.constant(texts))
    assert [list(zip(*row)) for row in zip(ids.to_list(), starts.to_list(), ends.to_list())] == expected


def test_offsets_follow_the_output_shape():
    layer = UnigramLayer(model_bytes("shared"), sequence_length=4)
    ids, starts, ends = layer.tokenize_with_offsets(tf.constant([["Hello world"], ["a"]]))
    assert ids.shape == starts.shape == ends.shape == (2, 4)
    expected = reference_spans("shared", ["Hello world", "a"])
    for row, spans in enumerate(expected):
        padded = (spans + [(0, 0, 0)] * 4)[:4]
        assert list(zip(ids.numpy()[row], starts.numpy()[row], ends.numpy()[row])) == padded
    ids, starts, ends = UnigramLayer(model_bytes("shared")).tokenize_with_offsets("Hello world")
    assert list(zip(ids.numpy(), starts.numpy(), ends.numpy())) == reference_spans("shared", ["Hello world"])[0]


def test_bad_models_raise_value_error(tmp_path):
    spm = spm_module()
    bpe = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(nonempty_lines(shared_file("botchan.txt"))[:500]),
        model_writer=bpe,
        model_type="bpe",
        vocab_size=300,
        minloglevel=2,
    )
    with pytest.raises(ValueError, match="type 'bpe'"):
        UnigramLayer(bpe.getvalue())
    with pytest.raises(ValueError, match="Not a valid SentencePiece model"):
        UnigramLayer(model_bytes("shared")[:1000])
    corrupt = tmp_path / "corrupt.model"
    corrupt.write_bytes(b"\x0a\xff\xff\xff\xff\x0f garbage")
    with pytest.raises(ValueError, match="Not a valid SentencePiece model"):
        UnigramLayer(str(corrupt))
    with pytest.raises(ValueError, match="unknown token"):
        UnigramLayer([("a", -1.0)])
    with pytest.raises(ValueError, match="not finite"):
        UnigramLayer([("<unk>", 0.0), ("a", float("nan"))])
    with pytest.raises(ValueError, match="not finite"):
        UnigramLayer([("<unk>", 0.0), ("a", 1e39)])  # finite in double, not in single precision
    infinite = spm_model.serialize(
        [("<unk>", 0.0, spm_model.UNKNOWN), ("a", float("-inf"), spm_model.NORMAL)],
        spm_model.Normalizer(name="identity"),
    )
    with pytest.raises(ValueError, match="not finite"):
        UnigramLayer(infinite)
    with pytest.raises(ValueError, match="twice"):
        UnigramLayer([("<unk>", 0.0), ("a", -1.0), ("a", -2.0)])
    with pytest.raises(ValueError, match="not a file"):
        UnigramLayer(str(tmp_path / "missing.model"))
    # SentencePiece refuses pieces of 8,000 UTF-8 bytes or more, and pieces with a NUL character.
    with pytest.raises(ValueError, match="8000 UTF-8 bytes; pieces must have fewer than 8000"):
        UnigramLayer([("<unk>", 0.0), ("\u00e9" * 4000, -1.0)])
    with pytest.raises(ValueError, match="NUL"):
        UnigramLayer([("<unk>", 0.0), ("a\0b", -1.0)])
    # Byte pieces: all 256 with byte fallback, none without (SentencePiece refuses both too).
    pieces = [("<unk>", 0.0, spm_model.UNKNOWN), ("a", -1.0, spm_model.NORMAL)] + [
        (f"<0x{b:02X}>", 0.0, spm_model.BYTE) for b in range(256)
    ]
    with pytest.raises(ValueError, match="lacks 1, '<0x41>'"):
        UnigramLayer(
            spm_model.serialize(pieces[: 2 + 0x41] + pieces[3 + 0x41 :], spm_model.Normalizer(), byte_fallback=True)
        )
    with pytest.raises(ValueError, match="not `byte_fallback`"):
        UnigramLayer(spm_model.serialize(pieces, spm_model.Normalizer()))


@pytest.mark.full
@pytest.mark.parametrize("model", ["shared", "symbols_keep_spaces", "byte_fallback"])
def test_exported_model_serves_from_plain_tensorflow(tmp_path, model):
    texts = ["Hello world!", "Ｆｕｌｌ-width ﬁ <sep> Botchan", "", "\xff bad", "吾輩は猫である"]
    expected = encoders(model)[1].encode(texts)
    length = 32
    layer = UnigramLayer(model_bytes(model), sequence_length=length)
    inputs = keras.Input(shape=(), dtype="string")
    keras.Model(inputs, layer(inputs)).export(tmp_path / "exported", verbose=False)
    (served,) = serve(tmp_path / "exported", texts).values()
    assert served == [(row + [0] * length)[:length] for row in expected]
    # A ragged result, through tf.saved_model.save.
    assert serve_ragged(UnigramLayer(model_bytes(model)), texts, tmp_path / "module") == expected


@pytest.mark.full
@pytest.mark.parametrize("model", ["nmt_nfkc", "byte_fallback"])
def test_offsets_serve_from_plain_tensorflow(tmp_path, model):
    texts = ["Hello  world!", "Ｆｕｌｌ-width ﬁ  ", "", "\xff bad", "吾輩は猫である 麤"]
    layer = UnigramLayer(model_bytes(model))
    module = tf.Module()
    module.layer = layer

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def offsets(texts):
        return {
            name: values.to_tensor(-1)
            for name, values in zip(["ids", "starts", "ends"], layer.tokenize_with_offsets(texts))
        }

    module.offsets = offsets
    tf.saved_model.save(module, str(tmp_path / "module"), signatures={"serving_default": offsets})
    served = serve(tmp_path / "module", texts)
    rows = zip(served["ids"], served["starts"], served["ends"])
    assert [[span for span in zip(*row) if span[0] >= 0] for row in rows] == reference_spans(model, texts)


def _double_precision_viterbi(text, scores):
    """The textbook rule in double precision (a variant SentencePiece does not follow), for contrast."""
    best, back = [0.0] + [-math.inf] * len(text), [None] * (len(text) + 1)
    for end in range(1, len(text) + 1):
        for start in range(max(0, end - 6), end):
            piece = text[start:end]
            if piece in scores and best[start] + scores[piece] > best[end]:
                best[end], back[end] = best[start] + scores[piece], (start, piece)
    pieces, end = [], len(text)
    while end:
        start, piece = back[end]
        pieces.append(piece)
        end = start
    return pieces[::-1]


def _near_tie_pieces(rng, nearly_one=1.0000001):
    """Pieces over "a", "b" and "▁" whose scores, built from a few values (one of them a factor
    `nearly_one`), make many segmentations nearly tie."""
    alphabet_pieces = ["\u2581", "a", "b"] + [
        "".join(p) for n in range(2, 5) for p in itertools.product("ab", repeat=n)
    ]
    alphabet_pieces += ["\u2581" + p for p in alphabet_pieces[1:6]]
    scores = [
        float(np.float32(rng.choice([-1, -2, -3, -4]) * rng.choice([1.0, 1.5, 1.25, nearly_one])))
        for _ in alphabet_pieces
    ]
    return [(p, s, spm_model.NORMAL) for p, s in zip(alphabet_pieces, scores)]


def test_user_defined_pieces_score_a_tenth_per_extra_byte():
    """SentencePiece 0.2.3 scores a user-defined piece of n UTF-8 bytes 0.1 * (n - 1) on a path, so
    it usually wins but not always. By hand, for "▁abb" (▁ -1, b -1, abb -0.95, user-defined ab 0.1):
    ▁ ab b = -1.9 beats ▁ abb = -1.95 and ▁ab b = -1.95; for "▁ab", ▁ab = -0.95 loses to ▁ ab = -0.9;
    for "▁ßab" the user-defined ßab (4 bytes, 0.3) beats ß ab (-0.5 + 0.1)."""
    pieces = [
        ("<unk>", 0.0, spm_model.UNKNOWN),
        ("ab", 0.0, spm_model.USER_DEFINED),
        ("\u00dfab", 0.0, spm_model.USER_DEFINED),
    ]
    pieces += [
        (p, s, spm_model.NORMAL)
        for p, s in [("a", -1.0), ("b", -1.0), ("\u2581", -1.0), ("\u2581ab", -0.95), ("abb", -0.95), ("\u00df", -0.5)]
    ]
    data = spm_model.serialize(pieces, spm_model.Normalizer(name="identity"))
    ids = {piece: i for i, (piece, _, _) in enumerate(pieces)}
    expected = [["\u2581", "ab", "b"], ["\u2581", "ab"], ["\u2581", "\u00dfab"]]
    texts = ["abb", "ab", "\u00dfab"]
    assert UnigramLayer(data)(texts).to_list() == [[ids[p] for p in row] for row in expected]
    assert spm_module().SentencePieceProcessor(model_proto=data).encode(texts) == [
        [ids[p] for p in row] for row in expected
    ]


@pytest.mark.full
def test_single_precision_rule_on_near_ties():
    """Scores built from a few values make many segmentations nearly tie; SentencePiece's single-precision
    sums decide them, and UnigramLayer must decide them the same way. The test also checks that the
    double-precision rule would have decided some of them differently, so it does tell the rules apart."""
    rng = random.Random(7)
    disagreements = 0
    for _ in range(4):
        pieces = [("<unk>", 0.0, spm_model.UNKNOWN)] + _near_tie_pieces(rng)
        data = spm_model.serialize(pieces, spm_model.Normalizer(name="identity"))
        reference = spm_module().SentencePieceProcessor(model_proto=data)
        texts = ["".join(rng.choice("ab") for _ in range(rng.randint(50, 1500))) for _ in range(20)]
        expected = reference.encode(texts)
        assert UnigramLayer(data)(texts).to_list() == expected
        score_of = {p: float(np.float32(s)) for p, s, _ in pieces[1:]}
        for text, ids in zip(texts, expected):
            pieces_of_reference = [reference.id_to_piece(i) for i in ids]
            disagreements += _double_precision_viterbi("\u2581" + text, score_of) != pieces_of_reference
    assert disagreements > 0


@pytest.mark.parametrize(
    "nearly_one, filler_score, whole_lines",
    [
        (1.0000001, -1.0, False),
        (1.00003, -1.0, False),
        (1.003, -100.0, False),
        (1.003, -100.0, True),
    ],
)
@pytest.mark.full
def test_single_precision_rule_on_near_ties_late_in_long_lines(nearly_one, filler_score, whole_lines):
    """Near-tie words (one to four) among many ordinary words: SentencePiece decides each in single
    precision from the score of the line before it, which UnigramLayer sums the same way, segmenting
    the near-tie words before it exactly, one by one. The test also checks that some words are
    segmented differently there than alone, so it does tell a wrong starting score apart. The
    filler word scores `filler_score`; with a near-one factor of 1.00003 and a line score in the thousands (a
    single-precision ulp of 1.2e-4 to 2.4e-4 there), the ties flip only because of the line's score,
    so a near-tie check that ignored it would miss them (checked: a batch-wide bound at the word's
    own magnitude fails this case). With 1.003 and a line score in the hundreds of thousands,
    SentencePiece restarts its scores from 0 each time they pass 100,000 in magnitude, so the word
    is decided at a much finer ulp than the line's score would give (without the restart, 6 of the
    160 lines of an earlier version of this test differed). With `whole_lines`, a piece that never
    matches holds a space symbol inside, so UnigramLayer segments every line whole instead of word by
    word."""
    rng = random.Random(11)
    differ_from_alone = 0  # near-tie words that SentencePiece segments otherwise alone
    for _ in range(4):
        pieces = [("<unk>", 0.0, spm_model.UNKNOWN), ("\u2581xyz", filler_score, spm_model.NORMAL)] + _near_tie_pieces(
            rng, nearly_one
        )
        pieces += [("x\u2581y", -1.0, spm_model.NORMAL)] if whole_lines else []
        data = spm_model.serialize(pieces, spm_model.Normalizer(name="identity"))
        reference = spm_module().SentencePieceProcessor(model_proto=data)
        layer = UnigramLayer(data)
        assert layer._segmenter.by_words is not whole_lines
        texts, near_ties = [], []
        for _ in range(40):
            line = ["xyz"] * rng.randint(20, 3000)
            words = ["".join(rng.choice("ab") for _ in range(rng.randint(4, 14))) for _ in range(rng.randint(1, 4))]
            # Each near-tie word goes in after a random filler word from the 20th on, the later ones further on.
            places = sorted(rng.sample(range(20, len(line) + 1), len(words)), reverse=True)
            for place, word in zip(places, reversed(words)):
                line.insert(place, word)
            texts.append(" ".join(line))
            near_ties.append([(i, word) for i, word in enumerate(line) if word != "xyz"])
        expected = reference.encode(texts)
        # In a graph: eagerly, the position-by-position loop over lines of 12,000 characters takes minutes.
        assert tf.function(layer)(tf.constant(texts)).to_list() == expected
        # The same words are redone on the way to offsets.
        ids, starts, ends = (r.to_list() for r in tf.function(layer.tokenize_with_offsets)(tf.constant(texts)))
        spans = [[(p.id, p.begin, p.end) for p in text.pieces] for text in reference.encode(texts, return_type="proto")]
        assert [list(zip(*row)) for row in zip(ids, starts, ends)] == spans
        for words, ids in zip(near_ties, expected):
            by_word = _pieces_by_word(reference, ids)
            differ_from_alone += sum(by_word[i] != reference.encode(word, out_type=str) for i, word in words)
    assert differ_from_alone > 0


@pytest.mark.full
def test_single_precision_rule_on_lines_of_near_ties():
    """Lines made of near-tie words only (up to 300): every word is decided in single precision from
    the score of the line before it, and many are segmented differently there than alone, two or
    more in some line (checked), so each must be segmented exactly from the exact score that the words
    before it leave."""
    rng = random.Random(13)
    pieces = [("<unk>", 0.0, spm_model.UNKNOWN)] + _near_tie_pieces(rng)
    data = spm_model.serialize(pieces, spm_model.Normalizer(name="identity"))
    reference = spm_module().SentencePieceProcessor(model_proto=data)
    lines = [
        ["".join(rng.choice("ab") for _ in range(rng.randint(4, 14))) for _ in range(rng.randint(2, 300))]
        for _ in range(24)
    ]
    texts = [" ".join(line) for line in lines]
    expected = reference.encode(texts)
    layer = UnigramLayer(data)
    assert tf.function(layer)(tf.constant(texts)).to_list() == expected
    ids, starts, ends = (r.to_list() for r in tf.function(layer.tokenize_with_offsets)(tf.constant(texts)))
    spans = [[(p.id, p.begin, p.end) for p in text.pieces] for text in reference.encode(texts, return_type="proto")]
    assert [list(zip(*row)) for row in zip(ids, starts, ends)] == spans
    differ_from_alone = [
        sum(
            pieces != reference.encode(word, out_type=str)
            for pieces, word in zip(_pieces_by_word(reference, ids), line)
        )
        for line, ids in zip(lines, expected)
    ]
    assert max(differ_from_alone) >= 2


def _pieces_by_word(reference, ids):
    """The pieces of `ids`, a list per word: a word starts at each piece that starts with "▁" (every
    word's first piece here, and no other piece holds one)."""
    by_word = []
    for piece in (reference.id_to_piece(i) for i in ids):
        by_word.append([piece]) if piece.startswith("\u2581") else by_word[-1].append(piece)
    return by_word
