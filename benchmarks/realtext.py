"""Speed on the text people send: each layer against its anchors on real short lines in many scripts.

    python benchmarks/realtext.py [--layers wordpiece unigram bpe sentencepiece-bpe] [--batches 1 32 1024] [--rounds 5]
                                  [--floors] [--jit-compile]

Corpora: `realtext/` (short lines in Italian, Czech, Bulgarian, Polish and Portuguese; technical prose in
Japanese and traditional Chinese), *Botchan*, the Japanese novel, and wikitext-2 valid (pre-tokenized:
the best case, one row, outside the geometric mean). Up to `--bytes` of each corpus's non-empty lines;
batch 1 encodes the first `--single` lines one at a time, batch 32 the first `--batches-of-32`
batches, `tf.data` the first `--data-lines` lines.

Anchors, per layer (ratio = tfsubword's speed / the anchor's; above 1.0 tfsubword is faster):
- WordPiece, BERT uncased vocabulary: tensorflow-text `FastWordpieceTokenizer` with its lowercasing ops
  (`case_fold_utf8`, NFD, marks stripped) in a `tf.function`; Hugging Face `tokenizers`, one thread.
- Unigram, a model SentencePiece trains on the mix (8,000 pieces): tensorflow-text
  `SentencepieceTokenizer` in a `tf.function`; `sentencepiece` through its Python API.
- SentencePiece BPE (`SentencePieceLayer`), a model SentencePiece trains on the mix with Llama-2's
  settings (8,000 pieces, byte fallback, identity rules, spaces kept): the same two anchors.
- BPE, a byte-level vocabulary Hugging Face trains on the mix (30,000 tokens): keras-hub
  `BytePairTokenizer` timed cold (its word cache emptied before each round, as a fresh instance's);
  Hugging Face `tokenizers`, one thread.
The in-graph anchor is the first one; `tf.data` rows map the layer and that anchor per element
(`num_parallel_calls=AUTOTUNE`) and per batch of 32: the steady state, the second pass over the
lines of a fresh iterator, and, apart, what starting a pipeline costs (its first element: each new
iterator, each epoch of `model.fit`, instantiates the mapped function's graph). `--data-only`
runs only these.
Latency tables give the time per call at batch 1 and 32, as a serving user sees it.

`--jit-compile` times `WordPieceLayer(jit_compile=True)` as tfsubword, with the layer as built by
default (the executor's walk) as one more anchor.

`--floors` (WordPiece and Unigram) adds what the cheapest core-op pipelines doing part of the work
cost, timed with the others, and the speed each would reach against the in-graph anchor: the ceiling
of a layer built that way. A call that only measures its input; a split at spaces, its distinct words
and one lookup each (the least a word-level tokenizer does: no normalization, no segmentation); and
that plus the layer's own segmentation core on the distinct words (WordPiece: lowercased, the
longest-token walk from every position of the words that are no token; Unigram: the best paths
through every distinct word), without the rest of the layer (normalization, assembling the ids).
WordPiece also gets the walk after BERT's rules, the work the anchor does: the distinct words of the
layer's coarse split that are no token, normalized as the layer does (cleaning, case, accents,
punctuation and CJK), then walked; still without the greedy path and assembling the ids.

Every system runs in this one process, interleaved round after round; medians over rounds. Each
anchor is timed against tfsubword in rounds of their own: a layer run right after a Python library's
call is slower, and in rounds of three or more one system follows it more often than another.
"""

import argparse
import io
import json
import math
import os
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["RAYON_NUM_THREADS"] = "1"  # Hugging Face tokenizers: one thread

import tensorflow as tf  # noqa: E402
from _data import shared_data  # noqa: E402

import tfsubword  # noqa: E402
import tfsubword.tables  # noqa: E402
from tfsubword import graph_ops as ops  # noqa: E402

DATA = shared_data()
REAL = ["fortunes-it", "fortunes-cs", "fortunes-bg", "fortunes-pl", "fortunes-pt"]
REAL += ["debian-reference-ja", "debian-reference-zh-tw"]
CORPORA = {name: DATA / "realtext" / f"{name}.txt" for name in REAL}
CORPORA.update(
    {"botchan": DATA / "botchan.txt", "novel-ja": DATA / "wagahaiwa_nekodearu.txt"}
    | {"wikitext-2 valid": DATA / "wikitext2-valid.txt"}
)
BEST_CASE = "wikitext-2 valid"
OURS = "tfsubword"
STRINGS = [tf.TensorSpec([None], tf.string)]
# `--jit-compile`: the WordPiece layer built with `jit_compile=True`, the executor's as an anchor.
JIT_COMPILE = False


