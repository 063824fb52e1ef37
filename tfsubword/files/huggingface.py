"""Hugging Face `tokenizer.json` files, read as untrusted input: which tfsubword parts reproduce one.

`read_tokenizer_json` checks every component the file names against what tfsubword reproduces
exactly and returns a `TokenizerFile`, the arguments of those parts. A component or setting outside
that set raises `ValueError` naming it: an approximation would give other ids without a word. The
parts that act on text (model, normalizer, pre-tokenizer, decoder) are read in
`huggingface_components`; here, the file and what frames the tokens: added tokens, post-processor,
truncation, padding. No TensorFlow here.
"""

import dataclasses
import json
import os

from tfsubword.files import huggingface_components as components
from tfsubword.files import storage
from tfsubword.files.huggingface_components import field, unsupported
from tfsubword.text import unicode_classes


@dataclasses.dataclass(frozen=True)
class AddedToken:
    """A token matched in the text before anything else: `content` becomes `id`. `lstrip`/`rstrip`: the
    match takes the whitespace on its left/right with it. `single_word`: a match with a word character
    (`\\w` of Rust's `regex`) just before or after it is left as text. `normalized` tokens are matched in a second
    pass, in the pieces between the others (after normalizing them, which only a file without a
    normalizer reproduces here)."""

    content: str
    id: int
    lstrip: bool = False
    rstrip: bool = False
    special: bool = True
    normalized: bool = False
    single_word: bool = False


@dataclasses.dataclass(frozen=True)
class TokenizerFile:
    """What a `tokenizer.json` asks for, as tfsubword arguments.

    `model` is "WordPiece", "BPE" or "Unigram"; `layer` names the layer that does the model's work
    (`WordPieceLayer`, `HuggingFaceWordPiece`, `BPELayer` or `HuggingFaceUnigram`), `options` its
    keyword arguments; `vocabulary` the model's tokens in id order, `merges` its merges (BPE). `tokens`
    is the whole id space (the vocabulary, with added tokens at their ids). `normalizer` lists string
    steps (see `components.string_normalizers`) run on the text before the model's layer,
    `pre_tokenizer` those of a `Metaspace` (see `components.metaspace`) or those that cut words (see
    `components.pre_tokenizer_steps`).
    `start_ids`/`end_ids` frame every encoding (the post-processor); `max_length` and
    `truncation_side` truncate it, and `padding` (a dict or None) pads it.
    """

    model: str
    layer: str
    vocabulary: list
    merges: list
    options: dict
    tokens: list
    normalizer: list
    pre_tokenizer: list
    added_tokens: tuple
    start_ids: tuple
    end_ids: tuple
    max_length: int = None
    truncation_side: str = "right"
    padding: dict = None
    decoder: dict = None


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
        config = json.loads(text, parse_float=json_float)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"tokenizer.json is not valid JSON: {error}.") from None
    if not isinstance(config, dict):
        raise ValueError("tokenizer.json must hold a JSON object.")
    return config


# `serde_json` (without its `float_roundtrip` feature, as `tokenizers` builds it) reads a number with a
# fraction or an exponent as its first 19 or so digits, an integer, then multiplied or divided by one of
# these powers of ten: two roundings, so its double can be a unit in the last place away from the
# nearest one (Python's). Unigram scores must be read its way: ties between segmentations hang on them.
_POWERS_OF_TEN = [float(f"1e{exponent}") for exponent in range(309)]
_U64_MAX = 2**64 - 1
_I32_MAX = 2**31 - 1


def json_float(text):
    """The double that `serde_json` reads from the JSON number `text` (with a fraction or an exponent)."""
    negative = text.startswith("-")
    mantissa, _, exponent_text = text.lstrip("-").replace("E", "e").partition("e")
    whole, _, fraction = mantissa.partition(".")
    significand, exponent, overflowed = 0, 0, False
    for digit in map(int, whole):
        if overflowed or significand * 10 + digit > _U64_MAX:
            overflowed, exponent = True, exponent + 1  # the digits beyond count only as a power of ten
        else:
            significand = significand * 10 + digit
    for digit in map(int, fraction):
        if significand * 10 + digit > _U64_MAX:
            break  # this digit and those after it are ignored
        significand, exponent = significand * 10 + digit, exponent - 1
    if exponent_text:
        power = int(exponent_text)
        if abs(power) > _I32_MAX:
            if significand == 0 or power < 0:
                return -0.0 if negative else 0.0
            raise ValueError(f"the number {text[:40]} is out of range")
        exponent = max(-(2**31), min(_I32_MAX, exponent + power))
    value = float(significand)
    while True:
        if abs(exponent) < len(_POWERS_OF_TEN):
            if exponent >= 0:
                value *= _POWERS_OF_TEN[exponent]
                if value == float("inf"):
                    raise ValueError(f"the number {text[:40]} is out of range")
            else:
                value /= _POWERS_OF_TEN[-exponent]
            break
        if value == 0.0:
            break
        if exponent >= 0:
            raise ValueError(f"the number {text[:40]} is out of range")
        value /= 1e308
        exponent += 308
    return -value if negative else value


