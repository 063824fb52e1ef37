"""Unigram encoding throughput: UnigramLayer against SentencePiece and tensorflow-text, same run.

    python benchmarks/unigram.py [--rounds 5] [--threads N]

Models: the shared `sentencepiece-test-unigram-en-1000.model`, and a 7,000-piece unigram model that
SentencePiece trains here on wikitext-2 test (default `nmt_nfkc`). Text: the non-empty lines of
wikitext-2 valid, at batch 1024 and batch 1, and with byte offsets (`tokenize_with_offsets`, against
tensorflow-text's) at batch 1024. Every system runs in this process, interleaved, round after round;
the tables show median MB/s (batch 1024) or ms per line (batch 1) and the ratio tfsubword / system
(above 1.0 means tfsubword is faster). Only same-run ratios mean anything.
At batch 1 it also times two floors that any core-op tokenizer pays before it segments anything (a
`tf.function` call; the word split), the bare `tf.while_loop` of a Viterbi pass over the line's
distinct words (the route of larger batches), the lookups of every candidate piece that the route of
a line or two of short words makes before its unrolled pass, and both layers on the one-character
text "a" (what a call costs whatever its text), as shares of tensorflow-text's time per wikitext line.
Text without spaces: the Japanese novel, batch 1024, with an 8,000-piece model SentencePiece trains on
it (every line is one word there, the longest 11,183 characters).
`--threads 1` gives TensorFlow one thread (inter- and intra-op) to compare the work each system does:
tensorflow-text's kernel splits a batch across threads, which the default runs use.

Training: `train_unigram` and SentencePiece's unigram trainer (2 threads), both with identity
normalization, each in its own subprocess, on wikitext-2 test at 7,000 pieces (SentencePiece refuses
8,000 there: "Vocabulary size too high"): wall time, peak RSS, and tokens per line on wikitext-2 valid
with each system's own encoder.
"""

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
from _data import shared_data  # noqa: E402
from _timing import measure  # noqa: E402

from tfsubword import UnigramLayer  # noqa: E402

DATA = shared_data()
OURS, THEIRS = "tfsubword UnigramLayer", "tf-text SentencepieceTokenizer"


def lines_of(name):
    with open(DATA / name, encoding="utf-8") as file:
        return [line.rstrip("\n") for line in file if line.strip()]


def models():
    import sentencepiece as spm

    trained = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines_of("wikitext2-test.txt")),
        model_writer=trained,
        model_type="unigram",
        vocab_size=7000,
        minloglevel=2,
    )
    return {
        "shared en-1000": (DATA / "sentencepiece-test-unigram-en-1000.model").read_bytes(),
        "wikitext 7k": trained.getvalue(),
    }


