"""train_unigram: the EM step against brute force, SentencePiece compatibility, quality, the corpus contract."""

import functools
import io
import math
import warnings

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import nonempty_lines, shared_file
from tfsubword import UnigramLayer, train_unigram
from tfsubword.train import unigram as learning
from tfsubword.train.unigram_corpus import Corpus


def test_digamma_matches_known_values():
    euler = 0.5772156649015329
    got = learning._digamma(np.array([1.0, 0.5, 2.0, 10.0]))
    expected = [-euler, -euler - 2 * math.log(2), 1 - euler, sum(1 / k for k in range(1, 10)) - euler]
    assert np.allclose(got, expected, rtol=0, atol=1e-9)


def _segmentations(word, pieces):
    if not word:
        yield []
        return
    for length in range(1, len(word) + 1):
        if word[:length] in pieces:
            for rest in _segmentations(word[length:], pieces):
                yield [word[:length]] + rest


def test_em_step_equals_brute_force_expectation():
    counts = {"▁abab": 3, "▁ab": 2, "▁ba": 1}
    corpus = Corpus(list(counts), np.array(list(counts.values()), float), character_coverage=1.0)
    pieces = ["▁", "a", "b", "ab", "▁a", "ba", "▁ab"]
    scores = np.log(np.array([3.0, 5, 5, 4, 2, 1, 2]) / 22)
    corpus._piece_of_window = {}  # the lattice comes from these pieces only, matched below by hand
    model = learning._Model(corpus, pieces, scores)
    # Replace the seed-derived edges with every occurrence of every piece.
    starts, lengths, ids = [], [], []
    for w, word in enumerate(counts):
        for i in range(len(word)):
            for j, piece in enumerate(pieces):
                if word.startswith(piece, i):
                    starts.append(corpus.starts[w] + i)
                    lengths.append(len(piece))
                    ids.append(j)
    starts, lengths, ids = (np.array(x, np.int64) for x in (starts, lengths, ids))
    model.lattice._edges = (starts, lengths, ids)  # (start, length, piece), any order; one-character ones: the corpus's
    expected = np.zeros(len(pieces))
    score_of = dict(zip(pieces, scores))
    for word, count in counts.items():
        paths = list(_segmentations(word, set(pieces)))
        weights = np.array([math.exp(sum(score_of[p] for p in path)) for path in paths])
        for path, weight in zip(paths, weights / weights.sum()):
            for piece in path:
                expected[pieces.index(piece)] += count * weight
    model.em_step()
    kept = expected >= 0.5
    want = np.where(
        kept, learning._digamma(np.maximum(expected, 0.5)) - learning._digamma(expected[kept].sum()), -np.inf
    )
    assert np.array_equal(model.alive, kept)
    assert np.allclose(model.scores[kept], want[kept], rtol=0, atol=1e-9)


def test_pruning_reads_each_alive_piece_where_the_text_holds_it():
    """`_piece_at` reads the lattice's backward order; the answer is the alive piece equal to the text."""
    counts = {"▁abab": 3, "▁ab": 2, "▁ba": 1, "▁abba": 2, "▁bab": 2, "▁aab": 1}
    corpus = Corpus(list(counts), np.array(list(counts.values()), float), character_coverage=1.0)
    pieces, scores = corpus.seeds(4, 1000, split_by_script=True)
    model = learning._Model(corpus, pieces, scores)
    model.em_step()  # makes the lattice (and may drop pieces)
    dropped = pieces.index("ab")
    assert model.alive[dropped]
    model.alive[dropped] = False  # dropped after the lattice was made: its edges are still in it
    text = "".join(chr(c) if c >= 0 else "|" for c in corpus.chars)
    for length in range(1, 5):
        positions = [p for s, e in zip(corpus.starts, corpus.ends) for p in range(s, e - length + 1)]
        found, score = model._piece_at(np.array(positions), length)
        want = [pieces.index(text[p : p + length]) if text[p : p + length] in pieces else -1 for p in positions]
        want = [piece if piece >= 0 and model.alive[piece] else -1 for piece in want]
        assert found.tolist() == want, length
        for piece, value in zip(want, score.tolist()):
            expected = model.scores[piece] if piece >= 0 else (model._unknown_score() if length == 1 else -np.inf)
            assert value == expected
    assert dropped not in model._piece_at(np.array([corpus.starts[1] + 1]), 2)[0]


def test_learning_empties_the_counts_only_when_told():
    kept = {"▁abab": 3, "▁ab": 2, "▁ba": 2}
    learning.learn_unigram(kept, 8, character_coverage=1.0)
    assert kept == {"▁abab": 3, "▁ab": 2, "▁ba": 2}
    taken = dict(kept)
    assert learning.learn_unigram(taken, 8, character_coverage=1.0, take_counts=True)
    assert taken == {}


@functools.cache
def trained(vocab_size=4000):
    path = shared_file("wikitext2-test.txt")
    return train_unigram(files=[str(path)], vocab_size=vocab_size, normalization="identity", show_progress=False)


def test_returns_exactly_vocab_size_pieces_meta_first():
    vocabulary = trained()
    assert len(vocabulary) == 4000
    assert [p for p, _ in vocabulary[:3]] == ["<unk>", "<s>", "</s>"]
    pieces = [p for p, _ in vocabulary]
    assert len(set(pieces)) == len(pieces)
    scores = [s for _, s in vocabulary[3:]]
    assert scores == sorted(scores, reverse=True) and all(s < 0 for s in scores)
    assert all(len(p) <= 16 and "\u2581" not in p[1:] for p in pieces[3:])


