"""The Oniguruma regexes of a `tokenizer.json` (`Split`, `Replace`) as RE2 patterns that match the same.

Hugging Face runs them with Oniguruma (Ruby syntax); TensorFlow has RE2. Both read characters,
escapes, groups, alternation and greedy or lazy quantifiers alike (leftmost alternative first), so
those pass through. Their character classes follow different Unicode versions, so every class is
spelled out as code point ranges: `\\s`, `\\d`, `\\w`, `\\p{L}`, `\\p{N}`, `\\p{P}`, their negations,
`.` (any character but a line feed), and bracket classes made of them, of characters and of ranges.
Anything else (look-around, anchors other than `\\A` and `\\z`, back-references, other properties,
class intersection, options) is refused, as are patterns, and repeated parts, that can match nothing:
the two engines place and repeat empty matches differently. No TensorFlow here.
"""

from tfsubword.text import oniguruma_classes, re2_class, unicode_classes

_EVERYTHING = ((0, 0xD7FF), (0xE000, 0x10FFFF))
_CLASSES = {
    "s": unicode_classes.WHITE_SPACE,
    "d": oniguruma_classes.DIGIT,
    "w": oniguruma_classes.WORD,
}
_PROPERTIES = {"L": unicode_classes.LETTERS, "N": unicode_classes.NUMBERS, "P": oniguruma_classes.PUNCTUATION}
_CONTROLS = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v", "a": "\a", "e": "\x1b"}
# Characters with a meaning in a regular expression; any other stands for itself.
_SYNTAX = set("\\^$.|?*+()[]{}")
SUPPORTED = (
    "characters, escaped characters, \\t \\n \\r \\f \\v \\xHH \\x{H...} \\uHHHH, \\A, \\z, ., \\s \\d \\w "
    "\\p{L} \\p{N} \\p{P} and their negations, [...] classes of them, groups, |, and greedy or lazy "
    "quantifiers * + ? {m} {m,} {m,n}"
)


def re2_pattern(pattern, owner="Replace"):
    """The RE2 pattern that matches what the Oniguruma `pattern` matches, or `ValueError` naming `owner`
    (the component) and what is not supported."""
    return _Parser(pattern, owner).parse()


def complement(ranges):
    """The code points (surrogates aside) outside the sorted, disjoint inclusive `ranges`."""
    result, start = [], 0
    for low, high in sorted(ranges) + [(0x110000, 0x110000)]:
        for gap_low, gap_high in ((start, min(low - 1, 0xD7FF)), (max(start, 0xE000), low - 1)):
            if gap_low <= gap_high:
                result.append((gap_low, gap_high))
        start = max(start, high + 1)
    return result


def _union(range_lists):
    merged = []
    for low, high in sorted(pair for ranges in range_lists for pair in ranges):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


