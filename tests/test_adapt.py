"""`adapt()`: the layers learn their vocabulary from data, Keras's way, with their own trainers.

The vocabularies are the trainers' own on the same lines (the trainers are tested against the seeds and
the references elsewhere); what is checked here is the path from a dataset, an array or a list to the
trainer, the layer's options reaching it, saving and serving after `adapt`, and the errors of bad input.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests import contract
from tests.conftest import nonempty_lines, shared_file
from tests.test_wordpiece import VOCAB
from tfsubword import BPELayer, UnigramLayer, WordPieceLayer, train_bpe, train_unigram, train_wordpiece

# Small vocabularies: the point is the path to the trainer, not the training.
SIZES = {WordPieceLayer: 300, UnigramLayer: 200, BPELayer: 400}


def lines():
    return nonempty_lines(shared_file("botchan.txt"))[:500]


def layer_of(layer_class, **arguments):
    if layer_class is UnigramLayer:  # the identity rules: no seconds deriving NFKC's in each process
        arguments = {"normalization": "identity", **arguments}
    return layer_class(vocab_size=SIZES[layer_class], **arguments)


def trained(layer_class, texts, **arguments):
    """What the layer's trainer learns from `texts`, as the layer's vocabulary (and merges)."""
    size = SIZES[layer_class]
    if layer_class is WordPieceLayer:
        return train_wordpiece(texts, size, show_progress=False, **arguments), None
    if layer_class is UnigramLayer:
        vocabulary = train_unigram(texts, size, normalization="identity", show_progress=False, **arguments)
        return [piece for piece, _ in vocabulary], None
    return train_bpe(texts, size, show_progress=False, **arguments)


def learned(layer):
    return layer.get_vocabulary(), layer.get_merges() if isinstance(layer, BPELayer) else None


SOURCES = ("dataset of [batch, 1] batches", "dataset of texts", "list", "array [n, 1]")


def source(name, texts):
    return {
        "dataset of [batch, 1] batches": lambda: tf.data.Dataset.from_tensor_slices([[t] for t in texts]).batch(64),
        "dataset of texts": lambda: tf.data.Dataset.from_tensor_slices(texts),
        "list": lambda: texts,
        "array [n, 1]": lambda: np.array(texts)[:, None],
    }[name]()


@pytest.mark.parametrize(
    "layer_class, sources",
    [
        (WordPieceLayer, SOURCES),
        (BPELayer, SOURCES),
        (UnigramLayer, ("dataset of [batch, 1] batches",)),  # each unigram training takes a second
        pytest.param(UnigramLayer, SOURCES[1:], marks=pytest.mark.full),
    ],
    ids=lambda value: value.__name__ if isinstance(value, type) else str(len(value)),
)
def test_adapt_learns_the_trainers_vocabulary_from_a_dataset_a_list_and_an_array(layer_class, sources):
    texts = lines()
    expected = trained(layer_class, texts)
    for name in sources:
        data = source(name, texts)
        layer = layer_of(layer_class)
        layer.adapt(data)
        assert learned(layer) == expected, f"adapt from a {name}"
    assert layer.vocabulary_size() == len(expected[0])


@pytest.mark.parametrize("layer_class", [WordPieceLayer, BPELayer], ids=lambda c: c.__name__)
def test_adapt_over_a_shuffled_dataset_learns_the_same_vocabulary(layer_class):
    texts = lines()
    dataset = tf.data.Dataset.from_tensor_slices(texts)
    layer = layer_of(layer_class)
    layer.adapt(dataset.shuffle(len(texts), seed=7, reshuffle_each_iteration=False).batch(40))
    assert learned(layer) == trained(layer_class, texts)


def test_adapt_passes_the_layers_normalization_and_the_trainers_options():
    texts = lines()
    layer = WordPieceLayer(lowercase=False, suffix_indicator="@@", vocab_size=250)
    layer.adapt(texts, min_frequency=3, max_token_length=6)
    expected = train_wordpiece(
        texts, 250, lowercase=False, suffix_indicator="@@", min_frequency=3, max_token_length=6, show_progress=False
    )
    assert layer.get_vocabulary() == expected
    assert "T" in expected and "@@e" in expected  # cased, and the layer's own continuation mark
    assert not any(token.startswith("##") for token in expected)
    assert layer.get_vocabulary() != trained(WordPieceLayer, texts)[0][:250]


def test_adapt_replaces_the_vocabulary_and_encodes_with_the_new_one():
    texts = lines()
    layer = WordPieceLayer(VOCAB, vocab_size=SIZES[WordPieceLayer])
    before = layer(["The cat said hello."]).to_list()
    layer.adapt(texts)
    expected = trained(WordPieceLayer, texts)[0]
    assert layer.get_vocabulary() == expected
    pieces = [expected[i] for i in layer(["The"]).to_list()[0]]
    assert pieces[0] + "".join(piece.removeprefix("##") for piece in pieces[1:]) == "the"
    assert layer(["The cat said hello."]).to_list() != before


def test_adapt_reads_only_steps_batches():
    texts = lines()
    layer = layer_of(BPELayer)
    layer.adapt(tf.data.Dataset.from_tensor_slices(texts).batch(50), steps=4)
    assert learned(layer) == trained(BPELayer, texts[:200])
    layer = layer_of(BPELayer)
    layer.adapt(texts, batch_size=30, steps=5)
    assert learned(layer) == trained(BPELayer, texts[:150])


def test_adapt_gives_the_layers_unknown_token_a_place():
    layer = WordPieceLayer(unknown_token="<unk>", special_tokens=("[PAD]",), vocab_size=100)
    layer.adapt(lines()[:300])
    assert layer.get_vocabulary()[:2] == ["[PAD]", "<unk>"]
    layer = BPELayer(unknown_token="<unk>", vocab_size=300)
    layer.adapt(lines()[:300])
    assert layer.get_vocabulary()[:2] == ["<|endoftext|>", "<unk>"]


def test_adapted_layers_save_as_keras_files(tmp_path):
    texts = lines()
    for layer_class in SIZES:
        layer = layer_of(layer_class)
        layer.adapt(texts[:600])
        directory = tmp_path / layer_class.__name__
        directory.mkdir()
        contract.check_keras_saving(layer, ["The cat said hello.", "Botchan", ""], directory)


@pytest.mark.full
def test_a_model_that_ran_predicts_with_the_new_vocabulary_once_compiled_again():
    """Keras keeps a model's traced `predict` function, and the tables it captured, until `compile`."""
    layer = WordPieceLayer(VOCAB, vocab_size=SIZES[WordPieceLayer], sequence_length=6)
    model = keras.Sequential([keras.Input(shape=(), dtype="string"), layer])
    texts = np.array(["The cat said hello.", "Botchan"], dtype=object)
    before = model.predict(texts, verbose=0).tolist()
    layer.adapt(lines())
    assert model.predict(texts, verbose=0).tolist() == before  # the documented limit
    model.compile()
    assert model.predict(texts, verbose=0).tolist() == layer(texts).numpy().tolist() != before


