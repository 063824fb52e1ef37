"""WordPiece encoding throughput: tfsubword against tensorflow-text, keras-hub and Hugging Face, same run.

    python benchmarks/wordpiece_encode.py [--rounds 5] [--profile]

All non-empty lines of wikitext-2 test+valid with the BERT uncased vocabulary, at batch 1024 and batch 1.
The systems run in one process, interleaved, round after round; the table shows the median MB/s over
the rounds and the ratio tfsubword / system (above 1.0 means tfsubword is faster). Only these
same-run ratios mean anything on a shared machine.

--profile also times tfsubword's pipeline cut after each stage, at batch 1024.
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["RAYON_NUM_THREADS"] = "1"  # Hugging Face tokenizers: one thread

import tensorflow as tf  # noqa: E402
from _data import shared_data  # noqa: E402

from tfsubword import WordPieceLayer  # noqa: E402

DATA = shared_data()
VOCAB = DATA / "bert-base-uncased-vocab.txt"
CORPUS = [DATA / "wikitext2-test.txt", DATA / "wikitext2-valid.txt"]


def load_lines():
    lines = []
    for path in CORPUS:
        with open(path, encoding="utf-8") as file:
            lines += [line.rstrip("\n") for line in file if line.strip()]
    return lines


def systems(tokens):
    """name -> (encode one batch of Python strings / a tf.string tensor, input kind)."""
    found = {}
    layer = WordPieceLayer(str(VOCAB))
    ours = tf.function(layer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    found["tfsubword tf.function"] = (ours, "tensor")
    found["tfsubword tf.data"] = (layer, "dataset")

    try:
        import tensorflow_text as text_ops

        fast = text_ops.FastWordpieceTokenizer(tokens, token_out_type=tf.int32, no_pretokenization=False)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def fast_wordpiece(texts):
            texts = text_ops.case_fold_utf8(texts)
            texts = text_ops.normalize_utf8(texts, "NFD")
            texts = tf.strings.regex_replace(texts, r"\p{Mn}", "")
            return fast.tokenize(texts)

        found["tf-text FastWordpiece"] = (fast_wordpiece, "tensor")
    except ImportError as error:
        print(f"skipping tensorflow-text: {error}", file=sys.stderr)

    try:
        import keras_hub

        hub = keras_hub.tokenizers.WordPieceTokenizer(vocabulary=str(VOCAB), lowercase=True, strip_accents=True)
        found["keras-hub WordPiece"] = (
            tf.function(hub.tokenize, input_signature=[tf.TensorSpec([None], tf.string)]),
            "tensor",
        )
    except ImportError as error:
        print(f"skipping keras-hub: {error}", file=sys.stderr)

    try:
        import tokenizers

        hf = tokenizers.Tokenizer.from_file(str(DATA / "bert-base-uncased-tokenizer.json"))
        hf.no_truncation()
        hf.no_padding()
        found["HF tokenizers 1 thread"] = (lambda texts: hf.encode_batch(texts, add_special_tokens=False), "python")
    except ImportError as error:
        print(f"skipping tokenizers: {error}", file=sys.stderr)
    return found


def make_runner(function, kind, lines, batch_size):
    """A no-argument function that encodes all `lines` in batches of `batch_size`.

    A `tf.data` runner pulls the batches from one long-lived iterator over the repeated dataset:
    steady state. Creating an iterator (once per epoch) is timed separately by `iterator_creation`.
    """
    batches = [lines[i : i + batch_size] for i in range(0, len(lines), batch_size)]
    if kind == "python":
        return lambda: [function(batch) for batch in batches]
    if kind == "tensor":
        tensors = [tf.constant(batch) for batch in batches]
        return lambda: [function(tensor) for tensor in tensors]
    iterator = iter(mapped_dataset(function, lines, batch_size).repeat())
    return lambda: [next(iterator) for _ in batches]


def mapped_dataset(function, lines, batch_size):
    """The lines mapped through `function`, with no background prefetching: interleaved with the
    other systems, a prefetching pipeline would work ahead during their turns."""
    dataset = tf.data.Dataset.from_tensor_slices(lines)
    dataset = dataset.map(function) if batch_size == 1 else dataset.batch(batch_size).map(function)
    options = tf.data.Options()
    options.autotune.enabled = False
    options.experimental_optimization.inject_prefetch = False
    return dataset.with_options(options)


def iterator_creation(layer, lines, rounds):
    """Median seconds to create a `tf.data` iterator over the mapped dataset (paid once per epoch)."""
    dataset = mapped_dataset(layer, lines, 1024)
    iter(dataset)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        iter(dataset)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(lines, rounds, batch_size, found):
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    runners = {name: make_runner(function, kind, lines, batch_size) for name, (function, kind) in found.items()}
    for runner in runners.values():  # warm up: tracing, caches
        runner()
    times = {name: [] for name in runners}
    for _ in range(rounds):
        for name, runner in runners.items():
            start = time.perf_counter()
            runner()
            times[name].append(time.perf_counter() - start)
    return {name: megabytes / statistics.median(seconds) for name, seconds in times.items()}, {
        name: statistics.median(seconds) / len(lines) * 1e3 for name, seconds in times.items()
    }


def print_table(batch_size, speeds, latencies):
    ours = speeds["tfsubword tf.function"]
    print(f"\nbatch {batch_size}")
    print("| system | MB/s | ms per line | tfsubword tf.function / system |")
    print("|---|---:|---:|---:|")
    for name, speed in speeds.items():
        print(f"| {name} | {speed:.2f} | {latencies[name]:.3f} | {ours / speed:.2f}x |")


def profile(lines, rounds):
    """Median time of tfsubword's pipeline cut after each stage, batch 1024."""
    layer = WordPieceLayer(str(VOCAB))
    normalizer = layer._normalizer

    def coarse(texts):
        return normalizer.coarse_split(texts)[0]

    def unique(texts):
        return tf.unique(coarse(texts))[0]

    def lookup(texts):
        words = unique(texts)
        return tf.gather(words, tf.reshape(tf.where(layer._segmenter.whole_words.lookup(words) < 0), [-1]))

    def normalized(texts):
        return normalizer.normalize_words(lookup(texts))

    def segmented(texts):
        words = normalized(texts)
        return layer._segmenter.segment(words.flat_values, words.nested_row_splits[1])

    stages = {
        "ASCII lowercase + split": coarse,
        "+ distinct words": unique,
        "+ whole-word lookup": lookup,
        "+ normalize misses": normalized,
        "+ segment misses": segmented,
        "+ assemble (whole layer)": layer.tokenize,
    }
    found = {
        name: (tf.function(function, input_signature=[tf.TensorSpec([None], tf.string)]), "tensor")
        for name, function in stages.items()
    }
    speeds, _ = measure(lines, rounds, 1024, found)
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    print("\nprofile, batch 1024: cumulative pipeline cut after each stage")
    print("| stage | cumulative ms/MB | this stage ms/MB |")
    print("|---|---:|---:|")
    previous = 0.0
    for name, speed in speeds.items():
        cumulative = 1e3 / speed
        print(f"| {name} | {cumulative:.1f} | {cumulative - previous:.1f} |")
        previous = cumulative
    del megabytes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-1-lines", type=int, default=None, help="encode only this many lines at batch 1")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if not VOCAB.is_file():
        sys.exit(f"reference data not found in {DATA} (set TFSUBWORD_SHARED_DATA)")
    lines = load_lines()
    with open(VOCAB, encoding="utf-8") as file:
        tokens = [line.rstrip("\n") for line in file]
    print(
        f"{len(lines)} lines, {sum(len(line.encode()) for line in lines) / 1e6:.2f} MB, {args.rounds} rounds, medians"
    )
    found = systems(tokens)
    print_table(1024, *measure(lines, args.rounds, 1024, found))
    creation = iterator_creation(found["tfsubword tf.data"][0], lines, args.rounds)
    print(f"(tf.data rows are steady state; creating the iterator, once per epoch, takes {creation:.2f} s)")
    print_table(1, *measure(lines[: args.batch_1_lines], args.rounds, 1, found))
    if args.profile:
        profile(lines, args.rounds)


if __name__ == "__main__":
    main()
