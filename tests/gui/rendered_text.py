"""What the console draws of a piece of text, read back from every widget and every pyqtgraph
item, to find text that came from data and was rendered as markup (or lost an `&` to a shortcut).

Hostile strings carry a token that survives any rendering (SPOOF, BOLD, not-an-entity, ersand):
a sink whose raw text holds a token but whose drawn text lost the hostile string around it read
that text as markup. A planted `<img>` leaves no token in what is drawn, so every rich sink's
document is checked for an image too.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

Qt = QtGui.Qt      # QtGui's Qt namespace also has mightBeRichText


def hostile_strings(image: Path) -> dict[str, str]:
    """token -> the hostile string that holds it. `image` is a real PNG: markup that renders
    would load it."""
    return {image.stem: f'<img src="{image}">', "SPOOF": "<font size=7 color=red>SPOOF</font>",
            "BOLD": "<b>BOLD</b>", "ersand": "amp&ersand", "not-an-entity": "&lt;not-an-entity&gt;"}


def plant_image(folder: Path) -> Path:
    """A small, loud PNG (solid magenta) that a rendered `<img>` would show."""
    path = folder / "planted-image.png"
    img = QtGui.QImage(24, 24, QtGui.QImage.Format.Format_RGB32)
    img.fill(QtGui.QColor("#ff00ff"))
    assert img.save(str(path))
    return path


def everything(image: Path) -> str:
    """One string holding every hostile piece, the image last (a cut text drops it, not the rest)."""
    h = hostile_strings(image)
    return " ".join(h[k] for k in ("SPOOF", "BOLD", "ersand", "not-an-entity", image.stem))


@dataclass
class Sink:
    where: str         # a readable path: widget class, object, role
    raw: str           # the text the sink was given
    shown: str         # what it draws, as plain text
    images: bool       # the rendered document holds an image


def _document(html_text: str) -> QtGui.QTextDocument:
    doc = QtGui.QTextDocument()
    doc.setHtml(html_text)
    return doc


def _has_image(doc: QtGui.QTextDocument) -> bool:
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            if it.fragment().charFormat().isImageFormat():
                return True
            it += 1
        block = block.next()
    return False


def guessed(where: str, raw: str, fmt: Qt.TextFormat = Qt.TextFormat.AutoText) -> Sink:
    """A label-like sink: rich when told so, or when AutoText and Qt guesses markup."""
    rich = fmt == Qt.TextFormat.RichText or (fmt == Qt.TextFormat.AutoText and Qt.mightBeRichText(raw))
    if not rich:
        return Sink(where, raw, raw, False)
    doc = _document(raw)
    return Sink(where, raw, doc.toPlainText(), _has_image(doc))


def mnemonic(where: str, raw: str) -> Sink:
    """A button, menu entry, tab or group title: `&&` draws `&`, `&x` draws an underlined x."""
    return Sink(where, raw, re.sub(r"&(.)", r"\1", raw), False)


def graphics_text(where: str, item: QtWidgets.QGraphicsTextItem) -> Sink:
    doc = item.document()
    return Sink(where, doc.toHtml(), doc.toPlainText(), _has_image(doc))


def _widget_sinks(w: QtWidgets.QWidget) -> list[Sink]:
    name = f"{type(w).__name__}({w.objectName() or hex(id(w))})"
    out = []
    if w.toolTip():
        out.append(guessed(name + ".toolTip", w.toolTip()))
    if isinstance(w, QtWidgets.QLabel):
        out.append(guessed(name + ".text", w.text(), w.textFormat()))
    if isinstance(w, QtWidgets.QAbstractButton):
        out.append(mnemonic(name + ".text", w.text()))
    if isinstance(w, QtWidgets.QGroupBox):
        out.append(mnemonic(name + ".title", w.title()))
    out += _entries(name, w)
    # (a header view shares its table's model)
    if isinstance(w, QtWidgets.QAbstractItemView) and not isinstance(w, QtWidgets.QHeaderView) and w.model():
        out += _model_tooltips(name, w.model())
    if isinstance(w, pg.GraphicsView) and w.scene() is not None:
        out += scene_sinks(name, w.scene())
    return out


def _entries(name: str, w: QtWidgets.QWidget) -> list[Sink]:
    """A tab bar's tabs, a menu's entries: mnemonic text, and their tooltips."""
    out = []
    if isinstance(w, QtWidgets.QTabBar):
        for i in range(w.count()):
            out.append(mnemonic(f"{name}.tab[{i}]", w.tabText(i)))
            if w.tabToolTip(i):
                out.append(guessed(f"{name}.tabToolTip[{i}]", w.tabToolTip(i)))
    if isinstance(w, QtWidgets.QMenu):
        for a in w.actions():
            out.append(mnemonic(f"{name}.action", a.text()))
            if a.toolTip() and a.toolTip() != a.text().replace("&", ""):
                out.append(guessed(f"{name}.action.toolTip", a.toolTip()))
    return out


def _model_tooltips(name: str, model: QtCore.QAbstractItemModel, limit: int = 200) -> list[Sink]:
    out = []
    columns = 1 if isinstance(model, QtCore.QAbstractListModel) else model.columnCount()
    for r in range(min(model.rowCount(), limit)):
        for c in range(columns):
            tip = model.data(model.index(r, c), Qt.ItemDataRole.ToolTipRole)
            if isinstance(tip, str) and tip:
                out.append(guessed(f"{name}.model[{r},{c}].toolTip", tip))
    return out


def _role(item: QtWidgets.QGraphicsItem) -> str:
    """What a pyqtgraph text item is: "legend", "title", "axis", "TextItem", …"""
    parent = item.parentItem()
    if isinstance(parent, pg.TextItem):
        return "TextItem"
    if isinstance(parent, pg.AxisItem):
        return "axis"
    ancestor = parent
    while ancestor is not None:
        if isinstance(ancestor, pg.LegendItem):
            return "legend"
        ancestor = ancestor.parentItem()
    if isinstance(parent, pg.LabelItem) and isinstance(parent.parentItem(), pg.PlotItem):
        return "title"
    return type(parent).__name__


def scene_sinks(name: str, scene: QtWidgets.QGraphicsScene) -> list[Sink]:
    """Every text item of a pyqtgraph scene: titles, axis labels, legend entries, text items."""
    return [graphics_text(f"{name}.{_role(item)}", item)
            for item in scene.items() if isinstance(item, QtWidgets.QGraphicsTextItem)]


def all_sinks(app: QtWidgets.QApplication) -> list[Sink]:
    out = []
    for w in app.allWidgets():
        out += _widget_sinks(w)
        if w.isWindow() and w.windowTitle():
            out.append(Sink(type(w).__name__ + ".windowTitle", w.windowTitle(), w.windowTitle(), False))
    return out


def problems(sinks: list[Sink], hostile: dict[str, str]) -> list[str]:
    """What was drawn as markup: a token whose hostile string is gone from the drawn text, or an
    image in a document. (A sink that draws its text as given may cut it: that is no markup.)"""
    out = []
    for s in sinks:
        if s.images:
            out.append(f"{s.where}: renders an image from {s.raw[:160]!r}")
        if s.shown == s.raw:
            continue
        for token, literal in hostile.items():
            if token in s.shown and literal not in s.shown.replace('\\"', '"'):
                out.append(f"{s.where}: draws {s.shown[:160]!r} for {literal!r}")
    return out


def holding(sinks: list[Sink], literal: str) -> list[str]:
    """Where the literal hostile string is drawn (what a test checks it walked)."""
    return [s.where for s in sinks if literal in s.shown]
