"""The parts of a Hugging Face `tokenizer.json` that act on text, read and checked: the model with its
normalizer and pre-tokenizer, and the decoder. Each reader returns the arguments of the tfsubword
part that reproduces it, or raises `ValueError` naming the component and the setting it does not
reproduce. The checked reads of JSON fields (`field`, `setting`) serve `files.huggingface` too.
No TensorFlow here.
"""

import base64
import binascii
import json

from tfsubword.files import sentencepiece_model as spm_model
from tfsubword.text.oniguruma import re2_pattern

# The regular expressions of the `Split` pre-tokenizers reproduced (`text.byte_level`), by name.
_CONTRACTIONS_ANY_CASE = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
_CL100K_TAIL = "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
SPLIT_PATTERNS = {
    "gpt2": "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
    "llama3": _CONTRACTIONS_ANY_CASE + "\\p{N}{1,3}" + _CL100K_TAIL,
    "qwen2": _CONTRACTIONS_ANY_CASE + "\\p{N}" + _CL100K_TAIL,
}

# Alternatives of a regex each of whose matches GPT-2's regex takes whole, as one match: its
# contractions and runs of its classes (CLIP's `Split` is made of them).
_WHOLE_FOR_GPT2 = {
    *("'s", "'t", "'re", "'ve", "'m", "'ll", "'d"),
    *("\\p{L}+", "[\\p{L}]+", "\\p{N}", "[\\p{N}]", "\\p{N}+", "[\\p{N}]+", "[^\\s\\p{L}\\p{N}]+"),
}

# Where Metaspace puts its replacement character in front of a piece of text: before every piece,
# before the text's first piece only (not after an added token that starts it), or nowhere.
PREPEND_SCHEMES = ("always", "first", "never")

# What each component may be, for the messages.
SUPPORTED = {
    "model": ("WordPiece", "BPE", "Unigram"),
    "normalizer": (
        "BertNormalizer (with WordPiece and BertPreTokenizer)",
        "Precompiled, NFD, NFKD, NFC, NFKC, StripAccents, Lowercase, Prepend, Replace of a string or of a plain "
        "regex, Strip, Sequence of them, none",
    ),
    "pre_tokenizer": (
        "BertPreTokenizer",
        "ByteLevel, after steps that cut words or alone (with BPE)",
        "Sequence of Split (GPT-2's, Llama-3's or Qwen2's regex) and ByteLevel (with BPE)",
        "Metaspace with split false (with BPE)",
        "Metaspace (with Unigram)",
        "Split of a string or a plain regex, Whitespace, WhitespaceSplit, Punctuation, Digits, Sequence of them, "
        "none (with any model)",
    ),
    "post_processor": ("BertProcessing", "RobertaProcessing", "TemplateProcessing", "ByteLevel", "Sequence", "none"),
    "decoder": ("WordPiece", "ByteLevel", "ByteFallback", "Fuse", "Strip", "Replace", "Metaspace", "Sequence"),
}


def unsupported(component, value):
    kind = value.get("type") if isinstance(value, dict) else value
    return ValueError(
        f"tokenizer.json: {component} {json.dumps(kind)} is not supported (supported: "
        f"{', '.join(SUPPORTED[component])}). Received: {json.dumps(value)[:300]}."
    )


def field(owner, data, key, kinds, default=...):
    """`data[key]`, checked to be of one of `kinds` (types; None allows null)."""
    if key not in data:
        if default is ...:
            raise ValueError(f"tokenizer.json: {owner} lacks the field {key!r}.")
        return default
    value = data[key]
    allowed = tuple(kind for kind in kinds if kind is not None)
    if value is None and None in kinds:
        return None
    if isinstance(value, bool) and bool not in allowed:
        allowed = ()
    if not isinstance(value, allowed):
        names = ", ".join("null" if kind is None else kind.__name__ for kind in kinds)
        raise ValueError(f"tokenizer.json: {owner}.{key} must be {names}. Received: {json.dumps(value)[:200]}.")
    return value


