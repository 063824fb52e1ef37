"""The cost of subword regularization: each sampling layer called with `training=True` against the same
layer's deterministic call, on real text.

    python benchmarks/sampling.py [--batches 32 1024] [--rounds 5] [--bytes 200000]

Layers: `UnigramLayer` with a model SentencePiece trains on the mix (8,000 pieces, as `realtext.py`),
sampling among all segmentations (`nbest_size=-1, alpha=0.1`) and among the 8 best (`nbest_size=8`);
`WordPieceLayer` with BERT's uncased vocabulary, MaxMatch-dropout 0.1; `SentencePieceLayer` with a BPE
model SentencePiece trains on the mix with Llama-2's settings (as `realtext.py`), BPE-dropout 0.1;
`BPELayer` with a byte-level BPE Hugging Face trains on the mix (30,000 tokens, as `realtext.py`),
Hugging Face's BPE-dropout 0.1; `from_huggingface` of a Unigram `tokenizer.json` that `tokenizers` trains on
the mix (8,000 pieces, `Metaspace`), Hugging Face's unigram sampling with `alpha=0.1`.
Corpora: those of `realtext.py` (short lines in five languages, Japanese and Chinese prose, *Botchan*,
the Japanese novel; wikitext-2 apart). Each call runs in a `tf.function`; deterministic and sampled
calls are interleaved round after round in this one process; medians; ratio = sampled time /
deterministic time (the issue's bar: at most 1.5 at batch 1024).
"""

import argparse
import io
import json
import math
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402
from _timing import measure  # noqa: E402
from realtext import BEST_CASE, CORPORA, DATA, LLAMA2_SETTINGS, lines_of  # noqa: E402

import tfsubword  # noqa: E402

STRINGS = [tf.TensorSpec([None], tf.string)]


def sentencepiece_model(mix, **options):
    import sentencepiece as spm

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(mix), model_writer=model, vocab_size=8000, minloglevel=2, **options
    )
    return model.getvalue()


def in_training(layer):
    return tf.function(lambda texts: layer(texts, training=True), input_signature=STRINGS)


def unigram_systems(mix):
    model = sentencepiece_model(mix)
    found = {"deterministic": in_training(tfsubword.UnigramLayer(model))}
    for name, nbest_size in [("all (-1)", -1), ("8 best", 8)]:
        found[name] = in_training(tfsubword.UnigramLayer(model, alpha=0.1, nbest_size=nbest_size, seed=0))
    return found


def wordpiece_systems(mix):
    vocabulary = str(DATA / "bert-base-uncased-vocab.txt")
    return {
        "deterministic": in_training(tfsubword.WordPieceLayer(vocabulary)),
        "dropout 0.1": in_training(tfsubword.WordPieceLayer(vocabulary, dropout=0.1, seed=0)),
    }


def sentencepiece_bpe_systems(mix):
    model = sentencepiece_model(mix, **LLAMA2_SETTINGS)
    return {
        "deterministic": in_training(tfsubword.SentencePieceLayer(model)),
        "alpha 0.1": in_training(tfsubword.SentencePieceLayer(model, alpha=0.1, seed=0)),
    }


def bpe_systems(mix):
    from tokenizers import ByteLevelBPETokenizer

    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(mix, vocab_size=30000, min_frequency=2, special_tokens=["<|endoftext|>"])
    model = json.loads(trainer._tokenizer.to_str())["model"]
    vocabulary = sorted(model["vocab"], key=model["vocab"].get)
    return {
        "deterministic": in_training(tfsubword.BPELayer(vocabulary, model["merges"])),
        "dropout 0.1": in_training(tfsubword.BPELayer(vocabulary, model["merges"], dropout=0.1, seed=0)),
    }


def huggingface_unigram_systems(mix):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.Unigram())
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=8000, unk_token="<unk>", special_tokens=["<unk>"], show_progress=False)
    tokenizer.train_from_iterator(mix, trainer)
    text = tokenizer.to_str()
    return {
        "deterministic": in_training(tfsubword.from_huggingface(text)),
        "alpha 0.1": in_training(tfsubword.from_huggingface(text, alpha=0.1, seed=0)),
    }


SYSTEMS = {
    "unigram": unigram_systems,
    "wordpiece": wordpiece_systems,
    "sentencepiece-bpe": sentencepiece_bpe_systems,
    "bpe": bpe_systems,
    "huggingface-unigram": huggingface_unigram_systems,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", nargs="+", choices=list(SYSTEMS), default=list(SYSTEMS))
    parser.add_argument("--batches", type=int, nargs="+", default=[32, 1024])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bytes", type=int, default=200_000, help="UTF-8 bytes of each corpus")
    parser.add_argument("--calls", type=int, default=8, help="batches timed per corpus and batch size")
    arguments = parser.parse_args()
    texts = {name: lines_of(path, arguments.bytes) for name, path in CORPORA.items()}
    mix = [line for name, lines in texts.items() if name != BEST_CASE for line in lines]
    for layer in arguments.layers:
        bench(layer, SYSTEMS[layer](mix), texts, arguments)


def bench(layer, found, texts, arguments):
    names = [name for name in found if name != "deterministic"]
    for batch in arguments.batches:
        print(f"\n{layer}, batch {batch}: ms per call (deterministic), sampled / deterministic")
        print("| corpus | deterministic | " + " | ".join(names) + " |")
        print("|---|---:|" + "---:|" * len(names))
        ratios = {name: [] for name in names}
        for corpus, lines in texts.items():
            batches = [tf.constant(lines[i : i + batch]) for i in range(0, len(lines), batch)][: arguments.calls]
            batches = [b for b in batches if b.shape[0] == batch] or batches[:1]
            timings = measure(found, batches, arguments.rounds)
            row = [timings[name] / timings["deterministic"] for name in names]
            if corpus != BEST_CASE:
                for name, ratio in zip(names, row):
                    ratios[name].append(ratio)
            per_call = 1000 * timings["deterministic"] / len(batches)
            print(f"| {corpus} | {per_call:.1f} | " + " | ".join(f"{r:.2f}x" for r in row) + " |")
        means = [math.exp(sum(map(math.log, ratios[name])) / len(ratios[name])) for name in names]
        print("| geometric mean (real text) | | " + " | ".join(f"{m:.2f}x" for m in means) + " |")


if __name__ == "__main__":
    main()
