"""The console's middle layer: what the views show, computed without Qt.

Every view (the dashboard, the comparisons, History, the reports) reads its figures from here,
so a number means the same wherever it appears: a run's metric history (`run_data`), what each
panel draws and in which colour (`panel_spec`), History's columns, filter and groups
(`run_columns`), downsampling for drawing (`lod`), a group's mean curve (`mean_curve`), a
comparison of runs or groups (`comparison`) and what a coding run's isolation and tests read as
(`coding`). The package never imports PySide6 or pyqtgraph
(an import-linter contract in pyproject.toml holds it to that), so it is tested, and usable from
a script, without a display.
"""
