"""The forms a unigram vocabulary comes in, read and checked as SentencePiece checks them. No TensorFlow.

- a SentencePiece `.model` file (path or bytes): its pieces, scores, types and normalizer as they are;
- `UnigramVocabulary`, what `train_unigram` returns: `(piece, log_probability)` pairs that also carry
  the normalizer they were trained with, so that a layer built from it encodes as its `.model` file;
- a plain list of `(piece, log_probability)` pairs, or a `piece<TAB>score` file (SentencePiece's
  `.vocab`), with the normalizer named by the caller.
"""

import dataclasses
import os

import numpy as np

from tfsubword.files import sentencepiece_model as spm_model
from tfsubword.files import storage
from tfsubword.text import normalization_rules

# SentencePiece refuses models with pieces of this many UTF-8 bytes or more.
MAX_PIECE_BYTES = 8000
META_PIECES = ("<unk>", "<s>", "</s>")
_META_KINDS = (spm_model.UNKNOWN, spm_model.CONTROL, spm_model.CONTROL)
_SWITCHES = ("add_dummy_prefix", "remove_extra_whitespaces", "escape_whitespaces")


class UnigramVocabulary(list):
    """`[(piece, log_probability), ...]`, as a list, with the `normalizer` (a `sentencepiece_model.Normalizer`)
    the pieces were trained with. Its first pieces are `<unk>`, `<s>` and `</s>`, as SentencePiece's.
    `UnigramLayer(vocabulary)` takes it with its normalizer; `save(path)` writes a `.model` file."""

    def __init__(self, pairs, normalizer):
        super().__init__(pairs)
        self.normalizer = normalizer

    def model(self):
        """The vocabulary as a `sentencepiece_model.Model`."""
        kinds = [_META_KINDS[META_PIECES.index(p)] if p in META_PIECES else spm_model.NORMAL for p, _ in self]
        return spm_model.Model(pieces=[(p, s, k) for (p, s), k in zip(self, kinds)], normalizer=self.normalizer)

    def serialized(self):
        """The bytes of a SentencePiece `.model` file holding this vocabulary and its normalizer."""
        return serialize(self.model())

    def save(self, path):
        """Write the `.model` file (atomically), which `sentencepiece` and `UnigramLayer` both load."""
        storage.write_atomically(path, self.serialized())

    def __reduce__(self):
        return type(self), (list(self), self.normalizer)


def serialize(model):
    """The bytes of a `.model` file for `model`; a named normalizer's precompiled map is built if missing."""
    if model.serialized:
        return model.serialized
    normalizer = model.normalizer
    if normalizer.charsmap and not normalizer.precompiled_charsmap:
        precompiled = normalization_rules.precompiled_charsmap(normalizer.name)
        normalizer = dataclasses.replace(normalizer, precompiled_charsmap=precompiled)
    return spm_model.serialize(model.pieces, normalizer, byte_fallback=model.byte_fallback)


def normalizer(name=None, add_dummy_prefix=None, remove_extra_whitespaces=None, escape_whitespaces=None):
    """The normalizer of a list vocabulary: the rules `name` ("identity" when None), switches True when None."""
    name = normalization_rules.check_name("identity" if name is None else name)
    switches = dict(zip(_SWITCHES, (add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces)))
    switches = {key: True if value is None else value for key, value in switches.items()}
    return spm_model.Normalizer(name=name, charsmap=normalization_rules.charsmap(name), **switches)


def load(
    vocabulary, *, normalization=None, switches=None, unknown_token="<unk>", control_tokens=(), model_types=("unigram",)
):
    """A checked `sentencepiece_model.Model` of one of `model_types` from any of the module's forms.

    `normalization` (a rule name) and `switches` (`{name: bool or None}` for the three normalizer
    switches) apply to lists and `.vocab` files; a model or a `UnigramVocabulary` carries its own, and a
    value given that differs from its own raises `ValueError`. `unknown_token` and `control_tokens`
    give the piece types of a list.
    """
    switches = switches or {}
    model = _as_model(vocabulary, normalization, switches, unknown_token, control_tokens)
    if vocabulary is not model and not _is_list_form(vocabulary):
        own = model.normalizer
        given = {"normalization": (normalization, own.name), **{k: (v, getattr(own, k)) for k, v in switches.items()}}
        for argument, (value, carried) in given.items():
            if value is not None and value != carried:
                raise ValueError(
                    f"`{argument}`={value!r} differs from the vocabulary's own normalizer ({carried!r}): pass None "
                    "to use the vocabulary's."
                )
    check(model, model_types)
    return model


def _is_list_form(vocabulary):
    return not isinstance(vocabulary, (UnigramVocabulary, spm_model.Model, bytes, bytearray, str, os.PathLike))


def _as_model(vocabulary, normalization, switches, unknown_token, control_tokens):
    if isinstance(vocabulary, spm_model.Model):
        return vocabulary
    if isinstance(vocabulary, UnigramVocabulary):
        return vocabulary.model()
    if isinstance(vocabulary, (bytes, bytearray)):
        return spm_model.load(vocabulary)

    def from_pairs(pairs):
        spec = normalizer(normalization, *(switches.get(name) for name in _SWITCHES))
        return _model_from_pairs(pairs, spec, unknown_token, control_tokens)

    if isinstance(vocabulary, (str, os.PathLike)):
        data = storage.read_bytes(vocabulary, "vocabulary")
        if _looks_like_text(data):
            return from_pairs(_read_scores(data, vocabulary))
        return spm_model.load(data)
    try:
        pairs = [tuple(pair) for pair in vocabulary]
    except TypeError:
        raise ValueError(
            "`vocabulary` must be a SentencePiece model (path or bytes), a list of (piece, log_probability) "
            f"pairs or the path of a piece<TAB>score file. Received: {vocabulary!r}."
        ) from None
    return from_pairs(pairs)


