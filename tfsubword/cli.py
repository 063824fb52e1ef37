"""The `tfsubword` command line: argument parsing only; the work is done by the library.

tfsubword train wordpiece --vocab-size 30000 --output vocab.txt corpus.txt ...   ("-" reads stdin)
tfsubword train unigram --vocab-size 8000 --output model.model corpus.txt ...
tfsubword train bpe --vocab-size 30000 --output folder corpus.txt ...            (vocab.json, merges.txt)
tfsubword train wordpiece --counts counts.tsv --output vocab.txt                  (words counted before)
tfsubword count wordpiece --output counts.tsv 'corpus-*.txt' ...     (with --runner: an Apache Beam pipeline)
tfsubword tokenize --vocab vocab.txt "Some text" ...                            (stdin without text)
tfsubword demo
"""

import argparse
import contextlib
import os
import sys

from tfsubword.files.vocab import BERT_SPECIAL_TOKENS, GPT2_SPECIAL_TOKENS
from tfsubword.text.normalization_rules import NAMES as NORMALIZATIONS


def _special_tokens(value):
    return tuple(token for token in value.split(",") if token)


def _strip_accents(value):
    choices = {"auto": None, "yes": True, "no": False}
    if value not in choices:
        raise argparse.ArgumentTypeError("choose from auto, yes, no")
    return choices[value]


def _switch(parser, flag, default, help, dest=None):
    """A `--flag` / `--no-flag` option."""
    extra = {"dest": dest} if dest else {}
    state = "yes" if default else "no"
    parser.add_argument(
        flag, action=argparse.BooleanOptionalAction, default=default, help=f"{help} (default: {state})", **extra
    )


def _bert_flags(parser):
    _switch(parser, "--lowercase", True, "lowercase the text, as BERT uncased")
    parser.add_argument(
        "--strip-accents",
        type=_strip_accents,
        default=None,
        metavar="{auto,yes,no}",
        help="remove accents; auto follows --lowercase, as BERT (default: auto)",
    )
    _switch(parser, "--split-on-cjk", True, "make each CJK ideograph a word")


def _normalization_flags(parser):
    _bert_flags(parser)
    parser.add_argument("--suffix-indicator", default="##", help="prefix of continuation pieces (default: ##)")


def _trainer(algorithms, name, summary, output, vocab_size, special_tokens=None):
    """The `train` subcommand `name`, with the options every trainer has; `special_tokens` (the
    default), for the trainers that take them."""
    parser = algorithms.add_parser(name, help=summary)
    parser.add_argument("files", nargs="*", metavar="FILE", help="UTF-8 text files; - reads standard input")
    parser.add_argument(
        "--counts",
        action="append",
        metavar="COUNTS",
        help="learn from a counts file of `tfsubword count` instead of FILEs (repeat for several)",
    )
    parser.add_argument("--output", "-o", required=True, help=output)
    parser.add_argument("--vocab-size", type=int, default=vocab_size, help=f"tokens to learn (default: {vocab_size})")
    if special_tokens is not None:
        parser.add_argument(
            "--special-tokens",
            type=_special_tokens,
            default=special_tokens,
            help=f"comma-separated tokens placed first (default: {','.join(special_tokens)})",
        )
        parser.add_argument("--min-frequency", type=int, default=1, help="never merge rarer pairs (default: 1)")
    else:
        parser.add_argument("--min-frequency", type=int, default=1, help="never make rarer pieces (default: 1)")
    parser.add_argument(
        "--max-sentences", type=int, default=None, help="learn from a sample of this many lines (the same each run)"
    )
    parser.add_argument(
        "--max-memory",
        type=_bytes,
        default=None,
        help="stop with an error when the word counts need more memory than this (bytes; or 500M, 4G)",
    )
    _switch(parser, "--progress", True, "progress bars on standard error", dest="show_progress")
    return parser


def _bytes(value):
    """A size in bytes, with an optional K, M, G or T suffix (powers of 1024)."""
    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    number, unit = (value[:-1], value[-1].upper()) if value[-1:].isalpha() else (value, "")
    if unit not in units or not number.isdigit() or int(number) == 0:
        raise argparse.ArgumentTypeError("expected a positive number of bytes, such as 800000000, 500M or 4G")
    return int(number) * units[unit]


def _normalization_choice(parser):
    parser.add_argument(
        "--normalization",
        choices=NORMALIZATIONS,
        default="nmt_nfkc",
        help="character rules applied before training, kept in the model (default: nmt_nfkc)",
    )