def setting(owner, data, key, wanted, default):
    """Check a setting that must have the value `wanted` (the only one reproduced)."""
    value = data.get(key, default)
    if value != wanted:
        raise ValueError(
            f"tokenizer.json: {owner} with {key}={json.dumps(value)} is not supported (only {json.dumps(wanted)})."
        )


def _vocabulary(model):
    vocab = field("model", model, "vocab", (dict,))
    ids = sorted(vocab.values()) if all(isinstance(i, int) and not isinstance(i, bool) for i in vocab.values()) else 0
    if ids != list(range(len(vocab))) or not vocab:
        raise ValueError("tokenizer.json: model.vocab must map its tokens to the ids 0..n-1, each once.")
    return sorted(vocab, key=vocab.get)


def wordpiece(config, model):
    vocabulary = _vocabulary(model)
    unknown = field("model", model, "unk_token", (str,))
    prefix = field("model", model, "continuing_subword_prefix", (str,), "##")
    max_chars = field("model", model, "max_input_chars_per_word", (int,), 100)
    normalizer, pre_tokenizer = config.get("normalizer"), config.get("pre_tokenizer")
    bert_normalizer = isinstance(normalizer, dict) and normalizer.get("type") == "BertNormalizer"
    if not (bert_normalizer and isinstance(pre_tokenizer, dict) and pre_tokenizer.get("type") == "BertPreTokenizer"):
        if bert_normalizer:
            raise ValueError(
                f"tokenizer.json: pre_tokenizer {json.dumps(pre_tokenizer)[:200]} after a BertNormalizer is not "
                "supported (supported: BertPreTokenizer)."
            )
        # Words cut by the pre-tokenizer, each pieced alone.
        options = {"unknown_token": unknown, "suffix_indicator": prefix, "max_chars_per_word": max_chars}
        return "HuggingFaceWordPiece", vocabulary, None, options, string_normalizers(normalizer), _words(pre_tokenizer)
    setting("BertNormalizer", normalizer, "clean_text", True, True)
    options = {
        "lowercase": field("BertNormalizer", normalizer, "lowercase", (bool,), True),
        "strip_accents": field("BertNormalizer", normalizer, "strip_accents", (bool, None), None),
        "split_on_cjk": field("BertNormalizer", normalizer, "handle_chinese_chars", (bool,), True),
        "final_sigma": False,  # Hugging Face lowercases one character at a time
        "max_chars_per_word": max_chars,
        "unknown_token": unknown,
        "suffix_indicator": prefix,
    }
    return "WordPieceLayer", vocabulary, None, options, [], []


def _words(pre_tokenizer):
    """`pre_tokenizer_steps` of a pre-tokenizer that must be made of them."""
    steps = pre_tokenizer_steps(pre_tokenizer)
    if steps is None:
        raise unsupported("pre_tokenizer", pre_tokenizer)
    return steps


