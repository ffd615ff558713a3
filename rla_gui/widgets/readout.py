"""What the dashboard's and the comparison's plots share beyond their curves: the legend and a
hover read-out of exact values under the mouse.

Neither may hide the data. The legend is a row of its own above the view box (a legend inside
it covered half a plot once a run had its tiers), and the read-out is kept inside the view box
on an opaque, bordered box (over the curves, bare text was unreadable in either theme).
"""
from __future__ import annotations

from collections.abc import Callable

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from ..theme import is_dark
from .plain_text import html_text

# The PlotItem's grid: row 0 is the title, row 1 the top axis (hidden, so zero high), row 2 the
# view box; column 1 is the view box's. The legend goes into the top axis's cell, above the axis.
TOP_AXIS_CELL = (1, 1)
SAMPLE_WIDTH = 20          # pyqtgraph's ItemSample is fixed at 20 × 20
ENTRY_GAP = 12             # between one entry's label and the next entry's sample
READOUT_GAP = 10           # between the cursor and the read-out, so the pointer hides no text


class LegendRow(pg.LegendItem):
    """A legend laid out in the plot's own grid, above the view box: as many columns as the
    view box's width holds, wrapping into more rows as entries come (a run's held-out tiers
    are added while it runs)."""

    def __init__(self, plot_item: pg.PlotItem, text_size: str = "8pt", text_colour: str | None = None):
        super().__init__(offset=None, horSpacing=4, verSpacing=0, labelTextSize=text_size,
                         labelTextColor=text_colour, frame=False)
        self.layout.setContentsMargins(0, 0, 0, 2)
        self.layout.setHorizontalSpacing(0)
        self.setMinimumWidth(0)    # its entries wrap to the width it gets; they never widen the plot
        # as wide as its entries (packed to the left), as high as its rows
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Maximum, QtWidgets.QSizePolicy.Policy.Fixed)
        self.plot_item = plot_item
        plot_item.legend = self            # named items join it through PlotItem.addItem
        self._above_top_axis(plot_item)
        plot_item.vb.sigResized.connect(self._resized)

    def _above_top_axis(self, plot_item: pg.PlotItem) -> None:
        """A grid cell holds one item: the top axis's cell becomes a column of the legend over the
        axis, so the axis keeps its place against the view box."""
        top = plot_item.getAxis("top")
        plot_item.layout.removeItem(top)
        column = QtWidgets.QGraphicsLinearLayout(QtCore.Qt.Orientation.Vertical)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addItem(self)
        column.addItem(top)
        plot_item.layout.addItem(column, *TOP_AXIS_CELL)

    def addItem(self, item, name: str) -> None:
        """An entry whose name (a key, a run's name) shows as written: pyqtgraph renders it as HTML."""
        super().addItem(item, html_text(name))

    def _addItemToLayout(self, sample, label) -> None:
        """Entries are placed by updateSize, which every change of the entries calls."""

    def updateSize(self) -> None:
        """Re-flow every entry into the columns the width allows. pyqtgraph's own version sets the
        geometry by hand (at the plot's corner, over the title); here the plot's layout places it."""
        for i in reversed(range(self.layout.count())):
            self.layout.removeAt(i)
        columns = self._columns()
        for n, (sample, label) in enumerate(self.items):
            row, col = divmod(n, columns)
            self.layout.addItem(sample, row, 2 * col, alignment=QtCore.Qt.AlignmentFlag.AlignVCenter)
            self.layout.addItem(label, row, 2 * col + 1)
            self.layout.setColumnSpacing(2 * col + 1, ENTRY_GAP)
        self.columnCount = columns
        self.rowCount = -(-len(self.items) // columns) if self.items else 0
        self.setVisible(bool(self.items))
        self.updateGeometry()

    def _resized(self) -> None:
        if self._columns() != self.columnCount:    # a re-flow re-lays the plot: only when it changes
            self.updateSize()

    def _columns(self) -> int:
        """The most columns whose entries, each column as wide as its widest, fit the view box's
        width (a long label costs its own column only, not every column)."""
        if not self.items:
            return 1
        widths = [label.minimumWidth() + SAMPLE_WIDTH + ENTRY_GAP + 4 for _, label in self.items]
        room = self.plot_item.vb.width()
        for columns in range(len(widths), 1, -1):
            if sum(max(widths[c::columns]) for c in range(columns)) <= room:
                return columns
        return 1

    def mouseDragEvent(self, ev) -> None:
        ev.ignore()     # pyqtgraph's legend drags; this one stays in its row, off the data


def set_title(plot_item: pg.PlotItem, title: str, note: str = "") -> None:
    """The plot's title, shown as written (an added chart's title is its keys, and pyqtgraph
    renders titles as HTML), which never widens the plot past its cell: a long one (an added chart
    of several keys) pushed the view box's right end, the newest data, out of sight; the title is
    cut instead. `note` (what the chart leaves out: a sample drawn, points log y hides) goes on a
    smaller second line: appended to the title, a narrow chart cut it off at both ends."""
    label = plot_item.titleLabel

    def narrow_minimum() -> None:       # LabelItem sets its minimum to its text on every change
        type(label).updateMin(label)
        label.setMinimumWidth(0)
    label.updateMin = narrow_minimum
    small = f'<br><span style="font-size:8pt">{html_text(note)}</span>' if note else ""
    plot_item.setTitle(html_text(title) + small)


def add_legend(plot_item: pg.PlotItem) -> pg.LegendItem:
    """The plot's legend, in a row above its view box."""
    return LegendRow(plot_item)


class HoverReadout:
    """A text box that follows the mouse over the view box; `describe(x)` gives its text for the
    data x under the mouse, or None to hide it.

    The scene reports moves only while the mouse is over it: leaving the widget sends none, so
    the plot's leaveEvent must call `hide()`. (Not an event filter on the widget: with one
    installed, deleting the plot crashed the process in PySide.)"""

    def __init__(self, plot: pg.PlotWidget, describe: Callable[[float], str | None]):
        self.plot_item, self.describe = plot.plotItem, describe
        dark = is_dark()
        self.item = pg.TextItem(anchor=(0, 0), color="#e6e6e6" if dark else "#202020",
                                fill=pg.mkBrush((45, 45, 45, 235) if dark else (255, 255, 255, 235)),
                                border=pg.mkPen((150, 150, 150) if dark else (110, 110, 110)))
        self.item.setZValue(100)
        self.plot_item.addItem(self.item, ignoreBounds=True)
        self.item.hide()
        self._at: QtCore.QPointF | None = None
        plot.scene().sigMouseMoved.connect(self._hover)
        # the text sits in data coordinates: when the view re-ranges under a still mouse (live
        # data, auto-range after an x-axis change) it is placed again, not carried off the plot
        self.plot_item.vb.sigRangeChanged.connect(self._replace)

    def hide(self) -> None:
        self.item.hide()
        self._at = None

    def _replace(self, *_) -> None:
        if self._at is not None and self.item.isVisible():
            self._hover(self._at)

    def _hover(self, pos: QtCore.QPointF) -> None:
        vb = self.plot_item.vb
        if not vb.sceneBoundingRect().contains(pos):
            self.hide()
            return
        text = self.describe(vb.mapSceneToView(pos).x())
        if text is None:
            self.hide()
            return
        self._at = QtCore.QPointF(pos)
        self.item.setText(text)
        self._fit_height(text)
        self.item.setPos(vb.mapSceneToView(self._corner(pos)))
        # setVisible, not show(): TextItem fits its pixel scale to the view in its Python
        # setVisible, which Qt's show() bypasses (it would stay at the scale it had when hidden)
        self.item.setVisible(True)

    def _fit_height(self, text: str) -> None:
        """A read-out taller than the view box (a short chart, many curves) keeps its first lines
        and says how many it leaves out, rather than being cut at the plot's edge."""
        room = self.plot_item.vb.sceneBoundingRect().height() - 2
        lines = text.split("\n")
        height = self.item.textItem.boundingRect().height()
        if height <= room or len(lines) < 2:
            return
        margins = 2 * self.item.textItem.document().documentMargin()
        line = (height - margins) / len(lines)
        fit = max(1, int((room - margins) / line) - 1)      # a line kept for the "more" note
        left_out = len(lines) - fit
        self.item.setText("\n".join([*lines[:fit], f"… {left_out} more (a taller chart shows them)"]))

    def _corner(self, pos: QtCore.QPointF) -> QtCore.QPointF:
        """The text's top-left corner in the scene: up and to the right of the cursor, flipped to
        the other side where that would leave the view box, and held inside it."""
        # a pixel inside the view box: the corner goes to data coordinates and back, and a box
        # placed on the edge itself can end a rounding error beyond it (cut by the clip)
        box = self.plot_item.vb.sceneBoundingRect().adjusted(1, 1, -1, -1)
        # pixels, from the text itself: the TextItem's own rect is only right once it has been
        # painted at the view's current scale
        size = self.item.textItem.boundingRect().size()
        x = pos.x() + READOUT_GAP
        if x + size.width() > box.right():
            x = pos.x() - READOUT_GAP - size.width()
        y = pos.y() - READOUT_GAP - size.height()
        if y < box.top():
            y = pos.y() + READOUT_GAP
        # wider or taller than the view box: its start (the names) shows, its end is cut
        x = max(min(x, box.right() - size.width()), box.left())
        y = max(min(y, box.bottom() - size.height()), box.top())
        return QtCore.QPointF(x, y)
