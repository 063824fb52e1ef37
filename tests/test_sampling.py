"""Subword regularization: the layers sample segmentations with `training=True`, as the references do.

The sampled distributions are checked against exact probabilities, enumerated here by hand from the
pieces and scores (every segmentation of a short word, weighted by exp(alpha * its score)), and against
the references' own samplers (`sentencepiece`'s `encode(..., enable_sampling=True)`, Hugging Face's
`BPE(dropout=...)` and `Unigram(alpha=...)`), by chi-square tests over 10,000 draws at p > 0.001 (a
test of many texts holds its texts together at that level: `all_above`); the same tests, given a
wrong alpha, n-best size or dropout, fail. Our draws are seeded. `sentencepiece`'s generator is
seeded before each reference draw, yet its draws differ from process to process (CI saw it), and
Hugging Face's samplers take no seed: tests against them can fail by chance, each with probability
0.001 at most.
"""

import collections
import json
import math
import zlib

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import BERT_VOCAB, nonempty_lines, shared_file
from tfsubword import BertPreprocessor, SentencePieceLayer, UnigramLayer, WordPieceLayer

DRAWS = 10_000
# A hand-built unigram vocabulary (no two segmentations of "▁the" tie).
TINY = [("<unk>", 0.0), ("▁the", -1.0), ("▁", -2.0), ("t", -3.0), ("h", -3.5), ("e", -3.2)]
TINY += [("th", -2.5), ("he", -2.6), ("▁t", -2.2)]
EN_MODEL = "sentencepiece-test-unigram-en-1000.model"
# Real words and sentences (from *Botchan*) for the en-1000 model.
WORDS = ["hello", "wonderful", "Botchan", "schoolmaster", "rascal", "father", "mother", "Kiyo", "trouble"]
SENTENCES = ["I was a rascal.", "Hello world, this is it.", "He jumped from the second storey."]


def segmentations(text, scores):
    """Every way to cut `text` into pieces of `scores` (a dict piece -> score), by hand: (pieces, score)."""
    if not text:
        return [((), 0.0)]
    found = []
    for end in range(1, len(text) + 1):
        if text[:end] in scores:
            rests = segmentations(text[end:], scores)
            found += [((text[:end], *rest), scores[text[:end]] + score) for rest, score in rests]
    return found


def exact(text, scores, alpha, nbest_size=-1):
    """The probability of each segmentation of `text` (pieces -> probability) when drawn in proportion to
    exp(alpha * score) among all of them, or among the `nbest_size` best."""
    found = sorted(segmentations(text, scores), key=lambda pair: -pair[1])
    if nbest_size > 1:
        found = found[:nbest_size]
    weights = [math.exp(alpha * score) for _, score in found]
    return {pieces: weight / sum(weights) for (pieces, _), weight in zip(found, weights)}


def drawn(layer, text, draws=DRAWS):
    """How often each segmentation (a tuple of pieces) came in `draws` copies of `text` in one batch."""
    ids = layer(tf.constant([text] * draws), training=True).to_list()
    vocabulary = layer.get_vocabulary()
    return collections.Counter(tuple(vocabulary[i] for i in row) for row in ids)


def fits(counts, probabilities):
    """The p-value of a chi-square goodness-of-fit of `counts` to `probabilities` (segmentations expected
    fewer than 5 times pooled into one class; one drawn with probability 0 fails)."""
    stats = pytest.importorskip("scipy.stats")
    if set(counts) - set(probabilities):
        return 0.0
    total = sum(counts.values())
    big = [key for key, p in probabilities.items() if p * total >= 5]
    observed = [counts[key] for key in big] + [total - sum(counts[key] for key in big)]
    expected = [probabilities[key] * total for key in big] + [total * (1 - sum(probabilities[key] for key in big))]
    if expected[-1] < 1e-9:
        observed, expected = observed[:-1], expected[:-1]
    if len(expected) < 2:
        return 1.0
    expected = np.array(expected) * sum(observed) / sum(expected)
    return stats.chisquare(observed, expected).pvalue


def all_above(p_values, level=0.001):
    """Each of `p_values` (a dict: what was tested -> p-value) above `level` divided by their number
    (Bonferroni): the tests of one function, together, fail by chance with probability `level` at most."""
    worst = min(p_values, key=p_values.get)
    assert p_values[worst] > level / len(p_values), (worst, p_values[worst], len(p_values))


