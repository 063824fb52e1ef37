"""The `tfsubword` command line: argument parsing only; the work is done by the library.

    tfsubword train wordpiece --vocab-size 30000 --output vocab.txt corpus.txt ...   ("-" reads stdin)
    tfsubword train unigram --vocab-size 8000 --output model.model corpus.txt ...
    tfsubword train bpe --vocab-size 30000 --output folder corpus.txt ...            (vocab.json, merges.txt)
    tfsubword tokenize --vocab vocab.txt "Some text" ...                            (stdin without text)
    tfsubword demo
"""

import argparse
import os
import sys

from tfsubword.normalization_rules import NAMES as NORMALIZATIONS


def _special_tokens(value):
    return tuple(token for token in value.split(",") if token)


def _strip_accents(value):
    choices = {"auto": None, "yes": True, "no": False}
    if value not in choices:
        raise argparse.ArgumentTypeError("choose from auto, yes, no")
    return choices[value]


def _normalization_flags(parser):
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True,
                        help="lowercase the text, as BERT uncased (default: yes)")
    parser.add_argument("--strip-accents", type=_strip_accents, default=None, metavar="{auto,yes,no}",
                        help="remove accents; auto follows --lowercase, as BERT (default: auto)")
    parser.add_argument("--split-on-cjk", action=argparse.BooleanOptionalAction, default=True,
                        help="make each CJK ideograph a word (default: yes)")
    parser.add_argument("--suffix-indicator", default="##", help="prefix of continuation pieces (default: ##)")


def build_parser():
    parser = argparse.ArgumentParser(prog="tfsubword", description="Subword tokenizers for TensorFlow and Keras.")
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="learn a vocabulary")
    algorithms = train.add_subparsers(dest="model", required=True)
    wordpiece = algorithms.add_parser("wordpiece", help="learn a WordPiece vocabulary (the seeds' pair score)")
    wordpiece.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 text files; - reads standard input")
    wordpiece.add_argument("--output", "-o", required=True, help="where to write the vocabulary, one token per line")
    wordpiece.add_argument("--vocab-size", type=int, default=30000, help="tokens to learn (default: 30000)")
    _normalization_flags(wordpiece)
    wordpiece.add_argument("--special-tokens", type=_special_tokens, default=("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
                           help="comma-separated tokens placed first (default: [PAD],[UNK],[CLS],[SEP],[MASK])")
    wordpiece.add_argument("--min-frequency", type=int, default=1, help="never merge rarer pairs (default: 1)")
    wordpiece.add_argument("--max-token-length", type=int, default=None, help="longest token, in characters")
    wordpiece.add_argument("--algorithm", choices=("score", "likelihood"), default="score",
                           help="score: freq(ab)/(freq(a) freq(b)); likelihood: unigram log-likelihood gain")
    wordpiece.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                           help="progress bars on standard error (default: yes)")

    unigram = algorithms.add_parser("unigram", help="learn a unigram vocabulary (SentencePiece's algorithm)")
    unigram.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 text files; - reads standard input")
    unigram.add_argument("--output", "-o", required=True,
                         help="where to write the SentencePiece .model file (a piece<TAB>score .vocab goes beside it)")
    unigram.add_argument("--vocab-size", type=int, default=8000, help="pieces to learn, meta pieces included (default: 8000)")
    unigram.add_argument("--character-coverage", type=float, default=0.9995,
                         help="share of characters that must be pieces (default: 0.9995)")
    unigram.add_argument("--max-piece-length", type=int, default=16, help="longest piece, in characters (default: 16)")
    unigram.add_argument("--normalization", choices=NORMALIZATIONS, default="nmt_nfkc",
                         help="character rules applied before training, kept in the model (default: nmt_nfkc)")
    unigram.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                         help="progress bars on standard error (default: yes)")

    bpe = algorithms.add_parser("bpe", help="learn a byte-pair encoding (the seeds' most-frequent-pair rule)")
    bpe.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 text files; - reads standard input")
    bpe.add_argument("--output", "-o", required=True, help="folder to write vocab.json and merges.txt (merges.json without --byte-level) to")
    bpe.add_argument("--vocab-size", type=int, default=30000, help="tokens to learn (default: 30000)")
    bpe.add_argument("--byte-level", action=argparse.BooleanOptionalAction, default=True,
                     help="words as bytes in GPT-2's byte alphabet (default: yes)")
    bpe.add_argument("--special-tokens", type=_special_tokens, default=("<|endoftext|>",),
                     help="comma-separated tokens placed first (default: <|endoftext|>)")
    bpe.add_argument("--full-alphabet", action=argparse.BooleanOptionalAction, default=False,
                     help="all 256 byte symbols in the vocabulary, not only those that occur (default: no)")
    bpe.add_argument("--min-frequency", type=int, default=1, help="never merge rarer pairs (default: 1)")
    bpe.add_argument("--max-token-length", type=int, default=None, help="longest token, in symbols")
    bpe.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True,
                     help="progress bars on standard error (default: yes)")

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


