"""The plots' view bar: x-axis, smoothing, log y. One bar for the dashboard and the comparison,
so both read the same way; each remembers its own choice under a QSettings group."""
from __future__ import annotations

import contextlib

from PySide6 import QtCore, QtWidgets

from ..model.run_data import X_AXES

DEFAULT_SMOOTHING = 60     # percent: the EMA weight of the previous smoothed value


class ViewControls(QtWidgets.QWidget):
    changed = QtCore.Signal()

    def __init__(self, log_y_label: str = "log y (losses)", parent=None):
        super().__init__(parent)
        self.x_axis_box = QtWidgets.QComboBox()
        self.x_axis_box.addItems(X_AXES)
        self.smoothing = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.smoothing.setRange(0, 99)
        self.smoothing.setValue(DEFAULT_SMOOTHING)
        self.smoothing.setFixedWidth(140)
        self.smoothing.setToolTip("Exponential moving average of each curve; the raw values stay faint behind it")
        # the slider alone gives no number: the weight it stands for is shown beside it
        self.smoothing_value = QtWidgets.QLabel()
        self.smoothing_value.setMinimumWidth(self.smoothing_value.fontMetrics().horizontalAdvance("0.00 "))
        self.smoothing.valueChanged.connect(self._show_smoothing)
        self._show_smoothing()
        self.log_y = QtWidgets.QCheckBox(log_y_label)
        for signal in (self.x_axis_box.currentIndexChanged, self.smoothing.valueChanged, self.log_y.toggled):
            signal.connect(self.changed)
        self.bar = bar = QtWidgets.QHBoxLayout(self)
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(QtWidgets.QLabel("x-axis"))
        bar.addWidget(self.x_axis_box)
        bar.addSpacing(16)
        bar.addWidget(QtWidgets.QLabel("smoothing"))
        bar.addWidget(self.smoothing)
        bar.addWidget(self.smoothing_value)
        bar.addSpacing(16)
        bar.addWidget(self.log_y)
        bar.addStretch(1)

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
