"""`BPELayer`: byte-pair encoding in the graph, with Hugging Face `tokenizers`' exact merge order.

Text is cut into words by GPT-2's pre-tokenizer (`byte_level.py`). Each word starts as its bytes (or,
with `byte_level=False`, its characters), and merges apply as Hugging Face's BPE model applies them:
repeatedly, the adjacent pair whose merge has the lowest rank, the leftmost such pair first, until no
pair of the word has a merge. In the graph that is one `tf.while_loop` over all the distinct words of
a batch at once, one merge per word per step; a word that is itself a token encoding to itself (most
frequent words) skips the loop through one table lookup.
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from tfsubword import byte_level as byte_level_lib
from tfsubword import vocab as vocab_lib
from tfsubword.layers import TokenizerLayer

_VOCABULARY_ASSET = "vocab.json"
_MERGES_ASSET = "merges.json"
MERGES_HEADER = "#version: 0.2"


def read_merges(merges):
    """A list of `(left, right)` pairs from a list of pairs (or `"left right"` strings) or the path of a
    `merges.txt` file (one `left right` pair per line; a first line starting with `#version` is skipped)."""
    if isinstance(merges, (str, os.PathLike)):
        if not os.path.isfile(merges):
            raise ValueError(f"`merges` must be a list of pairs or the path of a file. Received a path that is "
                             f"not a file: {os.fspath(merges)!r}.")
        if os.fspath(merges).endswith(".json"):
            try:
                with open(merges, "rb") as file:
                    return read_merges(json.loads(file.read().decode("utf-8")))
            except (UnicodeDecodeError, ValueError) as error:
                raise ValueError(f"Cannot read the merges {os.fspath(merges)!r}: {error}") from None
        lines = vocab_lib.read_vocabulary(merges)
        if lines and lines[0].startswith("#version"):
            lines = lines[1:]
        pairs = []
        for number, line in enumerate(lines, 1):
            parts = line.split(" ")
            if line == "" and number == len(lines):
                continue
            if len(parts) != 2 or not all(parts):
                raise ValueError(f"{os.fspath(merges)!r} line {number} is not two tokens separated by a space: {line!r}.")
            pairs.append((parts[0], parts[1]))
        return pairs
    try:
        items = list(merges)
    except TypeError:
        raise ValueError(f"`merges` must be a list of pairs or the path of a file. Received: {merges!r}.") from None
    pairs = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            item = item.split(" ")
        if not isinstance(item, (tuple, list)) or len(item) != 2 or not all(isinstance(s, str) and s for s in item):
            raise ValueError(f"`merges` entry {index} must be a pair of non-empty tokens. Received: {item!r}.")
        pairs.append((item[0], item[1]))
    return pairs


def write_merges(merges, path):
    """Write the merges atomically: a Hugging Face `merges.txt`, or a JSON list of pairs when `path` ends
    with `.json` (the form that can hold tokens with spaces, as character-level BPE makes)."""
    if os.fspath(path).endswith(".json"):
        data = json.dumps([list(pair) for pair in merges], ensure_ascii=False).encode("utf-8")
        vocab_lib.write_atomically(path, data)
        return
    lines = [MERGES_HEADER]
    for left, right in merges:
        if any(c in token for token in (left, right) for c in " \n\r"):
            raise ValueError(f"The merge {(left, right)!r} has a space or line break: merges.txt cannot hold it.")
        lines.append(f"{left} {right}")
    vocab_lib.write_atomically(path, ("\n".join(lines) + "\n").encode("utf-8"))


def write_vocab_json(tokens, path):
    """Write a Hugging Face `vocab.json` (token -> id), atomically."""
    data = json.dumps({token: index for index, token in enumerate(tokens)}, ensure_ascii=False)
    vocab_lib.write_atomically(path, data.encode("utf-8"))


def encode_word(symbols, ranks):
    """Reference BPE of one word (a list of symbol ids) with `ranks` (pair -> (rank, merged id)), in
    plain Python: the lowest-rank pair merges first, the leftmost among equals."""
    symbols = list(symbols)
    while len(symbols) > 1:
        best = None
        for position in range(len(symbols) - 1):
            found = ranks.get((symbols[position], symbols[position + 1]))
            if found is not None and (best is None or found[0] < best[0]):
                best = (found[0], position, found[1])
        if best is None:
            break
        _, position, merged = best
        symbols[position : position + 2] = [merged]
    return symbols


@keras.saving.register_keras_serializable(package="tfsubword")
class BPELayer(TokenizerLayer):
    """Tokenize text with byte-pair encoding, exactly as Hugging Face's `ByteLevelBPETokenizer` does.

    Text is split by GPT-2's pre-tokenizer (`add_prefix_space=False`), each word is written as bytes
    and the merges are applied in rank order. Only core TensorFlow ops run, so a model holding this
    layer serves wherever plain TensorFlow runs.

    Args:
        vocabulary: a list of tokens (id = position), a dict token -> id (ids 0..n-1), or the path of a
            `vocab.json` (or of a one-token-per-line file).
        merges: a list of `(left, right)` pairs (or `"left right"` strings) in rank order, or the path
            of a `merges.txt` (or of a `.json` list of pairs). Both tokens of a merge and their concatenation must be in the vocabulary.
            A pair listed twice keeps its last rank, as in Hugging Face.
        byte_level: bool. True (the default): words are bytes, written in GPT-2's byte alphabet
            (`Ġ` for a space). False: words are characters, and tokens are plain text.
        unknown_token: str or None. What a byte (or character) that is not in the vocabulary becomes.
            None (the default, as Hugging Face's byte-level models): it is dropped. A vocabulary with
            every byte symbol (`train_bpe(..., full_alphabet=True)`) never drops anything.
        sequence_length: int or None. If set, outputs are dense, padded with `pad_token`'s id
            (0 when it is absent). Defaults to None (ragged).
        pad_token: str. Defaults to "<|endoftext|>", GPT-2's only special token.
        dtype: an integer dtype, or "string" for the tokens themselves. Defaults to "int32".

    Special tokens in the text are not recognized: text is always text.

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
        unknown_token=None,
        sequence_length=None,
        pad_token="<|endoftext|>",
        dtype="int32",
        **kwargs,
    ):
        if not isinstance(byte_level, bool):
            raise ValueError(f"`byte_level` must be True or False. Received: byte_level={byte_level!r}.")
        if unknown_token is not None and (not isinstance(unknown_token, str) or not unknown_token):
            raise ValueError(f"`unknown_token` must be a non-empty str or None. Received: {unknown_token!r}.")
        if (vocabulary is None) != (merges is None):
            raise ValueError("Pass both `vocabulary` and `merges`, or neither (to set them later).")
        self.byte_level = byte_level
        self.unknown_token = unknown_token
        self._pad_token = pad_token
        self._pending_merges = merges
        super().__init__(vocabulary, sequence_length=sequence_length, dtype=dtype, **kwargs)

    # Vocabulary.

    def set_vocabulary(self, vocabulary, merges=None):
        """Replace the vocabulary and the merges, and rebuild the tables."""
        if merges is None:
            merges, self._pending_merges = self._pending_merges, None
        if merges is None:
            raise ValueError("BPELayer needs `merges` with its vocabulary.")
        self._merges = read_merges(merges)
        super().set_vocabulary(vocabulary)

    def get_merges(self):
        """The merges, as a list of `(left, right)` pairs in rank order."""
        self._require_vocabulary()
        return list(self._merges)

    def _load_vocabulary(self, vocabulary):
        if isinstance(vocabulary, (str, os.PathLike)) and os.fspath(vocabulary).endswith(".json"):
            try:
                with open(vocabulary, "rb") as file:
                    vocabulary = json.loads(file.read().decode("utf-8"))
            except (OSError, UnicodeDecodeError, ValueError) as error:
                raise ValueError(f"Cannot read the vocabulary {os.fspath(vocabulary)!r}: {error}.") from None
            if not isinstance(vocabulary, dict):
                raise ValueError("A vocab.json must hold an object mapping tokens to ids.")
        if isinstance(vocabulary, dict):
            ids = sorted(vocabulary.values()) if all(isinstance(i, int) for i in vocabulary.values()) else None
            if ids != list(range(len(vocabulary))):
                raise ValueError("A vocabulary dict must map its tokens to the ids 0..n-1, each once.")
            vocabulary = sorted(vocabulary, key=vocabulary.get)
        tokens = vocab_lib.as_token_list(vocabulary)
        if self.unknown_token is not None and self.unknown_token not in tokens:
            raise ValueError(f"The vocabulary does not contain the unknown token {self.unknown_token!r}.")
        return tokens

    def _build(self, tokens):
        ids = {token: index for index, token in enumerate(tokens)}
        size = len(tokens)
        ranks = {}
        for rank, (left, right) in enumerate(self._merges):
            for token in (left, right, left + right):
                if token not in ids:
                    raise ValueError(f"Merge {rank} {(left, right)!r} needs the token {token!r}, which is not in the vocabulary.")
            ranks[(ids[left], ids[right])] = (rank, ids[left + right])
        # Initial symbols: byte (or code point) -> id.
        if self.byte_level:
            symbol_of = [ids.get(char, -1) for char in byte_level_lib.byte_to_char()]
            initial = {byte: index for byte, index in enumerate(symbol_of) if index >= 0}
            token_bytes = [byte_level_lib.from_byte_level(token) for token in tokens]
        else:
            initial = {ord(token): index for token, index in ids.items() if len(token) == 1}
            token_bytes = [token.encode("utf-8") for token in tokens]
        unknown = ids[self.unknown_token] if self.unknown_token is not None else -1
        # Words that are tokens and encode to themselves skip the merge loop.
        whole_keys, whole_ids = [], []
        for index, data in enumerate(token_bytes):
            if not data:
                continue
            units = list(data) if self.byte_level else [ord(c) for c in tokens[index]]
            symbols = [initial.get(unit, unknown) for unit in units]
            if -1 not in symbols and encode_word(symbols, ranks) == [index]:
                whole_keys.append(data)
                whole_ids.append(index)
        # Detokenizing writes each token's bytes (tokens outside the byte alphabet: their text).
        decoded = [data if data is not None else token.encode("utf-8") for data, token in zip(token_bytes, tokens)]
        keys = np.array([left * size + right for left, right in ranks], np.int64)
        values = np.array([rank * size + merged for rank, merged in ranks.values()], np.int64)
        with tf.init_scope():
            self._merge_table = _static_table(keys, values, tf.int64)
            self._whole_words = _static_table(np.array(whole_keys, object), np.array(whole_ids, np.int64), tf.string)
            if self.byte_level:
                self._initial_table = None
                self._byte_ids = tf.constant([initial.get(b, unknown) for b in range(256)], tf.int64)
            else:
                code_points = np.array(sorted(initial), np.int64)
                self._initial_table = _static_table(code_points, np.array([initial[c] for c in code_points], np.int64), tf.int64)
            self._token_ids_table = _static_table(np.array([t.encode("utf-8") for t in tokens], object),
                                                  np.arange(size, dtype=np.int64), tf.string)
            self._token_bytes = tf.constant(decoded, tf.string)
        self._size = size
        self._unknown_id = unknown

    # Encoding.

    def _tokenize_strings(self, strings):
        words = byte_level_lib.split_words(strings)
        distinct, index = tf.unique(words.flat_values, out_idx=tf.int64)
        whole = self._whole_words.lookup(distinct)
        is_whole, is_empty = whole >= 0, tf.strings.length(distinct) == 0
        missed = tf.where(~is_whole & ~is_empty)[:, 0]
        merged = self._merge_words(tf.gather(distinct, missed))
        # The distinct words' tokens, rows in the order: whole words, merged words, empty words.
        hits = tf.where(is_whole)[:, 0]
        empty = tf.where(~is_whole & is_empty)[:, 0]
        order = tf.concat([hits, missed, empty], axis=0)
        rows = tf.concat(
            [
                tf.RaggedTensor.from_uniform_row_length(tf.gather(whole, hits), 1, validate=False),
                merged,
                tf.RaggedTensor.from_row_lengths(tf.zeros([0], tf.int64), tf.zeros_like(empty), validate=False),
            ],
            axis=0,
        )
        position = tf.math.invert_permutation(order)
        per_word = tf.gather(rows, tf.gather(position, index))
        line_splits = tf.gather(per_word.row_splits, words.row_splits)
        return tf.RaggedTensor.from_row_splits(tf.cast(per_word.flat_values, tf.int32), line_splits, validate=False)

    def _merge_words(self, words):
        """`[m]` non-empty words -> ragged `[m, (tokens)]` int64 ids."""
        if self.byte_level:
            units = tf.strings.unicode_decode(words, "ISO-8859-1")  # one code point per byte
            symbols = tf.gather(self._byte_ids, units.flat_values)
        else:
            units = tf.strings.unicode_decode(words, "UTF-8", errors="replace")
            symbols = self._initial_table.lookup(tf.cast(units.flat_values, tf.int64))
            if self._unknown_id >= 0:
                symbols = tf.where(symbols < 0, tf.constant(self._unknown_id, tf.int64), symbols)
        rows = units.value_rowids()
        known = symbols >= 0
        symbols, rows = tf.boolean_mask(symbols, known), tf.boolean_mask(rows, known)
        size = tf.constant(self._size, tf.int64)
        table = self._merge_table
        number_of_words = tf.shape(words, out_type=tf.int64)[0]

        def step(symbols, rows, _):
            count = tf.size(symbols, out_type=tf.int64)
            pairs = tf.maximum(count - 1, 0)
            same_word = rows[:-1] == rows[1:]
            found = table.lookup(symbols[:-1] * size + symbols[1:])
            found = tf.where(same_word, found, -1)
            mergeable = found >= 0
            # The leftmost pair of lowest rank in each word: minimize rank * count + position.
            key = tf.where(mergeable, (found // size) * count + tf.range(pairs), tf.int64.max)
            best = tf.math.unsorted_segment_min(key, rows[:-1], number_of_words)
            chosen = mergeable & (key == tf.gather(best, rows[:-1]))
            chosen_at = tf.concat([chosen, [False]], axis=0)
            merged = tf.where(chosen_at, tf.concat([found % size, [0]], axis=0), symbols)
            keep = ~tf.concat([[False], chosen], axis=0)
            return tf.boolean_mask(merged, keep), tf.boolean_mask(rows, keep), tf.reduce_any(chosen)

        symbols, rows, _ = tf.while_loop(
            lambda symbols, rows, going: going,
            step,
            (symbols, rows, tf.size(symbols) > 1),
            shape_invariants=(tf.TensorShape([None]), tf.TensorShape([None]), tf.TensorShape([])),
        )
        return tf.RaggedTensor.from_value_rowids(symbols, rows, nrows=number_of_words, validate=False)

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
                "unknown_token": self.unknown_token,
                "pad_token": self._pad_token,
            }
        )
        return config

    def save_assets(self, dir_path):
        tokens = self._require_vocabulary()
        write_vocab_json(tokens, os.path.join(dir_path, _VOCABULARY_ASSET))
        write_merges(self._merges, os.path.join(dir_path, _MERGES_ASSET))

    def load_assets(self, dir_path):
        self.set_vocabulary(os.path.join(dir_path, _VOCABULARY_ASSET), os.path.join(dir_path, _MERGES_ASSET))


def _static_table(keys, values, key_dtype):
    if len(keys) == 0:  # StaticHashTable needs one entry at least: a key no lookup can produce
        keys = np.array([b"\xff"], object) if key_dtype == tf.string else np.array([-1], np.int64)
        values = np.array([-1], np.int64)
    initializer = tf.lookup.KeyValueTensorInitializer(
        tf.constant(keys, key_dtype), tf.constant(values, tf.int64), key_dtype, tf.int64
    )
    return tf.lookup.StaticHashTable(initializer, default_value=-1)
