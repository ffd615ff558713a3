"""The plots' view bar: x-axis, smoothing, log y. One bar for the dashboard and the comparison,
so both read the same way; each remembers its own choice under a QSettings group.

The bar is a FlowLayout: one row where the view is wide, wrapping onto more where it is not (an
800 × 600 window leaves the Run view about 370 px)."""
from __future__ import annotations

import contextlib

from PySide6 import QtCore, QtWidgets

from ..model.run_data import X_AXES

DEFAULT_SMOOTHING = 60     # percent: the EMA weight of the previous smoothed value
GROUP_SPACING = 16         # between the bar's groups of controls, within a row
SLIDER_WIDTH, SLIDER_MIN_WIDTH = 140, 80     # the smoothing slider's width, and how far a narrow view narrows it


class FlowLayout(QtWidgets.QLayout):
    """Items left to right at their preferred widths, onto another row where the width runs out
    (Qt's flow layout example), with QHBoxLayout's spacers: a fixed spacing is kept within a row and
    dropped where a row wraps; a stretch takes the rest of its row, and one met where the row wraps
    moves to the next row, so what follows it stays on the right. Wide enough for every item, it
    lays them out as a QHBoxLayout does."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._items: list[QtWidgets.QLayoutItem] = []

    # -- building ------------------------------------------------------------------------------
    def addItem(self, item: QtWidgets.QLayoutItem) -> None:
        self._items.append(item)
        self.invalidate()

    def insertWidget(self, index: int, widget: QtWidgets.QWidget) -> None:
        self.addChildWidget(widget)
        self._items.insert(index, QtWidgets.QWidgetItem(widget))
        self.invalidate()

    def addSpacing(self, size: int) -> None:
        policy = QtWidgets.QSizePolicy.Policy
        self.addItem(QtWidgets.QSpacerItem(size, 0, policy.Fixed, policy.Minimum))

    def addStretch(self) -> None:
        policy = QtWidgets.QSizePolicy.Policy
        self.addItem(QtWidgets.QSpacerItem(0, 0, policy.Expanding, policy.Minimum))

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QtWidgets.QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QtWidgets.QLayoutItem | None:
        item = self._items.pop(index) if 0 <= index < len(self._items) else None
        self.invalidate()
        return item

    # -- sizes ---------------------------------------------------------------------------------
    def expandingDirections(self) -> QtCore.Qt.Orientation:
        return QtCore.Qt.Orientation.Horizontal

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._arrange(QtCore.QRect(0, 0, width, 0), apply=False)

    def sizeHint(self) -> QtCore.QSize:
        """Every item in one row."""
        widgets = self._shown_widgets()
        width = sum(item.sizeHint().width() for item in self._shown_items() if not _is_stretch(item))
        width += self._spacing() * max(0, len(widgets) - 1)
        height = max((item.sizeHint().height() for item in widgets), default=0)
        return self._with_margins(width, height)

    def minimumSize(self) -> QtCore.QSize:
        """The widest item on a row of its own (the height of one row: a parent asks
        heightForWidth for the rows it takes)."""
        widgets = self._shown_widgets()
        width = max((item.minimumSize().width() for item in widgets), default=0)
        height = max((item.minimumSize().height() for item in widgets), default=0)
        return self._with_margins(width, height)

    def setGeometry(self, rect: QtCore.QRect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, apply=True)

    # -- placing -------------------------------------------------------------------------------
    def _with_margins(self, width: int, height: int) -> QtCore.QSize:
        m = self.contentsMargins()
        return QtCore.QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    def _spacing(self, metric=QtWidgets.QStyle.PixelMetric.PM_LayoutHorizontalSpacing) -> int:
        if self.spacing() >= 0:
            return self.spacing()
        parent = self.parentWidget()
        style = parent.style() if parent is not None else QtWidgets.QApplication.style()
        return max(0, style.pixelMetric(metric))

    def _shown_items(self) -> list[QtWidgets.QLayoutItem]:
        return [item for item in self._items if item.spacerItem() is not None or not item.isEmpty()]

    def _shown_widgets(self) -> list[QtWidgets.QLayoutItem]:
        return [item for item in self._shown_items() if item.spacerItem() is None]

    def _rows(self, width: int) -> list[list[QtWidgets.QLayoutItem]]:
        """The items of each row: a widget goes on the row if it fits beside what is there, at
        its minimum width at least (it is narrowed then: the row's last item takes what is left)."""
        rows: list[list[QtWidgets.QLayoutItem]] = [[]]
        used = 0
        pending: list[QtWidgets.QLayoutItem] = []    # spacers since the last widget: kept if one follows on the row
        for item in self._shown_items():
            if item.spacerItem() is not None:
                pending.append(item)
                continue
            gap = sum(s.sizeHint().width() for s in pending) + (self._spacing() if used else 0)
            if used and used + gap + item.minimumSize().width() > width:
                rows.append([s for s in pending if _is_stretch(s)])
                used, gap = 0, 0
            else:
                rows[-1].extend(pending)
            pending = []
            rows[-1].append(item)
            used += gap + item.sizeHint().width()
        rows[-1].extend(pending)
        return [row for row in rows if any(item.spacerItem() is None for item in row)]

    def _arrange(self, rect: QtCore.QRect, apply: bool) -> int:
        """Lay the rows out in `rect` (when `apply`); the height they take."""
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        y, heights = area.y(), []
        for row in self._rows(area.width()):
            height = max(item.sizeHint().height() for item in row if item.spacerItem() is None)
            if apply:
                x, previous = area.x(), False
                for item, width in zip(row, self._widths(row, area.width())):
                    if item.spacerItem() is None:
                        x += self._spacing() if previous else 0
                        previous = True
                    item.setGeometry(QtCore.QRect(x, y, width, height))
                    x += width
            heights.append(height)
            y += height + self._spacing(QtWidgets.QStyle.PixelMetric.PM_LayoutVerticalSpacing)
        between = self._spacing(QtWidgets.QStyle.PixelMetric.PM_LayoutVerticalSpacing) * max(0, len(heights) - 1)
        return m.top() + sum(heights) + between + m.bottom()

    def _widths(self, row: list[QtWidgets.QLayoutItem], width: int) -> list[int]:
        """Preferred widths; what the row leaves goes to its stretches, and a row too wide
        narrows its items, the last first, down to their minimum widths at most."""
        widths = [0 if _is_stretch(item) else item.sizeHint().width() for item in row]
        widgets = sum(1 for item in row if item.spacerItem() is None)
        left = width - sum(widths) - self._spacing() * (widgets - 1)
        stretches = [i for i, item in enumerate(row) if _is_stretch(item)]
        if left > 0 and stretches:
            for n, i in enumerate(stretches):
                widths[i] = left // len(stretches) + (1 if n < left % len(stretches) else 0)
        for i in reversed(range(len(row))):
            if left >= 0:
                break
            if row[i].spacerItem() is None:
                narrower = max(row[i].minimumSize().width(), widths[i] + left)
                left += widths[i] - narrower
                widths[i] = narrower
        return widths


def _is_stretch(item: QtWidgets.QLayoutItem) -> bool:
    return item.spacerItem() is not None and bool(item.expandingDirections() & QtCore.Qt.Orientation.Horizontal)


def control_group(*widgets: QtWidgets.QWidget) -> QtWidgets.QWidget:
    """Controls kept together on a row of a FlowLayout: a label and its control, two buttons."""
    group = QtWidgets.QWidget()
    row = QtWidgets.QHBoxLayout(group)
    row.setContentsMargins(0, 0, 0, 0)
    for widget in widgets:
        row.addWidget(widget)
    return group


class SmoothingSlider(QtWidgets.QSlider):
    """140 px where there is room, down to 80 px in a narrow view rather than a row of its own."""

    def sizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(SLIDER_WIDTH, super().sizeHint().height())

    def minimumSizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(SLIDER_MIN_WIDTH, super().minimumSizeHint().height())


class ViewControls(QtWidgets.QWidget):
    changed = QtCore.Signal()

    def __init__(self, log_y_label: str = "log y (losses)", parent=None):
        super().__init__(parent)
        self.x_axis_box = QtWidgets.QComboBox()
        self.x_axis_box.addItems(X_AXES)
        self.smoothing = SmoothingSlider(QtCore.Qt.Orientation.Horizontal)
        self.smoothing.setRange(0, 99)
        self.smoothing.setValue(DEFAULT_SMOOTHING)
        self.smoothing.setToolTip("Exponential moving average of each curve; the raw values stay faint behind it")
        # the slider alone gives no number: the weight it stands for is shown beside it
        self.smoothing_value = QtWidgets.QLabel()
        self.smoothing_value.setMinimumWidth(self.smoothing_value.fontMetrics().horizontalAdvance("0.00 "))
        self.smoothing.valueChanged.connect(self._show_smoothing)
        self._show_smoothing()
        self.log_y = QtWidgets.QCheckBox(log_y_label)
        for signal in (self.x_axis_box.currentIndexChanged, self.smoothing.valueChanged, self.log_y.toggled):
            signal.connect(self.changed)
        # what is added after the stretch (Add chart…) sits at the right; inserted before it, on the left
        self.bar = bar = FlowLayout(self)
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(control_group(QtWidgets.QLabel("x-axis"), self.x_axis_box))
        bar.addSpacing(GROUP_SPACING)
        bar.addWidget(control_group(QtWidgets.QLabel("smoothing"), self.smoothing, self.smoothing_value))
        bar.addSpacing(GROUP_SPACING)
        bar.addWidget(self.log_y)
        bar.addStretch()

    def x_axis(self) -> str:
        return self.x_axis_box.currentText()

    def smoothing_weight(self) -> float:
        return self.smoothing.value() / 100

    def _show_smoothing(self) -> None:
        weight = self.smoothing_weight()
        self.smoothing_value.setText(f"{weight:.2f}" if weight else "off")

    def save_state(self, settings: QtCore.QSettings, group: str) -> None:
        settings.setValue(f"{group}/x_axis", self.x_axis())
        settings.setValue(f"{group}/smoothing", self.smoothing.value())
        settings.setValue(f"{group}/log_y", "true" if self.log_y.isChecked() else "false")

    def restore_state(self, settings: QtCore.QSettings, group: str) -> None:
        x_axis = str(settings.value(f"{group}/x_axis", self.x_axis()))
        if self.x_axis_box.findText(x_axis) >= 0:
            self.x_axis_box.setCurrentText(x_axis)
        with contextlib.suppress(ValueError):     # a hand-edited settings file: keep the default
            self.smoothing.setValue(int(str(settings.value(f"{group}/smoothing", self.smoothing.value()))))
        self.log_y.setChecked(str(settings.value(f"{group}/log_y", "false")) == "true")
