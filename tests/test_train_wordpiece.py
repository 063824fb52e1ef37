"""WordPiece training: the seeds' worked examples, a textbook oracle on real text, the likelihood rule, bad input."""

import math
import warnings
from fractions import Fraction
from unittest import mock

import pytest
import tensorflow as tf
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import nonempty_lines, shared_file
from tfsubword import WordPieceLayer, train_wordpiece
from tfsubword.files import counts as counts_lib
from tfsubword.text.bert import BertNormalizer
from tfsubword.train import merges as merges_lib
from tfsubword.train.counting import bert_words, count_words
from tfsubword.train.wordpiece import iter_merges, learn_wordpiece

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# Seed 000, "Implementing WordPiece": its corpus, and the 70-token vocabulary it prints.
SEED_CORPUS = [
    "This is the Hugging Face Course.",
    "This chapter is about tokenization.",
    "This section shows several tokenizer algorithms.",
    "Hopefully, you will be able to understand how they are trained and generate tokens.",
]
SEED_VOCABULARY = SPECIALS + [
    "##a",
    "##b",
    "##c",
    "##d",
    "##e",
    "##f",
    "##g",
    "##h",
    "##i",
    "##k",
    "##l",
    "##m",
    "##n",
    "##o",
    "##p",
    "##r",
    "##s",
    "##t",
    "##u",
    "##v",
    "##w",
    "##y",
    "##z",
    ",",
    ".",
    "C",
    "F",
    "H",
    "T",
    "a",
    "b",
    "c",
    "g",
    "h",
    "i",
    "s",
    "t",
    "u",
    "w",
    "y",
    "ab",
    "##fu",
    "Fa",
    "Fac",
    "##ct",
    "##ful",
    "##full",
    "##fully",
    "Th",
    "ch",
    "##hm",
    "cha",
    "chap",
    "chapt",
    "##thm",
    "Hu",
    "Hug",
    "Hugg",
    "sh",
    "th",
    "is",
    "##thms",
    "##za",
    "##zat",
    "##ut",
]
SEED_TOKENS = [
    "Th",
    "##i",
    "##s",
    "is",
    "th",
    "##e",
    "Hugg",
    "##i",
    "##n",
    "##g",
    "Fac",
    "##e",
    "c",
    "##o",
    "##u",
    "##r",
    "##s",
    "##e",
    "[UNK]",
]
# What `train_wordpiece` learns from the seed's corpus: the words go most frequent first, then by code
# point, and ties among the seed's pairs go otherwise from the 46th token on.
SEED_TRAINED = SEED_VOCABULARY[:45] + [
    "##fu",
    "ab",
    "Fa",
    "Fac",
    "##ful",
    "##full",
    "##fully",
    "##ct",
    "Th",
    "##hm",
    "ch",
    "##thm",
    "cha",
    "chap",
    "chapt",
    "Hu",
    "Hug",
    "Hugg",
    "sh",
    "th",
    "is",
    "##thms",
    "abl",
    "##lg",
    "alg",
]
HUG_COUNTS = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}


def test_seed_merges_by_the_formula():
    # (##g, ##s) scores 5/(20*5) = 1/20, above every pair with ##u (1/36). Then all pairs tie and the first,
    # (h, ##u), is merged. Then (hu, ##gs) = 5/(15*5) = 1/15 beats (hu, ##g) = 10/(15*15) = 2/45.
    merged = [merge[2] for merge in iter_merges(HUG_COUNTS)][:4]
    assert merged == ["##gs", "hu", "hugs", "hug"]
    # With the words most frequent first (pun, hug, hugs, pug, bun), the first of the tied pairs is (p, ##u).
    merged = [merge[2] for merge in iter_merges(counts_lib.ordered(HUG_COUNTS))][:4]
    assert merged == ["##gs", "pu", "hu", "bu"]


def test_seed_seventy_token_vocabulary_and_its_tokenization():
    """The seed's words in its order (first seen), as the seed counts them: its ties, its 70 tokens."""
    counts = count_words(SEED_CORPUS, pretokenizer=bert_words(lowercase=False))
    vocabulary = learn_wordpiece(counts, 70, special_tokens=SPECIALS)
    assert vocabulary == SEED_VOCABULARY
    layer = WordPieceLayer(vocabulary, lowercase=False, dtype="string")
    tokens = [token.decode() for token in layer("This is the Hugging Face course!").numpy()]
    assert tokens == SEED_TOKENS


