"""CSV and JSON exports of run bundles (Qt-free, torch-free).

CSV, long format — `--out X.csv` writes two files:
  X.csv          run_id,iteration,key,value,t          one row per stored metric
  X.events.csv   run_id,id,iteration,t,kind,payload_json   one row per event
(an --out without the .csv suffix gets `.events.csv` appended for the second file). Several runs
share the same two files, one after the other. Numbers are written with Python's shortest
round-tripping repr, so `float(value)` read back equals the stored value exactly; an empty
cell is a NULL; payload_json is the stored JSON text. columnar.py writes the same rows as Parquet.

JSON: one run → its bundle (format "rlanything-run/1"); several → {"format":
"rlanything-runs/1", "runs": [bundle, …]}. UTF-8, floats exact; `rla import` reads both forms.
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

from ..store import MULTI_FORMAT

METRIC_HEADER = ("run_id", "iteration", "key", "value", "t")
EVENT_HEADER = ("run_id", "id", "iteration", "t", "kind", "payload_json")


def paired_paths(out: Path, suffix: str) -> tuple[Path, Path]:
    """(metrics file, events file) for `--out out` of a two-file format: `X.csv` gives `X.csv`
    and `X.events.csv`; a name without the format's suffix keeps it whole (`X` → `X.events.csv`)."""
    out = Path(out)
    if out.suffix.lower() == suffix:
        return out, out.with_name(out.stem + ".events" + suffix)
    return out, out.with_name(out.name + ".events" + suffix)


def csv_paths(out: Path) -> tuple[Path, Path]:
    """(metrics file, events file) for `--out out`."""
    return paired_paths(out, ".csv")


def _csv(header, rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def metric_rows(bundles: list[dict]) -> Iterator[tuple]:
    """The metrics file's rows (METRIC_HEADER), every run's one after the other: what the CSV and
    the Parquet exports both write."""
    return ((b["run"]["id"], m["iteration"], m["key"], m["value"], m["t"]) for b in bundles for m in b["metrics"])


def event_rows(bundles: list[dict]) -> Iterator[tuple]:
    """The events file's rows (EVENT_HEADER)."""
    # json.dumps with the store's own settings gives back the stored payload_json text
    return ((b["run"]["id"], e["id"], e["iteration"], e["t"], e["kind"], json.dumps(e["payload"]))
            for b in bundles for e in b["events"])


def metrics_csv(bundles: list[dict]) -> str:
    # csv writes a float with str(), which is repr() — the shortest text that reads back as the
    # same double.
    return _csv(METRIC_HEADER, metric_rows(bundles))


def events_csv(bundles: list[dict]) -> str:
    return _csv(EVENT_HEADER, event_rows(bundles))


def csv_files(bundles: list[dict], out: Path) -> dict[Path, str]:
    metrics_path, events_path = csv_paths(out)
    return {metrics_path: metrics_csv(bundles), events_path: events_csv(bundles)}


def to_json(bundles: list[dict]) -> str:
    doc = bundles[0] if len(bundles) == 1 else {"format": MULTI_FORMAT, "runs": bundles}
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"
