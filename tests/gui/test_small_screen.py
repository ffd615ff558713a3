"""The console on a small screen (issue 35, part 2, item 7): a laptop's or a VNC window's 800 × 600
is a size the window takes, and at it History, the plots' view bar and the New run form show every
control whole, none over another, with plots big enough to read; at the default 1500 × 950 the view
bar and the form's buttons stay on one row. The real main window offscreen, on a real database of
recorded runs."""
import pytest
from PySide6 import QtCore, QtWidgets

from gui_support import shown_window, until

SMALL = QtCore.QSize(800, 600)
PLOT_MIN = QtCore.QSize(150, 100)      # a usable plot: a title, a legend and axes round its curves
CURVES_MIN = QtCore.QSize(150, 60)     # and room for the curves themselves (its view box)


@pytest.fixture
def db(recorded, recorded_db):
    return recorded_db(*recorded("recorded_group"))


def laid_out(container: QtWidgets.QWidget) -> list[QtWidgets.QWidget]:
    """The widgets a container's layout places, as shown."""
    children = container.findChildren(QtWidgets.QWidget, options=QtCore.Qt.FindChildOption.FindDirectChildrenOnly)
    return [w for w in children if w.isVisible() and not w.isWindow()]


def name(widget: QtWidgets.QWidget) -> str:
    text = widget.text() if isinstance(widget, (QtWidgets.QAbstractButton, QtWidgets.QLabel)) else ""
    return f"{type(widget).__name__} {text!r} {widget.objectName()}".strip()


def layout_faults(container: QtWidgets.QWidget) -> list[str]:
    """What a person would see wrong among the container's controls: one over another, one
    squeezed below the size it needs to read whole, one cut off by the container's edge."""
    widgets = laid_out(container)
    assert widgets, f"nothing shown in {name(container)}"
    faults = [f"{name(w)} squeezed to {w.size().toTuple()}, needs {w.minimumSizeHint().toTuple()}"
              for w in widgets
              if w.width() < w.minimumSizeHint().width() or w.height() < w.minimumSizeHint().height()]
    faults += [f"{name(w)} at {w.geometry().getRect()} cut off by {name(container)} {container.size().toTuple()}"
               for w in widgets if not container.rect().contains(w.geometry())]
    faults += [f"{name(a)} overlaps {name(b)}" for i, a in enumerate(widgets) for b in widgets[i + 1:]
               if a.geometry().intersects(b.geometry())]
    for group in widgets:       # controls kept together in a plain widget (a label and its control)
        if type(group) is QtWidgets.QWidget and laid_out(group):
            faults += layout_faults(group)
    return faults


def settle(qtbot, win) -> None:
    qtbot.waitUntil(lambda: win.width() < 1500, timeout=5000)
    qtbot.wait(100)     # the docks and the dashboard lay out after the window's resize


def test_an_800_by_600_window_shows_history_the_view_bar_and_the_form_whole(qtbot, tmp_path, db, drive):
    with shown_window(qtbot, db, tmp_path) as win:
        drive(until(lambda: len(win.history.model.rows) == 3, what="the runs listed"), timeout=60)
        win.resize(SMALL)
        settle(qtbot, win)
        assert win.size() == SMALL, f"the window is {win.size().toTuple()}, its minimum {win.minimumSize().toTuple()}"

        win.find_run()                      # History in front of the form
        qtbot.waitUntil(win.history.isVisible)
        qtbot.wait(50)
        assert layout_faults(win.history) == []
        assert win.history.table.viewport().height() >= win.history.table.verticalHeader().defaultSectionSize()

        view = win.dashboard.view           # the view bar, and within it each label with its control
        assert view.height() >= view.heightForWidth(view.width()), "the view bar's lower row is cut off"
        assert layout_faults(view) == []
        assert layout_faults(win.dashboard) == []
        small_plots = [(p.plotItem.titleLabel.text, p.size().toTuple(), p.plotItem.vb.size().toTuple())
                       for p in win.dashboard.fixed
                       if p.width() < PLOT_MIN.width() or p.height() < PLOT_MIN.height()
                       or p.plotItem.vb.size().width() < CURVES_MIN.width()
                       or p.plotItem.vb.size().height() < CURVES_MIN.height()]
        assert small_plots == []

        win.show_new_run()                  # the form in front again
        qtbot.waitUntil(win.run_form.isVisible)
        qtbot.wait(50)
        assert layout_faults(win.run_form) == []
        assert win.run_form.start_button.isVisible()


def test_at_the_default_size_the_view_bar_and_the_forms_buttons_keep_one_row(qtbot, tmp_path, db, drive):
    with shown_window(qtbot, db, tmp_path) as win:
        assert win.size() == QtCore.QSize(1500, 950)
        qtbot.wait(100)
        view = win.dashboard.view
        rows = {w.geometry().center().y() // 8 for w in laid_out(view)}
        assert view.height() == view.sizeHint().height() and len(rows) == 1, rows
        assert layout_faults(view) == []
        form = win.run_form
        boxes = [QtCore.QRect(b.mapTo(form, QtCore.QPoint(0, 0)), b.size())
                 for b in (form.load_button, form.save_button, form.ablation_button, form.start_button)]
        assert len({box.top() for box in boxes}) == 1
        assert boxes[0].left() < boxes[1].left() < boxes[2].left() < boxes[3].left()      # Start at the right
        assert layout_faults(form) == []
