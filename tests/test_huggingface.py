"""from_huggingface against Hugging Face `tokenizers` itself, on files each family's pipeline makes.

The files are built here from the shared text (no network): BERT uncased is the shared
`tokenizer.json`; BERT cased, GPT-2, RoBERTa, Llama-3, Qwen2 and Llama-2 files are trained by
`tokenizers` with those families' components (and GPT-NeoX's: NFC, then GPT-2's), and one adds tokens
of both kinds to GPT-2's. Two more
Llama-2 files are converted from a SentencePiece BPE model, as `transformers` converts Llama-2's
(`Prepend`/`Replace` normalizers, or the newer `Metaspace` pre-tokenizer). T5's pipeline (`Precompiled`,
`Strip`, a regex `Replace`, a splitting `Metaspace`, `Unigram`) is converted from a SentencePiece unigram
model and trained by `tokenizers`; ALBERT's (quotes, `NFKD`, `StripAccents`, `Lowercase`, then
`Precompiled`) is converted from one; the trained T5-style file with byte fallback added is Unigram's.
Three more are trained with pre-tokenizers that cut words (`Whitespace`, `Digits`, `WhitespaceSplit`,
`Punctuation`, `Split`) for each model. Ids must equal `Tokenizer.encode(...).ids` exactly.
"""

import collections
import functools
import json
import random

import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import strategies as st

from tests import contract
from tests.conftest import (
    SHARED_DATA,
    nonempty_lines,
    parity_call,
    real_texts,
    shared_file,
    shared_texts,
    wordpiece_route,
)
from tests.test_sentencepiece_layer import trained_model
from tests.test_unigram import trained_model as trained_unigram_model
from tfsubword import HuggingFaceTokenizer, from_huggingface
from tfsubword.files.huggingface import json_float

FAMILIES = (
    "bert-uncased",
    "bert-cased",
    "gpt2",
    "roberta",
    "gpt2-added",
    "gpt2-single-word",
    "gpt-neox",
    "starcoder",
    "bloom",
    "clip",
    "llama3",
    "qwen2",
    "llama2",
    "llama2-sentencepiece",
    "llama2-metaspace",
    "t5",
    "t5-trained",
    "albert",
    "unigram-bytes",
    "bpe-whitespace",
    "wordpiece-words",
    "unigram-words",
)
# The quick tier traces a layer for one family of each kind (WordPiece with BERT's rules, byte-level
# BPE, byte-fallback BPE, Unigram); `--full` traces every family.
TRACED_QUICKLY = ("bert-uncased", "gpt2", "llama2", "t5")
# Families the quick tier encodes eagerly: one of each model, pre-tokenizer and decoder kind (the
# others repeat one of these with another file, which `--full` checks).
ENCODED_QUICKLY = TRACED_QUICKLY + (
    "roberta",
    "clip",
    "llama3",
    "unigram-bytes",
    "bpe-whitespace",
    "wordpiece-words",
    "unigram-words",
)


def traced_quickly(families, quick=TRACED_QUICKLY, *more):
    """`families` as parameters (with the arguments `more` after each), those not in `quick` marked `full`."""
    return [pytest.param(family, *more, marks=() if family in quick else pytest.mark.full) for family in families]


# The split patterns of Llama-3's and Qwen2's tokenizer.json files, as they are written there.
CL100K_TAIL = r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
SPLIT_REGEXES = {
    "llama3": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}" + CL100K_TAIL,
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}" + CL100K_TAIL,
}
# Texts with each family's added tokens written in them, and the edges of the matching rules.
WITH_TOKENS = [
    "hello[SEP]world [CLS]x [MASK]y [sep]",
    "a<mask>b",
    "a <mask> b",
    "a  \u3000<mask>b",
    "<s>x</s>",
    "<|endoftext|>The end.<|endoftext|><|endoftext|>",
    "[[SEP]] <<mask>> <s><s>",
    "",
    " ",
    "\xa0 x",
    "ab<|endoftext|>hello world, hello worlds é",
    "dtext  x dtext<|endoftext|>",
    "<s> x <sep>y</s>",
    " <s>  two  spaces <sep>",
    "a<m> <m>a <m><m> _<m> 1<m> \u00e9<m> .<m>. \u4e2dab ab ab_ abab the other",
    "<m>ab<m> aab ab. xab (the) theme",
]


def tokenizers_module():
    return pytest.importorskip("tokenizers")


def training_files():
    paths = [SHARED_DATA / "botchan.txt", SHARED_DATA / "wikitext2-valid.txt"]
    if not all(path.is_file() for path in paths):
        pytest.skip(f"reference data not available: {SHARED_DATA}")
    return [str(path) for path in paths]


