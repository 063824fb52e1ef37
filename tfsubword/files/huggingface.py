"""Hugging Face `tokenizer.json` files, read as untrusted input: which tfsubword parts reproduce one.

`read_tokenizer_json` checks every component the file names against what tfsubword reproduces
exactly and returns a `TokenizerFile`, the arguments of those parts. A component or setting outside
that set raises `ValueError` naming it: an approximation would give other ids without a word. No
TensorFlow here.
"""

import dataclasses
import json
import os

from tfsubword.files import storage
from tfsubword.text import unicode_classes

# The regular expressions of the `Split` pre-tokenizers reproduced (`text.byte_level`), by name.
_CONTRACTIONS_ANY_CASE = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
_CL100K_TAIL = "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
SPLIT_PATTERNS = {
    "gpt2": "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
    "llama3": _CONTRACTIONS_ANY_CASE + "\\p{N}{1,3}" + _CL100K_TAIL,
    "qwen2": _CONTRACTIONS_ANY_CASE + "\\p{N}" + _CL100K_TAIL,
}

# What each component may be, for the messages.
SUPPORTED = {
    "model": ("WordPiece", "BPE"),
    "normalizer": (
        "BertNormalizer (with WordPiece)",
        "Prepend, Replace of a string, Sequence of them, none (with BPE)",
    ),
    "pre_tokenizer": (
        "BertPreTokenizer (with WordPiece)",
        "ByteLevel with use_regex (with BPE)",
        "Sequence of Split (GPT-2's, Llama-3's or Qwen2's regex) and ByteLevel (with BPE)",
    ),
    "post_processor": ("BertProcessing", "RobertaProcessing", "TemplateProcessing", "ByteLevel", "Sequence", "none"),
    "decoder": ("WordPiece", "ByteLevel", "ByteFallback", "Fuse", "Strip", "Replace", "Metaspace", "Sequence"),
}


@dataclasses.dataclass(frozen=True)
class AddedToken:
    """A token matched in the text before anything else: `content` becomes `id`. `lstrip`/`rstrip`: the
    match takes the whitespace on its left/right with it. `normalized` tokens are matched in a second
    pass, in the pieces between the others (after normalizing them, which only a file without a
    normalizer reproduces here)."""

    content: str
    id: int
    lstrip: bool = False
    rstrip: bool = False
    special: bool = True
    normalized: bool = False


@dataclasses.dataclass(frozen=True)
class TokenizerFile:
    """What a `tokenizer.json` asks for, as tfsubword arguments.

    `model` is "WordPiece" or "BPE"; `vocabulary` the model's tokens in id order, `merges` its merges
    (BPE), `options` the keyword arguments of the layer (`WordPieceLayer` or `BPELayer`) that does
    the model's work. `tokens` is the whole id space (the vocabulary, with added tokens at their ids).
    `normalizer` lists string steps (`Prepend`, `Replace`) run on the text before the model's layer.
    `start_ids`/`end_ids` frame every encoding (the post-processor); `max_length` and
    `truncation_side` truncate it, and `padding` (a dict or None) pads it.
    """

    model: str
    vocabulary: list
    merges: list
    options: dict
    tokens: list
    normalizer: list
    added_tokens: tuple
    start_ids: tuple
    end_ids: tuple
    max_length: int = None
    truncation_side: str = "right"
    padding: dict = None
    decoder: dict = None


def _unsupported(component, value):
    kind = value.get("type") if isinstance(value, dict) else value
    return ValueError(
        f"tokenizer.json: {component} {json.dumps(kind)} is not supported (supported: "
        f"{', '.join(SUPPORTED[component])}). Received: {json.dumps(value)[:300]}."
    )


def _field(owner, data, key, kinds, default=...):
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


def _setting(owner, data, key, wanted, default):
    """Check a setting that must have the value `wanted` (the only one reproduced)."""
    value = data.get(key, default)
    if value != wanted:
        raise ValueError(
            f"tokenizer.json: {owner} with {key}={json.dumps(value)} is not supported (only {json.dumps(wanted)})."
        )


def parse(path_or_json):
    """The JSON object of a `tokenizer.json` given as a path or as its text."""
    if isinstance(path_or_json, bytes):
        path_or_json = path_or_json.decode("utf-8", errors="replace")
    if not isinstance(path_or_json, (str, os.PathLike)):
        raise ValueError(
            f"`path_or_json` must be the path of a tokenizer.json or its JSON text. Received: {path_or_json!r:.200}."
        )
    text = os.fspath(path_or_json)
    if not text.lstrip().startswith(("{", "[")):
        data = storage.read_bytes(text, "path_or_json")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"tokenizer.json {os.fspath(path_or_json)!r} is not valid UTF-8: {error}.") from None
    try:
        config = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"tokenizer.json is not valid JSON: {error}.") from None
    if not isinstance(config, dict):
        raise ValueError("tokenizer.json must hold a JSON object.")
    return config


