"""The wheel's package list is written out in pyproject.toml (resources/ ships as
rla_engine.resources, which discovery cannot express): every package on disk must be in it, or a
regular install would silently lack it while the editable install used by the tests has it."""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_on_disk_is_listed_for_the_wheel():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = set(tool["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for top in ("rla_engine", "rla_gui")
               for p in (ROOT / top).rglob("__init__.py")}
    on_disk |= {"rla_engine.resources." + d.name for d in (ROOT / "resources").iterdir() if d.is_dir()
                and d.name != "__pycache__"}
    assert tool["package-dir"] == {"rla_engine.resources": "resources"}
    assert on_disk | {"rla_engine.resources"} == listed


def test_presets_are_found_inside_the_engine():
    from rla_engine.config import preset_names, presets_dir
    assert "tiny" in preset_names()
    assert presets_dir().name == "presets" and (ROOT / "resources" / "presets" / "tiny.toml").is_file()
