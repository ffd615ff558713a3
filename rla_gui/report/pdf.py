"""The PDF report: the HTML report's content laid out and paginated by Qt.

html.compose(qt=True) writes the same sections in the subset of HTML/CSS that QTextDocument
reads; the charts become document resources (named `chart-N.png`, so the markup carries no data
URIs to parse) and the document is laid out on the pages of a QPdfWriter (A4, 2 cm margins,
page numbers at the foot, the big sections each on a new page), a heading that would end a page
moved to the next, then printed page by page.
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
    """Paginate `doc` into a PDF at `path` (A4, 2 cm margins, page numbers at the foot), no
    heading or chart parted from what follows it."""
    writer = QtGui.QPdfWriter(str(path))
    writer.setResolution(RESOLUTION)
    writer.setPageSize(QtGui.QPageSize(QtGui.QPageSize.PageSizeId.A4))
    # zero writer margins: the document's root frame has the 2 cm on every side
    writer.setPageMargins(QtCore.QMarginsF(0, 0, 0, 0), QtGui.QPageLayout.Unit.Millimeter)
    writer.setTitle(title)
    writer.setCreator("RLAnything")
    painter = QtGui.QPainter(writer)
    try:
        paginate(doc, writer)
        keep_with_next(doc)
        for page in range(pages(doc)):
            if page:
                writer.newPage()
            print_page(doc, painter, page)
    finally:
        painter.end()
    if not Path(path).exists() or Path(path).stat().st_size == 0:
        raise RuntimeError(f"Qt wrote no PDF to {path}")


# -- pages ---------------------------------------------------------------------------------------
# The document is laid out on the PDF's own pages, as QTextDocument.print_ lays out its copy (the
# printer as the paint device, 2 cm margins), so that where each page ends is known before it is
# printed: Qt's rich text has no "keep with next", and a heading at a page's foot was printed
# there, its table or chart on the next page.
MARGIN_INCHES = 2 / 2.54
PAGE_NUMBER_GAP = 5 / 72      # inches between the bottom margin's edge and the page number's ascent


def _source_dpi() -> tuple[float, float]:
    """The resolution the markup's pixel sizes mean (Qt's default: the primary screen's)."""
    screen = QtGui.QGuiApplication.primaryScreen()
    return (screen.logicalDotsPerInchX(), screen.logicalDotsPerInchY()) if screen else (96.0, 96.0)


def paginate(doc: QtGui.QTextDocument, device: QtGui.QPagedPaintDevice) -> None:
    """Lay `doc` out on `device`'s pages: text measured for the device, margins of 2 cm."""
    doc.documentLayout().setPaintDevice(device)
    dpi_x, dpi_y = _source_dpi()
    fmt = doc.rootFrame().frameFormat()
    fmt.setLeftMargin(int(MARGIN_INCHES * dpi_x))     # in the markup's pixels, as print_ sets them
    fmt.setRightMargin(int(MARGIN_INCHES * dpi_x))
    fmt.setTopMargin(int(MARGIN_INCHES * dpi_y))
    fmt.setBottomMargin(int(MARGIN_INCHES * dpi_y))
    doc.rootFrame().setFrameFormat(fmt)
    doc.setPageSize(QtCore.QSizeF(device.width(), device.height()))


def pages(doc: QtGui.QTextDocument) -> int:
    """The pages up to the one the last text is on: an empty block that closes the document
    (a section's end) would start a page of its own, blank but for its number."""
    doc.pageCount()        # lays the whole document out
    block = doc.lastBlock()
    while block.isValid() and not _has_content(block):
        block = block.previous()
    if not block.isValid():
        return doc.pageCount()
    return min(doc.pageCount(), _page(doc, _line_y(doc, block, block.layout().lineCount() - 1)) + 1)


def _has_content(block: QtGui.QTextBlock) -> bool:
    return bool(block.text().strip()) and block.layout().lineCount() > 0


def _line_y(doc: QtGui.QTextDocument, block: QtGui.QTextBlock, line: int, bottom: bool = False) -> float:
    """Where a line of `block` is in the document (a line Qt moved to the next page is there)."""
    text_line = block.layout().lineAt(line)
    # the rectangle's top is the block's position (its frames' offsets added), the lines' origin
    top = doc.documentLayout().blockBoundingRect(block).top()
    return top + text_line.y() + (text_line.height() if bottom else 0.0)