@pytest.mark.full
def test_adapted_layers_serve_from_plain_tensorflow(tmp_path):
    texts = lines()
    layers = []
    for layer_class in SIZES:
        layer = layer_of(layer_class, sequence_length=12)
        layer.adapt(texts[:600])
        layers.append(layer)
    contract.check_serving_each(layers, ["The cat said hello.", "Botchan", "", "caf\u00e9 \u4e2d!"], tmp_path)


def test_adapt_refuses_bad_data_and_options():
    layer = layer_of(WordPieceLayer)
    cases = [
        (lambda: layer.adapt("one text"), "not one string"),
        (lambda: layer.adapt(np.arange(4)), "must hold strings"),
        (lambda: layer.adapt({"a": 1}), "must be a `tf.data.Dataset`"),
        (lambda: layer.adapt(tf.data.Dataset.range(3)), "dataset of string tensors"),
        (lambda: layer.adapt(tf.data.Dataset.from_tensor_slices(["a"]), batch_size=8), "own batches"),
        (lambda: layer.adapt(["a"], steps=0), "`steps` must be"),
        (lambda: layer.adapt(["a"], vocab_size=10), "`vocab_size`, which is set on the layer"),
        (lambda: layer.adapt(["a"], lowercase=False), "`lowercase`, which is set on the layer"),
        (lambda: layer.adapt(["a"], full_alphabet=True), "not a learning option"),
        (lambda: layer.adapt([]), "no words"),
        (lambda: WordPieceLayer(final_sigma=False).adapt(["a"]), "final_sigma"),
        (lambda: BPELayer(pattern="llama3").adapt(["a"]), "leave pattern at the default"),
        (lambda: UnigramLayer(unknown_token="[UNK]").adapt(["a"]), "leave both at their defaults"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            call()
    with pytest.raises(ValueError, match="`vocab_size` must be"):
        WordPieceLayer(vocab_size=0)
