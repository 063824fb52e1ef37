"""train_unigram against SentencePiece's trainer, piece by piece: seed scores, the alphabet, which pieces
may exist. Golden values come from SentencePiece (trained here) or from hand calculation."""

import io
import math

import numpy as np
import pytest

from tests.conftest import nonempty_lines, shared_file
from tfsubword.train import unigram as learning


def _word_counts(lines):
    """SentencePiece's words under `identity` normalization: split at spaces, each word after "▁"."""
    counts = {}
    for line in lines:
        for word in line.split(" "):
            if word:
                counts["\u2581" + word] = counts.get("\u2581" + word, 0) + 1
    return counts


def _sentencepiece_pieces(lines, vocab_size, **options):
    spm = pytest.importorskip("sentencepiece")
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, model_type="unigram", vocab_size=vocab_size,
        normalization_rule_name="identity", num_threads=1, minloglevel=2, **options,
    )
    processor = spm.SentencePieceProcessor(model_proto=model.getvalue())
    return [processor.id_to_piece(i) for i in range(3, processor.get_piece_size())]


def _seeds(word_counts, character_coverage=0.9995, split_by_script=True):
    words, counts = learning._training_words(word_counts)
    corpus = learning._Corpus(words, counts, character_coverage)
    pieces, scores = corpus.seeds(16, 1_000_000, split_by_script)
    return corpus, dict(zip(pieces, scores))


def test_seed_scores_are_frequency_times_length_normalized():
    # By hand: "▁abab" x3 and "▁ab" x2. Characters (their counts): ▁ 5, a 8, b 8. Substrings of two or
    # more characters, frequency x length: ▁a 5x2, ab 8x2, ba 3x2, ▁ab 5x3, aba 3x3, bab 3x3, ▁aba 3x4,
    # abab 3x4, ▁abab 3x5 (SentencePiece's seed score, "character coverage"). The sum is 21 + 104 = 125.
    _, scores = _seeds({"\u2581abab": 3, "\u2581ab": 2}, character_coverage=1.0)
    expected = {
        "\u2581": 5, "a": 8, "b": 8, "\u2581a": 10, "ab": 16, "ba": 6, "\u2581ab": 15, "aba": 9, "bab": 9,
        "\u2581aba": 12, "abab": 12, "\u2581abab": 15,
    }
    assert set(scores) == set(expected)
    for piece, value in expected.items():
        assert scores[piece] == pytest.approx(math.log(value / 125), abs=1e-12), piece


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
    # both forbid the same pieces. (Ours are a superset: SentencePiece seeds only the substrings followed
    # by two different characters.)
    assert [piece for piece in theirs if len(piece) > 1 and piece not in seeds] == []
    assert not any(learning._BOUNDARY in piece or "<unk>" in piece for piece in seeds)


def test_digits_join_punctuation_but_not_letters():
    # SentencePiece's script table puts the ASCII digits in `Common`, with punctuation; letters are
    # `Latin` (unicode_script_map.h; IsValidSentencePiece refuses two scripts in one piece).
    _, seeds = _seeds({"\u25811,": 5, "\u2581a1": 5, "\u2581(1)": 5, "\u25811a": 5}, character_coverage=1.0)
    assert {"1,", "\u25811,", "(1", "1)", "(1)", "\u2581(1)"} <= set(seeds)
    assert not {"a1", "1a", "\u2581a1", "\u25811a"} & set(seeds)


def test_meta_piece_text_is_never_a_piece_even_across_scripts():
    # With split_by_script=False, "▁<unk>" was a valid (and frequent) piece: the trained vocabulary held
    # a second "<unk>" next to the meta piece. SentencePiece replaces the meta pieces' text by a boundary.
    counts = {"\u2581x<unk>": 50, "\u2581y<unk>": 40, "\u2581<unk>": 30, "\u2581<s>": 20, "\u2581cat": 10}
    theirs = _sentencepiece_pieces(
        [line for word, n in counts.items() for line in [word[1:]] * n], 40, hard_vocab_limit=False,
        split_by_unicode_script=False, character_coverage=1.0,
    )
    pieces = [piece for piece, _ in learning.learn_unigram(counts, 40, split_by_script=False, character_coverage=1.0)]
    assert len(set(pieces)) == len(pieces)
    assert not any(meta in piece for piece in pieces for meta in learning.META_PIECES)
    assert {p for p in pieces if len(p) == 1} == {p for p in theirs if len(p) == 1}
    assert "<" not in "".join(pieces) and "<" not in "".join(theirs)


def test_ascii_digits_share_the_punctuation_class():
    codes = np.array([ord(c) for c in "1,a\u2581"], np.int64)
    classes = learning._scripts(codes)
    assert classes[0] == classes[1] != classes[2] != classes[3]