def bpe(config, model):
    vocabulary = _vocabulary(model)
    merges = field("model", model, "merges", (list,))
    dropout = field("BPE", model, "dropout", (float, int, None), None)
    if dropout is not None and not 0 <= dropout <= 1:
        raise ValueError(f"tokenizer.json: BPE.dropout must be from 0 to 1 (or null). Received: {dropout}.")
    ignore_merges = field("BPE", model, "ignore_merges", (bool,), False)
    byte_fallback = field("BPE", model, "byte_fallback", (bool,), False)
    # Unknown characters fused into one unknown token: with byte fallback there are none (the byte
    # tokens must all be there), without it the layer has no such rule.
    if field("BPE", model, "fuse_unk", (bool,), False) and not byte_fallback:
        setting("BPE", model, "fuse_unk", False, False)
    prefix, suffix = (field("BPE", model, key, (str, None), None) or "" for key in _AFFIXES)
    if (prefix or suffix) and (ignore_merges or byte_fallback):
        raise ValueError(
            "tokenizer.json: BPE continuing_subword_prefix or end_of_word_suffix with ignore_merges or byte_fallback "
            "is not supported."
        )
    unknown = field("model", model, "unk_token", (str, None), None)
    pre_tokenizer = config.get("pre_tokenizer")
    steps = metaspace(pre_tokenizer)
    if steps is None:
        steps = pre_tokenizer_steps(pre_tokenizer)
    if steps is not None:
        # Character-level: each word (each text, with Metaspace) is pieced alone.
        pattern, add_prefix_space, byte_level = None, False, False
    else:
        (pattern, add_prefix_space, steps), byte_level = _byte_level_pre_tokenizer(pre_tokenizer), True
    if byte_fallback and byte_level:
        raise ValueError("tokenizer.json: BPE byte_fallback with a ByteLevel pre-tokenizer is not supported.")
    options = {
        "byte_level": byte_level,
        "unknown_token": unknown,
        "pattern": pattern,
        "ignore_merges": ignore_merges,
        "byte_fallback": byte_fallback,
        "add_prefix_space": add_prefix_space,
        "continuing_subword_prefix": prefix,
        "end_of_word_suffix": suffix,
        "dropout": None if dropout is None else float(dropout),
    }
    return "BPELayer", vocabulary, merges, options, string_normalizers(config.get("normalizer")), steps or []


_AFFIXES = ("continuing_subword_prefix", "end_of_word_suffix")


def unigram(config, model):
    """The pieces, their scores and the unknown id of a `Unigram` model (checked)."""
    pairs = field("model", model, "vocab", (list,))
    if not pairs or not all(
        isinstance(pair, list)
        and len(pair) == 2
        and isinstance(pair[0], str)
        and isinstance(pair[1], (int, float))
        and not isinstance(pair[1], bool)
        for pair in pairs
    ):
        raise ValueError("tokenizer.json: Unigram model.vocab must be a non-empty list of [piece, score] pairs.")
    pieces = [piece for piece, _ in pairs]
    if len(set(pieces)) != len(pieces):
        raise ValueError("tokenizer.json: Unigram model.vocab holds a piece twice.")
    scores = [float(score) for _, score in pairs]
    if not all(abs(score) < 1e300 for score in scores):
        raise ValueError("tokenizer.json: Unigram model.vocab scores must be finite.")
    unknown_id = field("Unigram", model, "unk_id", (int, None), None)
    if unknown_id is None or not 0 <= unknown_id < len(pieces):
        raise ValueError(
            f"tokenizer.json: Unigram unk_id {json.dumps(unknown_id)} is not supported (supported: the id of a piece)."
        )
    byte_fallback = field("Unigram", model, "byte_fallback", (bool,), False)
    present = set(pieces) if byte_fallback else set()
    missing = [f"<0x{byte:02X}>" for byte in range(256) if byte_fallback and f"<0x{byte:02X}>" not in present]
    if missing:
        raise ValueError(
            f"tokenizer.json: Unigram byte_fallback without the piece {missing[0]!r} is not supported (supported: "
            "all 256 byte pieces in the vocabulary)."
        )
    pre_tokenizer = config.get("pre_tokenizer")
    steps = metaspace(pre_tokenizer, split=True)
    if steps is None:
        steps = _words(pre_tokenizer)
    split_at = steps[0]["replacement"] if steps and steps[0]["type"] == "Metaspace" and steps[0]["split"] else None
    options = {"scores": scores, "unknown_id": unknown_id, "split_at": split_at, "byte_fallback": byte_fallback}
    return "HuggingFaceUnigram", pieces, None, options, string_normalizers(config.get("normalizer")), steps