def test_seed_corpus_with_its_words_in_the_trainers_order():
    counts = count_words(SEED_CORPUS, pretokenizer=bert_words(lowercase=False))
    vocabulary = train_wordpiece(SEED_CORPUS, 70, lowercase=False, show_progress=False)
    assert vocabulary == SEED_TRAINED
    assert vocabulary == learn_wordpiece(counts_lib.ordered(counts), 70, special_tokens=SPECIALS)
    assert textbook_wordpiece(counts_lib.ordered(counts), 70, SPECIALS) == SEED_TRAINED  # the plain oracle


def textbook_wordpiece(word_counts, vocab_size, special_tokens=(), prefix="##", algorithm="score"):
    """The seeds' algorithm, written plainly: recount every symbol and pair, every step.

    `algorithm="score"`: exact fractions; ties go to the pair met first scanning the words in order,
    left to right. `algorithm="likelihood"`: the closed-form gain in corpus log-likelihood (checked
    against log-likelihoods computed from scratch by `test_each_likelihood_merge_raises_the_likelihood`),
    stopping when no gain is positive.
    """
    splits = {word: [word[0]] + [prefix + c for c in word[1:]] for word in word_counts}
    alphabet = sorted({piece for pieces in splits.values() for piece in pieces})
    vocabulary = list(special_tokens) + [t for t in alphabet if t not in special_tokens]
    while len(vocabulary) < vocab_size:
        symbol_counts, pair_counts = {}, {}
        for word, pieces in splits.items():
            for piece in pieces:
                symbol_counts[piece] = symbol_counts.get(piece, 0) + word_counts[word]
            for pair in zip(pieces, pieces[1:]):
                pair_counts[pair] = pair_counts.get(pair, 0) + word_counts[word]
        total = sum(symbol_counts.values())
        best, best_value = None, None
        for pair, count in pair_counts.items():
            if algorithm == "score":
                value = Fraction(count, symbol_counts[pair[0]] * symbol_counts[pair[1]])
            else:
                value = likelihood_gain(splits, word_counts, symbol_counts, total, pair, count, prefix)
            if best_value is None or value > best_value:
                best, best_value = pair, value
        if best is None or (algorithm == "likelihood" and best_value <= 0):
            break
        merged = best[0] + best[1][len(prefix) :]
        splits = {word: apply_merge(pieces, best, merged) for word, pieces in splits.items()}
        if merged not in vocabulary:
            vocabulary.append(merged)
    return vocabulary


def x_log_x(x):
    return x * math.log(x) if x > 0 else 0.0


def likelihood_gain(splits, word_counts, symbol_counts, total, pair, count, prefix):
    """Change of sum_t c_t log(c_t / N) when `pair` is merged: only c_a, c_b, c_ab and N change."""
    left, right = pair
    merged = left + right[len(prefix) :]
    if left != right:
        merges = count  # occurrences of (a, b) with a != b cannot overlap
        parts = (
            x_log_x(symbol_counts[left] - merges)
            - x_log_x(symbol_counts[left])
            + x_log_x(symbol_counts[right] - merges)
            - x_log_x(symbol_counts[right])
        )
    else:
        merges = sum(word_counts[w] * (len(p) - len(apply_merge(p, pair, merged))) for w, p in splits.items())
        parts = x_log_x(symbol_counts[left] - 2 * merges) - x_log_x(symbol_counts[left])
    existing = symbol_counts.get(merged, 0)
    return parts + x_log_x(existing + merges) - x_log_x(existing) - x_log_x(total - merges) + x_log_x(total)


def apply_merge(pieces, pair, merged):
    out, i = [], 0
    while i < len(pieces):
        if i + 1 < len(pieces) and (pieces[i], pieces[i + 1]) == pair:
            out.append(merged)
            i += 2
        else:
            out.append(pieces[i])
            i += 1
    return out


def log_likelihood(splits, word_counts):
    counts = {}
    for word, pieces in splits.items():
        for piece in pieces:
            counts[piece] = counts.get(piece, 0) + word_counts[word]
    total = sum(counts.values())
    return sum(c * math.log(c / total) for c in counts.values())


def merged_log_likelihood(splits, word_counts, pair, prefix="##"):
    merged = pair[0] + pair[1][len(prefix) :]
    return log_likelihood({w: apply_merge(p, pair, merged) for w, p in splits.items()}, word_counts)


@pytest.fixture(scope="module")
def botchan_counts():
    lines = nonempty_lines(shared_file("botchan.txt"))[:300]
    return count_words(lines)


def test_matches_the_textbook_algorithm_on_real_text(botchan_counts):
    expected = textbook_wordpiece(botchan_counts, 450, SPECIALS)
    vocabulary = learn_wordpiece(botchan_counts, 450, special_tokens=SPECIALS)
    assert vocabulary == expected
    assert len(set(vocabulary)) == len(vocabulary) == 450