def same_law(ours, theirs):
    """The p-value of a chi-square test that two samples of segmentations come from one distribution
    (segmentations seen fewer than 10 times in both pooled into one class)."""
    stats = pytest.importorskip("scipy.stats")
    keys = set(ours) | set(theirs)
    big = [key for key in keys if ours[key] + theirs[key] >= 10]
    rows = [
        [sample[key] for key in big] + [sum(sample[key] for key in keys if key not in big)] for sample in (ours, theirs)
    ]
    table = np.array(rows)
    table = table[:, table.sum(axis=0) > 0]
    return 1.0 if table.shape[1] < 2 else stats.chi2_contingency(table)[1]


def reference_draws(processor, text, alpha, nbest_size, draws=DRAWS):
    """`sentencepiece`'s draws, its generator seeded for this text and setting: another test drawing
    before in the same process does not change them."""
    import sentencepiece

    sentencepiece.set_random_generator_seed(zlib.crc32(f"{text}|{alpha}|{nbest_size}".encode()))
    ids = [processor.encode(text, enable_sampling=True, alpha=alpha, nbest_size=nbest_size) for _ in range(draws)]
    return collections.Counter(tuple(processor.id_to_piece(i) for i in row) for row in ids)


@pytest.mark.parametrize(
    "alpha, nbest_size",
    [
        (0.5, -1),
        pytest.param(1.0, -1, marks=pytest.mark.full),
        (0.0, -1),
        (0.5, 3),
        pytest.param(1.0, 5, marks=pytest.mark.full),
    ],
)
def test_draws_follow_the_exact_probabilities(alpha, nbest_size):
    layer = UnigramLayer(TINY, alpha=alpha, nbest_size=nbest_size, seed=1)
    probabilities = exact("▁the", dict(TINY[1:]), alpha, nbest_size)
    counts = drawn(layer, "the")
    assert len(counts) >= 3
    assert fits(counts, probabilities) > 0.001


def test_draws_of_whole_lines_follow_the_exact_probabilities():
    # Without the dummy prefix the layer reads whole normalized lines, not its pool of words.
    layer = UnigramLayer(TINY, add_dummy_prefix=False, alpha=0.5, seed=1)
    probabilities = exact("the▁the", dict(TINY[1:]), 0.5)
    counts = drawn(layer, "the the")
    assert fits(counts, probabilities) > 0.001
    assert len(counts) > 6  # both words vary


def test_a_wrong_alpha_or_nbest_size_fails_the_exact_test():
    counts = drawn(UnigramLayer(TINY, alpha=0.5, seed=1), "the")
    assert fits(counts, exact("▁the", dict(TINY[1:]), 0.5)) > 0.001
    assert fits(counts, exact("▁the", dict(TINY[1:]), 0.6)) < 0.001
    counts = drawn(UnigramLayer(TINY, alpha=0.5, nbest_size=3, seed=1), "the")
    assert fits(counts, exact("▁the", dict(TINY[1:]), 0.5, 4)) < 0.001


@pytest.fixture(scope="module")
def en_processor():
    spm = pytest.importorskip("sentencepiece")
    spm.set_random_generator_seed(7)
    return spm.SentencePieceProcessor(model_file=str(shared_file(EN_MODEL)))


@pytest.mark.parametrize("alpha, nbest_size", [(0.1, -1), pytest.param(0.2, 8, marks=pytest.mark.full)])
def test_draws_match_sentencepieces_sampler_on_real_words(en_processor, alpha, nbest_size):
    layer = UnigramLayer(shared_file(EN_MODEL), alpha=alpha, nbest_size=nbest_size, seed=3)
    p_values = {}
    for text in WORDS[:3] + SENTENCES[:1]:
        ours = drawn(layer, text)
        p_values[text] = same_law(ours, reference_draws(en_processor, text, alpha, nbest_size))
    all_above(p_values)
    # And the test tells a wrong alpha apart.
    assert same_law(ours, reference_draws(en_processor, text, 2 * alpha, nbest_size)) < 0.001


@pytest.mark.full
@pytest.mark.parametrize("alpha, nbest_size", [(0.1, -1), (0.5, -1), (0.2, 8), (1.0, 16)])
def test_draws_match_sentencepiece_and_the_exact_probabilities_on_real_text(en_processor, alpha, nbest_size):
    layer = SentencePieceLayer(shared_file(EN_MODEL), alpha=alpha, nbest_size=nbest_size, seed=5)
    normal = {
        en_processor.id_to_piece(i): en_processor.get_score(i)
        for i in range(en_processor.get_piece_size())
        if not (en_processor.is_control(i) or en_processor.is_unknown(i) or en_processor.is_unused(i))
    }
    lines = [line for line in nonempty_lines(shared_file("botchan.txt")) if 20 < len(line) < 60][:12]
    words = sorted({word.strip(".,;:!?\"'") for line in lines for word in line.split()} - {""})[:24]
    p_values = {}
    for text in WORDS + words + SENTENCES + lines:
        ours = drawn(layer, text)
        p_values[text, "sentencepiece"] = same_law(ours, reference_draws(en_processor, text, alpha, nbest_size))
        if text in words and len(text) <= 10 and all(character in normal for character in text):
            p_values[text, "exact"] = fits(ours, exact("▁" + text, normal, alpha, nbest_size))
    all_above(p_values)


