"""Byte-level BPE: train_bpe against the seed and a textbook oracle; BPELayer against Hugging Face."""

import functools
import json
from unittest import mock

import hypothesis
import hypothesis.strategies as st
import keras
import pytest
import tensorflow as tf

from tests.conftest import nonempty_lines, parity_call, real_texts, shared_file, shared_texts
from tests.serving import serve, serve_ragged
from tfsubword import BPELayer, train_bpe
from tfsubword.files import counts as counts_lib
from tfsubword.files.vocab import write_merges, write_vocab_json
from tfsubword.segment import bpe as bpe_segment
from tfsubword.text import byte_level as byte_level_lib
from tfsubword.train import merges as merges_lib
from tfsubword.train.bpe import learn_bpe

SEED_CORPUS = [
    "This is the Hugging Face Course.",
    "This chapter is about tokenization.",
    "This section shows several tokenizer algorithms.",
    "Hopefully, you will be able to understand how they are trained and generate tokens.",
]


def tokenizers_module():
    return pytest.importorskip("tokenizers")


# The seed (002): its 19 merges, its vocabulary and its tokenization, as printed there, from its words in
# its order (first seen): ties go to the pair met first in that order.


def test_seed_example():
    vocabulary, merges = learn_bpe(byte_level_counts(SEED_CORPUS), 50)
    assert merges == [
        ("Ġ", "t"),
        ("i", "s"),
        ("e", "r"),
        ("Ġ", "a"),
        ("Ġt", "o"),
        ("e", "n"),
        ("T", "h"),
        ("Th", "is"),
        ("o", "u"),
        ("s", "e"),
        ("Ġto", "k"),
        ("Ġtok", "en"),
        ("n", "d"),
        ("Ġ", "is"),
        ("Ġt", "h"),
        ("Ġth", "e"),
        ("i", "n"),
        ("Ġa", "b"),
        ("Ġtoken", "i"),
    ]
    assert vocabulary == [
        "<|endoftext|>",
        ",",
        ".",
        "C",
        "F",
        "H",
        "T",
        "a",
        "b",
        "c",
        "d",
        "e",
        "f",
        "g",
        "h",
        "i",
        "k",
        "l",
        "m",
        "n",
        "o",
        "p",
        "r",
        "s",
        "t",
        "u",
        "v",
        "w",
        "y",
        "z",
        "Ġ",
        "Ġt",
        "is",
        "er",
        "Ġa",
        "Ġto",
        "en",
        "Th",
        "This",
        "ou",
        "se",
        "Ġtok",
        "Ġtoken",
        "nd",
        "Ġis",
        "Ġth",
        "Ġthe",
        "in",
        "Ġab",
        "Ġtokeni",
    ]
    layer = BPELayer(vocabulary, merges, dtype="string")
    tokens = [t.decode("utf-8") for t in layer("This is not a token.").numpy().tolist()]
    assert tokens == ["This", "Ġis", "Ġ", "n", "o", "t", "Ġa", "Ġtoken", "."]


def test_seed_corpus_with_its_words_in_the_trainers_order():
    """`train_bpe` gives the learner the words most frequent first, then by code point (in the byte
    alphabet): (Ġ, a) and (e, r) both occur 5 times, and `Ġable` now comes before `Ġchapter`."""
    vocabulary, merges = train_bpe(SEED_CORPUS, vocab_size=50, show_progress=False)
    assert (vocabulary, merges) == learn_bpe(counts_lib.ordered(byte_level_counts(SEED_CORPUS)), 50)
    assert (vocabulary, merges) == textbook_bpe(
        counts_lib.ordered(byte_level_counts(SEED_CORPUS)), 50, ["<|endoftext|>"]
    )
    assert merges[:5] == [("Ġ", "t"), ("i", "s"), ("Ġ", "a"), ("e", "r"), ("e", "n")]
    assert len(merges) == 19 and merges[-2:] == [("er", "a"), ("h", "o")]
    layer = BPELayer(vocabulary, merges, dtype="string")
    tokens = [t.decode("utf-8") for t in layer("This is not a token.").numpy().tolist()]
    assert tokens == ["This", "Ġis", "Ġ", "n", "o", "t", "Ġa", "Ġtoken", "."]