@functools.cache
def family_json(family):
    """The `tokenizer.json` text of a family."""
    tokenizers = tokenizers_module()
    implementations = tokenizers.implementations
    if family == "bert-uncased":
        return shared_file("bert-base-uncased-tokenizer.json").read_text(encoding="utf-8")
    if family == "bert-cased":
        tokenizer = implementations.BertWordPieceTokenizer(lowercase=False)
        tokenizer.train(training_files(), vocab_size=4000, show_progress=False)
        tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
        )
        tokenizer._tokenizer.enable_truncation(64, direction="left")
        return tokenizer._tokenizer.to_str()
    if family == "gpt2":
        tokenizer = implementations.ByteLevelBPETokenizer()
        tokenizer.train(training_files(), vocab_size=4000, special_tokens=["<|endoftext|>"], show_progress=False)
        return tokenizer._tokenizer.to_str()
    if family in ("clip", "clip-joined-classes"):
        # CLIP's (Stable Diffusion's text encoder): NFC, runs of white space to one space, lowercase;
        # the words of a regex, then bytes; `</w>` ends each word's last symbol. With joined classes,
        # GPT-2's regex (run by ByteLevel) cuts some of the regex's words again ("abc123").
        models, normalizers, pre = tokenizers.models, tokenizers.normalizers, tokenizers.pre_tokenizers
        bpe = models.BPE(continuing_subword_prefix="", end_of_word_suffix="</w>", unk_token="<|endoftext|>")
        tokenizer = tokenizers.Tokenizer(bpe)
        tokenizer.normalizer = normalizers.Sequence(
            [normalizers.NFC(), normalizers.Replace(tokenizers.Regex("\\s+"), " "), normalizers.Lowercase()]
        )
        words = tokenizers.Regex(
            "'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+"
            if family == "clip"
            else "[\\p{L}\\p{N}]+|[^\\s\\p{L}\\p{N}]+"
        )
        split = pre.Split(words, behavior="removed", invert=True)
        tokenizer.pre_tokenizer = pre.Sequence([split, pre.ByteLevel(add_prefix_space=False)])
        tokenizer.decoder = tokenizers.decoders.ByteLevel()
        specials = ["<|startoftext|>", "<|endoftext|>"]
        trainer = tokenizers.trainers.BpeTrainer(
            vocab_size=4000,
            special_tokens=specials,
            end_of_word_suffix="</w>",
            initial_alphabet=pre.ByteLevel.alphabet(),
            show_progress=False,
        )
        tokenizer.train(training_files(), trainer)
        tokenizer.post_processor = tokenizers.processors.RobertaProcessing(
            (specials[1], 1), (specials[0], 0), add_prefix_space=False, trim_offsets=False
        )
        return tokenizer.to_str()
    if family == "bloom":
        # BLOOM's: a Split of its regex (a class holding a class), then bytes without GPT-2's regex.
        tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
        pre = tokenizers.pre_tokenizers
        split = pre.Split(tokenizers.Regex(" ?[^(\\s|[.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c])]+"), "isolated")
        tokenizer.pre_tokenizer = pre.Sequence([split, pre.ByteLevel(add_prefix_space=False, use_regex=False)])
        tokenizer.decoder = tokenizers.decoders.ByteLevel()
        trainer = tokenizers.trainers.BpeTrainer(
            vocab_size=4000,
            special_tokens=["<pad>", "<s>", "</s>"],
            initial_alphabet=pre.ByteLevel.alphabet(),
            show_progress=False,
        )
        tokenizer.train(training_files(), trainer)
        return tokenizer.to_str()
    if family in ("gpt-neox", "starcoder"):
        # GPT-NeoX's (Pythia, OLMo): byte-level BPE after NFC; StarCoder's: each digit cut out first.
        tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
        pre = tokenizers.pre_tokenizers
        tokenizer.pre_tokenizer = pre.ByteLevel(add_prefix_space=False)
        if family == "gpt-neox":
            tokenizer.normalizer = tokenizers.normalizers.NFC()
        else:
            tokenizer.pre_tokenizer = pre.Sequence([pre.Digits(individual_digits=True), tokenizer.pre_tokenizer])
        tokenizer.decoder = tokenizers.decoders.ByteLevel()
        trainer = tokenizers.trainers.BpeTrainer(
            vocab_size=4000,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tokenizer.train(training_files(), trainer)
        return tokenizer.to_str()
    if family == "gpt2-single-word":
        # Added tokens matched only where no word character touches them, of both kinds.
        tokenizer = tokenizers.Tokenizer.from_str(family_json("gpt2"))
        tokenizer.add_special_tokens([tokenizers.AddedToken("<m>", single_word=True)])
        tokenizer.add_tokens(
            [tokenizers.AddedToken(t, single_word=True, normalized=n) for t, n in (("ab", False), ("the", True))]
        )
        return tokenizer.to_str()
    if family == "gpt2-added":
        # Non-special tokens matched in normalized text: a second pass, in the pieces between the
        # special ones ("b<|end" would win a single pass over "ab<|endoftext|>").
        tokenizer = tokenizers.Tokenizer.from_str(family_json("gpt2"))
        tokenizer.add_tokens([tokenizers.AddedToken(t, normalized=True) for t in ("b<|end", "hello world", " é")])
        tokenizer.add_tokens([tokenizers.AddedToken("dtext", normalized=False, rstrip=True)])
        return tokenizer.to_str()
    if family in SPLIT_REGEXES:
        # Llama-3 and Qwen2: a Split of their regex, then bytes; Llama-3 looks whole words up first.
        tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE(ignore_merges=family == "llama3"))
        pre = tokenizers.pre_tokenizers
        split = pre.Split(tokenizers.Regex(SPLIT_REGEXES[family]), behavior="isolated")
        tokenizer.pre_tokenizer = pre.Sequence([split, pre.ByteLevel(add_prefix_space=False, use_regex=False)])
        tokenizer.decoder = tokenizers.decoders.ByteLevel()
        specials = ["<|begin_of_text|>", "<|end_of_text|>"]
        trainer = tokenizers.trainers.BpeTrainer(
            vocab_size=4000, special_tokens=specials, initial_alphabet=pre.ByteLevel.alphabet(), show_progress=False
        )
        tokenizer.train(training_files(), trainer)
        if family == "llama3":
            tokenizer.post_processor = tokenizers.processors.Sequence(
                [
                    tokenizers.processors.ByteLevel(trim_offsets=False),
                    tokenizers.processors.TemplateProcessing(
                        single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 0)]
                    ),
                ]
            )
        return tokenizer.to_str()
    if family == "llama2":
        # SentencePiece-style BPE as Llama-2's file has it: spaces become ▁ and one is put
        # first, the text is one word of characters, and a character outside the vocabulary is the
        # tokens of its bytes (so the alphabet is kept small here: most scripts fall back).
        normalizers = tokenizers.normalizers
        tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
        tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        trainer = tokenizers.trainers.BpeTrainer(
            vocab_size=3000, special_tokens=["<unk>", "<s>", "</s>"], limit_alphabet=150, show_progress=False
        )
        lines = [line for path in training_files() for line in nonempty_lines(path)]
        tokenizer.train_from_iterator(lines, trainer)
        tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
            single="<s> $A", special_tokens=[("<s>", 1)]
        )
        decoders = tokenizers.decoders
        tokenizer.decoder = decoders.Sequence(
            [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
        )
        config = json.loads(tokenizer.to_str())
        vocab = config["model"]["vocab"]
        vocab.update({f"<0x{byte:02X}>": len(vocab) + byte for byte in range(256)})
        return json.dumps(config)
    if family.startswith("llama2-"):
        return llama2_from_sentencepiece(metaspace=family == "llama2-metaspace")
    if family.startswith("t5"):
        return t5_file(trained=family == "t5-trained")
    if family == "unigram-bytes":
        # The trained T5-style file with byte fallback: characters it lacks become their bytes.
        config = json.loads(family_json("t5-trained"))
        config["model"]["byte_fallback"] = True
        config["model"]["vocab"] += [[f"<0x{byte:02X}>", -20.0] for byte in range(256)]
        decoders = [{"type": "ByteFallback"}, config["decoder"]]
        config["decoder"] = {"type": "Sequence", "decoders": decoders}
        return json.dumps(config)
    if family == "albert":
        return albert_file()
    if family in WORD_FAMILIES:
        return words_file(family)
    if family == "roberta":
        specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
        tokenizer = implementations.ByteLevelBPETokenizer(add_prefix_space=True)
        tokenizer.train(training_files(), vocab_size=4000, special_tokens=specials, show_progress=False)
        tokenizer.post_processor = tokenizers.processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
        tokenizer._tokenizer.add_special_tokens([tokenizers.AddedToken("<mask>", lstrip=True, special=True)])
        tokenizer._tokenizer.enable_padding(pad_id=1, pad_token="<pad>", direction="left", pad_to_multiple_of=8)
        return tokenizer._tokenizer.to_str()
    raise AssertionError(family)


# Files whose pre-tokenizer cuts words (Split, Whitespace, ...), each word then through the model alone.
WORD_FAMILIES = ("bpe-whitespace", "wordpiece-words", "unigram-words")


def words_file(family):
    """Hugging Face's quick-tour BPE (`Whitespace`, `[CLS] $A [SEP]`); WordPiece after `NFD`,
    `Lowercase`, `StripAccents`, cut by `Whitespace` and single `Digits`; Unigram after `NFKC` and
    `Lowercase`, cut by `WhitespaceSplit`, contiguous `Punctuation` and an inverted `Split`."""
    tokenizers = tokenizers_module()
    models, pre, normalizers = tokenizers.models, tokenizers.pre_tokenizers, tokenizers.normalizers
    trainers = tokenizers.trainers
    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    if family == "bpe-whitespace":
        tokenizer = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]"))
        tokenizer.pre_tokenizer = pre.Whitespace()
        trainer = trainers.BpeTrainer(vocab_size=4000, special_tokens=specials, show_progress=False)
    elif family == "wordpiece-words":
        tokenizer = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=20))
        tokenizer.normalizer = normalizers.Sequence(
            [normalizers.NFD(), normalizers.Lowercase(), normalizers.StripAccents()]
        )
        tokenizer.pre_tokenizer = pre.Sequence([pre.Whitespace(), pre.Digits(individual_digits=True)])
        tokenizer.decoder = tokenizers.decoders.WordPiece()
        trainer = trainers.WordPieceTrainer(vocab_size=4000, special_tokens=specials, show_progress=False)
    else:
        tokenizer = tokenizers.Tokenizer(models.Unigram())
        tokenizer.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
        split = pre.Split(tokenizers.Regex("(?:a|e|i|o|u)+"), "merged_with_next", invert=True)
        tokenizer.pre_tokenizer = pre.Sequence([pre.WhitespaceSplit(), pre.Punctuation("contiguous"), split])
        specials = ["<unk>", "<s>", "</s>"]
        trainer = trainers.UnigramTrainer(
            vocab_size=3000, special_tokens=specials, unk_token="<unk>", show_progress=False
        )
    tokenizer.train(training_files(), trainer)
    if family != "unigram-words":
        tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]
        )
    return tokenizer.to_str()


