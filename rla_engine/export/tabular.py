"""CSV and JSON exports of run bundles (Qt-free, torch-free).

CSV, long format — `--out X.csv` writes two files:
  X.csv          run_id,iteration,key,value,t          one row per stored metric
  X.events.csv   run_id,id,iteration,t,kind,payload_json   one row per event
(an --out without the .csv suffix gets `.events.csv` appended for the second file). Several runs
share the same two files, one after the other. Numbers are written with Python's shortest
round-tripping repr, so `float(value)` read back equals the stored value exactly; an empty
cell is a NULL; payload_json is the stored JSON text.

JSON: one run → its bundle (format "rlanything-run/1"); several → {"format":
"rlanything-runs/1", "runs": [bundle, …]}. UTF-8, floats exact; `rla import` reads both forms.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from ..store import MULTI_FORMAT

METRIC_HEADER = ("run_id", "iteration", "key", "value", "t")
EVENT_HEADER = ("run_id", "id", "iteration", "t", "kind", "payload_json")


def csv_paths(out: Path) -> tuple[Path, Path]:
    """(metrics file, events file) for `--out out`."""
    out = Path(out)
    if out.suffix.lower() == ".csv":
        return out, out.with_name(out.stem + ".events.csv")
    return out, out.with_name(out.name + ".events.csv")


def _csv(header, rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def metrics_csv(bundles: list[dict]) -> str:
    # csv writes a float with str(), which is repr() — the shortest text that reads back as the
    # same double.
    return _csv(METRIC_HEADER, ((b["run"]["id"], m["iteration"], m["key"], m["value"], m["t"])
                                for b in bundles for m in b["metrics"]))


def events_csv(bundles: list[dict]) -> str:
    # json.dumps with the store's own settings gives back the stored payload_json text
    return _csv(EVENT_HEADER, ((b["run"]["id"], e["id"], e["iteration"], e["t"], e["kind"], json.dumps(e["payload"]))
                               for b in bundles for e in b["events"]))


def csv_files(bundles: list[dict], out: Path) -> dict[Path, str]:
    metrics_path, events_path = csv_paths(out)
    return {metrics_path: metrics_csv(bundles), events_path: events_csv(bundles)}


def to_json(bundles: list[dict]) -> str:
    doc = bundles[0] if len(bundles) == 1 else {"format": MULTI_FORMAT, "runs": bundles}
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"
