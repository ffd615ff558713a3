"""What the console remembers per database, in one place: History's chosen columns and grouping,
and the dashboard's added charts.

Settings are keyed by the database's resolved path (a remote one's canonical ssh:// address),
hashed: two paths to one file share them, and a path's characters never reach a settings key.
Values are JSON text, read back defensively — the settings file is the person's to edit, so
anything it holds that is not what was written reads as the default. Qt-free: `settings` is
anything with QSettings' `value(key, default)` and `setValue(key, value)` (the console passes
its QSettings; tests may pass a dict-backed stand-in).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any, Protocol

from rla_engine.remote import SshAddress


class SettingsStore(Protocol):
    def value(self, key: str, default: Any = ..., /) -> Any: ...

    def setValue(self, key: str, value: Any, /) -> None: ...     # QSettings' name


def key_text(location: Path | SshAddress) -> str:
    """One text per database, whatever path led to it: a local file's resolved path, a remote
    one's canonical address without its `?rla=` command (how it is reached, not which database it
    is): what its settings are keyed by, and what tells two entries of the recent list apart."""
    if isinstance(location, SshAddress):
        return str(dataclasses.replace(location, rla="rla"))
    return str(Path(location).resolve())


def database_key(location: Path | SshAddress) -> str:
    """The settings group of one database: its key text, hashed."""
    return "history/databases/" + hashlib.sha256(key_text(location).encode()).hexdigest()[:16]


class DatabaseSettings:
    def __init__(self, settings: SettingsStore, path: Path | SshAddress):
        self.settings, self.key = settings, database_key(path)

    def _json(self, name: str, default: Any) -> Any:
        try:
            return json.loads(str(self.settings.value(f"{self.key}/{name}", json.dumps(default))))
        except ValueError:
            return default

    def _set(self, name: str, value: Any) -> None:
        self.settings.setValue(f"{self.key}/{name}", value)

    def columns(self) -> list[str]:
        """History's chosen column ids (the fixed columns are not listed)."""
        ids = self._json("columns", [])
        return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []

    def set_columns(self, ids: list[str]) -> None:
        self._set("columns", json.dumps(list(ids)))

    def group_by(self) -> str | None:
        """History's grouping column id; None for no grouping."""
        return str(self.settings.value(f"{self.key}/group_by", "") or "") or None

    def set_group_by(self, column_id: str | None) -> None:
        self._set("group_by", column_id or "")

    def charts(self) -> list[list[str]]:
        """The dashboard's added charts, each a list of metric keys."""
        charts = self._json("charts", [])
        ok = isinstance(charts, list) and all(isinstance(c, list) and c and all(isinstance(k, str) for k in c)
                                              for c in charts)
        return charts if ok else []

    def set_charts(self, charts: list[list[str]]) -> None:
        self._set("charts", json.dumps(charts))