def botchan_lines(count=200):
    return nonempty_lines(shared_file("botchan.txt"))[:count]


def test_inference_gives_the_best_segmentation_quick():
    texts = ["the the het", "th e", ""]
    expected = UnigramLayer(TINY)(texts).to_list()
    for layer in (UnigramLayer(TINY, alpha=1.0, seed=0), UnigramLayer(TINY, nbest_size=3, seed=0)):
        assert layer(texts).to_list() == expected
        assert layer(texts, training=False).to_list() == expected
        assert layer.tokenize_with_offsets(texts)[0].to_list() == expected
    assert expected[0] == [1, 1, 2, 7, 3]  # ▁the ▁the ▁ he t, by hand
    # SentencePiece's "no sampling"
    assert UnigramLayer(TINY, nbest_size=1, seed=0)(texts * 20, training=True).to_list() == expected * 20
    assert UnigramLayer(TINY, alpha=1.0, seed=0)(texts * 20, training=True).to_list() != expected * 20


@pytest.mark.full
def test_inference_gives_the_best_segmentation():
    vocabulary = shared_file(EN_MODEL)
    plain = UnigramLayer(vocabulary)
    texts = botchan_lines(60)
    expected = plain(texts).to_list()
    layer = UnigramLayer(vocabulary, alpha=0.1)
    assert layer(texts).to_list() == expected
    assert layer(texts, training=False).to_list() == expected
    assert layer.tokenize(texts).to_list() == expected
    assert layer(texts, training=True).to_list() != expected
    # SentencePiece's "no sampling"
    assert UnigramLayer(vocabulary, nbest_size=1)(texts, training=True).to_list() == expected


def test_a_seed_gives_one_sequence_of_segmentations():
    texts = botchan_lines(12)

    def calls(seed):
        letters = [(letter, -5.0) for letter in "abcdfgijklmnopqrsuvwxyz"]  # and e, h, t of TINY
        layer = UnigramLayer(TINY + letters, alpha=0.2, seed=seed)
        return [layer(texts, training=True).to_list() for _ in range(2)]

    first = calls(4)
    assert calls(4) == first
    assert first[0] != first[1]  # each call draws anew
    assert calls(5) != first


def test_each_occurrence_is_drawn_on_its_own():
    layer = UnigramLayer(TINY, alpha=1.0, seed=2)
    ids = layer(["the the the the the the the the the the the the the the the the"], training=True).to_list()[0]
    words = []
    for i in ids:
        if TINY[i][0].startswith("▁"):
            words.append([])
        words[-1].append(i)
    assert len(words) == 16 and len({tuple(word) for word in words}) > 1


def test_sampled_pieces_have_offsets_into_the_text():
    layer = UnigramLayer(shared_file(EN_MODEL), alpha=0.1, seed=6)
    plain = [line for line in botchan_lines(300) if line.isascii() and "  " not in line.strip()]
    # Lines without unknown pieces, whose spans are their pieces' text.
    texts = [line for line, row in zip(plain, layer(plain).to_list()) if layer.unknown_token_id not in row][:100]
    ids, starts, ends = layer.tokenize_with_offsets(texts, training=True)
    best = layer.tokenize_with_offsets(texts)[0].to_list()
    assert ids.to_list() != best
    vocabulary = layer.get_vocabulary()
    for text, row, row_starts, row_ends in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        text = text.strip()
        spans = [text.encode()[start:end].decode() for start, end in zip(row_starts, row_ends)]
        pieces = [vocabulary[i].replace("▁", " ") for i in row]
        pieces[0] = pieces[0].removeprefix(" ")  # the dummy prefix comes from no character
        assert spans == pieces, text


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"alpha": -0.1}, "`alpha` must be a finite number >= 0"),
        ({"alpha": float("nan")}, "`alpha` must be a finite number >= 0"),
        ({"alpha": "0.1"}, "`alpha` must be a finite number >= 0"),
        ({"alpha": True}, "`alpha` must be a finite number >= 0"),
        ({"nbest_size": -2}, "`nbest_size` must be an int of at least -1"),
        ({"nbest_size": 513}, "`nbest_size` must be -1 (all segmentations)"),
        ({"nbest_size": 2.0}, "`nbest_size` must be an int"),
        ({"seed": -1}, "`seed` must be an int of at least 0"),
        ({"seed": "1"}, "`seed` must be an int"),
    ],
)
def test_bad_sampling_arguments_raise(arguments, message):
    with pytest.raises(ValueError) as error:
        UnigramLayer(TINY, **arguments)
    assert message in str(error.value)


