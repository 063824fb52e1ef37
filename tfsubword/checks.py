"""Argument checks for the layers and trainers. Each error names the argument, the value and what is valid:

    ValueError: `vocab_size` must be an int of at least 1. Received: vocab_size=0.

Every check returns the value it accepted, so a constructor can check and store in one line.
"""

import numbers


def invalid(name, value, valid):
    """The `ValueError` for argument `name` holding `value` where `valid` (a phrase) was expected."""
    return ValueError(f"`{name}` must be {valid}. Received: {name}={value!r}.")


def boolean(name, value, optional=False):
    """`value` if it is True or False (or None, when `optional`)."""
    if isinstance(value, bool) or (optional and value is None):
        return value
    raise invalid(name, value, "True, False or None" if optional else "True or False")


def integer(name, value, minimum=1, optional=False):
    """`value` if it is an int (not a bool) of at least `minimum` (or None, when `optional`)."""
    if optional and value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise invalid(name, value, f"an int of at least {minimum}" + (" or None" if optional else ""))
    return int(value)


def nonnegative(name, value, optional=False, valid="a finite number >= 0"):
    """`value` as a float if it is a finite number of at least 0 (or None, when `optional`)."""
    if optional and value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < float("inf"):
        raise invalid(name, value, valid + (" or None" if optional else ""))
    return float(value)


def probability(name, value, optional=False):
    """`value` as a float if it is a number in [0, 1] (or None, when `optional`)."""
    if optional and value is None:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value <= 1:
        raise invalid(name, value, "a number from 0 to 1" + (" or None" if optional else ""))
    return float(value)


def string(name, value, optional=False, empty=False):
    """`value` if it is a str, non-empty unless `empty` (or None, when `optional`)."""
    if optional and value is None:
        return value
    if not isinstance(value, str) or (not empty and not value):
        valid = "a str" if empty else "a non-empty str"
        raise invalid(name, value, valid + (" or None" if optional else ""))
    return value


def choice(name, value, choices):
    """`value` if it is one of `choices`."""
    if isinstance(value, str) and value in choices:
        return value
    raise invalid(name, value, "one of " + ", ".join(map(repr, choices)))


def fraction(name, value, low, high, include_low=False, include_high=True):
    """`value` if it is a real number within the interval from `low` to `high`."""
    bounds = ("[" if include_low else "(") + f"{low}, {high}" + ("]" if include_high else ")")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise invalid(name, value, f"a number in {bounds}")
    above = value >= low if include_low else value > low
    below = value <= high if include_high else value < high
    if not (above and below):
        raise invalid(name, value, f"a number in {bounds}")
    return float(value)


def tokens(name, value):
    """`value` as a tuple if it is a sequence of non-empty str without line breaks (not a single str)."""
    if isinstance(value, str):
        raise invalid(name, value, "a sequence of tokens, not a single str")
    try:
        items = tuple(value)
    except TypeError:
        raise invalid(name, value, "a sequence of tokens") from None
    for token in items:
        if not isinstance(token, str) or not token or "\n" in token or "\r" in token:
            raise invalid(name, value, "a sequence of non-empty str without line breaks")
    return items
