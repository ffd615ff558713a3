"""The report's charts: pyqtgraph drawn offscreen into PNG bytes.

PNG rather than SVG: the HTML report must carry no `http:` reference at all, and an SVG needs
its `xmlns="http://www.w3.org/2000/svg"`; and the PDF is laid out by QTextDocument, which shows
raster images only. One picture thus serves both formats.

Nothing here shows a window: a plot item lives in a bare pyqtgraph scene and is rendered into a
QImage. Legends are not drawn into the image; each Chart carries its legend entries and the
report writes them as (escaped) text, which keeps run names searchable in the PDF and out of
Qt's rich-text label rendering.
"""
from __future__ import annotations

from typing import cast

from ..headless import ensure_offscreen

ensure_offscreen()      # before Qt loads

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from rla_engine import metrics
from rla_engine.vocabulary import VARIANT_KINDS, EventKind, TaskStatus

from ..model.comparison import colour_of
from ..model.lod import bounds, finite_points, thinned
from ..model.panel_spec import (AGREEMENT, BALANCE, DIFFICULTY, LOSSES, MARKER_COLOURS, MARKER_KINDS, PALETTE, POLICY,
                                TIER_COLOURS, Panel, agreement_panel, chart_title, run_config, short)
from ..model import variants
from ..model.run_data import RunData, ema
from ..model.variants import ACCEPTED, REJECTED
from ..widgets import finite_range

# per drawn line, as a live plot 1000 pixels wide draws it (model.lod: the same min/max bins)
MAX_POINTS = 2000
BAND_BINS = 400            # a filled band's outline, per side
MAX_MARKERS = 300          # more vertical lines than this are a grey wall, not information
MAX_VARIANT_POINTS = 4000  # drawn, evenly over the run; the chart's note says when that is a sample
SMOOTH_FROM = 400          # longer series get a bold EMA over their faint raw line
SCALE = 2.0                # device pixels per logical pixel: sharp in print and on HiDPI screens
INK = "#333333"

COMPARE_KEYS = (metrics.SUCCESS, metrics.EVAL_SUCCESS, metrics.REWARD, metrics.OUTCOME_AGREEMENT,
                metrics.PROCESS_AGREEMENT, metrics.MU, metrics.DIFFICULTY_MEAN, metrics.IN_BAND, metrics.LOSS_POLICY,
                metrics.LOSS_JUDGE)

COMPARE_TITLES = {metrics.SUCCESS: "Success (train)", metrics.EVAL_SUCCESS: "Eval success", metrics.REWARD: "Reward R",
                  metrics.OUTCOME_AGREEMENT: "Outcome agreement", metrics.PROCESS_AGREEMENT: "Process agreement",
                  metrics.MU: "μ balance", metrics.DIFFICULTY_MEAN: "Pool difficulty (mean)",
                  metrics.IN_BAND: "Tasks in band",
                  metrics.LOSS_POLICY: "Policy loss", metrics.LOSS_JUDGE: "Judge loss",
                  metrics.SYN_UT_ACC: "Generated tests: syn UT acc",
                  metrics.PERFECT_UT_RATE: "Generated tests: perfect UT rate"}


def compare_keys(bundles: list[dict]) -> tuple[str, ...]:
    """COMPARE_KEYS, with the agreement keys of the runs' reward models (panel_spec.agreement_panel):
    the test generator's beside or instead of the step judge's."""
    agreement = agreement_panel(run_config(b.get("run")) for b in bundles).keys
    tests = tuple(k for k in (metrics.SYN_UT_ACC, metrics.PERFECT_UT_RATE) if k in agreement)
    keys = [k for k in COMPARE_KEYS if k not in AGREEMENT.keys or k in agreement]
    at = keys.index(metrics.PROCESS_AGREEMENT if metrics.PROCESS_AGREEMENT in keys else metrics.REWARD) + 1
    return (*keys[:at], *tests, *keys[at:])


@dataclass
class LegendEntry:
    label: str          # plain text; the report escapes it
    colour: str
    style: str = "line"  # line | dash | band | marker | triangle | cross


