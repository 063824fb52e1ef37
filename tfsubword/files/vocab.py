"""Vocabulary files and lists: token lists, Hugging Face's `vocab.json` and `merges.txt`. No TensorFlow here.

A vocabulary file holds one token per line, in UTF-8; the id of a token is its line number, from 0.
Lines end with "\\n" (a "\\r" before it is dropped too) and a byte-order mark at the very start is
ignored; nothing else is stripped, so tokens may hold any other character, including spaces and Unicode
line separators. A `vocab.json` maps each token to its id; a `merges.txt` holds one `left right` pair
per line in rank order, after an optional `#version` line. Every path may be local or any file system
TensorFlow reads (`gs://...`), see `storage`.
"""

import json
import os

from tfsubword.files import storage

MERGES_HEADER = "#version: 0.2"
# The special tokens of BERT's vocabularies, and GPT-2's one, which the trainers put first by default.
BERT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
GPT2_SPECIAL_TOKENS = ("<|endoftext|>",)


def _is_path(value):
    return isinstance(value, (str, os.PathLike))


def _text(path, argument):
    data = storage.read_bytes(path, argument)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"`{argument}` file {os.fspath(path)!r} is not valid UTF-8: {error}.") from None
    return text[1:] if text.startswith("\ufeff") else text


def read_vocabulary(path, argument="vocabulary"):
    """The tokens of a one-token-per-line file, in order. Raises `ValueError` on invalid UTF-8."""
    lines = _text(path, argument).split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def write_vocabulary(tokens, path):
    """Write `tokens` one per line, atomically: readers see the old file or the whole new one."""
    storage.write_atomically(path, "".join(token + "\n" for token in tokens).encode("utf-8"))


def write_vocab_json(tokens, path):
    """Write a Hugging Face `vocab.json` (token -> id), atomically."""
    data = json.dumps({token: index for index, token in enumerate(tokens)}, ensure_ascii=False)
    storage.write_atomically(path, data.encode("utf-8"))


def _json(path, argument):
    try:
        return json.loads(_text(path, argument))
    except ValueError as error:
        raise ValueError(f"Cannot read `{argument}` {os.fspath(path)!r}: {error}") from None


def as_token_list(vocabulary, argument="vocabulary"):
    """A validated list of tokens from a list of tokens, a dict token -> id (ids 0..n-1), or the path of a
    one-token-per-line file or of a `vocab.json`.

    Raises `ValueError` naming the problem: an empty vocabulary, a token that is not a string, an
    empty token, a token with a line break (it could not be saved one per line), or a repeated token.
    """
    if _is_path(vocabulary):
        if os.fspath(vocabulary).endswith(".json"):
            vocabulary = _json(vocabulary, argument)
            if not isinstance(vocabulary, dict):
                raise ValueError(f"`{argument}`: a vocab.json must hold an object mapping tokens to ids.")
        else:
            vocabulary = read_vocabulary(vocabulary, argument)
    if isinstance(vocabulary, dict):
        ids = sorted(vocabulary.values()) if all(isinstance(i, int) for i in vocabulary.values()) else None
        if ids != list(range(len(vocabulary))):
            raise ValueError(f"`{argument}`: a vocabulary dict must map its tokens to the ids 0..n-1, each once.")
        vocabulary = sorted(vocabulary, key=vocabulary.get)
    try:
        tokens = list(vocabulary)
    except TypeError:
        raise ValueError(
            f"`{argument}` must be a list of tokens or the path of a file. Received: {argument}={vocabulary!r}."
        ) from None
    if not tokens:
        raise ValueError(f"`{argument}` is empty: a vocabulary needs at least one token.")
    seen = {}
    for index, token in enumerate(tokens):
        if isinstance(token, bytes):
            try:
                token = tokens[index] = token.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"`{argument}` token {index} is not valid UTF-8: {token!r}.") from None
        if not isinstance(token, str):
            raise ValueError(f"`{argument}` token {index} is not a string: {token!r}.")
        if not token:
            raise ValueError(f"`{argument}` token {index} is the empty string.")
        if "\n" in token or "\r" in token:
            raise ValueError(f"`{argument}` token {index} contains a line break: {token!r}.")
        if token in seen:
            raise ValueError(f"`{argument}` contains the token {token!r} twice, at ids {seen[token]} and {index}.")
        seen[token] = index
    return tokens


def read_merges(merges):
    """A list of `(left, right)` pairs from a list of pairs (or `"left right"` strings), or the path of a
    `merges.txt` (a first line starting with `#version` is skipped) or of a JSON list of pairs."""
    if _is_path(merges):
        if os.fspath(merges).endswith(".json"):
            return read_merges(_json(merges, "merges"))
        lines = read_vocabulary(merges, "merges")
        if lines and lines[0].startswith("#version"):
            lines = lines[1:]
        pairs = []
        for number, line in enumerate(lines, 1):
            parts = line.split(" ")
            if line == "" and number == len(lines):
                continue
            if len(parts) != 2 or not all(parts):
                raise ValueError(
                    f"`merges` file {os.fspath(merges)!r} line {number} is not two tokens separated by a space: "
                    f"{line!r}."
                )
            pairs.append((parts[0], parts[1]))
        return pairs
    try:
        items = list(merges)
    except TypeError:
        raise ValueError(f"`merges` must be a list of pairs or the path of a file. Received: {merges!r}.") from None
    pairs = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            item = item.split(" ")
        if not isinstance(item, (tuple, list)) or len(item) != 2 or not all(isinstance(s, str) and s for s in item):
            raise ValueError(f"`merges` entry {index} must be a pair of non-empty tokens. Received: {item!r}.")
        pairs.append((item[0], item[1]))
    return pairs


def write_merges(merges, path):
    """Write the merges atomically: a Hugging Face `merges.txt`, or a JSON list of pairs when `path` ends
    with `.json` (the form that can hold tokens with spaces, as character-level BPE makes)."""
    if os.fspath(path).endswith(".json"):
        storage.write_atomically(path, json.dumps([list(pair) for pair in merges], ensure_ascii=False).encode("utf-8"))
        return
    lines = [MERGES_HEADER]
    for left, right in merges:
        if any(c in token for token in (left, right) for c in " \n\r"):
            raise ValueError(f"The merge {(left, right)!r} has a space or line break: merges.txt cannot hold it.")
        lines.append(f"{left} {right}")
    storage.write_atomically(path, ("\n".join(lines) + "\n").encode("utf-8"))
