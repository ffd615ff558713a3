"""The folder where built or converted models are kept, and the one way anything is written there.

A model folder appears whole or not at all: it is built in a temporary sibling folder and renamed
into place, so a crash or a second process building the same model at the same moment never
leaves a half-written folder that a later load would trust.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import platformdirs

from rla_engine.paths import APP

# A build folder left by a killed process is removed once it is this old (a build takes seconds
# to a minute, so an hour-old one is no longer being written).
_STALE_S = 3600.0


def model_cache_dir() -> Path:
    """`$RLA_MODEL_CACHE`, else `<user cache dir>/rlanything/models`."""
    env = os.environ.get("RLA_MODEL_CACHE")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir(APP, appauthor=False)) / "models"


def build_once(key: str, build: Callable[[Path], None]) -> Path:
    """The folder `<cache>/<key>`, made by build(empty_folder) the first time it is asked for.

    The key must name the content exactly (a version string, a file's hash): a folder that exists
    is returned as it is, never checked or rebuilt.
    """
    root = model_cache_dir()
    final = root / key
    if final.is_dir():
        return final
    root.mkdir(parents=True, exist_ok=True)
    _remove_stale(root, key)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
    try:
        build(tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.is_dir():
                raise
            # another process finished the same build first; its folder is as good as ours
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _remove_stale(root: Path, key: str) -> None:
    now = time.time()
    for old in root.glob(f".{key}.*"):
        try:
            if now - old.stat().st_mtime > _STALE_S:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass
