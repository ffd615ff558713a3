"""Fault class "text": text from data (metric keys, run names, alerts, event payloads) that looks
like markup, against the real console offscreen in a child process and the real report renderer.

    .venv/bin/python benchmarks/fault_text.py

Each case trains a real `rla run`, exports it, writes hostile text into the export and brings it
back with `rla import` (as a colleague's file arrives), then opens it in the console child (or
renders its report) and checks what is drawn: a planted `<img src=…>` must load no image (its
PNG is solid magenta: no magenta pixel may appear), `<font size=7>`, `<b>` and `&lt;` must read
literally, and `&` must not become a shortcut mark.

Run as `fault_text.py console --db DB --run ID --out OUT.json` it is that console child.
"""
from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_support import ROOT, Verdict, last_line, rla, run_cases, run_standalone, tiny

MAGENTA = "#ff00ff"
SPOOF = "<font size=7 color=red>SPOOF</font>"
BOLD = "<b>BOLD</b>"
ENTITY = "&lt;not-an-entity&gt;"
AMP = "amp&ersand"


def _image_markup(png: Path) -> str:
    return f'<img src="{png}">'


# -- the hostile database -------------------------------------------------------------------------
def plant_png(folder: Path) -> Path:
    """A small solid-magenta PNG (written without Qt: the parent imports none)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + b"\xff\x00\xff" * 32 for _ in range(32))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 32, 32, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    path = folder / "planted.png"
    path.write_bytes(png)
    return path


def hostile_db(d: Path, name: str, keys: list[str], events: tuple[dict, ...] = ()) -> tuple[Path, str]:
    """A real tiny run, exported, given `name` and metric `keys` (and `events`), imported into a
    fresh database: (that database, the run's id)."""
    src, dst, export = d / "src.db", d / "hostile.db", d / "run.json"
    res = rla(src, "run", *tiny(), "--iterations", "2", "--run-id", "src")
    assert res.returncode == 0, last_line(res.stderr)
    res = rla(src, "export", "src", "--format", "json", "--out", str(export))
    assert res.returncode == 0, last_line(res.stderr)
    bundle = json.loads(export.read_text("utf-8"))
    bundle["run"].update(name=name, notes=name, tags=name)
    its = [r["iteration"] for r in bundle["iterations"]]
    bundle["metrics"] += [{"iteration": it, "key": k, "value": 0.25 * it, "t": 0.0} for k in keys for it in its]
    bundle["events"] += [{"iteration": its[-1], "t": 0.0, **e} for e in events]
    export.write_text(json.dumps(bundle), "utf-8")
    res = rla(dst, "import", str(export))
    assert res.returncode == 0, last_line(res.stderr)
    return dst, "src"


def console(db: Path, run_id: str, out: Path, charts: list[str]) -> dict:
    """Run the console child on `db` and return what it read back."""
    args = [sys.executable, str(Path(__file__).resolve()), "console", "--db", str(db), "--run", run_id,
            "--out", str(out), *[a for k in charts for a in ("--chart", k)]]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    if not out.exists():
        raise RuntimeError(f"console child exit {proc.returncode}: {last_line(proc.stderr)}")
    return json.loads(out.read_text("utf-8"))


# -- cases ---------------------------------------------------------------------------------------
def image_key_loads_no_image(d: Path) -> tuple[bool, str]:
    png = plant_png(d)
    key = f"custom/{_image_markup(png)}"
    db, run = hostile_db(d, "plain", [key])
    seen = console(db, run, d / "seen.json", [key])
    chart = seen["charts"][0]
    ok = chart["magenta"] == 0 and chart["title"] == key and not chart["images"]
    return ok, f"title {chart['title'][:60]!r}, {chart['magenta']} magenta pixels, images {chart['images']}"


def font_key_spoofs_no_title_or_legend(d: Path) -> tuple[bool, str]:
    key = f"custom/{SPOOF}"
    db, run = hostile_db(d, "plain", [key, f"custom/{BOLD}", f"custom/{ENTITY}"])
    seen = console(db, run, d / "seen.json", [key, f"custom/{BOLD}", f"custom/{ENTITY}"])
    titles = [c["title"] for c in seen["charts"]]
    legends = [label for c in seen["charts"] for label in c["legend"]]
    ok = titles == [key, f"custom/{BOLD}", f"custom/{ENTITY}"] and {SPOOF, BOLD, ENTITY} <= set(legends)
    return ok, f"titles {titles}; legends {legends}"


def run_name_reads_as_written(d: Path) -> tuple[bool, str]:
    name = f"{AMP} {SPOOF} {BOLD} {ENTITY}"
    db, run = hostile_db(d, name, [])
    seen = console(db, run, d / "seen.json", [])
    state, tab = seen["status"], seen["comparison_tab"]
    ok = state.startswith(name) and tab.endswith(name)
    return ok, f"status line {state[:80]!r}; comparison tab {tab[:80]!r}"


def alert_payload_reads_as_written(d: Path) -> tuple[bool, str]:
    png = plant_png(d)
    text = f"{SPOOF} {BOLD} {ENTITY} {_image_markup(png)}"
    alert = {"kind": "alert", "payload": {"alert": f"alert {text}", "state": "raised", "since": 1,
                                          "message": f"message {text}", "advice": f"advice {text}"}}
    failed = {"kind": "failed", "payload": {"error": f"error {text}"}}
    db, run = hostile_db(d, "plain", [], (alert, failed))
    seen = console(db, run, d / "seen.json", [])
    badge, tips = seen["alerts"], seen["event_tips"]
    ok = (f"alert {text}" in badge["shown"] and not badge["images"] and f"advice {text}" in badge["tip"]
          and all(t["shown_has_text"] and not t["images"] for t in tips) and len(tips) >= 2)
    return ok, f"badge {badge['shown'][:60]!r}; {len(tips)} event tooltips"


def report_charts_render_no_markup(d: Path) -> tuple[bool, str]:
    png = plant_png(d)
    key = f"custom/{_image_markup(png)}"
    db, run = hostile_db(d, f"report {SPOOF}", [key, f"custom/{SPOOF}"])
    out = d / "report.html"
    res = rla(db, "export", run, "--format", "html", "--out", str(out), "--chart-json",
              json.dumps([key, f"custom/{SPOOF}"]))
    if res.returncode != 0:
        return False, f"export exit {res.returncode}: {last_line(res.stderr)}"
    text = out.read_text("utf-8")
    raw_markup = _image_markup(png) in text or SPOOF in text
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    magenta = sum(_magenta_in_png(base64.b64decode(b)) for b in images)
    ok = not raw_markup and images and magenta == 0 and "SPOOF" in text
    return bool(ok), f"{len(images)} chart images, {magenta} magenta pixels, raw markup {raw_markup}"


def _magenta_in_png(data: bytes) -> int:
    """Magenta pixels in a PNG, read by a child with Qt (the parent imports none)."""
    code = ("import sys; from PySide6 import QtGui; img = QtGui.QImage(); img.loadFromData(sys.stdin.buffer.read());"
            "print(sum(img.pixelColor(x, y).name() == '#ff00ff' for x in range(0, img.width(), 2)"
            " for y in range(0, img.height(), 2)))")
    res = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, timeout=60)
    return int(res.stdout.decode().strip() or 1)


