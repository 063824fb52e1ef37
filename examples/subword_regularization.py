"""Subword regularization inside a Keras model: sampled segmentations in `fit`, the best one everywhere else.

    python examples/subword_regularization.py [export_dir]

1. A `UnigramLayer` learns its pieces from the training texts with `adapt`, and samples a segmentation of
   each text whenever it is called with `training=True` (`alpha=0.1`, among all segmentations).
2. A small classifier with the layer as its first layer is fitted on a mapped `tf.data` pipeline: in
   `fit`, Keras calls the layer with `training=True`, so each epoch sees other segmentations.
3. `evaluate`, `predict` and the exported model call it with `training=False`: the best segmentation,
   the same at every call. The export is served from a process that imports only `tensorflow`.
"""

import sys
import tempfile

import keras
import numpy as np
import tensorflow as tf
from bert_classifier import toy_data  # the same toy task: does the sentence praise or pan?

from tfsubword import UnigramLayer
from tfsubword.demo import compare_served, serve_in_fresh_process


def without_exclamation_marks(text, label):
    return tf.strings.regex_replace(text, "!", ""), label


def main(export_dir):
    keras.utils.set_random_seed(0)
    texts, labels = toy_data(np.random.default_rng(0))
    tokenizer = UnigramLayer(
        vocab_size=50, normalization="identity", alpha=0.1, nbest_size=-1, seed=0, sequence_length=24, name="pieces"
    )
    # A mapped pipeline: the texts are cleaned on the way.
    data = tf.data.Dataset.from_tensor_slices((texts, labels))
    data = data.map(without_exclamation_marks)
    tokenizer.adapt(data.map(lambda text, label: text))

    text = keras.Input(shape=(), dtype="string", name="text")
    ids = tokenizer(text)
    embedded = keras.layers.Embedding(tokenizer.vocabulary_size(), 16)(ids)
    pooled = keras.layers.GlobalAveragePooling1D()(embedded)
    model = keras.Model(text, keras.layers.Dense(1, activation="sigmoid", name="positive")(pooled))
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="binary_crossentropy", metrics=["accuracy"])

    model.fit(data.shuffle(256, seed=0).batch(32), epochs=4, verbose=0)

    samples = [
        "Brilliant and moving story, truly great acting",
        "A dull film, i hated every minute",
        "A wonderful film, i loved every minute",
    ]
    sampled = [tokenizer(tf.constant(samples), training=True).numpy().tolist() for _ in range(3)]
    best = [tokenizer(tf.constant(samples)).numpy().tolist() for _ in range(2)]
    print("training=True draws a new segmentation at each call:", sampled[0] != sampled[1] or sampled[1] != sampled[2])
    print("training=False gives one segmentation:", best[0] == best[1])
    loss, accuracy = model.evaluate(data.batch(64), verbose=0)
    print(f"evaluate (best segmentation): accuracy {accuracy:.2f}")

    local = model.predict(tf.constant(samples), verbose=0)[:, 0]
    if not np.array_equal(local, model.predict(tf.constant(samples), verbose=0)[:, 0]):
        print("predict gave two answers")
        return 1
    model.export(export_dir, verbose=False)
    (served,) = serve_in_fresh_process(export_dir, samples).values()
    same = compare_served(samples, local, np.array(served)[:, 0])
    return 0 if same and best[0] == best[1] else 1


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(sys.argv[1]))
    with tempfile.TemporaryDirectory() as directory:
        sys.exit(main(directory + "/model"))