def string_normalizers(normalizer):
    """The steps of a normalizer made of `Precompiled`, `NFD`, `NFKD`, `NFC`, `NFKC`, `StripAccents`, `Lowercase`,
    `Prepend`, `Replace` (of a string, or of a regex `re2_pattern` reproduces) and `Strip`, in a
    `Sequence` or alone, as a list of their JSON objects (checked); `[]` for none. Others raise
    `ValueError`."""
    if normalizer is None:
        return []
    if isinstance(normalizer, dict) and normalizer.get("type") == "Sequence":
        steps = field("Sequence normalizer", normalizer, "normalizers", (list,))
        return [step for inner in steps for step in string_normalizers(inner)]
    kind = normalizer.get("type") if isinstance(normalizer, dict) else None
    if kind == "Prepend":
        return [{"type": "Prepend", "prepend": field("Prepend", normalizer, "prepend", (str,))}]
    if kind == "Replace":
        pattern = _pattern("Replace", normalizer)
        content = field("Replace", normalizer, "content", (str,))
        return [{"type": "Replace", "pattern": pattern, "content": content}]
    if kind in ("NFD", "NFKD", "NFC", "NFKC", "StripAccents", "Lowercase"):
        return [{"type": kind}]
    if kind == "Strip":
        left, right = (field("Strip", normalizer, key, (bool,), True) for key in ("strip_left", "strip_right"))
        return [{"type": "Strip", "strip_left": left, "strip_right": right}]
    if kind == "Precompiled":
        blob = field("Precompiled", normalizer, "precompiled_charsmap", (str, None), None)
        try:
            data = base64.b64decode(blob or "", validate=True)
            if data:
                spm_model.decode_charsmap(data)
        except (binascii.Error, ValueError) as error:
            raise ValueError(
                f"tokenizer.json: Precompiled precompiled_charsmap is not a character map: {error}"
            ) from None
        return [{"type": "Precompiled", "precompiled_charsmap": blob or ""}] if data else []
    raise unsupported("normalizer", normalizer)


def metaspace(pre_tokenizer, split=False):
    """The steps of a `Metaspace` pre-tokenizer (`[{"type": "Metaspace", "replacement", "prepend_scheme",
    "split"}]`), or None for another pre-tokenizer. With `split` (cutting words before each replacement
    character) unless `split` is allowed: refused by name."""
    if not isinstance(pre_tokenizer, dict) or pre_tokenizer.get("type") != "Metaspace":
        return None
    replacement = field("Metaspace", pre_tokenizer, "replacement", (str,))
    if len(replacement) != 1:
        raise ValueError(f"tokenizer.json: Metaspace replacement {replacement!r} is not one character.")
    splits = field("Metaspace", pre_tokenizer, "split", (bool,), True)
    if splits and not split:
        setting("Metaspace", pre_tokenizer, "split", False, True)
    scheme = field("Metaspace", pre_tokenizer, "prepend_scheme", (str,), "always")
    if scheme not in PREPEND_SCHEMES:
        raise ValueError(
            f"tokenizer.json: Metaspace prepend_scheme {scheme!r} is not one of {', '.join(PREPEND_SCHEMES)}."
        )
    return [{"type": "Metaspace", "replacement": replacement, "prepend_scheme": scheme, "split": splits}]


# How a `Split` or `Punctuation` pre-tokenizer treats its matches (Hugging Face's names).
BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")
_WORD_SPLITTERS = ("Split", "Whitespace", "WhitespaceSplit", "Punctuation", "Digits", "BertPreTokenizer")


