"""A text classifier whose first layer turns raw strings into BERT inputs, exported and served.

    python examples/bert_classifier.py [export_dir]

1. Train a WordPiece vocabulary with `train_wordpiece` on a toy corpus.
2. Build a Keras classifier: `BertPreprocessor` (strings -> token ids, segment ids, padding mask), then a
   small network. Fit it a few steps on a toy task (does the sentence praise or pan?).
3. `model.export()`, then call the `serving_default` signature with a batch of raw strings from a process
   that imports only `tensorflow`, and check the predictions are the same.
"""

import sys
import tempfile

import keras
import numpy as np
import tensorflow as tf

from tfsubword import BertPreprocessor, train_wordpiece
from tfsubword.demo import compare_served, serve_in_fresh_process

POSITIVE = ["a wonderful film", "truly great acting", "i loved every minute", "brilliant and moving story"]
NEGATIVE = ["a dull film", "truly awful acting", "i hated every minute", "boring and predictable story"]


def toy_data(rng, count=256):
    texts, labels = [], []
    for _ in range(count):
        label = int(rng.integers(2))
        words = rng.choice(POSITIVE if label else NEGATIVE, size=2)
        texts.append(f"{words[0].capitalize()}, {words[1]}!")
        labels.append(label)
    return texts, np.array(labels, "float32")


def build_classifier(vocabulary, sequence_length=16):
    text = keras.Input(shape=(), dtype="string", name="text")
    inputs = BertPreprocessor(vocabulary, sequence_length=sequence_length, name="preprocessor")(text)
    embedded = keras.layers.Embedding(len(vocabulary), 16)(inputs["token_ids"])
    pooled = keras.layers.GlobalAveragePooling1D()(embedded, mask=inputs["padding_mask"])
    probability = keras.layers.Dense(1, activation="sigmoid", name="positive")(pooled)
    return keras.Model(text, probability)


def main(export_dir):
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    texts, labels = toy_data(rng)
    vocabulary = train_wordpiece(texts, vocab_size=120, show_progress=False)
    model = build_classifier(vocabulary)
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="binary_crossentropy", metrics=["accuracy"])
    model.fit(tf.constant(texts), labels, batch_size=32, epochs=3, verbose=0)

    samples = ["What a wonderful, moving story!", "Boring, awful acting.", "Great film."]
    local = model.predict(tf.constant(samples), verbose=0)[:, 0]
    model.export(export_dir, verbose=False)
    (served,) = serve_in_fresh_process(export_dir, samples).values()
    same = compare_served(samples, local, np.array(served)[:, 0])
    return 0 if same else 1


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(sys.argv[1]))
    with tempfile.TemporaryDirectory() as directory:
        sys.exit(main(f"{directory}/classifier"))