# MaxMatch-dropout (WordPiece). No reference library samples it; the exact probabilities are computed
# here by hand from the rule (Hiraoka, 2022): at each step the tokens that match are tried from the
# longest, each but a one-character token skipped with probability p.
TINY_WORDPIECE = ["[PAD]", "[UNK]", "the", "t", "h", "e", "##h", "##e", "##he", "th", "##t", "u", "##n", "un"]
TINY_WORDPIECE += ["##tie", "##i", "tie", "##ti", "##ie"]


def maxmatch_dropout(word, vocabulary, p, suffix="##"):
    """Each outcome of `word` (a tuple of tokens, or ("[UNK]",)) -> its probability."""
    vocabulary = set(vocabulary)
    outcomes = collections.Counter()

    def walk(start, taken, chance):
        if start == len(word):
            outcomes[tuple(taken)] += chance
            return
        prefix = suffix if start else ""
        candidates = [prefix + word[start:end] for end in range(len(word), start, -1)]
        candidates = [token for token in candidates if token in vocabulary]
        for token in candidates:
            single = len(token) - len(prefix) == 1
            walk(start + len(token) - len(prefix), taken + [token], chance * (1 if single else 1 - p))
            if single:
                return
            chance *= p
        outcomes[("[UNK]",)] += chance  # every token skipped, none of one character

    walk(0, [], 1.0)
    return {outcome: chance for outcome, chance in outcomes.items() if chance > 0}


@pytest.mark.parametrize("dropout", [0.1, 0.5, 0.9, 1.0])
def test_maxmatch_dropout_follows_the_exact_probabilities(dropout):
    layer = WordPieceLayer(TINY_WORDPIECE, dropout=dropout, seed=8)
    for word in ("the", "untie", "tthe"):
        assert fits(drawn(layer, word), maxmatch_dropout(word, TINY_WORDPIECE, dropout)) > 0.001, word


def test_a_wrong_dropout_fails_the_exact_test():
    counts = drawn(WordPieceLayer(TINY_WORDPIECE, dropout=0.3, seed=8), "untie")
    assert fits(counts, maxmatch_dropout("untie", TINY_WORDPIECE, 0.3)) > 0.001
    assert fits(counts, maxmatch_dropout("untie", TINY_WORDPIECE, 0.35)) < 0.001


@pytest.fixture(scope="module")
def bert_tokens():
    return [line.rstrip("\n") for line in open(BERT_VOCAB, encoding="utf-8")] if BERT_VOCAB.exists() else None


@pytest.mark.full
@pytest.mark.parametrize("dropout", [0.1, 0.3])
def test_maxmatch_dropout_on_real_words_with_berts_vocabulary(bert_tokens, dropout):
    if bert_tokens is None:
        pytest.skip(f"reference data not available: {BERT_VOCAB}")
    layer = WordPieceLayer(bert_tokens, dropout=dropout, seed=9)
    words = ["headmaster", "unaffable", "schoolmaster", "botchan", "mischievous", "tokyo", "rascal"]
    for word in words if dropout == 0.1 else words + ["yamaarashi", "uranari", "kiyo", "dumpling", "porgy"]:
        expected = maxmatch_dropout(word, bert_tokens, dropout)
        assert fits(drawn(layer, word.capitalize()), expected) > 0.001, word


def test_wordpiece_inference_is_greedy_and_sampling_draws_per_word():
    tokens = [line.rstrip("\n") for line in open(shared_file("bert-base-uncased-vocab.txt"), encoding="utf-8")]
    texts = botchan_lines(60)
    expected = WordPieceLayer(tokens)(texts).to_list()
    layer = WordPieceLayer(tokens, dropout=0.2, seed=1)
    assert layer(texts).to_list() == expected
    assert layer(texts, training=False).to_list() == expected
    sampled = layer(texts, training=True).to_list()
    assert sampled != expected
    # Each sampled row spells its text's words (a word's tokens join back into it).
    vocabulary = layer.get_vocabulary()
    for row, best in zip(sampled[:50], expected[:50]):
        assert "".join(vocabulary[i].removeprefix("##") for i in row) == "".join(
            vocabulary[i].removeprefix("##") for i in best
        )