def pre_tokenizer_steps(pre_tokenizer):
    """The steps of a pre-tokenizer made of `Split` (of a string, or of a regex `re2_pattern` reproduces),
    `Whitespace`, `WhitespaceSplit`, `Punctuation`, `Digits` and `BertPreTokenizer`, in a `Sequence`
    or alone, as a list of their checked JSON objects (`text.pre_tokenizers` runs them); `[]` for
    none; None for a pre-tokenizer of other kinds."""
    if pre_tokenizer is None:
        return []
    if not _cuts_words(pre_tokenizer):
        return None
    kind = pre_tokenizer["type"]
    if kind == "Sequence":
        return [step for inner in pre_tokenizer["pretokenizers"] for step in pre_tokenizer_steps(inner)]
    if kind in ("Whitespace", "WhitespaceSplit", "BertPreTokenizer"):
        return [{"type": kind}]
    if kind == "Digits":
        return [{"type": kind, "individual_digits": field(kind, pre_tokenizer, "individual_digits", (bool,), False)}]
    behavior = field(kind, pre_tokenizer, "behavior", (str,), "Isolated")
    if behavior not in BEHAVIORS:
        raise ValueError(f"tokenizer.json: {kind} behavior {behavior!r} is not one of {', '.join(BEHAVIORS)}.")
    if kind == "Punctuation":
        return [{"type": kind, "behavior": behavior}]
    pattern = _pattern("Split", pre_tokenizer)
    invert = field("Split", pre_tokenizer, "invert", (bool,), False)
    return [{"type": kind, "pattern": pattern, "behavior": behavior, "invert": invert}]


def _pattern(owner, component):
    """The checked `pattern` of a `Replace` or `Split`: `{"String": ...}` or `{"Regex": ...}` (one that
    `re2_pattern` translates), not empty."""
    pattern = field(owner, component, "pattern", (dict,))
    text = pattern.get("String", pattern.get("Regex")) if len(pattern) == 1 else None
    if not isinstance(text, str) or not text:
        raise ValueError(
            f"tokenizer.json: {owner} pattern {json.dumps(pattern)[:200]} is not supported (supported: a non-empty "
            "String or Regex)."
        )
    if "Regex" in pattern:
        re2_pattern(text, owner)  # checked
    return dict(pattern)


def _cuts_words(pre_tokenizer):
    """Whether a pre-tokenizer is made of `pre_tokenizer_steps`' kinds only (their settings unread)."""
    kind = pre_tokenizer.get("type") if isinstance(pre_tokenizer, dict) else None
    if kind == "Sequence":
        steps = field("Sequence pre_tokenizer", pre_tokenizer, "pretokenizers", (list,))
        return all(_cuts_words(step) for step in steps)
    return kind in _WORD_SPLITTERS


def whole_for_gpt2(steps):
    """Whether GPT-2's regex takes each word that the checked pre-tokenizer `steps` cut whole: one
    `Split` that keeps only its matches, each alternative of its regex one of `_WHOLE_FOR_GPT2`."""
    if (
        len(steps) != 1
        or steps[0]["type"] != "Split"
        or (steps[0]["behavior"], steps[0]["invert"]) != ("Removed", True)
    ):
        return False
    regex = steps[0]["pattern"].get("Regex")
    return regex is not None and all(part in _WHOLE_FOR_GPT2 for part in regex.split("|"))


