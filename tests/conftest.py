"""Shared test helpers: the two tiers, the reference data in ../shared, Google's BERT tokenizer as the oracle.

Tiers: `pytest` runs the quick tier (unit tests, golden ids, a parity sample per layer, one serving check
per kind of layer, hypothesis at the "quick" profile's size). `pytest --full` runs everything: also the tests marked
`full` (whole-corpus parity, every serving and example test, long runs) and hypothesis at the "full"
profile's size. `pytest --beam tests/test_beam.py` runs the Apache Beam tests, in an environment with the
`beam` extra (apache-beam and the test extra's sentencepiece need different protobufs); without
`--beam` that module is not collected.
"""

import contextlib
import os
import pathlib

import hypothesis
import pytest
import tensorflow as tf

hypothesis.settings.register_profile(
    "quick", max_examples=5, deadline=None, suppress_health_check=list(hypothesis.HealthCheck)
)
hypothesis.settings.register_profile(
    "full", max_examples=1000, deadline=None, suppress_health_check=list(hypothesis.HealthCheck)
)


def pytest_addoption(parser):
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="run the full suite: whole-corpus parity, every serving and example test, hypothesis at full size",
    )
    parser.addoption(
        "--beam",
        action="store_true",
        default=False,
        help="also collect tests/test_beam.py (needs the beam extra, in an environment of its own)",
    )


def pytest_ignore_collect(collection_path, config):
    """Without `--beam`, the Apache Beam tests (`tfsubword/beam.py` itself is ignored in pyproject.toml)."""
    if collection_path.name == "test_beam.py" and not config.getoption("--beam"):
        return True
    return None


# Whether this run is the full suite (`--full`), for `parity_call`.
_FULL = {"on": False}
STRINGS = [tf.TensorSpec([None], tf.string)]


def pytest_configure(config):
    config.addinivalue_line("markers", "full: part of the full suite only (run with --full)")
    if not config.getoption("--full"):
        # In the quick tier, mostly small calls and tracing, two workers share the cores: one thread
        # each for TensorFlow's ops and for `tokenizers` (idle threads spin; the tier ran 222 s with
        # TensorFlow's defaults, 198 s so). Set before TensorFlow starts (it has not: no op ran yet)
        # and before the workers start, which inherit it, as do the processes the tests start.
        for variable in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "RAYON_NUM_THREADS"):
            os.environ.setdefault(variable, "1")
    hypothesis.settings.load_profile("full" if config.getoption("--full") else "quick")
    _FULL["on"] = config.getoption("--full")


def traced_parity():
    """Whether `parity_call` traces (the full suite) or calls eagerly (the quick tier)."""
    return _FULL["on"]