def lines_of(path, limit):
    """Non-empty lines (without their newline) of `path`, up to `limit` UTF-8 bytes."""
    lines, size = [], 0
    with open(path, encoding="utf-8") as file:
        for line in file:
            line = line.rstrip("\n")
            if line.strip() and size < limit:
                lines.append(line)
                size += len(line.encode("utf-8"))
    return lines


def in_graph(function, reset=None):
    """A system: (encode a list of str, the `tf.data` map function, what to call before each round)."""
    traced = tf.function(function, input_signature=STRINGS)
    return lambda texts: traced(tf.constant(texts)), function, reset


def in_python(encode):
    return encode, None, None


def wordpiece_systems(mix, directory, floors=False):
    import tensorflow_text as text_ops
    import tokenizers

    vocabulary = DATA / "bert-base-uncased-vocab.txt"
    tokens = vocabulary.read_text(encoding="utf-8").splitlines()
    fast = text_ops.FastWordpieceTokenizer(tokens, token_out_type=tf.int32, no_pretokenization=False)

    def fast_wordpiece(texts):
        texts = text_ops.normalize_utf8(text_ops.case_fold_utf8(texts), "NFD")
        return fast.tokenize(tf.strings.regex_replace(texts, r"\p{Mn}", ""))

    hf = tokenizers.Tokenizer.from_file(str(DATA / "bert-base-uncased-tokenizer.json"))
    hf.no_truncation()
    hf.no_padding()
    layer = tfsubword.WordPieceLayer(str(vocabulary), jit_compile=JIT_COMPILE)
    systems = {
        OURS: in_graph(layer),
        "tf-text FastWordpiece": in_graph(fast_wordpiece),
        "HF tokenizers": in_python(lambda texts: hf.encode_batch(texts, add_special_tokens=False)),
    }
    if JIT_COMPILE:
        systems[f"{OURS} executor"] = in_graph(tfsubword.WordPieceLayer(str(vocabulary)))
    if not floors:
        return systems
    words = _distinct_words_floor(tokens)
    normalizer, segmenter = layer._normalizer, layer._segmenter

    def walk_through(code_points, splits):
        rows = ops.row_ids(splits)
        bounds = tf.cast(splits, tf.int32)
        starts, limits = ops.take(bounds, rows), ops.take(bounds[1:], rows)
        roots = tf.where(tf.range(tf.size(code_points)) == starts, 0, segmenter._continuation_root)
        return segmenter._trie.longest_matches(code_points, roots, limits)[0]

    def walk(texts):
        distinct, ids = words(tf.strings.lower(texts, encoding="utf-8"))
        return walk_through(*ops.decode_utf8(ops.take(distinct, ops.indices_where(ids < 0))))

    def bert_rules_and_walk(texts):
        distinct, _ = tf.unique(normalizer.coarse_split(texts)[0])
        missed = ops.take(distinct, ops.indices_where(segmenter.whole_words.lookup(distinct) < 0))
        normalized = normalizer.normalize_words(missed)
        return walk_through(normalized.flat_values, normalized.nested_row_splits[1])

    return (
        systems
        | _floor_systems(words, walk, "lowercase, walk")
        | {"floor: words, BERT rules, walk": in_graph(bert_rules_and_walk)}
    )


def _distinct_words_floor(tokens):
    """Texts -> (their distinct space-separated words, the id of each in `tokens` or -1)."""
    table = tfsubword.tables.hash_table(
        [token.encode("utf-8") for token in tokens], range(len(tokens)), -1, tf.string, tf.int32
    )

    def words(texts):
        distinct, _ = tf.unique(ops.split_strings(texts)[0])
        return distinct, table.lookup(distinct)

    return words


def _floor_systems(words, segment, segmentation):
    return {
        "floor: call": in_graph(tf.strings.length),
        "floor: words": in_graph(lambda texts: words(texts)[1]),
        f"floor: words, {segmentation}": in_graph(segment),
    }


