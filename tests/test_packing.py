"""SegmentPacker: hand-worked rows, and the truncation rules against tensorflow-text's trimmers."""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import strategies as st

from tfsubword import SegmentPacker

CLS, SEP, PAD = 101, 102, 0


def pack(segments, length, truncate, **options):
    packer = SegmentPacker(length, start_value=CLS, end_value=SEP, truncate=truncate, **options)
    return packer(tuple(tf.ragged.constant(s, dtype=tf.int32) for s in segments))


@pytest.mark.parametrize(
    "truncate, expected",
    [
        # Budget 10 - 3 specials = 7 for lengths 6 and 4.
        ("round_robin", [CLS, 1, 2, 3, 4, SEP, 11, 12, 13, SEP]),  # 4 and 3: alternate, first segment first
        ("waterfall", [CLS, 1, 2, 3, 4, 5, 6, SEP, 11, SEP]),  # the first whole (6), then what is left (1)
        ("longest_first", [CLS, 1, 2, 3, 4, SEP, 11, 12, 13, SEP]),  # 7 // 2 = 3 to the shorter, 4 to the longer
    ],
)
def test_truncation_of_a_pair(truncate, expected):
    outputs = pack([[[1, 2, 3, 4, 5, 6]], [[11, 12, 13, 14]]], 10, truncate)
    assert outputs["token_ids"].numpy().tolist() == [expected]