def _model_from_pairs(pairs, spec, unknown_token, control_tokens):
    if not pairs:
        raise ValueError("`vocabulary` is empty.")
    pieces = []
    for index, pair in enumerate(pairs):
        if len(pair) != 2 or not isinstance(pair[0], str) or not pair[0]:
            raise ValueError(f"`vocabulary` entry {index} must be a (piece, log_probability) pair. Received: {pair!r}.")
        piece, score = pair
        try:
            score = float(score)
        except (TypeError, ValueError):
            raise ValueError(f"`vocabulary` entry {index} has a score that is not a number: {score!r}.") from None
        if piece == unknown_token:
            kind = spm_model.UNKNOWN
        else:
            kind = spm_model.CONTROL if piece in control_tokens else spm_model.NORMAL
        with np.errstate(over="ignore"):  # a score beyond single precision is refused by `check`
            pieces.append((piece, float(np.float32(score)), kind))
    if unknown_token not in {piece for piece, _, _ in pieces}:
        raise ValueError(f"The vocabulary does not contain the unknown token {unknown_token!r}.")
    return spm_model.Model(pieces=pieces, normalizer=spec)


def check(model, model_types=("unigram",)):
    """Raise `ValueError` for what SentencePiece refuses, or what `UnigramLayer` does not support yet."""
    if model.model_type not in model_types:
        hint = " (SentencePieceLayer reads BPE models)" if model.model_type == "bpe" else ""
        raise ValueError(
            f"This layer reads SentencePiece models of type {' or '.join(model_types)}; this one is of type "
            f"{model.model_type!r}{hint}."
        )
    if model.treat_whitespace_as_suffix:
        raise ValueError("SentencePiece models with `treat_whitespace_as_suffix` are not supported yet.")
    _check_byte_pieces(model)
    seen = {}
    for index, (piece, score, _) in enumerate(model.pieces):
        if piece in seen:
            raise ValueError(f"The vocabulary contains the piece {piece!r} twice, at ids {seen[piece]} and {index}.")
        if not np.isfinite(np.float32(score)):
            raise ValueError(
                f"The piece {piece!r} (id {index}) has a score that is not finite in single precision: {score!r}."
            )
        size = len(piece.encode("utf-8"))
        if size >= MAX_PIECE_BYTES:
            raise ValueError(
                f"The piece at id {index} has {size} UTF-8 bytes; pieces must have fewer than {MAX_PIECE_BYTES}."
            )
        if "\0" in piece:
            raise ValueError(f"The piece {piece!r} (id {index}) contains a NUL character.")
        seen[piece] = index
    unknown = [index for index, (_, _, kind) in enumerate(model.pieces) if kind == spm_model.UNKNOWN]
    if len(unknown) != 1:
        raise ValueError(f"A unigram vocabulary needs exactly one unknown piece; this one has {len(unknown)}.")


def _check_byte_pieces(model):
    """As SentencePiece: byte pieces only with byte fallback, then all 256 of them, named <0x00> to <0xFF>."""
    names = {spm_model.byte_piece(byte) for byte in range(256)}
    byte_pieces = [piece for piece, _, kind in model.pieces if kind == spm_model.BYTE]
    for piece in byte_pieces:
        if not model.byte_fallback:
            raise ValueError(f"The model has the byte piece {piece!r} but not `byte_fallback`.")
        if piece not in names:
            raise ValueError(f"The model has a byte piece {piece!r} that names no byte (<0x00> to <0xFF>).")
    if model.byte_fallback and len(set(byte_pieces)) != 256:
        missing = sorted(names - set(byte_pieces))
        raise ValueError(
            f"A `byte_fallback` model needs the 256 byte pieces <0x00> to <0xFF>; this one lacks {len(missing)}, "
            f"{missing[0]!r} first."
        )


def _looks_like_text(data):
    """A `piece<TAB>score` file is UTF-8 text with a tab on its first line; a `.model` file is a
    binary protobuf that starts with byte 0x0A (its first field)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not text.startswith("\n") and "\t" in text.split("\n", 1)[0]


def _read_scores(data, path):
    text = data.decode("utf-8")
    pairs = []
    for number, line in enumerate(text.split("\n"), 1):
        line = line[:-1] if line.endswith("\r") else line
        if not line:
            continue
        piece, tab, score = line.rpartition("\t")
        if not tab:
            raise ValueError(f"{os.fspath(path)!r} line {number} is not piece<TAB>score: {line!r}.")
        pairs.append((piece, score))
    return pairs


def write_scores(pairs, path):
    """Write `piece<TAB>score` lines (SentencePiece's `.vocab` form), atomically."""
    storage.write_atomically(path, "".join(f"{piece}\t{score}\n" for piece, score in pairs).encode("utf-8"))
