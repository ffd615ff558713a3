"""Parquet export of run bundles: the CSV's long format (tabular.py) with typed columns.

`--out X.parquet` writes two files, named as the CSV's are (`parquet_paths`):
  X.parquet          run_id string, iteration int64, key string, value float64, t float64
  X.events.parquet   run_id string, id int64, iteration int64, t float64, kind string, payload_json string
The same rows as the CSV, in the same order (run by run; metrics by iteration and key, events
by id); t is the commit's wall time in seconds since the epoch, payload_json the stored JSON
text. Every column is nullable: a NULL in the database is a null here. A cell of another type
(a row edited by hand: text in `value`) is a null too, where the CSV would carry the text; a
typed column cannot hold it, and the row itself stays. Each file is one table that pandas
(`read_parquet`), polars and pyarrow read without options.

pyarrow is imported only when a Parquet export is asked for: the `rla` command, the console and
the CSV/JSON exports never load it.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .files import atomic_paths
from .tabular import EVENT_HEADER, METRIC_HEADER, event_rows, metric_rows, paired_paths

SUFFIX = ".parquet"
# pyarrow's type names (pyarrow.type_for_alias), column by column, for each header
METRIC_TYPES = ("string", "int64", "string", "float64", "float64")
EVENT_TYPES = ("string", "int64", "int64", "float64", "string", "string")
# snappy: pyarrow's default, named so that a new pyarrow cannot change the files; every Parquet
# reader has it
COMPRESSION = "snappy"


def parquet_paths(out: Path) -> tuple[Path, Path]:
    """(metrics file, events file) for `--out out`."""
    return paired_paths(out, SUFFIX)


def _fits(value: Any, type_name: str) -> bool:
    if type_name == "string":
        return isinstance(value, str)
    if isinstance(value, bool):
        return False
    if type_name == "int64":
        return isinstance(value, int)
    return isinstance(value, (int, float))


def _column(values: list, type_name: str):
    import pyarrow as pa  # type: ignore[import-untyped]

    arrow_type = pa.type_for_alias(type_name)
    try:
        return pa.array(values, type=arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError):    # a hand-edited cell: checked one by one only then
        return pa.array([v if _fits(v, type_name) else None for v in values], type=arrow_type)


def table(header: Sequence[str], types: Sequence[str], rows: Iterable[tuple]):
    """A pyarrow Table of `rows`, one typed column per name of `header`."""
    import pyarrow as pa

    columns: list[list] = [[] for _ in header]
    for row in rows:
        for column, value in zip(columns, row):
            column.append(value)
    schema = pa.schema([(name, pa.type_for_alias(t)) for name, t in zip(header, types)])
    return pa.Table.from_arrays([_column(c, t) for c, t in zip(columns, types)], schema=schema)


def write_parquet(bundles: list[dict], out: Path, force: bool) -> None:
    """Write the two files of `--out out` as a group, by files.py's rules (atomic, mode 0600,
    an existing file replaced only with `force`, never through a link)."""
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise RuntimeError("Parquet export needs pyarrow, and it is not installed") from None
    tables = (table(METRIC_HEADER, METRIC_TYPES, metric_rows(bundles)),
              table(EVENT_HEADER, EVENT_TYPES, event_rows(bundles)))
    with atomic_paths(list(parquet_paths(out)), force) as temps:
        for tab, tmp in zip(tables, temps):
            pq.write_table(tab, str(tmp), compression=COMPRESSION)
