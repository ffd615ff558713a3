"""Where `rla ablate` writes: its table (`OUT.md`, `OUT.json`), its figures (`OUT.curves.png`,
`OUT.theory.png`) and its runs' logs (`OUT.logs/`), under the rules `rla export` follows
(export/files.py): regular files only, never through a symbolic link, mode 0600 (the logs
folder 0700), an existing file replaced only with `--force` — except the group's own table,
which a rerun that resumes the group refreshes — and never the database's own files or folders
(`files.refuse_protected`), even with `--force`. All of it is checked before anything is created:
before the database is opened, and again before any run starts."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import NamedTuple

from ..errors import InputError
from ..export.files import OutputError, check_outputs, refuse_existing, refuse_protected, write_atomic_many
from ..user_files import kind_of
from ..paths import make_private_dir

FIGURES = ("curves", "theory")


class AblationOutputs(NamedTuple):
    table: Path
    data: Path
    logs: Path
    figures: tuple[Path, ...]
    replace: bool       # existing files may be replaced: --force, or they are this group's own

    @property
    def files(self) -> list[Path]:
        return [self.table, self.data, *self.figures]


def check_outputs_for(out: Path, group: str, force: bool, db: Path) -> AblationOutputs:
    """The outputs for `--out`, checked and nothing created: InputError naming the path when one
    cannot or must not be written (one of the database `db`'s own files among them)."""
    prefix = out.with_suffix("")
    outputs = AblationOutputs(out, out.with_suffix(".json"), out.with_suffix(".logs"),
                              tuple(Path(f"{prefix}.{name}.png") for name in FIGURES),
                              force or written_by_group(out, out.with_suffix(".json"), group))
    try:
        refuse_protected([*outputs.files, outputs.logs], db)
        refuse_existing(outputs.files, outputs.replace)
    except OutputError as e:
        hint = "" if outputs.replace else f" (it is not group {group}'s own table)"
        raise InputError(f"--out: {e}{hint if 'already exists' in str(e) else ''}") from None
    return outputs


def plan_outputs(out: Path, group: str, force: bool, db: Path) -> AblationOutputs:
    """The outputs for `--out`, checked (check_outputs_for) and the logs folder made."""
    outputs = check_outputs_for(out, group, force, db)
    _logs_folder(outputs.logs)
    return outputs


def _logs_folder(logs: Path) -> None:
    try:
        st = os.lstat(logs)
    except FileNotFoundError:
        try:
            make_private_dir(logs)
        except OSError as e:
            raise InputError(f"--out: cannot create the logs folder {logs}: {e.strerror}") from None
        return
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(f"--out: {logs} (the runs' logs) is a {kind_of(st.st_mode)}, not a folder")


def written_by_group(table: Path, data: Path, group: str) -> bool:
    """Both files are there, regular, and the ones an ablation of `group` wrote: the data names
    the group and the table starts with the group's heading."""
    try:
        check_outputs([table, data], force=True)
        if not (table.is_file() and data.is_file()):
            return False
        meta = json.loads(data.read_text(encoding="utf-8"))
        with open(table, encoding="utf-8") as f:
            first = f.readline()
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and meta.get("group") == group and first.startswith(f"### {group}: ")


def save(outputs: AblationOutputs, table_text: str, data_text: str) -> None:
    """Both files at once, or neither (checked again: a link may have appeared during the runs)."""
    try:
        write_atomic_many({outputs.table: table_text, outputs.data: data_text}, outputs.replace)
    except OutputError as e:
        raise InputError(f"--out: {e}") from None


def log_file(logs: Path, run_id: str):
    """A run's log, appended to (a resumed run's log goes on), for this user only, never through
    a link."""
    from ..paths import open_private
    return open_private(logs / f"{run_id}.log", "a")
