"""One Qt input per config field, chosen by the field's type and metadata — never by its name.

Why: DESIGN §2 says forms are generated from the config dataclasses, so a field added to
`rla_engine.config` appears in the console with the right input, range and help without anyone
touching this package. Range checks beyond what an input can hold are left to the engine's
`validate()`, so the form and `rla run` can never disagree about what is valid.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, ClassVar

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QHBoxLayout, QLineEdit,
                               QSpinBox, QToolButton, QWidget)

from . import file_dialogs

# QSpinBox holds a C int; a field without bounds gets the widest range it can show.
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_FLOAT_WIDE = 1e12
# Many places so a small learning rate (1e-7) survives a round trip through the spin box; the
# display trims trailing zeros so 0.2 still reads "0.2".
_DECIMALS = 10
# Applied only while a field is invalid: a style sheet on every input would switch all of them
# to style-sheet rendering and change the native look of valid fields.
INVALID_STYLE = '*[invalid="true"] { border: 1px solid #d32f2f; border-radius: 2px; }'


def field_default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _type_name(f: dataclasses.Field) -> str:
    # Annotations are strings under `from __future__ import annotations`; "list[float]" -> "list".
    t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    return t.split("[", 1)[0].strip()


class FieldEditor(QObject):
    """Wraps the input of one dotted key. Each kind of editor below defines `value()` (raising
    ValueError when the text can't be parsed) and `set_value(v)`.

    The input's own change signal is relayed into `changed` signal-to-signal, with no Python
    `emit()` per keystroke: PySide6 6.12's `SignalInstance.emit` drops a reference to True on
    every call, which on Python 3.11 aborts the process after a few hundred edits.
    """

    changed = Signal()
    # each editor class below defines both (value() raises ValueError on text it cannot parse)
    value: Callable[[], Any]
    set_value: Callable[[Any], None]

    def __init__(self, key: str, field: dataclasses.Field, widget: QWidget):
        super().__init__(widget)  # lives exactly as long as its widget
        self.key, self.field, self.widget = key, field, widget
        self.help: str = field.metadata.get("help", "")
        self._error: str | None = None
        widget.setObjectName(key)  # stylesheets, QSettings and tests find a field by its key
        widget.setToolTip(self.help)
        widget.setWhatsThis(self.help)
        # Scrolling a long form must not change whatever value the pointer passes over.
        widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        widget.installEventFilter(self)

    def raw(self) -> Any:
        """What the user typed, for error messages when `value()` fails."""
        return self.value()

    def error(self) -> str | None:
        return self._error

    def set_error(self, message: str | None) -> None:
        message = message or None
        if message == self._error:
            return  # re-polishing every field on every keystroke would flicker
        self._error = message
        w = self.widget
        w.setProperty("invalid", message is not None)
        w.setStyleSheet(INVALID_STYLE if message else "")
        w.setToolTip(message or self.help)
        w.style().unpolish(w)
        w.style().polish(w)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Wheel and not self.widget.hasFocus():
            event.ignore()  # ignored: the scroll area above gets it and scrolls instead
            return True
        return False


class IntEditor(FieldEditor):
    widget: QSpinBox

    def __init__(self, key: str, f: dataclasses.Field):
        w = QSpinBox()
        meta = f.metadata
        lo = max(_INT_MIN, int(meta.get("min", _INT_MIN)))
        hi = min(_INT_MAX, int(meta.get("max", _INT_MAX)))
        w.setRange(lo, hi)
        w.setGroupSeparatorShown(False)
        super().__init__(key, f, w)
        w.valueChanged.connect(self.changed)

    def value(self) -> int:
        return int(self.widget.value())

    def set_value(self, value: Any) -> None:
        self.widget.setValue(int(value))


class _TrimmedDoubleSpinBox(QDoubleSpinBox):
    """Shows 0.2 as "0.2", not "0.2000000000"; parsing and locale stay Qt's own."""

    def textFromValue(self, value: float) -> str:
        text = super().textFromValue(value)
        point = self.locale().decimalPoint()
        return text.rstrip("0").rstrip(point) if point in text else text


def _float_step(default: Any, lo: float, hi: float) -> float:
    # One power of ten below the default's magnitude: 0.2 -> 0.01, 1e-3 -> 1e-4, 15 -> 1.
    if isinstance(default, (int, float)) and default:
        return 10.0 ** (math.floor(math.log10(abs(default))) - 1)
    span = hi - lo if hi - lo < _FLOAT_WIDE else 1.0
    return 10.0 ** (math.floor(math.log10(span)) - 2)


class FloatEditor(FieldEditor):
    widget: _TrimmedDoubleSpinBox

    def __init__(self, key: str, f: dataclasses.Field):
        w = _TrimmedDoubleSpinBox()
        meta = f.metadata
        lo, hi = float(meta.get("min", -_FLOAT_WIDE)), float(meta.get("max", _FLOAT_WIDE))
        w.setDecimals(_DECIMALS)  # before setRange: Qt rounds the range to the decimals
        w.setRange(lo, hi)
        w.setSingleStep(_float_step(field_default(f), lo, hi))
        w.setGroupSeparatorShown(False)
        super().__init__(key, f, w)
        w.valueChanged.connect(self.changed)

    def value(self) -> float:
        return float(self.widget.value())

    def set_value(self, value: Any) -> None:
        self.widget.setValue(float(value))


class ChoiceEditor(FieldEditor):
    widget: QComboBox

    def __init__(self, key: str, f: dataclasses.Field):
        w = QComboBox()
        choices = f.metadata["choices"]
        # A callable (e.g. family_names) is asked now, so registered plug-ins are listed.
        for name in (choices() if callable(choices) else choices):
            w.addItem(str(name), name)
        super().__init__(key, f, w)
        w.currentIndexChanged.connect(self.changed)

    def value(self) -> Any:
        return self.widget.currentData()

    def set_value(self, value: Any) -> None:
        i = self.widget.findData(value)
        if i < 0:
            # Show the unknown value rather than silently picking another; validation names it.
            self.widget.addItem(str(value), value)
            i = self.widget.count() - 1
        self.widget.setCurrentIndex(i)


class BoolEditor(FieldEditor):
    widget: QCheckBox

    def __init__(self, key: str, f: dataclasses.Field):
        w = QCheckBox()
        super().__init__(key, f, w)
        w.toggled.connect(self.changed)

    def value(self) -> bool:
        return self.widget.isChecked()

    def set_value(self, value: Any) -> None:
        self.widget.setChecked(bool(value))


class ListEditor(FieldEditor):
    widget: QLineEdit

    """Comma-separated items of the field's `item` type (float unless the metadata says otherwise)."""

    _KIND: ClassVar[dict[type, str]] = {float: "a number", int: "an integer", str: "text"}

    def __init__(self, key: str, f: dataclasses.Field):
        w = QLineEdit()
        self.item_type = f.metadata.get("item", float)
        w.setPlaceholderText("comma-separated, e.g. 0.1, 0.5")
        super().__init__(key, f, w)
        w.textChanged.connect(self.changed)

    def raw(self) -> str:
        return self.widget.text()

    def value(self) -> list:
        text = self.widget.text().strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1].strip()  # accept the TOML/Python spelling too
        if not text:
            return []  # validate() says "must not be empty", naming the field
        items = []
        for token in (t.strip() for t in text.split(",")):
            if not token:
                raise ValueError("empty item between commas")
            try:
                items.append(self.item_type(token))
            except ValueError:
                kind = self._KIND.get(self.item_type, self.item_type.__name__)
                raise ValueError(f"{token!r} is not {kind}") from None
        return items

    def set_value(self, value: Any) -> None:
        # str(float) is Python's shortest round-tripping form: 0.1 -> "0.1".
        self.widget.setText(", ".join(str(v) for v in (value or [])))


