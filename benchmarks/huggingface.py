"""What loading a `tokenizer.json` costs: `from_huggingface` layers against the layers they are built from.

    python benchmarks/huggingface.py [--batches 1 32 1024] [--rounds 5]

Families: BERT uncased (the shared `tokenizer.json`); GPT-2, RoBERTa (a prefix space and
`<s> ... </s>`), Llama-3 (its split regex, ignore_merges) and Llama-2 (character-level BPE with byte
fallback after `Prepend`/`Replace`): files Hugging Face trains on the real-text mix, 30,000 tokens;
T5 (`Unigram` after `Precompiled` with SentencePiece's nmt_nfkc map, `Strip`, a regex `Replace` and a
splitting `Metaspace`) and ALBERT (the same after quote `Replace`s, `NFKD`, `StripAccents` and
`Lowercase`), 16,000 pieces; GPT-NeoX (NFC, byte-level BPE), CLIP (normalizers, an inverted regex
`Split`, `ByteLevel`, `</w>`) and the quick-tour BPE (`Whitespace`, characters), 30,000 tokens.
The files' truncation and padding are removed, so the layers give ragged ids and the ratio shows
what the loaded layer adds to the bare one: finding added tokens, normalizing, framing. For each:
the loaded layer, the bare layer (`WordPieceLayer`, `BPELayer` or `HuggingFaceUnigram` with the same
options, given the text already normalized for Llama-2 and GPT-NeoX, normalized and pre-tokenized for
T5, and a batch's words, flattened, for files whose pre-tokenizer cuts words), and
Hugging Face `tokenizers` itself (one thread, for reference), on the corpora of `realtext.py` at
each batch size. The loaded layer is timed against each of the other two in rounds of its own,
interleaved, medians.
Ratio = loaded speed / other speed (1.0 against bare: loading costs nothing).
"""

import argparse
import json
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["RAYON_NUM_THREADS"] = "1"  # Hugging Face tokenizers: one thread

import realtext as rt  # noqa: E402
import tensorflow as tf  # noqa: E402

import tfsubword  # noqa: E402
from tfsubword.layers.huggingface_models import HuggingFaceUnigram  # noqa: E402
from tfsubword.text import normalization_rules  # noqa: E402
from tfsubword.text.byte_level import from_byte_level  # noqa: E402

LOADED, BARE, HF = "loaded", "bare", "HF tokenizers"


LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def family_files(mix):
    """family -> tokenizer.json text, without truncation and padding."""
    import tokenizers

    files = {"bert-uncased": (rt.DATA / "bert-base-uncased-tokenizer.json").read_text(encoding="utf-8")}
    for family, prefix_space in (("gpt2", False), ("roberta", True)):
        trainer = tokenizers.ByteLevelBPETokenizer(add_prefix_space=prefix_space)
        specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"] if prefix_space else ["<|endoftext|>"]
        trainer.train_from_iterator(mix, vocab_size=30000, min_frequency=2, special_tokens=specials)
        if prefix_space:
            trainer.post_processor = tokenizers.processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
        files[family] = trainer._tokenizer.to_str()
    pre, processors = tokenizers.pre_tokenizers, tokenizers.processors
    llama3 = tokenizers.Tokenizer(tokenizers.models.BPE(ignore_merges=True))
    split = pre.Split(tokenizers.Regex(LLAMA3_SPLIT), behavior="isolated")
    llama3.pre_tokenizer = pre.Sequence([split, pre.ByteLevel(add_prefix_space=False, use_regex=False)])
    specials = ["<|begin_of_text|>", "<|end_of_text|>"]
    llama3.train_from_iterator(
        mix,
        tokenizers.trainers.BpeTrainer(
            vocab_size=30000, special_tokens=specials, initial_alphabet=pre.ByteLevel.alphabet()
        ),
    )
    llama3.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", special_tokens=[(specials[0], 0)]
    )
    files["llama3"] = llama3.to_str()
    normalizers = tokenizers.normalizers
    llama2 = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    llama2.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=30000, special_tokens=["<unk>", "<s>", "</s>"], limit_alphabet=1000
    )
    llama2.train_from_iterator(mix, trainer)
    llama2.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    config = json.loads(llama2.to_str())
    config["model"]["vocab"].update({f"<0x{b:02X}>": len(config["model"]["vocab"]) + b for b in range(256)})
    files["llama2"] = json.dumps(config)
    charsmap = normalizers.Precompiled(normalization_rules.precompiled_charsmap("nmt_nfkc"))
    unicode_steps = [normalizers.NFKD(), normalizers.StripAccents(), normalizers.Lowercase()]
    quotes = [normalizers.Replace("``", '"'), normalizers.Replace("''", '"')]
    for family, steps, end in (
        ("t5", [charsmap, normalizers.Strip(left=False, right=True)], ["$A", "</s>"]),
        ("albert", [*quotes, *unicode_steps, charsmap], ["<s>", "$A", "</s>"]),
    ):
        unigram = tokenizers.Tokenizer(tokenizers.models.Unigram())
        space = "\u2581" if family == "t5" else " "
        unigram.normalizer = normalizers.Sequence([*steps, normalizers.Replace(tokenizers.Regex(" {2,}"), space)])
        unigram.pre_tokenizer = pre.Metaspace("\u2581", prepend_scheme="always")
        unigram.decoder = tokenizers.decoders.Metaspace("\u2581", prepend_scheme="always")
        trainer = tokenizers.trainers.UnigramTrainer(
            vocab_size=16000, special_tokens=["<pad>", "</s>", "<unk>", "<s>"], unk_token="<unk>"
        )
        unigram.train_from_iterator(mix, trainer)
        unigram.post_processor = processors.TemplateProcessing(
            single=end, special_tokens=[("</s>", 1), ("<s>", 3)] if family == "albert" else [("</s>", 1)]
        )
        files[family] = unigram.to_str()
    files.update(word_family_files(mix))
    for family, text in files.items():
        config = json.loads(text)
        config["truncation"] = config["padding"] = None
        files[family] = json.dumps(config)
    return files


