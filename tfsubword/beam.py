"""Counting words beyond one machine, with Apache Beam (`pip install "tfsubword[beam]"`).

    lines -> batches -> words of each batch (the trainer's own pre-tokenizer, in the graph) -> summed per word

`CountWords` gives the counts that `tfsubword.train` counts on one machine, and `WriteCounts` writes
them as a counts file (`tfsubword.files.counts`) that every trainer reads (`counts=`):

    import apache_beam as beam
    from tfsubword import beam as tfsubword_beam

    with beam.Pipeline(options=...) as pipeline:
        (pipeline
         | beam.io.ReadFromText("gs://bucket/corpus-*.txt", coder=beam.coders.BytesCoder())
         | tfsubword_beam.CountWords("wordpiece", lowercase=True)
         | tfsubword_beam.WriteCounts("gs://bucket/counts.tsv", "wordpiece", lowercase=True))

    vocabulary = tfsubword.train_wordpiece(counts="gs://bucket/counts.tsv", vocab_size=30000)

Workers need `tensorflow` and `tfsubword` (no custom ops). Lines may be bytes (read them with
`BytesCoder`: invalid UTF-8 is then read with U+FFFD, as the local counter reads it, where Beam's
default coder fails the pipeline) or str; carriage returns are dropped, as `tf.data.TextLineDataset`
drops them.
"""

import apache_beam as beam

from tfsubword import checks
from tfsubword.files import counts as counts_lib

BATCH_LINES = 1024


class CountWords(beam.PTransform):
    """A `PCollection` of lines -> `(word, count)` for each distinct word, words cut by the pre-tokenizer
    of `model`'s trainer ("wordpiece", "unigram" or "bpe") with `options` (those of the trainer:
    `lowercase`, `strip_accents`, `split_on_cjk`; `normalization`, `add_dummy_prefix`,
    `remove_extra_whitespaces`; none for BPE). Empty words (BPE's pre-tokenizer makes some) are left out."""

    def __init__(self, model, *, batch_lines=BATCH_LINES, **options):
        super().__init__()
        self.spec = counts_lib.pre_tokenizer(model, **options)
        self.batch_lines = checks.integer("batch_lines", batch_lines)

    def expand(self, lines):
        return (
            lines
            | "Batch" >> beam.BatchElements(min_batch_size=1, max_batch_size=self.batch_lines)
            | "Count each batch" >> beam.ParDo(_CountBatch(self.spec))
            | "Sum" >> beam.CombinePerKey(sum)
        )


class WriteCounts(beam.PTransform):
    """`(word, count)` pairs -> one counts file at `path` (any file system Beam writes), its first line
    naming the pre-tokenizer (`model` and `options`, as given to `CountWords`)."""

    def __init__(self, path, model, **options):
        super().__init__()
        self.path = path
        self.header = counts_lib.header(counts_lib.pre_tokenizer(model, **options))

    def expand(self, counts):
        return (
            counts
            | "Format" >> beam.MapTuple(counts_lib.line)
            | "Write" >> beam.io.WriteToText(self.path, shard_name_template="", header=self.header)
        )


def count_files(patterns, output, model, options, pipeline_options=()):
    """Count the words of the files matching `patterns` with a Beam pipeline (`pipeline_options`: its
    command-line options, `--runner` and the runner's) and write them to the counts file `output`."""
    from apache_beam.options.pipeline_options import PipelineOptions

    spec = counts_lib.pre_tokenizer(model, **options)
    try:
        with beam.Pipeline(options=PipelineOptions(list(pipeline_options))) as pipeline:
            reads = [
                pipeline | f"Read {pattern}" >> beam.io.ReadFromText(pattern, coder=beam.coders.BytesCoder())
                for pattern in patterns
            ]
            counted = reads | "All files" >> beam.Flatten() | CountWords(**spec)
            counted | WriteCounts(output, **spec)
    except OSError as error:  # Beam's: a pattern that matches no file
        raise ValueError(str(error)) from None


class _CountBatch(beam.DoFn):
    """A batch of lines -> (word, count) of its distinct words, in a graph traced once per worker."""

    def __init__(self, spec):
        self.spec = spec

    def setup(self):
        from tfsubword.train import counting

        self._count = counting.batch_counter(counting.pre_tokenizer_of(self.spec))
        self._invalid = beam.metrics.Metrics.counter("tfsubword", "lines_not_utf8")

    def process(self, lines):
        import tensorflow as tf

        batch = []
        for line in lines:
            if not isinstance(line, (str, bytes)):
                raise ValueError(
                    f"CountWords needs lines of str or bytes. Received {type(line).__name__}: {line!r:.100}."
                )
            data = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
            batch.append(data.replace(b"\r", b""))
        words, numbers, invalid, _, _ = self._count(tf.constant(batch))
        self._invalid.inc(int(invalid))
        for word, number in zip(words.numpy().tolist(), numbers.numpy().tolist()):
            if word:
                yield word.decode("utf-8"), number