def test_seed_word_counts_by_hand():
    """hug 10, pug 5, pun 12, bun 4, hugs 5: (u, g) 20, then (u, n) 16, then (h, ug) 15, as the seed says."""
    counts = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
    vocabulary, merges = train_bpe(counts, vocab_size=10, special_tokens=(), show_progress=False)
    assert vocabulary == ["b", "g", "h", "n", "p", "s", "u", "ug", "un", "hug"]
    assert merges == [("u", "g"), ("u", "n"), ("h", "ug")]


# The textbook algorithm, written plainly: recount every pair after each merge. Ties go to the pair met
# first with the words in the order given: `train_bpe` gives them most frequent first, then by code point.


def textbook_bpe(word_counts, vocab_size, special_tokens):
    alphabet = sorted({char for word in word_counts for char in word})
    vocabulary = list(special_tokens) + alphabet
    splits = {word: list(word) for word in word_counts}
    merges = []
    while len(vocabulary) < vocab_size:
        pair_counts = {}
        for word, count in word_counts.items():
            split = splits[word]
            for i in range(len(split) - 1):
                pair = (split[i], split[i + 1])
                pair_counts[pair] = pair_counts.get(pair, 0) + count
        if not pair_counts:
            break
        best, best_count = None, 0
        for pair, count in pair_counts.items():
            if count > best_count:
                best, best_count = pair, count
        for word in word_counts:
            split, i = splits[word], 0
            while i < len(split) - 1:
                if (split[i], split[i + 1]) == best:
                    split[i : i + 2] = [best[0] + best[1]]
                i += 1
        merges.append(best)
        if best[0] + best[1] not in vocabulary:
            vocabulary.append(best[0] + best[1])
    return vocabulary, merges


def byte_level_counts(lines):
    """The words of `lines` in GPT-2's byte alphabet, counted in the order first seen."""
    words = byte_level_lib.split_words(tf.constant(lines)).flat_values.numpy().tolist()
    counts = {}
    for word in words:
        if word:
            key = byte_level_lib.to_byte_level(word)
            counts[key] = counts.get(key, 0) + 1
    return counts


@pytest.mark.full
@pytest.mark.parametrize("name, lines, size", [("botchan.txt", 300, 700), ("wagahaiwa_nekodearu.txt", 120, 900)])
def test_textbook_oracle_on_real_text(name, lines, size):
    texts = nonempty_lines(shared_file(name))[:lines]
    expected = textbook_bpe(counts_lib.ordered(byte_level_counts(texts)), size, ["<|endoftext|>"])
    assert len(expected[0]) == size
    assert train_bpe(texts, vocab_size=size, show_progress=False) == expected


@hypothesis.given(
    counts=st.dictionaries(
        st.text(alphabet="abcab", min_size=1, max_size=9), st.integers(1, 5), min_size=1, max_size=12
    ),
    extra=st.integers(0, 30),
)
@pytest.mark.parametrize("few", [merges_lib._FEW, 0], ids=["as-is", "array-path"])
def test_textbook_oracle_on_random_counts(counts, extra, few):
    """`few=0`: every merge takes the array path, which otherwise only merges in many places take."""
    alphabet = len({char for word in counts for char in word})
    expected = textbook_bpe(counts_lib.ordered(counts), alphabet + extra, [])
    import warnings

    with warnings.catch_warnings(), mock.patch.object(merges_lib, "_FEW", few):
        warnings.simplefilter("ignore")
        assert train_bpe(counts, vocab_size=alphabet + extra, special_tokens=(), show_progress=False) == expected


# BPELayer against Hugging Face's ByteLevelBPETokenizer.