@dataclass
class Chart:
    id: str
    title: str
    png: bytes
    width: int           # logical pixels (the PNG is SCALE times larger)
    height: int
    legend: list[LegendEntry] = field(default_factory=list)
    note: str = ""


_app = None


def ensure_app() -> QtWidgets.QApplication:
    """pyqtgraph items need a QApplication; a console that exports in-process already has one."""
    global _app
    finite_range.install()      # values near the largest float: no "Cannot set range [-inf, inf]"
    app = QtWidgets.QApplication.instance()
    if app is None:
        app = _app = QtWidgets.QApplication(["rla-report"])
    return cast(QtWidgets.QApplication, app)


# -- data ----------------------------------------------------------------------------------
def run_data(bundle: dict) -> RunData:
    """A bundle's metrics in the console's one series container."""
    return RunData.from_rows(bundle.get("metrics") or ())


def not_finite_note(count: int) -> str:
    """What a chart says of the values it has no point for."""
    return (f"{count:,} value{'s' if count != 1 else ''} not a finite number: no point drawn, "
            "a gap in the line." if count else "")


def markers(bundle: dict) -> list[tuple[float, str]]:
    return [(float(e["iteration"]), e["kind"]) for e in bundle.get("events") or () if e["kind"] in MARKER_KINDS]


