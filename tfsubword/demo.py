"""`tfsubword demo`: train a vocabulary, put WordPieceLayer in a Keras model, export it, serve it.

The default corpus is the docstrings of the installed `keras` package, read from its source files
with `ast` (nothing is imported or downloaded, and no third-party text ships with tfsubword). The
exported model is then loaded and called by a fresh Python process that imports only `tensorflow`.
"""

import ast
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

_SERVER = """
import json, sys
import numpy as np
import tensorflow as tf
model = tf.saved_model.load(sys.argv[1])
outputs = model.signatures[sys.argv[2]](tf.constant(json.load(sys.stdin), tf.string))
print(json.dumps({name: value.numpy().tolist() for name, value in outputs.items()}))
"""

SAMPLE = [
    "Keras layers can tokenize text inside the TensorFlow graph.",
    "Unbelievably, the exported model serves from plain TensorFlow!",
]


def serve_in_fresh_process(export_dir, texts, signature="serving_default"):
    """Call a SavedModel's signature on `texts` in a new Python process that imports only tensorflow.

    Returns the signature's outputs as a dict of nested lists. Raises RuntimeError if the process fails.
    """
    result = subprocess.run(
        [sys.executable, "-c", _SERVER, os.fspath(export_dir), signature],
        input=json.dumps(list(texts)),
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"the serving process failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def compare_served(texts, local, served, out=sys.stdout, tolerance=1e-6):
    """Print each text's predictions here and as served; returns whether they all agree within `tolerance`."""
    local, served = np.asarray(local, "float64"), np.asarray(served, "float64")
    for text, here, there in zip(texts, local.tolist(), served.tolist()):
        print(f"  {text!r:36} here {np.round(here, 5).tolist()}  served {np.round(there, 5).tolist()}", file=out)
    same = local.shape == served.shape and bool(np.all(np.abs(local - served) < tolerance))
    print("served predictions match" if same else "served predictions DIFFER", file=out)
    return same


def keras_docstrings(max_bytes=2_000_000):
    """Module, class and function docstrings of the installed keras package, up to `max_bytes`."""
    import keras

    root = pathlib.Path(keras.__file__).parent
    texts, size = [], 0
    for path in sorted(root.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                docstring = ast.get_docstring(node)
                if docstring:
                    texts.append(docstring)
                    size += len(docstring.encode("utf-8"))
                    if size >= max_bytes:
                        return texts
    return texts


def run(vocab_size=8000, min_frequency=5, export_dir=None, out=sys.stdout):
    import keras
    import tensorflow as tf

    from tfsubword import WordPieceLayer, train_wordpiece

    def say(message):
        print(message, file=out, flush=True)

    start = time.monotonic()
    corpus = keras_docstrings()
    say(f"corpus: {len(corpus)} docstrings of the installed keras package ({sum(map(len, corpus)):,} characters)")
    # The seeds' score favours pairs of rare parts: without a minimum frequency, the first merges go to
    # words seen once.
    vocabulary = train_wordpiece(corpus, vocab_size, min_frequency=min_frequency, show_progress=False)
    say(
        f"trained a WordPiece vocabulary of {len(vocabulary)} tokens (min_frequency={min_frequency}), "
        f"e.g. {vocabulary[-6:]}"
    )

    inputs = keras.Input(shape=(), dtype="string", name="text")
    token_ids = WordPieceLayer(vocabulary, sequence_length=24, name="tokenizer")(inputs)
    pooled = keras.layers.GlobalAveragePooling1D()(
        keras.layers.Embedding(len(vocabulary), 16, mask_zero=True)(token_ids)
    )
    model = keras.Model(inputs, {"token_ids": token_ids, "scores": keras.layers.Dense(2)(pooled)})
    tokenizer = model.get_layer("tokenizer")
    expected = tokenizer(tf.constant(SAMPLE)).numpy().tolist()

    with tempfile.TemporaryDirectory() as scratch:
        path = os.fspath(export_dir or os.path.join(scratch, "model"))
        model.export(path, verbose=False)
        say(f"exported the model to {path}; serving it from a process that imports only tensorflow")
        served = serve_in_fresh_process(path, SAMPLE)
    served_ids = served["token_ids"]
    pieces = WordPieceLayer(vocabulary, dtype="string")(tf.constant(SAMPLE)).to_list()
    for text, row in zip(SAMPLE, pieces):
        say(f"  {text!r}\n    -> {' '.join(token.decode('utf-8') for token in row)}")
    same = served_ids == expected
    say(
        f"served token ids {'match' if same else 'DIFFER FROM'} the ids computed in this process "
        f"({time.monotonic() - start:.0f} s)"
    )
    return 0 if same else 1