def sample_of_every_shared_text():
    """Every 20th line of every shared text."""
    lines = [line for path in shared_texts() for line in nonempty_lines(path)][::20]
    if not lines:
        pytest.skip("reference data not available")
    return lines


@functools.cache
def vocabularies(tmp, full):
    """name -> (vocab.json path, merges.txt path): one that Hugging Face trains, one that train_bpe trains,
    8,000 tokens on three shared texts (`full`), or 2,000 on a sample of every shared text."""
    tokenizers = tokenizers_module()
    if full:
        texts, size = (
            [str(shared_file(name)) for name in ("wikitext2-test.txt", "botchan.txt", "wagahaiwa_nekodearu.txt")],
            8000,
        )
    else:
        (tmp / "sample.txt").write_text("\n".join(sample_of_every_shared_text()), encoding="utf-8")
        texts, size = [str(tmp / "sample.txt")], 2000
    found = {}
    trainer = tokenizers.ByteLevelBPETokenizer()
    trainer.train(texts, vocab_size=size, min_frequency=2, special_tokens=["<|endoftext|>"], show_progress=False)
    (tmp / "hf").mkdir()
    trainer.save_model(str(tmp / "hf"))
    found["hf"] = (tmp / "hf" / "vocab.json", tmp / "hf" / "merges.txt")
    train_bpe(files=texts, vocab_size=size, output=str(tmp / "ours"), show_progress=False)
    found["ours"] = (tmp / "ours" / "vocab.json", tmp / "ours" / "merges.txt")
    return found


@pytest.fixture(scope="module")
def trained(tmp_path_factory, request):
    """The vocabularies of `vocabularies`: the large ones in the full suite, the small ones otherwise."""
    full = request.config.getoption("--full")
    return vocabularies(tmp_path_factory.mktemp("bpe"), full)


@functools.cache
def encoders(paths):
    vocab, merges = paths
    layer = BPELayer(str(vocab), str(merges))
    encode = parity_call(layer)
    return encode, tokenizers_module().ByteLevelBPETokenizer(str(vocab), str(merges)), layer


@pytest.mark.full
@pytest.mark.parametrize("which", ["hf", "ours"])
@pytest.mark.parametrize("path", shared_texts() + real_texts(), ids=lambda p: p.name)
def test_identical_ids_to_hugging_face_on_every_line(trained, which, path):
    encode, reference, _ = encoders(trained[which])
    lines = nonempty_lines(path)
    got = encode(tf.constant(lines)).to_list()
    expected = [encoding.ids for encoding in reference.encode_batch(lines)]
    different = [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]
    assert len(got) == len(expected) and not different, (len(different), lines[different[0]] if different else "")


def test_sample_of_every_shared_text_matches_hugging_face(trained):
    """Every 20th line of every shared text (in the quick tier, the text the vocabularies learned from)."""
    lines = sample_of_every_shared_text()
    for which in ("hf", "ours"):
        encode, reference, _ = encoders(trained[which])
        got = encode(tf.constant(lines)).to_list()
        expected = [encoding.ids for encoding in reference.encode_batch(lines)]
        different = [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]
        assert len(got) == len(expected) and not different, (
            which,
            len(different),
            lines[different[0]] if different else "",
        )


_ALPHABET = st.one_of(
    st.sampled_from(list("abcdefghijklmnopqrstuvwxyz ABCXYZ  .,!?'-0123456789")),
    st.sampled_from(["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", " '", "  ", "\n", "\n ", " \n"]),
    st.sampled_from(list("\t\r\x0b\x0c\x1c\x85\xa0\u1680\u2000\u200a\u200b\u2028\u2029\u202f\u205f\u3000\ufeff")),
    st.sampled_from(list("\u0300\u0308ﬁ①Ⅻ½²٣ⅷ猫吾輩はカタ가αЖé\u1c89\ua7cb\U000105c0\x00\ufffd😀👍🏽")),
    st.characters(codec="utf-8"),
)
_TEXT = st.lists(_ALPHABET, max_size=40).map("".join)


