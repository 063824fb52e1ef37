"""Word counts files: what `tfsubword count` and `tfsubword.beam.CountWords` write, and every trainer reads.

    #tfsubword-counts {"model": "wordpiece", "lowercase": true, ...}
    word<TAB>count
    ...

The first line names the pre-tokenizer that counted (the trainer checks it is its own). Each line after
it is a word and its count; in words, a backslash, a tab, a line feed and a carriage return are written
`\\\\`, `\\t`, `\\n` and `\\r`, so any word round-trips. Lines may come in any order and a word may come
more than once (shards written apart): reading sums them and orders the words by count, most frequent
first, then by code point (`ordered`), so every reader of the same counts sees the same order. It is
the order in which the trainers give words to their learners, whatever the source (see
`tfsubword.train`). The reader treats the file as untrusted: anything else is a `ValueError` naming
the file and the line.
"""

import json
import os
import re

from tfsubword import checks
from tfsubword.files import storage
from tfsubword.text import normalization_rules

MAGIC = "#tfsubword-counts"
_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_UNESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}
_TRANSLATION = str.maketrans(_ESCAPES)
_ESCAPED = re.compile(r"\\(.|$)", re.DOTALL)  # a backslash and what follows it (nothing at the end)


# Each trainer's pre-tokenizer options, with their defaults (those of the trainers and layers).
PRE_TOKENIZERS = {
    "wordpiece": {"lowercase": True, "strip_accents": None, "split_on_cjk": True},
    "unigram": {"normalization": "nmt_nfkc", "add_dummy_prefix": True, "remove_extra_whitespaces": True},
    "bpe": {},
}


def pre_tokenizer(model, **options):
    """The spec of the pre-tokenizer that `model`'s trainer counts words with: a dict of `model` and its
    options (checked, defaults filled), as a counts file's first line names it."""
    checks.choice("model", model, tuple(PRE_TOKENIZERS))
    defaults = PRE_TOKENIZERS[model]
    for name, value in options.items():
        if name not in defaults:
            valid = ", ".join(defaults) or "none"
            raise ValueError(f"`{name}` is no option of the {model} pre-tokenizer (its options: {valid}).")
        if name == "normalization":
            checks.choice(name, value, normalization_rules.NAMES)
        else:
            checks.boolean(name, value, optional=name == "strip_accents")
    return {"model": model, **defaults, **options}


def describe(spec):
    return json.dumps(spec, sort_keys=True)


def header(spec):
    """The first line (without its line break) of a counts file counted with the pre-tokenizer `spec`."""
    return f"{MAGIC} {describe(spec)}"


def escape(word):
    return word.translate(_TRANSLATION)


def line(word, count):
    """One line of a counts file (without its line break)."""
    return f"{escape(word)}\t{count}"


def ordered(counts):
    """`counts` (word -> count) as a dict in the files' and the trainers' order: by count, most frequent
    first, then by the word's code points. It depends on the counts alone, not on their order."""
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def encode(counts, spec):
    """The bytes of a counts file of `counts` (word -> positive count; empty words are left out)."""
    lines = [header(spec)] + [line(word, count) for word, count in ordered(counts).items() if word]
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_counts(counts, spec, path):
    """Write `counts` counted with the pre-tokenizer `spec` to `path`, atomically."""
    storage.write_atomically(path, encode(counts, spec))


def read_counts(paths, argument="counts"):
    """(spec, counts) of one counts file or several (`paths`: a path or a list of paths), which must have
    been counted with the same pre-tokenizer; counts summed over the files, in the files' order (see
    the module)."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    paths = [os.fsdecode(path) for path in paths]
    if not paths:
        raise ValueError(f"`{argument}` names no file.")
    spec, counts = None, {}
    for path in paths:
        file_spec = _read_one(path, argument, counts)
        if spec is not None and file_spec != spec:
            raise ValueError(
                f"The counts files {paths[0]!r} and {path!r} were counted with different pre-tokenizers: "
                f"{describe(spec)} and {describe(file_spec)}."
            )
        spec = file_spec
    if not counts:
        raise ValueError(f"The counts files {paths!r} hold no words.")
    return spec, ordered(counts)


def _read_one(path, argument, counts):
    """Add the counts of the file at `path` to `counts`; return its pre-tokenizer spec."""
    data = storage.read_bytes(path, argument)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path!r} is not a counts file: not UTF-8 at byte {error.start}.") from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    first = lines[0] if lines else ""
    if not first.startswith(MAGIC + " "):
        raise ValueError(f"{path!r} is not a counts file: its first line must start with {MAGIC!r}.")
    try:
        spec = json.loads(first[len(MAGIC) + 1 :])
    except ValueError:
        spec = None
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), str):
        raise ValueError(f'{path!r}: the first line must be {MAGIC!r} and a JSON object with a "model".')
    for number, entry in enumerate(lines[1:], start=2):
        word, count = _parse(entry, path, number)
        counts[word] = counts.get(word, 0) + count
    return spec


def _parse(entry, path, number):
    where = f"{path!r}, line {number}"
    word, tab, count = entry.rpartition("\t")
    if not tab:
        raise ValueError(f"{where}: expected a word, a tab and a count. Received: {entry[:100]!r}.")
    if not count.isascii() or not count.isdigit() or int(count) == 0:
        raise ValueError(f"{where}: the count must be a positive integer. Received: {count[:100]!r}.")
    if not word:
        raise ValueError(f"{where}: the word is empty.")
    if "\t" in word or "\r" in word:
        raise ValueError(f"{where}: a tab or a carriage return in a word must be escaped (\\t, \\r).")
    try:
        return _ESCAPED.sub(lambda match: _UNESCAPES[match.group(1)], word), int(count)
    except KeyError as error:
        written = "\\" + error.args[0]
        raise ValueError(f"{where}: {written!r} is no escape (\\\\, \\t, \\n, \\r).") from None