def systems(model):
    """name -> encode(list of str) for one model."""
    import sentencepiece as spm

    found = {}
    layer = UnigramLayer(model)
    ours = tf.function(layer, input_signature=[tf.TensorSpec([None], tf.string)])
    found[OURS] = lambda texts: ours(tf.constant(texts))
    processor = spm.SentencePieceProcessor(model_proto=model)
    found["SentencePiece (C++, Python API)"] = processor.encode
    try:
        import tensorflow_text as text_ops

        tokenizer = text_ops.SentencepieceTokenizer(model)
        theirs = tf.function(tokenizer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
        found[THEIRS] = lambda texts: theirs(tf.constant(texts))
    except ImportError:
        print("tensorflow-text not installed: skipped")
    return found


def offsets_systems(model):
    """name -> encode with byte offsets (list of str), for the systems that give them in a graph."""
    layer = UnigramLayer(model)
    ours = tf.function(layer.tokenize_with_offsets, input_signature=[tf.TensorSpec([None], tf.string)])
    found = {OURS: lambda texts: ours(tf.constant(texts))}
    try:
        import tensorflow_text as text_ops

        tokenizer = text_ops.SentencepieceTokenizer(model)
        theirs = tf.function(tokenizer.tokenize_with_offsets, input_signature=[tf.TensorSpec([None], tf.string)])
        found[THEIRS] = lambda texts: theirs(tf.constant(texts))
    except ImportError:
        pass
    return found


def floors(model):
    """Costs that any tokenizer built from core TensorFlow ops pays at batch 1 before it segments
    anything: calling a `tf.function`, and splitting the line into words (`tf.strings.split`, the first
    op of a split-by-whitespace model). tensorflow-text does all of its work in one C++ kernel. And what
    a Viterbi pass position by position costs in a `tf.while_loop`: a bare forward pass over the
    line's distinct words (16 candidate pieces ending at each position, SentencePiece's longest by
    default; no piece lookup, no walk back), one step per character of the longest. That one is no
    floor for `UnigramLayer` at batch 1, which unrolls the pass there (`Lattice.unrolled_paths`).
    The floor of that route: the split, the distinct words, and each of their substrings of up to 16
    characters looked up in a table of the model's pieces, which is what the unrolled pass reads
    before its first step (and where the loop walks a trie instead)."""
    signature = [tf.TensorSpec([None], tf.string)]
    # A lambda: `tf.function(tf.strings.length)` on the op's own wrapper measured 0.08 ms slower per call.
    call = tf.function(lambda texts: tf.strings.length(texts), input_signature=signature)
    split = tf.function(lambda texts: tf.strings.split(texts).row_splits, input_signature=signature)
    forward = tf.function(forward_pass, input_signature=signature)
    pieces = UnigramLayer(model).get_vocabulary()
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(pieces, tf.range(len(pieces))), -1)
    lookups = tf.function(lambda texts: piece_lookups(texts, table)[0], input_signature=signature)
    unrolled = tf.function(lambda texts: unrolled_pass(*piece_lookups(texts, table)), input_signature=signature)
    return {
        "a tf.function call (one `tf.strings.length`)": lambda texts: call(tf.constant(texts)),
        "a tf.function call with `tf.strings.split`": lambda texts: split(tf.constant(texts)),
        "the split, its distinct words and a bare forward pass in a `tf.while_loop`": lambda texts: forward(
            tf.constant(texts)
        ),
        "the split, its distinct words and their substrings looked up as pieces": lambda texts: lookups(
            tf.constant(texts)
        ),
        "the same lookups and a bare forward pass unrolled over 16 positions": lambda texts: unrolled(
            tf.constant(texts)
        ),
    }


def piece_lookups(texts, table, width=16):
    """The id of each substring of up to `width` characters of each distinct word (with its `▁`),
    -1 if it is no piece: every candidate piece of a Viterbi pass, found with one lookup, as in
    `Lattice.unrolled_paths`, but with no grid of scores, no pass and no walk back. Also the
    number of distinct words."""
    words, _ = tf.unique(tf.strings.split(texts).flat_values)
    words = tf.strings.join(["\u2581", words])
    lengths = tf.strings.length(words, unit="UTF8_CHAR")
    # (word, start, length - 1) for every substring that fits in its word.
    starts = tf.range(tf.reduce_max(tf.concat([[0], lengths], axis=0)))
    fits = starts[None, :, None] + tf.range(1, width + 1)[None, None, :] <= lengths[:, None, None]
    where = tf.where(fits)
    substrings = tf.strings.substr(
        tf.gather(words, where[:, 0]),
        tf.cast(where[:, 1], tf.int32),
        tf.cast(where[:, 2], tf.int32) + 1,
        unit="UTF8_CHAR",
    )
    return table.lookup(substrings), tf.size(words)