def _byte_level_pre_tokenizer(pre_tokenizer):
    """(the name of the split pattern or None, add_prefix_space, the steps that cut words before it)
    of `ByteLevel` (with GPT-2's regex or none), alone or after steps that cut words (each word then
    goes through it alone), or of `Sequence[Split(a known regex, Isolated), ByteLevel(use_regex=false)]`
    (Llama-3, Qwen2)."""
    steps = pre_tokenizer.get("pretokenizers") if isinstance(pre_tokenizer, dict) else None
    if isinstance(pre_tokenizer, dict) and pre_tokenizer.get("type") == "ByteLevel":
        steps = [pre_tokenizer]
    elif not isinstance(pre_tokenizer, dict) or pre_tokenizer.get("type") != "Sequence" or not isinstance(steps, list):
        raise unsupported("pre_tokenizer", pre_tokenizer)
    kinds = [step.get("type") if isinstance(step, dict) else None for step in steps]
    if not kinds or kinds[-1] != "ByteLevel":
        raise ValueError(
            f"tokenizer.json: pre_tokenizer Sequence of {kinds} is not supported (supported: Split, Whitespace, "
            "WhitespaceSplit, Punctuation, Digits, then ByteLevel; or Split of a known regex, then ByteLevel)."
        )
    *before, byte_level = steps
    use_regex = field("ByteLevel", byte_level, "use_regex", (bool,), True)
    add_prefix_space = field("ByteLevel", byte_level, "add_prefix_space", (bool,), True)
    split = before[0] if kinds == ["Split", "ByteLevel"] else None
    regex = split.get("pattern", {}).get("Regex") if split and isinstance(split.get("pattern"), dict) else None
    names = {text: name for name, text in SPLIT_PATTERNS.items()}
    if regex in names:
        setting("Split", split, "behavior", "Isolated", "Isolated")
        setting("Split", split, "invert", False, False)
        setting("ByteLevel", byte_level, "use_regex", False, True)
        setting("ByteLevel", byte_level, "add_prefix_space", False, True)
        return names[regex], False, []
    words = pre_tokenizer_steps({"type": "Sequence", "pretokenizers": before})
    if words is None:
        raise ValueError(
            f"tokenizer.json: pre_tokenizer Sequence of {kinds} is not supported (supported before ByteLevel: "
            f"Split of a string or a plain regex, Whitespace, WhitespaceSplit, Punctuation, Digits; or Split of "
            f"the regular expressions of {', '.join(SPLIT_PATTERNS)})."
        )
    return ("gpt2" if use_regex else None), add_prefix_space, words


def decoder_steps(decoder):
    """The steps of a decoder (its JSON object; a `Sequence` is flattened), each a dict with its
    settings checked; `[]` for none (Hugging Face then joins the tokens with spaces). Raises
    `ValueError` naming a decoder or setting `detokenize` cannot follow."""
    if decoder is None:
        return []
    if not isinstance(decoder, dict):
        raise ValueError(f"tokenizer.json: decoder {json.dumps(decoder)[:200]} is not supported.")
    kind = decoder.get("type")
    if kind == "Sequence":
        return [
            step for inner in field("Sequence decoder", decoder, "decoders", (list,)) for step in decoder_steps(inner)
        ]
    if kind == "WordPiece":
        prefix = field("WordPiece decoder", decoder, "prefix", (str,), "##")
        return [
            {"type": kind, "prefix": prefix, "cleanup": field("WordPiece decoder", decoder, "cleanup", (bool,), True)}
        ]
    if kind in ("ByteLevel", "ByteFallback", "Fuse"):
        return [{"type": kind}]
    if kind == "Replace":
        (step,) = string_normalizers(decoder)  # the same object as the Replace normalizer
        return [step]
    if kind == "Strip":
        content = field("Strip decoder", decoder, "content", (str,))
        start, stop = (field("Strip decoder", decoder, key, (int,), 0) for key in ("start", "stop"))
        if len(content) != 1 or not 0 <= start <= 1000 or not 0 <= stop <= 1000:
            raise ValueError("tokenizer.json: Strip decoder needs one character and start, stop in 0..1000.")
        return [{"type": kind, "content": content, "start": start, "stop": stop}]
    if kind == "Metaspace":
        replacement = field("Metaspace decoder", decoder, "replacement", (str,), "\u2581")
        scheme = field("Metaspace decoder", decoder, "prepend_scheme", (str,), None)
        if scheme is None:
            scheme = "always" if field("Metaspace decoder", decoder, "add_prefix_space", (bool,), True) else "never"
        if len(replacement) != 1 or scheme not in ("always", "first", "never"):
            raise ValueError(f"tokenizer.json: Metaspace decoder {json.dumps(decoder)[:200]} is not supported.")
        return [{"type": kind, "replacement": replacement, "prepend_scheme": scheme}]
    raise ValueError(
        f"tokenizer.json: decoder {kind!r} is not supported (supported: WordPiece, ByteLevel, ByteFallback, "
        "Fuse, Strip, Replace, Metaspace, Sequence)."
    )
