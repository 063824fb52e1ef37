"""Vocabulary trainers: pure functions over word counts, with corpus reading and counting at the edge.

Each `train_*` counts the words of a corpus with its layer's own pre-tokenizer (`counting`), learns a
vocabulary from the counts (`wordpiece`, `unigram`, `bpe`) and, given `output`, writes it where its layer
and the matching Hugging Face or SentencePiece tool read it.

One corpus, one vocabulary: the learners break ties between equal scores by the order of the words they
are given (the seeds' rule: the pair that occurs first), and each `train_*` gives them the words in one
order that depends on the counts alone, `files.counts.ordered` (most frequent first, then by code
point), as the learner sees them (after `limit_alphabet`, in BPE's byte alphabet). So the lines in any
order, in shards, a mapping in any order and counts files (`tfsubword count`, Apache Beam) all give
the same vocabulary; only sampling lines (`max_sentences`) depends on their order.
"""

import collections.abc

from tfsubword import checks
from tfsubword.files import counts as counts_lib
from tfsubword.files import storage, unigram_vocabulary
from tfsubword.files import vocab as vocab_lib
from tfsubword.files.vocab import BERT_SPECIAL_TOKENS, GPT2_SPECIAL_TOKENS
from tfsubword.progress import Progress
from tfsubword.text import normalization_rules
from tfsubword.train.wordpiece import ALGORITHMS, SCORE, learn_wordpiece, within_alphabet

DEFAULT_SPECIAL_TOKENS = BERT_SPECIAL_TOKENS


def _counts(corpus, files, counts, spec, show_progress, max_sentences=None, max_memory=None):
    """The word counts of exactly one of `corpus`, `files` (see `counting.count_words`, with the
    pre-tokenizer of `spec`, a `files.counts.pre_tokenizer`) and `counts` (counts files counted with
    that pre-tokenizer); TensorFlow loads only when there is text to count."""
    if sum(source is not None for source in (corpus, files, counts)) != 1:
        raise ValueError("Pass exactly one of `corpus`, `files` and `counts`.")
    checks.integer("max_sentences", max_sentences, optional=True)
    checks.integer("max_memory", max_memory, optional=True)
    counted = isinstance(corpus, collections.abc.Mapping) or counts is not None
    if counted and max_sentences is not None:
        raise ValueError("`max_sentences` samples lines of text: pass text (`corpus` or `files`), not word counts.")
    if isinstance(corpus, collections.abc.Mapping):
        return checked_counts(corpus)
    if counts is not None:
        counted_with, counts = counts_lib.read_counts(counts)
        if counted_with != spec:
            raise ValueError(
                f"The counts files were counted with the pre-tokenizer {counts_lib.describe(counted_with)}, "
                f"but this trainer counts with {counts_lib.describe(spec)}: count again with its options, "
                "or pass the same options to the trainer."
            )
        return counts
    from tfsubword.train import counting

    return counting.count_words(
        corpus,
        files=files,
        pretokenizer=counting.pre_tokenizer_of(spec),
        show_progress=show_progress,
        max_sentences=max_sentences,
        max_memory=max_memory,
    )


def checked_counts(mapping):
    """A mapping word -> count, checked: non-empty str words, non-negative int counts (zeros dropped)."""
    counts = {}
    for word, number in mapping.items():
        if not isinstance(word, str) or not word:
            raise ValueError(f"Word counts need non-empty str words. Received the key {word!r}.")
        if isinstance(number, bool) or not isinstance(number, int) or number < 0:
            raise ValueError(f"Word counts need non-negative int counts. Received {word!r}: {number!r}.")
        if number:
            counts[word] = number
    if not counts:
        raise ValueError("The word counts are empty: there is nothing to learn from.")
    return counts


def _check_merge_arguments(vocab_size, special_tokens, min_frequency, max_token_length):
    checks.integer("vocab_size", vocab_size)
    checks.integer("min_frequency", min_frequency)
    checks.integer("max_token_length", max_token_length, optional=True)
    return checks.tokens("special_tokens", special_tokens)