def sentencepiece_bpe_model():
    """The ModelProto of a SentencePiece BPE model with Llama-2's settings (byte fallback, identity
    rules, spaces kept, digits split) and a user-defined symbol, trained on shared text."""
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(trained_model("llama2_converted"))
    return proto


def llama2_from_sentencepiece(metaspace):
    """The tokenizer.json `transformers` makes of a Llama-2 SentencePiece model: the pieces in id
    order; as merges, every split of a piece into two pieces, by the piece's score (highest first),
    then the longer left part; control and user-defined pieces as added tokens matched in raw text."""
    tokenizers = tokenizers_module()
    proto = sentencepiece_bpe_model()
    vocab = {piece.piece: index for index, piece in enumerate(proto.pieces)}
    merges = [
        (piece.piece[:cut], piece.piece[cut:], piece.score)
        for piece in proto.pieces
        for cut in range(1, len(piece.piece))
        if piece.piece[:cut] in vocab and piece.piece[cut:] in vocab
    ]
    merges.sort(key=lambda merge: (merge[2], len(merge[0]), len(merge[1])), reverse=True)
    model = tokenizers.models.BPE(
        vocab, [(left, right) for left, right, _ in merges], unk_token="<unk>", byte_fallback=True, fuse_unk=True
    )
    tokenizer = tokenizers.Tokenizer(model)
    if metaspace:
        tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace("\u2581", prepend_scheme="first", split=False)
    else:
        normalizers = tokenizers.normalizers
        tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    decoders = tokenizers.decoders
    tokenizer.decoder = decoders.Sequence(
        [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    unknown, control, user_defined = 2, 3, 4
    tokenizer.add_tokens(
        [
            tokenizers.AddedToken(piece.piece, normalized=False, special=piece.type != user_defined)
            for piece in proto.pieces
            if piece.type in (unknown, control, user_defined)
        ]
    )
    tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", vocab["<s>"])]
    )
    return tokenizer.to_str()


def t5_file(trained):
    """A T5-style tokenizer.json, as `transformers` converts T5's SentencePiece model: its pieces and
    scores, then 10 `<extra_id_N>` pieces (score 0, added tokens, as control pieces are);
    `Precompiled` with the model's character map, `Strip` on the right, runs of spaces to one `▁`;
    `Metaspace` splitting words; `$A </s>`. `trained`: the same pipeline, the pieces trained by
    `tokenizers`' `UnigramTrainer` on shared text (scores in double precision)."""
    from sentencepiece import sentencepiece_model_pb2

    tokenizers = tokenizers_module()
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(trained_unigram_model("rare_characters"))
    extra = [f"<extra_id_{i}>" for i in range(9, -1, -1)]
    vocab = [(piece.piece, piece.score) for piece in proto.pieces] + [(token, 0.0) for token in extra]
    tokenizer = tokenizers.Tokenizer(tokenizers.models.Unigram(vocab, unk_id=proto.trainer_spec.unk_id))
    normalizers = tokenizers.normalizers
    tokenizer.normalizer = normalizers.Sequence(
        [
            normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
            normalizers.Strip(left=False, right=True),
            normalizers.Replace(tokenizers.Regex(" {2,}"), "\u2581"),
        ]
    )
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace("\u2581", prepend_scheme="always")
    tokenizer.decoder = tokenizers.decoders.Metaspace("\u2581", prepend_scheme="always")
    specials = [piece.piece for piece in proto.pieces if piece.type == 3] + extra
    if trained:
        trainer = tokenizers.trainers.UnigramTrainer(
            vocab_size=1500, special_tokens=["<unk>", *specials], unk_token="<unk>", show_progress=False
        )
        lines = [line for path in training_files() for line in nonempty_lines(path)]
        tokenizer.train_from_iterator(lines, trainer)
    tokenizer.add_special_tokens([tokenizers.AddedToken(token, normalized=False, special=True) for token in specials])
    end = tokenizer.token_to_id("</s>")
    tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single=["$A", "</s>"], pair=["$A", "</s>", "$B", "</s>"], special_tokens=[("</s>", end)]
    )
    return tokenizer.to_str()


