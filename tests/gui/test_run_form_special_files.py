"""The New-run panel's Load TOML… reads off the GUI thread and refuses what `rla run --config`
refuses (issue 34, finding 6): a FIFO once froze the whole window until something wrote to it, and
/dev/zero filled memory from the GUI thread."""
from __future__ import annotations

import os
import resource
import threading
import time
from pathlib import Path

import pytest

from rla_engine.config import Config
from rla_gui.panels.run_form import RunFormPanel
from rla_gui.widgets import file_dialogs

CLICK_RETURNS_WITHIN_S = 1.0     # the click only starts the read; the old code held the window for the whole read
HOLD_S = 3.0                     # how long the writer below keeps a FIFO open once a reader appears


@pytest.fixture
def panel(qtbot) -> RunFormPanel:
    p = RunFormPanel()
    qtbot.addWidget(p)
    return p


def _choose(monkeypatch, path: str) -> None:
    monkeypatch.setattr(file_dialogs, "open_file_name", lambda *a, **k: (path, ""))


def _writer_once_read(fifo: Path, stop: threading.Event) -> threading.Thread:
    """Another program that writes to the FIFO as soon as someone opens it for reading, but only
    after HOLD_S: a reader that opens it at all blocks that long."""
    def write() -> None:
        while not stop.is_set():
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)    # ENXIO while nobody reads
            except OSError:
                time.sleep(0.01)
                continue
            stop.wait(HOLD_S)
            os.write(fd, b"not = [toml")
            os.close(fd)
            return
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_loading_a_fifo_leaves_the_window_responsive_and_says_what_it_is(panel, qtbot, tmp_path, monkeypatch):
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    _choose(monkeypatch, str(fifo))
    stop = threading.Event()
    writer = _writer_once_read(fifo, stop)
    try:
        started = time.monotonic()
        panel.load_button.click()
        took = time.monotonic() - started
        qtbot.waitUntil(lambda: "FIFO" in panel.error_label.text(), timeout=10_000)
    finally:
        stop.set()
        writer.join()
    assert took < CLICK_RETURNS_WITHIN_S, f"the click held the GUI thread {took:.1f} s"
    assert str(fifo) in panel.error_label.text()
    assert panel.form.config() == Config() and panel.load_button.isEnabled()


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024      # Linux: kilobytes


def test_loading_dev_zero_is_refused_at_once_without_reading_it(panel, qtbot, monkeypatch):
    _choose(monkeypatch, "/dev/zero")
    before = _peak_rss_mb()
    panel.load_button.click()
    qtbot.waitUntil(lambda: "character device" in panel.error_label.text(), timeout=5_000)
    assert "/dev/zero" in panel.error_label.text()
    assert _peak_rss_mb() - before < 100, "the console read /dev/zero into memory"
    assert panel.form.config() == Config() and panel.load_button.isEnabled()


def test_a_good_file_still_loads_while_the_window_keeps_running(panel, qtbot, tmp_path, monkeypatch):
    good = tmp_path / "mine.toml"
    good.write_text("[policy]\nlam = 0.5\n", encoding="utf-8")
    _choose(monkeypatch, str(good))
    panel.load_button.click()
    qtbot.waitUntil(lambda: panel.form.config().policy.lam == 0.5, timeout=5_000)
    assert panel.error_label.text() == "" and panel.load_button.isEnabled()