def _counter(models, name):
    """The `count` subcommand `name`: the words its trainer learns from, counted."""
    parser = models.add_parser(name, help=f"count words as `tfsubword train {name}` does")
    parser.add_argument("patterns", nargs="+", metavar="FILE_PATTERN", help="UTF-8 text files, or glob patterns")
    parser.add_argument("--output", "-o", required=True, help="where to write the counts file")
    parser.add_argument(
        "--runner",
        default=None,
        help="count with an Apache Beam pipeline on this runner (DirectRunner, PrismRunner, DataflowRunner, "
        "FlinkRunner, SparkRunner ...; other options, written --name=value, go to Beam); without it, count here",
    )
    _switch(parser, "--progress", True, "progress bars on standard error (counting here)", dest="show_progress")
    return parser


def build_parser():
    parser = argparse.ArgumentParser(prog="tfsubword", description="Subword tokenizers for TensorFlow and Keras.")
    commands = parser.add_subparsers(dest="command", required=True)
    algorithms = commands.add_parser("train", help="learn a vocabulary").add_subparsers(dest="model", required=True)

    wordpiece = _trainer(
        algorithms,
        "wordpiece",
        "learn a WordPiece vocabulary (the seeds' pair score)",
        "where to write the vocabulary, one token per line",
        30000,
        BERT_SPECIAL_TOKENS,
    )
    _normalization_flags(wordpiece)
    wordpiece.add_argument("--max-token-length", type=int, default=None, help="longest token, in characters")
    wordpiece.add_argument(
        "--limit-alphabet", type=int, default=None, help="keep only this many characters, the most frequent"
    )
    wordpiece.add_argument(
        "--algorithm",
        choices=("score", "likelihood"),
        default="score",
        help="score: freq(ab)/(freq(a) freq(b)); likelihood: unigram log-likelihood gain",
    )

    unigram = _trainer(
        algorithms,
        "unigram",
        "learn a unigram vocabulary (SentencePiece's algorithm)",
        "where to write the SentencePiece .model file (a piece<TAB>score .vocab goes beside it)",
        8000,
    )
    unigram.add_argument(
        "--character-coverage",
        type=float,
        default=0.9995,
        help="share of characters that must be pieces (default: 0.9995)",
    )
    unigram.add_argument("--max-token-length", type=int, default=16, help="longest piece, in characters (default: 16)")
    _normalization_choice(unigram)

    bpe = _trainer(
        algorithms,
        "bpe",
        "learn a byte-pair encoding (the seeds' most-frequent-pair rule)",
        "folder to write vocab.json and merges.txt (merges.json without --byte-level) to",
        30000,
        GPT2_SPECIAL_TOKENS,
    )
    _switch(bpe, "--byte-level", True, "words as bytes in GPT-2's byte alphabet")
    _switch(bpe, "--full-alphabet", False, "all 256 byte symbols in the vocabulary, not only those that occur")
    bpe.add_argument("--max-token-length", type=int, default=None, help="longest token, in symbols")

    counters = commands.add_parser("count", help="count the words of a corpus, here or with Apache Beam")
    counters = counters.add_subparsers(dest="model", required=True)
    _bert_flags(_counter(counters, "wordpiece"))
    _normalization_choice(_counter(counters, "unigram"))
    _counter(counters, "bpe")

    tokenize = commands.add_parser("tokenize", help="print the WordPiece tokens of texts")
    tokenize.add_argument("texts", nargs="*", metavar="TEXT", help="texts to tokenize; lines of stdin without any")
    tokenize.add_argument("--vocab", required=True, help="vocabulary file, one token per line")
    tokenize.add_argument("--ids", action="store_true", help="print ids instead of tokens")
    tokenize.add_argument("--unknown-token", default="[UNK]")
    tokenize.add_argument("--max-chars-per-word", type=int, default=100)
    _normalization_flags(tokenize)

    demo = commands.add_parser("demo", help="train, build a Keras model, export it and serve it with plain TensorFlow")
    demo.add_argument("--vocab-size", type=int, default=8000)
    demo.add_argument("--min-frequency", type=int, default=5)
    demo.add_argument("--export-dir", default=None, help="keep the exported model here (default: a temporary folder)")
    return parser


