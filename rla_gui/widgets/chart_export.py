"""A chart's own exports, on its right-click menu: the chart as PNG or SVG, and the data in view
as CSV. The dashboard's and the comparison's plots add them with one call (`add_chart_export`).

* PNG and SVG are pyqtgraph's ImageExporter and SVGExporter on the plot item (title, legend,
  axes, curves; not the hover read-out, hidden first). The PNG has the plot's size on screen, in
  device pixels.
* CSV, long format, one row per point: `series,key,curve,<x axis>,value` — `series` as the legend
  names the curve (a metric on the dashboard, a run in a comparison), `key` the metric key of
  the engine's exports, `curve` raw or smoothed, then the point on the chosen x-axis and its
  value. The points are the data's own, not the thinned vertices drawn: every point whose x is
  inside the view's x range, raw always, and the smoothed curve's too where it is drawn (a
  smoothing above 0), exactly as drawn. Long, not a column per series: series rarely share their
  x values (a held-out rate every few iterations, runs of a comparison), and long is what the
  engine's CSV and Parquet exports are. Numbers read back exactly (shortest round-tripping text);
  an integral x is written as an integer.

The path is asked through file_dialogs (never pyqtgraph's own dialog: see that module) and every
file is written by the engine's export rules (rla_engine/export/files.py: atomic, mode 0600); the
dialog asked before replacing a file, and a link chosen there means its target, as File ▸ Export…
has it — but never the open database's own files (file_dialogs.refused_output). Success shows in
the window's status bar, a failure in a message box.
"""
from __future__ import annotations

import csv
import importlib
import io
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Protocol

import numpy as np
import pyqtgraph as pg
from pyqtgraph.exporters import ImageExporter, SVGExporter
from PySide6 import QtCore, QtWidgets

from rla_engine.export.files import write_atomic

from ..model.run_data import RunData, ema
from . import file_dialogs
from .readout import HoverReadout

CSV_HEADER = ("series", "key", "curve")        # then the x-axis's name, then "value"
FORMATS = {"png": "PNG image (*.png)", "svg": "SVG drawing (*.svg)", "csv": "CSV, the data in view (*.csv)"}
MENU = (("png", "Save chart as PNG…"), ("svg", "Save chart as SVG…"), ("csv", "Save visible data as CSV…"))
CAPTION = {kind: text.rstrip("…") for kind, text in MENU}


class DrawnCurve(Protocol):
    """What an export reads of a plot's curve (metric_plot.MetricCurve, which imports this
    module to add the actions: named here, so that the two modules do not import each other)."""
    @property
    def key(self) -> str: ...

    @property
    def smooth(self) -> bool: ...

    @property
    def weight(self) -> float | None:
        """The smoothing weight its smoothed series was computed with (None: not yet)."""

    @property
    def done(self) -> int:
        """How many points of it are smoothed."""

    @property
    def smoothed(self) -> np.ndarray: ...


# (series name as the legend has it, the curve, the data it draws): what a plot shows
Shown = tuple[str, DrawnCurve, RunData]


class ExportablePlot(Protocol):
    """What the dashboard's and the comparison's plots both have."""
    plotItem: pg.PlotItem
    x_axis: str
    smoothing: float
    readout: HoverReadout

    def window(self) -> QtWidgets.QWidget: ...


class ChartExport(QtCore.QObject):
    """The three actions of one plot; `save(kind, path)` is what each does once it has a path."""

    last_folder: Path | None = None      # shared by every chart: where the last one was saved

    def __init__(self, plot: ExportablePlot, shown: Callable[[], Iterable[Shown]]):
        super().__init__(plot.plotItem.vb.menu)        # lives and dies with the menu it adds to
        self.plot, self.shown = plot, shown
        menu = plot.plotItem.vb.menu
        menu.addSeparator()
        self.actions = {kind: menu.addAction(text) for kind, text in MENU}
        for kind, action in self.actions.items():
            action.triggered.connect(lambda _=False, k=kind: self.ask(k))

    def ask(self, kind: str) -> None:
        folder = ChartExport.last_folder or Path.home()
        proposed = folder / f"{_slug(self.plot.plotItem.titleLabel.text)}.{kind}"
        parent = self.plot if isinstance(self.plot, QtWidgets.QWidget) else None
        path, _ = file_dialogs.save_file_name(parent, CAPTION[kind], str(proposed), FORMATS[kind])
        if path:
            ChartExport.last_folder = Path(path).parent
            self.save(kind, Path(path))

    def save(self, kind: str, path: Path) -> None:
        """Write the chart (png, svg) or its data in view (csv) at `path`, and say how it went."""
        writers: dict[str, Callable[[], bytes | str]] = {"png": self.png, "svg": self.svg, "csv": self.csv}
        parent = self.plot if isinstance(self.plot, QtWidgets.QWidget) else None
        if parent is not None and file_dialogs.refused_output(parent, file_dialogs.database_of(parent), [path]):
            return
        try:
            data = writers[kind]()
            write_atomic(path.resolve(), data, force=True)
        except Exception as e:      # whatever failed (the folder, the disk, an exporter) is shown
            _tell_failure(self.plot, f"Could not save {path}", f"{type(e).__name__}: {e}")
            return
        window = self.plot.window()
        if isinstance(window, QtWidgets.QMainWindow):
            window.statusBar().showMessage(f"saved {path}", 8000)

    # -- the three outputs ---------------------------------------------------------------------
    def png(self) -> bytes:
        self.plot.readout.hide()
        exporter = ImageExporter(self.plot.plotItem)
        ratio = _device_pixel_ratio(self.plot)
        if ratio != 1.0:       # as sharp as on screen: device pixels, the proportions kept
            size = exporter.getTargetRect()
            exporter.params.param("width").setValue(round(size.width() * ratio), blockSignal=exporter.widthChanged)
            exporter.params.param("height").setValue(round(size.height() * ratio),
                                                     blockSignal=exporter.heightChanged)
        image = exporter.export(toBytes=True)
        buffer = QtCore.QBuffer()
        buffer.open(QtCore.QIODevice.OpenModeFlag.WriteOnly)
        if not image.save(buffer, "PNG"):
            raise OSError("the chart could not be encoded as PNG")
        return bytes(buffer.data().data())

    def svg(self) -> bytes:
        self.plot.readout.hide()
        return SVGExporter(self.plot.plotItem).export(toBytes=True)

    def csv(self) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow((*CSV_HEADER, self.plot.x_axis, "value"))
        writer.writerows(visible_rows(self.shown(), self.plot.x_axis, self.plot.smoothing,
                                      tuple(self.plot.plotItem.vb.viewRange()[0])))
        return buf.getvalue()


