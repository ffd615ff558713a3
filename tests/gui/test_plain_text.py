"""Text from data is drawn as written, everywhere in the console: a run imported with hostile
strings in its name, notes, tags, device, metric keys, config, events, alerts, episode and
samples is opened in the real window (offscreen) with every view it has, and every widget and
every pyqtgraph text item is read back. Before, a key `<img src=…>` loaded that local file into
a chart's title and `<font size=7>` spoofed titles, legends and the status line."""
from __future__ import annotations

import copy
import json

import pytest
from PySide6 import QtCore, QtWidgets

from rla_gui.main_window import MainWindow

from gui_support import until
from rendered_text import all_sinks, everything, holding, hostile_strings, plant_image, problems, scene_sinks

KEY_TEXT = "custom/<font size=7 color=red>SPOOF</font>"


def hostile_bundle(base: dict, text: str, image_key: str) -> dict:
    """The recorded arithmetic run, with `text` in every field a person or a file can write."""
    b = copy.deepcopy(base)
    run = b["run"]
    run.update(id="hostile-run", name="run " + text, notes="notes " + text, tags="tag " + text,
               device="cpu " + text, preset="tiny")
    run["config"]["policy"] = {**run["config"]["policy"], "model_path": "models/" + text}
    its = [r["iteration"] for r in b["iterations"]]
    for key in (KEY_TEXT, image_key, "custom/amp&ersand", "custom/&lt;not-an-entity&gt;", "custom/<b>BOLD</b>"):
        b["metrics"] += [{"iteration": it, "key": key, "value": 0.1 * it, "t": 0.0} for it in its]
    last = its[-1]
    b["events"] += [
        {"iteration": last, "t": 0.0, "kind": "alert",
         "payload": {"alert": "alert " + text, "state": "raised", "since": 1, "message": "message " + text,
                     "advice": "advice " + text, "value": 0.5}},
        {"iteration": last, "t": 0.0, "kind": "failed", "payload": {"error": "error " + text}},
        {"iteration": last, "t": 0.0, "kind": "variant_invalid",
         "payload": {"slot": 1, "direction": "harder", "reason": "reason " + text}},
        {"iteration": last, "t": 0.0, "kind": "hostile " + text, "payload": {"what": text}},
        {"iteration": last, "t": 0.0, "kind": "samples", "payload": {
            "family": "family " + text,
            "trajectories": [{"slot": 0, "task": "task " + text, "success": True, "turns": [
                {"steps": [{"text": "step " + text, "verdicts": [1, -1, 0], "reasoning": ["why " + text] * 3,
                            "oracle": 1}], "observation": "observed " + text}]}],
            "variants": [{"slot": 2, "direction": "easier", "outcome": "rejected", "critic": {"judge": text},
                          "task": "variant " + text, "answer": "answer " + text, "reason": "too easy " + text}]}},
    ]
    episode = next(e for e in reversed(b["events"]) if e["kind"] == "episode")
    episode["payload"]["slot"] = "slot " + text
    for t in b["tasks"]:
        t["params_json"] = json.dumps({"params": {"ops": ["+"], "note": text}, "seed": 1})
    return b


@pytest.fixture
def hostile(tmp_path, tmp_path_factory, recorded):
    from rla_engine.store import open_store
    image = plant_image(tmp_path_factory.mktemp("image"))     # a path without "_" (short() makes it " ")
    text = everything(image)
    db = tmp_path / "hostile.db"
    store = open_store(db)
    try:
        store.import_runs([hostile_bundle(recorded("recorded_arithmetic")[0], text, f'custom/<img src="{image}">')])
    finally:
        store.close()
    return db, image, text