def test_matches_the_textbook_algorithm_on_japanese():
    lines = nonempty_lines(shared_file("wagahaiwa_nekodearu.txt"))[:40]
    counts = count_words(lines, pretokenizer=bert_words(lowercase=False))
    size = len(SPECIALS) + len({p for w in counts for p in [w[0]] + ["##" + c for c in w[1:]]}) + 150
    assert learn_wordpiece(counts, size, special_tokens=SPECIALS) == textbook_wordpiece(counts, size, SPECIALS)


def test_likelihood_matches_a_plain_recount():
    counts = count_words(nonempty_lines(shared_file("botchan.txt"))[:25])
    expected = textbook_wordpiece(counts, 10_000, algorithm="likelihood")
    with pytest.warns(UserWarning, match="no pair improves the likelihood"):
        got = learn_wordpiece(counts, 10_000, special_tokens=(), algorithm="likelihood")
    assert got == expected


@pytest.mark.parametrize(
    "counts",
    [HUG_COUNTS, {"abab": 3, "aaaa": 2, "ab": 7, "ba": 1}, {"low": 5, "lower": 2, "newest": 6, "widest": 3}],
)
def test_each_likelihood_merge_raises_the_likelihood(counts):
    splits = {word: [word[0]] + ["##" + c for c in word[1:]] for word in counts}
    previous = log_likelihood(splits, counts)
    merges = list(iter_merges(counts, algorithm="likelihood"))
    assert merges, "expected at least one merge"
    for left, right, merged in merges:
        splits = {word: apply_merge(pieces, (left, right), merged) for word, pieces in splits.items()}
        current = log_likelihood(splits, counts)
        assert current > previous
        previous = current
    # It stopped because no remaining merge would raise the likelihood.
    remaining = {pair for pieces in splits.values() for pair in zip(pieces, pieces[1:])}
    final = log_likelihood(splits, counts)
    assert all(merged_log_likelihood(splits, counts, pair) <= final + 1e-9 for pair in remaining)


def test_min_frequency_and_max_token_length():
    counts = {"ab": 1, "cd": 3}
    with pytest.warns(UserWarning, match="no pairs are left"):
        assert learn_wordpiece(counts, 10, special_tokens=(), min_frequency=2) == ["##b", "##d", "a", "c", "cd"]
    with pytest.warns(UserWarning, match="no pairs are left"):
        vocabulary = learn_wordpiece({"abc": 4}, 10, special_tokens=(), max_token_length=2)
    assert vocabulary == ["##b", "##c", "a", "ab"]  # "abc" would cover 3 characters


def test_stops_short_with_a_warning():
    with pytest.warns(UserWarning, match="Stopped at 5 tokens, short of vocab_size=9"):
        assert learn_wordpiece({"ab": 2}, 9, special_tokens=("[UNK]", "[PAD]")) == ["[UNK]", "[PAD]", "##b", "a", "ab"]


def test_vocab_size_below_the_minimum():
    with pytest.raises(ValueError, match="at least 9 for this corpus"):
        train_wordpiece(HUG_COUNTS, 8, special_tokens=("[UNK]", "[PAD]"), show_progress=False)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"vocab_size": 0}, "vocab_size"),
        ({"min_frequency": 0}, "min_frequency"),
        ({"max_token_length": 0}, "max_token_length"),
        ({"algorithm": "bpe"}, "algorithm"),
        ({"special_tokens": "[UNK]"}, "special_tokens"),
        ({"special_tokens": ["[UNK]", ""]}, "special_tokens. must be a sequence of non-empty str"),
    ],
)
def test_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        train_wordpiece(HUG_COUNTS, **{"vocab_size": 100, "show_progress": False, **arguments})


def test_corpus_forms_count_the_same_words(tmp_path):
    lines = ["The quick brown fox.", "", "  Unaffable  caf\u00e9, fox!", "\u4e2d\u6587 text"]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    from_list = count_words(lines)
    assert from_list == {
        "the": 1,
        "quick": 1,
        "brown": 1,
        "fox": 2,
        ".": 1,
        "unaffable": 1,
        "cafe": 1,
        ",": 1,
        "!": 1,
        "\u4e2d": 1,
        "\u6587": 1,
        "text": 1,
    }
    assert list(from_list) == list(count_words(files=[path]))  # same first-occurrence order
    assert count_words(files=[path]) == from_list
    assert count_words(tf.data.Dataset.from_tensor_slices(lines)) == from_list
    assert count_words(tf.data.Dataset.from_tensor_slices(lines).batch(3)) == from_list
    assert count_words(iter(lines)) == from_list
    assert count_words({"Already": 2, "split": 1}) == {"Already": 2, "split": 1}  # used as given


