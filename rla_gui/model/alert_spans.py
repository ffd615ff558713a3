"""Where alerts held, as spans a chart shades: an alert that flaps (raised and cleared hundreds of
times) drew hundreds of vertical lines through every chart; its spans, merged where they would
touch on screen, are a few shaded bands.

Qt-free: the markers widget maps the spans to its x-axis and asks here which bands to draw.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .panel_spec import ALERT_BEGAN, ALERT_ENDED

# A chart holds at most this many bands: beyond it the closest spans merge (the Events log and
# the read-out still name each beginning and end).
MAX_BANDS = 200
# spans nearer than this on screen merge into one band; none is drawn narrower than a pixel
MERGE_PIXELS = 3.0


def alert_spans(marks: Iterable[tuple[int, str]]) -> list[tuple[float, float]]:
    """The iterations over which at least one alert held, as (first, last) spans, oldest first;
    an alert not yet ended holds to infinity. Several alerts may hold at once (their spans join),
    and an end with no beginning before it (its beginning dropped with the oldest markers) is
    ignored."""
    edges = sorted((float(it), 0 if kind == ALERT_BEGAN else 1)
                   for it, kind in marks if kind in (ALERT_BEGAN, ALERT_ENDED))
    spans: list[tuple[float, float]] = []
    holding, first = 0, 0.0
    for at, is_end in edges:
        if not is_end:
            if holding == 0:
                first = at
            holding += 1
        elif holding:
            holding -= 1
            if holding == 0:
                spans.append((first, at))
    if holding:
        spans.append((first, float("inf")))
    return spans


def merged_bands(starts: np.ndarray, ends: np.ndarray, min_gap: float, min_width: float = 0.0,
                 max_bands: int = MAX_BANDS) -> tuple[np.ndarray, np.ndarray]:
    """Sorted, disjoint spans (on the chart's x-axis) as the bands to shade: spans less than
    `min_gap` apart join, and past `max_bands` only the widest gaps still part two bands; each
    band is at least `min_width` wide."""
    starts, ends = np.asarray(starts, np.float64), np.asarray(ends, np.float64)
    if len(starts) == 0:
        return starts, ends
    gaps = starts[1:] - ends[:-1]
    parts = gaps >= min_gap
    if np.count_nonzero(parts) > max_bands - 1:
        parts = np.zeros(len(gaps), bool)
        if max_bands > 1:
            parts[np.argsort(gaps, kind="stable")[len(gaps) - (max_bands - 1):]] = True
    cuts = np.flatnonzero(parts)
    firsts = np.concatenate([[0], cuts + 1])
    lasts = np.concatenate([cuts, [len(starts) - 1]])
    band_starts, band_ends = starts[firsts], ends[lasts]
    return band_starts, np.maximum(band_ends, band_starts + min_width)
