"""`rla doctor`: what deleted runs left behind in a database and beside it, found and (with
`--fix`) removed, with a count of each.

An engine that went on after its run was deleted (by a version that did not delete under the
run's engine lock, or by hand) left rows that belong to no run and a checkpoint folder. Rows are
counted by table (store.orphaned_rows). A folder is this database's leftover only if its marker
(`database.txt`) names this database's id, no run of the database has its name, and no engine
holds its lock; a folder of another database (an imported copy's original beside it), one without
a marker (an older version's, or a start killed before its run row existed), a link or a
plain file is never touched.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .paths import LOCK, RunBusy, checkpoints_root, hold_lock, marked_by, unlock_run
from .store import Store


@dataclass
class Findings:
    rows: dict[str, int]                                         # table -> rows of no run
    folders: list[Path] = field(default_factory=list)            # leftover checkpoint folders
    busy: list[Path] = field(default_factory=list)               # leftovers an engine holds: left alone
    failed: list[tuple[Path, str]] = field(default_factory=list)  # could not be removed, and why

    def lines(self, fixed: bool) -> list[str]:
        verb = "removed" if fixed else "found"
        rows = ", ".join(f"{n} {table}" for table, n in self.rows.items() if n) or "none"
        out = [f"{verb} rows of deleted runs: {rows}",
               f"{verb} checkpoint folders of deleted runs: {len(self.folders)}", *(f"  {p}" for p in self.folders)]
        out += [f"left alone (an engine holds it): {p}" for p in self.busy]
        out += [f"could not remove {p}: {why}" for p, why in self.failed]
        if not fixed and (any(self.rows.values()) or self.folders):
            out.append("run `rla doctor --fix` to remove them")
        return out


def examine(store: Store, fix: bool = False) -> Findings:
    """What deleted runs left; with `fix`, removed (each folder under its engine lock, after
    checking again that no run has its name)."""
    found = Findings(store.orphaned_rows(remove=fix))
    for folder in _leftover_folders(store):
        if not fix and not (folder / LOCK).exists():      # a report writes nothing; no lock file, no engine in it
            found.folders.append(folder)
            continue
        try:
            fd = hold_lock(folder / LOCK, "an engine")
        except RunBusy:
            found.busy.append(folder)
            continue
        except OSError:      # a lock file that cannot be opened: not ours to judge
            continue
        try:
            if store.run_exists(folder.name):     # a run of that name was made meanwhile
                continue
            if fix:
                shutil.rmtree(folder)
            found.folders.append(folder)
        except OSError as e:       # an immutable file inside: said, the rest goes on
            found.failed.append((folder, e.strerror or str(e)))
        finally:
            unlock_run(fd)
    return found


def _leftover_folders(store: Store) -> list[Path]:
    root = checkpoints_root(store.path)
    if root.is_symlink() or not root.is_dir():
        return []
    ids = {r[0] for r in store.db.execute("SELECT id FROM runs")}
    database = store.database_id
    return [p for p in sorted(root.iterdir()) if p.name not in ids and not p.is_symlink() and p.is_dir()
            and marked_by(p, database)]