def test_training_words_are_the_layer_words():
    text = ["\u0130stanbul \u03a3\u039f\u03a6\u039f\u03a3. Caf\u00e9\u00ad! a\x0bb \u4e2d\u6587"]
    layer_words = [w.decode() for w in BertNormalizer().words(tf.constant(text))[0].numpy()]
    assert list(count_words(text)) == list(dict.fromkeys(layer_words))


def test_invalid_utf8_lines_are_reported_once(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"good line\nbad \xff line\nanother \xc3 one\n")
    with pytest.warns(UserWarning, match="2 lines were not valid UTF-8") as record:
        counts = count_words(files=[path])
    assert len(record) == 1
    assert counts == {"good": 1, "line": 2, "bad": 1, "another": 1, "one": 1}


def test_empty_corpus_and_unreadable_file(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text(" \n\t\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no words"):
        train_wordpiece(files=[empty], show_progress=False)
    with pytest.raises(ValueError, match="no words"):
        train_wordpiece([], show_progress=False)
    with pytest.raises(ValueError, match="missing.txt"):
        train_wordpiece(files=[tmp_path / "missing.txt"], show_progress=False)
    with pytest.raises(ValueError, match="exactly one"):
        train_wordpiece(["a"], files=[empty], show_progress=False)
    with pytest.raises(ValueError, match="not a single string"):
        train_wordpiece("just one string", show_progress=False)


small_corpora = st.dictionaries(
    st.text(alphabet="abc", min_size=1, max_size=7), st.integers(min_value=1, max_value=6), min_size=1, max_size=8
)


@given(counts=small_corpora, algorithm=st.sampled_from(["score", "likelihood"]))
@pytest.mark.parametrize("few", [merges_lib._FEW, 0], ids=["as-is", "array-path"])
def test_random_corpora_match_the_textbook_algorithm(counts, algorithm, few):
    """Tiny alphabets force ties, runs (a, a, a) and parts that only occur together: the cases where an
    incremental ranking can go wrong. `few=0`: every merge takes the array path of `merges`."""
    expected = textbook_wordpiece(counts, 10_000, algorithm=algorithm)
    with warnings.catch_warnings(), mock.patch.object(merges_lib, "_FEW", few):
        warnings.simplefilter("ignore")
        got = learn_wordpiece(counts, 10_000, special_tokens=(), algorithm=algorithm)
    assert got == expected


@given(counts=small_corpora, min_frequency=st.integers(1, 4), max_token_length=st.integers(2, 4))
def test_random_corpora_with_limits(counts, min_frequency, max_token_length):
    # The textbook loop with the two filters applied to the candidate pairs.
    splits = {word: [word[0]] + ["##" + c for c in word[1:]] for word in counts}
    vocabulary = sorted({piece for pieces in splits.values() for piece in pieces})
    while True:
        symbols, pairs = {}, {}
        for word, pieces in splits.items():
            for piece in pieces:
                symbols[piece] = symbols.get(piece, 0) + counts[word]
            for pair in zip(pieces, pieces[1:]):
                pairs[pair] = pairs.get(pair, 0) + counts[word]
        width = lambda piece: len(piece) - (2 if piece.startswith("##") else 0)  # noqa: E731
        best, best_value = None, None
        for pair, count in pairs.items():
            if count < min_frequency or width(pair[0]) + width(pair[1]) > max_token_length:
                continue
            value = Fraction(count, symbols[pair[0]] * symbols[pair[1]])
            if best_value is None or value > best_value:
                best, best_value = pair, value
        if best is None:
            break
        merged = best[0] + best[1][2:]
        splits = {word: apply_merge(pieces, best, merged) for word, pieces in splits.items()}
        if merged not in vocabulary:
            vocabulary.append(merged)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = learn_wordpiece(
            counts, 10_000, special_tokens=(), min_frequency=min_frequency, max_token_length=max_token_length
        )
    assert got == vocabulary


@given(
    lines=st.lists(st.binary(max_size=30).filter(lambda b: b"\n" not in b and b"\r" not in b), min_size=1, max_size=20)
)
def test_invalid_lines_are_the_ones_python_cannot_decode(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("lines") / "corpus.txt"
    path.write_bytes(b"".join(line + b"\n" for line in lines) + b"word\n")
    expected = 0
    for line in lines:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            expected += 1
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        count_words(files=[path])
    reported = [str(w.message) for w in record if "not valid UTF-8" in str(w.message)]
    assert reported == (
        [f"{expected} lines were not valid UTF-8 and were read with replacement characters."] if expected else []
    )
