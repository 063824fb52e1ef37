"""What shipping a tokenizer costs: SavedModel size, export time, and cold load + first call.

    python benchmarks/export.py [--layers wordpiece unigram bpe] [--rounds 1]

For each layer, in a fresh subprocess: build it, wrap it in a `keras.Sequential` model with
`sequence_length=128` (dense ids), and time `model.export(dir)`; the folder's size in bytes is the
SavedModel's. Then a second fresh subprocess that imports only `tensorflow` times
`tf.saved_model.load(dir)` plus the first call of `serve` on one short text (TensorFlow's own import is
timed apart: every TensorFlow user pays it).

Vocabularies: the BERT uncased vocabulary (30,522 tokens) for `WordPieceLayer`, the SentencePiece test
model `sentencepiece-test-unigram-en-1000.model` (1,000 pieces, `nfkc`) for `UnigramLayer`, and a
30,000-token byte-level vocabulary that Hugging Face trains here on wikitext-2 test for `BPELayer`.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from _data import shared_data

DATA = shared_data()
LAYERS = ("wordpiece", "unigram", "bpe")
TEXT = "The quick brown fox, naïvely: jumps over 12 lazy dogs!"

_LOAD = """
import json, sys, time
start = time.perf_counter()
import tensorflow as tf
imported = time.perf_counter()
model = tf.saved_model.load(sys.argv[1])
loaded = time.perf_counter()
ids = model.serve(tf.constant([sys.argv[2]]))
called = time.perf_counter()
print(json.dumps({"import": imported - start, "load": loaded - imported, "first_call": called - loaded,
                  "ids": ids.numpy().tolist()}))
"""


def bpe_files(folder):
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train(
        [str(DATA / "wikitext2-test.txt")],
        vocab_size=30000,
        min_frequency=2,
        special_tokens=["<|endoftext|>"],
        show_progress=False,
    )
    tokenizer.save_model(str(folder))
    return str(pathlib.Path(folder) / "vocab.json"), str(pathlib.Path(folder) / "merges.txt")


def export_one(name, export_dir, work_dir):
    """Build, export and report (in this process) as JSON."""
    import keras
    import tensorflow as tf

    import tfsubword

    if name == "wordpiece":
        layer = tfsubword.WordPieceLayer(str(DATA / "bert-base-uncased-vocab.txt"), sequence_length=128)
    elif name == "unigram":
        layer = tfsubword.UnigramLayer(str(DATA / "sentencepiece-test-unigram-en-1000.model"), sequence_length=128)
    else:
        layer = tfsubword.BPELayer(*bpe_files(work_dir), sequence_length=128)
    model = keras.Sequential([keras.Input(shape=(), dtype="string"), layer])
    start = time.perf_counter()
    model.export(export_dir, verbose=False)
    seconds = time.perf_counter() - start
    size = sum(path.stat().st_size for path in pathlib.Path(export_dir).rglob("*") if path.is_file())
    ids = model(tf.constant([TEXT])).numpy().tolist()
    print(json.dumps({"export": seconds, "bytes": size, "ids": ids}))


def run_json(command):
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-3000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", nargs="+", choices=LAYERS, default=list(LAYERS))
    parser.add_argument("--rounds", type=int, default=1, help="exports and loads per layer; medians are shown")
    parser.add_argument("--one", nargs=3, metavar=("LAYER", "EXPORT_DIR", "WORK_DIR"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.one:
        export_one(*arguments.one)
        return
    print("| layer | SavedModel MB | export s | cold load s | first call s | load + first call s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in arguments.layers:
        rows = []
        for _ in range(arguments.rounds):
            with tempfile.TemporaryDirectory() as work:
                export_dir = os.path.join(work, "exported")
                exported = run_json([sys.executable, __file__, "--one", name, export_dir, work])
                loaded = run_json([sys.executable, "-c", _LOAD, export_dir, TEXT])
                if loaded["ids"] != exported["ids"]:
                    raise RuntimeError(f"{name}: the served ids differ from the model's")
                rows.append((exported["bytes"] / 1e6, exported["export"], loaded["load"], loaded["first_call"]))
        mb, export, load, call = (sorted(column)[len(column) // 2] for column in zip(*rows))
        print(f"| {name} | {mb:.2f} | {export:.1f} | {load:.2f} | {call:.2f} | {load + call:.2f} |", flush=True)


if __name__ == "__main__":
    main()