@pytest.mark.parametrize("which", ["hf", "ours"])
@hypothesis.given(texts=st.lists(_TEXT, min_size=1, max_size=16))
def test_random_text_matches_hugging_face(trained, which, texts):
    encode, reference, _ = encoders(trained[which])
    got = encode(tf.constant([t.encode("utf-8", "surrogatepass") for t in texts])).to_list()
    assert got == [encoding.ids for encoding in reference.encode_batch(texts)]


def test_pre_tokenizer_classes_match_hugging_face():
    """Letters, numbers and white space as Hugging Face's Oniguruma sees them (Unicode 16), including the
    characters TensorFlow's RE2 classifies differently, and a sample of every plane."""
    pre_tokenizer = tokenizers_module().pre_tokenizers.ByteLevel(add_prefix_space=False)
    chars = [0x0B, 0x85, 0xA0, 0x1680, 0x2007, 0x2028, 0x202F, 0x3000, 0x1C89, 0xA7CB, 0x105C0, 0x2EBF0]
    chars += [c for c in range(0, 0x110000, 97) if not 0xD800 <= c < 0xE000]
    texts = [f"a{chr(c)}b 1{chr(c)}2 .{chr(c)}, {chr(c)}{chr(c)}x {chr(c)} y{chr(c)}" for c in chars]
    got = byte_level_lib.split_words(tf.constant([t.encode("utf-8", "surrogatepass") for t in texts])).to_list()
    for text, words in zip(texts, got):
        expected = [byte_level_lib.from_byte_level(w) for w, _ in pre_tokenizer.pre_tokenize_str(text)]
        assert [w for w in words if w] == expected, text


def test_detokenize_matches_hugging_face_decode(trained):
    _, reference, layer = encoders(trained["hf"])
    lines = nonempty_lines(shared_file("wagahaiwa_nekodearu.txt"))[:200] + ["Hello  world\n", " 's"]
    ids = layer(tf.constant(lines))
    assert [t.decode("utf-8") for t in layer.detokenize(ids).numpy().tolist()] == reference.decode_batch(ids.to_list())
    # Byte-level BPE is lossless: decoding gives the text back.
    assert [t.decode("utf-8") for t in layer.detokenize(ids).numpy().tolist()] == lines


def test_shapes_padding_and_string_output(trained):
    vocab, merges = trained["hf"]
    _, reference, _ = encoders(trained["hf"])
    layer = BPELayer(str(vocab), str(merges), sequence_length=6)
    ids = layer(tf.constant([["Hello world"], ["a"]]))
    pad = layer.token_to_id("<|endoftext|>")
    assert ids.shape == (2, 6)
    assert ids.numpy()[1].tolist() == (reference.encode("a").ids + [pad] * 6)[:6]
    tokens = BPELayer(str(vocab), str(merges), dtype="string")("Hello world").numpy().tolist()
    assert [t.decode("utf-8") for t in tokens] == reference.encode("Hello world").tokens
    assert BPELayer(str(vocab), str(merges))(tf.constant([], tf.string)).to_list() == []
    assert BPELayer(str(vocab), str(merges))(["", " ", "\n\n"]).to_list() == [
        e.ids for e in reference.encode_batch(["", " ", "\n\n"])
    ]


def test_long_line(trained):
    encode, reference, _ = encoders(trained["hf"])
    line = " ".join(["tokenization"] * 50_000) + " " + "x" * 5000
    assert encode(tf.constant([line])).to_list() == [reference.encode(line).ids]


def test_invalid_utf8_is_replaced(trained):
    """Documented: each invalid sequence reads as U+FFFD, whose bytes are then encoded."""
    encode, reference, _ = encoders(trained["hf"])
    got = encode(tf.constant([b"caf\xe9 ok", b"\xff\xfe", b"abc\xe3\x81"])).to_list()
    assert got == [e.ids for e in reference.encode_batch(["caf\ufffd ok", "\ufffd\ufffd", "abc\ufffd"])]


