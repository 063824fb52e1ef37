"""`SentencePieceLayer`: a SentencePiece `.model` file of either type, unigram or BPE, as `sentencepiece` encodes it."""

import os

import keras

from tfsubword.layers.base import TokenizerLayer
from tfsubword.layers.unigram import UnigramLayer


@keras.saving.register_keras_serializable(package="tfsubword")
class SentencePieceLayer(UnigramLayer):
    """Tokenize text exactly as `sentencepiece.SentencePieceProcessor.encode` does with a `.model` file.

    The file says everything: its normalizer (character map and whitespace rules), its piece types
    (user-defined pieces stay whole, control pieces never come from text, byte pieces with
    `byte_fallback`) and its model: unigram (the best path, as `UnigramLayer`) or BPE (the pair of
    highest score merges first, over the whole text, as Llama-2's, Mistral's and Gemma's models).
    It has `UnigramLayer`'s contract: offsets, `detokenize`, `sequence_length`, saving, serving.

    Args:
        model: the path or the bytes of a SentencePiece `.model` file of type unigram or BPE.
        alpha, nbest_size, seed: subword regularization in training, as SentencePiece's
            `encode(..., enable_sampling=True)` samples: for a unigram model as `UnigramLayer`'s; for
            a BPE model, `alpha` (0 to 1) is the probability of skipping each merge when its turn
            comes (BPE-dropout), and `nbest_size` is not used (leave it None or -1).
        sequence_length: int or None. If set, outputs are dense, padded with the id of `pad_token`
            (0 if absent). Defaults to None (ragged).
        pad_token: str. Defaults to "<pad>".
        dtype: an integer dtype, or "string" to return pieces instead of ids. Defaults to "int32".

    A BPE model is refused (`ValueError`) where its encoding would depend on more than its pieces
    say: a piece holding a character that is no piece, or an unused piece that two pairs make.

    Examples:

    >>> from tfsubword.files import sentencepiece_model as spm_model
    >>> pieces = [("<unk>", 0.0, spm_model.UNKNOWN), ("▁", -1.0, spm_model.NORMAL)]
    >>> pieces += [(p, -2.0 - i, spm_model.NORMAL) for i, p in enumerate(["a", "b", "ab", "▁ab", "▁b"])]
    >>> model = spm_model.serialize(pieces, spm_model.Normalizer(), model_type="bpe")
    >>> layer = SentencePieceLayer(model)
    >>> layer("ab b").numpy()
    array([5, 6], dtype=int32)
    >>> layer.model_type
    'bpe'
    """

    _MODEL_TYPES = ("unigram", "bpe")

    def __init__(
        self,
        model=None,
        *,
        alpha=None,
        nbest_size=None,
        seed=None,
        sequence_length=None,
        pad_token="<pad>",
        dtype="int32",
        **kwargs,
    ):
        if model is not None and not isinstance(model, (bytes, bytearray, str, os.PathLike)):
            raise ValueError(
                f"`model` must be the path or the bytes of a SentencePiece .model file. Received: {type(model)}."
            )
        super().__init__(
            model,
            alpha=alpha,
            nbest_size=nbest_size,
            seed=seed,
            sequence_length=sequence_length,
            pad_token=pad_token,
            dtype=dtype,
            **kwargs,
        )

    @property
    def model_type(self):
        """The model's type: "unigram" or "bpe"."""
        self._require_vocabulary()
        return self._model.model_type

    def get_config(self):
        config = TokenizerLayer.get_config(self)
        config["model"] = config.pop("vocabulary")
        config.update({"alpha": self.alpha, "nbest_size": self.nbest_size, "seed": self.seed})
        return config
