"""Stored text made safe to show: anyone can write a run's name, notes or tags (the console, a
hand edit, an imported file), so a terminal or a Qt widget must never receive it raw — an
escape sequence would drive the terminal (`\\x1b[2J` clears it), a bidi override would reorder
what is read (`\\u202e`), and Qt guesses HTML in labels, tooltips and legends. Torch-free,
Qt-free: the CLI and the console share it.
"""
from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from typing import Any

# Every C0 control and DEL, every C1 control (which some terminals obey as 8-bit CSI/OSC), the
# bidirectional embeddings, overrides, isolates and marks, the line and paragraph separators
# (a line break to Qt), and lone surrogates (which cannot be encoded for a terminal at all).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(m: re.Match) -> str:
    ch = m.group()
    if ch in _SHORT:
        return _SHORT[ch]
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def printable(text: Any, keep: str = "") -> str:
    """`text` (made a str) with each control, bidi-formatting or separator character replaced by
    a visible escape: `\\x1b`, `\\u202e`. Characters in `keep` (e.g. "\\n" where a widget shows
    several lines) stay. Everything else, any script or emoji, is left as it is."""
    s = text if isinstance(text, str) else "" if text is None else str(text)
    if not keep:
        return _UNSAFE.sub(_escape, s)
    return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _escape(m), s)


def as_html(text: Any) -> str:
    """`text` as HTML that shows it verbatim (printable, newlines kept as line breaks), for the
    places Qt renders rich text: tooltips, legends and labels that guess."""
    body = html.escape(printable(text, keep="\n")).replace("\n", "<br>")
    return f"<p style='white-space:pre-wrap'>{body}</p>"


def shown(row: Mapping[str, Any], column: str, none: str = "") -> str:
    """One field of a store row as text to show: `?` where the store could not read it (the
    row's `damaged` names the column) and salvaged no text from it, else the value made
    printable (`none` for None)."""
    v = row.get(column)
    if column in (row.get("damaged") or {}) and not (isinstance(v, str) and v):
        return "?"
    return none if v is None else printable(v)


MAX_DEPTH = 100     # deeper JSON is cut: a payload nested a thousand deep must not exhaust the stack


def json_safe(obj: Any, depth: int = 0) -> Any:
    """A structure that `json.dumps(..., allow_nan=False)` accepts: a non-finite number becomes
    null (a value that cannot be read), bytes become text, any other odd object its str, and
    what is nested deeper than MAX_DEPTH a short note."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (str, int)):
        return obj
    if isinstance(obj, (dict, list, tuple)) and depth >= MAX_DEPTH:
        return f"(nested deeper than {MAX_DEPTH} levels)"
    if isinstance(obj, dict):
        return {str(k): json_safe(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v, depth + 1) for v in obj]
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    return str(obj)


def counted(n: int, noun: str) -> str:
    """"1 seed", "2 seeds": a count with its noun (plural by an s)."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
