"""Plots of values near the largest float keep a finite range.

pyqtgraph's `ViewBox.setRange` widens a range by a margin computed from its ends: `(mn + mx) *
1.5e-15`, the padding from `mx - mn`. For values a run may hold (an imported 1.5e308, ±1e200
beside each other) that arithmetic overflows and it raises "Cannot set range [-inf, inf]" — from
the auto-range, at every paint of a console plot, and in a report's chart. So every range it is
asked for is first clamped to ±LIMIT, where that margin and padding stay finite: a curve beyond
it runs along the edge of the plot (the tables and read-outs still give its values). Installed
once per process by `install()` (the console's plot theme, the reports' application).
"""
from __future__ import annotations

import math
from typing import Any

from pyqtgraph import ViewBox
from PySide6 import QtCore

LIMIT = 1e300


def _clamped(span: Any) -> Any:
    if span is None:
        return None
    return [min(LIMIT, max(-LIMIT, float(v))) if not math.isnan(float(v)) else v for v in span]


def install() -> None:
    """Clamp every range a pyqtgraph view box is given (idempotent)."""
    original = ViewBox.setRange
    if getattr(original, "clamps_to_finite", False):
        return

    def set_range(self, rect=None, xRange=None, yRange=None, *args, **kwargs):
        if rect is not None:      # a rectangle is its two spans
            rect = QtCore.QRectF(rect)
            xRange = xRange if xRange is not None else [rect.left(), rect.right()]
            yRange = yRange if yRange is not None else [rect.top(), rect.bottom()]
        return original(self, None, _clamped(xRange), _clamped(yRange), *args, **kwargs)

    set_range.clamps_to_finite = True      # type: ignore[attr-defined]
    ViewBox.setRange = set_range
