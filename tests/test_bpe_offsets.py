"""BPELayer.tokenize_with_offsets against Hugging Face's offsets (characters), converted to UTF-8 bytes."""

import codecs
import functools
import json

import hypothesis
import hypothesis.strategies as st
import pytest
import tensorflow as tf

from tests.conftest import nonempty_lines, parity_call, real_texts, shared_texts
from tests.test_bpe import sample_of_every_shared_text, tokenizers_module, vocabularies
from tfsubword import BPELayer

_SIGNATURE = [tf.TensorSpec([None], tf.string)]


def character_starts(data):
    """The text of UTF-8 `data` with each invalid sequence as one U+FFFD (Python's rule), and the byte
    where each of its characters starts, plus the length."""
    invalid = []

    def record(error):
        invalid.append((error.start, error.end))
        return "\ufffd", error.end

    codecs.register_error("tfsubword_test_record", record)
    text = data.decode("utf-8", "tfsubword_test_record")
    starts, position = [], 0
    for character in text:
        starts.append(position)
        if invalid and invalid[0][0] == position:
            position = invalid.pop(0)[1]
        else:
            position += len(character.encode("utf-8"))
    return text, starts + [len(data)]


def reference_spans(reference, data):
    """(ids, byte spans) of Hugging Face's encoding of UTF-8 `data`."""
    text, starts = character_starts(data)
    encoding = reference.encode(text)
    return encoding.ids, [(starts[begin], starts[end]) for begin, end in encoding.offsets]


def layer_spans(encode, data):
    ids, begins, ends = (ragged.to_list() for ragged in encode(tf.constant(data)))
    return [(i, list(zip(b, e))) for i, b, e in zip(ids, begins, ends)]


def differences(encode, reference, data, batch=512):
    different = []
    for start in range(0, len(data), batch):
        chunk = data[start : start + batch]
        got = layer_spans(encode, chunk)
        different += [
            (d, g, e) for d, g, e in zip(chunk, got, (reference_spans(reference, d) for d in chunk)) if g != e
        ]
    return different


@pytest.fixture(scope="module")
def byte_level(tmp_path_factory, request):
    """add_prefix_space -> (offsets tf.function, Hugging Face tokenizer), for the vocabulary Hugging Face trains."""
    vocab, merges = vocabularies(tmp_path_factory.mktemp("bpe"), request.config.getoption("--full"))["hf"]
    tokenizers = tokenizers_module()
    found = {}
    for prefix in (False, True):
        layer = BPELayer(str(vocab), str(merges), add_prefix_space=prefix)
        reference = tokenizers.ByteLevelBPETokenizer(str(vocab), str(merges), add_prefix_space=prefix)
        found[prefix] = (parity_call(layer.tokenize_with_offsets, _SIGNATURE), reference)
    return found


@functools.cache
def byte_fallback():
    """Llama-2-style BPE (characters, byte fallback, `▁` for spaces, one word per text) that Hugging
    Face trains on the sample, with no normalizer: both read the same text."""
    tokenizers = tokenizers_module()
    lines = ["\u2581" + line.replace(" ", "\u2581") for line in sample_of_every_shared_text()]
    reference = tokenizers.Tokenizer(tokenizers.models.BPE(byte_fallback=True))
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=1200, special_tokens=[f"<0x{b:02X}>" for b in range(256)], limit_alphabet=150, show_progress=False
    )
    reference.train_from_iterator(lines, trainer)
    model = json.loads(reference.to_str())["model"]
    vocabulary = sorted(model["vocab"], key=model["vocab"].get)
    layer = BPELayer(vocabulary, model["merges"], byte_level=False, pattern=None, byte_fallback=True)
    return parity_call(layer.tokenize_with_offsets, _SIGNATURE), reference, lines


@pytest.mark.parametrize("prefix", [False, True], ids=["gpt2", "add_prefix_space"])
def test_sample_of_every_shared_text_matches_hugging_face(byte_level, prefix):
    data = [line.encode("utf-8") for line in sample_of_every_shared_text()]
    different = differences(*byte_level[prefix], data)
    assert not different, different[:3]


@pytest.mark.full
@pytest.mark.parametrize("prefix", [False, True], ids=["gpt2", "add_prefix_space"])
@pytest.mark.parametrize("path", shared_texts() + real_texts(), ids=lambda p: p.name)
def test_identical_to_hugging_face_on_every_line(byte_level, prefix, path):
    data = [line.encode("utf-8") for line in nonempty_lines(path)]
    different = differences(*byte_level[prefix], data)
    assert not different, f"{len(different)} of {len(data)} differ: {different[:3]}"


_ALPHABET = st.one_of(
    st.sampled_from(list("abc ABC  .,!?'-019\n\t")),
    st.sampled_from(list("\u0300ﬁ½猫吾はカ가Жé\u3000\ufeff\x00\ufffd😀👍🏽")),
    st.characters(codec="utf-8"),
)
_TEXT = st.lists(_ALPHABET, max_size=30).map("".join)


@pytest.mark.parametrize("prefix", [False, True], ids=["gpt2", "add_prefix_space"])
@hypothesis.given(texts=st.lists(_TEXT, min_size=1, max_size=8))
def test_random_text_matches_hugging_face(byte_level, prefix, texts):
    different = differences(*byte_level[prefix], [text.encode("utf-8") for text in texts])
    assert not different, different[0]


