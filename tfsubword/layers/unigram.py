"""`UnigramLayer`: SentencePiece's unigram tokenizer (normalizer + Viterbi) in the graph, core ops only."""

import keras
import numpy as np
import tensorflow as tf

from tfsubword import checks, tables
from tfsubword import graph_ops as ops
from tfsubword.files import sentencepiece_model as spm_model
from tfsubword.files import storage, unigram_vocabulary
from tfsubword.layers.base import TokenizerLayer
from tfsubword.layers.unigram_offsets import PieceSpans
from tfsubword.segment import unknowns
from tfsubword.segment.sampling import MAX_NBEST_SIZE, LatticeSampler
from tfsubword.segment.sentencepiece_bpe import SentencePieceBPE
from tfsubword.segment.viterbi import Viterbi
from tfsubword.text import normalization_rules, sentencepiece
from tfsubword.text.sentencepiece import SentencePieceNormalizer

_MODEL_ASSET = "sentencepiece.model"
_UNKNOWN_PENALTY = np.float32(10.0)
_FLT_MAX = np.finfo(np.float32).max
_NOT_TEXT = (spm_model.CONTROL, spm_model.UNKNOWN, spm_model.BYTE)


# What `adapt` passes on to `train_unigram`; the normalizer and the size are the layer's.
_ADAPT_OPTIONS = (
    "character_coverage",
    "max_token_length",
    "split_by_script",
    "min_frequency",
    "seed_size",
    "shrinking_factor",
    "num_sub_iterations",
    "max_sentences",
    "max_memory",
    "show_progress",
)


