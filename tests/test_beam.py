"""Counting with Apache Beam (`tfsubword.beam`, the DirectRunner) equals counting on one machine:
the same counts file, the same vocabularies learned from it, and from the lines in any order. Run with
`pytest --beam tests/test_beam.py` where the `beam` extra is installed (see tests/conftest.py)."""

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tests import test_train_order as one_vocabulary
from tests.conftest import SHARED_DATA, nonempty_lines, real_texts
from tfsubword import beam as tfsubword_beam
from tfsubword import cli, train_bpe, train_unigram, train_wordpiece
from tfsubword.files import counts as counts_lib
from tfsubword.train import counting

RUNNER = ["--runner", "DirectRunner"]
# Tabs, backslashes, line breaks inside and around lines, invalid UTF-8, empty and blank lines.
AWKWARD = ["tab\there", "back\\slash \\n", "cr\rinside", "  ", "", "Ünïcödé ДОМ 東京タワー", "a\x00b"]
TRAINERS = {
    "wordpiece": (train_wordpiece, {"vocab_size": 2000}),
    "unigram": (train_unigram, {"vocab_size": 1000}),
    "bpe": (train_bpe, {"vocab_size": 2000}),
}


def sample_lines():
    paths = [SHARED_DATA / "botchan.txt", *real_texts()]
    lines = [line for path in paths if path.is_file() for line in nonempty_lines(path)[:300]]
    return lines or ["The quick brown fox jumps over the lazy dog.", "Le renard brun saute, le chien dort."] * 50


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """Three files of shared text (generated text without `../shared`), one ending without a line break."""
    folder = tmp_path_factory.mktemp("corpus")
    lines = sample_lines() + AWKWARD
    for index in range(3):
        part = [line.encode("utf-8") for line in lines[index::3]] + [b"invalid \xff\xfe bytes", b"crlf\r"]
        (folder / f"part-{index}.txt").write_bytes(b"\n".join(part) + (b"\n" if index else b""))
    return str(folder / "part-*.txt")


@pytest.mark.parametrize(
    "model, options",
    [("wordpiece", {}), ("wordpiece", {"lowercase": False, "split_on_cjk": False}), ("unigram", {}), ("bpe", {})],
)
def test_beam_counts_equal_local_counts_and_give_the_same_vocabulary(tmp_path, shards, model, options):
    beam_file, local_file = tmp_path / "beam.tsv", tmp_path / "local.tsv"
    with pytest.warns(UserWarning, match="not valid UTF-8"):
        counting.count_files([shards], str(local_file), model, options)
    tfsubword_beam.count_files([shards], str(beam_file), model, options, RUNNER)
    spec, counted = counts_lib.read_counts(beam_file)
    assert spec == counts_lib.pre_tokenizer(model, **options)
    assert (spec, list(counted.items())) == (lambda read: (read[0], list(read[1].items())))(
        counts_lib.read_counts(local_file)
    )
    assert len(counted) > 100
    train, train_options = TRAINERS[model]
    if model == "wordpiece":
        train_options = {**train_options, **options}
    from_beam = train(counts=beam_file, show_progress=False, **train_options)
    assert from_beam == train(counts=local_file, show_progress=False, **train_options)


@pytest.mark.parametrize("model", ["wordpiece", "bpe", "unigram"])
def test_beam_counts_of_shards_give_the_vocabulary_of_the_lines_in_any_order(tmp_path, model):
    """One corpus, one vocabulary (tests/test_train_order.py), the shards counted by Beam."""
    lines = one_vocabulary.corpus(150, 50)
    size, options = one_vocabulary.QUICK[model], one_vocabulary.QUICK_OPTIONS.get(model, {})
    flags = [text for name, value in options.items() for text in (f"--{name}", value)]
    counts = str(tmp_path / "counts.tsv")
    command = ["count", model, *flags, "--runner", "DirectRunner", "--direct_num_workers=1", "-o", counts]
    assert cli.main([*command, *one_vocabulary.shards(tmp_path, lines)]) == 0
    trained = one_vocabulary.trained
    expected = trained(tmp_path / "from-beam", model, size, counts=counts, **options)
    assert trained(tmp_path / "as-read", model, size, lines, **options) == expected
    for name, reordered in one_vocabulary.reorderings(lines).items():
        assert trained(tmp_path / name, model, size, reordered, **options) == expected, name


def test_count_words_on_a_collection_of_str_lines():
    lines = ["The fox, the dog.", "the FOX", "Ünïcödé"] * 5
    expected = counting.count_words(
        lines, pretokenizer=counting.pre_tokenizer_of(counts_lib.pre_tokenizer("wordpiece"))
    )
    with beam.Pipeline(options=beam.options.pipeline_options.PipelineOptions(RUNNER)) as pipeline:
        counted = pipeline | beam.Create(lines) | tfsubword_beam.CountWords("wordpiece", batch_lines=4)
        assert_that(counted, equal_to(list(expected.items())))
    assert expected["the"] == 15 and expected["unicode"] == 5


def test_count_words_refuses_bad_options_and_bad_elements():
    with pytest.raises(ValueError, match="`normalization` is no option of the bpe"):
        tfsubword_beam.CountWords("bpe", normalization="nfkc")
    with pytest.raises(ValueError, match="`batch_lines` must be an int of at least 1"):
        tfsubword_beam.CountWords("bpe", batch_lines=0)
    with pytest.raises(Exception, match="lines of str or bytes. Received int"):
        with beam.Pipeline(options=beam.options.pipeline_options.PipelineOptions(RUNNER)) as pipeline:
            _ = pipeline | beam.Create([1, 2]) | tfsubword_beam.CountWords("bpe")


def test_the_cli_counts_with_a_runner(tmp_path, shards, capsys):
    output = tmp_path / "counts.tsv"
    assert (
        cli.main(
            [
                "count",
                "unigram",
                "--normalization",
                "identity",
                "--runner",
                "DirectRunner",
                "--direct_num_workers=1",
                "-o",
                str(output),
                shards,
            ]
        )
        == 0
    )
    assert "wrote the counts to" in capsys.readouterr().err
    spec, counted = counts_lib.read_counts(output)
    assert spec == counts_lib.pre_tokenizer("unigram", normalization="identity")
    assert counted["▁tab\there "] == 1
    missing = str(tmp_path / "nothing-*.txt")
    assert cli.main(["count", "bpe", "--runner", "DirectRunner", "-o", str(output), missing]) == 2
    assert "nothing-" in capsys.readouterr().err
