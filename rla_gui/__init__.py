"""The RLAnything desktop console (PySide6 + qasync + pyqtgraph). Never imports torch."""