@keras.saving.register_keras_serializable(package="tfsubword")
class UnigramLayer(TokenizerLayer):
    """Tokenize text with a unigram language model, exactly as SentencePiece does.

    The text is normalized (SentencePiece's normalizer: its character map, whitespace handling and
    `▁` marks), then split into the pieces of highest total log-probability (Viterbi). Everything runs
    on core TensorFlow ops, so a model that contains this layer serves wherever plain TensorFlow runs.

    Args:
        vocabulary: one of
            - the path or the bytes of a SentencePiece `.model` file of type unigram (its normalizer,
              piece types and scores are used as they are);
            - what `train_unigram` returns: its pieces, with the normalizer they were trained with;
            - a list of `(piece, log_probability)` pairs, or the path of a `piece<TAB>score` file (as
              SentencePiece's `.vocab` files), normalized by the `normalization` rules;
              `unknown_token` must be a piece, `control_tokens` are never produced from text.
        normalization: the character rules of a list vocabulary: "identity" (the text is not
            rewritten), "nmt_nfkc" or "nfkc" (see `tfsubword.text.normalization_rules`). None (the
            default): the vocabulary's own rules, "identity" for a list. A vocabulary that carries
            its rules refuses others.
        add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces: bool or None, the normalizer's
            switches. None (the default): the vocabulary's own, True for a list, as SentencePiece.
        unknown_token: str. The unknown piece of a list vocabulary. Defaults to "<unk>".
        control_tokens: the control pieces of a list vocabulary. Defaults to ("<s>", "</s>", "<pad>").
        vocab_size: int or None. The number of pieces `adapt` learns (`<unk>`, `<s>` and `</s>`
            included), with the normalizer the switches name (`normalization` None: "nmt_nfkc", as
            SentencePiece trains). None: `train_unigram`'s 8,000.
        alpha, nbest_size: subword regularization, as SentencePiece's `encode(..., enable_sampling=True)`
            samples: when the layer is called with `training=True` (in `model.fit`), each text gets a
            segmentation drawn with probability proportional to P(segmentation)^alpha, among all of
            them (`nbest_size=-1`) or among its `nbest_size` best (2 to 512); 0 or 1: no sampling.
            None and None (the default): no sampling; `alpha` alone samples among all (-1);
            `nbest_size` alone takes SentencePiece's `alpha=0.1`. Inference (`training=False`,
            `predict`, `evaluate`, exported models) always gives the best segmentation.
        seed: int or None. The seed of the sampled segmentations (`keras.random.SeedGenerator`).
        sequence_length: int or None. If set, outputs are dense, padded with the id of `pad_token`
            (0 if absent). Defaults to None (ragged).
        pad_token: str. Defaults to "<pad>".
        dtype: an integer dtype, or "string" to return pieces instead of ids. Defaults to "int32".

    Examples:

    >>> vocab = [("<unk>", 0.0), ("▁the", -1.0), ("▁", -2.0), ("t", -3.0), ("h", -3.0), ("e", -3.0)]
    >>> layer = UnigramLayer(vocab)
    >>> layer("the  het").numpy()
    array([1, 2, 4, 5, 3], dtype=int32)
    >>> layer.special_tokens, layer.unknown_token_id
    (['<unk>'], 0)
    """

    _MODEL_TYPES = ("unigram",)

    def __init__(
        self,
        vocabulary=None,
        *,
        normalization=None,
        add_dummy_prefix=None,
        remove_extra_whitespaces=None,
        escape_whitespaces=None,
        unknown_token=unigram_vocabulary.META_PIECES[0],
        control_tokens=(*unigram_vocabulary.META_PIECES[1:], "<pad>"),
        vocab_size=None,
        alpha=None,
        nbest_size=None,
        seed=None,
        sequence_length=None,
        pad_token="<pad>",
        dtype="int32",
        **kwargs,
    ):
        self.alpha, self.nbest_size = _sampling_arguments(alpha, nbest_size)
        self._init_sampling(self.nbest_size not in (None, 0, 1), seed)
        if normalization is not None:
            checks.choice("normalization", normalization, normalization_rules.NAMES)
        self.normalization = normalization
        self.add_dummy_prefix = checks.boolean("add_dummy_prefix", add_dummy_prefix, optional=True)
        self.remove_extra_whitespaces = checks.boolean(
            "remove_extra_whitespaces", remove_extra_whitespaces, optional=True
        )
        self.escape_whitespaces = checks.boolean("escape_whitespaces", escape_whitespaces, optional=True)
        self.unknown_token = checks.string("unknown_token", unknown_token)
        self.control_tokens = checks.tokens("control_tokens", control_tokens)
        self.vocab_size = checks.integer("vocab_size", vocab_size, optional=True)
        super().__init__(vocabulary, sequence_length=sequence_length, pad_token=pad_token, dtype=dtype, **kwargs)

    # Vocabulary.

    def _load_vocabulary(self, vocabulary):
        switches = {
            "add_dummy_prefix": self.add_dummy_prefix,
            "remove_extra_whitespaces": self.remove_extra_whitespaces,
            "escape_whitespaces": self.escape_whitespaces,
        }
        self._model = unigram_vocabulary.load(
            vocabulary,
            normalization=self.normalization,
            switches=switches,
            unknown_token=self.unknown_token,
            control_tokens=self.control_tokens,
            model_types=self._MODEL_TYPES,
        )
        return [piece for piece, _, _ in self._model.pieces]

    def _adapt(self, corpus, options):
        from tfsubword.train import train_unigram

        self._check_adapt_options(options, _ADAPT_OPTIONS)
        if self.escape_whitespaces is False or self.unknown_token != unigram_vocabulary.META_PIECES[0]:
            raise ValueError(
                "`adapt` learns pieces as `train_unigram` does, with `escape_whitespaces` and the unknown piece "
                f"{unigram_vocabulary.META_PIECES[0]!r}: leave both at their defaults."
            )
        switches = ("add_dummy_prefix", "remove_extra_whitespaces")
        chosen = {name: getattr(self, name) for name in switches if getattr(self, name) is not None}
        if self.normalization is not None:
            chosen["normalization"] = self.normalization
        if self.vocab_size is not None:
            chosen["vocab_size"] = self.vocab_size
        self.set_vocabulary(train_unigram(corpus, **chosen, **options))

    def get_scores(self):
        """The log-probability (score) of every piece, as a list of float; ids are positions."""
        self._require_vocabulary()
        return [score for _, score, _ in self._model.pieces]

    def serialized_model(self):
        """The vocabulary as the bytes of a SentencePiece `.model` file (its rules included)."""
        self._require_vocabulary()
        if not self._model.serialized:  # a list vocabulary's rules take seconds to encode: once, when asked
            self._model.serialized = unigram_vocabulary.serialize(self._model)
        return self._model.serialized

    def _build(self, pieces):
        model = self._model
        kinds = np.array([kind for _, _, kind in model.pieces])
        self._unknown_id = int(np.nonzero(kinds == spm_model.UNKNOWN)[0][0])
        # With byte fallback, an unknown character becomes the byte pieces of its UTF-8 instead.
        byte_ids = [pieces.index(spm_model.byte_piece(byte)) for byte in range(256)] if model.byte_fallback else None
        space = sentencepiece.SPACE_SYMBOL if model.normalizer.escape_whitespaces else " "
        self._sampler = None
        if model.model_type == "bpe":
            if self._samples() and (self.nbest_size != -1 or self.alpha > 1):
                raise ValueError(
                    "In a BPE model, `alpha` is the probability of skipping each merge (BPE-dropout, as "
                    f"SentencePiece samples): from 0 to 1, without `nbest_size`. Received: alpha={self.alpha}, "
                    f"nbest_size={self.nbest_size}."
                )
            self._segmenter = SentencePieceBPE(model.pieces, self._unknown_id, byte_ids)
        else:
            self._segmenter = self._viterbi(pieces, kinds, byte_ids, space)
            if self._samples():
                cuts = self._segmenter.cuts if self._segmenter.by_words else None
                self._sampler = LatticeSampler(
                    self._segmenter.lattice, self._path_scores, self.alpha, self.nbest_size, cuts
                )
        # For decoding: the kind of each piece that is not decoded as text.
        special = [(piece, kind) for piece, _, kind in model.pieces if kind in _NOT_TEXT]
        self._piece_kinds = tables.hash_table(
            [p for p, _ in special], [k for _, k in special], spm_model.NORMAL, tf.string, tf.int32
        )
        if model.byte_fallback:
            byte_names = [spm_model.byte_piece(b) for b in range(256)]
            self._bytes_of_pieces = tables.hash_table(
                byte_names, [bytes([b]) for b in range(256)], "", tf.string, tf.string
            )
        user_defined = [pieces[i] for i in np.nonzero(kinds == spm_model.USER_DEFINED)[0]]
        self._normalizer = SentencePieceNormalizer(model.normalizer, user_defined)
        # For offsets of words: which pieces start a word; the unknown piece does not if `▁` is a piece.
        matched = np.nonzero((kinds == spm_model.NORMAL) | (kinds == spm_model.USER_DEFINED))[0]
        self._starts_word = None
        if space in {pieces[i] for i in matched}:
            starts_word = np.zeros(len(pieces), bool)
            starts_word[matched] = [pieces[i].startswith(space) for i in matched]
            self._starts_word = tables.constant(starts_word, tf.bool)
        self._spans = PieceSpans(self._normalizer, self._segmenter, self._unknown_id, self._starts_word)

    def _viterbi(self, pieces, kinds, byte_ids, space):
        scores = np.array([score for _, score, _ in self._model.pieces], np.float32)
        normal = kinds == spm_model.NORMAL
        min_score = np.float32(min(_FLT_MAX, scores[normal].min())) if normal.any() else np.float32(_FLT_MAX)
        # The score of each piece on a path, as SentencePiece 0.2.3 gives it: a user-defined piece of
        # n UTF-8 bytes gets 0.1 * (n - 1) (single precision), unknown characters min_score - 10.
        path_scores = scores.copy()
        for index in np.nonzero(kinds == spm_model.USER_DEFINED)[0]:
            path_scores[index] = np.float32(0.1 * (len(pieces[index].encode("utf-8")) - 1))
        path_scores[self._unknown_id] = np.float32(min_score - _UNKNOWN_PENALTY)
        self._path_scores = path_scores
        matched = np.nonzero(normal | (kinds == spm_model.USER_DEFINED))[0]
        max_piece_chars = max([len(pieces[i]) for i in matched] + [1])
        # Words can be segmented one by one when no piece holds a space symbol after its start.
        by_words = not any(space in pieces[i][1:] for i in matched)
        # The normalized characters each piece covers; the unknown piece covers one, before merging.
        piece_chars = np.array([len(piece) for piece in pieces], np.int64)
        piece_chars[self._unknown_id] = 1
        return Viterbi(
            [pieces[i] for i in matched],
            matched,
            path_scores,
            self._unknown_id,
            max_piece_chars,
            piece_chars,
            byte_ids,
            ord(space) if by_words else None,
        )

    def _unknown_token_id(self):
        return self._unknown_id

    def _special_tokens(self):
        special = [piece for piece, _, kind in self._model.pieces if kind in (spm_model.CONTROL, spm_model.UNKNOWN)]
        return special + ([self.pad_token] if self.pad_token in self._token_ids else [])

    # Encoding.

    def _tokenize_strings(self, strings):
        normalizer = self._normalizer
        if normalizer.splits_words and self._segmenter.by_words:
            pool, occurrences, word_splits, word_lines = normalizer.word_pool(strings)
            ids, id_splits = self._segmenter.segment_words(pool, word_splits, word_lines, occurrences=occurrences)
        else:
            ids, id_splits = self._segmenter(*normalizer.normalize(strings))
        return tf.RaggedTensor.from_row_splits(ids, id_splits, validate=False)

    def _sample(self, strings, seed):
        viterbi, sampler = self._segmenter, self._sampler
        if sampler is None or not (self._normalizer.splits_words and viterbi.by_words and sampler.nbest_size < 0):
            ids, splits = self._sampled_segmenter(seed)(*self._normalizer.normalize(strings))
            return tf.RaggedTensor.from_row_splits(ids, splits, validate=False)
        # As `_tokenize_strings` goes: the distinct words of the lines, normalized once each (long
        # ones cut where no piece crosses), then each occurrence drawn on its own.
        pool, occurrences, word_splits, _ = self._normalizer.word_pool(strings)
        words = tf.strings.join([chr(viterbi.space), pool])
        parts, occurrences, line_splits = viterbi.pool_parts(words, occurrences, word_splits)
        ids, splits, code_points = sampler.draw_occurrences(
            *ops.ragged_in_halves(ops.decode_utf8, parts), occurrences, seed
        )
        splits = ops.take(splits, line_splits)
        ids, splits = unknowns.finish(
            ids, splits, code_points, viterbi.piece_chars, viterbi.lattice.unknown_id, viterbi.byte_ids
        )
        return tf.RaggedTensor.from_row_splits(ids, splits, validate=False)

    def _sampled_segmenter(self, seed):
        """The segmenter of `_tokenize_strings` (as `PieceSpans` calls one), drawing with `seed`."""
        segmenter = self._segmenter
        if self._sampler is None:  # a BPE model: SentencePiece's BPE-dropout, `alpha` the probability
            return _Sampled(lambda *texts, merge: segmenter.sample(*texts, self.alpha, seed, merge), segmenter)

        def draw(code_points, splits, merge):
            ids, splits = self._sampler(code_points, splits, seed)
            if not merge:
                return ids, splits
            unknown_id = segmenter.lattice.unknown_id
            return unknowns.finish(ids, splits, code_points, segmenter.piece_chars, unknown_id, segmenter.byte_ids)

        return _Sampled(draw, segmenter)

    def _sample_with_offsets(self, strings, seed):
        spans = PieceSpans(self._normalizer, self._sampled_segmenter(seed), self._unknown_id, None)
        ids, starts, ends, splits = spans.of_normalized(strings)
        return tuple(tf.RaggedTensor.from_row_splits(t, splits, validate=False) for t in (ids, starts, ends))

    def _tokenize_strings_with_offsets(self, strings):
        if self._normalizer.splits_words and self._segmenter.by_words:
            ids, starts, ends, splits = self._spans.of_words(strings)
        else:
            ids, starts, ends, splits = self._spans.of_normalized(strings)
        return tuple(tf.RaggedTensor.from_row_splits(t, splits, validate=False) for t in (ids, starts, ends))

    def _detokenize_tokens(self, tokens):
        """Pieces -> text as SentencePiece decodes it: control pieces vanish, the unknown piece is
        " \u2047 ", byte pieces are their bytes (those that form no valid UTF-8: one U+FFFD each),
        and `▁` is a space, except the first `▁` of the first piece that writes something (with
        `remove_extra_whitespaces`, also of the lone `▁` pieces before it)."""
        flat, rows = tokens.flat_values, tokens.value_rowids()
        spec = self._model.normalizer
        kind = self._piece_kinds.lookup(flat)
        normal = kind == spm_model.NORMAL
        index = tf.range(tf.size(flat, out_type=tf.int64))
        lone_space = normal & (flat == sentencepiece.SPACE_SYMBOL)
        skipped = kind == spm_model.CONTROL
        if spec.remove_extra_whitespaces:
            skipped |= lone_space
        first = ops.take(
            tf.math.unsorted_segment_min(
                tf.where(skipped, tf.size(flat, out_type=tf.int64), index), rows, tokens.nrows()
            ),
            rows,
        )
        starts_with_space = normal & tf.strings.regex_full_match(flat, sentencepiece.SPACE_SYMBOL + ".*")
        dropped = (
            starts_with_space & (index == first)
            if spec.add_dummy_prefix or spec.remove_extra_whitespaces
            else tf.zeros_like(normal)
        )
        if spec.remove_extra_whitespaces:
            dropped |= lone_space & (index < first)
        text = tf.where(dropped, tf.strings.regex_replace(flat, "^" + sentencepiece.SPACE_SYMBOL, ""), flat)
        text = tf.where(normal, tf.strings.regex_replace(text, sentencepiece.SPACE_SYMBOL, " "), text)
        text = tf.where(kind == spm_model.CONTROL, "", tf.where(kind == spm_model.UNKNOWN, " \u2047 ", text))
        if self._model.byte_fallback:
            text = tf.where(kind == spm_model.BYTE, self._bytes_of_pieces.lookup(flat), text)
        text = tf.strings.reduce_join(tokens.with_flat_values(text), axis=-1)
        if self._model.byte_fallback:
            code_points, starts, splits = ops.decode_utf8_with_offsets(text)
            code_points, _, splits, _ = sentencepiece.one_replacement_per_invalid_byte(
                text, code_points, starts, splits
            )
            text = ops.encode_utf8(code_points, splits)
        return text

    # Saving.

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "normalization": self.normalization,
                "add_dummy_prefix": self.add_dummy_prefix,
                "remove_extra_whitespaces": self.remove_extra_whitespaces,
                "escape_whitespaces": self.escape_whitespaces,
                "unknown_token": self.unknown_token,
                "control_tokens": list(self.control_tokens),
                "vocab_size": self.vocab_size,
                "alpha": self.alpha,
                "nbest_size": self.nbest_size,
                "seed": self.seed,
            }
        )
        return config

    def save_assets(self, dir_path):
        storage.write_atomically(storage.join(dir_path, _MODEL_ASSET), self.serialized_model())

    def load_assets(self, dir_path):
        self.set_vocabulary(storage.read_bytes(storage.join(dir_path, _MODEL_ASSET)))


def _sampling_arguments(alpha, nbest_size):
    """`alpha` and `nbest_size` as the layer keeps them (both None: no sampling), checked."""
    checks.integer("nbest_size", nbest_size, optional=True, minimum=-1)
    if nbest_size is not None and nbest_size > MAX_NBEST_SIZE:
        valid = f"-1 (all segmentations), 0 or 1 (none), or 2 to {MAX_NBEST_SIZE}"
        raise checks.invalid("nbest_size", nbest_size, valid)
    default = "a finite number >= 0 (SentencePiece's default: 0.1)"
    alpha = checks.nonnegative("alpha", alpha, optional=True, valid=default)
    if alpha is None and nbest_size is None:
        return None, None
    return (0.1 if alpha is None else alpha), (-1 if nbest_size is None else nbest_size)


class _Sampled:
    """A segmenter as `PieceSpans` calls one: `draw(code points, splits, merge)`, with the piece lengths
    and byte pieces of `segmenter`."""

    def __init__(self, draw, segmenter):
        self._draw = draw
        self.piece_chars = segmenter.piece_chars
        self.byte_ids = segmenter.byte_ids

    def __call__(self, code_points, splits, merge=True):
        return self._draw(code_points, splits, merge=merge)
