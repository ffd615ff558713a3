"""Reads of a run's history: iterations, metrics (rows, series, numpy columns, last values), events, tasks.

Every row read back may have been edited by hand: sqlite3 lets anyone store text in a REAL
column, NULL where the engine always writes a value, a blob anywhere. A reader must show such a
row as damaged and go on, never end the read of the whole history with an exception. So each
column has a `Kind` — what a readable value is, tested in Python (`Kind.ok`) and in SQL
(`readable_sql`, for counting) from one definition — and `checked` reads an unreadable value as
its kind's stand-in and names the column under the row's `damaged` ({column: what was stored}).
Metric rows have no such note: a value that is not a finite number reads as NaN (a gap in a
plot, `?` in text), and a metric or iteration row whose iteration is not a count is left out (it
cannot be placed); `damage_counts` says how many rows of a run are unreadable.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..summary import settings
from ..vocabulary import DAMAGED, EventRow, Status, TaskRow, TaskStatus
from .base import StoreBase, _loads

_COLUMN_DTYPE = np.dtype([("it", np.float64), ("value", np.float64), ("t", np.float64)])
NAN = float("nan")
# The last second of year 9999: a later (or negative) time is no time this program wrote, and
# time.localtime/strftime fail on some systems beyond it.
MAX_TIME = 253402300799
MAX_PID = 2 ** 31 - 1


def _number(v: Any) -> bool:
    return type(v) in (int, float)


def _finite(v: Any) -> bool:
    return _number(v) and math.isfinite(v)


def _count(v: Any) -> bool:
    return type(v) is int and v >= 0


def _time(v: Any) -> bool:
    return _number(v) and 0 <= v <= MAX_TIME


@dataclass(frozen=True)
class Kind:
    """What one column holds. `test(v)` and `sql` (a condition on `{c}`) say the same thing:
    the value is readable as it is. An unreadable one reads as `stand_in` (text columns keep
    what can be salvaged as text); NULL is a value only where `null_ok` (read as `null_as`)."""
    test: Callable[[Any], bool]
    sql: str
    stand_in: Any = None
    null_ok: bool = False
    null_as: Any = None
    text: bool = False
    real: bool = False          # an integer is read as a float

    def ok(self, v: Any) -> bool:
        return self.null_ok if v is None else self.test(v)

    def salvage(self, v: Any) -> Any:
        if not self.text or v is None:
            return self.stand_in
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _in(values: Iterable[str]) -> str:
    return "{c} IN (" + ", ".join(f"'{v}'" for v in values) + ")"


_REAL_SQL = "(typeof({c}) IN ('integer', 'real') AND {c} BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308)"
_TIME_SQL = f"(typeof({{c}}) IN ('integer', 'real') AND {{c}} BETWEEN 0 AND {MAX_TIME})"
_COUNT_SQL = "(typeof({c}) = 'integer' AND {c} >= 0)"
TEXT = Kind(lambda v: isinstance(v, str), "typeof({c}) = 'text'", stand_in="", text=True)
OPTIONAL_TEXT = Kind(TEXT.test, TEXT.sql, null_ok=True, text=True)
FREE_TEXT = Kind(TEXT.test, TEXT.sql, stand_in="", null_ok=True, null_as="", text=True)   # notes, tags: NULL is none
TIME = Kind(_time, _TIME_SQL, real=True)
OPTIONAL_TIME = Kind(_time, _TIME_SQL, null_ok=True, real=True)
NUMBER = Kind(_finite, _REAL_SQL, real=True)
OPTIONAL_NUMBER = Kind(_finite, _REAL_SQL, null_ok=True, real=True)
COUNT = Kind(_count, _COUNT_SQL, stand_in=0)              # an iteration: 0 keeps sums and plots working
COUNT_OR_NONE = Kind(_count, _COUNT_SQL)                  # a slot, a version: None where it cannot be read
OPTIONAL_COUNT = Kind(_count, _COUNT_SQL, null_ok=True)
PID = Kind(lambda v: type(v) is int and 1 <= v <= MAX_PID,
           f"(typeof({{c}}) = 'integer' AND {{c}} BETWEEN 1 AND {MAX_PID})", null_ok=True)
FLAG = Kind(lambda v: type(v) is int and v in (0, 1), "(typeof({c}) = 'integer' AND {c} IN (0, 1))", stand_in=0)
_STATUSES = frozenset(s.value for s in Status)
_TASK_STATUSES = frozenset(s.value for s in TaskStatus)
STATUS = Kind(lambda v: v in _STATUSES, _in(sorted(_STATUSES)), stand_in=DAMAGED)
TASK_STATUS = Kind(lambda v: v in _TASK_STATUSES, _in(sorted(_TASK_STATUSES)), stand_in=DAMAGED)

RUN_COLUMNS: dict[str, Kind] = {
    "id": TEXT, "name": TEXT, "status": STATUS, "preset": OPTIONAL_TEXT, "config_json": TEXT,
    "group_id": OPTIONAL_TEXT, "created_at": TIME, "started_at": OPTIONAL_TIME, "ended_at": OPTIONAL_TIME,
    "heartbeat_at": OPTIONAL_TIME, "pid": PID, "pid_start": OPTIONAL_TEXT, "host": OPTIONAL_TEXT,
    "iteration": COUNT, "device": OPTIONAL_TEXT, "error": OPTIONAL_TEXT, "notes": FREE_TEXT, "tags": FREE_TEXT,
    "archived": FLAG}
EVENT_COLUMNS: dict[str, Kind] = {"iteration": COUNT, "t": TIME, "kind": TEXT}
TASK_COLUMN_KINDS: dict[str, Kind] = {
    "uid": COUNT, "slot": COUNT_OR_NONE, "version": COUNT_OR_NONE, "family": TEXT, "params_json": TEXT,
    "difficulty": NUMBER, "status": TASK_STATUS, "last_acc": OPTIONAL_NUMBER, "direction": OPTIONAL_TEXT,
    "prev_acc": OPTIONAL_NUMBER, "new_acc": OPTIONAL_NUMBER, "critic_json": OPTIONAL_TEXT,
    "created_iteration": COUNT, "decided_iteration": OPTIONAL_COUNT}
ITERATION_COLUMNS: dict[str, Kind] = {"iteration": COUNT, "t": TIME, "env_steps": COUNT_OR_NONE, "wall_s": NUMBER}
METRIC_COLUMNS: dict[str, Kind] = {"iteration": COUNT, "key": TEXT, "value": NUMBER, "t": TIME}
_TABLES = {"metrics": METRIC_COLUMNS, "iterations": ITERATION_COLUMNS, "events": EVENT_COLUMNS,
           "tasks": TASK_COLUMN_KINDS}


def readable_sql(kind: Kind, column: str) -> str:
    """The SQL form of `kind.ok` on `column`."""
    test = kind.sql.format(c=column)
    return f"({column} IS NULL OR {test})" if kind.null_ok else f"({column} IS NOT NULL AND {test})"


def stored(v: Any) -> str:
    """What a hand edit left in a column, in a few words (for the `damaged` note)."""
    if v is None:
        return "NULL"
    if isinstance(v, bytes):
        return f"a blob of {len(v)} bytes"
    text = repr(v)
    return text if len(text) <= 40 else text[:39] + "…"


def checked(row: dict, columns: dict[str, Kind]) -> dict:
    """`row` with every column of `columns` readable: an unreadable value is replaced by its
    kind's stand-in and named, with what was stored, in `row["damaged"]` (absent when whole)."""
    damaged: dict[str, str] = {}
    for column, kind in columns.items():
        if column not in row:
            continue
        v = row[column]
        if kind.ok(v):
            if v is None:
                row[column] = kind.null_as
            elif kind.real and type(v) is int:
                row[column] = float(v)
            continue
        damaged[column] = stored(v)
        row[column] = kind.salvage(v)
    if damaged:
        row["damaged"] = damaged
    return row


