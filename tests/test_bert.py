"""BertPreprocessor and token offsets against Hugging Face tokenizers; saving, serving, other backends."""

import functools
import os
import subprocess
import sys
import textwrap

import keras
import pytest
import tensorflow as tf

from tests.conftest import (
    BERT_VOCAB,
    SHARED_DATA,
    WORDPIECE_ROUTES,
    bert_reference,
    nonempty_lines,
    parity_call,
    shared_file,
    shared_texts,
    wordpiece_route,
)
from tests.serving import serve
from tests.test_wordpiece import VOCAB
from tfsubword import BertPreprocessor, WordPieceLayer
from tfsubword.files.vocab import read_vocabulary


@functools.cache
def hugging_face(length=None):
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(shared_file("bert-base-uncased-tokenizer.json")))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    if length:
        tokenizer.enable_truncation(length, strategy="longest_first")
        tokenizer.enable_padding(length=length)
    return tokenizer


@functools.cache
def preprocessor(length):
    layer = BertPreprocessor(
        read_vocabulary(shared_file(BERT_VOCAB.name)), sequence_length=length, truncate="longest_first"
    )
    single = parity_call(lambda a: layer(a))
    pair = parity_call(lambda a, b: layer((a, b)), [tf.TensorSpec([None], tf.string)] * 2)
    return single, pair


def batches(items, size=1024):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def sample_of_every_shared_text():
    """The quick tier's parity sample: every 20th line of every shared text."""
    lines = [line for path in shared_texts() for line in nonempty_lines(path)][::20]
    if not lines:
        pytest.skip(f"reference data not available: {SHARED_DATA}")
    return lines


@pytest.mark.full
@pytest.mark.parametrize("length", [32, 128])
@pytest.mark.parametrize("path", shared_texts(), ids=lambda p: p.name)
def test_longest_first_matches_hugging_face_on_lines_and_pairs(path, length):
    check_longest_first(nonempty_lines(path), length)


def test_sample_longest_first_matches_hugging_face():
    check_longest_first(sample_of_every_shared_text(), 32)


def check_longest_first(lines, length):
    single, pair = preprocessor(length)
    reference = hugging_face(length)
    cases = [("lines", [(line,) for line in lines]), ("pairs", list(zip(lines, lines[1:])))]
    for name, inputs in cases:
        different = []
        for batch in batches(inputs):
            expected = reference.encode_batch([x[0] if len(x) == 1 else x for x in batch])
            columns = [tf.constant([x[i] for x in batch]) for i in range(len(batch[0]))]
            got = single(*columns) if len(columns) == 1 else pair(*columns)
            got = {key: value.numpy() for key, value in got.items()}
            for row, encoding in enumerate(expected):
                if (
                    got["token_ids"][row].tolist() != encoding.ids
                    or got["segment_ids"][row].tolist() != encoding.type_ids
                    or got["padding_mask"][row].astype(int).tolist() != encoding.attention_mask
                ):
                    different.append(batch[row])
        assert not different, f"{name}: {len(inputs) - len(different)}/{len(inputs)} identical; first: {different[0]}"


def byte_offsets(text, offsets):
    return [(len(text[:start].encode("utf-8")), len(text[:end].encode("utf-8"))) for start, end in offsets]


# The trie walk of a layer built with `jit_compile=True` (compiled with XLA).
COMPILED = "compiled walk"


@functools.cache
def bert_offsets(route):
    compiled = route == COMPILED
    layer = WordPieceLayer(read_vocabulary(shared_file(BERT_VOCAB.name)), jit_compile=compiled)
    offsets = parity_call(layer.tokenize_with_offsets)
    route = "trie walk" if compiled else route

    def encode(texts):
        with wordpiece_route(route):  # read when the layer is traced, or eagerly at each call
            return offsets(texts)

    return encode


@pytest.mark.full
@pytest.mark.parametrize("route", [*WORDPIECE_ROUTES, COMPILED])
@pytest.mark.parametrize("path", shared_texts(), ids=lambda p: p.name)
def test_offsets_match_hugging_face(path, route):
    check_offsets(nonempty_lines(path), route)


@pytest.mark.parametrize("route", WORDPIECE_ROUTES)
def test_sample_offsets_match_hugging_face(route):
    check_offsets(sample_of_every_shared_text(), route)


def check_offsets(lines, route):
    encode = bert_offsets(route)
    reference = hugging_face()
    different = []
    for batch in batches(lines):
        ids, starts, ends = encode(tf.constant(batch))
        expected = reference.encode_batch(batch, add_special_tokens=False)
        for text, row_ids, row_starts, row_ends, encoding in zip(
            batch, ids.to_list(), starts.to_list(), ends.to_list(), expected
        ):
            if row_ids != encoding.ids or list(zip(row_starts, row_ends)) != byte_offsets(text, encoding.offsets):
                different.append(text)
    assert not different, f"{len(lines) - len(different)}/{len(lines)} lines identical; first: {different[0]!r}"


def test_offsets_by_hand():
    layer = WordPieceLayer(VOCAB + ["!"])
    # "The " 0-4, "QUI" 4-7, a soft hyphen (2 bytes, deleted) 7-9, "CK" 9-11, " fox" 11-15
    ids, starts, ends = layer.tokenize_with_offsets("The QUI\u00adCK fox")
    tokens = [layer.id_to_token(i) for i in ids.numpy().tolist()]
    assert list(zip(tokens, starts.numpy().tolist(), ends.numpy().tolist())) == [
        ("the", 0, 3),
        ("qu", 4, 6),
        ("##ick", 6, 11),
        ("fox", 12, 15),  # the deleted hyphen falls inside ##ick
    ]
    # An unknown word spans the whole word; é is two bytes and loses its accent.
    ids, starts, ends = layer.tokenize_with_offsets(["quack! Caf\u00e9"])
    tokens = [layer.id_to_token(i) for i in ids.to_list()[0]]
    assert list(zip(tokens, starts.to_list()[0], ends.to_list()[0])) == [
        ("[UNK]", 0, 5),
        ("!", 5, 6),
        ("caf", 7, 10),
        ("##e", 10, 12),
    ]