def test_learning_from_counts_by_hand():
    """By hand: in `ab\\ud800` (twice) and `b\\ud800` (once), (b, \\ud800) occurs 3 times and merges first;
    then (a, b\\ud800) twice. A lone surrogate, which a word count mapping may hold, is a character
    like any other. A run `x x x x` merges at 0-1 and 2-3; then (xx, xx) and (xx, x), once each, tie,
    and (xx, xx) occurs first."""
    vocabulary, merges = learn_bpe({"ab\ud800": 2, "b\ud800": 1}, 5, special_tokens=[])
    assert merges == [("b", "\ud800"), ("a", "b\ud800")]
    assert vocabulary == ["a", "b", "\ud800", "b\ud800", "ab\ud800"]
    _, merges = learn_bpe({"xxxx": 1, "xxx": 1}, 4, special_tokens=[])
    assert merges == [("x", "x"), ("xx", "xx"), ("xx", "x")]


def test_repeated_pair_merges_from_the_left():
    """By hand: in `aaaaa`, (a, a) merges at 0-1 then 2-3 (the pair at 1-2 overlaps the first), then
    (aa, a): aa aaa. As Hugging Face does."""
    tokenizers = tokenizers_module()
    vocabulary, merges = ["a", "aa", "aaa"], [("a", "a"), ("aa", "a")]
    reference = tokenizers.Tokenizer(tokenizers.models.BPE({t: i for i, t in enumerate(vocabulary)}, merges))
    reference.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    for text, expected in [("aaaaa", [1, 2]), ("aaaa", [1, 1]), ("aaa", [2]), ("aa", [1])]:
        assert BPELayer(vocabulary, merges)(text).numpy().tolist() == reference.encode(text).ids == expected


def test_sure_merges_by_hand():
    """(v, w) and (vw, x) are sure: no merge takes w from the right or v, vw from the left first. (x, y)
    is not: (vw, x) ranks before it and takes x once vw exists, so `vwxy` is vwx y, not vw xy (as
    merging every locally lowest pair at once would give). In a list where a merge uses a token
    before the merge that makes it, nothing is sure."""
    vocabulary = ["v", "w", "x", "y", "vw", "vwx", "xy"]
    merges = [("v", "w"), ("vw", "x"), ("x", "y")]
    ids = {token: index for index, token in enumerate(vocabulary)}
    ranks = {(ids[a], ids[b]): (rank, ids[a + b]) for rank, (a, b) in enumerate(merges)}
    assert bpe_segment._sure_merges(ranks) == {(ids["v"], ids["w"]), (ids["vw"], ids["x"])}
    backwards = {(ids[a], ids[b]): (rank, ids[a + b]) for rank, (a, b) in enumerate(merges[::-1])}
    assert bpe_segment._sure_merges(backwards) == set()
    tokenizers = tokenizers_module()
    reference = tokenizers.Tokenizer(tokenizers.models.BPE(ids, merges))
    layer = BPELayer(vocabulary, merges, byte_level=False)
    for text, expected in [("vwxy", [5, 3]), ("xyvw", [6, 4]), ("vwxyvw", [5, 3, 4]), ("wxy", [1, 6])]:
        assert layer(text).numpy().tolist() == reference.encode(text).ids == expected


def test_ignore_merges_by_hand():
    """`abc` is a token, but the merges make a bc of it ((b, c) first, and no (a, bc)); with
    ignore_merges the word is its token. A word that is no token still merges."""
    vocabulary = ["a", "b", "c", "bc", "ab", "abc"]
    merges = [("b", "c"), ("a", "b")]
    ids = {token: index for index, token in enumerate(vocabulary)}
    tokenizers = tokenizers_module()
    for ignore, expected in [(False, [[0, 3], [0, 3, 0]]), (True, [[5], [0, 3, 0]])]:
        reference = tokenizers.Tokenizer(tokenizers.models.BPE(ids, merges, ignore_merges=ignore))
        reference.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
        layer = BPELayer(vocabulary, merges, byte_level=False, ignore_merges=ignore)
        got = [layer(text).numpy().tolist() for text in ("abc", "abca")]
        assert got == [reference.encode(text).ids for text in ("abc", "abca")] == expected