CASES = [image_key_loads_no_image, font_key_spoofs_no_title_or_legend, run_name_reads_as_written,
         alert_payload_reads_as_written, report_charts_render_no_markup]


def campaign(root: Path, verdict: Verdict, say=print) -> dict:
    return run_cases("text", "data that looks like markup, as the console and the report draw it", CASES, root,
                     verdict, say)


# -- the console child ------------------------------------------------------------------------------
def _drawn(text: str, rich: bool) -> tuple[str, bool]:
    """What a text sink draws (as plain text) and whether that holds an image."""
    from PySide6 import QtGui
    if not rich:
        return text, False
    doc = QtGui.QTextDocument()
    doc.setHtml(text)
    return doc.toPlainText(), "<img" in doc.toHtml()


def _guessed(text: str) -> tuple[str, bool]:
    """A tooltip, or a label left to guess: rich when Qt's guess says so."""
    from PySide6 import QtGui
    return _drawn(text, QtGui.Qt.mightBeRichText(text))


def _label(label) -> tuple[str, bool]:
    from PySide6 import QtCore, QtGui
    fmt = label.textFormat()
    rich = fmt == QtCore.Qt.TextFormat.RichText or (fmt == QtCore.Qt.TextFormat.AutoText
                                                     and QtGui.Qt.mightBeRichText(label.text()))
    return _drawn(label.text(), rich)