def train_wordpiece(
    corpus=None,
    vocab_size=30000,
    *,
    files=None,
    counts=None,
    max_sentences=None,
    max_memory=None,
    lowercase=True,
    strip_accents=None,
    split_on_cjk=True,
    special_tokens=BERT_SPECIAL_TOKENS,
    suffix_indicator="##",
    min_frequency=1,
    limit_alphabet=None,
    max_token_length=None,
    algorithm=SCORE,
    output=None,
    show_progress=True,
):
    """Learn a WordPiece vocabulary, returned as a list of tokens (id = position).

    Words are counted with `WordPieceLayer`'s own normalization (`lowercase`, `strip_accents`,
    `split_on_cjk`, as in the layer), then merged pair by pair (see `tfsubword.train.wordpiece`).

    Args:
        corpus: an iterable of texts, a `tf.data.Dataset` of strings, or a mapping word -> count that is
            already pre-tokenized (used as given, no normalization). Pass this, `files` or `counts`.
            The order of the texts or of the mapping does not matter (see the module's docstring).
        vocab_size: int. The number of tokens to return. Fewer come back, with a warning, when the corpus
            runs out of pairs (or, with `algorithm="likelihood"`, of merges that raise the likelihood).
        files: paths of UTF-8 text files (local or any file system TensorFlow reads), read lazily.
        counts: the path of a counts file (`tfsubword count`, `tfsubword.beam.CountWords`), or a list of
            them (shards, summed), counted with this trainer's pre-tokenizer options (checked).
        max_sentences: int or None. Learn from a uniform sample of this many lines of the text (the same
            sample on every run of the same lines in the same order: the one input whose order
            matters), as SentencePiece's `input_sentence_size`.
        max_memory: int or None. Bytes the word counts may take while counting (about the word's length
            plus 180 a distinct word); more stops with a `ValueError` instead of running out of memory.
        special_tokens: tokens placed first, in order. Defaults to BERT's five.
        suffix_indicator: str. The prefix of continuation pieces. Defaults to "##".
        min_frequency: int. Pairs that occur fewer times are never merged. Defaults to 1.
        limit_alphabet: int or None. Keep only this many characters, the most frequent (ties by code
            point); the others are left out of the words, as Hugging Face's trainer leaves them out.
        max_token_length: int or None. No token covering more characters (not counting
            `suffix_indicator`) is made.
        algorithm: "score" (merge the highest `freq(ab) / (freq(a) freq(b))`, exactly) or "likelihood"
            (merge the pair that most raises the unigram log-likelihood of the corpus).
        output: optional path: also write the vocabulary there, one token per line (atomically).
        show_progress: bool. Progress bars on standard error for counting and merging.

    Examples:

    >>> counts = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
    >>> train_wordpiece(counts, vocab_size=11, special_tokens=(), show_progress=False)
    ['##g', '##n', '##s', '##u', 'b', 'h', 'p', '##gs', 'pu', 'hu', 'bu']

    After `##gs`, every pair scores 1/36: the first in the trainers' order (`pun`, the most frequent
    word, first) is `(p, ##u)`. The seed that gives this example takes `(h, ##u)`, the first of its
    words in the order written (`tfsubword.train.wordpiece.learn_wordpiece` on those counts as given).
    """
    special_tokens = _check_merge_arguments(vocab_size, special_tokens, min_frequency, max_token_length)
    checks.string("suffix_indicator", suffix_indicator, empty=True)
    checks.choice("algorithm", algorithm, ALGORITHMS)
    checks.integer("limit_alphabet", limit_alphabet, optional=True)
    spec = counts_lib.pre_tokenizer(
        "wordpiece", lowercase=lowercase, strip_accents=strip_accents, split_on_cjk=split_on_cjk
    )
    counts = _counts(corpus, files, counts, spec, show_progress, max_sentences, max_memory)
    if limit_alphabet is not None:
        counts = within_alphabet(counts, limit_alphabet)
    with Progress("learning tokens", total=vocab_size, enabled=show_progress) as bar:
        vocabulary = learn_wordpiece(
            counts_lib.ordered(counts),  # ties go by this order (see the module's docstring)
            vocab_size,
            special_tokens=special_tokens,
            suffix_indicator=suffix_indicator,
            min_frequency=min_frequency,
            max_token_length=max_token_length,
            algorithm=algorithm,
            progress=bar.update,
        )
    if output is not None:
        vocab_lib.write_vocabulary(vocabulary, output)
    return vocabulary


