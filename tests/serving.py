"""Serve a SavedModel from a fresh process that can import TensorFlow but not tfsubword or any comparator.

Used by the tests to prove that exported models need core TensorFlow only: if the graph used an op
from tensorflow-text (or needed tfsubword's Python code), loading or calling it here would fail.
"""

import json
import subprocess
import sys

BLOCKED = ("tfsubword", "tensorflow_text", "keras_hub", "keras_nlp", "tokenizers", "sentencepiece", "bert")

_SERVER = """
import importlib.abc, json, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError("blocked in the serving process: " + name)
        return None

sys.meta_path.insert(0, Block())
import tensorflow as tf

model = tf.saved_model.load(sys.argv[1])
inputs = json.loads(sys.stdin.read())
if isinstance(inputs, dict):  # named inputs
    outputs = model.signatures[sys.argv[2]](**{{k: tf.constant(v, tf.string) for k, v in inputs.items()}})
else:
    outputs = model.signatures[sys.argv[2]](tf.constant(inputs, tf.string))
loaded = sorted(name for name in sys.modules if name.split(".")[0] in {blocked!r})
print(json.dumps({{"outputs": {{k: v.numpy().tolist() for k, v in outputs.items()}}, "loaded": loaded}}))
"""


def serve(path, texts, signature="serving_default"):
    """Call `signature` of the SavedModel at `path` on `texts` (a list, or a dict of named lists) in a
    plain-TensorFlow subprocess."""
    result = subprocess.run(
        [sys.executable, "-c", _SERVER.format(blocked=BLOCKED), str(path), signature],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(path),
    )
    if result.returncode != 0:
        raise AssertionError(f"serving process failed:\n{result.stderr[-4000:]}")
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    if answer["loaded"]:
        raise AssertionError(f"the serving process imported {answer['loaded']}")
    return answer["outputs"]


def serve_ragged(layer, texts, directory):
    """Save `layer` with `tf.saved_model.save` behind a ragged-to-dense signature, serve it on `texts` in
    a plain-TensorFlow subprocess, and return each row's ids (the padding -1 removed)."""
    import tensorflow as tf

    module = tf.Module()
    module.layer = layer
    module.f = tf.function(
        lambda x: {"ids": layer(x).to_tensor(-1)}, input_signature=[tf.TensorSpec([None], tf.string)]
    )
    tf.saved_model.save(module, str(directory), signatures={"serving_default": module.f})
    return [[i for i in row if i >= 0] for row in serve(directory, texts)["ids"]]