def _where_in(sql: str, args: list, column: str, values: Iterable | None) -> tuple[str, list]:
    """Append `AND column IN (…)` when values are given."""
    if values is None:
        return sql, args
    values = list(values)
    return sql + f" AND {column} IN ({', '.join('?' for _ in values)})", args + values


def _config_table(text: Any) -> dict | None:
    """A stored configuration as a table of settings; None where it cannot be read as one (a hand edit)."""
    try:
        config = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return None
    return config if isinstance(config, dict) else None


def _value(v: Any) -> float:
    """A metric's value: a finite number, else NaN (it cannot be read)."""
    return float(v) if _finite(v) else NAN


_ANY_ITERATION = "iteration BETWEEN 0 AND 9223372036854775807"    # a committed one (see last_iteration)


def _runs_sql(run_ids: Iterable[str] | None) -> tuple[str, list]:
    """The runs a per-run read covers, as a table `r(id)`: the given ids (one JSON parameter,
    so a thousand ids need no thousand placeholders), else every run of the database."""
    if run_ids is None:
        return "SELECT id FROM runs", []
    return "SELECT value AS id FROM json_each(?)", [json.dumps(list(run_ids))]


def _by_run(rows: Iterable[tuple], read: Callable[[Any], Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for run_id, key, value in rows:
        if isinstance(run_id, str) and isinstance(key, str):
            out.setdefault(run_id, {})[key] = read(value)
    return out


class ReadsMixin(StoreBase):
    def last_iteration(self, run_id: str) -> int:
        # a range, not a typeof() test: max() still reads it off the primary key's index, and
        # text, blobs and NULL (which sort outside it) are no committed iteration
        row = self.db.execute("SELECT max(iteration) FROM iterations WHERE run_id = ? AND iteration "
                              "BETWEEN 0 AND 9223372036854775807", [run_id]).fetchone()
        return int(row[0] or 0)

    def iterations(self, run_id: str) -> list[dict]:
        """The run's committed iterations; a row whose iteration cannot be read is left out."""
        rows = [checked(r, ITERATION_COLUMNS) for r in
                self.db.query("SELECT * FROM iterations WHERE run_id = ? ORDER BY iteration", [run_id])]
        return [r for r in rows if "iteration" not in r.get("damaged", {})]

    def metrics(self, run_id: str, after_iteration: int = 0, keys: Iterable[str] | None = None) -> list[dict]:
        sql = "SELECT iteration, key, value, t FROM metrics WHERE run_id = ? AND iteration > ?"
        args: list[Any] = [run_id, after_iteration]
        sql, args = _where_in(sql, args, "key", keys)
        return [{"iteration": it, "key": k, "value": _value(v), "t": float(t) if _time(t) else NAN}
                for it, k, v, t in self.db.execute(sql + " ORDER BY iteration, key", args)
                if _count(it) and isinstance(k, str)]

    def metric_keys(self, run_id: str) -> list[str]:
        """Distinct keys of a run by hopping along the (run_id, key, iteration) index: one seek
        per key, not a scan of a long history. Keys that are not text (blobs sort after text;
        numbers, before the first hop) are no metric names and end the hop."""
        keys: list[str] = []
        last = ""
        while True:
            row = self.db.execute("SELECT min(key) FROM metrics WHERE run_id = ? AND key > ?",
                                  [run_id, last]).fetchone()
            if not isinstance(row[0], str):
                return keys
            keys.append(last := row[0])

    def columns_since(self, run_id: str, after_iteration: int = 0) -> dict[str, tuple[np.ndarray, ...]]:
        """Metrics after an iteration, by key, as numpy columns (iterations, values, t) — what a
        plot appends to its buffers; a million-row history loads without a Python object per row.
        A damaged row (see the module) costs the slower, row-by-row read of its key only."""
        out: dict[str, tuple[np.ndarray, ...]] = {}
        with self._snapshot() as conn:   # an iteration committed between two keys must not split
            for key in self.metric_keys(run_id):
                sql, args = ("SELECT iteration, value, t FROM metrics WHERE run_id = ? AND key = ? "
                             "AND iteration > ? ORDER BY iteration", [run_id, key, after_iteration])
                try:
                    rows = np.fromiter(conn.execute(sql, args), dtype=_COLUMN_DTYPE)
                    whole = bool(np.isfinite(rows["value"]).all() and ((rows["t"] >= 0) & (rows["t"] <= MAX_TIME)).all()
                                 and ((rows["it"] >= 0) & (rows["it"] == np.floor(rows["it"]))).all())
                except (TypeError, ValueError, OverflowError):    # NULL, text, a blob
                    whole = False
                if not whole:
                    rows = np.array([(it, _value(v), float(t) if _time(t) else NAN)
                                     for it, v, t in conn.execute(sql, args) if _count(it)], dtype=_COLUMN_DTYPE)
                if len(rows):
                    out[key] = (rows["it"], rows["value"], rows["t"])
        return out

    def metrics_by_iteration(self, run_id: str) -> dict[int, dict[str, float]]:
        out: dict[int, dict[str, float]] = {}
        for row in self.metrics(run_id):
            out.setdefault(row["iteration"], {})[row["key"]] = row["value"]
        return out

    def series(self, run_id: str, key: str) -> tuple[list[int], list[float]]:
        rows = [(it, _value(v)) for it, v in self.db.execute(
            "SELECT iteration, value FROM metrics WHERE run_id = ? AND key = ? ORDER BY iteration", [run_id, key])
            if _count(it)]
        return [r[0] for r in rows], [r[1] for r in rows]

    def latest_metrics(self, run_id: str) -> dict[str, float]:
        """The last stored value of every key (keys like eval/* are not stored every iteration);
        NaN where that value cannot be read."""
        rows = self.db.execute(
            "SELECT key, value FROM metrics m WHERE run_id = ? AND iteration = "
            "(SELECT max(iteration) FROM metrics WHERE run_id = m.run_id AND key = m.key "
            f"AND {_ANY_ITERATION})", [run_id]).fetchall()
        return {k: _value(v) for k, v in rows if isinstance(k, str)}

    def last_values(self, run_id: str, keys: Iterable[str]) -> dict[str, float]:
        """The last value of each key, one index seek each (cheap even for a huge run)."""
        return self.final_values(keys, [run_id]).get(run_id, {})

    # -- chosen columns of the history: every run at once, one query per read ------------------
    def metric_names(self) -> list[str]:
        """Every metric key stored in the database, sorted: `metric_keys`' hop along the index,
        for all runs in one recursive query (a scan of the metrics table would read every row)."""
        rows = self.db.execute(
            "WITH RECURSIVE hop(run_id, key) AS ("
            " SELECT id, (SELECT min(key) FROM metrics WHERE run_id = runs.id AND key > '') FROM runs"
            " UNION ALL SELECT run_id,"
            " (SELECT min(m.key) FROM metrics m WHERE m.run_id = hop.run_id AND m.key > hop.key)"
            " FROM hop WHERE typeof(key) = 'text')"
            " SELECT DISTINCT key FROM hop WHERE typeof(key) = 'text' ORDER BY key").fetchall()
        return [k for (k,) in rows]

    def final_values(self, keys: Iterable[str], run_ids: Iterable[str] | None = None) -> dict[str, dict[str, float]]:
        """run id → key → the value at the key's last committed iteration (`summary.final_value`
        of its series; NaN where that value cannot be read); a key the run never logged is absent.
        One index seek per run and key."""
        runs, args = _runs_sql(run_ids)
        # CROSS JOIN keeps this order: per run and key, the last iteration off the index, then the
        # row by its primary key (left to the planner, it scanned each run's rows for each key)
        rows = self.db.execute(
            f"SELECT r.id, k.value, m.value FROM ({runs}) r CROSS JOIN json_each(?) k "
            "CROSS JOIN metrics m ON m.run_id = r.id AND m.key = k.value AND m.iteration = "
            f"(SELECT max(iteration) FROM metrics WHERE run_id = r.id AND key = k.value AND {_ANY_ITERATION})",
            [*args, json.dumps(list(keys))])
        return _by_run(rows, _value)

    def best_values(self, keys: Iterable[str], run_ids: Iterable[str] | None = None) -> dict[str, dict[str, float]]:
        """run id → key → the highest finite value (`summary.best_value`); absent where none is finite."""
        runs, args = _runs_sql(run_ids)
        readable = NUMBER.sql.format(c="value")
        rows = self.db.execute(
            f"SELECT r.id, k.value, (SELECT max(value) FROM metrics WHERE run_id = r.id AND key = k.value "
            f"AND {_ANY_ITERATION} AND {readable}) AS best FROM ({runs}) r JOIN json_each(?) k",
            [*args, json.dumps(list(keys))])
        return _by_run(((r, k, v) for r, k, v in rows if v is not None), float)

    def flat_configs(self, run_ids: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """run id → its settings by dotted key (`summary.settings`); a configuration
        that cannot be read as a table of settings (a hand edit) reads as none."""
        runs, args = _runs_sql(run_ids)
        out: dict[str, dict[str, Any]] = {}
        for run_id, text in self.db.execute(f"SELECT id, config_json FROM runs WHERE id IN ({runs})", args):
            config = _config_table(text)
            if isinstance(run_id, str) and config is not None:
                out[run_id] = settings(config)
        return out

    def config_fields(self) -> list[str]:
        """Every dotted configuration field of the database's runs, sorted."""
        fields: set[str] = set()
        for (text,) in self.db.execute("SELECT DISTINCT config_json FROM runs"):
            config = _config_table(text)
            if config is not None:
                fields.update(settings(config))
        return sorted(fields)

    def events(self, run_id: str, after_id: int = 0, kinds: Iterable[str] | None = None) -> list[EventRow]:
        sql = "SELECT * FROM events WHERE run_id = ? AND id > ?"
        args: list[Any] = [run_id, after_id]
        sql, args = _where_in(sql, args, "kind", kinds)
        return self._event_rows(sql + " ORDER BY id", args)

    def events_at(self, run_id: str, iteration: int, kinds: Iterable[str] | None = None) -> list[EventRow]:
        """The run's events of one iteration (only these kinds), in order: what a reader looking
        back at one iteration needs, without reading the run's other payloads."""
        sql = "SELECT * FROM events WHERE run_id = ? AND iteration = ?"
        sql, args = _where_in(sql, [run_id, iteration], "kind", kinds)
        return self._event_rows(sql + " ORDER BY id", args)

    def _event_rows(self, sql: str, args: list[Any]) -> list[EventRow]:
        """Event rows with their payloads read (a damaged one shown as damaged)."""
        rows = list(self.db.query(sql, args))
        for r in rows:
            text = r.pop("payload_json")
            if isinstance(text, bytes):
                text = text.decode("utf-8", "replace")
            r["payload"] = _loads(text if text is None or isinstance(text, str) else str(text), "event payload")
            checked(r, EVENT_COLUMNS)
        return cast(list[EventRow], rows)

    def tasks(self, run_id: str, statuses: Iterable[str] | None = None) -> list[TaskRow]:
        sql, args = "SELECT * FROM tasks WHERE run_id = ?", [run_id]
        sql, args = _where_in(sql, args, "status", statuses)
        return cast(list[TaskRow], [checked(r, TASK_COLUMN_KINDS)
                                    for r in self.db.query(sql + " ORDER BY slot, version, uid", args)])

    def damage_counts(self, run_id: str) -> dict[str, int]:
        """How many rows of each table of the run cannot be read whole (tables with none left
        out): what `rla show` reports beside the rows it shows as damaged."""
        out = {}
        for table, columns in _TABLES.items():
            whole = " AND ".join(readable_sql(kind, column) for column, kind in columns.items())
            n = self.db.execute(f"SELECT count(*) FROM {table} WHERE run_id = ? AND NOT ({whole})",
                                [run_id]).fetchone()[0]
            if n:
                out[table] = n
        return out