def train_unigram(
    corpus=None,
    vocab_size=8000,
    *,
    files=None,
    counts=None,
    max_sentences=None,
    max_memory=None,
    normalization="nmt_nfkc",
    add_dummy_prefix=True,
    remove_extra_whitespaces=True,
    character_coverage=0.9995,
    max_token_length=16,
    split_by_script=True,
    min_frequency=1,
    seed_size=1_000_000,
    shrinking_factor=0.75,
    num_sub_iterations=2,
    output=None,
    show_progress=True,
):
    """Learn a unigram vocabulary, SentencePiece's way: `[(piece, log_probability), ...]` that also
    carries its normalizer, so that `UnigramLayer(vocabulary)` encodes as the `.model` file would.

    The first three pieces are `<unk>`, `<s>` and `</s>` (score 0), as SentencePiece's; the rest are best
    first. Words are counted with `UnigramLayer`'s own normalizer in the graph: the `normalization`
    rules rewrite the text (SentencePiece's default, `nmt_nfkc`, folds compatibility characters: "ﬁ" ->
    "fi", "①" -> "1", "Ａ" -> "A", and turns tabs and line breaks into spaces), whitespace runs
    collapse and `▁` marks each word's start (`add_dummy_prefix`). See `tfsubword.train.unigram` for the
    algorithm: seed substrings, EM with forward-backward, pruning by likelihood loss.

    Args:
        corpus: an iterable of texts, a `tf.data.Dataset` of strings, or a mapping word -> count whose
            words are already normalized and carry their `▁` marks; a word that ends a line may also be
            counted with a trailing space, as the counter does (SentencePiece's seeds depend on it).
            Pass this, `files` or `counts`.
        vocab_size: int. Pieces to return, the three meta pieces included. Fewer come back, with a
            warning, when the corpus does not have enough.
        files, counts, max_sentences, max_memory: as in `train_wordpiece`.
        normalization: "nmt_nfkc" (NFKC plus SentencePiece's whitespace and control-character rules),
            "nfkc" or "identity" (the text as it is). Defaults to "nmt_nfkc", as SentencePiece; the rules
            are built from Python's `unicodedata` (see `tfsubword.text.normalization_rules`).
        add_dummy_prefix, remove_extra_whitespaces: the normalizer's switches. Default True.
        character_coverage: the share of the text's characters that must be pieces; rarer characters
            become `<unk>`. Defaults to 0.9995, as SentencePiece.
        max_token_length: int. The longest piece, in characters. Defaults to 16.
        split_by_script: bool. Pieces never mix scripts (letters of one script, digits, punctuation).
        min_frequency: int. Substrings that occur fewer times are never pieces (characters aside).
            Defaults to 1.
        seed_size, shrinking_factor, num_sub_iterations: SentencePiece's training knobs.
        output: optional path: also write a SentencePiece `.model` file there (atomically), which
            `sentencepiece.SentencePieceProcessor` and `UnigramLayer` both load.
        show_progress: bool. Progress bars on standard error.
    """
    from tfsubword.train.unigram import learn_unigram

    checks.integer("vocab_size", vocab_size, minimum=len(unigram_vocabulary.META_PIECES) + 1)
    checks.integer("max_token_length", max_token_length)
    checks.integer("seed_size", seed_size)
    checks.integer("num_sub_iterations", num_sub_iterations)
    checks.integer("min_frequency", min_frequency)
    checks.fraction("character_coverage", character_coverage, 0, 1)
    checks.fraction("shrinking_factor", shrinking_factor, 0, 1, include_high=False)
    checks.choice("normalization", normalization, normalization_rules.NAMES)
    checks.boolean("add_dummy_prefix", add_dummy_prefix)
    checks.boolean("remove_extra_whitespaces", remove_extra_whitespaces)
    checks.boolean("split_by_script", split_by_script)
    spec = counts_lib.pre_tokenizer(
        "unigram",
        normalization=normalization,
        add_dummy_prefix=add_dummy_prefix,
        remove_extra_whitespaces=remove_extra_whitespaces,
    )
    # Float sums run in the order of the words: one order, whatever the corpus's (see the module's docstring).
    counts = counts_lib.ordered(_counts(corpus, files, counts, spec, show_progress, max_sentences, max_memory))
    with Progress("pruning pieces", total=None, enabled=show_progress, unit=" pieces left") as bar:
        pieces = learn_unigram(
            counts,
            vocab_size,
            max_piece_length=max_token_length,
            character_coverage=character_coverage,
            seed_size=seed_size,
            shrinking_factor=shrinking_factor,
            num_sub_iterations=num_sub_iterations,
            split_by_script=split_by_script,
            min_frequency=min_frequency,
            progress=lambda alive, desired: bar.update(alive),
            take_counts=True,  # made by `_counts`: no one else holds them
        )
    normalizer = unigram_vocabulary.normalizer(normalization, add_dummy_prefix, remove_extra_whitespaces)
    meta = [(piece, 0.0) for piece in unigram_vocabulary.META_PIECES]
    vocabulary = unigram_vocabulary.UnigramVocabulary(meta + pieces, normalizer)
    if output is not None:
        vocabulary.save(output)
    return vocabulary