def parity_call(function, signature=STRINGS):
    """How the parity tests call a layer or one of its methods: in a `tf.function`, as an exported
    model runs it, in the full suite; eagerly in the quick tier, where tracing a large layer costs
    seconds and a few calls op by op a fraction of that. Both run the same ops; every layer is also
    traced in the quick tier by its contract test (`tf.data`, saving, serving)."""
    return tf.function(function, input_signature=signature) if traced_parity() else function


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Tests of one `family` (a parameter) run on one worker (`--dist loadgroup`): the layers a module
    caches per family are built and traced once. Without `--full`, the tests marked `full` are
    deselected (reported as such, not as skipped)."""
    for item in items:
        family = getattr(item, "callspec", None) and item.callspec.params.get("family")
        if isinstance(family, str):
            item.add_marker(pytest.mark.xdist_group(f"{item.module.__name__}:{family}"))
    if config.getoption("--full"):
        return
    deselected = [item for item in items if item.get_closest_marker("full")]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker("full")]


REPOSITORY = pathlib.Path(__file__).resolve().parents[1]


def _find_shared_data():
    """`$TFSUBWORD_SHARED_DATA`, else `shared/data` beside the repository or beside one of its parents."""
    if "TFSUBWORD_SHARED_DATA" in os.environ:
        return pathlib.Path(os.environ["TFSUBWORD_SHARED_DATA"])
    for directory in REPOSITORY.parents:
        candidate = directory / "shared" / "data"
        if candidate.is_dir():
            return candidate
    return REPOSITORY.parent / "shared" / "data"


SHARED_DATA = _find_shared_data()
BERT_VOCAB = SHARED_DATA / "bert-base-uncased-vocab.txt"


def shared_file(name):
    """The path of a file in ../shared/data, skipping the test cleanly when it is absent."""
    path = SHARED_DATA / name
    if not path.is_file():
        pytest.skip(f"reference data not available: {path}")
    return path


def shared_texts():
    """Every text file of ../shared/data (the corpora, not the vocabulary)."""
    if not SHARED_DATA.is_dir():
        return []
    return sorted(p for p in SHARED_DATA.glob("*.txt") if p != BERT_VOCAB)


def real_texts():
    """The real, unprocessed text of ../shared/data/realtext: short lines and prose in several scripts."""
    return sorted((SHARED_DATA / "realtext").glob("*.txt")) if SHARED_DATA.is_dir() else []


def nonempty_lines(path):
    with open(path, encoding="utf-8") as file:
        return [line.rstrip("\n") for line in file if line.strip()]


def bert_reference():
    """Google's original `bert.tokenization` module, ready to use."""
    tokenization = pytest.importorskip("bert.tokenization")
    tokenization.FLAGS.mark_as_parsed()
    return tokenization


class BertReference:
    """BERT's `BasicTokenizer` + `WordpieceTokenizer`, the oracle for `WordPieceLayer`."""

    def __init__(self, tokens, lowercase=True, max_chars_per_word=100):
        tokenization = bert_reference()
        self.vocab = {token: index for index, token in enumerate(tokens)}
        self.basic = tokenization.BasicTokenizer(do_lower_case=lowercase)
        self.wordpiece = tokenization.WordpieceTokenizer(self.vocab, max_input_chars_per_word=max_chars_per_word)
        self._ids = {}  # tests compare several routes of the layer with one reference

    def ids(self, text):
        if text not in self._ids:
            words = self.basic.tokenize(text)
            self._ids[text] = [self.vocab[piece] for word in words for piece in self.wordpiece.tokenize(word)]
        return self._ids[text]


# WordPiece takes its longest matches from one of two routes chosen by the size of the text
# (`tfsubword.segment.wordpiece`); parity tests check each, forced by the threshold between them.
WORDPIECE_ROUTES = {"chosen by size": None, "substring lookup": 2**31 - 1, "trie walk": -1}
# And `WordPieceLayer` pieces a small batch as whole texts, a large one by its distinct coarse words
# (`tfsubword.layers.wordpiece`).
WORDPIECE_BATCH_ROUTES = {"chosen by size": None, "whole texts": 2**62, "distinct words": -1}


@contextlib.contextmanager
def wordpiece_route(route, batch_route="chosen by size"):
    """Layers traced inside take the WordPiece route named `route` (a key of `WORDPIECE_ROUTES`) and
    the batch route `batch_route` (of `WORDPIECE_BATCH_ROUTES`)."""
    from tfsubword.layers import wordpiece as layer_module
    from tfsubword.segment import wordpiece

    thresholds = wordpiece._SUBSTRINGS_AT_MOST, layer_module._WHOLE_TEXTS_AT_MOST
    if WORDPIECE_ROUTES[route] is not None:
        wordpiece._SUBSTRINGS_AT_MOST = WORDPIECE_ROUTES[route]
    if WORDPIECE_BATCH_ROUTES[batch_route] is not None:
        layer_module._WHOLE_TEXTS_AT_MOST = WORDPIECE_BATCH_ROUTES[batch_route]
    try:
        yield
    finally:
        wordpiece._SUBSTRINGS_AT_MOST, layer_module._WHOLE_TEXTS_AT_MOST = thresholds