class TextEditor(FieldEditor):
    widget: QLineEdit

    def __init__(self, key: str, f: dataclasses.Field):
        super().__init__(key, f, QLineEdit())
        self.widget.textChanged.connect(self.changed)

    def value(self) -> str:
        return self.widget.text().strip()

    def set_value(self, value: Any) -> None:
        self.widget.setText("" if value is None else str(value))


class ModelPathEditor(FieldEditor):
    """A model source (metadata `path="model"`): type it, pick a built-in source from the list
    (the field's `sources`), or browse for a model folder."""
    widget: QWidget

    def __init__(self, key: str, f: dataclasses.Field):
        box = QWidget()
        row = QHBoxLayout(box)
        row.setContentsMargins(0, 0, 0, 0)
        self.combo = QComboBox()
        self.combo.setEditable(True)
        self.combo.addItem("")
        for name in f.metadata.get("sources", ()):
            self.combo.addItem(name)
        browse = QToolButton()
        browse.setText("…")
        browse.setToolTip("Choose a model folder (Hugging Face format)")
        browse.clicked.connect(self._browse)
        row.addWidget(self.combo, 1)
        row.addWidget(browse)
        super().__init__(key, f, box)
        self.combo.editTextChanged.connect(self.changed)

    def _browse(self) -> None:
        folder = file_dialogs.existing_directory(self.widget, "Model folder", self.value())
        if folder:
            self.set_value(folder)

    def value(self) -> str:
        return self.combo.currentText().strip()

    def set_value(self, value: Any) -> None:
        self.combo.setEditText("" if value is None else str(value))


_BY_TYPE: dict[str, Callable[[str, dataclasses.Field], FieldEditor]] = {
    "int": IntEditor, "float": FloatEditor, "bool": BoolEditor, "list": ListEditor, "str": TextEditor}


def editor_for(key: str, field: dataclasses.Field) -> FieldEditor:
    """The editor for one config field, showing the field's default."""
    if "choices" in field.metadata:  # choices win over the type: a str with choices is a combo
        cls: Callable[[str, dataclasses.Field], FieldEditor] = ChoiceEditor
    elif field.metadata.get("path") == "model":
        cls = ModelPathEditor
    else:
        try:
            cls = _BY_TYPE[_type_name(field)]
        except KeyError:
            raise TypeError(f"{key}: no editor for field type {field.type!r}") from None
    editor = cls(key, field)
    default = field_default(field)
    if default is not None:
        editor.set_value(default)
    return editor