@pytest.mark.parametrize(
    "affix, vocabulary, merges",
    [
        ("end_of_word_suffix", ["a", "b", "a</w>", "b</w>", "ab</w>"], [("a", "b</w>")]),
        ("continuing_subword_prefix", ["a", "b", "##a", "##b", "ab"], [("a", "##b")]),
    ],
)
def test_word_suffix_and_subword_prefix_by_hand(affix, vocabulary, merges):
    """Golden ids: "ab" is (a, b</w>) merged into ab</w>, or (a, ##b) into ab (the prefix dropped);
    "ba" does not merge; "a" alone is a</w> with the suffix, a without the prefix."""
    text = "</w>" if affix == "end_of_word_suffix" else "##"
    layer = BPELayer(vocabulary, merges, byte_level=False, pattern=None, **{affix: text})
    expected = [[4], [1, 2], [2 if text == "</w>" else 0]]
    assert [layer(word).numpy().tolist() for word in ("ab", "ba", "a")] == expected
    ids = {token: index for index, token in enumerate(vocabulary)}
    reference = tokenizers_module().Tokenizer(tokenizers_module().models.BPE(ids, merges, **{affix: text}))
    assert [reference.encode(word).ids for word in ("ab", "ba", "a")] == expected
    restored = BPELayer.from_config(layer.get_config())
    restored.set_vocabulary(vocabulary, merges)
    assert restored("ab").numpy().tolist() == [4]


@st.composite
def _grown_merges(draw):
    """A merge list grown as training grows one: each merge joins two tokens that exist already."""
    vocabulary = list("abc")
    merges = []
    for _ in range(draw(st.integers(0, 12))):
        left, right = draw(st.sampled_from(vocabulary)), draw(st.sampled_from(vocabulary))
        if (left, right) not in merges:
            merges.append((left, right))
            if left + right not in vocabulary:
                vocabulary.append(left + right)
    return vocabulary, merges


@hypothesis.given(grown=_grown_merges(), words=st.lists(st.text("abc", min_size=1, max_size=24), min_size=1))
def test_random_merge_lists_match_hugging_face(grown, words):
    """Sure merges run together with each word's lowest pair: on any grown list, the ids are Hugging
    Face's."""
    vocabulary, merges = grown
    tokenizers = tokenizers_module()
    reference = tokenizers.Tokenizer(
        tokenizers.models.BPE({token: index for index, token in enumerate(vocabulary)}, merges)
    )
    got = BPELayer(vocabulary, merges, byte_level=False)(words).to_list()
    assert got == [reference.encode(word).ids for word in words]


@pytest.fixture(scope="module")
def reordered(trained, tmp_path_factory):
    """Hugging Face's trained merges in reverse order: each merge ranks before those that make its
    tokens, unlike any trained file."""
    vocab, merges = trained["hf"]
    lines = merges.read_text(encoding="utf-8").split("\n")
    path = tmp_path_factory.mktemp("reordered") / "merges.txt"
    path.write_text("\n".join([lines[0]] + [line for line in lines[1:] if line][::-1]) + "\n", encoding="utf-8")
    return vocab, path


def test_merges_in_another_order_match_hugging_face(reordered):
    lines = sample_of_every_shared_text()
    encode, reference, _ = encoders(reordered)
    got = encode(tf.constant(lines)).to_list()
    expected = [encoding.ids for encoding in reference.encode_batch(lines)]
    different = [line for line, a, b in zip(lines, got, expected) if a != b]
    assert not different, (len(different), different[:1])