def word_family_files(mix):
    """GPT-NeoX's pipeline (NFC, then GPT-2's byte-level BPE), CLIP's (NFC, a regex Replace,
    Lowercase; an inverted regex Split, ByteLevel; `</w>` suffixes) and Hugging Face's quick-tour BPE
    (`Whitespace`, characters), each trained on the mix, 30,000 tokens."""
    import tokenizers

    models, normalizers, pre = tokenizers.models, tokenizers.normalizers, tokenizers.pre_tokenizers
    files = {}
    neox = tokenizers.Tokenizer(models.BPE())
    neox.normalizer = normalizers.NFC()
    neox.pre_tokenizer = pre.ByteLevel(add_prefix_space=False)
    alphabet = pre.ByteLevel.alphabet()
    neox.train_from_iterator(
        mix,
        tokenizers.trainers.BpeTrainer(vocab_size=30000, special_tokens=["<|endoftext|>"], initial_alphabet=alphabet),
    )
    files["gpt-neox"] = neox.to_str()
    clip = tokenizers.Tokenizer(
        models.BPE(continuing_subword_prefix="", end_of_word_suffix="</w>", unk_token="<|endoftext|>")
    )
    clip.normalizer = normalizers.Sequence(
        [normalizers.NFC(), normalizers.Replace(tokenizers.Regex(r"\s+"), " "), normalizers.Lowercase()]
    )
    words = tokenizers.Regex(r"'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+")
    clip.pre_tokenizer = pre.Sequence([pre.Split(words, "removed", invert=True), pre.ByteLevel(add_prefix_space=False)])
    specials = ["<|startoftext|>", "<|endoftext|>"]
    clip.train_from_iterator(
        mix,
        tokenizers.trainers.BpeTrainer(
            vocab_size=30000, special_tokens=specials, end_of_word_suffix="</w>", initial_alphabet=alphabet
        ),
    )
    clip.post_processor = tokenizers.processors.RobertaProcessing((specials[1], 1), (specials[0], 0))
    files["clip"] = clip.to_str()
    quick = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]"))
    quick.pre_tokenizer = pre.Whitespace()
    quick.train_from_iterator(
        mix, tokenizers.trainers.BpeTrainer(vocab_size=30000, special_tokens=["[UNK]", "[CLS]", "[SEP]"])
    )
    files["bpe-whitespace"] = quick.to_str()
    return files