def test_bert_preprocessor_passes_training_to_its_tokenizer():
    tokenizer = WordPieceLayer(TINY_WORDPIECE + ["[CLS]", "[SEP]"], dropout=0.5, seed=3)
    preprocessor = BertPreprocessor(tokenizer=tokenizer, sequence_length=24)
    texts = tf.constant(["the untie the untie the untie"] * 4)
    best = preprocessor(texts)["token_ids"].numpy().tolist()
    assert best == preprocessor(texts, training=False)["token_ids"].numpy().tolist()
    assert best[0] == [19, 2, 13, 14, 2, 13, 14, 2, 13, 14, 20] + [0] * 13  # [CLS] the un ##tie ... [SEP]
    sampled = preprocessor(texts, training=True)["token_ids"].numpy().tolist()
    assert sampled != best and len({tuple(row) for row in sampled}) > 1


def test_maxmatch_dropout_offsets_point_at_the_tokens_text():
    layer = WordPieceLayer(TINY_WORDPIECE, dropout=0.5, seed=4)
    texts = ["The untie THE", "tthe  untie", ""]
    for _ in range(5):
        ids, starts, ends = layer.tokenize_with_offsets(texts, training=True)
        for text, row, row_starts, row_ends in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
            for i, start, end in zip(row, row_starts, row_ends):
                assert text[start:end].lower() == TINY_WORDPIECE[i].removeprefix("##"), text


def test_training_must_be_a_python_bool():
    layer = WordPieceLayer(TINY_WORDPIECE, dropout=0.5, seed=1)
    assert layer(["the"], training=np.True_).to_list() in ([[2]], [[9, 7]], [[3, 8]], [[3, 6, 7]])
    with pytest.raises(ValueError, match="`training` must be True, False or None"):
        layer(["the"], training=tf.constant(True))
    with pytest.raises(ValueError, match="`training` must be True, False or None"):
        layer.tokenize_with_offsets(["the"], training="yes")


@pytest.mark.parametrize("dropout", [-0.1, 1.5, "0.1", True, float("nan")])
def test_bad_dropout_raises(dropout):
    with pytest.raises(ValueError, match="`dropout` must be a number from 0 to 1"):
        WordPieceLayer(TINY_WORDPIECE, dropout=dropout)


@pytest.mark.full
def test_sampling_layers_export_and_save_their_best_segmentation(tmp_path, hugging_face_bpe):
    from tests import contract
    from tfsubword import BPELayer

    texts = botchan_lines(64)
    vocab, merges = hugging_face_bpe
    tokens = [line.rstrip("\n") for line in open(shared_file("bert-base-uncased-vocab.txt"), encoding="utf-8")]
    layers = [
        UnigramLayer(shared_file(EN_MODEL), alpha=0.1, seed=1, sequence_length=48),
        UnigramLayer(shared_file(EN_MODEL), nbest_size=8, seed=1, sequence_length=48),
        WordPieceLayer(tokens, dropout=0.2, seed=1, sequence_length=48),
        BPELayer(sorted(vocab, key=vocab.get), merges, dropout=0.2, seed=1, sequence_length=48),
    ]
    plain = [UnigramLayer(shared_file(EN_MODEL), sequence_length=48)] * 2 + [WordPieceLayer(tokens, sequence_length=48)]
    plain.append(BPELayer(sorted(vocab, key=vocab.get), merges, sequence_length=48))
    for layer, best in zip(layers, plain):
        assert layer(texts).numpy().tolist() == best(texts).numpy().tolist()
    contract.check_serving_each(layers, texts, tmp_path)  # served as called without `training`
    for number, layer in enumerate(layers):
        directory = tmp_path / f"saved-{number}"
        directory.mkdir()
        contract.check_keras_saving(layer, texts, directory)
        restored = type(layer).from_config(layer.get_config())
        for name in ("alpha", "nbest_size", "dropout", "seed"):
            if hasattr(layer, name):
                assert getattr(restored, name) == getattr(layer, name), name


@pytest.mark.full
def test_sampling_in_a_parallel_tf_data_map(tmp_path):
    tokens = [line.rstrip("\n") for line in open(shared_file("bert-base-uncased-vocab.txt"), encoding="utf-8")]
    layer = WordPieceLayer(tokens, dropout=0.3, seed=2)
    texts = ["headmaster unaffable schoolmaster"] * 64
    data = tf.data.Dataset.from_tensor_slices(texts).batch(8)
    sampled = data.map(lambda batch: layer(batch, training=True), num_parallel_calls=tf.data.AUTOTUNE)
    best = data.map(lambda batch: layer(batch), num_parallel_calls=tf.data.AUTOTUNE)
    rows = [row for batch in sampled for row in batch.to_list()]
    expected = WordPieceLayer(tokens)(texts).to_list()
    assert [row for batch in best for row in batch.to_list()] == expected
    assert len({tuple(row) for row in rows}) > 8  # each batch, each text drawn anew
    vocabulary = layer.get_vocabulary()
    spelled = {"".join(vocabulary[i].removeprefix("##") for i in row) for row in rows}
    assert spelled == {"headmasterunaffableschoolmaster"}