def read_tokenizer_json(path_or_json):
    """The `TokenizerFile` of a Hugging Face `tokenizer.json` (a path or its JSON text).

    Raises `ValueError` naming the problem: not JSON, a field of the wrong type, ids that do not fit,
    or a component or setting that tfsubword does not reproduce exactly.
    """
    config = parse(path_or_json)
    model = _field("tokenizer.json", config, "model", (dict,))
    kind = model.get(
        "type", "BPE" if "merges" in model else "WordPiece" if "continuing_subword_prefix" in model else None
    )
    normalizer = []
    if kind == "WordPiece":
        vocabulary, merges, options = _wordpiece(config, model)
    elif kind == "BPE":
        vocabulary, merges, options = _bpe(config, model)
        normalizer = string_normalizers(config.get("normalizer"))
    else:
        raise _unsupported("model", model)
    added = _added_tokens(config, len(vocabulary))
    tokens = list(vocabulary)
    for token in sorted(added, key=lambda token: token.id):
        if token.id < len(tokens):
            tokens[token.id] = token.content
        elif token.id == len(tokens):
            tokens.append(token.content)
        else:
            raise ValueError(
                f"tokenizer.json: added token {token.content!r} has id {token.id}, but ids {len(tokens)} to "
                f"{token.id - 1} name no token."
            )
    start_ids, end_ids = _post_processor(config.get("post_processor"), tokens)
    max_length, side = _truncation(config.get("truncation"), len(start_ids) + len(end_ids))
    padding = _padding(config.get("padding"), len(tokens))
    decoder = _field("tokenizer.json", config, "decoder", (dict, None), None)
    return TokenizerFile(
        kind,
        vocabulary,
        merges,
        options,
        tokens,
        normalizer,
        tuple(added),
        start_ids,
        end_ids,
        max_length,
        side,
        padding,
        decoder,
    )


def _vocabulary(model):
    vocab = _field("model", model, "vocab", (dict,))
    ids = sorted(vocab.values()) if all(isinstance(i, int) and not isinstance(i, bool) for i in vocab.values()) else 0
    if ids != list(range(len(vocab))) or not vocab:
        raise ValueError("tokenizer.json: model.vocab must map its tokens to the ids 0..n-1, each once.")
    return sorted(vocab, key=vocab.get)


def _wordpiece(config, model):
    vocabulary = _vocabulary(model)
    unknown = _field("model", model, "unk_token", (str,))
    prefix = _field("model", model, "continuing_subword_prefix", (str,), "##")
    max_chars = _field("model", model, "max_input_chars_per_word", (int,), 100)
    normalizer = config.get("normalizer")
    if not isinstance(normalizer, dict) or normalizer.get("type") != "BertNormalizer":
        raise _unsupported("normalizer", normalizer)
    _setting("BertNormalizer", normalizer, "clean_text", True, True)
    lowercase = _field("BertNormalizer", normalizer, "lowercase", (bool,), True)
    strip_accents = _field("BertNormalizer", normalizer, "strip_accents", (bool, None), None)
    split_on_cjk = _field("BertNormalizer", normalizer, "handle_chinese_chars", (bool,), True)
    pre_tokenizer = config.get("pre_tokenizer")
    if not isinstance(pre_tokenizer, dict) or pre_tokenizer.get("type") != "BertPreTokenizer":
        raise _unsupported("pre_tokenizer", pre_tokenizer)
    options = {
        "lowercase": lowercase,
        "strip_accents": strip_accents,
        "split_on_cjk": split_on_cjk,
        "final_sigma": False,  # Hugging Face lowercases one character at a time
        "max_chars_per_word": max_chars,
        "unknown_token": unknown,
        "suffix_indicator": prefix,
    }
    return vocabulary, None, options