def albert_file():
    """An ALBERT-style tokenizer.json, as `transformers` converts ALBERT's SentencePiece model (uncased,
    accents stripped): pieces ending in a digit and a comma lose 100 from their score; `` and '' become
    ", then `NFKD`, `StripAccents`, `Lowercase`, `Precompiled`, runs of spaces to one; `Metaspace`;
    `[CLS] $A [SEP]` (the markers are added here as pieces of score 0)."""
    from sentencepiece import sentencepiece_model_pb2

    tokenizers = tokenizers_module()
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(trained_unigram_model("rare_characters"))
    markers = ["[CLS]", "[SEP]", "[MASK]"]

    def score(piece):
        number_comma = len(piece.piece) >= 2 and piece.piece[-1] == "," and piece.piece[-2].isdigit()
        return piece.score - 100 if number_comma else piece.score

    vocab = [(piece.piece, score(piece)) for piece in proto.pieces] + [(marker, 0.0) for marker in markers]
    tokenizer = tokenizers.Tokenizer(tokenizers.models.Unigram(vocab, unk_id=proto.trainer_spec.unk_id))
    normalizers = tokenizers.normalizers
    tokenizer.normalizer = normalizers.Sequence(
        [
            normalizers.Replace("``", '"'),
            normalizers.Replace("''", '"'),
            normalizers.NFKD(),
            normalizers.StripAccents(),
            normalizers.Lowercase(),
            normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
            normalizers.Replace(tokenizers.Regex(" {2,}"), " "),
        ]
    )
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace("\u2581", prepend_scheme="always")
    tokenizer.decoder = tokenizers.decoders.Metaspace("\u2581", prepend_scheme="always")
    specials = [piece.piece for piece in proto.pieces if piece.type == 3] + markers
    tokenizer.add_special_tokens([tokenizers.AddedToken(token, normalized=False, special=True) for token in specials])
    ids = {marker: tokenizer.token_to_id(marker) for marker in markers}
    tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )
    return tokenizer.to_str()


@functools.cache
def reference(family):
    return tokenizers_module().Tokenizer.from_str(family_json(family))


def encoder(family, add_special_tokens=True, jit_compile=False):
    """(layer, its traced call) for a family, built once (whether `add_special_tokens` is passed or not)."""
    return _encoder(family, add_special_tokens, jit_compile)


@functools.cache
def _encoder(family, add_special_tokens, jit_compile):
    layer = from_huggingface(family_json(family), add_special_tokens=add_special_tokens, jit_compile=jit_compile)
    return layer, parity_call(layer)


def check_identical(family, lines, add_special_tokens=True, batch_size=1024, jit_compile=False):
    """Our ids equal Hugging Face's for every line (a batch at a time, as each pads a batch)."""
    _, encode = encoder(family, add_special_tokens, jit_compile)
    different = []
    for start in range(0, len(lines), batch_size):
        batch = lines[start : start + batch_size]
        got = contract.as_lists(encode(tf.constant(batch)))
        expected = reference(family).encode_batch(batch, add_special_tokens=add_special_tokens)
        different += [(line, g, e.ids) for line, g, e in zip(batch, got, expected) if g != e.ids]
    assert not different, f"{len(lines) - len(different)}/{len(lines)} identical; first: {different[0]}"


def every_line():
    return [line for path in shared_texts() + real_texts() for line in nonempty_lines(path)]


