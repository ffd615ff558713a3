"""The official answer check, byte for byte the reference's rule."""
from __future__ import annotations


def outputs_match(actual: bytes, expected: bytes) -> bool:
    """True when the two outputs hold the same whitespace-separated tokens in the same order.

    This is Open-AgentRL's `test_if_eq` (reward/execute.py: `" ".join(x.split()) == " ".join(y.split())`),
    which splits on any whitespace, line breaks included: "1 2\\n3" matches "1\\n2 3". Deviation: the
    reference compares str; here both sides are bytes decoded as UTF-8 with surrogateescape, so invalid
    UTF-8 compares by its bytes instead of crashing, and valid UTF-8 splits on exactly str.split()'s
    Unicode whitespace as the reference does. (A per-line strip rule would be stricter than the
    reference, so it is not used.)"""
    a = actual.decode("utf-8", "surrogateescape").split()
    b = expected.decode("utf-8", "surrogateescape").split()
    return a == b
