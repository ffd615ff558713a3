"""A long title (an added chart of several keys) never widens a plot past its widget: before,
the view box's right end — the newest data — was pushed out of sight."""
from __future__ import annotations

import pyqtgraph as pg

from rla_gui.widgets.readout import add_legend, set_title


def test_a_long_title_is_cut_not_the_data(qtbot):
    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    set_title(plot.plotItem, "agreement on failure, agreement on success, outcome share given oracle")
    add_legend(plot.plotItem)
    plot.plotItem.plot([0, 1, 2], [0, 1, 0], name="agreement on failure")
    plot.resize(280, 240)
    plot.show()
    qtbot.waitExposed(plot)
    layout = plot.plotItem.layout
    qtbot.waitUntil(layout.isActivated)
    plot.plotItem.setTitle("agreement on failure, agreement on success, outcome share given oracle, error")
    assert not layout.isActivated()          # the longer title asked for a new layout…
    qtbot.waitUntil(layout.isActivated)      # …which has run: the check below sees its result
    assert plot.plotItem.vb.sceneBoundingRect().right() <= plot.width()