def short_line_of_every_text():
    """A line of 20 to 120 characters from the middle of each text (each script, a few words)."""
    lines = (nonempty_lines(path) for path in shared_texts() + real_texts())
    return [next((line for line in text[len(text) // 2 :] if 20 <= len(line) <= 120), "") for text in lines]


@pytest.mark.full
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("path", shared_texts() + real_texts(), ids=lambda p: p.name)
def test_identical_ids_on_every_line(family, path):
    check_identical(family, nonempty_lines(path))


@pytest.mark.full
@pytest.mark.parametrize("family", ["bert-uncased", "bert-cased", "wordpiece-words"])
def test_wordpiece_files_with_the_compiled_walk_on_every_line(family):
    """`jit_compile=True`, every batch forced through the compiled walk: Hugging Face's ids still."""
    with wordpiece_route("trie walk"):  # read when the layer is traced, or eagerly at each call
        check_identical(family, every_line(), jit_compile=True)


def test_jit_compile_is_for_wordpiece_files():
    """(The full tier builds WordPiece files with it, above.)"""
    with pytest.raises(ValueError, match="jit_compile"):
        from_huggingface(family_json("gpt2"), jit_compile=True)


@pytest.mark.parametrize("family", traced_quickly(FAMILIES, ENCODED_QUICKLY))
def test_every_family_encodes_a_few_lines_as_hugging_face(family):
    """Called eagerly (no trace): each family's layer on a short line of every text and the added tokens."""
    layer, _ = encoder(family)
    lines = short_line_of_every_text() + WITH_TOKENS
    expected = [e.ids for e in reference(family).encode_batch(lines)]
    assert contract.as_lists(layer(tf.constant(lines))) == expected


@pytest.mark.parametrize("family", traced_quickly(FAMILIES))
def test_identical_ids_on_a_sample_of_every_text(family):
    lines = every_line()[::100]
    if not lines:
        pytest.skip(f"reference data not available: {SHARED_DATA}")
    check_identical(family, lines)


@pytest.mark.parametrize(
    "family, add_special_tokens",
    traced_quickly(FAMILIES, TRACED_QUICKLY, True) + traced_quickly(FAMILIES, ["bert-uncased"], False),
)
def test_added_tokens_in_the_text_match(family, add_special_tokens):
    check_identical(family, WITH_TOKENS, add_special_tokens)
    check_identical(family, WITH_TOKENS[:1], add_special_tokens)  # padding to the longest of one


def random_numbers(seed, count):
    """JSON numbers with a fraction, of 1 to 30 digits, some with an exponent, some long integers."""
    rng = random.Random(seed)
    numbers = []
    for _ in range(count):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30)))
        cut = rng.randint(1, len(digits))
        number = ("-" if rng.random() < 0.7 else "") + (digits[:cut].lstrip("0") or "0") + "." + (digits[cut:] or "0")
        if rng.random() < 0.3:
            number += rng.choice(["e", "E"]) + rng.choice(["", "-", "+"]) + str(rng.randint(0, 330))
        numbers.append(number)
    return numbers


@pytest.mark.parametrize("seed", range(4))
def test_scores_are_read_as_tokenizers_reads_them(seed):
    """`tokenizers` reads long decimals a unit in the last place away from the nearest double at
    times; what it holds is what it writes back (shortest round-trip decimals)."""
    tokenizers = tokenizers_module()
    for number in random_numbers(seed, 1000):
        text = '{"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", ' + number + "]]}}"
        try:
            held = json.loads(tokenizers.Tokenizer.from_str(text).to_str())["model"]["vocab"][0][1]
        except Exception:  # out of range for tokenizers: out of range here too
            with pytest.raises(ValueError, match="out of range"):
                json_float(number)
            continue
        assert json_float(number) == held, number


def test_the_rules_by_hand():
    """Golden ids read off the vocabularies: `[SEP]` written in the text is the token; `<mask>` with
    lstrip takes the whitespace before it; RoBERTa frames with <s> ... </s> and pads on the left."""
    bert, _ = encoder("bert-uncased", False)
    ids = bert.get_vocabulary().index
    got = bert(tf.constant(["hello[SEP]"])).numpy()[0].tolist()
    assert got[:3] == [ids("hello"), ids("[SEP]"), ids("[PAD]")]
    roberta, _ = encoder("roberta")
    ids = roberta.get_vocabulary().index
    got = roberta(tf.constant(["a <mask>"])).numpy()[0].tolist()
    assert got == [ids("<pad>")] * 4 + [ids("<s>"), ids("\u0120a"), ids("<mask>"), ids("</s>")]


def test_words_that_the_byte_level_regex_cuts_again():
    """CLIP's words pass whole through GPT-2's regex, and skip it; these do not ("abc123", "x'd")."""
    texts = ["abc123 x1, it's 2x'd", "Ünïcode 42nd", "a\u3000b  c"]
    _, encode = encoder("clip-joined-classes")
    expected = [e.ids for e in reference("clip-joined-classes").encode_batch(texts)]
    assert contract.as_lists(encode(tf.constant(texts))) == expected
    words = [word for word, _ in reference("clip-joined-classes").pre_tokenizer.pre_tokenize_str("abc123")]
    assert words == ["abc", "123"]  # the premise: cut again


@pytest.mark.parametrize("family", ["clip", "bpe-whitespace"])
def test_invalid_utf8_reads_as_replacement_characters_in_words(family):
    """After a normalizer that decodes the text (CLIP's) or none (the words' own check)."""
    _, encode = encoder(family)
    got = contract.as_lists(encode(tf.constant([b"ab\xff\xfe c\xe2\x82", b"\xc3"])))
    assert got == [e.ids for e in reference(family).encode_batch(["ab\ufffd\ufffd c\ufffd", "\ufffd"])]


@pytest.mark.parametrize("family", traced_quickly(["t5", "albert", "llama2-metaspace"]))
def test_metaspace_runs_of_spaces_across_texts(family):
    """Spaces become the Metaspace character in the decoded batch: a text's first space is not a
    repeat of the last space of the text before it."""
    texts = ["a ", " b", "  ", "", " ", "x  y   z ", "\u2581 c", "d\u2581  e"]
    _, encode = encoder(family)
    assert contract.as_lists(encode(tf.constant(texts))) == [e.ids for e in reference(family).encode_batch(texts)]


def test_added_tokens_after_invalid_utf8_are_found():
    """Invalid UTF-8 reads as U+FFFD (which BERT's cleaning deletes) and does not hide a token."""
    layer, encode = encoder("bert-uncased")
    got = encode(tf.constant([b"ab\xff\xfe[SEP]x", b"\xff[MASK]"])).numpy().tolist()
    expected = reference("bert-uncased").encode_batch(["ab\ufffd\ufffd[SEP]x", "\ufffd[MASK]"])
    assert got == [e.ids for e in expected]


texts_with_tokens = st.lists(
    st.one_of(
        st.text(max_size=12),
        st.sampled_from(
            ["<mask>", "<s>", "</s>", "<|endoftext|>", "<|begin_of_text|>", " ", "\u3000", "\n", "'S", "'s"]
        ),
        st.sampled_from(["<m>", "ab", "the", "a", "_", "\u00e9", "."]),
    ),
    max_size=8,
).map("".join)


@pytest.mark.parametrize(
    "family",
    traced_quickly(
        [
            "gpt2",
            "roberta",
            "llama3",
            "qwen2",
            "llama2",
            "llama2-metaspace",
            "t5",
            "albert",
            "unigram-bytes",
            "clip",
            "clip-joined-classes",
            *WORD_FAMILIES,
        ]
    ),
)
@given(texts=st.lists(texts_with_tokens, min_size=1, max_size=6))
def test_random_text_matches_byte_level_byte_fallback_unigram_and_word_families(family, texts):
    check_identical(family, texts)


DECODERS = {
    "none": None,
    "metaspace": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False},
    "wordpiece-no-cleanup": {"type": "WordPiece", "prefix": "##", "cleanup": False},
}


@pytest.mark.parametrize(
    "decoder", [decoder if decoder == "none" else pytest.param(decoder, marks=pytest.mark.full) for decoder in DECODERS]
)
def test_other_decoders_match(decoder):
    family = "bert-cased" if decoder.startswith("wordpiece") else "llama2"
    text = edited(family, set_path(["decoder"], DECODERS[decoder]))
    layer, reference = from_huggingface(text), tokenizers_module().Tokenizer.from_str(text)
    lines = every_line()[::300] + WITH_TOKENS
    encodings = [e.ids for e in reference.encode_batch(lines)]
    got = layer.detokenize(tf.ragged.constant(encodings)).numpy()
    assert [t.decode("utf-8") for t in got] == [reference.decode(ids) for ids in encodings]


# One family of each kind of decoder in the quick tier: WordPiece, ByteLevel, llama-2's sequence,
# Metaspace, byte fallback then Metaspace, and none.
@pytest.mark.parametrize(
    "family", traced_quickly(FAMILIES, TRACED_QUICKLY + ("unigram-bytes", "wordpiece-words", "unigram-words"))
)
def test_detokenize_follows_the_decoder(family):
    layer, _ = encoder(family)
    lines = every_line()[::200] + WITH_TOKENS
    if len(lines) == len(WITH_TOKENS):
        pytest.skip(f"reference data not available: {SHARED_DATA}")
    encodings = reference(family).encode_batch(lines)
    got = layer.detokenize(tf.ragged.constant([e.ids for e in encodings])).numpy()
    expected = [reference(family).decode(e.ids) for e in encodings]
    assert [text.decode("utf-8") for text in got] == expected


@pytest.mark.parametrize("family", traced_quickly(FAMILIES, ENCODED_QUICKLY))
def test_the_unknown_token_id_is_the_models(family):
    layer, _ = encoder(family)
    model = json.loads(family_json(family))["model"]
    if model["type"] == "Unigram":
        expected = model["unk_id"]
    else:
        expected = None if model.get("unk_token") is None else reference(family).token_to_id(model["unk_token"])
    assert layer.unknown_token_id == expected


