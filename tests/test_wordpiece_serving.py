"""Exported models containing WordPieceLayer serve from plain TensorFlow, with the same ids."""

import keras
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from tests.serving import serve
from tests.test_wordpiece import VOCAB
from tfsubword import WordPieceLayer

TEXTS = ["The quick brown fox.", "unaffable \u4e2d", "", "QUICKLY jumped, caf\u00e9"]


def tokenizer_model():
    inputs = keras.Input(shape=(), dtype="string")
    outputs = WordPieceLayer(VOCAB, sequence_length=8)(inputs)
    return keras.Model(inputs, outputs)


@pytest.mark.full
@pytest.mark.parametrize("exporter", ["model.export", "tf.saved_model.save"])
def test_exported_model_serves_from_plain_tensorflow(tmp_path, exporter):
    model = tokenizer_model()
    expected = model(tf.constant(TEXTS)).numpy().tolist()
    path = tmp_path / "exported"
    if exporter == "model.export":
        model.export(str(path))
    else:
        tf.saved_model.save(model, str(path))
    (output,) = serve(path, TEXTS).values()
    assert output == expected


def save_ragged(layer, path):
    """Save a module whose `encode` signature gives `layer`'s ids as values and row lengths."""

    class Tokenizer(tf.Module):
        def __init__(self):
            super().__init__()
            self.layer = layer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def encode(self, texts):
            ids = self.layer(texts)
            return {"values": ids.flat_values, "row_lengths": ids.row_lengths()}

    module = Tokenizer()
    tf.saved_model.save(module, str(path), signatures={"encode": module.encode})


@pytest.mark.full
def test_ragged_ids_survive_a_saved_module(tmp_path):
    """Without `sequence_length`, a tf.Module can still export the ragged ids as values + row lengths."""
    layer = WordPieceLayer(VOCAB)
    path = tmp_path / "module"
    save_ragged(layer, path)
    output = serve(path, TEXTS, signature="encode")
    expected = layer(TEXTS)
    assert output["values"] == expected.flat_values.numpy().tolist()
    assert output["row_lengths"] == expected.row_lengths().numpy().tolist()


def functions_to_compile(path):
    """The functions of a SavedModel that must be compiled with XLA to run."""
    saved = saved_model_pb2.SavedModel()
    saved.ParseFromString((path / "saved_model.pb").read_bytes())
    library = saved.meta_graphs[0].graph_def.library
    return [function.signature.name for function in library.function if function.attr["_XlaMustCompile"].b]


# Hundreds of distinct words that are no token: enough for the walk, compiled or not, to run.
SUFFIXES = ["s", "ed", "ly", "e", "ick", "aff", "able"]
MANY_WORDS = [" ".join("jump" + a + b + c for a in SUFFIXES for b in SUFFIXES for c in SUFFIXES), "the quick fox"]


@pytest.mark.full
@pytest.mark.parametrize("jit_compile", [False, True], ids=["executor", "compiled"])
def test_jit_compile_decides_whether_serving_needs_xla(tmp_path, jit_compile):
    layer = WordPieceLayer(VOCAB, jit_compile=jit_compile)
    path = tmp_path / "module"
    save_ragged(layer, path)
    assert bool(functions_to_compile(path)) == jit_compile
    output = serve(path, MANY_WORDS, signature="encode")
    expected = layer(MANY_WORDS)
    assert output["values"] == expected.flat_values.numpy().tolist()
    assert output["row_lengths"] == expected.row_lengths().numpy().tolist()
    assert output["row_lengths"] == [4 * 7**3, 4]  # "jump" and three suffixes; the, qu, ##ick, fox


@pytest.mark.full
def test_the_serving_process_rejects_non_core_ops(tmp_path):
    """The check above can fail: a graph with a tensorflow-text op does not load in plain TensorFlow."""
    text_ops = pytest.importorskip("tensorflow_text")

    class CaseFold(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def fold(self, texts):
            return {"folded": text_ops.case_fold_utf8(texts)}

    module = CaseFold()
    path = tmp_path / "casefold"
    tf.saved_model.save(module, str(path), signatures={"fold": module.fold})
    with pytest.raises(AssertionError, match="CaseFoldUTF8"):
        serve(path, ["ABC"], signature="fold")
