"""Eager calls, as a notebook or a Python loop makes them: what a layer's first calls cost, when it starts
running its traced graph, and what a call costs then against the same layer in a `tf.function`.

    python benchmarks/eager.py [--calls 200] [--rounds 5]

A fresh layer of each kind (`WordPieceLayer` with BERT's uncased vocabulary, `SentencePieceLayer` with
the shared unigram model, `BPELayer` with a byte-level BPE Hugging Face trains on the mix) is called
eagerly on real lines (the corpora of `realtext.py`, in turn), `--calls` times at batch 1, then at batch
32. Printed: the first call, the median call before the slowest (op by op: the slowest is the one that
traces), the slowest, the total, and the medians of the last
calls, eager and in a `tf.function` (interleaved rounds after the loop); ratio = eager / `tf.function`
(issue 60's bar: at most 1.5 after the first call).
"""

import argparse
import json
import math
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402
from realtext import BEST_CASE, CORPORA, DATA, STRINGS, lines_of  # noqa: E402

import tfsubword  # noqa: E402


def bpe_layer(mix):
    from tokenizers import ByteLevelBPETokenizer

    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(mix, vocab_size=30000, min_frequency=2, special_tokens=["<|endoftext|>"])
    model = json.loads(trainer._tokenizer.to_str())["model"]
    return tfsubword.BPELayer(sorted(model["vocab"], key=model["vocab"].get), model["merges"])


LAYERS = {
    "wordpiece": lambda mix: tfsubword.WordPieceLayer(str(DATA / "bert-base-uncased-vocab.txt")),
    "unigram": lambda mix: tfsubword.SentencePieceLayer(str(DATA / "sentencepiece-test-unigram-en-1000.model")),
    "bpe": bpe_layer,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", nargs="+", choices=list(LAYERS), default=list(LAYERS))
    parser.add_argument("--calls", type=int, default=200, help="eager calls at each batch size")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the last calls, eager against graph")
    arguments = parser.parse_args()
    texts = {name: lines_of(path, 100_000) for name, path in CORPORA.items() if name != BEST_CASE}
    lines = [line for group in zip(*texts.values()) for line in group]
    columns = ["layer", "batch", "first call", "op by op", "slowest call", "all calls", "eager, last calls"]
    print("| " + " | ".join([*columns, "`tf.function`", "ratio"]) + " |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in arguments.layers:
        layer = LAYERS[name](lines)
        graph = tf.function(lambda texts, layer=layer: layer(texts), input_signature=STRINGS)
        for batch in (1, 32):
            batches = [
                tf.constant([lines[(i + j) % len(lines)] for j in range(batch)])
                for i in range(0, batch * arguments.calls, batch)
            ]
            times = []
            for texts in batches:
                start = time.perf_counter()
                layer(texts)
                times.append(time.perf_counter() - start)
            last = batches[-20:]
            graph(last[0])
            eager, traced = [], []
            for _ in range(arguments.rounds):
                for calls, run in ((eager, layer), (traced, graph)):
                    start = time.perf_counter()
                    for texts in last:
                        run(texts)
                    calls.append((time.perf_counter() - start) / len(last))
            eager_ms, graph_ms = statistics.median(eager) * 1e3, statistics.median(traced) * 1e3
            before = times[1 : times.index(max(times))] or [math.nan]  # op by op, before the trace
            print(
                f"| {name} | {batch} | {times[0] * 1e3:.0f} ms | {statistics.median(before) * 1e3:.1f} ms "
                f"| {max(times):.2f} s | {sum(times):.1f} s "
                f"| {eager_ms:.2f} ms | {graph_ms:.2f} ms | {eager_ms / graph_ms:.2f}x |",
                flush=True,
            )


if __name__ == "__main__":
    main()
