"""A Hugging Face `tokenizer.json`'s normalizer (its checked steps) in the graph: functions of `[n]`
strings, in as few passes as the steps allow. `layers.huggingface` runs them.
"""

import base64
import json

import tensorflow as tf

from tfsubword import graph_ops as ops
from tfsubword.layers import decoders
from tfsubword.text import unicode_classes, unicode_normalizers
from tfsubword.text.oniguruma import re2_pattern
from tfsubword.text.precompiled import PrecompiledNormalizer

# Unicode's White_Space, which Hugging Face's `Strip` removes.
_WHITE_SPACE = ops.re2_class(unicode_classes.WHITE_SPACE)


def normalizer_steps(normalizer):
    """The file's normalizer (its checked steps) as functions of `[n]` strings, to run in turn, in as few
    passes as they allow: runs of Unicode normalizers (NFKD, StripAccents, Lowercase, ...) join into
    fewer tables, and string `Replace`s side by side with one content, whose patterns cannot meet,
    into one RE2 pass."""
    steps, run = [], []
    for step in [*normalizer, None]:
        if step is not None and step["type"] in unicode_normalizers.KINDS:
            run.append(step["type"])
            continue
        if run:
            steps += unicode_normalizers.rewrites(run)
            run = []
        if step is not None:
            steps.append(_joined_replace(steps.pop(), step) if _joinable(steps[-1:], step) else step)
    return [_normalizer_step(step) if isinstance(step, dict) else step for step in steps]


def _joinable(before, step):
    """Whether the `Replace` `step` can run in one pass with the one `before` (a list of one step or
    none): both of strings, with one content, and no character of the first's patterns or content in
    the second's patterns, so that no match of one can meet or make a match of the other."""
    earlier, later = (_strings(before[0]) if before else None), _strings(step)
    if not earlier or not later or before[0]["content"] != step["content"]:
        return False
    return not (set("".join(earlier)) | set(step["content"])) & set("".join(later))


def _strings(step):
    """The strings a `Replace` step replaces (several once joined), or None (a regex, another step)."""
    if not isinstance(step, dict) or step["type"] != "Replace":
        return None
    return step.get("strings") or ([step["pattern"]["String"]] if "String" in step["pattern"] else None)


def _joined_replace(first, step):
    return {**first, "strings": _strings(first) + _strings(step)}


def _normalizer_step(step):
    """One step of the file's normalizer (its checked JSON object) as a function of `[n]` strings."""
    kind = step["type"]
    if kind == "Precompiled":
        return PrecompiledNormalizer(base64.b64decode(step["precompiled_charsmap"]))
    if kind == "Prepend":
        return lambda texts: tf.where(tf.strings.length(texts) > 0, tf.strings.join([step["prepend"], texts]), texts)
    if kind == "Strip":
        sides = []
        if step["strip_left"]:
            sides.append(f"\\A{_WHITE_SPACE}+")
        if step["strip_right"]:
            sides.append(f"{_WHITE_SPACE}+\\z")
        return lambda texts: tf.strings.regex_replace(texts, "|".join(sides), "") if sides else texts
    pattern = step["pattern"]
    if "strings" in step:  # string patterns joined (`_joinable`): leftmost match, as one after another
        old = "|".join(ops.re2_literal(string) for string in step["strings"])
    elif pattern == {"Regex": "\\s+"} and _white_space_runs(step["content"]):
        old = _white_space_runs(step["content"])
    elif "String" in pattern:
        old = ops.re2_literal(pattern["String"])
    else:
        old = re2_pattern(pattern["Regex"])
    ops.check_re2(old, f"tokenizer.json: Replace pattern {json.dumps(pattern)[:200]}")
    return lambda texts: tf.strings.regex_replace(texts, old, decoders.rewrite(step["content"]))


def _white_space_runs(content):
    """For `Replace(Regex("\\s+"), content)` where `content` is one whitespace character (CLIP's " "):
    an RE2 pattern of the runs it changes, all but that character alone (every match costs RE2 a
    rewrite, and most runs are one space). Else None."""
    spaces = [c for low, high in unicode_classes.WHITE_SPACE for c in range(low, high + 1)]
    if len(content) != 1 or ord(content) not in spaces:
        return None
    others = ops.re2_class(ops.code_point_ranges([c for c in spaces if c != ord(content)]))
    return f"{ops.re2_literal(content)}{_WHITE_SPACE}+|{others}{_WHITE_SPACE}*"
