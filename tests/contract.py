"""The contract every tfsubword layer keeps, checked the same way for each (as keras-hub's
`run_preprocessing_layer_test` does for its layers):

- `get_config` holds every constructor argument: a non-default value of each survives `from_config`;
- a direct call, `ds.map(layer)` one element at a time and `ds.batch(n).map(layer)` agree;
- a model holding the layer, saved as `.keras` and loaded again, gives the same outputs;
- the model exported with `model.export` gives the same outputs from a process that imports only
  TensorFlow (`tests/serving.py`).
"""

import inspect

import keras
import numpy as np
import tensorflow as tf

from tests.serving import serve_each

# Constructor arguments that are not config: the vocabulary (and BPE's merges) are saved as assets.
ASSETS = ("vocabulary", "merges", "model")


def as_lists(outputs):
    """Outputs as nested Python lists (dicts of them for dict outputs), to compare across routes."""
    if isinstance(outputs, dict):
        return {key: as_lists(value) for key, value in outputs.items()}
    if isinstance(outputs, tf.RaggedTensor):
        return outputs.to_list()
    return np.asarray(outputs).tolist()


def check_config(layer_class, make, changed):
    """`changed` gives a non-default value for every constructor argument but the assets (a test fails
    when an argument is added without one); `make(**arguments)` builds a layer with a vocabulary. Each
    value must be in `get_config` and survive `from_config`."""
    parameters = set(inspect.signature(layer_class.__init__).parameters) - {"self", "kwargs", *ASSETS}
    assert set(changed) == parameters | {"name"}, f"arguments without a non-default value: {parameters - set(changed)}"
    for name, value in changed.items():
        config = make(**{name: value}).get_config()
        assert all(config.get(asset) is None for asset in ASSETS), "assets are not config"
        restored = layer_class.from_config(config)
        if name == "dtype":  # Keras keeps a dtype policy in the config
            assert restored.compute_dtype == value
        elif isinstance(value, keras.layers.Layer):  # a nested layer is kept as its serialized config
            assert config[name] == keras.layers.serialize(value), f"{name} did not reach get_config"
        else:
            assert _plain(config[name]) == _plain(value), f"{name} did not reach get_config"
        assert restored.get_config() == config, f"{name} did not survive from_config"


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def check_calls_agree(layer, inputs, batch_size=3):
    """A direct call on `inputs` (a list of elements, or a tuple of such lists for several inputs)
    equals the layer mapped over a dataset one element at a time, and a batch at a time."""
    as_tensor = tuple(tf.constant(part) for part in inputs) if isinstance(inputs, tuple) else tf.constant(inputs)
    direct = as_lists(layer(as_tensor))
    dataset = tf.data.Dataset.from_tensor_slices(as_tensor)
    # One pipeline runs both maps: each new iterator instantiates the layer's graph (seconds).
    both = tf.data.Dataset.zip(dataset.map(_call(layer)), dataset.batch(batch_size).map(_call(layer)).unbatch())
    single, batched = zip(*((as_lists(one), as_lists(row)) for one, row in both))
    assert _rows(list(single)) == _rows_of(direct), "ds.map(layer) differs from a direct call"
    assert _rows(list(batched)) == _rows_of(direct), "ds.batch().map(layer) differs from a direct call"


def _call(layer):
    return lambda *parts: layer(parts if len(parts) > 1 else parts[0])


def _rows_of(outputs):
    """A batch's outputs as one entry per row."""
    if isinstance(outputs, dict):
        keys = sorted(outputs)
        return [dict(zip(keys, row)) for row in zip(*(outputs[key] for key in keys))]
    return outputs


def _rows(per_element):
    return (
        per_element
        if not per_element or not isinstance(per_element[0], dict)
        else [{key: row[key] for key in sorted(row)} for row in per_element]
    )


def _model(layer, inputs):
    if isinstance(inputs, tuple):
        symbolic = tuple(keras.Input(shape=(), dtype="string") for _ in inputs)
    else:
        symbolic = keras.Input(shape=(), dtype="string")
    return keras.Model(symbolic, layer(symbolic))


def check_keras_saving(layer, inputs, directory):
    """A functional model of the layer, saved as `.keras` and loaded again, gives the same outputs."""
    model = _model(layer, inputs)
    as_tensor = tuple(tf.constant(part) for part in inputs) if isinstance(inputs, tuple) else tf.constant(inputs)
    before = as_lists(model(as_tensor))
    path = directory / "model.keras"
    model.save(path)
    assert as_lists(keras.models.load_model(path)(as_tensor)) == before


def check_serving(layer, texts, directory):
    """The model exported with `model.export` gives the same outputs (dense: give the layer a
    `sequence_length`) in a process that imports only TensorFlow."""
    check_serving_each([layer], texts, directory)


def check_serving_each(layers, texts, directory):
    """`check_serving` for each of `layers`, served from one process."""
    requests, expected = [], []
    for number, layer in enumerate(layers):
        model = _model(layer, texts)
        expected.append(as_lists(model(tf.constant(texts))))
        path = directory / f"exported-{number}"
        model.export(str(path), verbose=False)
        requests.append((path, texts, "serve"))
    for layer, served, wanted in zip(layers, serve_each(requests), expected):
        got = served if isinstance(wanted, dict) else next(iter(served.values()))
        assert got == wanted, f"{layer.name} serves other outputs"


def check_contract(layer_class, make, changed, inputs, directory, serve_layer=None):
    """Every check above: `make` builds layers with a vocabulary, `changed` is for `check_config`,
    `inputs` for the calls and `.keras` saving; `serve_layer`, if given, is exported and served."""
    check_config(layer_class, make, changed)
    layer = make()
    check_calls_agree(layer, inputs)
    check_keras_saving(layer, inputs, directory)
    if serve_layer is not None:
        check_serving(serve_layer, inputs, directory)
