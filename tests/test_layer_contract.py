"""Every layer keeps the same contract (`tests/contract.py`): config round trip of every argument,
direct call == `ds.map` == `ds.batch().map`, `.keras` saving, and serving from plain TensorFlow."""

import functools

import pytest
import tensorflow as tf

from tests import contract
from tests.test_unigram import model_bytes
from tests.test_wordpiece import VOCAB
from tfsubword import BertPreprocessor, BPELayer, SegmentPacker, UnigramLayer, WordPieceLayer

# On one test worker: the layers built here are shared (`built`).
pytestmark = pytest.mark.xdist_group("test_layer_contract")

TEXTS = ["The quick brown fox.", "unaffable caf\u00e9 \u4e2d", "", "QUICKLY jumped, fox!", "\xff bad", "a"]

BPE_VOCABULARY = ["<|endoftext|>", "a", "b", "c", "\u0120", "ab", "\u0120ab", "abc", "\u0120c"]
BPE_MERGES = [("a", "b"), ("\u0120", "ab"), ("ab", "c"), ("\u0120", "c")]
UNIGRAM_PAIRS = [("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0), ("<pad>", 0.0), ("\u2581the", -1.0), ("\u2581", -2.0)]
UNIGRAM_PAIRS += [(c, -3.0) for c in "abcdefghijklmnopqrstuvwxyz.,!TQU"]


def wordpiece(**arguments):
    return WordPieceLayer(VOCAB, **arguments)


def unigram(**arguments):
    return UnigramLayer(UNIGRAM_PAIRS, **arguments)


def bpe(**arguments):
    vocabulary, merges = BPE_VOCABULARY, BPE_MERGES
    if arguments.get("continuing_subword_prefix"):  # merges of continuation symbols
        vocabulary, merges = ["<|endoftext|>", "a", "##b", "ab"], [("a", "##b")]
    if arguments.get("byte_fallback"):  # characters, and a token for every byte
        vocabulary = vocabulary + [f"<0x{byte:02X}>" for byte in range(256)]
        arguments = {"byte_level": False, **arguments}
    return BPELayer(vocabulary, merges, **arguments)


def bert(**arguments):
    vocabulary = {} if "tokenizer" in arguments else {"vocabulary": VOCAB}
    return BertPreprocessor(**vocabulary, **{"sequence_length": 12, **arguments})


CHANGED = {
    WordPieceLayer: (
        wordpiece,
        {
            "lowercase": False,
            "strip_accents": True,
            "split_on_cjk": False,
            "final_sigma": False,
            "max_chars_per_word": 7,
            "unknown_token": "[SEP]",
            "suffix_indicator": "@@",
            "special_tokens": ("[UNK]", "[SEP]"),
            "vocab_size": 300,
            "dropout": 0.1,
            "seed": 3,
            "jit_compile": True,
            "sequence_length": 9,
            "pad_token": "[SEP]",
            "dtype": "int64",
            "name": "pieces",
        },
    ),
    UnigramLayer: (
        unigram,
        {
            "normalization": "nmt_nfkc",
            "add_dummy_prefix": False,
            "remove_extra_whitespaces": False,
            "escape_whitespaces": False,
            "unknown_token": "<s>",
            "control_tokens": ("</s>",),
            "vocab_size": 300,
            "alpha": 0.3,
            "nbest_size": 4,
            "seed": 11,
            "sequence_length": 9,
            "pad_token": "</s>",
            "dtype": "string",
            "name": "pieces",
        },
    ),
    BPELayer: (
        bpe,
        {
            "byte_level": False,
            "pattern": "llama3",
            "ignore_merges": True,
            "byte_fallback": True,
            "continuing_subword_prefix": "##",
            "end_of_word_suffix": "</w>",
            "add_prefix_space": True,
            "unknown_token": "c",
            "special_tokens": ("a",),
            "dropout": 0.2,
            "seed": 7,
            "vocab_size": 300,
            "sequence_length": 9,
            "pad_token": "b",
            "dtype": "int16",
            "name": "pieces",
        },
    ),
    BertPreprocessor: (
        bert,
        {
            "tokenizer": WordPieceLayer(VOCAB, lowercase=False, max_chars_per_word=9, name="cased"),
            "sequence_length": 7,
            "truncate": "waterfall",
            "cls_token": "[SEP]",
            "sep_token": "[CLS]",
            "pad_token": "[UNK]",
            "name": "inputs",
        },
    ),
}


@pytest.mark.parametrize("layer_class", list(CHANGED), ids=lambda c: c.__name__)
def test_config_round_trips_every_argument(layer_class):
    make, changed = CHANGED[layer_class]
    contract.check_config(layer_class, make, changed)


def unigram_model_file(**arguments):
    return UnigramLayer(model_bytes("shared"), **arguments)


@functools.cache
def built(make, sequence_length):
    """One layer per maker and length for this module's tests: each traces its encoder once
    (`ds.map`, export), which takes seconds."""
    if make is bert:  # its tokenizer is the ragged WordPiece layer's
        return bert(tokenizer=built(wordpiece, None))
    return make(sequence_length=sequence_length)


@pytest.mark.parametrize(
    "make, sequence_length",
    [
        pytest.param(wordpiece, None, marks=pytest.mark.full),  # ragged: BPE's in the quick tier
        (wordpiece, 5),
        (bpe, None),
        (bpe, 5),
        pytest.param(unigram_model_file, None, marks=pytest.mark.full),
        pytest.param(unigram_model_file, 5, marks=pytest.mark.full),
        pytest.param(unigram, None, marks=pytest.mark.full),
        pytest.param(unigram, 5, marks=pytest.mark.full),  # traced and served in the quick tier below
    ],
    ids=lambda value: getattr(value, "__name__", str(value)),
)
def test_calls_and_keras_saving_agree(make, sequence_length, tmp_path):
    layer = built(make, sequence_length)
    contract.check_calls_agree(layer, TEXTS)
    contract.check_keras_saving(layer, TEXTS, tmp_path)


@pytest.mark.parametrize(
    "inputs",
    [pytest.param(inputs, marks=pytest.mark.full) for inputs in ((TEXTS, TEXTS[::-1]), TEXTS)],
    ids=["pair", "single"],
)
def test_bert_preprocessor_calls_and_saving_agree(inputs, tmp_path):
    layer = built(bert, None)
    contract.check_calls_agree(layer, inputs)
    contract.check_keras_saving(layer, inputs, tmp_path)


def test_segment_packer_calls_agree():
    packer = SegmentPacker(6, start_value=1, end_value=2)
    direct = packer((tf.ragged.constant([[5, 6, 7], [], [8]]), tf.ragged.constant([[9], [10, 11], []])))
    dataset = tf.data.Dataset.from_tensor_slices(([[5, 6, 7], [0, 0, 0], [8, 0, 0]], [[9, 0], [10, 11], [0, 0]]))
    lengths = tf.data.Dataset.from_tensor_slices(([3, 0, 1], [1, 2, 0]))
    rows = tf.data.Dataset.zip(dataset, lengths).map(
        lambda ids, n: packer(
            (
                tf.RaggedTensor.from_tensor(ids[0][None], n[0][None]),
                tf.RaggedTensor.from_tensor(ids[1][None], n[1][None]),
            )
        )
    )
    single = {key: [row[key][0].numpy().tolist() for row in rows] for key in direct}
    assert single == contract.as_lists(direct)
    assert SegmentPacker.from_config(packer.get_config()).get_config() == packer.get_config()


def test_every_kind_of_layer_serves_from_plain_tensorflow(tmp_path):
    """Each layer (dense: with a `sequence_length`) exported with `model.export`, served from one process
    that imports only TensorFlow."""
    layers = [built(wordpiece, 5), built(unigram, 5), built(bpe, 5), built(bert, None)]
    contract.check_serving_each(layers, TEXTS, tmp_path)
