"""WordPieceLayer: golden ids from a tiny vocabulary, the shape contract, Keras integration, bad input."""

import zipfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import BertReference, wordpiece_route
from tfsubword import WordPieceLayer
from tfsubword.layers.huggingface_models import HuggingFaceWordPiece

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",  # 0-3
    "the",
    "qu",
    "##ick",
    "##ly",
    "brown",
    "fox",  # 4-9
    "jump",
    "##s",
    "##ed",
    ".",
    ",",
    "un",  # 10-15
    "##aff",
    "##able",
    "\u4e2d",
    "caf",
    "##e",
    "\u00e9",  # 16-21
]
ID = {token: index for index, token in enumerate(VOCAB)}


def ids(*tokens):
    return [ID[token] for token in tokens]


# Expected pieces written out by hand from the greedy longest-match-first rule.
GOLDEN = [
    ("The quick brown fox.", ids("the", "qu", "##ick", "brown", "fox", ".")),
    ("quickly", ids("qu", "##ick", "##ly")),
    ("jumped jumps", ids("jump", "##ed", "jump", "##s")),
    ("unaffable", ids("un", "##aff", "##able")),
    ("quack", ids("[UNK]")),  # "qu" matches, "##ack" does not: the whole word is unknown
    ("QUICK,FOX", ids("qu", "##ick", ",", "fox")),
    ("Caf\u00e9 \u4e2d\u4e2d", ids("caf", "##e", "\u4e2d", "\u4e2d")),  # accent stripped; CJK split
    ("[CLS]", ids("[UNK]", "[UNK]", "[UNK]")),  # "[", "cls", "]": special tokens are not matched in text
    ("", []),
]


@pytest.fixture(scope="module")
def layer():
    return WordPieceLayer(VOCAB)


@pytest.mark.parametrize("text, expected", GOLDEN)
def test_golden_ids(layer, text, expected):
    assert layer(text).numpy().tolist() == expected
    assert BertReference(VOCAB).ids(text) == expected


def test_batch_is_ragged(layer):
    texts = [text for text, _ in GOLDEN]
    result = layer(texts)
    assert isinstance(result, tf.RaggedTensor)
    assert result.dtype == tf.int32
    assert result.to_list() == [expected for _, expected in GOLDEN]


def test_cased(layer):
    cased = WordPieceLayer(VOCAB, lowercase=False)
    assert cased("QUICK the").numpy().tolist() == ids("[UNK]", "the")
    assert cased("caf\u00e9").numpy().tolist() == ids("[UNK]")  # no "##é": the whole word is unknown
    assert WordPieceLayer(VOCAB, lowercase=False, strip_accents=True)("caf\u00e9").numpy().tolist() == ids("caf", "##e")


def test_options_change_the_rules():
    assert WordPieceLayer(VOCAB, split_on_cjk=False)("\u4e2d\u4e2d").numpy().tolist() == ids("[UNK]")
    # At most 5 characters: "quick" (5) is pieced, "quickly" (7) is unknown.
    assert WordPieceLayer(VOCAB, max_chars_per_word=5)("quick quickly").numpy().tolist() == ids("qu", "##ick", "[UNK]")
    marked = ["[PAD]", "<unk>", "un", "@@aff", "@@able"]
    layer = WordPieceLayer(marked, unknown_token="<unk>", suffix_indicator="@@")
    assert layer("unaffable unable unfit").numpy().tolist() == [2, 3, 4, 2, 4, 1]


def test_shapes(layer):
    assert layer(tf.constant("the fox")).shape == (2,)
    assert layer(tf.constant([["the fox"], ["fox"]])).to_list() == [ids("the", "fox"), ids("fox")]
    nested = layer(tf.constant([["the", "fox ."], ["quick", ""]]))
    assert nested.to_list() == [[ids("the"), ids("fox", ".")], [ids("qu", "##ick"), []]]
    ragged = layer(tf.ragged.constant([["the fox", "fox"], ["quick"]]))
    assert ragged.to_list() == [[ids("the", "fox"), ids("fox")], [ids("qu", "##ick")]]


def test_sequence_length_pads_and_truncates():
    layer = WordPieceLayer(VOCAB, sequence_length=4)
    result = layer(["the fox", "the quick brown fox ."])
    assert isinstance(result, tf.Tensor)
    assert result.numpy().tolist() == [ids("the", "fox", "[PAD]", "[PAD]"), ids("the", "qu", "##ick", "brown")]
    assert layer("fox").numpy().tolist() == ids("fox", "[PAD]", "[PAD]", "[PAD]")
    assert layer(tf.constant([["fox", "the"]])).shape == (1, 2, 4)


