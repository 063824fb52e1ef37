"""SentencePiece `.model` files, read and written without the `sentencepiece` package. No TensorFlow.

A `.model` file is a serialized `ModelProto` (protocol buffers, proto2): the pieces with their scores
and types, the trainer's settings and the normalizer's. This module decodes the few fields a tokenizer
needs straight from the wire format, and converts the normalizer's precompiled character map (a
Darts-clone double-array trie over UTF-8 bytes, followed by the replacement strings, see
`tfsubword.files.darts`) to and from a plain `{source: replacement}` dict.
"""

import dataclasses
import functools
import struct

import numpy as np

from tfsubword.files import darts, storage

# What stands for a space in pieces (U+2581 LOWER ONE EIGHTH BLOCK), with `escape_whitespaces`.
SPACE_SYMBOL = "\u2581"
# ModelProto.SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
_TYPES = {NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE}
# TrainerSpec.ModelType
MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}


@dataclasses.dataclass
class Normalizer:
    """`NormalizerSpec`: a name, the character map (`{source: replacement}`) and three switches."""

    name: str = "identity"
    charsmap: dict = dataclasses.field(default_factory=dict)
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True
    precompiled_charsmap: bytes = b""


@dataclasses.dataclass
class Model:
    """What a tokenizer needs from a `ModelProto`. `pieces` holds `(piece, score, type)` triples."""

    pieces: list
    normalizer: Normalizer
    model_type: str = "unigram"
    treat_whitespace_as_suffix: bool = False
    byte_fallback: bool = False
    serialized: bytes = b""


def load(source):
    """A `Model` from the path or the bytes of a `.model` file. Raises `ValueError` if it is not one."""
    data = bytes(source) if isinstance(source, (bytes, bytearray)) else storage.read_bytes(source, "model")
    try:
        return _decode_model(data)
    except (ValueError, IndexError, struct.error, UnicodeDecodeError) as error:
        raise ValueError(f"Not a valid SentencePiece model: {error}") from None


def byte_piece(byte):
    """The name of the piece of one byte in a `byte_fallback` model: `<0x41>` for byte 0x41."""
    return f"<0x{byte:02X}>"


def serialize(pieces, normalizer, model_type="unigram", byte_fallback=False):
    """The bytes of a `.model` file holding `pieces` (`(piece, score, type)`) and `normalizer`.

    Only the fields a tokenizer reads are written; `sentencepiece.SentencePieceProcessor` loads it.
    """
    message = bytearray()
    for piece, score, kind in pieces:
        body = _field_bytes(1, piece.encode("utf-8")) + _field_float(2, score) + _field_varint(3, kind)
        message += _field_bytes(1, body)
    type_number = {name: number for number, name in MODEL_TYPES.items()}[model_type]
    trainer = _field_varint(3, type_number) + _field_varint(4, len(pieces))
    unknown = [index for index, (_, _, kind) in enumerate(pieces) if kind == UNKNOWN]
    controls = {piece: index for index, (piece, _, kind) in enumerate(pieces) if kind == CONTROL}
    trainer += _field_varint(40, unknown[0] if unknown else 0)
    trainer += _field_varint(41, controls.get("<s>", -1)) + _field_varint(42, controls.get("</s>", -1))
    trainer += _field_varint(43, controls.get("<pad>", -1))
    if byte_fallback:
        trainer += _field_varint(35, 1)
    message += _field_bytes(2, trainer)
    spec = _field_bytes(1, normalizer.name.encode("utf-8"))
    if normalizer.precompiled_charsmap:
        spec += _field_bytes(2, normalizer.precompiled_charsmap)
    spec += _field_varint(3, int(normalizer.add_dummy_prefix))
    spec += _field_varint(4, int(normalizer.remove_extra_whitespaces))
    spec += _field_varint(5, int(normalizer.escape_whitespaces))
    message += _field_bytes(3, spec)
    return bytes(message)


# Decoding.


def _decode_model(data):
    if not data:
        raise ValueError("the file is empty")
    pieces, normalizer, trainer = [], None, {}
    for number, value in _fields(data):
        if number == 1:
            pieces.append(_decode_piece(value))
        elif number == 2:
            trainer = {n: v for n, v in _fields(value)}
        elif number == 3:
            normalizer = _decode_normalizer(value)
    if not pieces:
        raise ValueError("it holds no pieces")
    model_type = MODEL_TYPES.get(trainer.get(3, 1))
    if model_type is None:
        raise ValueError(f"unknown model type {trainer.get(3)}")
    return Model(
        pieces=pieces,
        normalizer=normalizer or Normalizer(),
        model_type=model_type,
        treat_whitespace_as_suffix=bool(trainer.get(24, 0)),
        byte_fallback=bool(trainer.get(35, 0)),
        serialized=data,
    )


def _decode_piece(data):
    piece, score, kind = None, 0.0, NORMAL
    for number, value in _fields(data):
        if number == 1:
            piece = value.decode("utf-8")
        elif number == 2:
            score = value
        elif number == 3:
            kind = value
    if not piece:
        raise ValueError("a piece is empty")
    if kind not in _TYPES:
        raise ValueError(f"piece {piece!r} has an unknown type {kind}")
    return piece, score, kind


