"""The code of a git revision beside this tree, for side-by-side benchmarks (throughput.py
--against, llm_iteration.py): a detached worktree in a temporary folder, removed afterwards."""
from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def tree_at(rev: str) -> Iterator[Path]:
    """A worktree of `rev`, runnable with PYTHONPATH set to it; a scratch folder beside it is its
    parent's (`path.parent`), gone with it."""
    with tempfile.TemporaryDirectory(prefix="rla-against-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(tree), rev],
                       check=True, capture_output=True)
        try:
            # the package's presets live in resources/, mapped by the editable install only for this tree
            (tree / "rla_engine" / "resources").symlink_to(tree / "resources")
            yield tree
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)