def _bpe(config, model):
    vocabulary = _vocabulary(model)
    merges = _field("model", model, "merges", (list,))
    _setting("BPE", model, "dropout", None, None)
    ignore_merges = _field("BPE", model, "ignore_merges", (bool,), False)
    byte_fallback = _field("BPE", model, "byte_fallback", (bool,), False)
    # Unknown characters fused into one unknown token: with byte fallback there are none (the byte
    # tokens must all be there), without it the layer has no such rule.
    if _field("BPE", model, "fuse_unk", (bool,), False) and not byte_fallback:
        _setting("BPE", model, "fuse_unk", False, False)
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key) not in (None, ""):
            _setting("BPE", model, key, None, None)
    unknown = _field("model", model, "unk_token", (str, None), None)
    if config.get("pre_tokenizer") is None:  # SentencePiece-style: the text is one word of characters
        pattern, add_prefix_space, byte_level = None, False, False
    else:
        (pattern, add_prefix_space), byte_level = _byte_level_pre_tokenizer(config["pre_tokenizer"]), True
    if byte_fallback and byte_level:
        raise ValueError("tokenizer.json: BPE byte_fallback with a ByteLevel pre-tokenizer is not supported.")
    options = {
        "byte_level": byte_level,
        "unknown_token": unknown,
        "pattern": pattern,
        "ignore_merges": ignore_merges,
        "byte_fallback": byte_fallback,
        "add_prefix_space": add_prefix_space,
    }
    return vocabulary, merges, options


def string_normalizers(normalizer):
    """The steps of a normalizer made only of `Prepend` and string `Replace` (in a `Sequence` or
    alone), as a list of their JSON objects; `[]` for none. Others raise `ValueError`."""
    if normalizer is None:
        return []
    if isinstance(normalizer, dict) and normalizer.get("type") == "Sequence":
        steps = _field("Sequence normalizer", normalizer, "normalizers", (list,))
        return [step for inner in steps for step in string_normalizers(inner)]
    kind = normalizer.get("type") if isinstance(normalizer, dict) else None
    if kind == "Prepend":
        return [{"type": "Prepend", "prepend": _field("Prepend", normalizer, "prepend", (str,))}]
    if kind == "Replace":
        pattern = _field("Replace", normalizer, "pattern", (dict,))
        if set(pattern) != {"String"} or not isinstance(pattern["String"], str) or not pattern["String"]:
            raise ValueError(
                f"tokenizer.json: Replace normalizer pattern {json.dumps(pattern)[:200]} is not supported "
                "(supported: a non-empty String)."
            )
        content = _field("Replace", normalizer, "content", (str,))
        return [{"type": "Replace", "pattern": {"String": pattern["String"]}, "content": content}]
    raise _unsupported("normalizer", normalizer)


def _byte_level_pre_tokenizer(pre_tokenizer):
    """(the name of the split pattern, add_prefix_space) of `ByteLevel` with its own regex (GPT-2's),
    or of `Sequence[Split(a known regex, Isolated), ByteLevel(use_regex=false)]` (Llama-3, Qwen2)."""
    if isinstance(pre_tokenizer, dict) and pre_tokenizer.get("type") == "ByteLevel":
        _setting("ByteLevel", pre_tokenizer, "use_regex", True, True)
        return "gpt2", _field("ByteLevel", pre_tokenizer, "add_prefix_space", (bool,), True)
    steps = pre_tokenizer.get("pretokenizers") if isinstance(pre_tokenizer, dict) else None
    if not isinstance(pre_tokenizer, dict) or pre_tokenizer.get("type") != "Sequence" or not isinstance(steps, list):
        raise _unsupported("pre_tokenizer", pre_tokenizer)
    kinds = [step.get("type") if isinstance(step, dict) else None for step in steps]
    if kinds != ["Split", "ByteLevel"]:
        raise ValueError(
            f"tokenizer.json: pre_tokenizer Sequence of {kinds} is not supported (supported: Split, then "
            "ByteLevel with use_regex false)."
        )
    split, byte_level = steps
    regex = split.get("pattern", {}).get("Regex") if isinstance(split.get("pattern"), dict) else None
    names = {text: name for name, text in SPLIT_PATTERNS.items()}
    if regex not in names:
        raise ValueError(
            f"tokenizer.json: Split pattern {json.dumps(split.get('pattern'))[:300]} is not supported (supported: "
            f"the regular expressions of {', '.join(SPLIT_PATTERNS)})."
        )
    _setting("Split", split, "behavior", "Isolated", "Isolated")
    _setting("Split", split, "invert", False, False)
    _setting("ByteLevel", byte_level, "use_regex", False, True)
    _setting("ByteLevel", byte_level, "add_prefix_space", False, True)
    return names[regex], False


