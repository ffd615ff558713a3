"""Every Qt model of the console, driven through every method Qt calls, with the values a
database or an import can hold: 1.5e308, -1e200, ±inf, NaN, an integer of 400 digits, and text
written to be taken for markup. Nothing may escape to Qt (an exception in a model method is at
best a traceback per repaint, at worst a crash inside a reset), nothing may be caught by the
guard either (a cell that shows nothing), and no tooltip that holds data may render it as markup.

The models are found by walking the `rla_gui` package, so a new one cannot be forgotten: it
fails here until FILLERS says how to fill it."""
from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import sys

import pytest
from PySide6 import QtCore, QtGui, QtWidgets

import rla_gui
from rla_engine import metrics
from rla_engine.summary import SUMMARY_KEYS
from rla_engine.vocabulary import EventKind, TaskStatus

from extreme_data import HUGE_INT

Qt = QtCore.Qt
ROLES = [Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole, Qt.ItemDataRole.EditRole,
         Qt.ItemDataRole.UserRole, Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.BackgroundRole,
         Qt.ItemDataRole.TextAlignmentRole, Qt.ItemDataRole.FontRole, Qt.ItemDataRole.DecorationRole,
         Qt.ItemDataRole.StatusTipRole, Qt.ItemDataRole.WhatsThisRole, Qt.ItemDataRole.SizeHintRole,
         Qt.ItemDataRole.CheckStateRole, Qt.ItemDataRole.AccessibleTextRole]
TIP_ROLES = (Qt.ItemDataRole.ToolTipRole, Qt.ItemDataRole.WhatsThisRole)      # Qt may render these as rich text
NUMBERS = [1.5e308, -1e200, math.inf, -math.inf, math.nan, HUGE_INT, 0.5]
# token -> hostile text holding it: a tooltip showing the token must show the whole text
MARKUP = {"SPOOF": "<font size=7 color=red>SPOOF</font>", "BOLD": "<b>BOLD</b>",
          "ENTITY": "&lt;ENTITY&gt;"}


def hostile_texts(image: str) -> list[str]:
    return [f'<img src="{image}">', *MARKUP.values(), "nul\x00here", "long " + "w" * 20_000]


def every_model_class() -> set[type]:
    found = set()
    for info in pkgutil.walk_packages(rla_gui.__path__, "rla_gui."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, QtCore.QAbstractItemModel) and cls.__module__.startswith("rla_gui."):
                found.add(cls)
    return found


# -- filling each model with hostile rows ---------------------------------------------------------
def _values(image: str) -> list:
    return [*NUMBERS, *hostile_texts(image)]


def _run_rows(image: str) -> list[dict]:
    """One summary row per hostile value, every field that may hold it holding it."""
    texts = hostile_texts(image)
    rows = []
    for i, v in enumerate(_values(image)):
        text = texts[i % len(texts)]
        number = v if isinstance(v, (int, float)) else NUMBERS[i % len(NUMBERS)]
        row = {"id": f"run-{i}", "name": text, "status": "completed" if i % 2 else text, "preset": text,
               "started_at": number, "ended_at": number, "heartbeat_at": number, "duration": number,
               "iteration": number, "notes": text, "tags": text, "error": text, "group_id": text,
               "archived": 0, "damaged": {"iteration": text} if i % 3 == 0 else {},
               "columns": {c: v for c in COLUMN_IDS}}
        row.update({k: number for k in SUMMARY_KEYS})
        rows.append(row)
    return rows


COLUMN_IDS = ["config:policy.lam", "config:task.name", f"final:{metrics.DIFFICULTY_MEAN}",
              f"best:{metrics.SUCCESS}", "run:arm", "run:group"]


def _runs_model(image):
    from rla_gui.panels.runs_model import RunsModel
    from rla_gui.model.run_columns import FIXED, RUN_COLUMNS, parse
    model = RunsModel()
    model.set_columns([*FIXED, *RUN_COLUMNS, *(c for c in map(parse, COLUMN_IDS) if c is not None)])
    model.set_rows(_run_rows(image))
    return model


def _runs_filter(image):
    from rla_gui.panels.runs_model import RunsFilter
    proxy = RunsFilter()
    proxy.setSourceModel(_runs_model(image))
    proxy.set_text("policy.lam>0 w")
    proxy.set_text("")
    proxy.setParent(proxy.sourceModel())
    return proxy


def _group_tree(image):
    from rla_gui.panels.run_groups import GroupTreeModel
    from rla_gui.model.run_columns import parse
    source = _runs_model(image)
    model = GroupTreeModel()
    by = parse("config:policy.lam")
    assert by is not None
    for sort in range(-1, len(source.columns)):
        for descending in (False, True):
            model.rebuild(source.rows, source.columns, by, sort, descending)
    return model


def _pool_table(image):
    from rla_gui.panels.pool_table import PoolTableModel
    model = PoolTableModel()
    rows = []
    for i, v in enumerate(_values(image)):
        text = hostile_texts(image)[i % 6]
        rows.append({"slot": i, "family": text, "version": v if isinstance(v, int) else i, "difficulty": v,
                     "last_acc": v, "status": TaskStatus.ACTIVE, "params_json": text if i % 2 else
                     f'{{"params": {{"note": "{text[:40]}"}}, "v": 1e308}}', "direction": None})
        rows.append({"slot": i, "status": TaskStatus.PENDING, "direction": text, "difficulty": v})
    model.set_rows(rows)
    return model