class _Parser:
    def __init__(self, pattern, owner):
        self.pattern, self.owner, self.position = pattern, owner, 0

    def fail(self, why):
        raise ValueError(
            f"tokenizer.json: {self.owner} regex {self.pattern!r} is not supported ({why}; supported: {SUPPORTED})."
        )

    def peek(self, text=None):
        if text is not None:
            return self.pattern.startswith(text, self.position)
        return self.pattern[self.position] if self.position < len(self.pattern) else None

    def take(self):
        char = self.peek()
        if char is None:
            self.fail("an unfinished pattern")
        self.position += 1
        return char

    def parse(self):
        text, empty = self.alternatives()
        if self.position != len(self.pattern):
            self.fail(f"the character {self.pattern[self.position]!r}")
        if empty:
            self.fail("it can match nothing")
        return text

    def alternatives(self):
        parts = [self.sequence()]
        while self.peek() == "|":
            self.position += 1
            parts.append(self.sequence())
        return "|".join(text for text, _ in parts), any(empty for _, empty in parts)

    def sequence(self):
        texts, empty = [], True
        while self.peek() is not None and self.peek() not in "|)":
            text, atom_empty = self.atom()
            text, atom_empty = self.quantified(text, atom_empty)
            texts.append(text)
            empty = empty and atom_empty
        return "".join(texts), empty

    def atom(self):
        """(RE2 text, whether it can match nothing) of one atom."""
        char = self.take()
        if char == "\\":
            escaped = self.peek()
            if escaped in ("A", "z"):
                self.position += 1
                if self.peek() is not None and self.peek() in "*+?{":
                    self.fail("a repeated anchor")
                return "\\" + escaped, True
            return re2_class(self.escape(in_class=False)), False
        if char == "(":
            if self.peek("?:"):
                self.position += 2
            elif self.peek() == "?":
                self.fail("a group other than (...) and (?:...)")
            text, empty = self.alternatives()
            if self.take() != ")":
                self.fail("an unclosed group")
            return f"(?:{text})", empty
        if char == "[":
            return re2_class(self.bracket()), False
        if char == ".":
            return re2_class(complement([(0xA, 0xA)])), False
        if char in _SYNTAX:
            self.fail(f"the character {char!r}")
        return re2_class([(ord(char), ord(char))]), False

    def escape(self, in_class):
        """The ranges of the escape after a backslash."""
        char = self.take()
        if char in _CLASSES or char.lower() in _CLASSES:
            ranges = list(_CLASSES[char.lower()])
            return complement(ranges) if char.isupper() else ranges
        if char in "pP":
            negate = char == "P"
            if self.take() != "{":
                self.fail("\\p without {...}")
            end = self.pattern.find("}", self.position)
            name = self.pattern[self.position : end] if end > 0 else ""
            self.position = end + 1 if end > 0 else len(self.pattern)
            if name.startswith("^"):
                negate, name = not negate, name[1:]
            if name not in _PROPERTIES:
                self.fail(f"the property {name!r}")
            ranges = list(_PROPERTIES[name])
            return complement(ranges) if negate else ranges
        if char in _CONTROLS:
            return [(ord(_CONTROLS[char]),) * 2]
        if char in "xu":
            return [(self.code_point(char),) * 2]
        if char in _SYNTAX or char in "-/ #'\"!,:;<=>@_`~&%" or (in_class and char == "]"):
            return [(ord(char), ord(char))]
        self.fail(f"the escape \\{char}")

    def code_point(self, kind):
        """The code point of `\\xHH`, `\\x{H...}` or `\\uHHHH`, after the `x` or `u`."""
        braced = kind == "x" and self.peek() == "{"
        if braced:
            end = self.pattern.find("}", self.position)
            digits = self.pattern[self.position + 1 : end] if end > 0 else ""
            self.position = end + 1 if end > 0 else len(self.pattern)
        else:
            count = 2 if kind == "x" else 4
            digits = self.pattern[self.position : self.position + count]
            self.position += count
            digits = digits if len(digits) == count else ""
        if not digits or not all(c in "0123456789abcdefABCDEF" for c in digits) or len(digits) > 6:
            self.fail(f"the escape \\{kind} without hexadecimal digits")
        value = int(digits, 16)
        if kind == "x" and not braced and value >= 0x80:
            self.fail(f"the escape \\x{digits}, a byte to Oniguruma, not a character")
        if value > 0x10FFFF or 0xD800 <= value < 0xE000:
            self.fail(f"the code point {value:X}")
        return value

    def bracket(self):
        """The ranges of a bracket class, after its `[`."""
        negate = self.peek() == "^"
        if negate:
            self.position += 1
        if self.peek() == "]" or self.peek("[:"):
            self.fail("an empty class or a POSIX class")
        parts = []
        while True:
            char = self.take()
            if char == "]":
                break
            if char == "&" and self.peek() == "&":
                self.fail("a class intersection")
            if char == "[":
                if self.peek() == ":":
                    self.fail("a POSIX class")
                parts.append(self.bracket())
                continue
            if char == "\\":
                ranges = self.escape(in_class=True)
            else:
                ranges = [(ord(char), ord(char))]
            if self.peek() == "-" and self.pattern[self.position + 1 : self.position + 2] not in ("]", ""):
                self.position += 1
                if len(ranges) != 1 or ranges[0][0] != ranges[0][1]:
                    self.fail("a range from a class")
                high = self.take()
                if high == "[":
                    self.fail("a range to a class")
                high = self.escape(in_class=True) if high == "\\" else [(ord(high), ord(high))]
                if len(high) != 1 or high[0][0] != high[0][1] or high[0][0] < ranges[0][0]:
                    self.fail("a range out of order, or to a class")
                ranges = [(ranges[0][0], high[0][0])]
            parts.append(ranges)
        ranges = _union(parts)
        ranges = complement(ranges) if negate else ranges
        if not ranges:
            self.fail("a class that matches no character")
        return ranges

    def quantified(self, text, empty):
        char = self.peek()
        if empty and char is not None and char in "*+?{":
            # Each engine stops repeating an empty match at its own point.
            self.fail("a repeat of something that can match nothing")
        if char is not None and char in "*+?":
            self.position += 1
            text, empty = text + char, empty or char != "+"
        elif char == "{":
            end = self.pattern.find("}", self.position)
            bounds = self.pattern[self.position + 1 : end] if end > 0 else ""
            low, comma, high = bounds.partition(",")
            digits = set("0123456789")
            if not low or not set(low) <= digits or not set(high) <= digits or int(low) > 1000:
                self.fail("a repeat other than {m}, {m,} or {m,n} up to 1000")
            if high and (int(high) > 1000 or int(high) < int(low)):
                self.fail("a repeat {m,n} with n < m or n over 1000")
            self.position = end + 1
            text, empty = text + "{" + bounds + "}", empty or int(low) == 0
        else:
            return text, empty
        if self.peek() == "?":  # lazy: the fewest repeats first, in both engines
            self.position += 1
            text += "?"
        elif self.peek() is not None and self.peek() in "*+{":
            self.fail("a possessive or repeated quantifier")
        return text, empty
