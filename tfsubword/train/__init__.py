"""Vocabulary trainers: pure functions over word counts, with corpus reading and counting at the edge."""

from tfsubword.progress import Progress
from tfsubword.train.wordpiece import LIKELIHOOD, SCORE, learn_wordpiece

DEFAULT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def train_wordpiece(
    corpus=None,
    vocab_size=30000,
    *,
    files=None,
    lowercase=True,
    strip_accents=None,
    split_on_cjk=True,
    special_tokens=DEFAULT_SPECIAL_TOKENS,
    suffix_indicator="##",
    min_frequency=1,
    max_token_length=None,
    algorithm="score",
    show_progress=True,
):
    """Learn a WordPiece vocabulary, returned as a list of tokens (id = position).

    Words are counted with `WordPieceLayer`'s own normalization (`lowercase`, `strip_accents`,
    `split_on_cjk`, as in the layer), then merged pair by pair (see `tfsubword.train.wordpiece`).

    Args:
        corpus: an iterable of texts, a `tf.data.Dataset` of strings, or a mapping word -> count that is
            already pre-tokenized (used as given, no normalization; its order is the first-occurrence
            order). Pass this or `files`.
        vocab_size: int. The number of tokens to return. Fewer come back, with a warning, when the corpus
            runs out of pairs (or, with `algorithm="likelihood"`, of merges that raise the likelihood).
        files: paths of UTF-8 text files, read lazily line by line.
        special_tokens: tokens placed first, in order.
        suffix_indicator: str. The prefix of continuation pieces. Defaults to "##".
        min_frequency: int. Pairs that occur fewer times are never merged. Defaults to 1.
        max_token_length: int or None. No token covering more characters (not counting
            `suffix_indicator`) is made.
        algorithm: "score" (merge the highest `freq(ab) / (freq(a) freq(b))`, exactly) or "likelihood"
            (merge the pair that most raises the unigram log-likelihood of the corpus).
        show_progress: bool. Progress bars on standard error for counting and merging.

    Examples:

    >>> counts = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
    >>> train_wordpiece(counts, vocab_size=11, special_tokens=(), show_progress=False)
    ['##g', '##n', '##s', '##u', 'b', 'h', 'p', '##gs', 'hu', 'hugs', 'hug']
    """
    _check_arguments(vocab_size, special_tokens, suffix_indicator, min_frequency, max_token_length, algorithm)
    from tfsubword.train.counting import count_words  # loads TensorFlow: only when there is text to count

    counts = count_words(
        corpus,
        files=files,
        lowercase=lowercase,
        strip_accents=strip_accents,
        split_on_cjk=split_on_cjk,
        show_progress=show_progress,
    )
    with Progress("learning tokens", total=vocab_size, enabled=show_progress) as bar:
        return learn_wordpiece(
            counts,
            vocab_size,
            special_tokens=tuple(special_tokens),
            suffix_indicator=suffix_indicator,
            min_frequency=min_frequency,
            max_token_length=max_token_length,
            algorithm=algorithm,
            progress=bar.update,
        )


def _check_arguments(vocab_size, special_tokens, suffix_indicator, min_frequency, max_token_length, algorithm):
    def positive_int(value):
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1

    if not positive_int(vocab_size):
        raise ValueError(f"`vocab_size` must be a positive int. Received: vocab_size={vocab_size!r}.")
    if not positive_int(min_frequency):
        raise ValueError(f"`min_frequency` must be a positive int. Received: min_frequency={min_frequency!r}.")
    if max_token_length is not None and not positive_int(max_token_length):
        raise ValueError(
            f"`max_token_length` must be a positive int or None. Received: max_token_length={max_token_length!r}."
        )
    if algorithm not in (SCORE, LIKELIHOOD):
        raise ValueError(f"`algorithm` must be 'score' or 'likelihood'. Received: algorithm={algorithm!r}.")
    if not isinstance(suffix_indicator, str):
        raise ValueError(f"`suffix_indicator` must be a str. Received: suffix_indicator={suffix_indicator!r}.")
    if isinstance(special_tokens, str):
        raise ValueError("`special_tokens` must be a sequence of tokens, not a single string.")
    for token in special_tokens:
        if not isinstance(token, str) or not token or "\n" in token or "\r" in token:
            raise ValueError(f"Special tokens must be non-empty str without line breaks. Received: {token!r}.")