def test_model_file_loads_in_sentencepiece_and_both_encode_the_same(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    path = tmp_path / "trained.model"
    lines = nonempty_lines(shared_file("botchan.txt"))
    # A list vocabulary has no character map: both forms agree only with the `identity` rules.
    vocabulary = train_unigram(lines, vocab_size=1500, output=str(path), normalization="identity", show_progress=False)
    reference = spm.SentencePieceProcessor(model_file=str(path))
    assert [reference.id_to_piece(i) for i in range(reference.get_piece_size())] == [p for p, _ in vocabulary]
    test_lines = nonempty_lines(shared_file("wikitext2-valid.txt")) + lines[:500]
    expected = reference.encode(test_lines)
    assert UnigramLayer(str(path))(test_lines).to_list() == expected
    assert UnigramLayer(vocabulary)(test_lines).to_list() == expected


def test_tokens_per_line_within_two_percent_of_sentencepiece():
    spm = pytest.importorskip("sentencepiece")
    lines = nonempty_lines(shared_file("wikitext2-test.txt"))
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        model_type="unigram",
        vocab_size=4000,
        normalization_rule_name="identity",
        minloglevel=2,
    )
    valid = nonempty_lines(shared_file("wikitext2-valid.txt"))
    theirs = sum(map(len, spm.SentencePieceProcessor(model_proto=model.getvalue()).encode(valid)))
    ours = sum(map(len, UnigramLayer(trained())(valid).to_list()))
    print(f"tokens per line: ours {ours / len(valid):.2f}, SentencePiece {theirs / len(valid):.2f}")
    assert abs(ours / theirs - 1) <= 0.02, (ours / len(valid), theirs / len(valid))


@pytest.mark.full
def test_corpus_forms_agree():
    lines = ["the cat sat on the mat", "the cat ate", "a mat is flat"] * 20
    from_list = train_unigram(lines, vocab_size=20, show_progress=False)
    from_dataset = train_unigram(tf.data.Dataset.from_tensor_slices(lines), vocab_size=20, show_progress=False)
    counts = {}
    for line in lines:
        words = ["\u2581" + word for word in line.split()]
        for word in words[:-1] + [words[-1] + " "]:  # a line's last word is marked with a space
            counts[word] = counts.get(word, 0) + 1
    from_counts = train_unigram(counts, vocab_size=20, show_progress=False)
    assert from_list == from_dataset == from_counts
    assert len(from_list) == 20


def test_too_small_a_corpus_warns_and_returns_what_there_is():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vocabulary = train_unigram(["ab ab ab"], vocab_size=500, show_progress=False)
    assert len(vocabulary) < 500 and any("yields only" in str(w.message) for w in caught)
    assert {p for p, _ in vocabulary} >= {"<unk>", "<s>", "</s>", "\u2581", "a", "b"}


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(vocab_size=3), "vocab_size"),
        (dict(vocab_size=100, character_coverage=0), "character_coverage"),
        (dict(vocab_size=100, shrinking_factor=1.0), "shrinking_factor"),
        (dict(vocab_size=100, max_token_length=0), "max_token_length"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        train_unigram(["some text"], show_progress=False, **arguments)


def test_fewer_pieces_than_characters_is_an_error_at_sentencepieces_bound():
    """Pruning keeps every covered character: a smaller `vocab_size` used to loop for ever. The bound is
    SentencePiece's: the characters within coverage plus the three meta pieces."""
    import sentencepiece

    lines = [" ".join(chr(0x4E00 + i % 40) + chr(0x4E00 + (i * 7) % 40) for i in range(j, j + 8)) for j in range(40)]
    # 40 ideographs and the space symbol: 41 characters to cover.
    with pytest.raises(ValueError, match=r"at least 44 for this corpus .* vocab_size=43"):
        train_unigram(lines, vocab_size=43, character_coverage=1.0, show_progress=False)
    assert len(train_unigram(lines, vocab_size=44, character_coverage=1.0, show_progress=False)) == 44

    def sentencepiece_trains(vocab_size):
        try:
            sentencepiece.SentencePieceTrainer.train(
                sentence_iterator=iter(lines),
                model_writer=io.BytesIO(),
                vocab_size=vocab_size,
                character_coverage=1.0,
                minloglevel=2,
            )
        except RuntimeError as error:
            return "smaller than required_chars" not in str(error)
        return True

    assert not sentencepiece_trains(43) and sentencepiece_trains(44)


def test_empty_corpus_is_an_error():
    with pytest.raises(ValueError, match="no words|empty"):
        train_unigram(["   ", ""], vocab_size=10, show_progress=False)


def test_cli_train_unigram(tmp_path):
    from tfsubword.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(["the cat sat on the mat", "the cat ate", "a mat is flat"] * 30), encoding="utf-8")
    output = tmp_path / "out.model"
    # 20: SentencePiece's most on this corpus ("Vocabulary size too high" above).
    assert main(["train", "unigram", "--vocab-size", "20", "--no-progress", "--output", str(output), str(corpus)]) == 0
    layer = UnigramLayer(str(output))
    assert layer.vocabulary_size() == 20
    lines = (tmp_path / "out.vocab").read_text(encoding="utf-8").splitlines()
    assert [line.split("\t")[0] for line in lines] == layer.get_vocabulary()
    assert main(["train", "unigram", "--vocab-size", "2", "--output", str(tmp_path / "x.model"), str(corpus)]) == 2
    assert not (tmp_path / "x.model").exists()


def test_segmentations_helper_is_complete():
    # The brute-force oracle itself: "abab" with {a, b, ab} has 4 segmentations (a|b or ab, twice).
    assert len(list(_segmentations("abab", {"a", "b", "ab"}))) == 4
    assert sorted(map(tuple, _segmentations("ab", {"a", "b", "ab"}))) == [("a", "b"), ("ab",)]