def train_bpe(
    corpus=None,
    vocab_size=30000,
    *,
    files=None,
    counts=None,
    max_sentences=None,
    max_memory=None,
    byte_level=True,
    special_tokens=GPT2_SPECIAL_TOKENS,
    full_alphabet=False,
    min_frequency=1,
    max_token_length=None,
    output=None,
    show_progress=True,
):
    """Learn a byte-pair encoding: returns `(vocabulary, merges)`, a token list (id = position) and the
    `(left, right)` pairs in the order learned, for `BPELayer(vocabulary, merges)`.

    Words are counted with `BPELayer`'s own pre-tokenization in the graph (GPT-2's pattern), written in
    GPT-2's byte alphabet (`byte_level=True`: a space is `Ġ`) or kept as characters. Each step merges the
    most frequent pair; ties go to the pair that occurs first with the words in one order, most frequent
    first, then by code point in the byte alphabet (see the module's docstring and `tfsubword.train.bpe`).

    Args:
        corpus: an iterable of texts, a `tf.data.Dataset` of strings, or a mapping word -> count that is
            already pre-tokenized and already in the model's alphabet (used as given). Pass this, `files`
            or `counts`.
        vocab_size: int. Tokens to return. Fewer come back, with a warning, when no pair is left.
        files, counts, max_sentences, max_memory: as in `train_wordpiece`.
        byte_level: bool. Words as bytes in GPT-2's byte alphabet (default), or as characters.
        special_tokens: tokens placed first, in order. Defaults to GPT-2's `<|endoftext|>`.
        full_alphabet: bool. With `byte_level`, put all 256 byte symbols in the vocabulary, so that no
            byte of any text is ever out of it (by default only the symbols that occur are).
        min_frequency: int. Pairs that occur fewer times are never merged. Defaults to 1.
        max_token_length: int or None. No token of more symbols is made.
        output: optional folder: also write Hugging Face's `vocab.json` and `merges.txt` there
            (atomically), which `BPELayer` and `tokenizers.ByteLevelBPETokenizer` both load. Without
            `byte_level`, tokens may hold spaces, which `merges.txt` cannot: the merges go to
            `merges.json`, a list of pairs (as in Hugging Face's `tokenizer.json`).
        show_progress: bool. Progress bars on standard error for counting and merging.
    """
    from tfsubword.text import byte_level as byte_level_lib
    from tfsubword.train.bpe import learn_bpe

    special_tokens = _check_merge_arguments(vocab_size, special_tokens, min_frequency, max_token_length)
    checks.boolean("byte_level", byte_level)
    checks.boolean("full_alphabet", full_alphabet)
    spec = counts_lib.pre_tokenizer("bpe")
    counts = _counts(corpus, files, counts, spec, show_progress, max_sentences, max_memory)
    if not isinstance(corpus, collections.abc.Mapping):
        counts.pop("", None)  # the pre-tokenizer's empty words, where two cuts meet
        if not counts:
            raise ValueError("The corpus has no words: it is empty.")
        if byte_level:
            counts = {byte_level_lib.to_byte_level(word): count for word, count in counts.items()}
    alphabet = byte_level_lib.byte_to_char() if byte_level and full_alphabet else ()
    with Progress("learning tokens", total=vocab_size, enabled=show_progress) as bar:
        vocabulary, merges = learn_bpe(
            counts_lib.ordered(counts),  # ties go by this order (see the module's docstring)
            vocab_size,
            special_tokens=special_tokens,
            alphabet=alphabet,
            min_frequency=min_frequency,
            max_token_length=max_token_length,
            progress=bar.update,
        )
    if output is not None:
        storage.make_directory(output)
        vocab_lib.write_vocab_json(vocabulary, storage.join(output, "vocab.json"))
        vocab_lib.write_merges(merges, storage.join(output, "merges.txt" if byte_level else "merges.json"))
    return vocabulary, merges
