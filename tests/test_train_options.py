"""The trainers' options for large corpora: `max_sentences` (a fixed sample of lines), `max_memory` (an
error before the counts outgrow it), `limit_alphabet` (WordPiece) and `min_frequency` (Unigram)."""

import pytest

from tfsubword import cli, train_bpe, train_unigram, train_wordpiece
from tfsubword.files import counts as counts_lib
from tfsubword.train import counting
from tfsubword.train.wordpiece import within_alphabet

WORDS = counting.pre_tokenizer_of(counts_lib.pre_tokenizer("wordpiece"))


def numbered_lines(n):
    return [f"w{index}" for index in range(n)]


def test_max_sentences_counts_a_fixed_uniform_sample_of_lines():
    lines = numbered_lines(10_000)
    counts = counting.count_words(lines, pretokenizer=WORDS, max_sentences=1000)
    assert len(counts) == 1000 and all(count == 1 for count in counts.values())
    assert counts == counting.count_words(lines, pretokenizer=WORDS, max_sentences=1000)  # the same lines
    positions = sorted(int(word[1:]) for word in counts)
    # Uniform: each tenth of the corpus gives about a tenth of the sample (binomial sd 9.5).
    tenths = [sum(1 for p in positions if tenth * 1000 <= p < (tenth + 1) * 1000) for tenth in range(10)]
    assert all(60 <= share <= 140 for share in tenths), tenths
    # Kept in corpus order: the counts' first-occurrence order is the lines' order.
    assert [int(word[1:]) for word in counts] == positions
    assert counting.count_words(lines[:50], pretokenizer=WORDS, max_sentences=1000) == {f"w{i}": 1 for i in range(50)}


def test_max_sentences_goes_through_the_trainers_and_refuses_counts():
    lines = [f"w{index} the cat{index % 7} sat on mat{index % 5}" for index in range(200)]
    # The sample does not depend on the pre-tokenizer: its line numbers, from the WordPiece counter.
    chosen = sorted(
        int(w[1:]) for w in counting.count_words(lines, pretokenizer=WORDS, max_sentences=30) if w[0] == "w"
    )
    assert len(chosen) == 30
    sample = [lines[index] for index in chosen]
    expected = train_bpe(sample, vocab_size=60, show_progress=False)
    assert train_bpe(lines, vocab_size=60, max_sentences=30, show_progress=False) == expected
    assert expected != train_bpe(lines, vocab_size=60, show_progress=False)
    with pytest.raises(ValueError, match="`max_sentences` samples lines of text"):
        train_wordpiece({"cat": 2}, vocab_size=10, max_sentences=5, show_progress=False)
    with pytest.raises(ValueError, match="`max_sentences` must be an int of at least 1"):
        train_unigram(lines, vocab_size=40, max_sentences=0, show_progress=False)


def test_max_memory_is_the_words_length_plus_180_bytes_each():
    letters = [" ".join("abcdefghijklmnopqrstuvwxyz")]  # 26 distinct one-byte words: 26 * 181 bytes
    assert len(counting.count_words(letters, pretokenizer=WORDS, max_memory=26 * 181)) == 26
    with pytest.raises(ValueError, match=r"max_memory=4705 bytes: 26 distinct words after 1 lines"):
        counting.count_words(letters, pretokenizer=WORDS, max_memory=26 * 181 - 1)
    with pytest.raises(ValueError, match="more than max_memory=1000 bytes"):
        train_wordpiece(numbered_lines(100), vocab_size=50, max_memory=1000, show_progress=False)


def test_limit_alphabet_keeps_the_most_frequent_characters_by_hand():
    # a: 3 + 1 = 4, b: 3 + 1 + 1 = 5, c: 3, d: 1, x: 1 -> b and a stay.
    assert within_alphabet({"abc": 3, "abd": 1, "xb": 1}, 2) == {"ab": 4, "b": 1}
    # Ties go by code point: c and d (1 each) lose to a and b only by frequency, then "c" < "d".
    assert within_alphabet({"ab": 2, "d": 1, "c": 1}, 3) == {"ab": 2, "c": 1}
    assert within_alphabet({"ab": 2}, 5) == {"ab": 2}
    vocabulary = train_wordpiece(
        {"abc": 3, "abd": 1, "xb": 1}, vocab_size=10, special_tokens=(), limit_alphabet=2, show_progress=False
    )
    assert set("".join(vocabulary).replace("#", "")) == {"a", "b"}
    with pytest.raises(ValueError, match="`limit_alphabet` must be an int of at least 1"):
        train_wordpiece({"ab": 1}, limit_alphabet=0, show_progress=False)


def test_unigram_min_frequency_keeps_rarer_substrings_out():
    lines = ["banana bandana cabana", "ananas anna", "nab ban"] * 20
    default = train_unigram(lines, vocab_size=40, show_progress=False)
    assert default == train_unigram(lines, vocab_size=40, min_frequency=1, show_progress=False)
    # Each line occurs 20 times, so every substring at least 20: from 10**6 on, only characters are left.
    only_characters = train_unigram(lines, vocab_size=40, min_frequency=10**6, show_progress=False)
    pieces = [piece for piece, _ in only_characters[3:]]
    assert pieces and all(len(piece) == 1 for piece in pieces)
    assert any(len(piece) > 1 for piece, _ in default)


def test_the_cli_takes_the_options(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(numbered_lines(300)) + "\n", encoding="utf-8")
    output = tmp_path / "vocab.txt"
    common = ["--no-progress", "-o", str(output), str(corpus)]
    assert cli.main(["train", "wordpiece", "--vocab-size", "40", "--max-memory", "1K", *common]) == 2
    assert "more than max_memory=1024 bytes" in capsys.readouterr().err
    assert (
        cli.main(
            ["train", "wordpiece", "--vocab-size", "40", "--limit-alphabet", "5", "--max-sentences", "50", *common]
        )
        == 0
    )
    assert len(output.read_text(encoding="utf-8").split()) <= 40
    with pytest.raises(SystemExit):
        cli.main(["train", "bpe", "--max-memory", "12Q", *common])
    assert "500M or 4G" in capsys.readouterr().err
