"""What a Keras user expects of every layer: numpy ids, special tokens and their ids, a settable
padding token, files on any TensorFlow file system; and a command line that prints only its own output."""

import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.test_layer_contract import BPE_VOCABULARY, UNIGRAM_PAIRS, bpe, unigram, wordpiece
from tests.test_unigram import model_bytes
from tfsubword import UnigramLayer, WordPieceLayer, train_bpe, train_unigram, train_wordpiece
from tfsubword.files import vocab as vocab_lib


@pytest.mark.parametrize("make", [wordpiece, unigram, bpe], ids=lambda make: make.__name__)
def test_id_to_token_takes_numpy_integers(make):
    layer = make()
    ids = layer(["abc the fox"])
    first = ids.flat_values.numpy()[0]
    assert isinstance(first, np.integer)
    assert layer.id_to_token(first) == layer.get_vocabulary()[int(first)]
    assert layer.id_to_token(np.int64(1)) == layer.get_vocabulary()[1]
    with pytest.raises(ValueError, match="`id` must be an int"):
        layer.id_to_token(np.float32(1))
    with pytest.raises(ValueError, match="`id` must be an int"):
        layer.id_to_token(len(layer.get_vocabulary()))


def test_special_tokens_and_their_ids():
    layer = wordpiece()  # [PAD] [UNK] [CLS] [SEP] first
    assert layer.special_tokens == ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    assert layer.special_token_ids == [0, 1, 2, 3]
    assert (layer.unknown_token_id, layer.pad_token_id) == (1, 0)
    custom = wordpiece(special_tokens=["[SEP]"], unknown_token="[CLS]", pad_token="[SEP]")
    assert custom.special_tokens == ["[CLS]", "[SEP]"] and custom.pad_token_id == 3
    assert wordpiece(pad_token="[SEP]", sequence_length=3)(["the"]).numpy().tolist() == [[4, 3, 3]]
    with pytest.raises(ValueError, match="special token 'nope'"):
        wordpiece(special_tokens=["nope"])

    pieces = unigram()  # <unk> unknown, <s> </s> <pad> control
    assert pieces.special_tokens == ["<unk>", "<s>", "</s>", "<pad>"] and pieces.special_token_ids == [0, 1, 2, 3]
    assert (pieces.unknown_token_id, pieces.pad_token_id) == (0, 3)
    assert unigram(pad_token="</s>", sequence_length=4)(["a"]).numpy().tolist() == [[5, 6, 2, 2]]
    shared = UnigramLayer(model_bytes("shared"))
    assert shared.special_tokens == ["<unk>", "<s>", "</s>"] and shared.pad_token_id == 0

    merges = bpe()
    assert merges.special_tokens == ["<|endoftext|>"] and merges.special_token_ids == [0]
    assert merges.unknown_token_id is None and merges.pad_token_id == 0
    assert bpe(unknown_token="c").unknown_token_id == BPE_VOCABULARY.index("c")


def test_files_on_a_tensorflow_file_system():
    """Vocabularies read from and trainers written to `ram://`, one of TensorFlow's file systems."""
    corpus = ["the quick brown fox jumps over the lazy dog"] * 20 + ["a fox, a dog and a cat"] * 10
    tf.io.gfile.makedirs("ram://tfsubword")
    with tf.io.gfile.GFile("ram://tfsubword/corpus.txt", "w") as file:
        file.write("\n".join(corpus))
    vocabulary = train_wordpiece(
        files=["ram://tfsubword/corpus.txt"], vocab_size=40, output="ram://tfsubword/vocab.txt", show_progress=False
    )
    assert vocab_lib.read_vocabulary("ram://tfsubword/vocab.txt") == vocabulary
    layer = WordPieceLayer("ram://tfsubword/vocab.txt")
    assert layer.get_vocabulary() == vocabulary
    # The identity rules: the point is the file system, not seconds deriving NFKC's rules.
    pieces = train_unigram(
        corpus, vocab_size=40, normalization="identity", output="ram://tfsubword/corpus.model", show_progress=False
    )
    assert UnigramLayer("ram://tfsubword/corpus.model")(corpus).to_list() == UnigramLayer(pieces)(corpus).to_list()
    tokens, _ = train_bpe(corpus, vocab_size=60, output="ram://tfsubword/bpe", show_progress=False)
    assert vocab_lib.as_token_list("ram://tfsubword/bpe/vocab.json") == tokens
    with pytest.raises(ValueError, match="not a file"):
        WordPieceLayer("ram://tfsubword/missing.txt")


def test_unigram_pairs_are_what_the_layer_reports():
    layer = unigram()
    assert [(piece, score) for piece, score in zip(layer.get_vocabulary(), layer.get_scores())] == UNIGRAM_PAIRS


def run_command_line(*arguments):
    """`python -m tfsubword.cli` with `arguments` in a fresh process (where TensorFlow's start-up lines
    would show)."""
    command = [sys.executable, "-m", "tfsubword.cli", *map(str, arguments)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600)


@pytest.mark.full
def test_command_line_prints_only_its_own_output(tmp_path):
    (tmp_path / "tokens.txt").write_text("[PAD]\n[UNK]\nthe\nfox\n", encoding="utf-8")
    tokenized = run_command_line("tokenize", "--vocab", tmp_path / "tokens.txt", "The fox")
    assert tokenized.returncode == 0 and tokenized.stderr == ""
    assert tokenized.stdout.split() == ["the", "fox"]


@pytest.mark.full
def test_training_on_the_command_line_prints_only_its_own_line(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the quick brown fox\njumps over the lazy dog\n" * 5, encoding="utf-8")
    vocab = tmp_path / "vocab.txt"
    trained = run_command_line("train", "wordpiece", "--vocab-size", 40, "--no-progress", "--output", vocab, corpus)
    assert trained.returncode == 0, trained.stderr
    assert trained.stderr.strip().splitlines() == [f"wrote 40 tokens to {vocab}"]
