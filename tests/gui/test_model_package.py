"""The console's model package loads without Qt: a script (or a test) can compute what the
console shows with no display and no PySide6 import (napari's pattern; pyproject's import-linter
contract says the same of the source, this checks what actually loads)."""
from __future__ import annotations

import pkgutil
import subprocess
import sys

import rla_gui.model


def test_every_model_module_imports_without_qt_or_pyqtgraph():
    modules = [f"rla_gui.model.{m.name}" for m in pkgutil.iter_modules(rla_gui.model.__path__)]
    assert len(modules) >= 5
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'qasync', 'torch')"
            " or m.startswith(('rla_gui.widgets', 'rla_gui.panels', 'rla_gui.session'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout
