"""Counts files (`tfsubword.files.counts`): any word round-trips, hostile files give `ValueError`, and
the trainers learn from them (`counts=`) with their own pre-tokenizer only."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tfsubword import cli, train_bpe, train_unigram, train_wordpiece
from tfsubword.files import counts as counts_lib

WORDPIECE = counts_lib.pre_tokenizer("wordpiece")
CORPUS = ["The quick brown fox jumps over the lazy dog.", "Le renard brun saute!", "the fox, the dog"] * 3


def test_the_file_by_hand(tmp_path):
    path = tmp_path / "counts.tsv"
    counts_lib.write_counts({"b": 2, "a\tb": 5, "c\\n": 2, "": 9, "new\nline\r": 7}, {"model": "bpe"}, path)
    assert path.read_bytes() == (b'#tfsubword-counts {"model": "bpe"}\nnew\\nline\\r\t7\na\\tb\t5\nb\t2\nc\\\\n\t2\n')
    spec, counts = counts_lib.read_counts(path)
    assert spec == {"model": "bpe"}
    assert list(counts.items()) == [("new\nline\r", 7), ("a\tb", 5), ("b", 2), ("c\\n", 2)]


words = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)


@given(st.dictionaries(words, st.integers(1, 10**15), min_size=1, max_size=30))
def test_any_word_round_trips(tmp_path_factory, counts):
    path = tmp_path_factory.mktemp("counts") / "counts.tsv"
    counts_lib.write_counts(counts, WORDPIECE, path)
    spec, read = counts_lib.read_counts(path)
    assert spec == WORDPIECE
    assert read == counts
    assert list(read.values()) == sorted(counts.values(), reverse=True)


def test_shards_are_summed_and_must_agree(tmp_path):
    first, second, other = tmp_path / "a.tsv", tmp_path / "b.tsv", tmp_path / "c.tsv"
    counts_lib.write_counts({"x": 1, "y": 2}, WORDPIECE, first)
    counts_lib.write_counts({"x": 3}, WORDPIECE, second)
    counts_lib.write_counts({"x": 3}, counts_lib.pre_tokenizer("wordpiece", lowercase=False), other)
    assert list(counts_lib.read_counts([first, second])[1].items()) == [("x", 4), ("y", 2)]
    with pytest.raises(ValueError, match="different pre-tokenizers"):
        counts_lib.read_counts([first, other])


HEADER = b'#tfsubword-counts {"model": "bpe"}\n'


@pytest.mark.parametrize(
    "data, named",
    [
        (b"", "first line"),
        (b"word\t1\n", "first line"),
        (b"#tfsubword-counts [1]\nword\t1\n", "JSON object"),
        (b"#tfsubword-counts {\nword\t1\n", "JSON object"),
        (HEADER + b"word 1\n", "line 2: expected a word, a tab"),
        (HEADER + b"word\t0\n", "positive integer"),
        (HEADER + b"word\t-1\n", "positive integer"),
        (HEADER + b"word\t1.5\n", "positive integer"),
        (HEADER + "word\t\u0663\n".encode(), "positive integer"),
        (HEADER + b"word\t1\r\n", "positive integer"),
        (HEADER + b"a\t1\n\t2\n", "line 3: the word is empty"),
        (HEADER + b"a\\x\t1\n", "no escape"),
        (HEADER + b"a\\\t1\n", "no escape"),
        (HEADER + b"a\rb\t1\n", "must be escaped"),
        (HEADER + b"\xff\t1\n", "not UTF-8"),
        (HEADER, "hold no words"),
    ],
)
def test_damaged_files_give_value_errors(tmp_path, data, named):
    path = tmp_path / "counts.tsv"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=named):
        counts_lib.read_counts(path)


@given(st.binary(max_size=60), st.integers(0, 200))
def test_random_damage_gives_counts_or_a_value_error(tmp_path_factory, junk, where):
    path = tmp_path_factory.mktemp("counts") / "counts.tsv"
    data = counts_lib.encode({"a\tb": 3, "c": 1, "\\": 2}, WORDPIECE)
    path.write_bytes(data[:where] + junk + data[where:])
    try:
        spec, counts = counts_lib.read_counts(path)
    except ValueError:
        return
    assert isinstance(spec, dict) and counts
    assert all(isinstance(word, str) and word and isinstance(n, int) and n > 0 for word, n in counts.items())


def test_no_file_and_a_missing_file_are_errors(tmp_path):
    with pytest.raises(ValueError, match="names no file"):
        counts_lib.read_counts([])
    with pytest.raises(ValueError, match="not a file"):
        counts_lib.read_counts(tmp_path / "missing.tsv")


def test_pre_tokenizer_options_are_checked():
    assert counts_lib.pre_tokenizer("unigram", normalization="identity")["normalization"] == "identity"
    with pytest.raises(ValueError, match="`model` must be one of"):
        counts_lib.pre_tokenizer("wordpieces")
    with pytest.raises(ValueError, match="`normalization` is no option of the wordpiece"):
        counts_lib.pre_tokenizer("wordpiece", normalization="nfkc")
    with pytest.raises(ValueError, match="`lowercase` must be True or False"):
        counts_lib.pre_tokenizer("wordpiece", lowercase="yes")


@pytest.mark.parametrize(
    "model, train, options, flags",
    [
        ("wordpiece", train_wordpiece, {"vocab_size": 60}, []),
        # The identity rules: nmt_nfkc's take seconds to derive in each process (the default: in --full).
        ("unigram", train_unigram, {"vocab_size": 40, "normalization": "identity"}, ["--normalization", "identity"]),
        pytest.param("unigram", train_unigram, {"vocab_size": 40}, [], marks=pytest.mark.full),
        ("bpe", train_bpe, {"vocab_size": 60}, []),
    ],
)
def test_trainers_learn_from_the_counts_the_cli_writes(tmp_path, capsys, model, train, options, flags):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    output = tmp_path / "counts.tsv"
    assert cli.main(["count", model, "--no-progress", *flags, "-o", str(output), str(tmp_path / "corp*.txt")]) == 0
    assert "wrote the counts of" in capsys.readouterr().err
    spec, counts = counts_lib.read_counts(output)
    counter_options = {name: value for name, value in options.items() if name != "vocab_size"}
    assert spec == counts_lib.pre_tokenizer(model, **counter_options)
    from tfsubword.train import counting

    counted = counting.count_words(CORPUS, pretokenizer=counting.pre_tokenizer_of(spec))
    counted.pop("", None)
    assert counts == counts_lib.ordered(counted)
    # Learning from the file is learning from those counts, in the file's order (byte-level for BPE).
    from_file = train(counts=output, show_progress=False, **options)
    if model == "bpe":
        from tfsubword.text.byte_level import to_byte_level

        counts = {to_byte_level(word): count for word, count in counts.items()}
    assert from_file == train(counts, show_progress=False, **options)


def test_a_trainer_refuses_counts_of_another_pre_tokenizer(tmp_path):
    path = tmp_path / "counts.tsv"
    counts_lib.write_counts({"fox": 3}, counts_lib.pre_tokenizer("wordpiece", lowercase=False), path)
    with pytest.raises(ValueError, match='"lowercase": false.*"lowercase": true'):
        train_wordpiece(counts=path, vocab_size=10, show_progress=False)
    with pytest.raises(ValueError, match='"model": "wordpiece".*"model": "bpe"'):
        train_bpe(counts=path, vocab_size=10, show_progress=False)
    with pytest.raises(ValueError, match="exactly one of `corpus`, `files` and `counts`"):
        train_wordpiece(CORPUS, counts=path, vocab_size=10, show_progress=False)


def test_the_cli_takes_counts_or_files_and_beam_options_only_with_a_runner(tmp_path, capsys):
    path = tmp_path / "counts.tsv"
    counts_lib.write_counts({"fox": 3, "dog": 2}, WORDPIECE, path)
    vocab = tmp_path / "vocab.txt"
    assert (
        cli.main(["train", "wordpiece", "--vocab-size", "20", "--no-progress", "--counts", str(path), "-o", str(vocab)])
        == 0
    )
    assert vocab.read_text(encoding="utf-8").split("\n")[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert cli.main(["train", "wordpiece", "--counts", str(path), "-o", str(vocab), str(path)]) == 2
    assert "exactly one of" in capsys.readouterr().err
    assert cli.main(["count", "bpe", "-o", str(path), str(tmp_path / "nothing-*.txt")]) == 2
    assert "No file matches" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["count", "bpe", "--temp_location", "/tmp", "-o", str(path), str(path)])
    assert "unrecognized arguments: --temp_location" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["count", "bpe", "--runner", "DirectRunner", "--project", "p", "-o", str(path), str(path)])
    assert "write Beam options as --project=VALUE: is 'p' its value or a FILE_PATTERN?" in capsys.readouterr().err