def _added_tokens(config, vocabulary_size):
    items = _field("tokenizer.json", config, "added_tokens", (list,), [])
    added, seen = [], {}
    for index, item in enumerate(items):
        owner = f"added_tokens[{index}]"
        if not isinstance(item, dict):
            raise ValueError(f"tokenizer.json: {owner} must be an object.")
        content = _field(owner, item, "content", (str,))
        token_id = _field(owner, item, "id", (int,))
        if not content or token_id < 0:
            raise ValueError(f"tokenizer.json: {owner} needs a non-empty content and an id >= 0.")
        _setting(owner, item, "single_word", False, False)
        lstrip = _field(owner, item, "lstrip", (bool,), False)
        rstrip = _field(owner, item, "rstrip", (bool,), False)
        normalized = _field(owner, item, "normalized", (bool,), False)
        special = _field(owner, item, "special", (bool,), False)
        normalizer = config.get("normalizer")
        if normalized and isinstance(normalizer, dict) and normalizer.get("type") == "BertNormalizer":
            raise ValueError(
                f"tokenizer.json: {owner} ({content!r}) is matched in normalized text (normalized=true): "
                "not supported with BertNormalizer."
            )
        if (lstrip or rstrip) and (_is_white_space(content[0]) or _is_white_space(content[-1])):
            raise ValueError(
                f"tokenizer.json: {owner} ({content!r}) starts or ends with whitespace and strips whitespace "
                "beside it: not supported."
            )
        if content in seen and seen[content] != token_id:
            raise ValueError(f"tokenizer.json: added token {content!r} has two ids, {seen[content]} and {token_id}.")
        seen[content] = token_id
        added.append(AddedToken(content, token_id, lstrip, rstrip, special, normalized))
    return added


def _is_white_space(char):
    return any(low <= ord(char) <= high for low, high in unicode_classes.WHITE_SPACE)


def _special_ids(owner, value, tokens):
    """A `[token, id]` pair of Bert/RobertaProcessing, checked against the id space."""
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not isinstance(value[0], str)
        or not isinstance(value[1], int)
        or isinstance(value[1], bool)
    ):
        raise ValueError(f"tokenizer.json: {owner} must be a [token, id] pair. Received: {json.dumps(value)[:200]}.")
    return [_checked_id(owner, value[1], tokens)]


def _checked_id(owner, token_id, tokens):
    if isinstance(token_id, bool) or not isinstance(token_id, int) or not 0 <= token_id < len(tokens):
        raise ValueError(f"tokenizer.json: {owner} names the id {token_id!r}, outside 0..{len(tokens) - 1}.")
    return token_id


def _post_processor(processor, tokens):
    """(ids before, ids after) the tokens of one text."""
    if processor is None:
        return (), ()
    if not isinstance(processor, dict):
        raise _unsupported("post_processor", processor)
    kind = processor.get("type")
    if kind == "ByteLevel":
        return (), ()
    if kind in ("BertProcessing", "RobertaProcessing"):
        start = _special_ids(f"{kind}.cls", processor.get("cls"), tokens)
        end = _special_ids(f"{kind}.sep", processor.get("sep"), tokens)
        return tuple(start), tuple(end)
    if kind == "Sequence":
        start, end = (), ()
        for inner in _field("Sequence", processor, "processors", (list,)):
            inner_start, inner_end = _post_processor(inner, tokens)
            start, end = inner_start + start, end + inner_end
        return start, end
    if kind == "TemplateProcessing":
        return _template(processor, tokens)
    raise _unsupported("post_processor", processor)


def _template(processor, tokens):
    specials = _field("TemplateProcessing", processor, "special_tokens", (dict,), {})
    items = _field("TemplateProcessing", processor, "single", (list,))
    start, end, sequences = [], [], 0
    for index, item in enumerate(items):
        owner = f"TemplateProcessing.single[{index}]"
        if not isinstance(item, dict) or len(item) != 1:
            raise ValueError(f"tokenizer.json: {owner} must be an object with one key. Received: {item!r:.200}.")
        ((key, value),) = item.items()
        if not isinstance(value, dict):
            raise ValueError(f"tokenizer.json: {owner}.{key} must be an object.")
        if key == "Sequence":
            if value.get("id") != "A":
                raise ValueError(f"tokenizer.json: {owner} is sequence {value.get('id')!r}: a single text is A.")
            sequences += 1
            continue
        if key != "SpecialToken":
            raise ValueError(f"tokenizer.json: {owner} is {key!r}, neither Sequence nor SpecialToken.")
        name = value.get("id")
        special = specials.get(name) if isinstance(name, str) else None
        if not isinstance(special, dict):
            raise ValueError(f"tokenizer.json: {owner} names {name!r}, not among TemplateProcessing.special_tokens.")
        ids = _field(f"TemplateProcessing.special_tokens[{name!r}]", special, "ids", (list,))
        (end if sequences else start).extend(_checked_id(owner, token_id, tokens) for token_id in ids)
    if sequences != 1:
        raise ValueError(f"tokenizer.json: TemplateProcessing.single holds sequence A {sequences} times, not once.")
    return tuple(start), tuple(end)


