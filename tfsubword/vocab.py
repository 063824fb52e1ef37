"""Vocabulary files and lists: reading, validation and atomic writing. No TensorFlow here.

A vocabulary file holds one token per line, in UTF-8; the id of a token is its line number, from 0.
Lines end with "\\n" (a "\\r" before it is dropped too) and a byte-order mark at the very start is
ignored; nothing else is stripped, so tokens may hold any other character, including spaces and Unicode
line separators.
"""

import os
import tempfile


def read_vocabulary(path):
    """The tokens of a one-token-per-line file, in order. Raises `ValueError` on invalid UTF-8."""
    with open(path, "rb") as file:
        data = file.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"Vocabulary file {os.fspath(path)!r} is not valid UTF-8: {error}.") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def write_vocabulary(tokens, path):
    """Write `tokens` one per line, atomically: readers see the old file or the whole new one."""
    write_atomically(path, "".join(token + "\n" for token in tokens).encode("utf-8"))


def write_atomically(path, data):
    """Write bytes so that readers see the old file or the whole new one."""
    directory = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(prefix=".tfsubword-", dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def as_token_list(vocabulary, argument="vocabulary"):
    """A validated list of tokens from a list of tokens or the path of a vocabulary file.

    Raises `ValueError` naming the problem: an empty vocabulary, a token that is not a string, an
    empty token, a token with a line break (it could not be saved one per line), or a repeated token.
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        if not os.path.isfile(vocabulary):
            raise ValueError(f"`{argument}` must be a list of tokens or the path of a file. "
                             f"Received a path that is not a file: {os.fspath(vocabulary)!r}.")
        tokens = read_vocabulary(vocabulary)
    else:
        try:
            tokens = list(vocabulary)
        except TypeError:
            raise ValueError(f"`{argument}` must be a list of tokens or the path of a file. "
                             f"Received: {argument}={vocabulary!r}.") from None
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
