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

answers = []
for path, signature, inputs in json.loads(sys.stdin.read()):
    model = tf.saved_model.load(path)  # held while its signature runs
    function = model.signatures[signature]
    if isinstance(inputs, dict):  # named inputs
        outputs = function(**{{k: tf.constant(v, tf.string) for k, v in inputs.items()}})
    else:
        outputs = function(tf.constant(inputs, tf.string))
    answers.append({{k: v.numpy().tolist() for k, v in outputs.items()}})
loaded = sorted(name for name in sys.modules if name.split(".")[0] in {blocked!r})
print(json.dumps({{"answers": answers, "loaded": loaded}}))
"""


def serve(path, texts, signature="serving_default"):
    """Call `signature` of the SavedModel at `path` on `texts` (a list, or a dict of named lists) in a
    plain-TensorFlow subprocess."""
    return serve_each([(path, texts, signature)])[0]


def serve_each(requests):
    """The outputs of each `(path, texts, signature)` in `requests`, all served from one plain-TensorFlow
    subprocess (importing TensorFlow takes seconds)."""
    jobs = [(str(path), signature, texts) for path, texts, signature in requests]
    result = subprocess.run(
        [sys.executable, "-c", _SERVER.format(blocked=BLOCKED)],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=jobs[0][0],
    )
    if result.returncode != 0:
        raise AssertionError(f"serving process failed:\n{result.stderr[-4000:]}")
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    if answer["loaded"]:
        raise AssertionError(f"the serving process imported {answer['loaded']}")
    return answer["answers"]


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