# BPE-dropout as SentencePiece samples a BPE model (`alpha` the probability of skipping a merge): the
# pair of highest score (the leftmost among equals) comes up; with probability alpha it is skipped and
# stays unmerged until a merge changes one of its symbols; otherwise it merges.
def sentencepiece_bpe_dropout(symbols, scores, alpha):
    """Each outcome (a tuple of pieces) of merging `symbols` -> its probability, by hand: `scores`
    maps each piece a pair can make to its score."""
    outcomes = collections.Counter()

    def step(symbols, skipped, chance):
        candidates = [
            (-scores[symbols[i] + symbols[i + 1]], i)
            for i in range(len(symbols) - 1)
            if symbols[i] + symbols[i + 1] in scores and i not in skipped
        ]
        if not candidates:
            outcomes[tuple(symbols)] += chance
            return
        _, i = min(candidates)
        if alpha > 0:
            step(symbols, skipped | {i}, chance * alpha)
        merged = symbols[:i] + [symbols[i] + symbols[i + 1]] + symbols[i + 2 :]
        # Pairs left of the new symbol keep their place; those right of it move one to the left.
        kept = {j if j < i else j - 1 for j in skipped if j not in (i - 1, i, i + 1)}
        step(merged, frozenset(kept), chance * (1 - alpha))

    step(list(symbols), frozenset(), 1.0)
    return {outcome: chance for outcome, chance in outcomes.items() if chance > 0}


@pytest.fixture(scope="module")
def bpe_model():
    spm = pytest.importorskip("sentencepiece")
    import io

    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(botchan_lines(2000)), model_writer=model, model_type="bpe", vocab_size=600, minloglevel=2
    )
    spm.set_random_generator_seed(11)
    return model.getvalue(), spm.SentencePieceProcessor(model_proto=model.getvalue())


@pytest.mark.parametrize("alpha", [0.1, pytest.param(0.5, marks=pytest.mark.full)])
def test_bpe_dropout_follows_the_exact_probabilities_and_sentencepieces_sampler(bpe_model, alpha):
    model, processor = bpe_model
    layer = SentencePieceLayer(model, alpha=alpha, seed=12)
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    scores = {piece: processor.get_score(i) for i, piece in enumerate(pieces) if len(piece) > 1}
    p_values = {}
    for word in ("father", "school", "rascal"):
        ours = drawn(layer, word)
        p_values[word, "exact"] = fits(ours, sentencepiece_bpe_dropout(["▁", *word], scores, alpha))
        p_values[word, "sentencepiece"] = same_law(ours, reference_draws(processor, word, alpha, -1))
    all_above(p_values)
    # And the tests tell a wrong alpha apart.
    assert fits(ours, sentencepiece_bpe_dropout(["▁", *word], scores, alpha * 1.3)) < 0.001
    assert same_law(ours, reference_draws(processor, word, alpha * 1.3, -1)) < 0.001


def test_bpe_dropout_in_lines_and_offsets(bpe_model):
    model, _ = bpe_model
    layer = SentencePieceLayer(model, alpha=0.3, seed=13)
    texts = botchan_lines(40)
    best = SentencePieceLayer(model)(texts).to_list()
    assert layer(texts).to_list() == best
    ids, starts, ends = layer.tokenize_with_offsets(texts, training=True)
    assert ids.to_list() != best
    assert layer(texts, training=True).to_list() != ids.to_list()
    vocabulary = layer.get_vocabulary()
    for text, row, best_row in zip(texts, ids.to_list(), best):
        # The drawn pieces spell what the best ones spell.
        assert "".join(vocabulary[i] for i in row) == "".join(vocabulary[i] for i in best_row), text
    with pytest.raises(ValueError, match="probability of skipping each merge"):
        SentencePieceLayer(model, nbest_size=4)
    with pytest.raises(ValueError, match="probability of skipping each merge"):
        SentencePieceLayer(model, alpha=1.5)


