"""GPT-2's byte-level alphabet and pre-tokenization, in core TensorFlow ops.

Byte-level BPE writes every byte as one printable character: the bytes that are printable Latin-1
characters (`!`..`~`, `¡`..`¬`, `®`..`ÿ`) stand for themselves, and the other 68 bytes, in increasing
order, take the code points from U+0100 on (so a space is `Ġ`, U+0120, and a line feed `Ċ`).

Pre-tokenization is GPT-2's pattern, as Hugging Face's `ByteLevel(add_prefix_space=False)` runs it
(or Llama-3's or Qwen2's, `PATTERN_NAMES`, rewritten the same way):

    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+

RE2 (TensorFlow's regex engine) has no look-ahead, and its Unicode tables are older than the
Oniguruma ones Hugging Face uses, so here the classes are spelled out (`unicode_classes.py`, Unicode
16.0) and the look-ahead is replaced by an exact rewrite of the one situation it decides. `\\s+(?!\\S)`
matters only for a run of whitespace followed by a non-space character: the run then ends one
character early, and its last character starts the next token (joining the word after it if it is a
plain space, ` ?\\p{L}+`, or standing alone otherwise). A first pass marks those cuts; a second pass,
the pattern without look-ahead, marks every token; one split cuts at all the marks. The mark is the
byte 0xFF, which never occurs in UTF-8 and which no RE2 class matches, so it also bounds the second
pass's runs. Invalid UTF-8 is first replaced, one U+FFFD per invalid sequence.
"""

import functools

import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword.text import unicode_classes

_MARK = b"\xff"


@functools.cache
def byte_to_char():
    """The 256-entry tuple byte -> its character in the byte-level alphabet."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    kept = set(printable)
    chars, next_code_point = [], 256
    for byte in range(256):
        if byte in kept:
            chars.append(chr(byte))
        else:
            chars.append(chr(next_code_point))
            next_code_point += 1
    return tuple(chars)


@functools.cache
def char_to_byte():
    return {char: byte for byte, char in enumerate(byte_to_char())}


def to_byte_level(text):
    """A UTF-8 str or bytes written in the byte-level alphabet."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    table = byte_to_char()
    return "".join(table[byte] for byte in data)


def from_byte_level(token):
    """The bytes a byte-level token stands for; None if it has a character outside the alphabet."""
    table = char_to_byte()
    try:
        return bytes(table[char] for char in token)
    except KeyError:
        return None


# The pre-tokenizers, by the name of their pattern: GPT-2's; GPT-4's `cl100k_base`, which Llama-3
# uses; and Qwen2's, which is cl100k's taking one digit at a time (the regular expressions:
# `files.huggingface_components.SPLIT_PATTERNS`).
PATTERN_NAMES = ("gpt2", "llama3", "qwen2")


@functools.cache
def _patterns(name):
    """(pass 1: the look-ahead's cuts, its rewrite, pass 2: the tokens) for the pattern `name`."""
    spaces = unicode_classes.WHITE_SPACE
    letters, numbers = unicode_classes.LETTERS, unicode_classes.NUMBERS
    space = ops.re2_class(spaces)
    non_space = ops.re2_class(spaces, negate=True)
    letter, number = ops.re2_class(letters), ops.re2_class(numbers)
    other = ops.re2_class(spaces + letters + numbers, negate=True)
    if name == "gpt2":
        other_space = ops.re2_class([(low, high) for low, high in spaces if (low, high) != (0x20, 0x20)])
        assert other_space != space and (0x20, 0x20) in spaces
        # Pass 1, the look-ahead's cuts: a run that ends with a whitespace other than a space, then a
        # non-space (the run's head, its last character, the rest); or a run of two or more ending with
        # a space, then a non-space (the run's head, the space with what follows).
        cuts = f"({space}*)({other_space})({non_space})|({space}+)( {non_space})"
        cuts_rewrite = b"\\1\\4" + _MARK + b"\\2" + _MARK + b"\\3\\5"
        tokens = f"'s|'t|'re|'ve|'m|'ll|'d| ?{letter}+| ?{number}+| ?{other}+|{space}+"
        return cuts, cuts_rewrite, tokens
    # cl100k-like: `\s*[\r\n]+` takes a run of whitespace up to its last line break, so the
    # look-ahead decides only the run after that: two or more characters with no line break, then a
    # non-space. It ends one character early, and that last character goes with what follows
    # (`[^\r\n\p{L}\p{N}]?\p{L}+` or ` ?[^\s\p{L}\p{N}]+`) or stands alone, as the
    # second pass decides.
    line_breaks = ((0x0A, 0x0A), (0x0D, 0x0D))
    inline_space = ops.re2_class([(c, c) for low, high in spaces for c in range(low, high + 1) if c not in (10, 13)])
    cuts = f"({inline_space}+)({inline_space}{non_space})"
    cuts_rewrite = b"\\1" + _MARK + b"\\2"
    letter_lead = ops.re2_class(line_breaks + letters + numbers, negate=True)
    digits = f"{number}{{1,3}}" if name == "llama3" else number
    tokens = (
        f"(?i:'s|'t|'re|'ve|'m|'ll|'d)|{letter_lead}?{letter}+|{digits}| ?{other}+[\\r\\n]*|{space}*[\\r\\n]+|{space}+"
    )
    return cuts, cuts_rewrite, tokens


def split_words(lines, pattern="gpt2"):
    """`[n]` strings -> `[n, (words)]`: the pre-tokenization of `pattern` (one of `PATTERN_NAMES`), words
    as UTF-8 bytes.

    Invalid UTF-8 is replaced first (one U+FFFD per invalid sequence). Empty words may appear among
    the words (where two cuts meet); they hold no bytes and give no tokens.
    """
    cuts, cuts_rewrite, tokens = _patterns(pattern)
    text = tf.strings.unicode_transcode(lines, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
    text = tf.strings.regex_replace(text, cuts, cuts_rewrite)
    text = tf.strings.regex_replace(text, tokens, _MARK + b"\\0")
    return tf.strings.split(text, sep=_MARK)