def _page(doc: QtGui.QTextDocument, y: float) -> int:
    return int(y // doc.pageSize().height())


def _in_table(block: QtGui.QTextBlock) -> bool:
    return QtGui.QTextCursor(block).currentTable() is not None


def _holds_image(block: QtGui.QTextBlock) -> bool:
    it = block.begin()
    while not it.atEnd():
        if it.fragment().charFormat().isImageFormat():
            return True
        it += 1
    return False


def _kept_with_next(block: QtGui.QTextBlock) -> bool:
    """A heading, and a chart (its legend and caption are the block after it). Not inside a
    table: a page break inside a table cell is not honoured."""
    return (block.blockFormat().headingLevel() > 0 or _holds_image(block)) and not _in_table(block)


def keep_with_next(doc: QtGui.QTextDocument, rounds: int = 50) -> int:
    """Where a heading or a chart would end a page, parted from what follows it, start a new page
    at it (at the first of the headings right above it: a section's and its first chart's).
    Returns how many new pages were started."""
    moved = 0
    for _ in range(rounds):
        parted = _parted(doc)
        if parted is None:
            break
        fmt = QtGui.QTextBlockFormat()
        fmt.setPageBreakPolicy(QtGui.QTextFormat.PageBreakFlag.PageBreak_AlwaysBefore)
        QtGui.QTextCursor(parted).mergeBlockFormat(fmt)
        moved += 1
    return moved


def _parted(doc: QtGui.QTextDocument) -> QtGui.QTextBlock | None:
    """The first block of the first chain of blocks kept with the next that the pages part
    (unless it already starts its page: then the chain is longer than the room on any page)."""
    doc.pageCount()        # lays the whole document out: a block not laid out yet has no lines
    chain: QtGui.QTextBlock | None = None
    block = doc.firstBlock()
    while block.isValid():
        if _has_content(block):
            if chain is not None:
                first = _page(doc, _line_y(doc, chain, 0))
                if _page(doc, _line_y(doc, block, 0)) > first and _has_earlier_content(doc, chain, first):
                    return chain
            chain = (chain or block) if _kept_with_next(block) else None
        block = block.next()
    return None


def _has_earlier_content(doc: QtGui.QTextDocument, block: QtGui.QTextBlock, page: int) -> bool:
    """Whether something comes before `block` on its page (a heading at a page's top stays)."""
    earlier = block.previous()
    while earlier.isValid() and not _has_content(earlier):
        earlier = earlier.previous()
    if not earlier.isValid():
        return False
    return _page(doc, _line_y(doc, earlier, earlier.layout().lineCount() - 1, bottom=True)) == page


def print_page(doc: QtGui.QTextDocument, painter: QtGui.QPainter, page: int) -> None:
    """Page `page` (from 0) of the paginated `doc`, its number at the foot as print_ draws it."""
    size = doc.pageSize()
    view = QtCore.QRectF(0, page * size.height(), size.width(), size.height())
    painter.save()
    painter.translate(0, -view.top())
    painter.setClipRect(view)
    context = QtGui.QAbstractTextDocumentLayout.PaintContext()
    context.clip = view
    context.palette.setColor(QtGui.QPalette.ColorRole.Text, QtGui.QColor("black"))   # not the system's
    doc.documentLayout().draw(painter, context)
    painter.setClipping(False)
    device = painter.device()
    dpi_x, dpi_y = _source_dpi()
    font = QtGui.QFont(doc.defaultFont())
    painter.setFont(font)
    number = str(page + 1)
    x = size.width() - int(MARGIN_INCHES * dpi_x) * device.logicalDpiX() / dpi_x
    y = (size.height() - int(MARGIN_INCHES * dpi_y) * device.logicalDpiY() / dpi_y
         + QtGui.QFontMetrics(font, device).ascent() + PAGE_NUMBER_GAP * device.logicalDpiY())
    painter.drawText(round(x - painter.fontMetrics().horizontalAdvance(number)), round(y + view.top()), number)
    painter.restore()
