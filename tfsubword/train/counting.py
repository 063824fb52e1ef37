"""Corpus -> word counts, with the very normalization and pre-tokenization the layers use.

Text goes through `tf.data` and `BertNormalizer.words` (the graph functions `WordPieceLayer` runs), so a
vocabulary is never trained on other words than the layer will see.
"""

import collections.abc
import contextlib
import functools
import os
import sys
import warnings

import tensorflow as tf

from tfsubword.progress import Progress
from tfsubword.text import BertNormalizer

BATCH_LINES = 1024


def count_words(
    corpus=None, *, files=None, lowercase=True, strip_accents=None, split_on_cjk=True, show_progress=False
):
    """Word -> count, in first-occurrence order.

    Exactly one of:
        corpus: an iterable of strings (str or UTF-8 bytes), a `tf.data.Dataset` of strings, or a
            mapping word -> count that is already pre-tokenized (returned as given, in its order).
        files: paths of UTF-8 text files (`"-"`: standard input), read lazily line by line. Lines that
            are not valid UTF-8 are read with U+FFFD for each invalid sequence (which normalization
            deletes), and their number is reported once, as a warning.
    """
    if (corpus is None) == (files is None):
        raise ValueError("Pass exactly one of `corpus` and `files`.")
    if isinstance(corpus, collections.abc.Mapping):
        return _checked_counts(corpus)
    count_batch = _batch_counter(lowercase, strip_accents, split_on_cjk)
    if files is not None:
        reader = _FileLines(files)
        batches, total, unit = reader.batches(), reader.total_bytes, " bytes"
    elif isinstance(corpus, tf.data.Dataset):
        batches, total, unit = _dataset_batches(corpus), None, " lines"
    else:
        if isinstance(corpus, (str, bytes)):
            raise ValueError("`corpus` must be an iterable of texts, not a single string.")
        batches, total, unit = _iterable_batches(corpus), None, " lines"

    signature = tf.TensorSpec([None], tf.string)
    dataset = tf.data.Dataset.from_generator(lambda: batches, output_signature=signature).prefetch(2)
    counts = {}
    with Progress("counting words", total=total, enabled=show_progress, unit=unit) as bar:
        # The batches are counted by a function traced once per process, outside the pipeline: a map
        # function would be re-instantiated with every new iterator, which costs more than the counting.
        for batch in dataset:
            words, numbers = count_batch(batch)
            for word, number in zip(words.numpy().tolist(), numbers.numpy().tolist()):
                counts[word] = counts.get(word, 0) + number
            bar.update(reader.bytes_read if files is not None else bar.value + BATCH_LINES)
    if files is not None and reader.invalid_lines:
        warnings.warn(
            f"{reader.invalid_lines} lines were not valid UTF-8 and were read with replacement characters "
            f"(first in {reader.first_invalid_file!r}).",
            stacklevel=2,
        )
    if not counts:
        raise ValueError("The corpus has no words: it is empty or holds only whitespace and control characters.")
    return {word.decode("utf-8"): number for word, number in counts.items()}


@functools.lru_cache(maxsize=None)
def _batch_counter(lowercase, strip_accents, split_on_cjk):
    """A traced function: `[n]` lines -> (distinct words, their counts), with the layers' normalization."""
    normalizer = BertNormalizer(lowercase, strip_accents, split_on_cjk)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def count_batch(lines):
        words, _, counts = tf.unique_with_counts(normalizer.words(lines).flat_values, out_idx=tf.int64)
        return words, counts

    return count_batch


def _checked_counts(mapping):
    counts = {}
    for word, number in mapping.items():
        if not isinstance(word, str) or not word:
            raise ValueError(f"Word counts need non-empty str words. Received the key {word!r}.")
        if isinstance(number, bool) or not isinstance(number, int) or number < 0:
            raise ValueError(f"Word counts need non-negative int counts. Received {word!r}: {number!r}.")
        if number:
            counts[word] = number
    if not counts:
        raise ValueError("The word counts are empty: there is nothing to learn from.")
    return counts


def _iterable_batches(texts):
    batch = []
    for text in texts:
        if isinstance(text, str):
            text = text.encode("utf-8", "surrogatepass")
        elif not isinstance(text, bytes):
            raise ValueError(f"`corpus` items must be str or bytes. Received {type(text).__name__}: {text!r}.")
        batch.append(text)
        if len(batch) == BATCH_LINES:
            yield batch
            batch = []
    if batch:
        yield batch


def _dataset_batches(dataset):
    if not isinstance(dataset.element_spec, tf.TensorSpec) or dataset.element_spec.dtype != tf.string:
        raise ValueError(f"`corpus` datasets must hold string tensors. Received: {dataset.element_spec}.")
    if dataset.element_spec.shape.rank == 0:
        dataset = dataset.batch(BATCH_LINES)
    else:
        dataset = dataset.map(lambda texts: tf.reshape(texts, [-1]))
    for batch in dataset.as_numpy_iterator():
        yield batch.tolist()


class _FileLines:
    """Lines of several files (`"-"`: standard input), read lazily as bytes, counting the invalid UTF-8 ones."""

    def __init__(self, paths):
        if isinstance(paths, (str, bytes, os.PathLike)):
            paths = [paths]
        self.paths = [os.fspath(path) for path in paths]
        if not self.paths:
            raise ValueError("`files` is empty.")
        for path in self.paths:  # fail before any work, naming the file
            if path == "-":
                continue
            try:
                with open(path, "rb"):
                    pass
            except OSError as error:
                raise ValueError(f"Cannot read {path!r}: {error.strerror or error}.") from None
        sizes = [0 if path == "-" else os.path.getsize(path) for path in self.paths]
        self.total_bytes = None if "-" in self.paths else sum(sizes)
        self.bytes_read = 0
        self.invalid_lines = 0
        self.first_invalid_file = None

    def batches(self):
        batch = []
        for path in self.paths:
            with _open_binary(path) as file:
                for line in file:
                    self.bytes_read += len(line)
                    try:
                        line.decode("utf-8")
                    except UnicodeDecodeError:
                        self.invalid_lines += 1
                        self.first_invalid_file = self.first_invalid_file or path
                    batch.append(line)
                    if len(batch) == BATCH_LINES:
                        yield batch
                        batch = []
        if batch:
            yield batch


def _open_binary(path):
    if path == "-":
        return contextlib.nullcontext(sys.stdin.buffer)
    return open(path, "rb")
