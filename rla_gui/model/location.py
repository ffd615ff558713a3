"""Where the console's database is: a local file (a Path) or a database on another machine
reached over SSH (an SshAddress, `ssh://[user@]host[:port]/path`), and what the console says
and remembers of it: its short label, the folder a file chooser starts in, the recent list.

Qt-free: `settings` is anything with QSettings' `value` and `setValue` (database_settings.py).
"""
from __future__ import annotations

import json
from pathlib import Path

from rla_engine.client import EngineClient
from rla_engine.remote import AddressError, RemoteClient, SshAddress, parse_location

from .database_settings import SettingsStore, key_text

Location = Path | SshAddress
Client = EngineClient | RemoteClient

RECENT_KEY = "recent/databases"
RECENT_KEPT = 8


def as_location(location: Location | str) -> Location:
    """A location as given (a str: a path, or an ssh:// address; AddressError if a wrong one)."""
    return location if isinstance(location, SshAddress | Path) else parse_location(location)


def local_path(location: Location) -> Path | None:
    """The file of a local database; None for a remote one (nothing of it is on this disk)."""
    return None if isinstance(location, SshAddress) else location


def label(location: Location) -> str:
    """Short, for a title or a status line: the path, or host:/path."""
    return location.label if isinstance(location, SshAddress) else str(location)


def start_folder(location: Location) -> Path:
    """Where a file chooser opens: the local database's folder; the home folder for a remote one."""
    return location.parent if isinstance(location, Path) else Path.home()


def recent(settings: SettingsStore) -> list[Location]:
    """The databases opened last, most recent first; an entry that no longer parses is skipped."""
    try:
        texts = json.loads(str(settings.value(RECENT_KEY, "[]")))
    except ValueError:
        return []
    found: list[Location] = []
    for text in texts if isinstance(texts, list) else []:
        if not isinstance(text, str) or not text:
            continue
        try:
            found.append(parse_location(text))
        except AddressError:
            continue
    return found[:RECENT_KEPT]


def _entry(location: Location) -> str:
    """What the recent list stores: enough to open it again (a remote one's `?rla=` command too)."""
    return str(location) if isinstance(location, SshAddress) else key_text(location)


def remember(settings: SettingsStore, location: Location) -> None:
    """`location` first in the recent list (once per database: an entry of the same database with
    another `rla` command is replaced), the list cut to RECENT_KEPT."""
    settings.setValue(RECENT_KEY, json.dumps([_entry(location), *_others(settings, location)][:RECENT_KEPT]))


def forget(settings: SettingsStore, location: Location) -> None:
    settings.setValue(RECENT_KEY, json.dumps(_others(settings, location)))


def _others(settings: SettingsStore, location: Location) -> list[str]:
    text = key_text(location)
    return [_entry(r) for r in recent(settings) if key_text(r) != text]
