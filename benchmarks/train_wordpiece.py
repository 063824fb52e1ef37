"""WordPiece vocabulary training: tfsubword against Hugging Face, tensorflow-text and SentencePiece BPE.

    python benchmarks/train_wordpiece.py [--sizes 8000 30000] [--skip tf-text] [--quality-only]

Corpora: wikitext-2 test+valid (2.4 MB), and a corpus four times larger made of all the texts in
../shared/data repeated (English and Japanese). Every training runs in its own subprocess; the table
gives the time of the training call (imports excluded, reported apart), the subprocess's peak resident
memory, the memory above that of merely importing the library, the tokens returned, and the ratios
tfsubword (score rule) / system. Library defaults are kept, so the minimum pair frequency differs:
tfsubword 1, Hugging Face 2; `hf-min1` is Hugging Face with tfsubword's setting, min_frequency=1.

Then, for the two tfsubword rules at the same vocabulary size: tokens per word and the corpus
log-likelihood (unigram, counts from WordPieceLayer's tokenization of the corpus).
"""

import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from _data import shared_data  # noqa: E402

DATA = shared_data()
WIKITEXT = [DATA / "wikitext2-test.txt", DATA / "wikitext2-valid.txt"]
ALL_TEXTS = WIKITEXT + [DATA / "botchan.txt", DATA / "wagahaiwa_nekodearu.txt"]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SYSTEMS = ["tfsubword", "tfsubword-likelihood", "hf", "hf-min1", "tf-text", "spm-bpe"]


def build_large_corpus(directory):
    """All shared texts, repeated until four times the size of wikitext-2 test+valid."""
    target = 4 * sum(path.stat().st_size for path in WIKITEXT)
    path = pathlib.Path(directory) / "four-times.txt"
    written = 0
    with open(path, "wb") as out:
        while written < target:
            for source in ALL_TEXTS:
                data = source.read_bytes()
                out.write(data if data.endswith(b"\n") else data + b"\n")
                written += len(data)
    return [path]


# Workers: run in a subprocess, print one JSON line.


def worker(system, size, files, output):
    start = time.perf_counter()
    if system.startswith("tfsubword"):
        import tfsubword.train.counting  # noqa: F401  (loads TensorFlow: an import, not training)
        from tfsubword import train_wordpiece
        from tfsubword.files.vocab import write_vocabulary

        imported = time.perf_counter()
        algorithm = "likelihood" if system.endswith("likelihood") else "score"
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vocabulary = train_wordpiece(files=files, vocab_size=size, algorithm=algorithm, show_progress=False)
        write_vocabulary(vocabulary, output)
        tokens = len(vocabulary)
    elif system.startswith("hf"):
        import tokenizers

        imported = time.perf_counter()
        tokenizer = tokenizers.BertWordPieceTokenizer(lowercase=True)
        tokenizer.train(
            [str(f) for f in files],
            vocab_size=size,
            special_tokens=SPECIALS,
            show_progress=False,
            min_frequency=1 if system == "hf-min1" else 2,
        )
        tokens = tokenizer.get_vocab_size()
    elif system == "tf-text":
        import tensorflow as tf
        from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset

        imported = time.perf_counter()
        dataset = tf.data.TextLineDataset([str(f) for f in files]).batch(1000).prefetch(2)
        vocabulary = bert_vocab_from_dataset.bert_vocab_from_dataset(
            dataset, vocab_size=size, reserved_tokens=SPECIALS, bert_tokenizer_params={"lower_case": True}
        )
        tokens = len(vocabulary)
    elif system == "spm-bpe":
        import sentencepiece

        imported = time.perf_counter()
        try:
            sentencepiece.SentencePieceTrainer.train(
                input=",".join(str(f) for f in files),
                model_prefix=output,
                model_type="bpe",
                vocab_size=size,
                minloglevel=2,
            )
            tokens = size
        except RuntimeError as error:
            tokens = f"failed: {str(error).splitlines()[0][:80]}"
    else:
        raise SystemExit(f"unknown system {system}")
    done = time.perf_counter()
    print(json.dumps({"import": imported - start, "seconds": done - imported, "tokens": tokens}))


def import_only(system):
    modules = {
        "tfsubword": "tfsubword.train.counting",
        "tfsubword-likelihood": "tfsubword.train.counting",
        "hf": "tokenizers",
        "hf-min1": "tokenizers",
        "tf-text": "tensorflow_text",
        "spm-bpe": "sentencepiece",
    }
    __import__(modules[system])
    print(json.dumps({}))