def add_chart_export(plot: ExportablePlot, shown: Callable[[], Iterable[Shown]]) -> ChartExport:
    """Add "Save chart as PNG/SVG…" and "Save visible data as CSV…" to the plot's right-click
    menu; `shown()` gives the curves it draws (called when the CSV is saved)."""
    _tolerate_closed_svg_paths()
    return ChartExport(plot, shown)


def visible_rows(shown: Iterable[Shown], x_axis: str, smoothing: float,
                 x_range: tuple[float, float]) -> Iterator[tuple]:
    """The CSV's rows: each curve's points with x inside `x_range`, raw, then smoothed where drawn."""
    x0, x1 = x_range
    for series, curve, data in shown:
        x, y = data.xy(curve.key, x_axis)
        inside = (x >= x0) & (x <= x1)
        curves = [("raw", y)]
        smoothed = drawn_smoothed(curve, y, smoothing)
        if smoothed is not None:
            curves.append(("smoothed", smoothed))
        for name, values in curves:
            for xi, yi in zip(x[inside], values[inside]):
                yield series, curve.key, name, _number(float(xi)), float(yi)


def drawn_smoothed(curve: DrawnCurve, y: np.ndarray, smoothing: float) -> np.ndarray | None:
    """The smoothed values the curve draws over `y` (the plot's smoothing), or None when it draws
    none (MetricCurve.draw's rule): the curve's own, when it is up to date, else computed alike."""
    weight = smoothing if curve.smooth else 0.0
    n = len(y)
    if weight <= 0 or n < 2:
        return None
    if curve.weight == weight and curve.done == n:
        return curve.smoothed[:n]
    return ema(y, weight)


def _number(v: float) -> int | float:
    """An integral x (an iteration, a step count) as an integer; any other as it is."""
    return int(v) if v.is_integer() else v


def _slug(title: str) -> str:
    """A file name from a plot's title: "Policy reward" → "policy-reward"."""
    return re.sub(r"[^a-z0-9]+", "-", re.sub(r"<[^>]*>", "", title).lower()).strip("-") or "chart"


def _device_pixel_ratio(plot: ExportablePlot) -> float:
    widget = plot.plotItem.getViewWidget()
    return float(widget.devicePixelRatioF()) if widget is not None else 1.0


def _tell_failure(parent, text: str, detail: str) -> None:
    box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Warning, "Save chart", text,
                                QtWidgets.QMessageBox.StandardButton.Ok, parent)
    box.setInformativeText(detail)
    box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
    box.show()       # not exec(): a modal loop here would hold up the console's event loop


def _tolerate_closed_svg_paths() -> None:
    """pyqtgraph 0.14's SVG exporter reads a path's `d` as "x,y" pairs only, and Qt from 6.9
    closes a rectangle's path with "Z" (the view box's background): the export fails with a
    ValueError (pyqtgraph issue 3495). Its coordinate pass gets the path without the "Z" tokens,
    which are put back where they were after it. Once per process; pyqtgraph's own right-click
    Export… gains from it too."""
    module = importlib.import_module("pyqtgraph.exporters.SVGExporter")
    correct = getattr(module, "correctCoordinates", None)
    if correct is None or getattr(correct, "tolerates_closed_paths", False):
        return

    def tolerant(node, defs, item, options):
        closed = []
        for path in node.getElementsByTagName("path"):
            tokens = path.getAttribute("d").split()
            at = [i for i, t in enumerate(tokens) if t in ("Z", "z")]
            if at:
                closed.append((path, at))
                path.setAttribute("d", " ".join(t for t in tokens if t not in ("Z", "z")))
        correct(node, defs, item, options)
        for path, at in closed:
            tokens = path.getAttribute("d").split()
            for i in at:
                tokens.insert(i, "Z")
            path.setAttribute("d", " ".join(tokens))
    tolerant.tolerates_closed_paths = True      # type: ignore[attr-defined]
    setattr(module, "correctCoordinates", tolerant)  # noqa: B010 (mypy knows no such attribute)