def systems(text):
    """The loaded layer, the bare layer it is built from (given the text as the file's normalizer
    leaves it, in Python), and Hugging Face."""
    import tokenizers

    loaded = tfsubword.from_huggingface(text)
    bare = type(loaded.tokenizer).from_config(loaded.tokenizer.get_config())
    with tempfile.TemporaryDirectory() as directory:
        loaded.tokenizer.save_assets(directory)
        bare.load_assets(directory)
    reference = tokenizers.Tokenizer.from_str(text)
    # The bare layer's input, normalized in Python once (the warm-up call), then looked up.
    normalized = {}
    normalize = reference.normalizer.normalize_str if loaded.normalizer else None
    if loaded.pre_tokenizer and isinstance(loaded.tokenizer, HuggingFaceUnigram):
        # The words of a splitting `Metaspace`, joined: the bare layer cuts them again.
        pre_tokenize = reference.pre_tokenizer.pre_tokenize_str

        def normalize(text):
            return "".join(word for word, _ in pre_tokenize(reference.normalizer.normalize_str(text)))

    encode_bare, _, _ = rt.in_graph(bare)
    if loaded._words is not None:
        # Words cut by the pre-tokenizer: the bare layer takes a batch's words, flattened.
        pre_tokenize, normalize_text = reference.pre_tokenizer.pre_tokenize_str, normalize
        # A `ByteLevel` step after the cuts writes each word in its alphabet: the bare layer takes text.
        as_text = (lambda word: from_byte_level(word).decode("utf-8")) if bare.byte_level else (lambda word: word)

        def normalize(text):
            return [as_text(word) for word, _ in pre_tokenize(normalize_text(text) if normalize_text else text)]

        def encode_words(texts):
            return encode_bare([w for t in texts for w in normalized.get(t) or normalized.setdefault(t, normalize(t))])

    return {
        LOADED: rt.in_graph(loaded),
        BARE: (
            encode_words
            if loaded._words is not None
            else lambda texts: encode_bare(
                [normalized.get(t) or normalized.setdefault(t, normalize(t)) for t in texts]
            ),
            None,
            None,
        )
        if normalize
        else rt.in_graph(bare),
        HF: rt.in_python(reference.encode_batch),
    }


def check_same_ids(found, text, lines):
    """The bare layer must do the loaded layer's work: on each line, its ids are the loaded layer's
    without the start and end ids (lines holding an added token, which only the loaded layer finds, aside)."""
    unframed = tfsubword.from_huggingface(text, add_special_tokens=False)
    added = [token["content"] for token in json.loads(text)["added_tokens"]]
    for line in lines:
        if any(token in line for token in added):
            continue
        bare = found[BARE][0]([line])
        want = unframed(tf.constant([line])).flat_values.numpy().tolist()
        if bare.flat_values.numpy().tolist() != want:
            raise AssertionError(f"the bare layer's ids differ from the loaded layer's on {line!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 32, 1024])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bytes", type=int, default=100_000, help="UTF-8 bytes of each corpus")
    parser.add_argument("--single", type=int, default=100, help="lines encoded one at a time at batch 1")
    parser.add_argument("--batches-of-32", type=int, default=32, help="batches encoded at batch 32")
    parser.add_argument("--families", nargs="+", help="only these families (default: all)")
    arguments = parser.parse_args()
    texts = {name: rt.lines_of(path, arguments.bytes) for name, path in rt.CORPORA.items()}
    mix = [line for name in texts if name != rt.BEST_CASE for line in texts[name]]
    print(f"TensorFlow {tf.__version__}; " + ", ".join(f"{name} {len(lines)} lines" for name, lines in texts.items()))
    files = family_files(mix)
    for family, text in files.items():
        if arguments.families and family not in arguments.families:
            continue
        found = systems(text)
        check_same_ids(found, text, [line for lines in texts.values() for line in lines[:20]])
        ratios = {}  # (batch, against) -> corpus -> loaded speed / other speed
        for corpus, lines in texts.items():
            for batch in arguments.batches:
                runners, _ = rt.runners(found, lines, batch, arguments)
                for other in (BARE, HF):
                    # Each comparison in rounds of its own: a layer run right after Hugging Face's
                    # call is slower (benchmarks/RESULTS.md), and in rounds of three the loaded
                    # layer came after it more often than the bare one.
                    seconds = rt.timed({name: runners[name] for name in (LOADED, other)}, arguments.rounds)
                    ratios.setdefault((batch, other), {})[corpus] = seconds[other] / seconds[LOADED]
        keys = list(ratios)
        print(f"\n### {family}: loaded speed / other speed ({arguments.rounds} rounds, medians)\n")
        print("| corpus | " + " | ".join(f"b{batch} / {other}" for batch, other in keys) + " |")
        print("|---|" + "---:|" * len(keys))
        for corpus in texts:
            print(f"| {corpus} | " + " | ".join(f"{ratios[key][corpus]:.2f}x" for key in keys) + " |")
        real = [corpus for corpus in texts if corpus != rt.BEST_CASE]
        means = [rt.geometric_mean([ratios[key][corpus] for corpus in real]) for key in keys]
        print("| geometric mean, real text | " + " | ".join(f"**{mean:.2f}x**" for mean in means) + " |")
        lowest = [min(ratios[key][corpus] for corpus in real) for key in keys]
        print("| lowest, real text | " + " | ".join(f"{low:.2f}x" for low in lowest) + " |", flush=True)


if __name__ == "__main__":
    main()