def quality_worker(size, files, vocabulary_paths):
    """Tokens per word and unigram log-likelihood of the corpus tokenized with each vocabulary."""
    import tensorflow as tf

    from tfsubword import WordPieceLayer
    from tfsubword.text.bert import BertNormalizer

    lines = [line.rstrip(b"\n") for path in files for line in open(path, "rb")]
    words = 0
    normalizer = BertNormalizer()
    count_words = tf.function(lambda t: tf.size(normalizer.words(t).flat_values))
    for start in range(0, len(lines), 1024):
        words += int(count_words(tf.constant(lines[start : start + 1024])))
    result = {"words": words}
    for name, path in vocabulary_paths.items():
        layer = WordPieceLayer(path)
        encode = tf.function(layer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
        counts = {}
        for start in range(0, len(lines), 1024):
            ids, number = tf.unique_with_counts(encode(tf.constant(lines[start : start + 1024])).flat_values)[::2]
            for token, n in zip(ids.numpy().tolist(), number.numpy().tolist()):
                counts[token] = counts.get(token, 0) + n
        total = sum(counts.values())
        result[name] = {
            "vocabulary": layer.vocabulary_size(),
            "tokens_per_word": total / words,
            "log_likelihood": sum(c * math.log(c / total) for c in counts.values()),
        }
    print(json.dumps(result))


# Parent.


def run_child(arguments, timeout):
    """Run this script with `arguments`; returns (JSON result, peak RSS in MB) of that subprocess."""
    process = subprocess.Popen(
        [sys.executable, __file__, *arguments], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    start = time.monotonic()
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - start > timeout:
            process.kill()
            pid, status, usage = os.wait4(process.pid, 0)
            return {"tokens": f"timed out after {timeout} s"}, usage.ru_maxrss / 1024
        time.sleep(0.05)
    output = process.stdout.read()
    if os.waitstatus_to_exitcode(status) != 0:
        message = process.stderr.read().strip().splitlines()[-1:] or ["?"]
        return {"tokens": f"error: {message[0][:100]}"}, usage.ru_maxrss / 1024
    return json.loads(output.strip().splitlines()[-1]), usage.ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8000, 30000])
    parser.add_argument("--skip", nargs="*", default=[], choices=SYSTEMS)
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--quality-only", action="store_true")
    parser.add_argument("--corpora", nargs="+", default=["wikitext", "four-times"], choices=["wikitext", "four-times"])
    arguments = parser.parse_args()
    if not WIKITEXT[0].is_file():
        sys.exit(f"reference data not found in {DATA} (set TFSUBWORD_SHARED_DATA)")
    systems = [s for s in SYSTEMS if s not in arguments.skip]
    with tempfile.TemporaryDirectory() as scratch:
        corpora = {"wikitext": WIKITEXT, "four-times": build_large_corpus(scratch)}
        baseline = {}
        if not arguments.quality_only:
            for system in systems:
                baseline[system] = run_child(["--import-only", system], arguments.timeout)[1]
        for corpus in arguments.corpora:
            files = corpora[corpus]
            megabytes = sum(f.stat().st_size for f in files) / 1e6
            vocabularies = {}
            if not arguments.quality_only:
                print(f"\n{corpus}: {megabytes:.1f} MB")
                print(
                    "| system | vocab_size | seconds | import s | peak RSS MB | above import MB | tokens | time ratio "
                    "| memory ratio |"
                )
                print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
            for size in arguments.sizes:
                results = {}
                for system in ["tfsubword", "tfsubword-likelihood"] if arguments.quality_only else systems:
                    output = os.path.join(scratch, f"{corpus}-{system}-{size}")
                    result, peak = run_child(
                        ["--worker", system, str(size), output, *map(str, files)], arguments.timeout
                    )
                    results[system] = (result, peak)
                    if system.startswith("tfsubword"):
                        vocabularies[(system, size)] = output
                if arguments.quality_only:
                    continue
                ours_seconds = results.get("tfsubword", ({}, 0))[0].get("seconds")
                ours_peak = results.get("tfsubword", ({}, 0))[1]
                for system, (result, peak) in results.items():
                    seconds = result.get("seconds")
                    ratio = f"{ours_seconds / seconds:.2f}x" if seconds and ours_seconds else "-"
                    memory = f"{ours_peak / peak:.2f}x" if ours_peak and peak else "-"
                    print(
                        f"| {system} | {size} | {seconds if seconds is None else round(seconds, 2)} "
                        f"| {round(result['import'], 1) if 'import' in result else '-'} | {peak:.0f} "
                        f"| {peak - baseline.get(system, 0):.0f} | {result.get('tokens')} | {ratio} | {memory} |",
                        flush=True,
                    )
            quality(corpus, files, arguments.sizes, vocabularies, arguments.timeout)


def quality(corpus, files, sizes, vocabularies, timeout):
    """Score rule vs likelihood rule at the same vocabulary size."""
    from tfsubword.files.vocab import read_vocabulary

    pairs = {}
    for size in sizes:
        score, likelihood = vocabularies.get(("tfsubword", size)), vocabularies.get(("tfsubword-likelihood", size))
        if not (score and likelihood and os.path.exists(score) and os.path.exists(likelihood)):
            continue
        reached = len(read_vocabulary(likelihood))
        if reached < size:  # the likelihood rule stopped early: compare with a score vocabulary of its size
            shorter = os.path.join(os.path.dirname(score), f"{corpus}-score-{reached}")
            run_child(["--worker", "tfsubword", str(reached), shorter, *map(str, files)], timeout)
            score = shorter
        pairs[f"score {reached}"] = score
        pairs[f"likelihood {reached}"] = likelihood
    if not pairs:
        return
    result, _ = run_child(["--quality", json.dumps(pairs), *map(str, files)], timeout)
    print(f"\n{corpus}: {result.get('words')} words")
    print("| rule, vocabulary | tokens per word | corpus log-likelihood |")
    print("|---|---:|---:|")
    for name in pairs:
        if name in result:
            print(f"| {name} | {result[name]['tokens_per_word']:.3f} | {result[name]['log_likelihood']:.4e} |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), [pathlib.Path(p) for p in sys.argv[5:]], sys.argv[4])
    elif len(sys.argv) > 1 and sys.argv[1] == "--import-only":
        import_only(sys.argv[2])
    elif len(sys.argv) > 1 and sys.argv[1] == "--quality":
        quality_worker(None, sys.argv[3:], json.loads(sys.argv[2]))
    else:
        main()
