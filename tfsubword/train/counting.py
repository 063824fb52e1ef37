"""Corpus -> word counts, with the very normalization and pre-tokenization the layers use.

Text goes through `tf.data` and `BertNormalizer.words` (the graph functions `WordPieceLayer` runs), so a
vocabulary is never trained on other words than the layer will see.
"""

import collections.abc
import functools
import os
import sys
import warnings

import tensorflow as tf

from tfsubword.progress import Progress
from tfsubword.text import BertNormalizer

BATCH_LINES = 1024


def count_words(
    corpus=None,
    *,
    files=None,
    lowercase=True,
    strip_accents=None,
    split_on_cjk=True,
    show_progress=False,
    count_batch=None,
):
    """Word -> count, in first-occurrence order.

    Exactly one of:
        corpus: an iterable of strings (str or UTF-8 bytes), a `tf.data.Dataset` of strings, or a
            mapping word -> count that is already pre-tokenized (returned as given, in its order).
        files: paths of UTF-8 text files (`"-"`: standard input), read lazily line by line.

    Lines that are not valid UTF-8 are read with U+FFFD for each invalid sequence (which normalization
    deletes), and their number is reported once, as a warning. `count_batch` replaces BERT's words by
    another pre-tokenization: a function `[n]` lines -> (distinct words, counts, invalid lines, bytes),
    as `batch_counter` makes.
    """
    if (corpus is None) == (files is None):
        raise ValueError("Pass exactly one of `corpus` and `files`.")
    if isinstance(corpus, collections.abc.Mapping):
        return _checked_counts(corpus)
    count_batch = count_batch or _batch_counter(lowercase, strip_accents, split_on_cjk)
    if files is not None:
        batches, total, unit = _file_batches(files)
    elif isinstance(corpus, tf.data.Dataset):
        batches, total, unit = _dataset_batches(corpus), None, " lines"
    elif isinstance(corpus, (str, bytes)):
        raise ValueError("`corpus` must be an iterable of texts, not a single string.")
    else:
        batches, total, unit = _iterable_batches(corpus), None, " lines"

    counts, invalid, done = {}, 0, 0
    with Progress("counting words", total=total, enabled=show_progress, unit=unit) as bar:
        for batch in batches:
            words, numbers, invalid_lines, size = count_batch(batch)
            for word, number in zip(words.numpy().tolist(), numbers.numpy().tolist()):
                counts[word] = counts.get(word, 0) + number
            invalid += int(invalid_lines)
            done += int(size) if unit == " bytes" else int(tf.size(batch))
            bar.update(done)
    if invalid:
        warnings.warn(
            f"{invalid} lines were not valid UTF-8 and were read with replacement characters.", stacklevel=2
        )
    if not counts:
        raise ValueError("The corpus has no words: it is empty or holds only whitespace and control characters.")
    return {word.decode("utf-8"): number for word, number in counts.items()}


@functools.lru_cache(maxsize=None)
def _batch_counter(lowercase, strip_accents, split_on_cjk):
    """A function traced once per process: `[n]` lines -> (distinct words, their counts, the number of
    lines that are not valid UTF-8, the bytes read), with the layers' normalization."""
    normalizer = BertNormalizer(lowercase, strip_accents, split_on_cjk)
    return batch_counter(lambda lines: normalizer.words(lines).flat_values)


def batch_counter(words_of):
    """A traced `[n]` lines -> (distinct words, counts, invalid lines, bytes) from `words_of`, a graph
    function `[n]` lines -> `[m]` words."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def count_batch(lines):
        words, _, counts = tf.unique_with_counts(words_of(lines), out_idx=tf.int64)
        # Valid UTF-8 transcodes to itself byte for byte; invalid sequences are dropped.
        valid = tf.strings.unicode_transcode(lines, "UTF-8", "UTF-8", errors="ignore") == lines
        invalid = tf.reduce_sum(tf.cast(~valid, tf.int64))
        size = tf.reduce_sum(tf.cast(tf.strings.length(lines), tf.int64) + 1)  # + the line break
        return words, counts, invalid, size

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


def _batched(items):
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == BATCH_LINES:
            yield tf.constant(batch, tf.string)
            batch = []
    if batch:
        yield tf.constant(batch, tf.string)


def _iterable_batches(texts):
    def encoded():
        for text in texts:
            if isinstance(text, str):
                yield text.encode("utf-8", "surrogatepass")
            elif isinstance(text, bytes):
                yield text
            else:
                raise ValueError(f"`corpus` items must be str or bytes. Received {type(text).__name__}: {text!r}.")

    return _batched(encoded())


def _dataset_batches(dataset):
    if not isinstance(dataset.element_spec, tf.TensorSpec) or dataset.element_spec.dtype != tf.string:
        raise ValueError(f"`corpus` datasets must hold string tensors. Received: {dataset.element_spec}.")
    if dataset.element_spec.shape.rank == 0:
        dataset = dataset.batch(BATCH_LINES)
    else:
        dataset = dataset.map(lambda texts: tf.reshape(texts, [-1]))
    return iter(dataset.prefetch(2))


def _file_batches(paths):
    """Batches of lines of several files (`"-"`: standard input), read lazily; and the total size."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(path) for path in paths]
    if not paths:
        raise ValueError("`files` is empty.")
    for path in paths:  # fail before any work, naming the file
        if path == "-":
            continue
        try:
            with open(path, "rb"):
                pass
        except OSError as error:
            raise ValueError(f"Cannot read {path!r}: {error.strerror or error}.") from None
    total = None if "-" in paths else sum(os.path.getsize(path) for path in paths)

    def batches():
        for path in paths:
            if path == "-":
                yield from _batched(line.rstrip(b"\n") for line in sys.stdin.buffer)
            else:
                yield from tf.data.TextLineDataset(path).batch(BATCH_LINES).prefetch(2)

    return batches(), total, " bytes"