def unrolled_pass(found, columns, steps=16, width=16):
    """After `piece_lookups`, the pass of `Lattice.unrolled_paths` over its fewest positions, one
    column per distinct word, in its ops (a window of the best scores stacked, the scores of the
    pieces ending there added, the best taken). Every cell scores the first id found (read, so that
    nothing is constant for the graph optimizer to fold away): no grid filled, no walk back."""
    first = tf.cast(tf.concat([found[:1], [0]], axis=0)[0], tf.float64)
    scores = tf.unstack(tf.fill([steps, columns, width], first), num=steps)
    best = [tf.fill([columns], tf.constant(-1e300, tf.float64))] * (width - 1) + [tf.zeros([columns], tf.float64)]
    for position in range(steps):
        best.append(tf.reduce_max(tf.stack(best[position : position + width], axis=1) + scores[position], axis=1))
    return best[-1]


def forward_pass(texts, width=16):
    """The best score at each position of each distinct word (with its `▁`), from scores of 0 for
    every piece: the loop of a Viterbi encoder in core ops, as lean as `UnigramLayer`'s (a window of
    the last `width` best scores per word, two steps per loop iteration) but for none of its work."""
    words, _ = tf.unique(tf.strings.split(texts).flat_values)
    steps = tf.reduce_max(tf.concat([[0], tf.strings.length(words, unit="UTF8_CHAR") + 1], axis=0))
    steps += steps % 2
    count = tf.size(words)
    scores = tf.zeros([steps, width, count])  # of the piece of each length that ends at each position
    window = tf.concat([tf.fill([width - 1, count], -1e30), tf.zeros([1, count])], axis=0)

    def step(t, window, winners):
        candidates = scores[t] + window
        window = tf.concat([window[1:], tf.reduce_max(candidates, axis=0)[None]], axis=0)
        return t + 1, window, winners.write(t, tf.argmax(candidates, axis=0, output_type=tf.int32))

    looped = tf.while_loop(
        lambda t, *_: t < steps, lambda *state: step(*step(*state)), (0, window, tf.TensorArray(tf.int32, size=steps))
    )
    return looped[1][-1], looped[2].stack()


def japanese_table(rounds):
    import sentencepiece as spm

    lines = lines_of("wagahaiwa_nekodearu.txt")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, model_type="unigram", vocab_size=8000, minloglevel=2
    )
    batched = measure(systems(model.getvalue()), [lines[i : i + 1024] for i in range(0, len(lines), 1024)], rounds)
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    print(f"\nJapanese novel ({len(lines)} lines, {megabytes:.2f} MB), 8k model trained on it")
    print_rates("batch 1024", batched, megabytes)


def print_rates(title, seconds, megabytes):
    """A table of MB/s from `name -> seconds` for `megabytes` of text, and each ratio to tfsubword."""
    print(f"| {title} | MB/s | tfsubword / system |\n|---|---:|---:|")
    for name, taken in seconds.items():
        print(f"| {name} | {megabytes / taken:.2f} | {taken / seconds[OURS]:.2f}x |")


TRAIN_SIZE = 7000


def train_one(system):
    """Train in this process; print time, peak RSS and tokens per line as JSON."""
    import sentencepiece as spm

    lines, valid = lines_of("wikitext2-test.txt"), lines_of("wikitext2-valid.txt")
    start = time.perf_counter()
    if system == "tfsubword":
        from tfsubword import train_unigram

        vocabulary = train_unigram(
            files=[str(DATA / "wikitext2-test.txt")],
            vocab_size=TRAIN_SIZE,
            normalization="identity",
            show_progress=False,
        )
        seconds = time.perf_counter() - start
        tokens = sum(map(len, UnigramLayer(vocabulary)(valid).to_list()))
        size = len(vocabulary)
    else:
        model = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines),
            model_writer=model,
            model_type="unigram",
            vocab_size=TRAIN_SIZE,
            normalization_rule_name="identity",
            num_threads=2,
            minloglevel=2,
        )
        seconds = time.perf_counter() - start
        processor = spm.SentencePieceProcessor(model_proto=model.getvalue())
        tokens = sum(map(len, processor.encode(valid)))
        size = processor.get_piece_size()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak, "tokens_per_line": tokens / len(valid), "pieces": size}))