@pytest.mark.parametrize("affix", ["continuing_subword_prefix", "end_of_word_suffix"])
def test_character_bpe_with_a_subword_prefix_or_a_word_suffix_matches(affix):
    """Hugging Face's `continuing_subword_prefix` (`##`) and `end_of_word_suffix` (`</w>`) on BPE of
    characters, trained with them."""
    tokenizers = tokenizers_module()
    text = {"continuing_subword_prefix": "##", "end_of_word_suffix": "</w>"}[affix]
    reference = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="[UNK]", **{affix: text}))
    reference.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=2000, special_tokens=["[UNK]"], show_progress=False, **{affix: text}
    )
    reference.train(training_files(), trainer)
    assert sum(text in token for token in reference.get_vocab()) > 500
    layer = from_huggingface(reference.to_str())
    lines = every_line()[::50] + WITH_TOKENS
    assert contract.as_lists(layer(tf.constant(lines))) == [e.ids for e in reference.encode_batch(lines)]


@pytest.mark.full
def test_byte_level_without_its_regex_matches():
    """`ByteLevel(use_regex=false)` alone: each piece between added tokens is one word of bytes."""
    text = edited("gpt2", set_path(["pre_tokenizer", "use_regex"], False))
    layer, reference = from_huggingface(text), tokenizers_module().Tokenizer.from_str(text)
    lines = every_line()[::500] + WITH_TOKENS
    assert contract.as_lists(layer(tf.constant(lines))) == [e.ids for e in reference.encode_batch(lines)]


