"""`WordPieceLayer`: BERT's tokenizer (basic tokenization + greedy WordPiece) in the graph, core ops only."""

import keras
import tensorflow as tf

from tfsubword import checks, words
from tfsubword import graph_ops as ops
from tfsubword.files.vocab import BERT_SPECIAL_TOKENS
from tfsubword.layers.base import TokenizerLayer
from tfsubword.segment.wordpiece import WordPiece
from tfsubword.text.bert import BertNormalizer

# Batches of at most this many bytes are normalized and pieced as whole texts: finding the distinct
# coarse words of a few dozen short lines and looking those up first takes more ops than it saves.
_WHOLE_TEXTS_AT_MOST = 8192


# What `adapt` passes on to `train_wordpiece`; the normalization, tokens and size are the layer's.
_ADAPT_OPTIONS = (
    "min_frequency",
    "limit_alphabet",
    "max_token_length",
    "algorithm",
    "max_sentences",
    "max_memory",
    "show_progress",
)


@keras.saving.register_keras_serializable(package="tfsubword")
class WordPieceLayer(TokenizerLayer):
    """Tokenize text into WordPiece ids exactly as Google's BERT tokenizer does.

    Text is cleaned, split on whitespace and punctuation (and around CJK ideographs), optionally
    lowercased and stripped of accents (BERT's `BasicTokenizer`), then each word is split into the
    longest vocabulary pieces from the left, continuation pieces carrying `suffix_indicator`
    (`WordpieceTokenizer`). A word with any part not in the vocabulary, or longer than
    `max_chars_per_word` characters, becomes one `unknown_token`. Everything runs on core TensorFlow
    ops, so a model that contains this layer serves wherever plain TensorFlow runs.

    Args:
        vocabulary: list of str, or the path of a one-token-per-line file (or of a `vocab.json`);
            ids are positions.
        lowercase: bool. Lowercase the text (Python's `str.lower()`). Defaults to True.
        strip_accents: bool or None. Remove accents (NFD, then drop nonspacing marks). None follows
            `lowercase`, as BERT does. Defaults to None.
        split_on_cjk: bool. Make each CJK ideograph a word of its own. Defaults to True.
        final_sigma: bool. With `lowercase`, a capital sigma that ends a word becomes `ς`, as
            `str.lower()` does (BERT). False: every `Σ` becomes `σ`, as in Hugging Face's
            `BertNormalizer`. Defaults to True.
        max_chars_per_word: int. Longer words become `unknown_token`. Defaults to 100, as in the
            released BERT checkpoints.
        unknown_token: str. The token for words that cannot be pieced together; it must be in the
            vocabulary. Defaults to "[UNK]".
        suffix_indicator: str. The prefix of continuation pieces. Defaults to "##".
        special_tokens: the tokens that stand for no text (`special_tokens` of the layer, with the
            unknown and padding tokens). None: BERT's `[PAD] [UNK] [CLS] [SEP] [MASK]`, those the
            vocabulary has; others must be in it. As in BERT, they are not recognized in the text.
        vocab_size: int or None. The number of tokens `adapt` learns. None: `train_wordpiece`'s 30,000.
        dropout: float or None. MaxMatch-dropout (Hiraoka, 2022) when the layer is called with
            `training=True` (in `model.fit`): at each step of a word, the tokens that match are tried
            from the longest, each but a one-character token skipped with this probability, so each
            word gets a sampled segmentation. None or 0 (the default): none. Inference
            (`training=False`, `predict`, `evaluate`, exported models) is always the greedy segmentation.
        seed: int or None. The seed of the sampled segmentations (`keras.random.SeedGenerator`).
        jit_compile: bool. Walk the words that are no token with a loop compiled by XLA (part of
            core TensorFlow) when a batch has many of them: the same ids, faster on large batches.
            Servers must then run XLA (TensorFlow Serving: `--xla_cpu_compilation_enabled`).
            Defaults to False.
        sequence_length: int or None. If set, the output is a dense `[..., sequence_length]` tensor,
            truncated or padded with the id of `pad_token` (0 if absent). Defaults to None (ragged).
        pad_token: str. Defaults to "[PAD]".
        dtype: an integer dtype, or "string" to return tokens instead of ids. Defaults to "int32".

    Examples:

    >>> vocab = ["[PAD]", "[UNK]", "the", "qu", "##ick", "fox", "."]
    >>> layer = WordPieceLayer(vocab)
    >>> layer("The quick fox.").numpy()
    array([2, 3, 4, 5, 6], dtype=int32)
    >>> layer(["The quick fox.", "the fox"]).to_list()
    [[2, 3, 4, 5, 6], [2, 5]]
    >>> WordPieceLayer(vocab, sequence_length=4)(["the fox"]).numpy()
    array([[2, 5, 0, 0]], dtype=int32)
    >>> WordPieceLayer(vocab, dtype="string")("The quickest fox").numpy()
    array([b'the', b'[UNK]', b'fox'], dtype=object)
    >>> layer.detokenize([2, 3, 4, 5, 6]).numpy()
    b'the quick fox .'
    >>> layer.special_tokens, layer.special_token_ids
    (['[PAD]', '[UNK]'], [0, 1])
    """

    _samples_in_halves = True

    def __init__(
        self,
        vocabulary=None,
        *,
        lowercase=True,
        strip_accents=None,
        split_on_cjk=True,
        final_sigma=True,
        max_chars_per_word=100,
        unknown_token="[UNK]",
        suffix_indicator="##",
        special_tokens=None,
        vocab_size=None,
        dropout=None,
        seed=None,
        jit_compile=False,
        sequence_length=None,
        pad_token="[PAD]",
        dtype="int32",
        **kwargs,
    ):
        self.jit_compile = checks.boolean("jit_compile", jit_compile)
        self.lowercase = checks.boolean("lowercase", lowercase)
        self.strip_accents = checks.boolean("strip_accents", strip_accents, optional=True)
        self.split_on_cjk = checks.boolean("split_on_cjk", split_on_cjk)
        self.final_sigma = checks.boolean("final_sigma", final_sigma)
        self.max_chars_per_word = checks.integer("max_chars_per_word", max_chars_per_word)
        self.unknown_token = checks.string("unknown_token", unknown_token)
        self.suffix_indicator = checks.string("suffix_indicator", suffix_indicator, empty=True)
        self.given_special_tokens = None if special_tokens is None else checks.tokens("special_tokens", special_tokens)
        self.vocab_size = checks.integer("vocab_size", vocab_size, optional=True)
        self.dropout = checks.probability("dropout", dropout, optional=True)
        self._init_sampling(bool(self.dropout), seed)
        super().__init__(vocabulary, sequence_length=sequence_length, pad_token=pad_token, dtype=dtype, **kwargs)

    def _validate_vocabulary(self, tokens):
        present = set(tokens)
        if self.unknown_token not in present:
            raise ValueError(
                f"The vocabulary does not contain the unknown token {self.unknown_token!r} "
                "(set `unknown_token` to a token that it contains)."
            )
        for token in self.given_special_tokens or ():
            if token not in present:
                raise ValueError(
                    f"The vocabulary does not contain the special token {token!r} named in `special_tokens`."
                )

    def _build(self, tokens):
        self._normalizer = BertNormalizer(self.lowercase, self.strip_accents, self.split_on_cjk, self.final_sigma)
        # Coarse words that are normalized vocabulary words need neither normalization nor matching.
        whole_words = [
            (token, index)
            for index, token in enumerate(tokens)
            if len(token) <= self.max_chars_per_word and self._normalizer.is_normalized_word(token)
        ]
        self._segmenter = WordPiece(
            tokens,
            self._token_ids[self.unknown_token],
            self.suffix_indicator,
            self.max_chars_per_word,
            whole_words,
            self.jit_compile,
        )

    def _adapt(self, corpus, options):
        from tfsubword.train import train_wordpiece

        self._check_adapt_options(options, _ADAPT_OPTIONS)
        if not self.final_sigma:
            raise ValueError("`adapt` counts words with `final_sigma=True`, as `train_wordpiece` does: set it so.")
        special = list(BERT_SPECIAL_TOKENS if self.given_special_tokens is None else self.given_special_tokens)
        special += [] if self.unknown_token in special else [self.unknown_token]  # the layer needs it
        sizes = {} if self.vocab_size is None else {"vocab_size": self.vocab_size}
        tokens = train_wordpiece(
            corpus,
            lowercase=self.lowercase,
            strip_accents=self.strip_accents,
            split_on_cjk=self.split_on_cjk,
            special_tokens=special,
            suffix_indicator=self.suffix_indicator,
            **sizes,
            **options,
        )
        self.set_vocabulary(tokens)

    def _unknown_token_id(self):
        return self._token_ids[self.unknown_token]

    def _special_tokens(self):
        given = BERT_SPECIAL_TOKENS if self.given_special_tokens is None else self.given_special_tokens
        return [token for token in (*given, self.unknown_token, self.pad_token) if token in self._token_ids]

    def _tokenize_strings(self, strings):
        def by_distinct_words():
            return words.encode_texts(
                strings, self._normalizer.coarse_split, self._pieces_of_coarse_words, self._segmenter.whole_words
            )

        ids, splits = ops.rare_cond(
            tf.reduce_sum(tf.strings.length(strings)) <= _WHOLE_TEXTS_AT_MOST,
            lambda: self._pieces_of_coarse_words(strings),
            by_distinct_words,
        )
        return tf.RaggedTensor.from_row_splits(ids, splits, validate=False)

    def _tokenize_strings_with_offsets(self, strings):
        coarse, line_splits, word_starts = self._normalizer.coarse_split_with_offsets(strings)
        ids, starts, ends, splits = words.encode(
            coarse, line_splits, self._spans_of_coarse_words, self._segmenter.whole_words, word_starts
        )
        ids = tf.cast(ids, tf.int32)
        return tuple(tf.RaggedTensor.from_row_splits(t, splits, validate=False) for t in (ids, starts, ends))

    def _sample(self, strings, seed):
        # As `_tokenize_strings` does, the distinct coarse words that are tokens are their own
        # normalized word, and the others are normalized once each; then each occurrence of each of
        # their words is drawn on its own (`WordPiece.sample_occurrences`).
        coarse, occurrence, line_splits = words.split_distinct(strings, self._normalizer.coarse_split)
        missed = self._segmenter.whole_words.lookup(coarse) < 0
        token_values, token_splits = ops.decode_utf8(ops.take(coarse, ops.indices_where(~missed)))
        normalized = self._normalizer.normalize_words(ops.take(coarse, ops.indices_where(missed)))
        word_splits, char_splits = normalized.nested_row_splits
        # Words: the tokens', then the normalized ones; each coarse word's words among them.
        n_tokens = tf.size(token_splits, out_type=tf.int64) - 1
        values = tf.concat([token_values, normalized.flat_values], axis=0)
        char_splits = tf.concat([token_splits, token_splits[-1] + char_splits[1:]], axis=0)
        normalized_words = n_tokens + tf.range(word_splits[-1])
        token_word = tf.cumsum(tf.cast(~missed, tf.int64), exclusive=True)
        word, word_splits = ops.substitute_rows(token_word, missed, normalized_words, word_splits)
        word, occurrence_splits = ops.gather_rows(word, word_splits, occurrence)
        ids, piece_splits = self._segmenter.sample_occurrences(values, char_splits, word, self.dropout, seed)
        piece_splits = ops.take(ops.take(piece_splits, occurrence_splits), line_splits)
        return tf.RaggedTensor.from_row_splits(ids, piece_splits, validate=False)

    def _sample_with_offsets(self, strings, seed):
        sample = lambda *words: self._segmenter.sample(*words, self.dropout, seed, spans=True)  # noqa: E731
        pieces, splits = self._spans_of_coarse_words(strings, sample)
        return tuple(
            tf.RaggedTensor.from_row_splits(t, splits, validate=False)
            for t in (tf.cast(pieces[:, 0], tf.int32), pieces[:, 1], pieces[:, 2])
        )

    def _pieces_of_coarse_words(self, coarse):
        """`[k]` coarse words -> their pieces (ids int32, row splits int64), one row per coarse word.
        Whole texts are coarse words too: normalization does all the splitting."""
        normalized = self._normalizer.normalize_words(coarse)
        word_splits, char_splits = normalized.nested_row_splits
        ids, piece_splits = self._segmenter.segment(normalized.flat_values, char_splits)
        return ids, ops.take(piece_splits, word_splits)

    def _spans_of_coarse_words(self, coarse, segment=None):
        """`_pieces_of_coarse_words` as int64 rows of (id, first byte, end byte) within each coarse word:
        through lowercasing, accent stripping and deleted characters, a piece spans from its first
        character's first byte to its last character's last byte. `segment`: the segmenter's
        `segment` with spans (by default), or another function of (code points, splits) like it."""
        code_points, byte_starts, splits = ops.decode_utf8_with_offsets(coarse)
        normalized, sources = self._normalizer.normalize_code_points(code_points, splits)
        word_splits, char_splits = normalized.nested_row_splits
        segment = segment or (lambda *words: self._segmenter.segment(*words, spans=True))
        pieces, piece_splits = segment(normalized.flat_values, char_splits)
        ids, first_char, end_char = tf.unstack(pieces, num=3, axis=1)
        # A character ends where the next one of its coarse word starts, or where the word ends.
        word_of_char = ops.row_ids(splits)
        last = tf.range(tf.size(code_points, out_type=tf.int64)) == ops.take(splits[1:] - 1, word_of_char)
        word_lengths = tf.cast(tf.strings.length(coarse), tf.int64)
        byte_ends = tf.where(last, ops.take(word_lengths, word_of_char), tf.concat([byte_starts[1:], [0]], axis=0))
        starts = ops.take(byte_starts, ops.take(sources, tf.cast(first_char, tf.int64)))
        ends = ops.take(byte_ends, ops.take(sources, tf.cast(end_char, tf.int64) - 1))
        return tf.stack([tf.cast(ids, tf.int64), starts, ends], axis=1), ops.take(piece_splits, word_splits)

    def _detokenize_tokens(self, tokens):
        """Join tokens with spaces, and continuation pieces to the piece before them without their prefix."""
        indicator_length = len(self.suffix_indicator.encode("utf-8"))
        flat = tokens.flat_values
        lengths = tf.strings.length(flat)
        continuation = (tf.strings.substr(flat, 0, indicator_length) == self.suffix_indicator) & (
            lengths > indicator_length
        )
        skipped = tf.where(continuation, indicator_length, 0)
        text = tf.strings.substr(flat, skipped, lengths - skipped)
        first = tf.range(tf.size(flat, out_type=tf.int64)) == tf.gather(tokens.row_starts(), tokens.value_rowids())
        text = tf.where(continuation | first, text, tf.strings.join([" ", text]))
        return tf.strings.reduce_join(tokens.with_flat_values(text), axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "lowercase": self.lowercase,
                "strip_accents": self.strip_accents,
                "split_on_cjk": self.split_on_cjk,
                "final_sigma": self.final_sigma,
                "max_chars_per_word": self.max_chars_per_word,
                "unknown_token": self.unknown_token,
                "suffix_indicator": self.suffix_indicator,
                "special_tokens": None if self.given_special_tokens is None else list(self.given_special_tokens),
                "vocab_size": self.vocab_size,
                "dropout": self.dropout,
                "seed": self.seed,
                "jit_compile": self.jit_compile,
            }
        )
        return config