def quiet_tensorflow():
    """Import TensorFlow without its start-up lines (CUDA, oneDNN, absl): a run prints only its own output.

    Its C++ logging is set to fatal errors only before the import (whatever the environment said: a
    process that imported TensorFlow passes its own setting on), and what the import itself writes to
    the standard error (before TensorFlow reads that setting) goes nowhere; Python errors still show.
    """
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 2)
            with contextlib.suppress(ImportError):
                import tensorflow  # noqa: F401
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    arguments, beam_options = parser.parse_known_args(argv)
    if beam_options and not (arguments.command == "count" and arguments.runner):
        parser.parse_args(argv)  # exits, naming the unknown options
    for option in beam_options:
        # `--project p`: argparse cannot know that p is the option's value, not a file pattern.
        following = argv[argv.index(option) + 1 : argv.index(option) + 2]
        if "=" not in option and following and not following[0].startswith("-"):
            parser.error(f"write Beam options as {option}=VALUE: is {following[0]!r} its value or a FILE_PATTERN?")
    quiet_tensorflow()
    try:
        if arguments.command == "train":
            return _train(arguments)
        if arguments.command == "count":
            return _count(arguments, beam_options)
        if arguments.command == "tokenize":
            return _tokenize(arguments)
        from tfsubword import demo

        return demo.run(arguments.vocab_size, arguments.min_frequency, arguments.export_dir)
    except ValueError as error:
        print(f"tfsubword: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tfsubword: interrupted; nothing was written", file=sys.stderr)
        return 130


def _normalization_options(arguments):
    return {
        "lowercase": arguments.lowercase,
        "strip_accents": arguments.strip_accents,
        "split_on_cjk": arguments.split_on_cjk,
        "suffix_indicator": arguments.suffix_indicator,
    }


def _train(arguments):
    """Each `train` subcommand's options are named as its trainer's arguments."""
    from tfsubword import train

    options = {name: value for name, value in vars(arguments).items() if name not in ("command", "model")}
    options["files"] = options["files"] or None
    result = getattr(train, f"train_{arguments.model}")(**options)
    if arguments.model == "unigram":
        from tfsubword.files.unigram_vocabulary import write_scores

        scores = os.path.splitext(arguments.output)[0] + ".vocab"
        write_scores(result, scores)
        print(f"wrote {len(result)} pieces to {arguments.output} and {scores}", file=sys.stderr)
    elif arguments.model == "bpe":
        vocabulary, merges = result
        print(f"wrote {len(vocabulary)} tokens and {len(merges)} merges to {arguments.output}", file=sys.stderr)
    else:
        print(f"wrote {len(result)} tokens to {arguments.output}", file=sys.stderr)
    return 0


def _count(arguments, beam_options):
    from tfsubword.files import counts

    defaults = counts.PRE_TOKENIZERS[arguments.model]
    options = {name: getattr(arguments, name) for name in defaults if hasattr(arguments, name)}
    if arguments.runner is None:
        from tfsubword.train import counting

        number = counting.count_files(
            arguments.patterns, arguments.output, arguments.model, options, arguments.show_progress
        )
        print(f"wrote the counts of {number} words to {arguments.output}", file=sys.stderr)
        return 0
    try:
        from tfsubword import beam
    except ImportError as error:
        raise ValueError(f'--runner needs Apache Beam ({error}): pip install "tfsubword[beam]"') from None
    pipeline_options = ["--runner", arguments.runner, *beam_options]
    beam.count_files(arguments.patterns, arguments.output, arguments.model, options, pipeline_options)
    print(f"wrote the counts to {arguments.output}", file=sys.stderr)
    return 0


_EAGER_BATCHES = 16


def _tokenize(arguments):
    import tensorflow as tf

    from tfsubword import WordPieceLayer

    layer = WordPieceLayer(
        arguments.vocab,
        max_chars_per_word=arguments.max_chars_per_word,
        unknown_token=arguments.unknown_token,
        dtype="int32" if arguments.ids else "string",
        **_normalization_options(arguments),
    )
    # Op by op, a batch of 1024 lines costs about a twentieth of tracing the layer (seconds): the
    # first batches run eagerly, so that a few lines print at once, and longer inputs are traced.
    encode, batches = layer.tokenize, 0
    texts = arguments.texts or (line.rstrip("\r\n") for line in sys.stdin)
    batch = []
    for text in texts:
        batch.append(text)
        if len(batch) == 1024:
            _print_rows(encode(tf.constant(batch)), arguments.ids)
            batch, batches = [], batches + 1
            if batches == _EAGER_BATCHES:
                encode = tf.function(layer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    if batch:
        _print_rows(encode(tf.constant(batch)), arguments.ids)
    return 0


def _print_rows(rows, ids):
    for row in rows.to_list():
        print(" ".join(str(value) if ids else value.decode("utf-8") for value in row))


if __name__ == "__main__":
    sys.exit(main())
