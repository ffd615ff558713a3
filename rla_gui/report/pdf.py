"""The PDF report: the HTML report's content laid out and paginated by Qt.

html.compose(qt=True) writes the same sections in the subset of HTML/CSS that QTextDocument
reads; the charts become document resources (named `chart-N.png`, so the markup carries no data
URIs to parse) and the document is printed to a QPdfWriter: A4, 2 cm margins (QTextDocument's
own when it paginates), page numbers at the foot, the big sections each on a new page.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from . import charts  # first: sets the offscreen platform where there is no display
from .html import compose

from PySide6 import QtCore, QtGui

RESOLUTION = 300     # dpi of the PDF's coordinate space: text is vector anyway; images keep their pixels


def build_document(bundles: list[dict], environment: dict | None = None,
                   added: Sequence[Sequence[str]] = ()) -> QtGui.QTextDocument:
    """The report as a QTextDocument with its charts as image resources (tests and previews)."""
    return document(lambda image: compose(bundles, environment, image=image, qt=True, added=added), _title(bundles))


def document(markup: Callable[[Callable[[charts.Chart], str]], str], title: str) -> QtGui.QTextDocument:
    """The markup that `markup(image)` writes (`image` names each chart) as a QTextDocument with
    the charts as image resources: any report of this package (a group comparison's too)."""
    charts.ensure_app()
    doc = QtGui.QTextDocument()
    images: list[tuple[str, charts.Chart]] = []

    def image(chart: charts.Chart) -> str:
        name = f"chart-{len(images) + 1}.png"
        images.append((name, chart))
        return name

    text = markup(image)
    for name, chart in images:   # resources first: setHtml resolves the <img> names as it parses
        img = QtGui.QImage.fromData(chart.png, "PNG")  # type: ignore[arg-type]  # stubs: format is bytes
        doc.addResource(QtGui.QTextDocument.ResourceType.ImageResource, QtCore.QUrl(name), img)
    doc.setDefaultFont(QtGui.QFont("DejaVu Sans", 9))
    doc.setHtml(text)
    doc.setMetaInformation(QtGui.QTextDocument.MetaInformation.DocumentTitle, title)
    return doc


def _title(bundles: list[dict]) -> str:
    if len(bundles) == 1:
        run = bundles[0]["run"]
        return f"RLAnything report — {run.get('name') or run.get('id')}"
    return f"RLAnything comparison — {len(bundles)} runs"


def write_pdf(bundles: list[dict], path: Path, environment: dict | None = None,
              added: Sequence[Sequence[str]] = ()) -> None:
    """Write the report for `bundles` (one run, or a comparison of several) as a PDF at `path`.
    Writes `path` directly; the caller renames atomically."""
    print_pdf(build_document(bundles, environment, added), path, _title(bundles))


def print_pdf(doc: QtGui.QTextDocument, path: Path, title: str) -> None:
    """Paginate `doc` into a PDF at `path` (A4, QTextDocument's 2 cm margins, page numbers)."""
    writer = QtGui.QPdfWriter(str(path))
    writer.setResolution(RESOLUTION)
    writer.setPageSize(QtGui.QPageSize(QtGui.QPageSize.PageSizeId.A4))
    # zero writer margins: QTextDocument.print_ adds its 2 cm on every side and the page number
    writer.setPageMargins(QtCore.QMarginsF(0, 0, 0, 0), QtGui.QPageLayout.Unit.Millimeter)
    writer.setTitle(title)
    writer.setCreator("RLAnything")
    doc.print_(writer)
    if not Path(path).exists() or Path(path).stat().st_size == 0:
        raise RuntimeError(f"Qt wrote no PDF to {path}")
