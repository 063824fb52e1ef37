"""Put a WordPiece tokenizer inside a Keras model, export it, and serve it from plain TensorFlow.

    python examples/serve_wordpiece.py [export_dir]

The serving step runs in a separate Python process that imports only `tensorflow`: the exported
model carries its tokenizer as core TensorFlow ops, so it needs neither tfsubword nor tensorflow-text.
"""

import sys
import tempfile

import keras
import tensorflow as tf

from tfsubword import WordPieceLayer
from tfsubword.demo import compare_served, serve_in_fresh_process

# fmt: off
VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]",
    "the", "a", "movie", "film", "was", "is", "great", "terrible", "not",
    "bad", "good", "act", "##ing", "##ors", "plot", "!", ".", ",", "##ly", "love", "##d",
]
# fmt: on


def build_model():
    inputs = keras.Input(shape=(), dtype="string", name="text")
    token_ids = WordPieceLayer(VOCABULARY, sequence_length=16, name="tokenizer")(inputs)
    embedded = keras.layers.Embedding(len(VOCABULARY), 8, mask_zero=True)(token_ids)
    pooled = keras.layers.GlobalAveragePooling1D()(embedded)
    outputs = keras.layers.Dense(2, activation="softmax", name="sentiment")(pooled)
    return keras.Model(inputs, outputs)


def main(export_dir):
    keras.utils.set_random_seed(0)
    model = build_model()
    tokenizer = model.get_layer("tokenizer")
    texts = ["The acting was GREAT!", "Terrible plot, not good.", "I loved the actors"]

    print("token ids in Python:")
    for text, ids in zip(texts, tokenizer(texts).numpy().tolist()):
        print(f"  {text!r:28} -> {ids}")
    local = model(tf.constant(texts)).numpy().tolist()

    model.export(export_dir, verbose=False)
    print(f"exported to {export_dir}; serving it from a process that imports only tensorflow ...")
    (remote,) = serve_in_fresh_process(export_dir, texts).values()

    same = compare_served(texts, local, remote)
    return 0 if same else 1


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(sys.argv[1]))
    with tempfile.TemporaryDirectory() as directory:
        sys.exit(main(f"{directory}/model"))