@pytest.mark.parametrize("prefix_space", [False, True])
def test_byte_level_without_its_regex_after_word_cuts_matches(prefix_space):
    """`WhitespaceSplit` then `ByteLevel(use_regex=false)`: each word is one word of bytes, with a
    space in front of each when `add_prefix_space`."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": prefix_space, "trim_offsets": True, "use_regex": False}
    steps = {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, byte_level]}
    text = edited("gpt2", set_path(["pre_tokenizer"], steps))
    layer, reference = from_huggingface(text), tokenizers_module().Tokenizer.from_str(text)
    lines = every_line()[::100] + WITH_TOKENS
    assert contract.as_lists(layer(tf.constant(lines))) == [e.ids for e in reference.encode_batch(lines)]


def test_sequence_length_truncates_and_pads_as_hugging_face():
    tokenizer = reference("bert-cased")
    layer = from_huggingface(family_json("bert-cased"), sequence_length=12)
    lines = every_line()[::500] + WITH_TOKENS
    tokenizer = tokenizers_module().Tokenizer.from_str(family_json("bert-cased"))
    tokenizer.enable_truncation(12, direction="left")
    tokenizer.enable_padding(length=12, pad_id=0)
    assert layer(tf.constant(lines)).numpy().tolist() == [e.ids for e in tokenizer.encode_batch(lines)]


# Bad files.


def edited(family, edit):
    config = json.loads(family_json(family))
    edit(config)
    return json.dumps(config)


def set_path(path, value):
    def edit(config):
        *parents, key = path
        for parent in parents:
            config = config[parent]
        config[key] = value

    return edit


UNSUPPORTED = [
    ("gpt2", set_path(["normalizer"], {"type": "NFKCF"}), "normalizer"),
    ("gpt2", set_path(["pre_tokenizer"], {"type": "Metaspace", "replacement": "\u2581"}), "split"),
    ("llama2-metaspace", set_path(["pre_tokenizer", "prepend_scheme"], "sometimes"), "prepend_scheme"),
    ("gpt2", set_path(["pre_tokenizer"], {"type": "UnicodeScripts"}), "pre_tokenizer"),
    (
        "bpe-whitespace",
        set_path(
            ["pre_tokenizer"], {"type": "Sequence", "pretokenizers": [{"type": "Whitespace"}, {"type": "Metaspace"}]}
        ),
        "Sequence",
    ),
    ("wordpiece-words", set_path(["normalizer"], {"type": "BertNormalizer"}), "BertPreTokenizer"),
    ("unigram-words", set_path(["pre_tokenizer", "pretokenizers", 2, "behavior"], "Sideways"), "behavior"),
    (
        "unigram-words",
        set_path(["pre_tokenizer", "pretokenizers", 2, "pattern"], {"Regex": "[[:alpha:]]+"}),
        "Split regex",
    ),
    ("gpt2", set_path(["model", "byte_fallback"], True), "byte_fallback"),
    ("gpt2", set_path(["model", "dropout"], 1.5), "dropout"),
    ("llama3", set_path(["pre_tokenizer", "pretokenizers", 0, "pattern"], {"Regex": "\\w+(?!\\S)"}), "Split regex"),
    (
        "starcoder",
        set_path(["pre_tokenizer", "pretokenizers"], [{"type": "ByteLevel"}, {"type": "Digits"}]),
        "Sequence",
    ),
    ("llama3", set_path(["pre_tokenizer", "pretokenizers", 0, "behavior"], "Removed"), "behavior"),
    ("llama3", set_path(["pre_tokenizer", "pretokenizers", 1, "add_prefix_space"], True), "add_prefix_space"),
    ("gpt2", set_path(["model", "type"], "Unigram"), "model"),
    ("t5", set_path(["model", "byte_fallback"], True), "byte_fallback"),  # without the byte pieces
    ("t5", set_path(["normalizer", "normalizers", 2, "pattern"], {"Regex": "(?= )\\s{2,}"}), "Replace regex"),
    ("t5", set_path(["normalizer", "normalizers", 2, "pattern"], {"Regex": "^ +"}), "Replace regex"),
    ("t5", set_path(["normalizer", "normalizers", 2, "pattern"], {"Regex": " *"}), "match nothing"),
    ("t5", set_path(["normalizer", "normalizers", 2, "pattern"], {"Regex": "\\A+ "}), "repeated anchor"),
    ("t5", set_path(["normalizer", "normalizers", 2, "pattern"], {"Regex": " {\u00b2}"}), "repeat"),
    ("t5", set_path(["normalizer", "normalizers", 2, "pattern"], {"Regex": "(?:(?:(?:a{999}){999}){999})"}), "Replace"),
    ("t5", set_path(["normalizer", "normalizers", 1], {"type": "Nmt"}), "normalizer"),
    ("t5", set_path(["pre_tokenizer"], {"type": "UnicodeScripts"}), "pre_tokenizer"),
    ("gpt2", set_path(["post_processor"], {"type": "Tokenizer"}), "post_processor"),
    ("bert-cased", set_path(["normalizer", "clean_text"], False), "clean_text"),
    ("bert-cased", set_path(["pre_tokenizer"], {"type": "Whitespace"}), "pre_tokenizer"),
    ("roberta", set_path(["added_tokens", 4, "single_word"], True), "single_word"),
    ("bert-cased", set_path(["added_tokens", 0, "normalized"], True), "normalized"),
]


@pytest.mark.parametrize("family, edit, named", UNSUPPORTED, ids=lambda v: v if isinstance(v, str) else "")
def test_unsupported_components_are_refused_by_name(family, edit, named):
    with pytest.raises(ValueError, match=named):
        from_huggingface(edited(family, edit))


CORRUPT = [
    ("not json", "{not json", "not valid JSON"),
    ("an array", "[1, 2]", "JSON object"),
    ("deep", "{" + '"a": [' * 100000 + "]" * 100000 + "}", "not valid JSON"),
    ("no model", "{}", "model"),
    ("vocab ids with a gap", set_path(["model", "vocab"], {"a": 0, "b": 2}), "ids 0..n-1"),
    ("vocab ids not ints", set_path(["model", "vocab"], {"a": "0"}), "ids 0..n-1"),
    ("merges not a list", set_path(["model", "merges"], "a b"), "merges"),
    ("merge not a pair", set_path(["model", "merges"], [["a"]]), "merges"),
    ("added id far out", set_path(["added_tokens", 0, "id"], 10**9), "name no token"),
    ("added id not int", set_path(["added_tokens", 0, "id"], "7"), "id"),
    ("added content empty", set_path(["added_tokens", 0, "content"], ""), "non-empty"),
    (
        "stripping a token with an edge space",
        set_path(["added_tokens", 0], {"id": 0, "content": "<|endoftext|>\u3000", "lstrip": True, "special": True}),
        "whitespace",
    ),
    (
        "processor id out",
        set_path(["post_processor"], {"type": "BertProcessing", "sep": ["x", -1], "cls": ["y", 0]}),
        "id",
    ),
    (
        "template special missing",
        set_path(
            ["post_processor"],
            {
                "type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "Z", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "special_tokens": {},
            },
        ),
        "special_tokens",
    ),
    (
        "template without A",
        set_path(["post_processor"], {"type": "TemplateProcessing", "single": [], "special_tokens": {}}),
        "sequence A",
    ),
    (
        "truncation too short",
        lambda config: [
            set_path(["post_processor"], {"type": "BertProcessing", "sep": ["x", 1], "cls": ["y", 0]})(config),
            set_path(["truncation"], {"max_length": 1, "strategy": "LongestFirst", "stride": 0})(config),
        ],
        "max_length",
    ),
    (
        "truncation only second",
        set_path(["truncation"], {"max_length": 9, "strategy": "OnlySecond", "stride": 0}),
        "OnlySecond",
    ),
    ("padding unknown", set_path(["padding"], {"strategy": {"Dynamic": 3}}), "padding"),
    ("pad id out", set_path(["padding"], {"strategy": "BatchLongest", "pad_id": 10**9}), "pad_id"),
    ("fixed padding below truncation", set_path(["padding"], {"strategy": {"Fixed": 4}}), "sequence_length"),
]


CORRUPT_UNIGRAM = [
    ("vocab not pairs", set_path(["model", "vocab"], [["a", 0.0], ["b"]]), "pairs"),
    ("score not a number", set_path(["model", "vocab"], [["a", "0"]]), "pairs"),
    ("a piece twice", set_path(["model", "vocab"], [["<unk>", 0.0], ["a", -1.0], ["a", -2.0]]), "twice"),
    ("score too large", set_path(["model", "vocab", 5, 1], 1e308), "finite"),
    ("no unknown id", set_path(["model", "unk_id"], None), "unk_id"),
    ("unknown id out", set_path(["model", "unk_id"], 10**6), "unk_id"),
    ("charsmap not base64", set_path(["normalizer", "normalizers", 0, "precompiled_charsmap"], "@@"), "charsmap"),
    (
        "charsmap truncated",
        set_path(["normalizer", "normalizers", 0, "precompiled_charsmap"], "AAEAAA=="),
        "charsmap",
    ),
]


@pytest.mark.parametrize("name, change, named", CORRUPT_UNIGRAM, ids=[case[0] for case in CORRUPT_UNIGRAM])
def test_corrupt_unigram_files_give_value_errors(name, change, named):
    with pytest.raises(ValueError, match=named):
        from_huggingface(edited("t5", change))


@pytest.mark.parametrize("name, change, named", CORRUPT, ids=[case[0] for case in CORRUPT])
def test_corrupt_files_give_value_errors(name, change, named):
    text = change if isinstance(change, str) else edited("gpt2", change)
    with pytest.raises(ValueError, match=named):
        from_huggingface(text)


@given(data=st.data())
def test_random_damage_gives_a_layer_or_a_value_error(data):
    """Any field of a file replaced by a random JSON value: a working layer or a ValueError, never
    another exception."""
    config = json.loads(family_json("roberta"))
    config["model"]["vocab"] = dict(list(config["model"]["vocab"].items())[:300])
    config["model"]["merges"] = [m for m in config["model"]["merges"][:200]]
    paths = []

    def walk(node, path):
        paths.append(path)
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in list(items)[:8]:
            walk(value, path + [key])

    walk(config, [])
    path = data.draw(st.sampled_from(paths[1:]))
    junk = st.recursive(
        st.none() | st.booleans() | st.integers(-3, 10**6) | st.text(max_size=5), lambda c: st.lists(c, max_size=3)
    )
    set_path(path, data.draw(junk))(config)
    try:
        layer = from_huggingface(json.dumps(config))
    except ValueError:
        return
    layer(tf.constant(["a <mask> b"]))


def test_a_path_works_as_the_json_text(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(family_json("gpt2"), encoding="utf-8")
    assert from_huggingface(str(path))(["Hello there"]).to_list() == [reference("gpt2").encode("Hello there").ids]
    with pytest.raises(ValueError, match="not a file"):
        from_huggingface(str(tmp_path / "missing.json"))


# The layer contract: config, calls in tf.data, .keras saving, serving from plain TensorFlow.


def test_config_round_trips_every_argument():
    layer = from_huggingface(family_json("roberta"))
    tokens = layer.get_vocabulary()

    def make(**arguments):
        config = {key: value for key, value in layer.get_config().items() if key not in ("name", "dtype")}
        config.update(vocabulary=tokens, tokenizer=layer.tokenizer, name="hf")
        return HuggingFaceTokenizer(**{**config, **arguments})

    changed = {
        "tokenizer": layer.tokenizer,
        "added_tokens": [{"content": "<s>", "id": 0, "lstrip": True, "rstrip": True, "special": False}],
        "start_ids": [3],
        "end_ids": [4, 4],
        "add_special_tokens": False,
        "max_length": 9,
        "truncation_side": "left",
        "sequence_length": 10,
        "pad_to_longest": True,
        "pad_to_multiple_of": 3,
        "padding_side": "left",
        "pad_token": "<unk>",
        "normalizer": [{"type": "Prepend", "prepend": "x"}],
        "pre_tokenizer": [{"type": "Metaspace", "replacement": "_", "prepend_scheme": "always", "split": False}],
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": False},
        "dtype": "string",
        "name": "tokens",
    }
    contract.check_config(HuggingFaceTokenizer, make, changed)


@pytest.mark.parametrize("family", traced_quickly(FAMILIES, quick=["roberta"]))
def test_calls_saving_and_serving_agree(family, tmp_path):
    layer = from_huggingface(family_json(family))
    if family != "roberta":  # RoBERTa's file pads to the longest of each batch
        contract.check_calls_agree(layer, WITH_TOKENS)
    contract.check_keras_saving(layer, WITH_TOKENS, tmp_path)
    dense = (
        layer
        if layer.sequence_length or layer.pad_to_longest
        else from_huggingface(family_json(family), sequence_length=48)
    )
    contract.check_serving(dense, WITH_TOKENS, tmp_path)


def test_bpe_files_sample_in_training_only_quick():
    """A file's BPE `dropout` samples in training, gives the usual ids otherwise; `dropout=0` turns it off."""
    tokenizers = tokenizers_module()
    layer = from_huggingface(edited("gpt2", set_path(["model", "dropout"], 0.5)), seed=3)
    lines = ["Hello world, this is it.", " schoolmaster", ""]
    reference = tokenizers.Tokenizer.from_str(family_json("gpt2"))
    assert layer(lines).to_list() == [encoding.ids for encoding in reference.encode_batch(lines)]
    drawn = {tuple(row) for row in layer([" schoolmaster"] * 200, training=True).to_list()}
    assert len(drawn) > 5
    assert {reference.decode(list(row)) for row in drawn} == {" schoolmaster"}
    off = from_huggingface(family_json("gpt2"), dropout=0)
    assert off([" schoolmaster"], training=True).to_list() == layer([" schoolmaster"]).to_list()
    with pytest.raises(ValueError, match="dropout"):
        from_huggingface(family_json("bert-uncased"), dropout=0.1)