def test_segment_ids_padding_and_mask():
    outputs = pack([[[1, 2], [1]], [[11], [11, 12, 13]]], 9, "round_robin")
    assert outputs["token_ids"].numpy().tolist() == [
        [CLS, 1, 2, SEP, 11, SEP, PAD, PAD, PAD],
        [CLS, 1, SEP, 11, 12, 13, SEP, PAD, PAD],
    ]
    assert outputs["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1, 1, 0, 0]]
    assert outputs["padding_mask"].numpy().tolist() == [[True] * 6 + [False] * 3, [True] * 7 + [False] * 2]


def test_single_segment_and_single_example():
    packer = SegmentPacker(5, start_value=CLS, end_value=SEP, pad_value=7)
    assert packer(tf.ragged.constant([[1, 2, 3, 4, 5], [1]]))["token_ids"].numpy().tolist() == [
        [CLS, 1, 2, 3, SEP],
        [CLS, 1, SEP, 7, 7],
    ]
    assert packer(tf.constant([1, 2]))["token_ids"].numpy().tolist() == [CLS, 1, 2, SEP, 7]


def test_separator_differs_from_end():
    # RoBERTa-style: <s> a </s></s> b </s>
    packer = SegmentPacker(8, start_value=0, separator_value=[2, 2], end_value=2, pad_value=1)
    outputs = packer((tf.ragged.constant([[5, 6]]), tf.ragged.constant([[7]])))
    assert outputs["token_ids"].numpy().tolist() == [[0, 5, 6, 2, 2, 7, 2, 1]]
    assert outputs["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 0, 1, 1, 0]]


def test_bad_arguments():
    with pytest.raises(ValueError, match="truncate"):
        SegmentPacker(8, truncate="middle")
    with pytest.raises(ValueError, match="sequence_length"):
        SegmentPacker(0)
    with pytest.raises(ValueError, match="start_value"):
        SegmentPacker(8, start_value="[CLS]")
    with pytest.raises(ValueError, match="cannot hold"):
        SegmentPacker(2, start_value=CLS, end_value=SEP, separator_value=SEP)((tf.ragged.constant([[1]]),) * 2)
    with pytest.raises(ValueError, match="one or two segments"):
        SegmentPacker(8, truncate="longest_first")((tf.ragged.constant([[1]]),) * 3)


lengths = st.lists(st.lists(st.integers(0, 12), min_size=2, max_size=3), min_size=1, max_size=6)


@given(rows=lengths, budget=st.integers(0, 20), truncate=st.sampled_from(["round_robin", "waterfall"]))
def test_trimming_matches_tensorflow_text(rows, budget, truncate):
    text = pytest.importorskip("tensorflow_text")
    segments_count = min(len(r) for r in rows)
    segments = [
        tf.ragged.constant([list(range(row[i])) for row in rows], dtype=tf.int64, ragged_rank=1)
        for i in range(segments_count)
    ]
    trimmer = (text.RoundRobinTrimmer if truncate == "round_robin" else text.WaterfallTrimmer)(budget)
    expected = [segment.row_lengths().numpy() for segment in trimmer.trim(segments)]
    packer = SegmentPacker(budget + segments_count, start_value=None, end_value=SEP, truncate=truncate)
    mask = packer(tuple(segments))
    got_lengths = np.stack(
        [np.sum(mask["segment_ids"].numpy() == index, axis=1) - 1 for index in range(segments_count)]
    )
    # Every segment is followed by one separator or end id: subtract it. Rows shorter than the sequence
    # length leave padding (segment 0), so count only real tokens for the first segment.
    real = mask["padding_mask"].numpy()
    got_lengths[0] = np.sum((mask["segment_ids"].numpy() == 0) & real, axis=1) - 1
    np.testing.assert_array_equal(got_lengths, np.stack(expected))


@pytest.mark.parametrize(
    "lengths, expected",
    [
        # Room for 7 tokens. Fits: unchanged. One too long: the longer keeps 7 - shorter. Both long: the
        # shorter (the first, on a tie) gets 7 // 2 = 3, the longer 3 + 7 % 2 = 4.
        ((2, 4), (2, 4)),
        ((2, 8), (2, 5)),
        ((8, 2), (5, 2)),
        ((0, 8), (0, 7)),
        ((4, 4), (3, 4)),
        ((8, 4), (4, 3)),
        ((8, 8), (3, 4)),
    ],
)
def test_longest_first_rule(lengths, expected):
    packer = SegmentPacker(9, start_value=None, end_value=SEP, truncate="longest_first")
    outputs = packer(tuple(tf.ragged.constant([list(range(n))], dtype=tf.int32) for n in lengths))
    segment_ids = outputs["segment_ids"].numpy()[0]
    real = outputs["padding_mask"].numpy()[0]
    kept = tuple(int(np.sum((segment_ids == index) & real)) - 1 for index in (0, 1))
    assert kept == expected


@pytest.mark.full
def test_packs_unigram_pieces_in_a_served_model(tmp_path):
    """SegmentPacker after UnigramLayer: SentencePiece models get BERT-style inputs too (ALBERT's layout)."""
    import keras

    from tests.serving import serve
    from tfsubword import UnigramLayer

    vocab = [("<pad>", 0.0), ("<unk>", 0.0), ("[CLS]", 0.0), ("[SEP]", 0.0), ("▁a", -1.0), ("▁b", -1.5), ("a", -2.0)]
    tokenizer = UnigramLayer(vocab, control_tokens=("<pad>", "[CLS]", "[SEP]"))
    packer = SegmentPacker(8, start_value=2, end_value=3, truncate="round_robin")
    first, second = keras.Input(shape=(), dtype="string"), keras.Input(shape=(), dtype="string")
    model = keras.Model([first, second], packer((tokenizer(first), tokenizer(second))))
    # "a a" -> ▁a ▁a; "b aa" -> ▁b ▁a a. Room for 5 pieces: ▁a ▁b ▁a ▁a a in turn -> 2 and 3 kept.
    got = model([tf.constant(["a a"]), tf.constant(["b aa"])])
    assert got["token_ids"].numpy().tolist() == [[2, 4, 4, 3, 5, 4, 6, 3]]
    assert got["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 1, 1, 1, 1]]
    single = keras.Model(first, SegmentPacker(6, start_value=2, end_value=3)(tokenizer(first)))
    single.export(tmp_path / "packed", verbose=False)
    served = serve(tmp_path / "packed", ["a a", "b"])
    assert served["token_ids"] == [[2, 4, 4, 3, 0, 0], [2, 5, 3, 0, 0, 0]]
