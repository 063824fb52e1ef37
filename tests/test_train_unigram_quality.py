"""train_unigram against SentencePiece's trainer, piece by piece: seed scores, the alphabet, which pieces
may exist. Golden values come from SentencePiece (trained here) or from hand calculation."""

import io
import math

import numpy as np
import pytest

from tests.conftest import nonempty_lines, shared_file
from tfsubword.train import unigram as learning
from tfsubword.train import unigram_corpus


def _word_counts(lines):
    """SentencePiece's words under `identity` normalization: split at spaces, each word after "▁", the
    last of each line marked with a trailing space (as the word counter does)."""
    counts = {}
    for line in lines:
        words = ["\u2581" + word for word in line.split(" ") if word]
        for word in words[:-1] + [words[-1] + " "] if words else []:
            counts[word] = counts.get(word, 0) + 1
    return counts


def _sentencepiece_pieces(lines, vocab_size, **options):
    spm = pytest.importorskip("sentencepiece")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        model_type="unigram",
        vocab_size=vocab_size,
        normalization_rule_name="identity",
        num_threads=1,
        minloglevel=2,
        **options,
    )
    processor = spm.SentencePieceProcessor(model_proto=model.getvalue())
    return [processor.id_to_piece(i) for i in range(3, processor.get_piece_size())]


def _seeds(word_counts, character_coverage=0.9995, split_by_script=True):
    words, counts, line_ends = unigram_corpus.training_words(word_counts)
    corpus = unigram_corpus.Corpus(words, counts, character_coverage, line_ends)
    pieces, scores = corpus.seeds(16, 1_000_000, split_by_script)
    return corpus, dict(zip(pieces, scores))


def test_seed_scores_are_frequency_times_length_normalized():
    # By hand: "▁abab" x3 and "▁ab" x2, each followed by another word. Characters (their counts): ▁ 5,
    # a 8, b 8. Seeds are SentencePiece's suffix-array nodes, the substrings followed by two different
    # characters: "ab" (by "a", and by the next word's "▁") and "▁ab"; "▁a", "ba", "aba", "▁aba" are
    # always followed by "b" or "a", "bab", "abab", "▁abab" by "▁". Frequency x length (SentencePiece's
    # seed score, "character coverage"): ab 8x2, ▁ab 5x3. The sum is 21 + 31 = 52.
    _, scores = _seeds({"\u2581abab": 3, "\u2581ab": 2}, character_coverage=1.0)
    expected = {"\u2581": 5, "a": 8, "b": 8, "ab": 16, "\u2581ab": 15}
    assert set(scores) == set(expected)
    for piece, value in expected.items():
        assert scores[piece] == pytest.approx(math.log(value / 52), abs=1e-12), piece
    # One "▁abab" ends its line (the trailing space): "bab", "abab", "▁abab" are followed by "▁" and by
    # the end of a line, so seeds too: bab 3x3, abab 3x4, ▁abab 3x5. The sum is 52 + 36 = 88.
    _, scores = _seeds({"\u2581abab": 2, "\u2581abab ": 1, "\u2581ab": 2}, character_coverage=1.0)
    expected.update({"bab": 9, "abab": 12, "\u2581abab": 15})
    assert set(scores) == set(expected)
    for piece, value in expected.items():
        assert scores[piece] == pytest.approx(math.log(value / 88), abs=1e-12), piece


# Digits beside punctuation and letters, the meta pieces' texts in the text, and a wikitext slice
# (which holds "<unk>" on most lines).
SYNTHETIC = [
    "x 1, a1 (1) 2, b2 (2) <unk> said 3.5 <s> y",
    "y 1, a1 (1) 3, c3 (3) the <unk> 's car </s> x",
    "z 10% 1) 2) <unk>s said x1 4.5",
] * 20


@pytest.mark.parametrize("corpus", ["synthetic", "wikitext"])
def test_alphabet_and_pieces_are_what_sentencepiece_allows(corpus):
    lines = SYNTHETIC if corpus == "synthetic" else nonempty_lines(shared_file("wikitext2-test.txt"))[:400]
    theirs = _sentencepiece_pieces(lines, 60 if corpus == "synthetic" else 2000, hard_vocab_limit=False)
    ours, seeds = _seeds(_word_counts(lines))
    # The same required characters: "<", ">", "/" occur only in "<unk>", "<s>", "</s>", which
    # SentencePiece does not learn from.
    assert set(ours.required) == {piece for piece in theirs if len(piece) == 1}
    # Every longer piece SentencePiece keeps is one of our candidates ("1,", "1)", "▁1," among them):
    # both forbid the same pieces, and seed the same substrings (those followed by two different
    # characters). Except where SentencePiece's suffix array ends, after the text's last word ("▁4.5"
    # in the synthetic text), which is a node there when it occurs twice, at the end of any line.
    last = "\u2581" + lines[-1].split()[-1]
    assert [piece for piece in theirs if len(piece) > 1 and piece not in seeds and not last.endswith(piece)] == []
    assert not any(unigram_corpus._BOUNDARY in piece or "<unk>" in piece for piece in seeds)


def test_digits_join_punctuation_but_not_letters():
    # SentencePiece's script table puts the ASCII digits in `Common`, with punctuation; letters are
    # `Latin` (unicode_script_map.h; IsValidSentencePiece refuses two scripts in one piece).
    # Each word also ends a line once (the trailing space), so that its substrings are followed by two
    # different characters, as seeds must be; "▁(1" gives "(1" a second follower.
    words = ["\u25811,", "\u2581a1", "\u2581(1)", "\u25811a", "\u2581(1"]
    _, seeds = _seeds({**{word: 4 for word in words}, **{word + " ": 1 for word in words}}, character_coverage=1.0)
    assert {"1,", "\u25811,", "(1", "1)", "(1)", "\u2581(1)"} <= set(seeds)
    assert not {"a1", "1a", "\u2581a1", "\u25811a"} & set(seeds)


def test_meta_piece_text_is_never_a_piece_even_across_scripts():
    # With split_by_script=False, "▁<unk>" was a valid (and frequent) piece: the trained vocabulary held
    # a second "<unk>" next to the meta piece. SentencePiece replaces the meta pieces' text by a boundary.
    counts = {"\u2581x<unk>": 50, "\u2581y<unk>": 40, "\u2581<unk>": 30, "\u2581<s>": 20, "\u2581cat": 10}
    theirs = _sentencepiece_pieces(
        [line for word, n in counts.items() for line in [word[1:]] * n],
        40,
        hard_vocab_limit=False,
        split_by_unicode_script=False,
        character_coverage=1.0,
    )
    pieces = [piece for piece, _ in learning.learn_unigram(counts, 40, split_by_script=False, character_coverage=1.0)]
    assert len(set(pieces)) == len(pieces)
    assert not any(meta in piece for piece in pieces for meta in learning.META_PIECES)
    assert {p for p in pieces if len(p) == 1} == {p for p in theirs if len(p) == 1}
    assert "<" not in "".join(pieces) and "<" not in "".join(theirs)


def test_ascii_digits_share_the_punctuation_class():
    codes = np.array([ord(c) for c in "1,a\u2581"], np.int64)
    classes = unigram_corpus._scripts(codes)
    assert classes[0] == classes[1] != classes[2] != classes[3]
