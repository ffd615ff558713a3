"""Load TOML… reads on a thread (a FIFO or a hung mount must not freeze the window). That thread
once held the panel itself: when a panel was let go while its file was read, the panel's last
reference went in the reading thread, Qt destroyed its widgets and timers off the GUI thread, and
a later timer fired on freed memory — a segmentation fault, seen in the suite a test file later.
Then it held a child of the panel and emitted through it, and under a CPU hog the process still
died now and then (emitting into an object being destroyed, or after the application ended): the
thread now touches no Qt object at all. Here panels are dropped at once, thirty times, in a
process of its own (a crash must not take pytest down), which ends with reads still going: it must
end cleanly."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def test_a_panel_let_go_while_its_file_is_read_leaves_nothing_behind(tmp_path):
    config = tmp_path / "run.toml"
    config.write_text("", encoding="utf-8")
    script = textwrap.dedent(f"""
        import time
        from PySide6 import QtCore, QtWidgets
        app = QtWidgets.QApplication([])
        warnings = []
        QtCore.qInstallMessageHandler(lambda mode, context, text: warnings.append(text))
        from rla_gui.panels.run_form import RunFormPanel
        from rla_gui.widgets import file_dialogs
        file_dialogs.open_file_name = lambda *a, **k: ({str(config)!r}, "")
        for _ in range(30):
            panel = RunFormPanel()
            panel.load_button.click()
            del panel
            time.sleep(0.02)
            app.processEvents()
        print("done", [w for w in warnings if "propagateSizeHints" not in w])
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    assert res.stdout.strip() == "done []", res.stdout