def train_unigram(
    corpus=None,
    vocab_size=8000,
    *,
    files=None,
    model_file=None,
    character_coverage=0.9995,
    max_piece_length=16,
    normalization="nmt_nfkc",
    add_dummy_prefix=True,
    remove_extra_whitespaces=True,
    split_by_script=True,
    seed_size=1_000_000,
    shrinking_factor=0.75,
    num_sub_iterations=2,
    show_progress=True,
):
    """Learn a unigram vocabulary, SentencePiece's way, returned as `[(piece, log_probability), ...]`.

    The first three pieces are `<unk>`, `<s>` and `</s>` (score 0), as SentencePiece's; the rest are best
    first. Words are counted with `UnigramLayer`'s own normalizer in the graph: the `normalization`
    rules rewrite the text (SentencePiece's default, `nmt_nfkc`, folds compatibility characters: "ﬁ" ->
    "fi", "①" -> "1", "Ａ" -> "A", and turns tabs and line breaks into spaces), whitespace runs
    collapse and `▁` marks each word's start (`add_dummy_prefix`). The `.model` file carries the same
    rules. See `tfsubword.train.unigram` for the algorithm: seed substrings, EM with forward-backward,
    pruning by likelihood loss.

    Args:
        corpus: an iterable of texts, a `tf.data.Dataset` of strings, or a mapping word -> count whose
            words are already normalized and carry their `▁` marks; a word that ends a line may also be
            counted with a trailing space, as the counter does (SentencePiece's seeds depend on it).
            Pass this or `files`.
        vocab_size: int. Pieces to return, the three meta pieces included. Fewer come back, with a
            warning, when the corpus does not have enough.
        files: paths of UTF-8 text files, read lazily line by line.
        model_file: optional path: also write a SentencePiece `.model` file there (atomically), which
            `sentencepiece.SentencePieceProcessor` and `UnigramLayer` both load. It holds the
            normalization rules; give the returned list the same with
            `UnigramLayer(vocabulary, normalization=...)`.
        character_coverage: the share of the text's characters that must be pieces; rarer characters
            become `<unk>`. Defaults to 0.9995, as SentencePiece.
        max_piece_length: int. The longest piece, in characters. Defaults to 16.
        normalization: "nmt_nfkc" (NFKC plus SentencePiece's whitespace and control-character rules),
            "nfkc" or "identity" (the text as it is). Defaults to "nmt_nfkc", as SentencePiece; the rules
            are built from Python's `unicodedata` (see `tfsubword.normalization_rules`).
        add_dummy_prefix, remove_extra_whitespaces: the normalizer's switches. Default True.
        split_by_script: bool. Pieces never mix scripts (letters of one script, digits, punctuation).
        seed_size, shrinking_factor, num_sub_iterations: SentencePiece's training knobs.
        show_progress: bool. Progress bars on standard error.
    """
    import dataclasses

    from tfsubword import normalization_rules
    from tfsubword import sentencepiece_model as spm_model
    from tfsubword.train.unigram import META_PIECES, learn_unigram

    for name, value, low in (("vocab_size", vocab_size, len(META_PIECES) + 1), ("max_piece_length", max_piece_length, 1),
                             ("seed_size", seed_size, 1), ("num_sub_iterations", num_sub_iterations, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"`{name}` must be an int of at least {low}. Received: {name}={value!r}.")
    if not 0 < character_coverage <= 1:
        raise ValueError(f"`character_coverage` must be in (0, 1]. Received: {character_coverage!r}.")
    if not 0 < shrinking_factor < 1:
        raise ValueError(f"`shrinking_factor` must be in (0, 1). Received: {shrinking_factor!r}.")
    normalization_rules.check_name(normalization)
    normalizer = spm_model.Normalizer(
        name=normalization,
        charsmap=normalization_rules.charsmap(normalization),
        add_dummy_prefix=add_dummy_prefix,
        remove_extra_whitespaces=remove_extra_whitespaces,
    )
    from tfsubword.train.counting import count_words
    from tfsubword.unigram import word_counter

    counts = count_words(corpus, files=files, show_progress=show_progress, count_batch=word_counter(normalizer))
    with Progress("pruning pieces", total=None, enabled=show_progress, unit=" pieces left") as bar:
        pieces = learn_unigram(
            counts,
            vocab_size,
            max_piece_length=max_piece_length,
            character_coverage=character_coverage,
            seed_size=seed_size,
            shrinking_factor=shrinking_factor,
            num_sub_iterations=num_sub_iterations,
            split_by_script=split_by_script,
            progress=lambda alive, desired: bar.update(alive),
        )
    vocabulary = [(piece, 0.0) for piece in META_PIECES] + pieces
    if model_file is not None:
        kinds = [spm_model.UNKNOWN, spm_model.CONTROL, spm_model.CONTROL] + [spm_model.NORMAL] * len(pieces)
        normalizer = dataclasses.replace(
            normalizer, precompiled_charsmap=normalization_rules.precompiled_charsmap(normalization)
        )
        data = spm_model.serialize([(p, s, k) for (p, s), k in zip(vocabulary, kinds)], normalizer)
        from tfsubword.vocab import write_atomically

        write_atomically(model_file, data)
    return vocabulary


def train_bpe(
    corpus=None,
    vocab_size=30000,
    *,
    files=None,
    byte_level=True,
    special_tokens=("<|endoftext|>",),
    full_alphabet=False,
    min_frequency=1,
    max_token_length=None,
    output_dir=None,
    show_progress=True,
):
    """Learn a byte-pair encoding: returns `(vocabulary, merges)`, a token list (id = position) and the
    `(left, right)` pairs in the order learned, for `BPELayer(vocabulary, merges)`.

    Words are counted with `BPELayer`'s own pre-tokenization in the graph (GPT-2's pattern), written in
    GPT-2's byte alphabet (`byte_level=True`: a space is `Ġ`) or kept as characters. Each step merges the
    most frequent pair; ties go to the pair that occurs first in the corpus (see `tfsubword.train.bpe`).

    Args:
        corpus: an iterable of texts, a `tf.data.Dataset` of strings, or a mapping word -> count that is
            already pre-tokenized and already in the model's alphabet (used as given). Pass this or `files`.
        vocab_size: int. Tokens to return. Fewer come back, with a warning, when no pair is left.
        files: paths of UTF-8 text files, read lazily line by line.
        byte_level: bool. Words as bytes in GPT-2's byte alphabet (default), or as characters.
        special_tokens: tokens placed first, in order. Defaults to GPT-2's `<|endoftext|>`.
        full_alphabet: bool. With `byte_level`, put all 256 byte symbols in the vocabulary, so that no
            byte of any text is ever out of it (by default only the symbols that occur are).
        min_frequency: int. Pairs that occur fewer times are never merged. Defaults to 1.
        max_token_length: int or None. No token of more symbols is made.
        output_dir: optional folder: also write Hugging Face's `vocab.json` and `merges.txt` there
            (atomically), which `BPELayer` and `tokenizers.ByteLevelBPETokenizer` both load. Without
            `byte_level`, tokens may hold spaces, which `merges.txt` cannot: the merges go to
            `merges.json`, a list of pairs (as in Hugging Face's `tokenizer.json`).
        show_progress: bool. Progress bars on standard error for counting and merging.
    """
    import collections.abc

    from tfsubword.train.bpe import learn_bpe

    _check_arguments(vocab_size, special_tokens, "", min_frequency, max_token_length, SCORE)
    if not isinstance(byte_level, bool) or not isinstance(full_alphabet, bool):
        raise ValueError("`byte_level` and `full_alphabet` must be True or False.")
    from tfsubword import byte_level as byte_level_lib
    from tfsubword.train.counting import batch_counter, count_words

    counter = batch_counter(lambda lines: byte_level_lib.split_words(lines).flat_values)
    counts = count_words(corpus, files=files, show_progress=show_progress, count_batch=counter)
    if not isinstance(corpus, collections.abc.Mapping):
        counts.pop("", None)  # the pre-tokenizer's empty words, where two cuts meet
        if not counts:
            raise ValueError("The corpus has no words: it is empty.")
        if byte_level:
            counts = {byte_level_lib.to_byte_level(word): count for word, count in counts.items()}
    alphabet = byte_level_lib.byte_to_char() if byte_level and full_alphabet else ()
    with Progress("learning tokens", total=vocab_size, enabled=show_progress) as bar:
        vocabulary, merges = learn_bpe(
            counts,
            vocab_size,
            special_tokens=tuple(special_tokens),
            alphabet=alphabet,
            min_frequency=min_frequency,
            max_token_length=max_token_length,
            progress=bar.update,
        )
    if output_dir is not None:
        import os

        from tfsubword.bpe import write_merges, write_vocab_json

        os.makedirs(output_dir, exist_ok=True)
        write_vocab_json(vocabulary, os.path.join(output_dir, "vocab.json"))
        write_merges(merges, os.path.join(output_dir, "merges.txt" if byte_level else "merges.json"))
    return vocabulary, merges