def test_padding_is_zero_without_pad_token():
    vocab = ["[UNK]", "the", "fox"]
    assert WordPieceLayer(vocab, sequence_length=3)("fox").numpy().tolist() == [2, 0, 0]
    moved = ["[UNK]", "the", "[PAD]"]
    assert WordPieceLayer(moved, sequence_length=3)("the").numpy().tolist() == [1, 2, 2]


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint16"])
def test_integer_dtypes(dtype):
    result = WordPieceLayer(VOCAB, dtype=dtype)(["the fox"])
    assert result.dtype == tf.as_dtype(dtype)
    assert result.to_list() == [ids("the", "fox")]


def test_string_dtype():
    layer = WordPieceLayer(VOCAB, dtype="string", sequence_length=4)
    assert layer(["quickly"]).numpy().tolist() == [[b"qu", b"##ick", b"##ly", b"[PAD]"]]


def test_detokenize(layer):
    assert layer.detokenize(ids("the", "qu", "##ick", "fox", ".")).numpy() == b"the quick fox ."
    assert layer.detokenize(tf.ragged.constant([ids("un", "##aff", "##able"), ids("##s"), []])).numpy().tolist() == [
        b"unaffable",
        b"s",
        b"",
    ]
    assert layer.detokenize([ids("fox", "[PAD]")]).numpy().tolist() == [b"fox [PAD]"]
    assert layer.detokenize(tf.constant([[b"qu", b"##ick"]])).numpy().tolist() == [b"quick"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="beyond the vocabulary"):
        layer.detokenize([0, len(VOCAB)])
    with pytest.raises(tf.errors.InvalidArgumentError, match="negative"):
        layer.detokenize([-1])


def test_detokenize_inverts_tokenize_for_known_words(layer):
    text = tf.constant(["the quick brown fox jumped .", "unaffable , quickly"])
    assert layer.detokenize(layer(text)).numpy().tolist() == text.numpy().tolist()


def test_vocabulary_accessors(layer):
    assert layer.vocabulary_size() == len(VOCAB)
    assert layer.get_vocabulary() == VOCAB
    assert layer.id_to_token(6) == "##ick"
    assert layer.token_to_id("fox") == 9
    with pytest.raises(ValueError, match="not in the vocabulary"):
        layer.token_to_id("wolf")
    with pytest.raises(ValueError, match=r"\[0, 22\)"):
        layer.id_to_token(22)


def test_vocabulary_without_whole_words():
    # No token is a word by itself: everything goes through piece matching.
    layer = WordPieceLayer(["[UNK]", "##a", "[CLS]"])
    assert layer(["a b", ""]).to_list() == [[0, 0], []]


def test_vocabulary_from_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    assert WordPieceLayer(str(path))("quickly").numpy().tolist() == ids("qu", "##ick", "##ly")
    assert WordPieceLayer(path).get_vocabulary() == VOCAB