def _sentencepiece_systems(mix, layer_class, floors=False, **options):
    import sentencepiece as spm
    import tensorflow_text as text_ops

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(mix), model_writer=model, vocab_size=8000, minloglevel=2, **options
    )
    model = model.getvalue()
    layer = layer_class(model)
    systems = {
        OURS: in_graph(layer),
        "tf-text Sentencepiece": in_graph(text_ops.SentencepieceTokenizer(model).tokenize),
        "sentencepiece": in_python(spm.SentencePieceProcessor(model_proto=model).encode),
    }
    if not floors:
        return systems
    processor = spm.SentencePieceProcessor(model_proto=model)
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    words = _distinct_words_floor(pieces)

    def paths(texts):
        distinct, _ = words(texts)
        return layer._segmenter.lattice.best_paths(*ops.decode_utf8(tf.strings.join(["\u2581", distinct])), tf.float32)[
            "piece"
        ]

    return systems | _floor_systems(words, paths, "best paths")


def unigram_systems(mix, directory, floors=False):
    return _sentencepiece_systems(mix, tfsubword.UnigramLayer, floors, model_type="unigram")


# SentencePiece's trainer options for a BPE model with Llama-2's settings.
LLAMA2_SETTINGS = dict(
    model_type="bpe",
    byte_fallback=True,
    split_digits=True,
    normalization_rule_name="identity",
    remove_extra_whitespaces=False,
    allow_whitespace_only_pieces=True,
)


def sentencepiece_bpe_systems(mix, directory, floors=False):
    """A SentencePiece BPE model with Llama-2's trainer settings."""
    return _sentencepiece_systems(mix, tfsubword.SentencePieceLayer, **LLAMA2_SETTINGS)


def bpe_systems(mix, directory, floors=False):
    import keras_hub
    from tokenizers import ByteLevelBPETokenizer

    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(mix, vocab_size=30000, min_frequency=2, special_tokens=["<|endoftext|>"])
    trainer.save_model(directory)
    vocab, merges = os.path.join(directory, "vocab.json"), os.path.join(directory, "merges.txt")
    with open(vocab, encoding="utf-8") as file:
        vocabulary = json.load(file)
    with open(merges, encoding="utf-8") as file:
        merge_lines = [line for line in file.read().split("\n")[1:] if line]
    hub = keras_hub.tokenizers.BytePairTokenizer(vocabulary=vocabulary, merges=merge_lines)

    def empty_cache():
        """keras-hub caches the pieces of every word it has seen: timed cold, each round starts
        without them, as a fresh instance would."""
        table = hub.cache.id2value
        table.remove(table.export()[0])

    return {
        OURS: in_graph(tfsubword.BPELayer(vocab, merges)),
        "keras-hub BytePair, cold": in_graph(hub, reset=empty_cache),
        "HF tokenizers": in_python(ByteLevelBPETokenizer(vocab, merges).encode_batch),
    }


SYSTEMS = {
    "wordpiece": wordpiece_systems,
    "unigram": unigram_systems,
    "bpe": bpe_systems,
    "sentencepiece-bpe": sentencepiece_bpe_systems,
}


def runners(systems, lines, batch, arguments):
    """name -> (reset or None, run), and the UTF-8 bytes encoded."""
    if batch == 1:
        batches = [[line] for line in lines[: arguments.single]]
    else:
        batches = [lines[i : i + batch] for i in range(0, len(lines), batch)]
        if batch == 32:
            batches = batches[: arguments.batches_of_32]
    found = {
        name: (reset, lambda encode=encode: [encode(texts) for texts in batches])
        for name, (encode, _, reset) in systems.items()
    }
    return found, sum(len(line.encode("utf-8")) for texts in batches for line in texts)