def variant_points(bundle: dict) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(iteration, difficulty) of accepted and rejected variants: from the decision events, or,
    where a bundle carries none, from the task rows (which keep every decided candidate)."""
    acc: list[tuple[float, float]] = []
    rej: list[tuple[float, float]] = []
    for e in bundle.get("events") or ():
        if e["kind"] in VARIANT_KINDS:
            d = (e.get("payload") or {}).get("difficulty")
            if isinstance(d, (int, float)):
                (acc if e["kind"] == EventKind.VARIANT_ACCEPTED else rej).append((float(e["iteration"]), float(d)))
    if not acc and not rej:
        for t in bundle.get("tasks") or ():
            if t.get("direction") and t.get("decided_iteration") is not None and t.get("difficulty") is not None:
                if t["status"] in (TaskStatus.ACTIVE, TaskStatus.RETIRED):
                    acc.append((float(t["decided_iteration"]), float(t["difficulty"])))
                elif t["status"] == TaskStatus.REJECTED:
                    rej.append((float(t["decided_iteration"]), float(t["difficulty"])))
    return acc, rej


# -- drawing -------------------------------------------------------------------------------
class _Canvas:
    """One hidden PlotWidget, styled for print: white paper, dark ink, a faint grid."""

    def __init__(self, width: int, height: int, x_label: str = "iteration"):
        ensure_app()
        self.width, self.height = width, height
        # A view is needed even offscreen: axes place their ticks through the view's transform.
        # The widget is never shown; grabbing one pixel delivers its pending resize.
        self.view = pg.PlotWidget(background="w")
        self.view.resize(width, height)
        self.view.grab(QtCore.QRect(0, 0, 1, 1))
        self.plot = self.view.getPlotItem()
        font = QtGui.QFont("DejaVu Sans")
        font.setPixelSize(12)    # explicit: the platform's default font differs between machines
        for name in ("left", "bottom"):
            ax = self.plot.getAxis(name)
            ax.setPen(pg.mkPen(INK, width=SCALE))
            ax.setTextPen(pg.mkPen(INK))
            ax.setStyle(tickFont=font)
            ax.enableAutoSIPrefix(False)   # it would rescale 0.1…0.9 to "100…900 (×0.001)"
        # a fixed width: pyqtgraph widens an axis only after a first paint has measured its labels,
        # and a report renders once, so auto-width would drop the labels that did not fit
        self.plot.getAxis("left").setWidth(52)
        self.plot.setLabel("bottom", x_label, color=INK, size="9pt")
        self.plot.showGrid(x=True, y=True, alpha=0.12)
        self.plot.setMenuEnabled(False)
        self.plot.setContentsMargins(2, 10, 12, 2)   # room for the top tick label and the last x label
        self.legend: list[LegendEntry] = []
        self.n_max = 0
        self.not_finite = 0      # values left out: the chart's note counts them
        self.x_label = x_label
        self.x_span: tuple[float, float] | None = None

    def grow(self, extra: int) -> None:
        """Make the image taller by `extra` logical pixels (room for what sits above the plot)."""
        self.height += extra
        self.view.resize(self.width, self.height)
        self.view.grab(QtCore.QRect(0, 0, 1, 1))     # deliver the resize, as in __init__

    def line(self, x, y, colour: str, label: str | None, dashed: bool = False, width: float = 1.6,
             smooth: bool = True, symbols: bool = False) -> None:
        given = len(x)
        x, y, breaks = finite_points(np.asarray(x, np.float64), np.asarray(y, np.float64))
        self.not_finite += given - len(x)
        if len(x) == 0:
            return
        self.n_max = max(self.n_max, len(x))
        lo, hi = float(x[0]), float(x[-1])
        self.x_span = (lo, hi) if self.x_span is None else (min(lo, self.x_span[0]), max(hi, self.x_span[1]))
        style = QtCore.Qt.PenStyle.DashLine if dashed else QtCore.Qt.PenStyle.SolidLine
        pen = pg.mkPen(colour, width=width * SCALE, style=style)   # cosmetic pens ignore SCALE
        if smooth and len(x) >= SMOOTH_FROM:
            # raw values faint behind a debiased EMA whose window is ~1/200 of the run
            faint = pg.mkColor(colour)
            faint.setAlpha(55)
            # 1 px: a translucent thick zig-zag is stroked as one self-intersecting outline, which
            # cost ~0.8 s per chart on 100,000 noisy rows
            self._add(*thinned(x, y, MAX_POINTS, breaks), pg.mkPen(faint, width=1))
            weight = min(0.999, 1.0 - 200.0 / len(y))
            y = ema(y, weight)
        kw = dict(symbol="o", symbolSize=4, symbolBrush=colour, symbolPen=None) if symbols and len(x) <= 60 else {}
        self._add(*thinned(x, y, MAX_POINTS, breaks), pen, **kw)
        if label is not None:
            self.legend.append(LegendEntry(label, colour, "dash" if dashed else "line"))

    def _add(self, x, y, pen, **kw) -> None:
        item = pg.PlotDataItem(x, y, pen=pen, connect="finite", **kw)
        item.setSkipFiniteCheck(False)
        self.plot.addItem(item)

    def markers(self, marks: list[tuple[float, str]]) -> None:
        if len(marks) > MAX_MARKERS:   # keep an even sample, always including the last
            idx = np.linspace(0, len(marks) - 1, MAX_MARKERS).astype(int)
            marks = [marks[i] for i in idx]
        kinds = []
        for it, kind in marks:
            colour = MARKER_COLOURS.get(kind, "#7f7f7f")
            self.plot.addItem(pg.InfiniteLine(pos=it, angle=90, pen=pg.mkPen(colour, width=SCALE,
                              style=QtCore.Qt.PenStyle.DashLine)), ignoreBounds=True)
            if kind not in kinds:
                kinds.append(kind)
        self.legend += [LegendEntry(k.replace("_", " "), MARKER_COLOURS.get(k, "#7f7f7f"), "marker") for k in kinds]

    def png(self) -> bytes:
        w, h = self.width, self.height
        if self.x_label == "iteration" and self.x_span and self.x_span[1] - self.x_span[0] <= 20:
            self.plot.getAxis("bottom").setTickSpacing(major=1, minor=1)    # a short run: whole iterations
        img = QtGui.QImage(int(w * SCALE), int(h * SCALE), QtGui.QImage.Format.Format_RGB32)
        img.setDevicePixelRatio(SCALE)
        img.fill(QtGui.QColor("white"))
        painter = QtGui.QPainter(img)
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        # lay out now what the label and margin changes asked for: no event loop runs here, and
        # sending the application's posted events could re-enter a console that exports in-process
        self.plot.layout.activate()
        rect = QtCore.QRectF(0, 0, w, h)
        self.view.scene().render(painter, rect, rect)   # pg.GraphicsScene.render settles auto-ranges first
        painter.end()
        self.view.deleteLater()
        buf = QtCore.QBuffer()
        buf.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
        img.save(buf, "PNG")    # type: ignore[call-overload]  # the stubs miss QIODevice
        return bytes(buf.data().data())

    def chart(self, chart_id: str, title: str, note: str = "") -> Chart:
        long = "Long series: raw values faint, moving average bold." if self.n_max >= SMOOTH_FROM else ""
        note = " ".join(filter(None, [note, long, not_finite_note(self.not_finite)]))
        return Chart(chart_id, title, self.png(), self.width, self.height, self.legend, note)


def _panel(data: RunData, marks, panel: Panel, width: int, height: int) -> _Canvas:
    c = _Canvas(width, height)
    for i, key in enumerate(panel.keys):
        if key in data:
            c.line(*data.xy(key), PALETTE[i % len(PALETTE)], short(key), dashed=key in panel.dashed,
                   symbols=key == metrics.EVAL_SUCCESS)
    if panel is BALANCE:   # the balance point and the band the environment keeps tasks in
        c.plot.addItem(pg.InfiniteLine(pos=1.0, angle=0, pen=pg.mkPen("#d62728", width=SCALE,
                       style=QtCore.Qt.PenStyle.DotLine)), ignoreBounds=True)
        region = pg.LinearRegionItem(values=(0.2, 0.8), orientation="horizontal", movable=False,
                                     brush=pg.mkBrush(44, 160, 44, 30), pen=pg.mkPen(None))
        region.setZValue(-10)
        c.plot.addItem(region, ignoreBounds=True)
        c.legend += [LegendEntry("μ = 1", "#d62728", "dash"), LegendEntry("band 0.2–0.8", "#c9e6c9", "band")]
    c.markers(marks)
    return c


def _difficulty(drawn: variants.Sample, data: RunData, marks, width: int, height: int) -> _Canvas:
    c = _Canvas(width, height)
    colour = PALETTE[0]
    low, high = DIFFICULTY.band or ("", "")
    if low in data and high in data:
        (x0, lo), (x1, hi) = data.xy(low), data.xy(high)
        both = np.isfinite(lo) & np.isfinite(hi)       # no band edge for an iteration without both
        if len(x0) == len(x1) and both.sum() > 1:
            # a filled band is one polygon: a zig-zag outline of thousands of vertices fills
            # slowly, so it follows the live plot's bins (min of the minima, max of the maxima)
            xl, yl, _ = bounds(x0[both], lo[both], BAND_BINS)
            xh, _, yh = bounds(x1[both], hi[both], BAND_BINS)
            lo_item, hi_item = pg.PlotDataItem(xl, yl, pen=pg.mkPen(None)), pg.PlotDataItem(xh, yh, pen=pg.mkPen(None))
            band = pg.FillBetweenItem(lo_item.curve, hi_item.curve, brush=pg.mkBrush(31, 119, 180, 45))
            for item in (lo_item, hi_item, band):
                c.plot.addItem(item)
            c.legend.append(LegendEntry("pool min–max", "#9dc3e2", "band"))
    if metrics.DIFFICULTY_MEAN in data:
        c.line(*data.xy(metrics.DIFFICULTY_MEAN), colour, "pool mean")
    for kind, brush, symbol, label, style in ((ACCEPTED, (44, 160, 44, 170), "t1", "accepted variant", "triangle"),
                                              (REJECTED, (120, 120, 120, 120), "x", "rejected variant", "cross")):
        x, y = drawn.points[kind]
        if len(x):
            c.plot.addItem(pg.ScatterPlotItem(x, y, size=6, symbol=symbol, brush=pg.mkBrush(*brush), pen=None))
            c.legend.append(LegendEntry(label, pg.mkColor(*brush[:3]).name(), style))
    c.markers(marks)
    return c


def variant_sample(bundle: dict, budget: int = MAX_VARIANT_POINTS) -> variants.Sample:
    """The variants the difficulty chart draws: all of them, or `budget` evenly over the run."""
    acc, rej = variant_points(bundle)
    return variants.sample({ACCEPTED: _columns(acc), REJECTED: _columns(rej)}, budget)


def _columns(points: list[tuple[float, float]]) -> variants.Points:
    arr = np.array(points, dtype=np.float64).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]


def variants_note(drawn: variants.Sample) -> str:
    """The difficulty chart's caption where it draws a sample of the variants."""
    caption = drawn.caption()
    return f"{caption} (the CSV and JSON exports hold every one)." if caption else ""