def _chart(plot) -> dict:
    """An added chart as drawn: its title's and legend's plain text, images in them, magenta pixels."""
    item = plot.plotItem
    docs = [item.titleLabel.item.document(), *(label.item.document() for _, label in item.legend.items)]
    picture = plot.grab().toImage()
    magenta = sum(picture.pixelColor(x, y).name() == MAGENTA
                  for x in range(0, picture.width(), 2) for y in range(0, picture.height(), 2))
    return {"title": item.titleLabel.item.toPlainText(), "legend": [label.item.toPlainText() for _, label in
                                                                     item.legend.items],
            "images": any("<img" in d.toHtml() for d in docs), "magenta": magenta}


def console_main(argv: list[str]) -> int:
    """Open the run in the real window, add a chart per --chart key, compare it, and write what is drawn."""
    import argparse
    import asyncio
    import os
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import qasync
    from PySide6 import QtCore

    from rla_gui.app import build_app
    from rla_gui.main_window import MainWindow
    ap = argparse.ArgumentParser(prog="fault_text.py console")
    ap.add_argument("--db", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chart", action="append", default=[])
    a = ap.parse_args(argv)
    app = build_app(["fault-text"])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    settings = QtCore.QSettings(str(Path(a.out).with_suffix(".ini")), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(Path(a.db), settings=settings)
    win.resize(1400, 900)
    win.show()

    async def until(predicate, what: str, timeout: float = 60.0) -> None:
        for _ in range(int(timeout / 0.05)):
            if predicate():
                return
            await asyncio.sleep(0.05)
        raise TimeoutError(what)

    async def scenario() -> dict:
        await until(lambda: win.history.model.rows, "the history")
        win.open_run(a.run)
        await until(lambda: win.controller.session.run is not None and win.events.row_count() > 0, "the run")
        await until(lambda: all(k in win.dashboard.data.columns for k in a.chart), "the keys")
        plots = [win.dashboard.add_chart([k]) for k in a.chart]
        win.dashboard.refresh()
        win.controller.compare([a.run])
        await until(lambda: win.comparisons, "the comparison")
        win.views.setCurrentIndex(0)
        await asyncio.sleep(0.2)
        model = win.events.model
        tips = [_guessed(str(model.data(model.index(r, 3), QtCore.Qt.ItemDataRole.ToolTipRole) or ""))
                for r in range(model.rowCount())]
        badge = win.status_line.alerts
        shown, images = _label(badge)
        tip, tip_images = _guessed(badge.toolTip())
        tab = win.views.tabBar().tabText(1)
        return {"charts": [_chart(p) for p in plots], "status": _label(win.status_line.state)[0],
                "comparison_tab": re.sub(r"&(.)", r"\1", tab),
                "alerts": {"shown": shown, "tip": tip, "images": images or tip_images},
                "event_tips": [{"shown_has_text": "SPOOF" not in t or SPOOF in t.replace('\\"', '"'),
                                "images": img} for t, img in tips if "SPOOF" in t or img]}

    task = loop.create_task(scenario())
    with loop:
        result = loop.run_until_complete(task)
    Path(a.out).write_text(json.dumps(result), "utf-8")
    win.close()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["console"]:
        sys.exit(console_main(sys.argv[2:]))
    sys.exit(run_standalone(campaign, "text"))
