"""Corpus -> word counts, with the very normalization and pre-tokenization the layers use.

Text goes through `tf.data` and a pre-tokenizer of `tfsubword.text` (the graph functions the layers
run): `bert_words` for WordPiece, `sentencepiece_words` for unigram, `byte_level_words` for BPE. So a
vocabulary is never trained on other words than the layer will see.
"""

import collections.abc
import functools
import itertools
import os
import random
import sys
import warnings

import tensorflow as tf

from tfsubword import checks
from tfsubword import graph_ops as ops
from tfsubword.files import counts as counts_lib
from tfsubword.files import storage, unigram_vocabulary
from tfsubword.progress import Progress
from tfsubword.text import byte_level
from tfsubword.text.bert import BertNormalizer
from tfsubword.text.sentencepiece import SPACE_SYMBOL, SentencePieceNormalizer, word_starts

BATCH_LINES = 1024


@functools.cache
def bert_words(lowercase=True, strip_accents=None, split_on_cjk=True):
    """`WordPieceLayer`'s pre-tokenizer: `[n]` lines -> `[m]` words, BERT's basic tokenization."""
    normalizer = BertNormalizer(lowercase, strip_accents, split_on_cjk)
    return lambda lines: normalizer.words(lines).flat_values


@functools.cache
def byte_level_words():
    """`BPELayer`'s pre-tokenizer: `[n]` lines -> `[m]` words, GPT-2's pattern (some empty)."""
    return lambda lines: byte_level.split_words(lines).flat_values


@functools.cache
def sentencepiece_words(normalization, add_dummy_prefix=True, remove_extra_whitespaces=True):
    """`UnigramLayer`'s normalizer as a pre-tokenizer: `[n]` lines -> `[m]` words, each starting at a
    space symbol (or at the start of its line); the last word of each line ends in a space (which
    normalized text never holds), for the trainer's seeds."""
    spec = unigram_vocabulary.normalizer(normalization, add_dummy_prefix, remove_extra_whitespaces)
    normalizer = SentencePieceNormalizer(spec)

    def words_of(lines):
        if normalizer.splits_words:
            words, line_splits, lines_of_words = normalizer.words(lines)
            words = tf.strings.join([SPACE_SYMBOL, words])
        else:
            values, splits = normalizer.normalize(lines)
            starts, line_splits = word_starts(values, splits, normalizer.space)
            words = ops.encode_utf8(values, tf.concat([starts, [tf.size(values, out_type=tf.int64)]], axis=0))
            lines_of_words = ops.row_ids(line_splits)
        last = lines_of_words != tf.concat([lines_of_words, [-1]], axis=0)[1:]
        return tf.strings.join([words, tf.where(last, " ", "")])

    return words_of


def pre_tokenizer_of(spec):
    """The pre-tokenizer a spec of `files.counts.pre_tokenizer` names: `[n]` lines -> `[m]` words."""
    options = {name: value for name, value in spec.items() if name != "model"}
    return {"wordpiece": bert_words, "unigram": sentencepiece_words, "bpe": byte_level_words}[spec["model"]](**options)


# What counting holds per distinct word besides its text, about: the bytes key and int count of a dict
# entry while counting (measured: 90 bytes for a 13-byte word), then the str of the returned dict.
_BYTES_PER_WORD = 180
# The seed of `max_sentences`' sample: the same lines for the same corpus on every run.
_SAMPLE_SEED = 20261127


def count_words(
    corpus=None, *, files=None, pretokenizer=None, show_progress=False, max_sentences=None, max_memory=None
):
    """Word -> count, in first-occurrence order (the trainers reorder them: see `tfsubword.train`).

    Exactly one of:
        corpus: an iterable of strings (str or UTF-8 bytes), a `tf.data.Dataset` of strings, or a
            mapping word -> count that is already pre-tokenized (returned as given, in its order).
        files: paths of UTF-8 text files (`"-"`: standard input), read lazily line by line.

    `pretokenizer` maps `[n]` lines to `[m]` words in the graph: one of this module's, or any other
    (default: `bert_words()`). Lines that are not valid UTF-8 are read with U+FFFD for each invalid
    sequence, and their number is reported once, as a warning. Files lose their carriage returns, as
    `tf.data.TextLineDataset` reads them.

    `max_sentences`: count only that many lines, a uniform sample of them (reservoir sampling with a
    fixed seed: the same lines on every run), as SentencePiece's `input_sentence_size`; memory holds the
    sample, not the corpus. `max_memory`: bytes the counts may take (about `len(word) + 180` a distinct
    word); past it, a `ValueError` stops the counting, before the process runs out of memory.
    """
    checks.integer("max_sentences", max_sentences, optional=True)
    checks.integer("max_memory", max_memory, optional=True)
    if (corpus is None) == (files is None):
        raise ValueError("Pass exactly one of `corpus` and `files`.")
    if isinstance(corpus, collections.abc.Mapping):
        from tfsubword.train import checked_counts

        return checked_counts(corpus)
    count_batch = batch_counter(pretokenizer or bert_words())
    if files is not None:
        parts, total, unit = _file_batches(files)
    elif isinstance(corpus, tf.data.Dataset):
        parts, total, unit = [_dataset_batches(corpus)], None, " lines"
    elif isinstance(corpus, (str, bytes)):
        raise ValueError("`corpus` must be an iterable of texts, not a single string.")
    else:
        parts, total, unit = [_iterable_batches(corpus)], None, " lines"
    if max_sentences is not None:
        parts = [_sample(itertools.chain.from_iterable(parts), max_sentences)]
    counts, invalid, done, held, lines = {}, 0, 0, 0, 0
    with Progress("counting words", total=total, enabled=show_progress, unit=unit) as bar:
        for words, numbers, invalid_lines, size, batch_lines in _counted(parts, count_batch):
            for word, number in zip(words.numpy().tolist(), numbers.numpy().tolist()):
                before = counts.get(word)
                if before is None:
                    held += len(word) + _BYTES_PER_WORD
                counts[word] = (before or 0) + number
            lines += int(batch_lines)
            if max_memory is not None and held > max_memory:
                raise ValueError(
                    f"The word counts need more than max_memory={max_memory} bytes: {len(counts)} distinct words "
                    f"after {lines} lines. Allow more memory, count a sample (`max_sentences`), or count with "
                    "Apache Beam (`tfsubword count --runner ...`) on machines that have it."
                )
            invalid += int(invalid_lines)
            done += int(size) if unit == " bytes" else int(batch_lines)
            bar.update(done)
    if invalid:
        warnings.warn(f"{invalid} lines were not valid UTF-8 and were read with replacement characters.", stacklevel=2)
    if not counts:
        raise ValueError("The corpus has no words: it is empty or holds only whitespace and control characters.")
    return {word.decode("utf-8"): number for word, number in counts.items()}


