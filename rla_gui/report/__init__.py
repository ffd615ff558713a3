"""Run reports: `python -m rla_gui.report` (the renderer `rla export` runs for HTML and PDF,
registered as the engine's `rla.renderers` entry point) and the console's File ▸ Export.

    rendering.py    render(fmt, bundles, path) and export(...) with the two rendered formats
    environment.py  the environment a report names
    html.py         render_html(bundles) -> str           (HTML report; Qt, offscreen)
    pdf.py          write_pdf(bundles, path) -> None       (PDF report; Qt, offscreen)
    __main__.py     the command line

CSV and JSON, the bundles and the safe file writing live in the engine (rla_engine.export);
this package adds the two rendered formats to them. Importing it is cheap and Qt-free.
"""
from __future__ import annotations

from .rendering import export, render

__all__ = ["export", "render"]