def _truncation(truncation, added):
    if truncation is None:
        return None, "right"
    if not isinstance(truncation, dict):
        raise ValueError(f"tokenizer.json: truncation must be an object or null. Received: {truncation!r:.200}.")
    max_length = _field("truncation", truncation, "max_length", (int,))
    strategy = _field("truncation", truncation, "strategy", (str,), "LongestFirst")
    if strategy not in ("LongestFirst", "OnlyFirst"):
        raise ValueError(f"tokenizer.json: truncation strategy {strategy!r} cannot truncate a single text.")
    side = _field("truncation", truncation, "direction", (str,), "Right")
    if side not in ("Right", "Left"):
        raise ValueError(f"tokenizer.json: truncation direction must be Right or Left. Received: {side!r}.")
    if max_length < added:
        raise ValueError(f"tokenizer.json: truncation max_length {max_length} is below the {added} added tokens.")
    return max_length, side.lower()


def _padding(padding, size):
    if padding is None:
        return None
    if not isinstance(padding, dict):
        raise ValueError(f"tokenizer.json: padding must be an object or null. Received: {padding!r:.200}.")
    strategy = padding.get("strategy", "BatchLongest")
    if strategy == "BatchLongest":
        length = None
    elif isinstance(strategy, dict) and set(strategy) == {"Fixed"}:
        length = _field("padding.strategy", strategy, "Fixed", (int,))
        if length < 1:
            raise ValueError(f"tokenizer.json: padding Fixed length must be at least 1. Received: {length}.")
    else:
        raise ValueError(f"tokenizer.json: padding strategy {json.dumps(strategy)[:200]} is not supported.")
    side = _field("padding", padding, "direction", (str,), "Right")
    if side not in ("Right", "Left"):
        raise ValueError(f"tokenizer.json: padding direction must be Right or Left. Received: {side!r}.")
    multiple = _field("padding", padding, "pad_to_multiple_of", (int, None), None)
    if multiple is not None and multiple < 1:
        raise ValueError(f"tokenizer.json: padding pad_to_multiple_of must be at least 1. Received: {multiple}.")
    pad_id = _checked_id("padding.pad_id", _field("padding", padding, "pad_id", (int,), 0), ["?"] * size)
    return {"length": length, "multiple": multiple, "side": side.lower(), "pad_id": pad_id}


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
            step for inner in _field("Sequence decoder", decoder, "decoders", (list,)) for step in decoder_steps(inner)
        ]
    if kind == "WordPiece":
        prefix = _field("WordPiece decoder", decoder, "prefix", (str,), "##")
        return [
            {"type": kind, "prefix": prefix, "cleanup": _field("WordPiece decoder", decoder, "cleanup", (bool,), True)}
        ]
    if kind in ("ByteLevel", "ByteFallback", "Fuse"):
        return [{"type": kind}]
    if kind == "Replace":
        (step,) = string_normalizers(decoder)  # the same object as the Replace normalizer
        return [step]
    if kind == "Strip":
        content = _field("Strip decoder", decoder, "content", (str,))
        start, stop = (_field("Strip decoder", decoder, key, (int,), 0) for key in ("start", "stop"))
        if len(content) != 1 or not 0 <= start <= 1000 or not 0 <= stop <= 1000:
            raise ValueError("tokenizer.json: Strip decoder needs one character and start, stop in 0..1000.")
        return [{"type": kind, "content": content, "start": start, "stop": stop}]
    if kind == "Metaspace":
        replacement = _field("Metaspace decoder", decoder, "replacement", (str,), "\u2581")
        scheme = _field("Metaspace decoder", decoder, "prepend_scheme", (str,), None)
        if scheme is None:
            scheme = "always" if _field("Metaspace decoder", decoder, "add_prefix_space", (bool,), True) else "never"
        if len(replacement) != 1 or scheme not in ("always", "first", "never"):
            raise ValueError(f"tokenizer.json: Metaspace decoder {json.dumps(decoder)[:200]} is not supported.")
        return [{"type": kind, "replacement": replacement, "prepend_scheme": scheme}]
    raise ValueError(
        f"tokenizer.json: decoder {kind!r} is not supported (supported: WordPiece, ByteLevel, ByteFallback, "
        "Fuse, Strip, Replace, Metaspace, Sequence)."
    )
