"""Compare groups of runs (History grouped by a column, groups selected, Compare): the comparison
view (panels.comparison) on groups, each drawn as the mean of its runs with a ± one standard
deviation band and summarised as mean ± sample std. Kept as a module of its own for its name."""
from __future__ import annotations

from ..model.comparison import colour_of as group_colour
from .comparison import ComparePlot as GroupPlot
from .comparison import GroupComparisonPanel

__all__ = ["GroupComparisonPanel", "GroupPlot", "group_colour"]
