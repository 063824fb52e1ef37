"""Byte-level BPE: training and encoding, tfsubword against Hugging Face, SentencePiece and keras-hub.

    python benchmarks/bpe.py [--rounds 5] [--sizes 8000 30000] [--skip-training] [--skip-encoding]

Training, on wikitext-2 test+valid (2.4 MB), each run in its own subprocess (medians of 3 rounds):
`train_bpe`, Hugging Face's `ByteLevelBPETokenizer.train` (with min_frequency=1, tfsubword's default;
Hugging Face's own default is 2) and SentencePiece's BPE trainer. Wall time of the training call
(reading and counting included, imports not), peak RSS of the subprocess (imports included: TensorFlow
is about 540 MB of it here), tokens returned.

Encoding: a byte-level vocabulary that Hugging Face trains here on wikitext-2 test, 30,000 tokens; the
non-empty lines of wikitext-2 valid at batch 1024 and batch 1. `BPELayer` and keras-hub's
`BytePairTokenizer`, each in a `tf.function`, and Hugging Face's `encode_batch` on one thread, run in
this process, interleaved, round after round; medians, and the ratio tfsubword / system (above 1.0:
tfsubword is faster). Only same-run ratios mean anything.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["RAYON_NUM_THREADS"] = "1"  # Hugging Face tokenizers: one thread

from _data import shared_data  # noqa: E402
from _timing import measure  # noqa: E402

DATA = shared_data()
WIKITEXT = [DATA / "wikitext2-test.txt", DATA / "wikitext2-valid.txt"]
TRAINERS = ("tfsubword", "Hugging Face", "SentencePiece BPE")


def lines_of(path):
    with open(path, encoding="utf-8") as file:
        return [line.rstrip("\n") for line in file if line.strip()]


def train_one(system, size):
    """Train in this process; print seconds, peak RSS and tokens as JSON."""
    files = [str(path) for path in WIKITEXT]
    if system == "tfsubword":
        import tfsubword.text.byte_level  # noqa: F401  (loads TensorFlow: an import, not training)
        import tfsubword.train.counting  # noqa: F401
        from tfsubword import train_bpe

        start = time.perf_counter()
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vocabulary, _ = train_bpe(files=files, vocab_size=size, show_progress=False)
        tokens = len(vocabulary)
    elif system == "Hugging Face":
        from tokenizers import ByteLevelBPETokenizer

        start = time.perf_counter()
        tokenizer = ByteLevelBPETokenizer()
        tokenizer.train(files, vocab_size=size, min_frequency=1, special_tokens=["<|endoftext|>"], show_progress=False)
        tokens = tokenizer.get_vocab_size()
    else:
        import io

        import sentencepiece as spm

        start = time.perf_counter()
        model = io.BytesIO()
        try:
            spm.SentencePieceTrainer.train(
                input=",".join(files), model_writer=model, model_type="bpe", vocab_size=size, minloglevel=2
            )
            tokens = size
        except RuntimeError as error:
            tokens = f"failed: {str(error).splitlines()[0][:60]}"
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak, "tokens": tokens}))


def training_table(sizes, rounds):
    print(f"training on wikitext-2 test+valid ({rounds} rounds per cell, medians; peak RSS includes imports)")
    print("| trainer | vocab_size | seconds | peak RSS MB | tokens | tfsubword time / system | memory ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        runs = {system: [] for system in TRAINERS}
        for _ in range(rounds):
            for system in TRAINERS:
                out = subprocess.run(
                    [sys.executable, __file__, "--train-one", system, str(size)], capture_output=True, text=True
                )
                if out.returncode:
                    sys.exit(out.stderr[-3000:])
                runs[system].append(json.loads(out.stdout.strip().splitlines()[-1]))
        medians = {
            system: (
                statistics.median(r["seconds"] for r in found),
                statistics.median(r["peak_mb"] for r in found),
                found[0]["tokens"],
            )
            for system, found in runs.items()
        }
        ours = medians["tfsubword"]
        for system, (seconds, peak, tokens) in medians.items():
            print(
                f"| {system} | {size} | {seconds:.2f} | {peak:.0f} | {tokens} | {ours[0] / seconds:.2f}x "
                f"| {ours[1] / peak:.2f}x |",
                flush=True,
            )


def encoders(directory):
    """name -> encode(list of str), for a vocabulary Hugging Face trains on wikitext-2 test."""
    import keras_hub
    import tensorflow as tf
    from tokenizers import ByteLevelBPETokenizer

    from tfsubword import BPELayer

    trainer = ByteLevelBPETokenizer()
    trainer.train(
        [str(WIKITEXT[0])], vocab_size=30000, min_frequency=1, special_tokens=["<|endoftext|>"], show_progress=False
    )
    trainer.save_model(directory)
    vocab, merges = os.path.join(directory, "vocab.json"), os.path.join(directory, "merges.txt")
    found = {}
    layer = BPELayer(vocab, merges)
    ours = tf.function(layer, input_signature=[tf.TensorSpec([None], tf.string)])
    found["tfsubword BPELayer"] = lambda texts: ours(tf.constant(texts))
    with open(vocab, encoding="utf-8") as file:
        vocabulary = json.load(file)
    with open(merges, encoding="utf-8") as file:
        merge_lines = [line for line in file.read().split("\n")[1:] if line]
    hub = keras_hub.tokenizers.BytePairTokenizer(vocabulary=vocabulary, merges=merge_lines)
    theirs = tf.function(hub, input_signature=[tf.TensorSpec([None], tf.string)])
    found["keras-hub BytePairTokenizer"] = lambda texts: theirs(tf.constant(texts))
    reference = ByteLevelBPETokenizer(vocab, merges)
    found["HF tokenizers 1 thread"] = reference.encode_batch
    return found, len(vocabulary)


def encoding_tables(rounds, single):
    lines = lines_of(WIKITEXT[1])
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    with tempfile.TemporaryDirectory() as directory:
        found, size = encoders(directory)
        batched = measure(found, [lines[i : i + 1024] for i in range(0, len(lines), 1024)], rounds)
        one_by_one = measure(found, [[line] for line in lines[:single]], rounds)
    ours = "tfsubword BPELayer"
    print(
        f"\nencoding {len(lines)} lines, {megabytes:.2f} MB of wikitext-2 valid, {size}-token vocabulary; "
        f"{rounds} rounds, medians"
    )
    print("| batch 1024 | MB/s | tfsubword / system |\n|---|---:|---:|")
    for name, seconds in batched.items():
        print(f"| {name} | {megabytes / seconds:.2f} | {seconds / batched[ours]:.2f}x |")
    print("\n| batch 1 | ms per line | tfsubword / system |\n|---|---:|---:|")
    for name, seconds in one_by_one.items():
        print(f"| {name} | {1000 * seconds / single:.2f} | {seconds / one_by_one[ours]:.2f}x |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[8000, 30000])
    parser.add_argument("--single", type=int, default=300, help="lines encoded one at a time")
    parser.add_argument("--skip-training", action="store_true")
    parser.add_argument("--skip-encoding", action="store_true")
    parser.add_argument("--train-one", nargs=2, metavar=("SYSTEM", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.train_one:
        return train_one(args.train_one[0], int(args.train_one[1]))
    if not WIKITEXT[0].is_file():
        sys.exit(f"reference data not found in {DATA} (set TFSUBWORD_SHARED_DATA)")
    if not args.skip_training:
        training_table(args.sizes, min(args.rounds, 3))
    if not args.skip_encoding:
        encoding_tables(args.rounds, args.single)


if __name__ == "__main__":
    main()