@pytest.mark.parametrize(
    "vocabulary, message",
    [
        (["[PAD]", "the"], r"does not contain the unknown token '\[UNK\]'"),
        (["[UNK]", "the", "the"], "'the' twice, at ids 1 and 2"),
        ([], "empty"),
        (["[UNK]", ""], "empty string"),
    ],
)
def test_bad_vocabularies(vocabulary, message):
    with pytest.raises(ValueError, match=message):
        WordPieceLayer(vocabulary)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"dtype": "float32"}, "dtype"),
        ({"sequence_length": 0}, "sequence_length"),
        ({"sequence_length": 2.5}, "sequence_length"),
        ({"max_chars_per_word": 0}, "max_chars_per_word"),
        ({"lowercase": "yes"}, "lowercase"),
        ({"strip_accents": 1}, "strip_accents"),
        ({"unknown_token": ""}, "unknown_token"),
        ({"suffix_indicator": None}, "suffix_indicator"),
        ({"jit_compile": "yes"}, "jit_compile"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        WordPieceLayer(VOCAB, **arguments)


def test_non_string_input(layer):
    with pytest.raises(ValueError, match="must be strings"):
        layer(tf.constant([1, 2]))


def test_no_vocabulary_yet():
    layer = WordPieceLayer()
    with pytest.raises(ValueError, match="no vocabulary yet"):
        layer("the")
    layer.set_vocabulary(VOCAB)
    assert layer("the").numpy().tolist() == ids("the")


def test_keras_save_and_load(tmp_path):
    inputs = keras.Input(shape=(), dtype="string")
    outputs = WordPieceLayer(VOCAB, sequence_length=6, lowercase=False)(inputs)
    model = keras.Model(inputs, outputs)
    texts = tf.constant(["The quick fox.", "jumped"])
    before = model(texts).numpy()
    path = tmp_path / "model.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        config = archive.read("config.json").decode("utf-8")
    assert any(name.endswith("vocabulary.txt") for name in names)
    assert "##aff" not in config
    restored = keras.models.load_model(path)
    np.testing.assert_array_equal(restored(texts).numpy(), before)
    assert restored.layers[-1].get_vocabulary() == VOCAB


def test_sequential_model_add():
    model = keras.Sequential()
    model.add(keras.Input(shape=(), dtype="string"))
    model.add(WordPieceLayer(VOCAB, sequence_length=5))
    model.add(keras.layers.Embedding(len(VOCAB), 3))
    assert model.output_shape == (None, 5, 3)
    assert model(tf.constant(["the fox", "quickly"])).shape == (2, 5, 3)


def test_symbolic_ragged_output():
    inputs = keras.Input(shape=(), dtype="string")
    outputs = WordPieceLayer(VOCAB)(inputs)
    assert outputs.ragged and outputs.shape == (None, None)
    assert keras.Model(inputs, outputs)(tf.constant(["the fox"])).to_list() == [ids("the", "fox")]


@pytest.mark.full  # the quick tier traces the layer in tests/test_layer_contract.py
def test_inside_tf_function(layer):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def encode(texts):
        return layer(texts)

    assert encode(tf.constant(["quickly", "the"])).to_list() == [ids("qu", "##ick", "##ly"), ids("the")]


def test_invalid_utf8_behaves_as_replacement_characters(layer):
    texts = [b"the\xff fox", b"\xe2\x82qu\xc3ick", b"\xf0\x9f"]
    reference = BertReference(VOCAB)
    expected = [reference.ids(text.decode("utf-8", "replace")) for text in texts]
    # Deleting the invalid bytes joins what surrounds them: "qu" + "ick" is one word.
    assert layer(tf.constant(texts)).to_list() == expected == [ids("the", "fox"), ids("qu", "##ick"), []]


def test_empty_whitespace_and_empty_batch(layer):
    assert layer(["", " ", "\t\n\u3000\u2028"]).to_list() == [[], [], []]
    empty = layer(tf.constant([], tf.string))
    assert empty.shape.as_list() == [0, None] and empty.to_list() == []
    assert WordPieceLayer(VOCAB, sequence_length=3)(tf.constant([], tf.string)).shape == (0, 3)


def test_nul_bytes_are_deleted(layer):
    assert layer("qu\x00ick \x00fox\x00").numpy().tolist() == ids("qu", "##ick", "fox")


def test_long_word_and_long_line(layer):
    assert layer("the " + "a" * 10_000 + " fox").numpy().tolist() == ids("the", "[UNK]", "fox")
    line = " ".join(["the quick fox ,"] * 70_000)  # about 1 MB
    assert len(line) > 1_000_000
    result = layer(line).numpy()
    assert result.tolist() == ids("the", "qu", "##ick", "fox", ",") * 70_000


@pytest.mark.parametrize("jit_compile", [False, True], ids=["executor", "compiled"])
def test_empty_words_between_and_after_words_through_the_walk(jit_compile):
    """Words given one per text (as `from_huggingface` gives them), empty ones among them, all walked."""
    layer = HuggingFaceWordPiece(VOCAB, jit_compile=jit_compile)
    with wordpiece_route("trie walk"):  # every word that is no token walks, compiled or not
        got = layer(tf.constant(["jumps", "", "quickly", "", "", "unaffable", "", "\u4e2dx", ""])).to_list()
    jumps, quickly, unaffable = ids("jump", "##s"), ids("qu", "##ick", "##ly"), ids("un", "##aff", "##able")
    assert got == [jumps, [], quickly, [], [], unaffable, [], ids("[UNK]"), []]