def _event_table(image):
    from rla_gui.panels.event_log import EventTableModel
    model = EventTableModel()
    events = []
    for i, v in enumerate(_values(image)):
        text = hostile_texts(image)[i % 6]
        for kind in [*EventKind, text]:
            events.append({"iteration": v, "t": v, "kind": kind,
                           "payload": {"slot": v, "difficulty": v, "prev_acc": v, "new_acc": v, "message": text,
                                       "reason": text, "error": text, "value": v, "state": "raised",
                                       "alert": text, "kind": text, "result": text, "advice": text}})
    model.append(events)
    model.set_kind(hostile_texts(image)[0])      # one kind shown, then every kind again
    model.set_kind(None)
    return model


def _list_table(image):
    from rla_gui.widgets.list_model import ListTableModel
    model = ListTableModel()
    model.items = _values(image)
    return model


FILLERS = {"RunsModel": _runs_model, "RunsFilter": _runs_filter, "GroupTreeModel": _group_tree,
           "PoolTableModel": _pool_table, "EventTableModel": _event_table,
           "ListTableModel": _list_table}


# -- driving a model --------------------------------------------------------------------------------
def _indexes(model, parent=QtCore.QModelIndex()):
    for r in range(model.rowCount(parent)):
        for c in range(model.columnCount(parent)):
            index = model.index(r, c, parent)
            yield index
            if c == 0 and model.rowCount(index):
                yield from _indexes(model, index)


def _rendered(text: str) -> tuple[str, bool]:
    """What Qt draws of a tooltip: plain text as it is, else the rich text's text (and whether it shows an image)."""
    if not QtGui.Qt.mightBeRichText(text):
        return text, False
    doc = QtGui.QTextDocument()
    doc.setHtml(text)
    block, image = doc.begin(), False
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            image = image or it.fragment().charFormat().isImageFormat()
            it += 1
        block = block.next()
    return doc.toPlainText(), image


def _markup_problems(where: str, text) -> list[str]:
    if not isinstance(text, str) or not text:
        return []
    shown, image = _rendered(text)
    problems = [f"{where}: an image is drawn from {text[:80]!r}"] if image else []
    problems += [f"{where}: {token} drawn as markup, not as {whole!r}" for token, whole in MARKUP.items()
                 if token in shown and whole not in shown]
    return problems


def drive(model) -> list[str]:
    """Every method Qt calls, for every row, column and role; the markup problems found."""
    problems = []
    for orientation in (Qt.Orientation.Horizontal, Qt.Orientation.Vertical):
        for section in range(-1, model.columnCount() + 1):
            for role in ROLES:
                problems += _markup_problems(f"header {section} role {role}", model.headerData(section, orientation,
                                                                                             role))
    for column in range(model.columnCount()):
        for order in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder):
            model.sort(column, order)
    for index in list(_indexes(model)):
        index.parent()
        model.flags(index)
        model.sibling(index.row(), 0, index)
        for role in ROLES:
            value = model.data(index, role)
            if role in TIP_ROLES:
                problems += _markup_problems(f"[{index.row()},{index.column()}] role {role}", value)
        model.itemData(index)
        if model.flags(index) & Qt.ItemFlag.ItemIsEditable:
            for v in (1.5e308, HUGE_INT, "<b>x</b>"):
                model.setData(index, v, Qt.ItemDataRole.EditRole)
    model.index(10 ** 6, 0)
    model.index(-1, -1)
    return problems


@pytest.fixture
def escapes(monkeypatch, guard_reports):
    """Everything that reached Python's hooks, Qt's warnings or the guard's log, as it happens."""
    seen: list[str] = []
    monkeypatch.setattr(sys, "excepthook", lambda t, e, tb: seen.append(f"excepthook: {t.__name__}: {e}"))
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(f"unraisable: {u.exc_value!r}"))

    def qt_message(mode, context, text):
        if mode != QtCore.QtMsgType.QtDebugMsg and "propagateSizeHints" not in text:
            seen.append(f"Qt: {text}")
    previous = QtCore.qInstallMessageHandler(qt_message)
    yield seen, guard_reports
    QtCore.qInstallMessageHandler(previous)


def test_every_model_of_the_console_is_found_and_has_a_filler():
    names = {cls.__name__ for cls in every_model_class()}
    assert {"RunsModel", "GroupTreeModel", "PoolTableModel", "ListTableModel"} <= names
    assert names <= set(FILLERS), f"a new model: say in FILLERS how to fill {sorted(names - set(FILLERS))}"


@pytest.mark.parametrize("name", sorted(FILLERS))
def test_a_model_driven_with_extreme_and_hostile_values_raises_nothing_and_renders_no_markup(
        qtbot, tmp_path, escapes, name):
    image = tmp_path / "planted.png"
    img = QtGui.QImage(8, 8, QtGui.QImage.Format.Format_RGB32)
    img.fill(QtGui.QColor("#ff00ff"))
    img.save(str(image))
    model = FILLERS[name](str(image))
    problems = drive(model)
    # and as a view paints it: Qt asking, through C++, for what it shows
    view = QtWidgets.QTreeView() if name == "GroupTreeModel" else QtWidgets.QTableView()
    qtbot.addWidget(view)
    view.setModel(model)
    view.resize(900, 400)
    view.show()
    if isinstance(view, QtWidgets.QTreeView):
        view.expandAll()
    view.setSortingEnabled(True)
    for column in range(model.columnCount()):
        view.sortByColumn(column, Qt.SortOrder.DescendingOrder)
        view.grab()
    seen, caught = escapes
    assert not seen, "\n".join(seen[:20])
    assert not caught, "the guard caught:\n" + "\n".join(r[:400] for r in caught[:20])
    assert not problems, "\n".join(problems[:20])
