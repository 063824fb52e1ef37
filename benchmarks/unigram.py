"""Unigram encoding throughput: UnigramLayer against SentencePiece and tensorflow-text, same run.

    python benchmarks/unigram.py [--rounds 5]

Models: the shared `sentencepiece-test-unigram-en-1000.model`, and an 8,000-piece unigram model that
SentencePiece trains here on wikitext-2 test (default `nmt_nfkc`). Text: the non-empty lines of
wikitext-2 valid, at batch 1024 and batch 1. Every system runs in this process, interleaved, round
after round; the tables show median MB/s (batch 1024) or ms per line (batch 1) and the ratio
tfsubword / system (above 1.0 means tfsubword is faster). Only same-run ratios mean anything.

(`train_unigram` does not exist yet, so there is no training comparison here.)
"""

import argparse
import io
import os
import pathlib
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from tfsubword import UnigramLayer  # noqa: E402


def shared_data():
    if "TFSUBWORD_SHARED_DATA" in os.environ:
        return pathlib.Path(os.environ["TFSUBWORD_SHARED_DATA"])
    for directory in pathlib.Path(__file__).resolve().parents:
        if (directory / "shared" / "data").is_dir():
            return directory / "shared" / "data"
    sys.exit("shared data not found: set TFSUBWORD_SHARED_DATA")


DATA = shared_data()


def lines_of(name):
    with open(DATA / name, encoding="utf-8") as file:
        return [line.rstrip("\n") for line in file if line.strip()]


def models():
    import sentencepiece as spm

    trained = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines_of("wikitext2-test.txt")), model_writer=trained, model_type="unigram",
        vocab_size=8000, minloglevel=2,
    )
    return {"shared en-1000": (DATA / "sentencepiece-test-unigram-en-1000.model").read_bytes(), "wikitext 8k": trained.getvalue()}


def systems(model):
    """name -> encode(list of str) for one model."""
    import sentencepiece as spm

    found = {}
    layer = UnigramLayer(model)
    ours = tf.function(layer, input_signature=[tf.TensorSpec([None], tf.string)])
    found["tfsubword UnigramLayer"] = lambda texts: ours(tf.constant(texts))
    processor = spm.SentencePieceProcessor(model_proto=model)
    found["SentencePiece (C++, Python API)"] = processor.encode
    try:
        import tensorflow_text as text_ops

        tokenizer = text_ops.SentencepieceTokenizer(model)
        theirs = tf.function(tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
        found["tf-text SentencepieceTokenizer"] = lambda texts: theirs(tf.constant(texts))
    except ImportError:
        print("tensorflow-text not installed: skipped")
    return found


def measure(found, batches, rounds):
    timings = {name: [] for name in found}
    for encode in found.values():
        encode(batches[0])  # trace and warm up
    for _ in range(rounds):
        for name, encode in found.items():
            start = time.perf_counter()
            for batch in batches:
                encode(batch)
            timings[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in timings.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--single", type=int, default=300, help="lines encoded one at a time")
    args = parser.parse_args()
    lines = lines_of("wikitext2-valid.txt")
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    print(f"{len(lines)} lines, {megabytes:.2f} MB of wikitext-2 valid; {args.rounds} rounds, medians")
    for model_name, model in models().items():
        found = systems(model)
        batched = measure(found, [lines[i : i + 1024] for i in range(0, len(lines), 1024)], args.rounds)
        single = measure(found, [[line] for line in lines[: args.single]], args.rounds)
        ours = "tfsubword UnigramLayer"
        print(f"\n{model_name}\n| batch 1024 | MB/s | tfsubword / system |\n|---|---:|---:|")
        for name, seconds in batched.items():
            print(f"| {name} | {megabytes / seconds:.2f} | {batched[name] / batched[ours]:.2f}x |")
        print("\n| batch 1 | ms per line | tfsubword / system |\n|---|---:|---:|")
        for name, seconds in single.items():
            print(f"| {name} | {1000 * seconds / args.single:.2f} | {single[name] / single[ours]:.2f}x |")


if __name__ == "__main__":
    main()
