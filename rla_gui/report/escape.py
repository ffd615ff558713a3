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
    s = round(seconds)
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


# -- markup helpers: cells are markup already (built from esc/num), never raw user text ---------
def table(head: list[str] | None, rows, cls: str = "", numeric: tuple[int, ...] = (), chunk: int = 0,
          wide: bool = False) -> str:
    """A table with cellspacing/cellpadding attributes too: Qt's rich text reads those, where a
    browser reads the stylesheet. `chunk`: start a new table (same class and head) every so many
    rows — Qt paints a long table once per page it spans, so one 2000-row table costs seconds."""
    width = ' width="100%"' if wide else ""    # long text columns wrap less: fewer PDF pages
    start = f'<table class="{cls}" cellspacing="0" cellpadding="3"{width}>'
    if head:   # <thead>: Qt repeats it on every page the table continues on
        start += "<thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead>"
    out = [start]
    for i, row in enumerate(rows):
        if chunk and i and i % chunk == 0:
            out += ["</table>", start]
        if isinstance(row, str):          # a full-width row: a group heading or a note
            out.append(f'<tr><td class="group" colspan="{len(head or [0, 0])}">{row}</td></tr>')
            continue
        out.append("<tr>" + "".join(f'<td class="n" align="right">{c}</td>' if j in numeric else f"<td>{c}</td>"
                                    for j, c in enumerate(row)) + "</tr>")
    out.append("</table>")
    return "".join(out)


def kv_table(pairs, cls: str = "kv") -> str:
    return table(None, ([f"<b>{esc(k)}</b>", v] for k, v in pairs), cls)
