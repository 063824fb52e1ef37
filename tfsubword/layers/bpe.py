"""`BPELayer`: byte-pair encoding in the graph, with Hugging Face `tokenizers`' exact merge order.

Text is cut into words by GPT-2's pre-tokenizer (`text.byte_level`), each distinct word is merged by
`segment.bpe` (or looked up whole), and the words read their tokens back (`words`).
"""

import keras
import tensorflow as tf

from tfsubword import checks, tables, words
from tfsubword import graph_ops as ops
from tfsubword.files import storage
from tfsubword.files import vocab as vocab_lib
from tfsubword.files.vocab import GPT2_SPECIAL_TOKENS
from tfsubword.layers.base import TokenizerLayer
from tfsubword.segment.bpe import BytePairEncoding
from tfsubword.text import byte_level as byte_level_lib

_VOCABULARY_ASSET = "vocab.json"
_MERGES_ASSET = "merges.json"


# What `adapt` passes on to `train_bpe`; the alphabet, tokens and size are the layer's.
_ADAPT_OPTIONS = ("full_alphabet", "min_frequency", "max_token_length", "max_sentences", "max_memory", "show_progress")


@keras.saving.register_keras_serializable(package="tfsubword")
class BPELayer(TokenizerLayer):
    """Tokenize text with byte-pair encoding, exactly as Hugging Face's `ByteLevelBPETokenizer` does.

    Text is cut into words by GPT-2's pre-tokenizer (or Llama-3's or Qwen2's, `pattern`), each word is
    written as bytes and the merges are applied in rank order. Only core TensorFlow ops run, so a
    model holding this layer serves wherever plain TensorFlow runs.

    Args:
        vocabulary: a list of tokens (id = position), a dict token -> id (ids 0..n-1), or the path of a
            `vocab.json` (or of a one-token-per-line file).
        merges: a list of `(left, right)` pairs (or `"left right"` strings) in rank order, or the path
            of a `merges.txt` (or of a `.json` list of pairs). Both tokens of a merge and their
            concatenation must be in the vocabulary. A pair listed twice keeps its last rank, as in
            Hugging Face.
        byte_level: bool. True (the default): words are bytes, written in GPT-2's byte alphabet
            (`Ġ` for a space). False: words are characters, and tokens are plain text.
        pattern: str or None. How text is cut into words before merging: one of
            `text.byte_level.PATTERN_NAMES`, the regular expressions of "gpt2" (the default),
            "llama3" (GPT-4's `cl100k_base`) or "qwen2", run as Hugging Face runs them; or None: each
            text is one word (SentencePiece-style BPE, as Llama-2's, where spaces are `▁` symbols).
        ignore_merges: bool. A word that is a token is that token, whatever the merges would make of
            it (Hugging Face's BPE option, set in Llama-3). Defaults to False.
        byte_fallback: bool. With `byte_level=False`, a character that is no token becomes the tokens
            of its UTF-8 bytes, `<0x00>` to `<0xFF>` (all must be in the vocabulary), as Llama-2's
            and Mistral's vocabularies do. Defaults to False.
        continuing_subword_prefix: str. Written before each symbol of a word but its first (Hugging
            Face's option of that name; a merge of `(a, prefix + b)` makes `a + b`). Defaults to "".
        end_of_word_suffix: str. Written after the last symbol of each word (`</w>` in CLIP's and
            Hugging Face's `CharBPETokenizer`'s vocabularies). Defaults to "".
        add_prefix_space: bool. Put a space before every text that does not start with one (an empty
            text stays empty), so that a text's first word is spelled as after a space, as Hugging
            Face's `ByteLevel(add_prefix_space=True)` does (RoBERTa). Defaults to False (GPT-2).
        unknown_token: str or None. What a byte (or character) that is not in the vocabulary becomes.
            None (the default, as Hugging Face's byte-level models): it is dropped. A vocabulary with
            every byte symbol (`train_bpe(..., full_alphabet=True)`) never drops anything.
        special_tokens: the tokens that stand for no text (`special_tokens` of the layer, with the
            unknown and padding tokens). None: GPT-2's `<|endoftext|>` if the vocabulary has it;
            others must be in it.
        dropout: float or None. BPE-dropout (Provilkov et al., 2020) when the layer is called with
            `training=True` (as `model.fit` calls it), as Hugging Face's `BPE(dropout=...)` samples:
            each merge that comes up is set aside with this probability, and comes back once a merge
            is not. Every word is merged on its own then, also with `ignore_merges`. None or 0 (the
            default): no sampling. Calls without `training`, `predict` and exported models merge as
            usual.
        seed: int or None. The seed of the sampled segmentations (`keras.random.SeedGenerator`).
        vocab_size: int or None. The number of tokens `adapt` learns. None: `train_bpe`'s 30,000.
        sequence_length: int or None. If set, outputs are dense, padded with `pad_token`'s id
            (0 when it is absent). Defaults to None (ragged).
        pad_token: str. Defaults to "<|endoftext|>", GPT-2's only special token.
        dtype: an integer dtype, or "string" for the tokens themselves. Defaults to "int32".

    Special tokens in the text are not recognized: text is always text. `tokenize_with_offsets` gives
    Hugging Face's offsets in UTF-8 bytes: a token spans the characters its bytes are part of.

    Examples:

    >>> layer = BPELayer(["a", "b", "Ġ", "ab", "Ġab"], [("a", "b"), ("Ġ", "ab")])
    >>> layer(["ab ab", "ba"]).to_list()
    [[3, 4], [1, 0]]
    """

    def __init__(
        self,
        vocabulary=None,
        merges=None,
        *,
        byte_level=True,
        pattern="gpt2",
        ignore_merges=False,
        byte_fallback=False,
        continuing_subword_prefix="",
        end_of_word_suffix="",
        add_prefix_space=False,
        unknown_token=None,
        special_tokens=None,
        dropout=None,
        seed=None,
        vocab_size=None,
        sequence_length=None,
        pad_token=GPT2_SPECIAL_TOKENS[0],
        dtype="int32",
        **kwargs,
    ):
        self.byte_level = checks.boolean("byte_level", byte_level)
        self.pattern = None if pattern is None else checks.choice("pattern", pattern, byte_level_lib.PATTERN_NAMES)
        self.ignore_merges = checks.boolean("ignore_merges", ignore_merges)
        self.byte_fallback = checks.boolean("byte_fallback", byte_fallback)
        if self.byte_fallback and self.byte_level:
            raise ValueError("`byte_fallback` is for character-level BPE: set `byte_level=False` with it.")
        self.continuing_subword_prefix = checks.string(
            "continuing_subword_prefix", continuing_subword_prefix, empty=True
        )
        self.end_of_word_suffix = checks.string("end_of_word_suffix", end_of_word_suffix, empty=True)
        if (self.continuing_subword_prefix or self.end_of_word_suffix) and (self.ignore_merges or self.byte_fallback):
            raise ValueError(
                "`continuing_subword_prefix` and `end_of_word_suffix` go with neither `ignore_merges` nor "
                "`byte_fallback`."
            )
        self.add_prefix_space = checks.boolean("add_prefix_space", add_prefix_space)
        self.unknown_token = checks.string("unknown_token", unknown_token, optional=True)
        self.given_special_tokens = None if special_tokens is None else checks.tokens("special_tokens", special_tokens)
        self.vocab_size = checks.integer("vocab_size", vocab_size, optional=True)
        self.dropout = checks.probability("dropout", dropout, optional=True)
        self._init_sampling(bool(self.dropout), seed)
        if (vocabulary is None) != (merges is None):
            raise ValueError("Pass both `vocabulary` and `merges`, or neither (to set them later).")
        self._pending_merges = merges
        super().__init__(vocabulary, sequence_length=sequence_length, pad_token=pad_token, dtype=dtype, **kwargs)

    # Vocabulary.

    def set_vocabulary(self, vocabulary, merges=None):
        """Replace the vocabulary and the merges, and rebuild the tables."""
        if merges is None:
            merges, self._pending_merges = self._pending_merges, None
        if merges is None:
            raise ValueError("BPELayer needs `merges` with its vocabulary.")
        self._merges = vocab_lib.read_merges(merges)
        super().set_vocabulary(vocabulary)

    def _adapt(self, corpus, options):
        from tfsubword.train import train_bpe

        self._check_adapt_options(options, _ADAPT_OPTIONS)
        unlike_the_trainer = {
            "pattern": self.pattern != "gpt2",
            "ignore_merges": self.ignore_merges,
            "byte_fallback": self.byte_fallback,
            "continuing_subword_prefix": bool(self.continuing_subword_prefix),
            "end_of_word_suffix": bool(self.end_of_word_suffix),
            "add_prefix_space": self.add_prefix_space,
        }
        changed = [name for name, differs in unlike_the_trainer.items() if differs]
        if changed:
            raise ValueError(
                f"`adapt` learns merges as `train_bpe` does (GPT-2's pattern, no prefixes, suffixes or byte "
                f"fallback): leave {', '.join(changed)} at the default."
            )
        special = list(GPT2_SPECIAL_TOKENS if self.given_special_tokens is None else self.given_special_tokens)
        if self.unknown_token is not None and self.unknown_token not in special:
            special.append(self.unknown_token)  # the layer needs it
        sizes = {} if self.vocab_size is None else {"vocab_size": self.vocab_size}
        vocabulary, merges = train_bpe(corpus, byte_level=self.byte_level, special_tokens=special, **sizes, **options)
        self.set_vocabulary(vocabulary, merges)

    def get_merges(self):
        """The merges, as a list of `(left, right)` pairs in rank order."""
        self._require_vocabulary()
        return list(self._merges)

    def _load_vocabulary(self, vocabulary):
        tokens = vocab_lib.as_token_list(vocabulary)
        present = set(tokens)
        if self.unknown_token is not None and self.unknown_token not in present:
            raise ValueError(f"The vocabulary does not contain the unknown token {self.unknown_token!r}.")
        for token in self.given_special_tokens or ():
            if token not in present:
                raise ValueError(
                    f"The vocabulary does not contain the special token {token!r} named in `special_tokens`."
                )
        return tokens

    def _build(self, tokens):
        unknown = self._token_ids[self.unknown_token] if self.unknown_token is not None else -1
        self._segmenter = BytePairEncoding(
            tokens,
            self._merges,
            self.byte_level,
            unknown,
            self.ignore_merges,
            self.byte_fallback,
            self.continuing_subword_prefix,
            self.end_of_word_suffix,
        )
        # Detokenizing writes each token's bytes (tokens outside the byte alphabet: their text).
        decoded = [
            data if data is not None else t.encode("utf-8") for data, t in zip(self._segmenter.token_bytes, tokens)
        ]
        self._token_ids_table = tables.hash_table(
            [t.encode("utf-8") for t in tokens], range(len(tokens)), -1, tf.string, tf.int64
        )
        self._token_bytes = tables.constant(decoded, tf.string)

    def _unknown_token_id(self):
        return None if self.unknown_token is None else self._token_ids[self.unknown_token]

    def _special_tokens(self):
        given = GPT2_SPECIAL_TOKENS if self.given_special_tokens is None else self.given_special_tokens
        candidates = (*given, self.unknown_token, self.pad_token)
        return [token for token in candidates if token is not None and token in self._token_ids]

    # Encoding.

    def _tokenize_strings(self, strings):
        return self.tokenize_words(self._words(strings)[0])

    def unit_cuts(self):
        """With no pre-tokenizer pattern: the `segment.bpe.Cuts` that cut each word into units, which
        this layer segments as words (see `tokenize_words`), or None (it segments each word whole)."""
        return self._segmenter.cuts if self.pattern is None else None

    def tokenize_words(self, split, seed=None):
        """The ids of words already cut as this layer's pre-tokenizer cuts them (valid UTF-8): a ragged
        `[n, (words)]` string tensor -> ragged `[n, (ids)]` ids, each text's words' ids in turn. With
        `seed` (int32 `[2]`), sampled as `training=True` samples (with no pattern: words not cut in units)."""
        if seed is not None:
            ids, splits = self._segmenter.sample(split.flat_values, self.dropout, seed)
            return tf.RaggedTensor.from_row_splits(ids, ops.take(splits, split.row_splits), validate=False)
        ids, splits = words.encode(
            split.flat_values, split.row_splits, self._segmenter.segment, self._segmenter.whole_words
        )
        return tf.RaggedTensor.from_row_splits(ids, splits, validate=False)

    def _sample(self, strings, seed):
        """Every word drawn on its own; with no pre-tokenizer pattern, each text is one word (units
        cut for `segment` would not draw as the whole text does)."""
        return self.tokenize_words(self._words(strings, cut=False)[0], seed)

    def _sample_with_offsets(self, strings, seed):
        return self._tokenize_strings_with_offsets(strings, seed)

    def _tokenize_strings_with_offsets(self, strings, seed=None):
        """Byte offsets as Hugging Face's character offsets are, in UTF-8 bytes: a token spans the
        characters that its bytes are part of (two tokens that split a character both span it); the
        space `add_prefix_space` puts in front spans the text's first character; the U+FFFD that
        stands for an invalid UTF-8 sequence spans its bytes. With `seed`, of a sampled segmentation."""
        split, prefixed = self._words(strings, cut=seed is None)
        lengths = tf.cast(tf.strings.length(split.flat_values, unit="UTF8_CHAR"), tf.int64)
        from_first = tf.cumsum(lengths, exclusive=True)
        word_starts = from_first - ops.take(from_first, ops.take(split.row_splits, split.value_rowids()))
        if seed is None:
            ids, starts, ends, splits = words.encode(
                split.flat_values,
                split.row_splits,
                self._segmenter.segment_spans,
                self._segmenter.whole_words,
                word_starts,
                span_unit="UTF8_CHAR",
            )
        else:
            spans, word_splits = self._segmenter.sample_spans(split.flat_values, self.dropout, seed)
            shift = ops.take(word_starts, ops.row_ids(word_splits))
            ids, starts, ends = spans[:, 0], spans[:, 1] + shift, spans[:, 2] + shift
            splits = ops.take(word_splits, split.row_splits)
        if prefixed is not None:  # the space put in front stands for the first character
            moved = ops.take(prefixed, ops.row_ids(splits))
            starts = tf.where(moved, tf.maximum(starts - 1, 0), starts)
            ends = tf.where(moved, tf.maximum(ends - 1, 1), ends)
        # Characters -> bytes of the original strings (one U+FFFD per invalid sequence, as the words have).
        _, char_starts, char_splits = ops.decode_utf8_with_offsets(strings)
        rows = ops.row_ids(splits)
        line_chars = ops.take(char_splits[1:] - char_splits[:-1], rows)
        line_bytes = ops.take(tf.cast(tf.strings.length(strings), tf.int64), rows)
        table = tf.concat([char_starts, [0]], axis=0)
        first_char = ops.take(char_splits, rows)

        def to_bytes(characters):
            inside = characters < line_chars
            return tf.where(inside, ops.take(table, tf.where(inside, first_char + characters, 0)), line_bytes)

        ragged = (ids, to_bytes(starts), to_bytes(ends))
        return tuple(tf.RaggedTensor.from_row_splits(t, splits, validate=False) for t in ragged)

    def _words(self, strings, cut=True):
        """`[n]` strings -> their words (ragged `[n, (words)]`) and, with `add_prefix_space`, whether
        each was given a space in front (else None). With no pattern, each text is one word, in units
        that merge alone (`unit_cuts`) unless not `cut`."""
        prefixed = None
        if self.add_prefix_space:
            prefixed = (tf.strings.length(strings) > 0) & (tf.strings.substr(strings, 0, 1) != " ")
            strings = tf.where(prefixed, tf.strings.join([" ", strings]), strings)
        if self.pattern is None:  # one word, in units where no merge crosses when that is allowed
            if cut and self._segmenter.cuts is not None:
                return self._segmenter.units(strings), prefixed
            return tf.RaggedTensor.from_uniform_row_length(strings, 1), prefixed
        return byte_level_lib.split_words(strings, self.pattern), prefixed

    def _detokenize_tokens(self, tokens):
        """Tokens -> text: each token's bytes joined (byte-level symbols back to bytes), with invalid
        UTF-8 (a cut inside a character) replaced by U+FFFD, as Hugging Face's ByteLevel decoder."""
        ids = self._token_ids_table.lookup(tokens.flat_values)
        data = tf.gather(self._token_bytes, tf.maximum(ids, 0))
        data = tf.where(ids >= 0, data, tokens.flat_values)
        text = tf.strings.reduce_join(tokens.with_flat_values(data), axis=-1)
        return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)

    # Saving.

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "merges": None,
                "byte_level": self.byte_level,
                "pattern": self.pattern,
                "ignore_merges": self.ignore_merges,
                "byte_fallback": self.byte_fallback,
                "continuing_subword_prefix": self.continuing_subword_prefix,
                "end_of_word_suffix": self.end_of_word_suffix,
                "add_prefix_space": self.add_prefix_space,
                "unknown_token": self.unknown_token,
                "special_tokens": None if self.given_special_tokens is None else list(self.given_special_tokens),
                "dropout": self.dropout,
                "seed": self.seed,
                "vocab_size": self.vocab_size,
            }
        )
        return config

    def save_assets(self, dir_path):
        tokens = self._require_vocabulary()
        vocab_lib.write_vocab_json(tokens, storage.join(dir_path, _VOCABULARY_ASSET))
        vocab_lib.write_merges(self._merges, storage.join(dir_path, _MERGES_ASSET))

    def load_assets(self, dir_path):
        self.set_vocabulary(storage.join(dir_path, _VOCABULARY_ASSET), storage.join(dir_path, _MERGES_ASSET))
