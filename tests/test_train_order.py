"""One corpus, one vocabulary: each trainer's files are a function of the word counts alone, so the same
lines in any order, split into shards, or counted first (`tfsubword count`) give the same bytes.

The rule (docs/training.md, "Ties"): the trainers put the counted words in one order, most frequent
first, then by code point, and break ties by first occurrence in that order.
"""

import random
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import nonempty_lines, shared_file
from tfsubword import cli, train_bpe, train_unigram, train_wordpiece
from tfsubword.files import counts as counts_lib
from tfsubword.train import counting
from tfsubword.train.bpe import learn_bpe
from tfsubword.train.wordpiece import learn_wordpiece, within_alphabet

# Small vocabularies, so that ties decide many merges (quick tier), and larger ones (full suite).
QUICK = {"wordpiece": 400, "bpe": 400, "unigram": 200}
# The quick tier's Unigram counts without NFKC, whose rules take seconds to build once per process.
QUICK_OPTIONS = {"unigram": {"normalization": "identity"}}
FULL = {"wordpiece": 3000, "bpe": 3000, "unigram": 2000}
TRAINERS = {"wordpiece": train_wordpiece, "bpe": train_bpe, "unigram": train_unigram}


def corpus(english, other):
    """Real lines: English prose, then Bulgarian short lines (Cyrillic, punctuation, capitals)."""
    return (
        nonempty_lines(shared_file("botchan.txt"))[:english]
        + nonempty_lines(shared_file("realtext/fortunes-bg.txt"))[:other]
    )


def reorderings(lines):
    """The lines shuffled with a fixed seed, and reversed."""
    shuffled = list(lines)
    random.Random(61).shuffle(shuffled)
    return {"shuffled": shuffled, "reversed": lines[::-1]}


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def shards(folder, lines):
    """Three files of every third line, named in the order `c a b`."""
    paths = [write_lines(folder / f"shard-{index}.txt", lines[index::3]) for index in range(3)]
    return [paths[2], paths[0], paths[1]]


def written(folder):
    """The bytes of each file under `folder`."""
    return {path.name: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def output_in(folder, model):
    """Where `model`'s trainer writes into the new `folder`."""
    folder.mkdir()
    return str(folder / {"wordpiece": "vocab.txt", "bpe": "bpe", "unigram": "model.model"}[model])


def trained(folder, model, vocab_size, corpus=None, **arguments):
    """The bytes of the files `model`'s trainer writes from `corpus`, or `files` or `counts` in `arguments`."""
    TRAINERS[model](corpus, vocab_size, output=output_in(folder, model), show_progress=False, **arguments)
    return written(folder)


def trained_by_the_cli(folder, model, vocab_size, files=(), counts=()):
    """The bytes of the files `tfsubword train model` writes from text `files` or `counts` files."""
    output = output_in(folder, model)
    sources = [*files] + [argument for path in counts for argument in ("--counts", path)]
    assert cli.main(["train", model, "--vocab-size", str(vocab_size), "--no-progress", "-o", output, *sources]) == 0
    return written(folder)


def counted(path, model, files, options=None):
    """`tfsubword count model` of `files`, into `path`, with the pre-tokenizer `options`."""
    flags = [text for name, value in (options or {}).items() for text in (f"--{name}", value)]
    assert cli.main(["count", model, *flags, "--no-progress", "-o", str(path), *files]) == 0
    return str(path)


@pytest.mark.parametrize("model", ["wordpiece", "bpe", "unigram"])
def test_one_vocabulary_from_any_order_and_from_counts_of_shards(tmp_path, model):
    lines, size, options = corpus(150, 50), QUICK[model], QUICK_OPTIONS.get(model, {})
    expected = trained(tmp_path / "as-read", model, size, lines, **options)
    for name, reordered in reorderings(lines).items():
        assert trained(tmp_path / name, model, size, reordered, **options) == expected, name
    counts = counted(tmp_path / "counts.tsv", model, shards(tmp_path, lines), options)
    assert trained(tmp_path / "from-counts", model, size, counts=counts, **options) == expected


@pytest.mark.full
@pytest.mark.parametrize("model", ["wordpiece", "bpe", "unigram"])
def test_one_vocabulary_from_files_in_any_order_shards_and_counts(tmp_path, model):
    """As a user runs it: `tfsubword train` of the files in three orders, of shards, of counts files."""
    lines, size = corpus(3000, 1000), FULL[model]
    expected = trained_by_the_cli(tmp_path / "as-read", model, size, [write_lines(tmp_path / "corpus.txt", lines)])
    assert len(expected) == (1 if model == "wordpiece" else 2)  # BPE: merges too; Unigram: the .vocab too
    for name, reordered in reorderings(lines).items():
        path = write_lines(tmp_path / f"{name}.txt", reordered)
        assert trained_by_the_cli(tmp_path / name, model, size, [path]) == expected, name
    parts = shards(tmp_path, lines)
    assert trained_by_the_cli(tmp_path / "shards", model, size, parts) == expected
    # The counts of all shards in one file, and a counts file of each shard (summed when read).
    whole = counted(tmp_path / "counts.tsv", model, parts)
    assert trained_by_the_cli(tmp_path / "counts", model, size, counts=[whole]) == expected
    each = [counted(tmp_path / f"counts-{index}.tsv", model, [part]) for index, part in enumerate(parts)]
    assert trained_by_the_cli(tmp_path / "counts-of-each", model, size, counts=each) == expected


def test_the_corpus_has_ties_that_the_word_order_decides():
    """Without the trainers' order, the seeds' first-occurrence rule learns another vocabulary from the
    lines reversed: the tests above could fail."""
    lines = corpus(150, 50)
    words = counting.pre_tokenizer_of(counts_lib.pre_tokenizer("wordpiece"))
    forward = counting.count_words(lines, pretokenizer=words, show_progress=False)
    backward = counting.count_words(lines[::-1], pretokenizer=words, show_progress=False)
    assert forward == backward and list(forward) != list(backward)
    assert learn_wordpiece(forward, 400) != learn_wordpiece(backward, 400)


word_counts = st.dictionaries(st.text(alphabet="abcab", min_size=1, max_size=8), st.integers(1, 4), min_size=1)


@given(counts=word_counts, seed=st.integers(0, 2**32 - 1))
def test_word_counts_in_any_order_give_the_vocabulary_of_the_trainers_order(counts, seed):
    """A mapping of word counts, in any order, learns as its words most frequent first, then by code point."""
    items = list(counts.items())
    random.Random(seed).shuffle(items)
    shuffled, ordered = dict(items), counts_lib.ordered(counts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # every merge, until none is left
        for algorithm in ("score", "likelihood"):
            expected = learn_wordpiece(ordered, 10_000, special_tokens=(), algorithm=algorithm)
            got = train_wordpiece(shuffled, 10_000, special_tokens=(), algorithm=algorithm, show_progress=False)
            assert got == expected
        expected = learn_bpe(ordered, 10_000, special_tokens=())
        assert train_bpe(shuffled, 10_000, special_tokens=(), show_progress=False) == expected
        # With `limit_alphabet`, words made equal add up, then go in the trainers' order.
        expected = learn_wordpiece(counts_lib.ordered(within_alphabet(counts, 2)), 10_000, special_tokens=())
        assert train_wordpiece(shuffled, 10_000, special_tokens=(), limit_alphabet=2, show_progress=False) == expected