def open_everything(win: MainWindow, drive, image, text: str) -> None:
    """Open the run with an added chart of every hostile key, hover over it, compare it, and
    bring each dock to the front once (a dock behind a tab paints nothing)."""
    keys = ["custom/amp&ersand", KEY_TEXT, f'custom/<img src="{image}">', "custom/&lt;not-an-entity&gt;",
            "custom/<b>BOLD</b>"]

    async def scenario():
        await until(lambda: win.history.model.rows, what="the history")
        win.open_run("hostile-run")
        await until(lambda: win.controller.session.run is not None and win.samples.payload is not None
                    and win.events.row_count() > 0, what="the run's data")
        await until(lambda: KEY_TEXT in win.dashboard.data.columns, what="the keys")
        for key in keys[1:]:
            win.dashboard.add_chart([key])
        win.dashboard.add_chart(keys)
        win.dashboard.refresh()
        win.history.select("hostile-run")
        win.controller.compare(["hostile-run"])
        await until(lambda: win.comparisons, what="the comparison")
        win.views.setCurrentIndex(0)
        win.controller.clone("hostile-run")       # its config into the form
        await until(lambda: "models/" in win.run_form.form.config().policy.model_path, what="the clone")
        win.run_form.load_config({"task": {"family": "family " + text}})    # refused: the error names it

    drive(scenario(), timeout=60)
    for dock in win.docks:
        dock.raise_()
    win.samples_dock.raise_()
    plot = win.dashboard.added[-1]
    plot.refresh()
    vb = plot.plotItem.vb
    centre = vb.mapViewToScene(QtCore.QPointF(2.0, 0.2))
    plot.scene().sigMouseMoved.emit(centre)       # the mouse over the chart: the read-out names the keys
    assert plot.readout.item.isVisible()


def test_every_widget_draws_hostile_data_text_as_written(qtbot, tmp_path, hostile, drive, aloop):
    db, image, text = hostile
    settings = QtCore.QSettings(str(tmp_path / "s.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(db, settings=settings)
    qtbot.addWidget(win)
    win.resize(1500, 1300)        # the added chart tall enough for its read-out's every line ("… more" else)
    win.show()
    try:
        open_everything(win, drive, image, text)
        qtbot.wait(50)
        sinks = all_sinks(QtWidgets.QApplication.instance())
        hostile_by_token = hostile_strings(image)
        found = problems(sinks, hostile_by_token)
        assert not found, "\n".join(found)
        # the walk saw the data where a person reads it (a walk that missed them proves nothing)
        spoof = hostile_by_token["SPOOF"]
        seen = " | ".join(holding(sinks, spoof))
        for where in ("MetricPlot(0x", ".title", ".legend", ".TextItem", "QLabel", "toolTip", "tab["):
            assert where in seen, (where, seen)
        assert holding(sinks, f'<img src="{image}">'), "the image key is drawn as text somewhere"
        assert holding(sinks, "amp&ersand")
    finally:
        win.close()
        if win.finished is not None:
            qtbot.waitUntil(win.finished.done, timeout=30_000)


def test_a_chart_title_of_a_hostile_key_renders_no_image_and_no_markup(qtbot, tmp_path_factory):
    """The dashboard's chart of one key, drawn into pixels: the planted image is not loaded."""
    from rla_gui.model.run_data import RunData
    from rla_gui.widgets.metric_plot import MetricPlot
    image = plant_image(tmp_path_factory.mktemp("image"))
    key = f'custom/<img src="{image}">'
    data = RunData()
    plot = MetricPlot(key, (key, KEY_TEXT), data)
    qtbot.addWidget(plot)
    plot.resize(500, 300)
    plot.show()
    qtbot.waitExposed(plot)
    texts = scene_sinks("plot", plot.scene())
    found = problems(texts, hostile_strings(image))
    assert not found, "\n".join(found)
    assert plot.plotItem.titleLabel.item.toPlainText() == key
    picture = plot.grab().toImage()
    magenta = sum(picture.pixelColor(x, y).name() == "#ff00ff"
                  for x in range(0, picture.width(), 2) for y in range(0, picture.height(), 2))
    assert magenta == 0
    assert [label.item.toPlainText() for _, label in plot.plotItem.legend.items] == [
        f'<img src="{image}">', "<font size=7 color=red>SPOOF</font>"]