def _decode_normalizer(data):
    fields = dict(_fields(data))
    charsmap_blob = fields.get(2, b"")
    return Normalizer(
        name=fields.get(1, b"").decode("utf-8"),
        charsmap=decode_charsmap(charsmap_blob) if charsmap_blob else {},
        add_dummy_prefix=bool(fields.get(3, 1)),
        remove_extra_whitespaces=bool(fields.get(4, 1)),
        escape_whitespaces=bool(fields.get(5, 1)),
        precompiled_charsmap=charsmap_blob,
    )


def _fields(data):
    """Yield (field number, value) of a message: ints for varints, bytes for length-delimited
    fields, floats for 32-bit fields (the only 32-bit fields read here are floats)."""
    position, size = 0, len(data)
    while position < size:
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, position = _varint(data, position)
        elif wire == 1:
            if position + 8 > size:
                raise ValueError("truncated 64-bit field")
            value, position = data[position : position + 8], position + 8
        elif wire == 2:
            length, position = _varint(data, position)
            if position + length > size:
                raise ValueError("truncated length-delimited field")
            value, position = data[position : position + length], position + length
        elif wire == 5:
            if position + 4 > size:
                raise ValueError("truncated 32-bit field")
            (value,) = struct.unpack("<f", data[position : position + 4])
            position += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield number, value


def _varint(data, position):
    result, shift = 0, 0
    while True:
        if position >= len(data):
            raise ValueError("truncated varint")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")
    if result >= 1 << 63:  # negative int32/int64 values are written as 64-bit two's complement
        result -= 1 << 64
    return result, position


@functools.lru_cache(maxsize=8)
def _charsmap_entries(blob):
    """(units int64, [(key bytes, offset)], {offset: replacement}) of a precompiled character map.

    Layout: a little-endian uint32 trie size, the Darts-clone double array (uint32 units), then the
    replacement strings, each ending with NUL; a key's value is the offset of its replacement.
    """
    if len(blob) <= 4:
        raise ValueError("the character map is truncated")
    (trie_size,) = struct.unpack("<I", blob[:4])
    if trie_size > len(blob) - 4 or trie_size % 4:
        raise ValueError("the character map's trie size is invalid")
    units = np.frombuffer(blob[4 : 4 + trie_size], dtype="<u4").astype(np.int64)
    strings = blob[4 + trie_size :]
    entries = darts.items(units)
    replacements = {}
    for offset in {offset for _, offset in entries}:
        end = strings.find(b"\0", offset)
        if offset >= len(strings) or end < 0:
            raise ValueError("a character map value points outside its strings")
        replacements[offset] = strings[offset:end].decode("utf-8")
    return units, entries, replacements


@functools.lru_cache(maxsize=8)
def decode_charsmap(blob):
    """The `{source: replacement}` rules of a precompiled character map (shared: do not modify it)."""
    _, entries, replacements = _charsmap_entries(blob)
    return {key.decode("utf-8"): replacements[offset] for key, offset in entries}


def charsmap_arrays(blob):
    """A precompiled character map as arrays, for matching in the graph: the double array's units (uint32),
    the distinct values its keys hold (sorted), the replacement each of those stands for, and the
    longest key in bytes."""
    units, entries, replacements = _charsmap_entries(blob)
    offsets = sorted(replacements)
    return units.astype(np.uint32), offsets, [replacements[offset] for offset in offsets], _longest_key(blob)


@functools.lru_cache(maxsize=8)
def _longest_key(blob):
    return max(len(key) for key, _ in _charsmap_entries(blob)[1])


# Encoding.

_MAX_NESTED_RULES = 31  # SentencePiece's normalizer reads at most 32 matches at one position, and wants fewer


def encode_charsmap(rules):
    """The precompiled character map of `rules`, `{source: replacement}`: the inverse of `decode_charsmap`.

    Sources are non-empty; neither side holds U+0000. No rules give `b""`: no map, as SentencePiece's
    `identity`. Each replacement is stored once.

    Examples:

    >>> blob = encode_charsmap({"ﬁ": "fi", "①": "1", "\\t": " "})
    >>> sorted(decode_charsmap(blob).items())
    [('\\t', ' '), ('①', '1'), ('ﬁ', 'fi')]
    """
    if not rules:
        return b""
    for source, target in rules.items():
        if not isinstance(source, str) or not isinstance(target, str) or not source or "\0" in source + target:
            raise ValueError(f"Rules must map non-empty str to str, without U+0000. Received: {source!r}: {target!r}.")
    for source in rules:
        nested = sum(source[:length] in rules for length in range(1, len(source) + 1))
        if nested > _MAX_NESTED_RULES:
            raise ValueError(f"At most {_MAX_NESTED_RULES} rules may be prefixes of one source. Received: {source!r}.")
    offsets, strings = {}, bytearray()
    for target in sorted(set(rules.values())):
        offsets[target] = len(strings)
        strings += target.encode("utf-8") + b"\0"
    units = darts.build((source.encode("utf-8"), offsets[target]) for source, target in rules.items())
    return struct.pack("<I", units.nbytes) + units.tobytes() + bytes(strings)


def _varint_bytes(value):
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field_varint(number, value):
    return _varint_bytes(number << 3) + _varint_bytes(value)


def _field_bytes(number, value):
    return _varint_bytes(number << 3 | 2) + _varint_bytes(len(value)) + value


def _field_float(number, value):
    return _varint_bytes(number << 3 | 5) + struct.pack("<f", value)