def read_tokenizer_json(path_or_json):
    """The `TokenizerFile` of a Hugging Face `tokenizer.json` (a path or its JSON text).

    Raises `ValueError` naming the problem: not JSON, a field of the wrong type, ids that do not fit,
    or a component or setting that tfsubword does not reproduce exactly.
    """
    config = parse(path_or_json)
    model = field("tokenizer.json", config, "model", (dict,))
    kind = model.get(
        "type", "BPE" if "merges" in model else "WordPiece" if "continuing_subword_prefix" in model else None
    )
    readers = {"WordPiece": components.wordpiece, "BPE": components.bpe, "Unigram": components.unigram}
    if kind not in readers:
        raise unsupported("model", model)
    layer, vocabulary, merges, options, normalizer, pre_tokenizer = readers[kind](config, model)
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
    decoder = field("tokenizer.json", config, "decoder", (dict, None), None)
    return TokenizerFile(
        kind,
        layer,
        vocabulary,
        merges,
        options,
        tokens,
        normalizer,
        pre_tokenizer,
        tuple(added),
        start_ids,
        end_ids,
        max_length,
        side,
        padding,
        decoder,
    )


def _added_tokens(config, vocabulary_size):
    items = field("tokenizer.json", config, "added_tokens", (list,), [])
    added, seen = [], {}
    for index, item in enumerate(items):
        owner = f"added_tokens[{index}]"
        if not isinstance(item, dict):
            raise ValueError(f"tokenizer.json: {owner} must be an object.")
        content = field(owner, item, "content", (str,))
        token_id = field(owner, item, "id", (int,))
        if not content or token_id < 0:
            raise ValueError(f"tokenizer.json: {owner} needs a non-empty content and an id >= 0.")
        single_word = field(owner, item, "single_word", (bool,), False)
        lstrip = field(owner, item, "lstrip", (bool,), False)
        rstrip = field(owner, item, "rstrip", (bool,), False)
        if single_word and (lstrip or rstrip):
            raise ValueError(
                f"tokenizer.json: {owner} ({content!r}) with single_word and lstrip or rstrip is not supported."
            )
        normalized = field(owner, item, "normalized", (bool,), False)
        special = field(owner, item, "special", (bool,), False)
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
        added.append(AddedToken(content, token_id, lstrip, rstrip, special, normalized, single_word))
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
        raise unsupported("post_processor", processor)
    kind = processor.get("type")
    if kind == "ByteLevel":
        return (), ()
    if kind in ("BertProcessing", "RobertaProcessing"):
        start = _special_ids(f"{kind}.cls", processor.get("cls"), tokens)
        end = _special_ids(f"{kind}.sep", processor.get("sep"), tokens)
        return tuple(start), tuple(end)
    if kind == "Sequence":
        start, end = (), ()
        for inner in field("Sequence", processor, "processors", (list,)):
            inner_start, inner_end = _post_processor(inner, tokens)
            start, end = inner_start + start, end + inner_end
        return start, end
    if kind == "TemplateProcessing":
        return _template(processor, tokens)
    raise unsupported("post_processor", processor)


def _template(processor, tokens):
    specials = field("TemplateProcessing", processor, "special_tokens", (dict,), {})
    items = field("TemplateProcessing", processor, "single", (list,))
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
        ids = field(f"TemplateProcessing.special_tokens[{name!r}]", special, "ids", (list,))
        (end if sequences else start).extend(_checked_id(owner, token_id, tokens) for token_id in ids)
    if sequences != 1:
        raise ValueError(f"tokenizer.json: TemplateProcessing.single holds sequence A {sequences} times, not once.")
    return tuple(start), tuple(end)


def _truncation(truncation, added):
    if truncation is None:
        return None, "right"
    if not isinstance(truncation, dict):
        raise ValueError(f"tokenizer.json: truncation must be an object or null. Received: {truncation!r:.200}.")
    max_length = field("truncation", truncation, "max_length", (int,))
    strategy = field("truncation", truncation, "strategy", (str,), "LongestFirst")
    if strategy not in ("LongestFirst", "OnlyFirst"):
        raise ValueError(f"tokenizer.json: truncation strategy {strategy!r} cannot truncate a single text.")
    side = field("truncation", truncation, "direction", (str,), "Right")
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
        length = field("padding.strategy", strategy, "Fixed", (int,))
        if length < 1:
            raise ValueError(f"tokenizer.json: padding Fixed length must be at least 1. Received: {length}.")
    else:
        raise ValueError(f"tokenizer.json: padding strategy {json.dumps(strategy)[:200]} is not supported.")
    side = field("padding", padding, "direction", (str,), "Right")
    if side not in ("Right", "Left"):
        raise ValueError(f"tokenizer.json: padding direction must be Right or Left. Received: {side!r}.")
    multiple = field("padding", padding, "pad_to_multiple_of", (int, None), None)
    if multiple is not None and multiple < 1:
        raise ValueError(f"tokenizer.json: padding pad_to_multiple_of must be at least 1. Received: {multiple}.")
    pad_id = _checked_id("padding.pad_id", field("padding", padding, "pad_id", (int,), 0), ["?"] * size)
    return {"length": length, "multiple": multiple, "side": side.lower(), "pad_id": pad_id}
