"""The text of a PDF file as written to disk, read by a reader that is not its writer: QtPdf's
QPdfDocument is PDFium (Chrome's PDF engine), the report is written by Qt's own QPdfWriter. Each
page's text in reading order, a table's row on one line."""
from __future__ import annotations

from pathlib import Path


def pdf_text(path: Path) -> tuple[int, str]:
    """(pages, text) of the PDF at `path`; fails the test where PDFium cannot read it."""
    from PySide6.QtPdf import QPdfDocument
    doc = QPdfDocument(None)
    doc.load(str(path))
    assert doc.status() == QPdfDocument.Status.Ready, (path, doc.status(), doc.error())
    return doc.pageCount(), "\n".join(doc.getAllText(i).text() for i in range(doc.pageCount()))