def test_offsets_follow_the_output_shape():
    layer = WordPieceLayer(VOCAB, sequence_length=4)
    ids, starts, ends = layer.tokenize_with_offsets(tf.constant([["the fox"], ["quickly"]]))
    assert ids.shape == starts.shape == ends.shape == (2, 4)
    assert starts.numpy().tolist() == [[0, 4, 0, 0], [0, 2, 5, 0]]
    assert ends.numpy().tolist() == [[3, 7, 0, 0], [2, 5, 7, 0]]


def test_offsets_of_invalid_utf8_count_original_bytes():
    layer = WordPieceLayer(VOCAB)
    ids, starts, ends = layer.tokenize_with_offsets(b"\xff\xfefox \xe2\x82the")
    assert ids.numpy().tolist() == [9, 4]
    assert starts.numpy().tolist() == [2, 8]
    assert ends.numpy().tolist() == [5, 11]


def test_detokenize_gives_the_normalized_text():
    tokens = read_vocabulary(shared_file(BERT_VOCAB.name))
    layer = WordPieceLayer(tokens)
    basic = bert_reference().BasicTokenizer(do_lower_case=True)
    lines = nonempty_lines(shared_file("wikitext2-test.txt"))[:400]
    ids = layer(lines)
    unknown = tokens.index("[UNK]")
    known = [i for i, row in enumerate(ids.to_list()) if unknown not in row]
    assert len(known) > 100
    text = layer.detokenize(tf.gather(ids, known)).numpy().tolist()
    assert [t.decode("utf-8") for t in text] == [" ".join(basic.tokenize(lines[i])) for i in known]


def test_small_pair_by_hand():
    layer = BertPreprocessor(VOCAB, sequence_length=10)
    outputs = layer((tf.constant(["The quick fox."]), tf.constant(["jumped"])))
    # [CLS] the qu ##ick fox . [SEP] jump ##ed [SEP]: exactly 10 tokens, no truncation.
    assert outputs["token_ids"].numpy().tolist() == [[2, 4, 5, 6, 9, 13, 3, 10, 12, 3]]
    assert outputs["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 0, 0, 0, 1, 1, 1]]
    single = layer("the fox")
    assert single["token_ids"].numpy().tolist() == [2, 4, 9, 3, 0, 0, 0, 0, 0, 0]


def test_bad_arguments():
    with pytest.raises(ValueError, match="truncate"):
        BertPreprocessor(VOCAB, truncate="both")
    with pytest.raises(ValueError, match="cls_token"):
        BertPreprocessor(["[UNK]", "[SEP]", "a"])
    with pytest.raises(ValueError, match="one string tensor or a pair"):
        BertPreprocessor(VOCAB)((tf.constant(["a"]),) * 3)


@pytest.mark.full
def test_exported_pair_model_serves_from_plain_tensorflow(tmp_path):
    a = keras.Input(shape=(), dtype="string", name="a")
    b = keras.Input(shape=(), dtype="string", name="b")
    model = keras.Model([a, b], BertPreprocessor(VOCAB, sequence_length=10)((a, b)))
    model.export(str(tmp_path / "pair"), verbose=False)
    served = serve(tmp_path / "pair", {"a": ["The quick fox."], "b": ["jumped"]})
    served = {key: [[int(value) for value in row] for row in rows] for key, rows in served.items()}
    assert served["token_ids"] == [[2, 4, 5, 6, 9, 13, 3, 10, 12, 3]]
    assert served["segment_ids"] == [[0, 0, 0, 0, 0, 0, 0, 1, 1, 1]]


@pytest.mark.full
def test_feeds_a_model_on_the_jax_backend(tmp_path):
    """As keras-hub's layers: tf.data runs the preprocessing, the model runs on another backend."""
    pytest.importorskip("jax")
    code = textwrap.dedent(
        f"""
        import keras, numpy as np, tensorflow as tf
        assert keras.backend.backend() == "jax"
        from tfsubword import BertPreprocessor
        vocab = {VOCAB!r}
        preprocessor = BertPreprocessor(vocab, sequence_length=8)
        texts = ["the quick fox", "unaffable", "jumped .", "the fox"] * 4
        labels = np.array([1, 0, 1, 0] * 4, "float32")
        dataset = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(4).map(
            lambda x, y: (preprocessor(x), y))
        token_ids = keras.Input(shape=(8,), dtype="int32", name="token_ids")
        segment_ids = keras.Input(shape=(8,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input(shape=(8,), dtype="bool", name="padding_mask")
        pooled = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(len(vocab), 4)(token_ids))
        model = keras.Model({{"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}},
                            keras.layers.Dense(1)(pooled))
        model.compile(optimizer="sgd", loss="mse")
        history = model.fit(dataset, epochs=2, verbose=0)
        first = next(iter(dataset))[0]
        direct = preprocessor(tf.constant(texts[:4]))
        assert (first["token_ids"].numpy() == direct["token_ids"].numpy()).all()
        print("ok", len(history.history["loss"]))
        """
    )
    environment = {**os.environ, "KERAS_BACKEND": "jax"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=environment)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "ok 2"