def main(argv=None):
    arguments = build_parser().parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up chatter is not our output
    try:
        if arguments.command == "train":
            return _train(arguments)
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
    if arguments.model == "unigram":
        return _train_unigram(arguments)
    if arguments.model == "bpe":
        return _train_bpe(arguments)
    from tfsubword.train import train_wordpiece
    from tfsubword.vocab import write_vocabulary

    vocabulary = train_wordpiece(
        files=arguments.files,
        vocab_size=arguments.vocab_size,
        special_tokens=arguments.special_tokens,
        min_frequency=arguments.min_frequency,
        max_token_length=arguments.max_token_length,
        algorithm=arguments.algorithm,
        show_progress=arguments.progress,
        **_normalization_options(arguments),
    )
    write_vocabulary(vocabulary, arguments.output)
    print(f"wrote {len(vocabulary)} tokens to {arguments.output}", file=sys.stderr)
    return 0


def _train_unigram(arguments):
    from tfsubword.train import train_unigram
    from tfsubword.vocab import write_atomically

    vocabulary = train_unigram(
        files=arguments.files,
        vocab_size=arguments.vocab_size,
        model_file=arguments.output,
        character_coverage=arguments.character_coverage,
        max_piece_length=arguments.max_piece_length,
        normalization=arguments.normalization,
        show_progress=arguments.progress,
    )
    scores = os.path.splitext(arguments.output)[0] + ".vocab"
    write_atomically(scores, "".join(f"{piece}\t{score}\n" for piece, score in vocabulary).encode("utf-8"))
    print(f"wrote {len(vocabulary)} pieces to {arguments.output} and {scores}", file=sys.stderr)
    return 0


def _train_bpe(arguments):
    from tfsubword.train import train_bpe

    vocabulary, merges = train_bpe(
        files=arguments.files,
        vocab_size=arguments.vocab_size,
        byte_level=arguments.byte_level,
        special_tokens=arguments.special_tokens,
        full_alphabet=arguments.full_alphabet,
        min_frequency=arguments.min_frequency,
        max_token_length=arguments.max_token_length,
        output_dir=arguments.output,
        show_progress=arguments.progress,
    )
    print(f"wrote {len(vocabulary)} tokens and {len(merges)} merges to {arguments.output}", file=sys.stderr)
    return 0


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
    encode = tf.function(layer.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    texts = arguments.texts or (line.rstrip("\r\n") for line in sys.stdin)
    batch = []
    for text in texts:
        batch.append(text)
        if len(batch) == 1024:
            _print_rows(encode(tf.constant(batch)), arguments.ids)
            batch = []
    if batch:
        _print_rows(encode(tf.constant(batch)), arguments.ids)
    return 0


def _print_rows(rows, ids):
    for row in rows.to_list():
        print(" ".join(str(value) if ids else value.decode("utf-8") for value in row))


if __name__ == "__main__":
    sys.exit(main())
