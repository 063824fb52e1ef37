"""The `tfsubword` command line."""

import json
import subprocess
import sys

import pytest

from tests.test_train_wordpiece import SEED_CORPUS, SEED_TRAINED
from tfsubword import cli, train_wordpiece
from tfsubword.files.vocab import read_vocabulary


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(SEED_CORPUS) + "\n", encoding="utf-8")
    return path


def test_train_writes_the_vocabulary(tmp_path, corpus_file, capsys):
    output = tmp_path / "vocab.txt"
    code = cli.main(["train", "wordpiece", "--vocab-size", "70", "--no-lowercase", "-o", str(output), str(corpus_file)])
    assert code == 0
    assert read_vocabulary(output) == SEED_TRAINED
    error = capsys.readouterr().err
    assert "counting words" in error and "learning tokens" in error and "wrote 70 tokens" in error


def test_train_flags_reach_train_wordpiece(tmp_path, corpus_file):
    output = tmp_path / "vocab.txt"
    flags = [
        "--vocab-size",
        "60",
        "--lowercase",
        "--strip-accents",
        "no",
        "--no-split-on-cjk",
        "--special-tokens",
        "[UNK],<s>",
        "--suffix-indicator",
        "@@",
        "--min-frequency",
        "2",
        "--max-token-length",
        "4",
        "--algorithm",
        "likelihood",
        "--no-progress",
    ]
    assert cli.main(["train", "wordpiece", *flags, "-o", str(output), str(corpus_file)]) == 0
    expected = train_wordpiece(
        files=[corpus_file],
        vocab_size=60,
        lowercase=True,
        strip_accents=False,
        split_on_cjk=False,
        special_tokens=("[UNK]", "<s>"),
        suffix_indicator="@@",
        min_frequency=2,
        max_token_length=4,
        algorithm="likelihood",
        show_progress=False,
    )
    assert read_vocabulary(output) == expected


def test_train_reads_standard_input(tmp_path, corpus_file, monkeypatch):
    output = tmp_path / "vocab.txt"
    with open(corpus_file, "rb") as stdin:
        monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": stdin})())
        assert (
            cli.main(
                ["train", "wordpiece", "--vocab-size", "70", "--no-lowercase", "--no-progress", "-o", str(output), "-"]
            )
            == 0
        )
    assert read_vocabulary(output) == SEED_TRAINED


def test_train_errors_name_the_problem_and_write_nothing(tmp_path, corpus_file, capsys):
    output = tmp_path / "vocab.txt"
    assert cli.main(["train", "wordpiece", "-o", str(output), str(tmp_path / "missing.txt")]) == 2
    assert "missing.txt" in capsys.readouterr().err
    assert (
        cli.main(["train", "wordpiece", "--vocab-size", "10", "--no-progress", "-o", str(output), str(corpus_file)])
        == 2
    )
    assert "at least" in capsys.readouterr().err
    assert not output.exists()


def test_tokenize(tmp_path, capsys):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\nthe\nqu\n##ick\nfox\n.\n", encoding="utf-8")
    assert cli.main(["tokenize", "--vocab", str(vocab), "The quick fox.", "quack"]) == 0
    assert capsys.readouterr().out == "the qu ##ick fox .\n[UNK]\n"
    assert cli.main(["tokenize", "--vocab", str(vocab), "--ids", "the fox"]) == 0
    assert capsys.readouterr().out == "2 5\n"


@pytest.mark.full
def test_console_script_tokenizes_standard_input(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[UNK]\nthe\nfox\n", encoding="utf-8")
    script = [sys.executable, "-c", "import sys; from tfsubword.cli import main; sys.exit(main())"]
    result = subprocess.run(
        [*script, "tokenize", "--vocab", str(vocab)],
        input="The FOX\nthe cat\n",
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == "the fox\nthe [UNK]\n"


def test_train_bpe_writes_hugging_face_files(tmp_path, capsys):
    """The seed's BPE example (002) through the command line; the flags reach train_bpe."""
    from tests.test_bpe import SEED_CORPUS as BPE_SEED_CORPUS
    from tfsubword import train_bpe
    from tfsubword.files.vocab import read_merges

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(BPE_SEED_CORPUS) + "\n", encoding="utf-8")
    output = tmp_path / "out"
    assert cli.main(["train", "bpe", "--vocab-size", "50", "-o", str(output), str(corpus)]) == 0
    vocabulary, merges = train_bpe(BPE_SEED_CORPUS, vocab_size=50, show_progress=False)
    written = json.loads((output / "vocab.json").read_text(encoding="utf-8"))
    assert sorted(written, key=written.get) == vocabulary and len(vocabulary) == 50
    assert (output / "merges.txt").read_text(encoding="utf-8").splitlines()[0] == "#version: 0.2"
    assert read_merges(str(output / "merges.txt")) == merges and merges[0] == ("Ġ", "t")
    assert "wrote 50 tokens and 19 merges" in capsys.readouterr().err
    flags = [
        "--vocab-size",
        "40",
        "--no-byte-level",
        "--special-tokens",
        "<s>,</s>",
        "--min-frequency",
        "2",
        "--max-token-length",
        "3",
        "--no-progress",
    ]
    assert cli.main(["train", "bpe", *flags, "-o", str(tmp_path / "chars"), str(corpus)]) == 0
    expected = train_bpe(
        files=[corpus],
        vocab_size=40,
        byte_level=False,
        special_tokens=("<s>", "</s>"),
        min_frequency=2,
        max_token_length=3,
        show_progress=False,
    )
    written = json.loads((tmp_path / "chars" / "vocab.json").read_text(encoding="utf-8"))
    assert sorted(written, key=written.get) == expected[0]
    assert read_merges(str(tmp_path / "chars" / "merges.json")) == expected[1]
    assert cli.main(["train", "bpe", "--vocab-size", "5", "--no-progress", "-o", str(tmp_path / "x"), str(corpus)]) == 2
    assert "at least" in capsys.readouterr().err and not (tmp_path / "x" / "vocab.json").exists()