@hypothesis.given(
    data=st.lists(
        st.lists(
            st.one_of(st.binary(max_size=3), st.sampled_from([b" ab", b"\xe2\x82", b"\xc3\xa9", b"\xf0\x9f"])),
            max_size=8,
        ).map(b"".join),
        min_size=1,
        max_size=8,
    )
)
@hypothesis.example(data=[b"caf\xe9 ok", b"\xff\xfe", b"abc\xe3\x81", b"\xe2\x82\xe2\x82\xac"])
def test_invalid_utf8_spans_its_bytes(byte_level, data):
    """Each invalid sequence reads as one U+FFFD, whose tokens span the sequence's bytes."""
    for prefix in (False, True):
        different = differences(*byte_level[prefix], data)
        assert not different, different[0]


def test_byte_fallback_sample_matches_hugging_face():
    encode, reference, lines = byte_fallback()
    different = differences(encode, reference, [line.encode("utf-8") for line in lines])
    assert not different, different[:3]


@hypothesis.given(texts=st.lists(_TEXT, min_size=1, max_size=8))
def test_byte_fallback_random_text_matches_hugging_face(texts):
    encode, reference, _ = byte_fallback()
    data = [("\u2581" + text.replace(" ", "\u2581")).encode("utf-8") for text in texts]
    different = differences(encode, reference, data)
    assert not different, different[0]


def test_offsets_by_hand():
    """Worked by hand: "é" is two bytes; its byte tokens both span it; the unknown token spans its character."""
    layer = BPELayer(["<unk>", "a", "b", "ab", "\u00c3", "\u00a9"], [("a", "b")], unknown_token="<unk>")
    ids, begins, ends = (t.numpy().tolist() for t in layer.tokenize_with_offsets("ab\u00e9b"))
    assert (ids, begins, ends) == ([3, 4, 5, 2], [0, 2, 2, 4], [2, 4, 4, 5])
    layer = BPELayer(["<unk>", "a", "b", "ab"], [("a", "b")], byte_level=False, pattern=None, unknown_token="<unk>")
    ids, begins, ends = (t.numpy().tolist() for t in layer.tokenize_with_offsets("ab\u00e9b"))
    assert (ids, begins, ends) == ([3, 0, 2], [0, 2, 4], [2, 4, 5])
    tokenizers = tokenizers_module()
    reference = tokenizers.Tokenizer(
        tokenizers.models.BPE({"<unk>": 0, "a": 1, "b": 2, "ab": 3}, [("a", "b")], unk_token="<unk>")
    )
    assert reference_spans(reference, "ab\u00e9b".encode()) == ([3, 0, 2], [(0, 2), (2, 4), (4, 5)])
    # The space put in front spans the first character, with the token it joins.
    layer = BPELayer(["a", "\u0120", "\u0120a"], [("\u0120", "a")], add_prefix_space=True)
    ids, begins, ends = (t.to_list() for t in layer.tokenize_with_offsets(["a a", ""]))
    assert (ids, begins, ends) == ([[2, 2], []], [[0, 1], []], [[1, 3], []])


def test_ignore_merges_keeps_texts_whole_by_hand():
    """With `ignore_merges` only a whole text that is a token stands whole: "▁a" is a token, but in
    "▁ab▁a" it is merged as the rest is ("▁", "a": no merge makes "▁a"), as Hugging Face does."""
    vocabulary, merges = ["\u2581", "a", "b", "\u2581a", "ab"], [("a", "b")]
    layer = BPELayer(vocabulary, merges, byte_level=False, pattern=None, ignore_merges=True)
    assert layer(["\u2581ab\u2581a", "\u2581a"]).to_list() == [[0, 4, 0, 1], [3]]
    tokenizers = tokenizers_module()
    reference = tokenizers.Tokenizer(
        tokenizers.models.BPE({t: i for i, t in enumerate(vocabulary)}, merges, ignore_merges=True)
    )
    assert [e.ids for e in reference.encode_batch(["\u2581ab\u2581a", "\u2581a"])] == [[0, 4, 0, 1], [3]]


def test_merges_of_byte_tokens_across_characters_by_hand():
    """A merge of two byte tokens may join the bytes of two characters: "☃☃" is E2 98 83 E2 98 83,
    and <0x83> + <0xE2> merges across them, as Hugging Face merges it."""
    vocabulary = ["\u2581", "a"] + [f"<0x{b:02X}>" for b in range(256)] + ["<0x83><0xE2>"]
    merges = [("<0x83>", "<0xE2>")]
    layer = BPELayer(vocabulary, merges, byte_level=False, pattern=None, byte_fallback=True)
    tokenizers = tokenizers_module()
    reference = tokenizers.Tokenizer(
        tokenizers.models.BPE({t: i for i, t in enumerate(vocabulary)}, merges, byte_fallback=True)
    )
    text = "a\u2603\u2603a"
    assert layer([text]).to_list() == [reference.encode(text).ids]
    assert len(vocabulary) - 1 in reference.encode(text).ids