def run_charts(bundle: dict, data: RunData | None = None, width: int = 800, height: int = 270) -> list[Chart]:
    """The one-run report's charts: the four panels, the losses, eval success by tier."""
    data = run_data(bundle) if data is None else data
    marks = markers(bundle)
    agreement = agreement_panel([run_config(bundle.get("run"))])
    out = [_panel(data, marks, p, width, height).chart(p.id, p.title) for p in (POLICY, agreement, BALANCE)]
    drawn = variant_sample(bundle)
    out.append(_difficulty(drawn, data, marks, width, height).chart(DIFFICULTY.id, DIFFICULTY.title,
                                                                    note=variants_note(drawn)))
    out.append(_panel(data, marks, LOSSES, width, height).chart(LOSSES.id, LOSSES.title))
    tiers = _Canvas(width, height)
    for i, key in enumerate(data.tier_keys()):
        tiers.line(*data.xy(key), TIER_COLOURS[i % len(TIER_COLOURS)], f"tier {metrics.tier_of(key):g}", symbols=True)
    if metrics.EVAL_SUCCESS in data:
        tiers.line(*data.xy(metrics.EVAL_SUCCESS), "#d62728", "all tiers", dashed=True, symbols=True)
    tiers.plot.setYRange(0, 1, padding=0.03)
    tiers.markers(marks)
    out.append(tiers.chart("eval-tiers", "Held-out success per difficulty tier"))
    return out


