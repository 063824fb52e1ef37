"""Reading, validating and writing vocabularies."""

import os

import pytest

from tfsubword.files import vocab


def test_read_strips_only_line_endings(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes("\ufeff[PAD]\r\n a \ntab\there\nline\u2028sep\n".encode("utf-8"))
    assert vocab.read_vocabulary(path) == ["[PAD]", " a ", "tab\there", "line\u2028sep"]


def test_write_then_read_round_trips(tmp_path):
    tokens = ["[UNK]", "##\u00e9", "\u4e2d", " "]
    path = tmp_path / "v.txt"
    vocab.write_vocabulary(tokens, path)
    assert vocab.read_vocabulary(path) == tokens
    assert [p.name for p in tmp_path.iterdir()] == ["v.txt"]  # no temporary file left behind


def test_write_is_atomic_on_failure(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(TypeError):
        vocab.write_vocabulary(["new", None], path)
    assert path.read_text(encoding="utf-8") == "old\n"
    assert os.listdir(tmp_path) == ["v.txt"]


@pytest.mark.parametrize(
    "tokens, message",
    [
        ([], "empty"),
        (["a", "b", "a"], "'a' twice, at ids 0 and 2"),
        (["a", ""], "token 1 is the empty string"),
        (["a", 3], "token 1 is not a string"),
        (["a\nb"], "line break"),
        ([b"\xff"], "not valid UTF-8"),
        (42, "must be a list of tokens or the path of a file"),
    ],
)
def test_invalid_vocabularies(tokens, message):
    with pytest.raises(ValueError, match=message):
        vocab.as_token_list(tokens)


def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="not a file"):
        vocab.as_token_list(str(tmp_path / "missing.txt"))


def test_invalid_utf8_file(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"ok\n\xff\n")
    with pytest.raises(ValueError, match="not valid UTF-8"):
        vocab.as_token_list(path)


def test_bytes_tokens_are_decoded():
    assert vocab.as_token_list([b"caf\xc3\xa9", "x"]) == ["caf\u00e9", "x"]
