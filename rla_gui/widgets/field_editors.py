"""One Qt input per config field, chosen by the field's type and metadata — never by its name.

Why: DESIGN §2 says forms are generated from the config dataclasses, so a field added to
`rla_engine.config` appears in the console with the right input, range and help without anyone
touching this package. Range checks beyond what an input can hold are left to the engine's
`validate()`, so the form and `rla run` can never disagree about what is valid.
"""
from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any, ClassVar

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QHBoxLayout, QLineEdit,
                               QSpinBox, QToolButton, QWidget)

from . import file_dialogs
from .plain_text import set_tooltip

# QSpinBox holds a C int; a field without bounds gets the widest range it can show.
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_FLOAT_WIDE = 1e12
# QDoubleSpinBox's ceiling (DBL_MAX_10_EXP + DBL_DIG): no value the engine accepts is rounded.
_MAX_DECIMALS = 323
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
        set_tooltip(w, message or self.help)     # the message quotes the value as typed or loaded
        w.style().unpolish(w)
        w.style().polish(w)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Wheel and isinstance(obj, QWidget) and not obj.hasFocus():
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


# A whole number as Python writes one (3e-6, -0.001, .5, 1E+3) ...
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
# ... and every text that can still become one as more is typed ("", "-", "1e", "1e-").
_PARTIAL = re.compile(r"[+-]?\d*\.?\d*([eE][+-]?\d*)?")
# Display precision: every decimal of up to 15 significant digits reads back exactly, and an
# arrow step's float noise (0.2 + 0.01 = 0.21000000000000002) reads as 0.21.
_SHOWN_DIGITS = 15


def number_text(value: float) -> str:
    """The shortest plain spelling of a number: 0.2, 3e-06 -> 3e-6, 15.0 -> 15."""
    text = f"{value:.{_SHOWN_DIGITS}g}"
    mantissa, e, exponent = text.partition("e")
    return f"{mantissa}e{int(exponent)}" if e else mantissa


class NumberSpinBox(QDoubleSpinBox):
    """A float input that takes every number the engine's range may allow, in any spelling a
    TOML file or `--set` takes (3e-6, 1e-12, -0.001), and shows it back unrounded.

    QDoubleSpinBox's own parser knows neither exponents nor more places than `decimals()` and
    drops keystrokes it cannot place: "-0.001" typed into a field whose minimum is 0 stopped at
    "-0.00", silently 0. Here a number out of range is left as typed (Intermediate), so the
    form reads it and the engine's `validate()` names the field and its range; the arrows still
    step within the range, and leaving the field with an unfinished number restores the last
    good one, as any spin box does.
    """

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        # Qt rounds every value to `decimals` places: the most it allows keeps 1e-300 intact.
        self.setDecimals(_MAX_DECIMALS)

    def _plain(self, text: str) -> str:
        return text.strip().replace(self.locale().decimalPoint(), ".")

    def validate(self, text: str, pos: int) -> tuple[QValidator.State, str, int]:
        plain = self._plain(text)
        if _NUMBER.fullmatch(plain):
            value = float(plain)
            inside = math.isfinite(value) and self.minimum() <= value <= self.maximum()
            state = QValidator.State.Acceptable if inside else QValidator.State.Intermediate
        elif _PARTIAL.fullmatch(plain):
            state = QValidator.State.Intermediate
        else:
            state = QValidator.State.Invalid      # a letter in a number: the keystroke is dropped
        return state, text, pos

    def valueFromText(self, text: str) -> float:
        return float(self._plain(text))

    def textFromValue(self, value: float) -> str:
        return number_text(value).replace(".", self.locale().decimalPoint())

    def typed_number(self) -> float:
        """The number in the box as typed, in range or not; ValueError while it is not one yet."""
        plain = self._plain(self.text())
        if not _NUMBER.fullmatch(plain):
            raise ValueError("must be a number, e.g. 0.5 or 3e-6")
        return float(plain)


def _float_step(default: Any, lo: float, hi: float) -> float:
    # One power of ten below the default's magnitude: 0.2 -> 0.01, 1e-3 -> 1e-4, 15 -> 1.
    if isinstance(default, (int, float)) and default:
        return 10.0 ** (math.floor(math.log10(abs(default))) - 1)
    span = hi - lo if hi - lo < _FLOAT_WIDE else 1.0
    return 10.0 ** (math.floor(math.log10(span)) - 2)


class FloatEditor(FieldEditor):
    widget: NumberSpinBox

    def __init__(self, key: str, f: dataclasses.Field):
        w = NumberSpinBox()
        meta = f.metadata
        lo, hi = float(meta.get("min", -_FLOAT_WIDE)), float(meta.get("max", _FLOAT_WIDE))
        w.setRange(lo, hi)
        w.setSingleStep(_float_step(field_default(f), lo, hi))
        w.setGroupSeparatorShown(False)
        super().__init__(key, f, w)
        w.valueChanged.connect(self.changed)
        # Typing too: a number out of range or half typed never becomes the box's value, yet the
        # form must revalidate to say why it is not taken. textEdited is the user's typing only,
        # so set_value and the arrows still signal once, through valueChanged.
        w.lineEdit().textEdited.connect(self.changed)

    def raw(self) -> str:
        return self.widget.text()

    def value(self) -> float:
        return self.widget.typed_number()

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
        # the wheel reaches the combo inside the box, not the box: the combo gets the guard too
        self.combo.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.combo.installEventFilter(self)
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