def panel_charts(bundle: dict, data: RunData, panels, width: int = 430, height: int = 240) -> list[Chart]:
    """A chart per panel that has data (the training-health and system panels, a person's added
    charts), for the report's grid of small charts."""
    marks = markers(bundle)
    return [_panel(data, marks, p, width, height).chart(p.id, p.title) for p in panels
            if any(k in data for k in p.keys)]


def added_panels(charts: Sequence[Sequence[str]]) -> list[Panel]:
    """The console's added charts (each a list of keys) as panels."""
    return [Panel(f"added-{i}", chart_title(tuple(keys)), tuple(keys)) for i, keys in enumerate(charts) if keys]


def comparison_charts(bundles: list[dict], datas: list[RunData] | None = None, width: int = 430,
                      height: int = 240, extra_keys: Sequence[str] = ()) -> list[Chart]:
    """One chart per key with every run overlaid in its colour (model.comparison.colour_of: the
    Compare tab's), the fixed keys then `extra_keys` (a person's added charts), and the last
    evaluation by tier."""
    datas = [run_data(b) for b in bundles] if datas is None else datas
    names = [str(b["run"].get("name") or b["run"]["id"]) for b in bundles]
    out = []
    for key in dict.fromkeys((*compare_keys(bundles), *extra_keys)):
        if not any(key in d for d in datas):
            continue
        c = _Canvas(width, height)
        for i, (d, name) in enumerate(zip(datas, names)):
            if key in d:
                c.line(*d.xy(key), colour_of(i), name, symbols=key == metrics.EVAL_SUCCESS)
        out.append(c.chart("cmp-" + key.replace("/", "-"), COMPARE_TITLES.get(key, key), note=f"metric {key}"))
    c = _Canvas(width, height, x_label="tier difficulty")
    for i, (d, name) in enumerate(zip(datas, names)):
        keys = d.tier_keys()
        if keys:
            x = np.array([metrics.tier_of(k) for k in keys])
            y = np.array([d.xy(k)[1][-1] for k in keys])
            c.line(x, y, colour_of(i), name, smooth=False, symbols=True)
    c.plot.setYRange(0, 1, padding=0.03)
    out.append(c.chart("cmp-eval-tiers", "Eval success by tier (last evaluation)"))
    return out
