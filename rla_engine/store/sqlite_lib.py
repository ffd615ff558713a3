"""sqlite_utils, imported without pandas: where pandas is installed, sqlite_utils imports it at its
own import (about 0.3 s in every `rla` command, engine and console) only to map pandas' Timestamp
to a column type, which the store never writes. Hidden while sqlite_utils loads; a later
`import pandas` (a user's script, an export's reader) works as ever."""
from __future__ import annotations

import sys

if "pandas" in sys.modules or "sqlite_utils" in sys.modules:
    import sqlite_utils
else:
    sys.modules["pandas"] = None  # type: ignore[assignment]    # None: "not installed" to an import
    try:
        import sqlite_utils
    finally:
        del sys.modules["pandas"]

__all__ = ["sqlite_utils"]
