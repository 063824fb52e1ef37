"""Training at scale: time and memory of each trainer, against Hugging Face and SentencePiece, as the corpus grows.

    python benchmarks/train_scale.py [--corpora real 100M 300M 1G] [--trainers ...] [--cache DIR]

Corpora:
- `real`: every text of ../shared/data (realtext included) and the Collaborative International
  Dictionary of English from Debian's `dict-gcide` package, fetched with `apt-get download` into the
  cache (skipped, with a note, where that fails): about 48 MB of real text.
- sizes (`100M`, `300M`, `1G`, any `<number>[KMG]`): synthetic text made deterministically, whose
  words follow Zipf's law (ranks drawn with exponent 1.35) so that the lexicon grows as in natural
  text, by Heaps' law (distinct words about the token count to the power 0.74); a word is the
  syllables spelling its rank, so frequent words are short. Lines of 3 to 24 words, a capital first,
  commas and a final mark. Made once per size in the cache.

Each training runs in its own process; the table gives the time of the training call (reading and
counting included), the peak resident memory (`VmHWM`), and that peak above the memory the process
had after importing its library (`import tensorflow` for tfsubword: a fixed cost every TensorFlow
user pays). Vocabulary sizes: WordPiece and BPE 30,000; Unigram 32,000. The anchors run with their
defaults (threads included): Hugging Face's `BertWordPieceTokenizer`, `ByteLevelBPETokenizer` and
`SentencePieceUnigramTokenizer`; SentencePiece's unigram and BPE trainers (`input_sentence_size=0`:
every line, as tfsubword reads). Then, for each trainer, how time and memory grew from the smallest
synthetic corpus to each larger one, against the growth of its distinct words.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

from _data import shared_data

DATA = shared_data()
TRAINERS = {
    "tfsubword-wordpiece": "wordpiece",
    "hf-wordpiece": "wordpiece",
    "tfsubword-bpe": "bpe",
    "hf-bpe": "bpe",
    "tfsubword-unigram": "unigram",
    "sp-unigram": "unigram",
    "hf-unigram": "unigram",
    "sp-bpe": "bpe",
}
VOCAB_SIZES = {"wordpiece": 30000, "bpe": 30000, "unigram": 32000}
ZIPF_EXPONENT = 1.35
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"] + ["an", "en", "in", "or", "ul", "es"]
UNITS = {"K": 2**10, "M": 2**20, "G": 2**30}


def real_corpus(cache):
    """The shared texts and GCIDE, as one UTF-8 file (GCIDE's few Latin-1 bytes read as U+FFFD)."""
    path = cache / "real.txt"
    if path.exists():
        return path
    texts = sorted(DATA.rglob("*.txt"))
    if not texts:
        raise SystemExit(f"no shared texts under {DATA}")
    parts = [text.read_bytes() for text in texts]
    dictionary = _gcide(cache)
    if dictionary is None:
        print("note: dict-gcide not available (apt-get download failed); the real corpus is ../shared/data only")
    else:
        parts.append(dictionary)
    data = b"\n".join(part.decode("utf-8", "replace").encode("utf-8").rstrip(b"\n") for part in parts) + b"\n"
    path.write_bytes(data)
    return path


def _gcide(cache):
    import gzip

    folder = cache / "gcide"
    folder.mkdir(exist_ok=True)
    try:
        subprocess.run(["apt-get", "download", "dict-gcide"], cwd=folder, check=True, capture_output=True)
        package = next(folder.glob("dict-gcide_*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(package), str(folder / "x")], check=True, capture_output=True)
        return gzip.decompress((folder / "x/usr/share/dictd/gcide.dict.dz").read_bytes())
    except (OSError, subprocess.CalledProcessError, StopIteration):
        return None


def synthetic_corpus(cache, size):
    """`size` bytes of Zipf-distributed text (see the module), the same bytes for the same size."""
    import numpy as np

    path = cache / f"synthetic-{size}.txt"
    if path.exists():
        return path
    rng = np.random.default_rng(size)
    spelled = [_spell(rank) for rank in range(1 << 20)]
    written = 0
    with open(path.with_suffix(".part"), "w", encoding="utf-8") as out:
        while written < size:
            lengths = rng.integers(3, 25, 2000)
            ranks = rng.zipf(ZIPF_EXPONENT, int(lengths.sum())) - 1
            marks = rng.random(len(ranks))
            lines, start = [], 0
            for length in lengths.tolist():
                words = [spelled[r] if r < len(spelled) else _spell(r) for r in ranks[start : start + length].tolist()]
                for i in range(length - 1):
                    if marks[start + i] < 0.06:
                        words[i] += ","
                words[0] = words[0].capitalize()
                lines.append(" ".join(words) + ("?" if marks[start + length - 1] < 0.1 else "."))
                start += length
            text = "\n".join(lines) + "\n"
            out.write(text)
            written += len(text.encode("utf-8"))
    path.with_suffix(".part").rename(path)
    return path


def _spell(rank):
    digits = []
    while True:
        rank, digit = divmod(rank, len(SYLLABLES))
        digits.append(SYLLABLES[digit])
        if rank == 0:
            return "".join(digits)
        rank -= 1


# In the subprocess: one training, one JSON line.


def _memory(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def run_one(trainer, corpus, directory):
    kind = TRAINERS[trainer]
    vocab_size = VOCAB_SIZES[kind]
    if trainer.startswith("tfsubword"):
        import tensorflow  # noqa: F401

        import tfsubword
    elif trainer.startswith("hf"):
        import tokenizers
    else:
        import sentencepiece
    baseline = _memory("VmRSS")
    start = time.perf_counter()
    if trainer == "tfsubword-wordpiece":
        size = len(tfsubword.train_wordpiece(files=[corpus], vocab_size=vocab_size, show_progress=False))
    elif trainer == "tfsubword-bpe":
        size = len(tfsubword.train_bpe(files=[corpus], vocab_size=vocab_size, show_progress=False)[0])
    elif trainer == "tfsubword-unigram":
        size = len(tfsubword.train_unigram(files=[corpus], vocab_size=vocab_size, show_progress=False))
    elif trainer == "hf-wordpiece":
        model = tokenizers.BertWordPieceTokenizer()
        model.train([corpus], vocab_size=vocab_size, show_progress=False)
        size = model.get_vocab_size()
    elif trainer == "hf-bpe":
        model = tokenizers.ByteLevelBPETokenizer()
        model.train([corpus], vocab_size=vocab_size, show_progress=False)
        size = model.get_vocab_size()
    elif trainer == "hf-unigram":
        model = tokenizers.SentencePieceUnigramTokenizer()
        model.train([corpus], vocab_size=vocab_size, show_progress=False)
        size = model.get_vocab_size()
    else:
        sentencepiece.SentencePieceTrainer.train(
            input=corpus,
            model_prefix=os.path.join(directory, trainer),
            vocab_size=vocab_size,
            model_type=kind,
            input_sentence_size=0,
            minloglevel=2,
        )
        size = vocab_size
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak": _memory("VmHWM"), "baseline": baseline, "tokens": size}))


def measure(trainer, corpus, directory, timeout):
    command = [sys.executable, __file__, "--run-one", trainer, str(corpus), str(directory)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        return {"error": (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1][:120]}
    return json.loads(lines[-1])


def distinct_words(corpus):
    """Distinct whitespace-separated words of the corpus (for the growth table)."""
    seen = set()
    with open(corpus, "rb") as file:
        for line in file:
            seen.update(line.split())
    return len(seen)


def parse_size(text):
    number, unit = (text[:-1], text[-1].upper()) if text[-1].isalpha() else (text, "")
    return int(float(number) * UNITS.get(unit, 1))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--run-one":
        return run_one(*sys.argv[2:5])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", nargs="+", default=["real", "100M", "300M", "1G"])
    parser.add_argument("--trainers", nargs="+", default=list(TRAINERS), choices=list(TRAINERS))
    parser.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "tfsubword-scale"))
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds one training may take")
    arguments = parser.parse_args()
    cache = pathlib.Path(arguments.cache)
    cache.mkdir(parents=True, exist_ok=True)
    results = {}  # corpus name -> trainer -> result
    sizes = {}
    for name in arguments.corpora:
        corpus = real_corpus(cache) if name == "real" else synthetic_corpus(cache, parse_size(name))
        megabytes, words = corpus.stat().st_size / 2**20, distinct_words(corpus)
        sizes[name] = (megabytes, words)
        print(f"\n### {name}: {megabytes:.1f} MB, {words:,} distinct whitespace words\n", flush=True)
        print("| trainer | time, s | peak RSS, MB | above the import, MB | tokens |")
        print("|---|---:|---:|---:|---:|", flush=True)
        for trainer in arguments.trainers:
            found = results.setdefault(name, {})[trainer] = measure(trainer, corpus, cache, arguments.timeout)
            if "error" in found:
                print(f"| {trainer} | failed: {found['error']} | | | |", flush=True)
                continue
            above, peak = (found["peak"] - found["baseline"]) / 2**20, found["peak"] / 2**20
            print(
                f"| {trainer} | {found['seconds']:.1f} | {peak:,.0f} | {above:,.0f} | {found['tokens']} |", flush=True
            )
        for ours, anchors in (
            ("tfsubword-wordpiece", ["hf-wordpiece"]),
            ("tfsubword-bpe", ["hf-bpe", "sp-bpe"]),
            ("tfsubword-unigram", ["sp-unigram", "hf-unigram"]),
        ):
            mine = results[name].get(ours, {})
            for anchor in anchors:
                other = results[name].get(anchor, {})
                if "seconds" in mine and "seconds" in other:
                    memory = (mine["peak"] - mine["baseline"]) / max(other["peak"] - other["baseline"], 1)
                    time_ratio = mine["seconds"] / other["seconds"]
                    print(f"- {ours} / {anchor}: time {time_ratio:.2f}x, memory above the import {memory:.2f}x")
    synthetic = [name for name in arguments.corpora if name != "real"]
    if len(synthetic) > 1:
        first = synthetic[0]
        print(f"\n### growth from {first} (distinct words; time; memory above the import)\n")
        print("| trainer | " + " | ".join(synthetic[1:]) + " |")
        print("|---|" + "---:|" * (len(synthetic) - 1))
        print("| distinct words | " + " | ".join(f"{sizes[n][1] / sizes[first][1]:.2f}x" for n in synthetic[1:]) + " |")
        for trainer in arguments.trainers:
            base = results[first].get(trainer, {})
            cells = []
            for name in synthetic[1:]:
                found = results[name].get(trainer, {})
                if "seconds" not in found or "seconds" not in base:
                    cells.append("-")
                    continue
                memory = (found["peak"] - found["baseline"]) / max(base["peak"] - base["baseline"], 1)
                cells.append(f"{found['seconds'] / base['seconds']:.2f}x; {memory:.2f}x")
            print(f"| {trainer} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
