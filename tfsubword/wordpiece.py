"""`WordPieceLayer`: BERT's tokenizer (basic tokenization + greedy WordPiece) in the graph, core ops only."""

import keras
import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword import matching
from tfsubword.layers import TokenizerLayer
from tfsubword.text import BertNormalizer


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
        vocabulary: list of str, or the path of a one-token-per-line file; ids are positions.
        lowercase: bool. Lowercase the text (Python's `str.lower()`). Defaults to True.
        strip_accents: bool or None. Remove accents (NFD, then drop nonspacing marks). None follows
            `lowercase`, as BERT does. Defaults to None.
        split_on_cjk: bool. Make each CJK ideograph a word of its own. Defaults to True.
        max_chars_per_word: int. Longer words become `unknown_token`. Defaults to 100, as in the
            released BERT checkpoints.
        unknown_token: str. The token for words that cannot be pieced together; it must be in the
            vocabulary. Defaults to "[UNK]".
        suffix_indicator: str. The prefix of continuation pieces. Defaults to "##".
        sequence_length: int or None. If set, the output is a dense `[..., sequence_length]` tensor,
            truncated or padded with the id of "[PAD]" (0 if absent). Defaults to None (ragged).
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
    """

    def __init__(
        self,
        vocabulary=None,
        *,
        lowercase=True,
        strip_accents=None,
        split_on_cjk=True,
        max_chars_per_word=100,
        unknown_token="[UNK]",
        suffix_indicator="##",
        sequence_length=None,
        dtype="int32",
        **kwargs,
    ):
        for name, value in (("lowercase", lowercase), ("split_on_cjk", split_on_cjk)):
            if not isinstance(value, bool):
                raise ValueError(f"`{name}` must be True or False. Received: {name}={value!r}.")
        if strip_accents is not None and not isinstance(strip_accents, bool):
            raise ValueError(f"`strip_accents` must be True, False or None. Received: strip_accents={strip_accents!r}.")
        if isinstance(max_chars_per_word, bool) or not isinstance(max_chars_per_word, int) or max_chars_per_word < 1:
            raise ValueError(
                f"`max_chars_per_word` must be a positive int. Received: max_chars_per_word={max_chars_per_word!r}."
            )
        if not isinstance(unknown_token, str) or not unknown_token:
            raise ValueError(f"`unknown_token` must be a non-empty str. Received: unknown_token={unknown_token!r}.")
        if not isinstance(suffix_indicator, str):
            raise ValueError(f"`suffix_indicator` must be a str. Received: suffix_indicator={suffix_indicator!r}.")
        self.lowercase = lowercase
        self.strip_accents = strip_accents
        self.split_on_cjk = split_on_cjk
        self.max_chars_per_word = max_chars_per_word
        self.unknown_token = unknown_token
        self.suffix_indicator = suffix_indicator
        super().__init__(vocabulary, sequence_length=sequence_length, dtype=dtype, **kwargs)

    def _validate_vocabulary(self, tokens):
        if self.unknown_token not in tokens:
            raise ValueError(
                f"The vocabulary does not contain the unknown token {self.unknown_token!r} "
                "(set `unknown_token` to a token that it contains)."
            )

    def _build(self, tokens):
        self._normalizer = BertNormalizer(self.lowercase, self.strip_accents, self.split_on_cjk)
        self._unknown_id = self._token_ids[self.unknown_token]
        self._trie = matching.Trie(tokens, range(len(tokens)))
        self._root = 0
        self._continuation_root = self._trie.node(self.suffix_indicator)
        # Coarse words that are normalized vocabulary words need neither normalization nor matching.
        whole_words = [
            (token, index)
            for index, token in enumerate(tokens)
            if len(token) <= self.max_chars_per_word and self._normalizer.is_normalized_word(token)
        ]
        # A table cannot be empty: " " stands in, as no word ever contains a space.
        whole_words = whole_words or [(" ", -1)]
        with tf.init_scope():
            self._whole_words = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant([token for token, _ in whole_words], tf.string),
                    tf.constant([index for _, index in whole_words], tf.int32),
                ),
                default_value=-1,
            )

    def _tokenize_strings(self, strings):
        words, line_splits = self._normalizer.coarse_split(strings)
        # Most coarse words are vocabulary words as they stand; only the rest are normalized and
        # matched, once per distinct word.
        whole_ids = self._whole_words.lookup(words)
        missed = whole_ids < 0
        distinct, distinct_index = tf.unique(tf.gather(words, ops.indices_where(missed)), out_idx=tf.int64)
        normalized = self._normalizer.normalize_words(distinct)
        word_splits, char_splits = normalized.nested_row_splits
        piece_ids, piece_splits = self._segment(normalized.flat_values, char_splits)
        values, splits = ops.substitute_rows(
            whole_ids, missed, distinct_index, piece_ids, tf.gather(piece_splits, word_splits)
        )
        return tf.RaggedTensor.from_row_splits(values, tf.gather(splits, line_splits), validate=False)

    def _tokenize_strings_with_offsets(self, strings):
        # The whole texts go through normalization, which also tells where each character came from.
        code_points, byte_starts, splits = ops.decode_utf8_with_offsets(strings)
        words, sources = self._normalizer.normalize_code_points(code_points, splits)
        word_splits, char_splits = words.nested_row_splits
        pieces, piece_splits = self._segment(words.flat_values, char_splits, spans=True)
        ids, first_char, end_char = tf.unstack(pieces, num=3, axis=1)
        # A character ends where the next one starts, or where its text ends.
        text_of_char = ops.row_ids(splits)
        last_of_text = tf.range(tf.size(code_points, out_type=tf.int64)) == tf.gather(splits[1:] - 1, text_of_char)
        text_lengths = tf.cast(tf.strings.length(strings), tf.int64)
        byte_ends = tf.where(
            last_of_text, tf.gather(text_lengths, text_of_char), tf.concat([byte_starts[1:], [0]], axis=0)
        )
        starts = tf.gather(byte_starts, tf.gather(sources, first_char))
        ends = tf.gather(byte_ends, tf.gather(sources, end_char - 1))
        text_splits = tf.gather(piece_splits, word_splits)
        return tuple(
            tf.RaggedTensor.from_row_splits(values, text_splits, validate=False) for values in (ids, starts, ends)
        )

    def _segment(self, code_points, splits, spans=False):
        """WordPiece ids of normalized words given as code points and row splits.

        Words that are vocabulary tokens are looked up whole; the rest go through the greedy
        longest-match-first walk. Returns the ids and their row splits (one row per word); with
        `spans`, `[pieces, 3]` rows of (id, first character, end character) in `code_points` instead.
        """
        words = tf.RaggedTensor.from_row_splits(code_points, splits, validate=False)
        whole_ids = self._whole_words.lookup(tf.strings.unicode_encode(words, "UTF-8"))
        missed = whole_ids < 0
        misses = ops.indices_where(missed)
        missed_values, missed_splits = ops.gather_rows(code_points, splits, misses)
        pieces, piece_splits = self._match_pieces(missed_values, missed_splits, spans)
        if spans:
            # Pieces of the missed words were placed relative to the gathered words: move them back.
            shift = tf.gather(splits, misses) - missed_splits[:-1]
            shift = tf.cast(tf.gather(shift, ops.row_ids(piece_splits)), tf.int32)
            pieces = pieces + tf.stack([tf.zeros_like(shift), shift, shift], axis=1)
            bounds = tf.cast(splits, tf.int32)
            whole_ids = tf.stack([whole_ids, bounds[:-1], bounds[1:]], axis=1)
        return ops.substitute_rows(whole_ids, missed, tf.range(tf.size(misses, out_type=tf.int64)), pieces, piece_splits)

    def _match_pieces(self, code_points, splits, spans=False):
        """Greedy longest-match-first WordPiece of words given as code points and row splits.

        Returns the ids of the pieces and their row splits (one row per word); with `spans`, rows of
        (id, first character, end character) instead of ids. An unknown word's span is the word.
        """
        size = tf.size(code_points)
        rows = ops.row_ids(splits)
        word_bounds = tf.cast(splits, tf.int32)
        starts = tf.gather(word_bounds, rows)
        limits = tf.gather(word_bounds[1:], rows)
        first = tf.range(size) == starts
        start_nodes = tf.where(first, self._root, self._continuation_root)
        start_nodes = tf.where(limits - starts > self.max_chars_per_word, -1, start_nodes)
        ends, ids = self._trie.longest_matches(code_points, start_nodes, limits)

        jumps = tf.where(ends < 0, size + 1, tf.where(ends >= limits, size, ends))
        on_path = matching.greedy_path(jumps, first, self.max_chars_per_word)
        n_words = tf.size(splits) - 1
        failed_words = tf.math.unsorted_segment_max(tf.cast(on_path & (ends < 0), tf.int32), rows, n_words)
        failed = tf.gather(failed_words, rows) > 0
        kept = ops.indices_where(tf.where(failed, first, on_path))
        ids = tf.gather(tf.where(failed, self._unknown_id, ids), kept)
        if spans:
            piece_ends = tf.gather(tf.where(failed, limits, ends), kept)
            ids = tf.stack([ids, tf.cast(kept, tf.int32), piece_ends], axis=1)
        return ids, ops.splits_from_row_ids(tf.gather(rows, kept), tf.cast(n_words, tf.int64))

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
                "max_chars_per_word": self.max_chars_per_word,
                "unknown_token": self.unknown_token,
                "suffix_indicator": self.suffix_indicator,
            }
        )
        return config