# BPE-dropout as Hugging Face's `BPE(dropout=p)` samples: a word's candidate merges wait in a priority
# queue (lowest rank, then leftmost); each one popped is set aside with probability p, otherwise the
# ones set aside go back and it merges, if its pair is still there (a stale entry is only spent).
def hugging_face_bpe_dropout(symbols, ranks, p):
    """Each outcome (a tuple of symbol ids) of merging `symbols` -> its probability, by following the
    queue through every draw: `ranks` maps a pair of ids to (rank, merged id)."""
    outcomes = collections.Counter()

    def pushed(queue, symbols, left, right):
        found = ranks.get((symbols[left], symbols[right]))
        return queue if found is None else tuple(sorted((*queue, (found[0], left, found[1]))))

    def follow(symbols, queue, aside, chance):
        if not queue:
            outcomes[tuple(s for s in symbols if s is not None)] += chance
            return
        top, rest = queue[0], queue[1:]
        if p > 0:
            follow(symbols, rest, (*aside, top), chance * p)
        if p == 1:
            return
        chance *= 1 - p
        queue = tuple(sorted(rest + aside))
        _, left, made = top
        live = [i for i, s in enumerate(symbols) if s is not None]
        after = [i for i in live if i > left]
        if symbols[left] is None or not after or ranks.get((symbols[left], symbols[after[0]]), (0, None))[1] != made:
            follow(symbols, queue, (), chance)
            return
        right = after[0]
        symbols = list(symbols)
        symbols[left], symbols[right] = made, None
        before = [i for i in live if i < left]
        if before:
            queue = pushed(queue, symbols, before[-1], left)
        if after[1:]:
            queue = pushed(queue, symbols, left, after[1])
        follow(tuple(symbols), queue, (), chance)

    queue = ()
    for i in range(len(symbols) - 1):
        queue = pushed(queue, symbols, i, i + 1)
    follow(tuple(symbols), queue, (), 1.0)
    return outcomes


# Two merges make "abc", so an entry can look stale and be live; "d" + "a" gives entries that go stale.
TOY_BPE = ["a", "b", "c", "d", "ab", "bc", "cd", "abc", "da", "abcd", "dab"]
TOY_MERGES = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "bc"), ("d", "a"), ("ab", "c"), ("abc", "d"), ("da", "b")]


def toy_bpe_ranks():
    ids = {token: i for i, token in enumerate(TOY_BPE)}
    return ids, {(ids[left], ids[right]): (k, ids[left + right]) for k, (left, right) in enumerate(TOY_MERGES)}


@pytest.mark.parametrize("dropout", [0.1] + [pytest.param(p, marks=pytest.mark.full) for p in (0.5, 1.0)])
def test_hugging_face_bpe_dropout_follows_the_exact_probabilities(dropout):
    from tfsubword import BPELayer

    ids, ranks = toy_bpe_ranks()
    layer = BPELayer(TOY_BPE, TOY_MERGES, byte_level=False, pattern=None, dropout=dropout, seed=5)
    for word in ("abcd", "abcdab", "dabcda"):
        counts = collections.Counter(tuple(row) for row in layer([word] * DRAWS, training=True).to_list())
        assert fits(counts, hugging_face_bpe_dropout([ids[c] for c in word], ranks, dropout)) > 0.001, word
    if dropout < 1:
        assert fits(counts, hugging_face_bpe_dropout([ids[c] for c in word], ranks, dropout * 1.3)) < 0.001


@pytest.fixture(scope="module")
def hugging_face_bpe():
    """A byte-level BPE trained by Hugging Face `tokenizers` on *Botchan*: (vocabulary, merges)."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import pre_tokenizers

    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=800, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(botchan_lines(3000), trainer)
    model = json.loads(tokenizer.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return model["vocab"], merges


def hugging_face_draws(vocab, merges, dropout, word, draws=DRAWS):
    """`draws` segmentations of `word` by Hugging Face's own sampler (its generator takes no seed)."""
    import tokenizers
    from tokenizers import pre_tokenizers

    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE(vocab, merges, dropout=dropout))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    return collections.Counter(tuple(encoding.ids) for encoding in tokenizer.encode_batch([word] * draws))


@pytest.mark.parametrize("dropout", [0.2, pytest.param(0.6, marks=pytest.mark.full)])
def test_hugging_face_bpe_dropout_matches_the_exact_probabilities_and_hugging_faces_sampler(hugging_face_bpe, dropout):
    from tfsubword import BPELayer

    vocab, merges = hugging_face_bpe
    tokens = sorted(vocab, key=vocab.get)
    layer = BPELayer(tokens, merges, dropout=dropout, seed=6)
    ids = {token: i for i, token in enumerate(tokens)}
    ranks = {(ids[left], ids[right]): (k, ids[left + right]) for k, (left, right) in enumerate(merges)}
    p_values = {}
    for word in ("father", " rascal", " unaffable"):
        ours = collections.Counter(tuple(row) for row in layer([word] * DRAWS, training=True).to_list())
        if len(word) <= 7:
            symbols = [ids[c] for c in byte_level_chars(word)]
            p_values[word, "exact"] = fits(ours, hugging_face_bpe_dropout(symbols, ranks, dropout))
        p_values[word, "tokenizers"] = same_law(ours, hugging_face_draws(vocab, merges, dropout, word))
    all_above(p_values)
    assert same_law(ours, hugging_face_draws(vocab, merges, dropout * 1.3, word)) < 0.001