def training_table(rounds):
    results = {"tfsubword": [], "SentencePiece": []}
    for _ in range(rounds):
        for system in results:
            out = subprocess.run([sys.executable, __file__, "--train-one", system], capture_output=True, text=True)
            if out.returncode:
                sys.exit(out.stderr[-3000:])
            results[system].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"\ntraining on wikitext-2 test, {TRAIN_SIZE} pieces ({rounds} rounds, medians; peak RSS includes imports)")
    print("| trainer | seconds | peak RSS MB | tokens/line (valid) | pieces |\n|---|---:|---:|---:|---:|")
    medians = {}
    for system, runs in results.items():
        medians[system] = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        m = medians[system]
        print(
            f"| {system} | {m['seconds']:.2f} | {m['peak_mb']:.0f} | {m['tokens_per_line']:.2f} | {m['pieces']:.0f} |"
        )
    ours, theirs = medians["tfsubword"], medians["SentencePiece"]
    print(
        f"time {ours['seconds'] / theirs['seconds']:.2f}x SentencePiece's, "
        f"memory {ours['peak_mb'] / theirs['peak_mb']:.2f}x, "
        f"tokens per line {ours['tokens_per_line'] / theirs['tokens_per_line']:.3f}x"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--single", type=int, default=300, help="lines encoded one at a time")
    parser.add_argument("--threads", type=int, help="TensorFlow's inter- and intra-op threads (default: its own)")
    parser.add_argument("--train-one", choices=("tfsubword", "SentencePiece"), help=argparse.SUPPRESS)
    parser.add_argument("--skip-encoding", action="store_true")
    parser.add_argument("--skip-training", action="store_true")
    args = parser.parse_args()
    if args.threads:
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    if args.train_one:
        return train_one(args.train_one)
    if not args.skip_training:
        training_table(min(args.rounds, 3))
    if args.skip_encoding:
        return
    lines = lines_of("wikitext2-valid.txt")
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    threads = f"{args.threads} TensorFlow thread(s)" if args.threads else "TensorFlow's default threads"
    print(f"{len(lines)} lines, {megabytes:.2f} MB of wikitext-2 valid; {args.rounds} rounds, medians; {threads}")
    for model_name, model in models().items():
        found = systems(model)
        batched = measure(found, [lines[i : i + 1024] for i in range(0, len(lines), 1024)], args.rounds)
        floor = floors(model)
        single = measure({**found, **floor}, [[line] for line in lines[: args.single]], args.rounds)
        tiny = measure(
            {name: found[name] for name in (OURS, THEIRS) if name in found}, [["a"]] * args.single, args.rounds
        )
        print(f"\n{model_name}")
        print_rates("batch 1024", batched, megabytes)
        print("\n| batch 1 | ms per line | tfsubword / system |\n|---|---:|---:|")
        for name in found:
            print(f"| {name} | {1000 * single[name] / args.single:.2f} | {single[name] / single[OURS]:.2f}x |")
        if THEIRS in single:
            print(
                f"\n| batch 1, floors in core ops and a loop | ms per line | share of {THEIRS}'s time |"
                "\n|---|---:|---:|"
            )
            for name in floor:
                print(f"| {name} | {1000 * single[name] / args.single:.3f} | {single[name] / single[THEIRS]:.0%} |")
            print(
                f'\n| batch 1, the text "a" | ms per call | share of {THEIRS}\'s time per wikitext line |'
                "\n|---|---:|---:|"
            )
            for name in tiny:
                print(f"| {name} | {1000 * tiny[name] / args.single:.3f} | {tiny[name] / single[THEIRS]:.0%} |")
        with_offsets = measure(
            offsets_systems(model), [lines[i : i + 1024] for i in range(0, len(lines), 1024)], args.rounds
        )
        print()
        print_rates("tokenize_with_offsets, batch 1024", with_offsets, megabytes)
    japanese_table(args.rounds)


if __name__ == "__main__":
    main()