@pytest.mark.full
@pytest.mark.parametrize("family, text", [("gpt2", " schoolmaster"), ("llama2", "I was a rascal.")])
def test_bpe_files_sample_with_their_dropout_in_training_only(family, text):
    """A file's BPE `dropout` (or one given to `from_huggingface`) samples as Hugging Face does, in
    training only; the draws are compared with Hugging Face's own, by a chi-square test."""
    from tests.test_sampling import DRAWS, all_above, same_law

    tokenizers = tokenizers_module()
    with_dropout = edited(family, set_path(["model", "dropout"], 0.3))
    layer = from_huggingface(with_dropout, seed=3)
    lines = ["Hello world, this is it.", text, ""]
    assert layer(lines).to_list() == from_huggingface(family_json(family))(lines).to_list()
    reference = tokenizers.Tokenizer.from_str(with_dropout)
    theirs = collections.Counter(tuple(encoding.ids) for encoding in reference.encode_batch([text] * DRAWS))
    assert len(theirs) > 5
    p_values = {}
    for name, sampling in [("file", layer), ("given", from_huggingface(family_json(family), dropout=0.3, seed=4))]:
        ours = collections.Counter(tuple(row) for row in sampling([text] * DRAWS, training=True).to_list())
        p_values[name] = same_law(ours, theirs)
    all_above(p_values)
    assert from_huggingface(with_dropout, dropout=0)([text], training=True).to_list() == layer([text]).to_list()
    with pytest.raises(ValueError, match="dropout"):
        from_huggingface(family_json("bert-uncased"), dropout=0.1)


def test_unigram_files_sample_in_training_only_quick():
    tokenizers = tokenizers_module()
    text = "the schoolmaster's unaffable Rascal"
    layer = from_huggingface(family_json("t5"), alpha=0.3, seed=5)
    reference = tokenizers.Tokenizer.from_str(family_json("t5"))
    assert layer([text]).to_list() == [reference.encode(text).ids]
    drawn = {tuple(row) for row in layer([text] * 200, training=True).to_list()}
    assert len(drawn) > 20
    assert {reference.decode(list(row)) for row in drawn} == {reference.decode(reference.encode(text).ids)}


@pytest.mark.full
@pytest.mark.parametrize("family", ["t5", "unigram-words"])
def test_unigram_files_sample_as_hugging_face_in_training_only(family):
    """`from_huggingface(..., alpha=)` on a Unigram file (Metaspace, or words a pre-tokenizer cut)
    draws as Hugging Face's `Unigram(alpha=...)` on the same file; inference keeps the usual ids."""
    from tests.test_sampling import DRAWS, same_law

    tokenizers = tokenizers_module()
    text = "the schoolmaster's unaffable Rascal"
    layer = from_huggingface(family_json(family), alpha=0.3, seed=5)
    lines = ["Hello world, this is it.", text, ""]
    assert layer(lines).to_list() == from_huggingface(family_json(family))(lines).to_list()
    reference = tokenizers.Tokenizer.from_str(family_json(family))
    model = json.loads(family_json(family))["model"]
    pieces = [tuple(pair) for pair in model["vocab"]]
    reference.model = tokenizers.models.Unigram(pieces, model["unk_id"], model.get("byte_fallback", False), alpha=0.3)
    theirs = collections.Counter(tuple(encoding.ids) for encoding in reference.encode_batch([text] * DRAWS))
    ours = collections.Counter(tuple(row) for row in layer([text] * DRAWS, training=True).to_list())
    assert len(theirs) > 20
    assert same_law(ours, theirs) > 0.001
    with pytest.raises(ValueError, match="sample a Unigram model"):
        from_huggingface(family_json("gpt2"), alpha=0.1)


@pytest.mark.full
def test_sampling_files_export_and_save_their_usual_ids(tmp_path):
    from tests import contract

    texts = ["Hello world, this is it.", "the schoolmaster's unaffable Rascal", ""]
    # (Served outputs must be dense.)
    layers = [
        from_huggingface(family_json("gpt2"), dropout=0.2, seed=1, sequence_length=48),
        from_huggingface(family_json("t5"), alpha=0.2, sequence_length=48),
    ]
    plain = [from_huggingface(family_json(family), sequence_length=48) for family in ("gpt2", "t5")]
    for layer, usual in zip(layers, plain):
        assert layer(texts).numpy().tolist() == usual(texts).numpy().tolist()
    contract.check_serving_each(layers, texts, tmp_path)
    for number, layer in enumerate(layers):
        directory = tmp_path / f"saved-{number}"
        directory.mkdir()
        contract.check_keras_saving(layer, texts, directory)