def data_runners(systems, lines, per_batch):
    """The layer and the in-graph anchor (the first two systems) mapped over the lines in a `tf.data`
    pipeline, per element or per batch, in parallel, as `model.fit` pulls it: steady state, the second
    pass of a fresh iterator (its first pass started it: the mapped function's graph is instantiated);
    and what starting a pipeline costs, its first element. A run's iterator is gone before the next
    system's run: a live one would fill its buffers meanwhile, and its next pass would look free."""
    found, starts = {}, {}
    for name, (_, map_function, reset) in list(systems.items())[:2]:
        dataset = tf.data.Dataset.from_tensor_slices(lines)
        if per_batch:
            dataset = dataset.batch(per_batch)
        # One pass, sizes only, comes back to Python as one element.
        elements = -(-len(lines) // per_batch) if per_batch else len(lines)
        dataset = dataset.map(map_function, num_parallel_calls=tf.data.AUTOTUNE).map(_size).batch(elements)

        def run(dataset=dataset, reset=reset):
            iterator = iter(dataset.repeat())
            next(iterator)
            if reset is not None:
                reset()  # keras-hub: cold, as everywhere else
            start = time.perf_counter()
            next(iterator)
            return time.perf_counter() - start

        found[name] = (None, run)
        starts[name] = lambda dataset=dataset: next(iter(dataset))
    return found, sum(len(line.encode("utf-8")) for line in lines), starts


def _size(tokens):
    return tf.size(tokens.flat_values if isinstance(tokens, tf.RaggedTensor) else tokens)


def timed(found, rounds):
    """name -> median seconds of `run()` (after `reset()`, untimed), the systems interleaved."""
    for _, run in found.values():
        run()  # trace and warm up
    seconds = {name: [] for name in found}
    names = list(found)
    for round_index in range(rounds):
        # The order turns each round: a layer run right after Hugging Face's Rust call measured
        # slower than run first (benchmarks/RESULTS.md).
        for name in names[round_index % len(names) :] + names[: round_index % len(names)]:
            reset, run = found[name]
            if reset is not None:
                reset()
            start = time.perf_counter()
            measured = run()  # a run may time only its own part, and return its seconds
            seconds[name].append(measured if isinstance(measured, float) else time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in seconds.items()}


def timed_against(found, rounds):
    """(name -> median seconds, anchor -> its seconds / tfsubword's): each anchor timed with tfsubword
    alone, in rounds of their own (`timed`); tfsubword's seconds are its median over all of them.
    A layer run right after Hugging Face's Rust call measured 25% slower than after another layer,
    and in rounds of three the system after it in the order came after it most often (RESULTS.md)."""
    seconds, ratios, ours = {}, {}, []
    for name in found:
        if name != OURS:
            pair = timed({OURS: found[OURS], name: found[name]}, rounds)
            seconds[name], ratios[name] = pair[name], pair[name] / pair[OURS]
            ours.append(pair[OURS])
    seconds[OURS] = statistics.median(ours) if ours else timed({OURS: found[OURS]}, rounds)[OURS]
    return seconds, ratios


def geometric_mean(values):
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def bench_layer(layer, texts, arguments):
    mix = [line for name in texts if name != BEST_CASE for line in texts[name]]
    with tempfile.TemporaryDirectory() as directory:
        systems = SYSTEMS[layer](mix, directory, arguments.floors)
        anchors = [name for name in systems if name != OURS]
        columns = [(f"b{batch}", batch) for batch in arguments.batches] + [("data 1", "data"), ("data 32", "data32")]
        if arguments.data_only:
            columns = columns[-2:]
        ratios = {}  # (column, anchor) -> corpus -> ratio
        absolute = {}
        latency = {}  # (column, system) -> corpus -> seconds per call
        start_seconds = {}  # (column, system) -> corpus -> seconds to a fresh pipeline's first element
        for corpus, lines in texts.items():
            for column, batch in columns:
                if batch in ("data", "data32"):
                    found, size, starts = data_runners(
                        systems, lines[: arguments.data_lines], 32 if batch == "data32" else None
                    )
                    started = timed({name: (None, start) for name, start in starts.items()}, arguments.rounds)
                    for name, value in started.items():
                        start_seconds.setdefault((column, name), {})[corpus] = value
                else:
                    found, size = runners(systems, lines, batch, arguments)
                seconds, against = timed_against(found, arguments.rounds)
                if batch in (1, 32):
                    calls = (
                        min(len(lines), arguments.single)
                        if batch == 1
                        else -(-min(len(lines), 32 * arguments.batches_of_32) // 32)
                    )
                    for name in found:
                        latency.setdefault((column, name), {})[corpus] = seconds[name] / calls
                for anchor in anchors:
                    if anchor in against:
                        ratios.setdefault((column, anchor), {})[corpus] = against[anchor]
                absolute[(corpus, column)] = size / 1e6 / seconds[OURS]
            print(f"  {layer}: {corpus} done", flush=True)
    keys = [key for key in ratios if key[0] in [c for c, _ in columns]]
    header = " | ".join(f"{column} / {anchor}" for column, anchor in keys)
    print(f"\n### {layer}: tfsubword speed / anchor speed ({arguments.rounds} rounds, medians)\n")
    print(f"| corpus | {header} | tfsubword MB/s at b{max(arguments.batches)} |")
    print("|---|" + "---:|" * (len(keys) + 1))
    for corpus in texts:
        cells = " | ".join(f"{ratios[key].get(corpus, float('nan')):.2f}x" for key in keys)
        print(f"| {corpus} | {cells} | {absolute.get((corpus, f'b{max(arguments.batches)}'), float('nan')):.2f} |")
    real = [corpus for corpus in texts if corpus != BEST_CASE]
    means = " | ".join(f"**{geometric_mean([ratios[key][c] for c in real if c in ratios[key]]):.2f}x**" for key in keys)
    lowest = " | ".join(f"{min(ratios[key][c] for c in real if c in ratios[key]):.2f}x" for key in keys)
    print(f"| geometric mean, real text | {means} | |")
    print(f"| lowest, real text | {lowest} | |", flush=True)
    _print_ceilings(layer, ratios, anchors, texts, columns, real)
    for title, table, unit in (
        ("latency per call, ms (batch 1: one line; batch 32: 32 lines)", latency, 1e3),
        ("tf.data: starting a pipeline (a fresh iterator's first element), ms", start_seconds, 1e3),
    ):
        keys = list(table)
        if not keys:
            continue
        _print_table(
            f"{layer}: {title}",
            keys,
            {corpus: [f"{table[key][corpus] * unit:.2f}" for key in keys] for corpus in texts},
            ("median", [f"{statistics.median([table[key][c] for c in real]) * unit:.2f}" for key in keys]),
        )


def _print_ceilings(layer, ratios, anchors, texts, columns, real):
    """With `--floors`: each floor's speed over the in-graph anchor's, per batch column."""
    floors = [name for name in anchors if name.startswith("floor")]
    keys = [(column, floor) for column, batch in columns if isinstance(batch, int) for floor in floors]
    if not keys:
        return
    anchor = anchors[0]
    ceiling = {
        key: {c: ratios[(key[0], anchor)][c] / ratios[key][c] for c in texts if c in ratios.get(key, {})}
        for key in keys
    }
    _print_table(
        f"{layer}: floor speed / {anchor} speed (the ceiling of a layer built so)",
        keys,
        {corpus: [f"{ceiling[key].get(corpus, float('nan')):.2f}x" for key in keys] for corpus in texts},
        ("geometric mean", [f"{geometric_mean([ceiling[key][c] for c in real]):.2f}x" for key in keys]),
    )


def _print_table(title, keys, rows, summary):
    """A Markdown table: a column per `(column, system)` key, `rows` (corpus -> cells), then
    `summary` (what it is, its cells in bold) over the real text."""
    print(f"\n### {title}\n")
    print("| corpus | " + " | ".join(f"{column}: {name}" for column, name in keys) + " |")
    print("|---|" + "---:|" * len(keys))
    for corpus, cells in rows.items():
        print(f"| {corpus} | " + " | ".join(cells) + " |")
    label, cells = summary
    print(f"| {label}, real text | " + " | ".join(f"**{cell}**" for cell in cells) + " |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", nargs="+", choices=list(SYSTEMS), default=list(SYSTEMS))
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 32, 1024])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bytes", type=int, default=200_000, help="UTF-8 bytes of each corpus")
    parser.add_argument("--single", type=int, default=100, help="lines encoded one at a time at batch 1")
    parser.add_argument("--batches-of-32", type=int, default=32, help="batches encoded at batch 32")
    parser.add_argument("--data-lines", type=int, default=1024, help="lines through each tf.data pipeline")
    parser.add_argument("--data-only", action="store_true", help="only the tf.data rows")
    parser.add_argument("--floors", action="store_true", help="also the floors (WordPiece and Unigram)")
    parser.add_argument(
        "--jit-compile", action="store_true", help="WordPiece built with jit_compile=True, against the executor's too"
    )
    arguments = parser.parse_args()
    global JIT_COMPILE
    JIT_COMPILE = arguments.jit_compile
    texts = {name: lines_of(path, arguments.bytes) for name, path in CORPORA.items()}
    print(f"TensorFlow {tf.__version__}; " + ", ".join(f"{name} {len(lines)} lines" for name, lines in texts.items()))
    for layer in arguments.layers:
        bench_layer(layer, texts, arguments)


if __name__ == "__main__":
    main()
