"""Escaping and formatting for the reports: the only way a value reaches the markup.

Run names, notes, tags, task parameters, critic summaries, event payloads, error messages and
config values are all user-controlled (a name typed in the console, a `--set` on the command
line, a payload from a command). Every one of them goes through `esc`, which escapes quotes too,
so a value is inert both as element text and inside an attribute.
"""
from __future__ import annotations

import html
import json
import math
import time
from typing import Any

DASH = "—"


def esc(value: Any) -> str:
    """Text for markup: None → an em dash, anything else str() then HTML-escaped (quotes too)."""
    if value is None:
        return DASH
    return html.escape(str(value), quote=True)


def num(x: Any, digits: int = 3) -> str:
    """A metric for a table cell: short, fixed precision for fractions, no noise for integers."""
    if x is None:
        return DASH
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    try:
        x = float(x)
    except (TypeError, ValueError):
        return esc(x)
    if not math.isfinite(x):
        return esc(x)
    if x == int(x) and abs(x) >= 1000:
        return f"{int(x):,}"
    return f"{x:.{digits}g}" if abs(x) >= 1000 or (x != 0 and abs(x) < 1e-3) else f"{x:.{digits}f}"


def when(ts: float | None) -> str:
    """Epoch seconds as local date and time with the zone, so a reader abroad is not misled."""
    if not ts:
        return DASH
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(ts))


def duration(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return DASH
    s = int(round(seconds))
    if s < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


def value_text(v: Any, limit: int = 300) -> str:
    """A config value or payload as compact text (JSON for containers), cut to `limit` chars,
    escaped. Cutting happens before escaping so an entity is never split."""
    if isinstance(v, str):
        s = v
    else:
        try:
            s = json.dumps(v, ensure_ascii=False, separators=(", ", ": "), default=str)
        except (TypeError, ValueError):
            s = str(v)
    if len(s) > limit:
        s = s[:limit - 1] + "…"
    return esc(s)


def flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    """{"policy": {"lam": 1}} → {"policy.lam": 1}; lists stay values."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out