@hypothesis.given(texts=st.lists(_TEXT, min_size=1, max_size=16))
def test_random_text_with_merges_in_another_order_matches_hugging_face(reordered, texts):
    encode, reference, _ = encoders(reordered)
    got = encode(tf.constant([t.encode("utf-8", "surrogatepass") for t in texts])).to_list()
    assert got == [encoding.ids for encoding in reference.encode_batch(texts)]


def test_unknown_bytes_dropped_or_mapped():
    """Without an unknown token a byte outside the vocabulary is dropped, as Hugging Face does; with one,
    it becomes that token."""
    tokenizers = tokenizers_module()
    vocabulary = ["<unk>", "a", "b", "Ġ", "ab"]
    merges = [("a", "b")]
    reference = tokenizers.Tokenizer(tokenizers.models.BPE({t: i for i, t in enumerate(vocabulary)}, merges))
    reference.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    assert BPELayer(vocabulary, merges)("ab cab").numpy().tolist() == reference.encode("ab cab").ids == [4, 3, 4]
    assert BPELayer(vocabulary, merges, unknown_token="<unk>")("ab cab").numpy().tolist() == [4, 3, 0, 4]


def test_character_level_bpe():
    vocabulary, merges = train_bpe(["héllo wörld", "héllo"], vocab_size=20, byte_level=False, show_progress=False)
    assert "é" in vocabulary and " " in vocabulary
    layer = BPELayer(vocabulary, merges, byte_level=False, dtype="string")
    tokens = [t.decode("utf-8") for t in layer("héllo wörld").numpy().tolist()]
    assert "".join(tokens) == "héllo wörld" and len(tokens) < len("héllo wörld")