def byte_level_chars(word):
    from tfsubword.text import byte_level

    alphabet = byte_level.byte_to_char()
    return [alphabet[b] for b in word.encode("utf-8")]


def test_hugging_face_bpe_dropout_in_lines_and_offsets(hugging_face_bpe):
    from tfsubword import BPELayer

    vocab, merges = hugging_face_bpe
    tokens = sorted(vocab, key=vocab.get)
    layer = BPELayer(tokens, merges, dropout=0.3, seed=8)
    texts = ["I was a rascal, the schoolmaster said.", "Tôi là mèo. 吾輩は猫である", "", "a  b"] + botchan_lines(30)
    best = BPELayer(tokens, merges)(texts).to_list()
    assert layer(texts).to_list() == best
    ids, starts, ends = layer.tokenize_with_offsets(texts, training=True)
    assert ids.to_list() != best
    for text, row, row_starts, row_ends in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        data = text.encode("utf-8")
        # The drawn tokens spell the text, and each token's span holds its bytes.
        assert b"".join(layer._segmenter.token_bytes[i] for i in row) == data, text
        for i, start, end in zip(row, row_starts, row_ends):
            assert layer._segmenter.token_bytes[i] in data[start:end], text


# Hugging Face's unigram sampling (`Unigram(alpha=...)`, `Lattice::sample`): its forward pass scales the
# paths before each piece by alpha too, so its draws are not SentencePiece's unless alpha is 1.
def hugging_face_unigram_sampling(text, scores, alpha):
    """The chance of each segmentation of `text` (every character a piece of `scores`) under Hugging
    Face's sampler, by hand: the forward sums, then the product of the walk back's draws."""
    forward = [0.0]
    for end in range(1, len(text) + 1):
        terms = [alpha * (scores[text[s:end]] + forward[s]) for s in range(end) if text[s:end] in scores]
        top = max(terms)
        forward.append(top + math.log(sum(math.exp(t - top) for t in terms)))
    chances = {}
    for pieces, _ in segmentations(text, scores):
        chance, end = 1.0, len(text)
        for piece in reversed(pieces):
            weights = {
                s: math.exp(forward[s] + alpha * scores[text[s:end]]) for s in range(end) if text[s:end] in scores
            }
            chance *= weights[end - len(piece)] / sum(weights.values())
            end -= len(piece)
        chances[pieces] = chance
    return chances


def hugging_face_unigram_draws(pieces, text, alpha, nbest_size=None, draws=DRAWS):
    import tokenizers

    model = tokenizers.models.Unigram(pieces, 0, False, alpha=alpha, nbest_size=nbest_size)
    tokenizer = tokenizers.Tokenizer(model)
    return collections.Counter(tuple(e.tokens) for e in tokenizer.encode_batch([text] * draws))


@pytest.mark.parametrize("alpha, nbest_size", [(0.5, None), pytest.param(2.0, None, marks=pytest.mark.full), (0.5, 3)])
def test_hugging_face_unigram_sampling_follows_the_exact_probabilities_and_its_sampler(alpha, nbest_size):
    pytest.importorskip("tokenizers")
    from tfsubword.layers.huggingface_models import HuggingFaceUnigram

    pieces = [piece for piece, _ in TINY]
    layer = HuggingFaceUnigram(
        pieces, scores=[score for _, score in TINY], unknown_id=0, alpha=alpha, nbest_size=nbest_size, seed=9
    )
    ours = drawn(layer, "▁the")
    scores = dict(TINY[1:])
    if nbest_size is None:
        law = hugging_face_unigram_sampling("▁the", scores, alpha)
        if alpha < 1:  # SentencePiece's law is another (at 2.0 both put nearly all on "▁the")
            assert fits(ours, exact("▁the", scores, alpha)) < 0.001
    else:
        law = exact("▁the", scores, alpha, nbest_size)
    all_above(
        {
            "exact": fits(ours, law),
            "tokenizers": same_law(ours, hugging_face_unigram_draws(TINY, "▁the", alpha, nbest_size)),
        }
    )
    if alpha < 1:  # (at 2.0 nearly every draw is "▁the", whatever the law)
        assert same_law(ours, hugging_face_unigram_draws(TINY, "▁the", alpha * 1.5, nbest_size)) < 0.001
    restored = HuggingFaceUnigram.from_config(layer.get_config())
    assert (restored.alpha, restored.nbest_size, restored.seed) == (alpha, nbest_size, 9)
    with pytest.raises(NotImplementedError, match="offsets of sampled segmentations"):
        layer.tokenize_with_offsets(["▁the"], training=True)