def count_files(patterns, output, model, options, show_progress=False):
    """Count the words of the files matching `patterns` (paths or glob patterns of any file system
    TensorFlow reads; `"-"`: standard input) with `model`'s trainer's pre-tokenizer and `options`, and
    write them to the counts file `output` (atomically). Returns the number of distinct words."""
    spec = counts_lib.pre_tokenizer(model, **options)
    paths = []
    for pattern in patterns:
        found = [pattern] if pattern == "-" or storage.is_file(pattern) else sorted(tf.io.gfile.glob(pattern))
        if not found:
            raise ValueError(f"No file matches {pattern!r}.")
        paths += found
    counts = count_words(files=paths, pretokenizer=pre_tokenizer_of(spec), show_progress=show_progress)
    counts_lib.write_counts(counts, spec, output)
    return sum(1 for word in counts if word)


def _counted(parts, count_batch):
    """`count_batch` of each batch of each part, in order. A part is a `tf.data.Dataset` of batches,
    which counts its batches on both cores as the caller adds up the counts, or an iterator of them."""
    for part in parts:
        if isinstance(part, tf.data.Dataset):
            yield from part.map(count_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(2)
        else:
            yield from (count_batch(batch) for batch in part)


@functools.cache
def batch_counter(words_of):
    """A function traced once per process and pre-tokenizer: `[n]` lines -> (distinct words, their
    counts, the number of lines that are not valid UTF-8, the bytes read, n), from `words_of`, a
    graph function `[n]` lines -> `[m]` words."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def count_batch(lines):
        words, _, counts = tf.unique_with_counts(words_of(lines), out_idx=tf.int64)
        # Valid UTF-8 transcodes to itself byte for byte; invalid sequences are dropped.
        valid = tf.strings.unicode_transcode(lines, "UTF-8", "UTF-8", errors="ignore") == lines
        invalid = tf.reduce_sum(tf.cast(~valid, tf.int64))
        size = tf.reduce_sum(tf.cast(tf.strings.length(lines), tf.int64) + 1)  # + the line break
        return words, counts, invalid, size, tf.size(lines, out_type=tf.int64)

    return count_batch


def _sample(batches, size):
    """Batches of a uniform sample of `size` lines of `batches` (all of them if fewer), in corpus order."""
    generator = random.Random(_SAMPLE_SEED)
    kept, seen = [], 0  # kept: (position, line)
    for batch in batches:
        for line in batch.numpy().tolist():
            if seen < size:
                kept.append((seen, line))
            else:
                slot = generator.randrange(seen + 1)
                if slot < size:
                    kept[slot] = (seen, line)
            seen += 1
    kept.sort()
    return _batched(line for _, line in kept)


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
    return dataset


def _file_batches(paths):
    """Batches of lines of several files (`"-"`: standard input), read lazily, one part for each run of
    files and for standard input (see `_counted`); and the total size."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    paths = [os.fsdecode(path) for path in paths]
    if not paths:
        raise ValueError("`files` is empty.")
    for path in paths:  # fail before any work, naming the file
        if path != "-" and not storage.is_file(path):
            raise ValueError(f"Cannot read {path!r}: it is not a file.")
    total = None if "-" in paths else sum(storage.size(path) for path in paths)

    def parts():
        # Files in a row are one pipeline: `map` traces the counter again for each dataset (0.3 s or more
        # a file with SentencePiece's normalizer), which a corpus in many shards would pay per shard.
        for stdin, run in itertools.groupby(paths, key=lambda path: path == "-"):
            if stdin:
                for _ in run:
                    yield _batched(line.rstrip(b"\n") for line in sys.stdin.buffer)
            else:
                yield tf.data.TextLineDataset(list(run)).batch(BATCH_LINES)

    return parts(), total, " bytes"