def test_bad_input_raises_value_error(tmp_path):
    with pytest.raises(ValueError, match="not in the vocabulary"):
        BPELayer(["a", "b"], [("a", "b")])
    with pytest.raises(ValueError, match="both"):
        BPELayer(["a", "b"])
    with pytest.raises(ValueError, match="ids 0..n-1"):
        BPELayer({"a": 0, "b": 2}, [])
    with pytest.raises(ValueError, match="unknown token"):
        BPELayer(["a"], [], unknown_token="<unk>")
    with pytest.raises(ValueError, match="pair"):
        BPELayer(["a", "b", "ab"], [("a", "b", "c")])
    bad = tmp_path / "merges.txt"
    bad.write_text("#version: 0.2\na b\nab\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2"):
        BPELayer(["a", "b", "ab"], str(bad))
    with pytest.raises(ValueError, match="not a file"):
        BPELayer(["a"], str(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="space or line break"):
        write_merges([("a b", "c")], str(tmp_path / "m.txt"))


@functools.cache
def small_files():
    """The bytes of a vocab.json and a merges.txt of a small byte-level BPE trained here."""
    vocabulary, merges = train_bpe(SEED_CORPUS, vocab_size=60, show_progress=False)
    vocab_json = json.dumps({token: i for i, token in enumerate(vocabulary)}, ensure_ascii=False).encode("utf-8")
    merges_txt = ("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges)).encode("utf-8")
    return vocab_json, merges_txt


damage = st.tuples(
    st.sampled_from(["replace", "delete", "insert", "truncate", "repeat"]),
    st.floats(0, 1),
    st.binary(min_size=1, max_size=8) | st.sampled_from([b"\xff", b"\x00", b'"', b"\n", b" ", b"{", b"\\u", b"1e999"]),
)


def damaged(data, change):
    """`data` with one change at a relative position: bytes replaced, deleted, inserted, the end cut, or a
    stretch repeated."""
    kind, where, junk = change
    at = int(where * len(data))
    if kind == "replace":
        return data[:at] + junk + data[at + len(junk) :]
    if kind == "delete":
        return data[:at] + data[at + len(junk) :]
    if kind == "insert":
        return data[:at] + junk + data[at:]
    if kind == "truncate":
        return data[:at]
    return data[:at] + data[at : at + 40] + data[at:]


@hypothesis.given(changes=st.lists(st.tuples(st.booleans(), damage), min_size=1, max_size=3))
def test_damaged_vocab_json_and_merges_txt_give_a_layer_or_a_value_error(changes, tmp_path_factory):
    """Hostile or corrupted files: a ValueError naming the problem, or a layer that encodes as Hugging Face
    encodes with the same files when it reads them."""
    files = dict(zip(("vocab.json", "merges.txt"), small_files()))
    for in_vocabulary, change in changes:
        name = "vocab.json" if in_vocabulary else "merges.txt"
        files[name] = damaged(files[name], change)
    directory = tmp_path_factory.mktemp("damaged")
    for name, data in files.items():
        (directory / name).write_bytes(data)
    paths = [str(directory / "vocab.json"), str(directory / "merges.txt")]
    try:
        layer = BPELayer(*paths)
    except ValueError:
        return
    texts = ["hello world", "The quick brown fox.", " ab  cd"]
    got = layer(tf.constant(texts)).to_list()
    try:
        reference = tokenizers_module().ByteLevelBPETokenizer(*paths)
    except Exception:  # Hugging Face refuses what it cannot read; ours read it
        return
    assert got == [e.ids for e in reference.encode_batch(texts)]


def test_train_bpe_bad_input(tmp_path):
    with pytest.raises(ValueError, match="at least 31"):
        train_bpe(SEED_CORPUS, vocab_size=30, show_progress=False)
    with pytest.raises(ValueError, match="empty"):
        train_bpe(["", ""], vocab_size=100, show_progress=False)
    with pytest.raises(ValueError, match="Cannot read"):
        train_bpe(files=[str(tmp_path / "missing.txt")], vocab_size=100, show_progress=False)
    invalid = tmp_path / "invalid.txt"
    invalid.write_bytes(b"caf\xe9 ok\nfine line\n")
    with pytest.warns(UserWarning, match="1 lines were not valid UTF-8"):
        vocabulary, _ = train_bpe(files=[str(invalid)], vocab_size=40, show_progress=False)
    assert byte_level_lib.to_byte_level("\ufffd")[0] in vocabulary
    with pytest.warns(UserWarning, match="no pairs are left"):
        vocabulary, _ = train_bpe(["ab"], vocab_size=100, show_progress=False)
    assert vocabulary == ["<|endoftext|>", "a", "b", "ab"]
    full, _ = train_bpe(["ab"], vocab_size=300, full_alphabet=True, show_progress=False)
    assert len(full) == 1 + 256 + 1


def test_files_written_load_in_hugging_face(tmp_path):
    tokenizers = tokenizers_module()
    vocabulary, merges = train_bpe(SEED_CORPUS, vocab_size=50, show_progress=False)
    write_vocab_json(vocabulary, str(tmp_path / "vocab.json"))
    write_merges(merges, str(tmp_path / "merges.txt"))
    assert json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8")) == {t: i for i, t in enumerate(vocabulary)}
    reference = tokenizers.ByteLevelBPETokenizer(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    assert reference.encode("This is not a token.").tokens == ["This", "Ġis", "Ġ", "n", "o", "t", "Ġa", "Ġtoken", "."]


@pytest.mark.full
def test_exported_model_serves_from_plain_tensorflow(tmp_path, trained):
    _, reference, _ = encoders(trained["hf"])
    vocab, merges = trained["hf"]
    texts = ["Hello world!", "  two  spaces\n", "", "吾輩は猫である", "it's 1984"]
    expected = [e.ids for e in reference.encode_batch(texts)]
    length = 24
    layer = BPELayer(str(vocab), str(merges), sequence_length=length)
    pad = layer.pad_token_id
    inputs = keras.Input(shape=(), dtype="string")
    keras.Model(inputs, layer(inputs)).export(tmp_path / "exported", verbose=False)
    (served,) = serve(tmp_path / "exported", texts).values()
    assert served == [(row + [pad] * length)[:length] for row in expected]
    assert serve_ragged(BPELayer(str(vocab), str(merges)), texts, tmp_path / "module") == expected
