"""The import graph of the engine and the console reads bottom-up: no circle of modules importing
each other, and no module importing the package it sits in. grimp (the graph import-linter is
built on) sees every import: at module level, inside functions, and under TYPE_CHECKING.
pyproject.toml's import-linter contracts keep each package's own modules acyclic and the loop's
layers in order; this test checks the whole graph at once, across packages."""
from __future__ import annotations

import grimp
import pytest

PACKAGES = ("rla_engine", "rla_gui")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The circles of imports: for each import a -> b where b leads back to a, the modules of
    that way round (sorted, each circle once)."""
    found: set[tuple[str, ...]] = set()
    for a in graph.modules:
        if a.split(".")[0] not in PACKAGES:
            continue
        for b in graph.find_modules_directly_imported_by(a):
            back = graph.find_shortest_chain(importer=b, imported=a)
            if back:
                found.add(tuple(sorted({a, *back})))
    return sorted(list(c) for c in found)


def test_circles_are_found():
    """The search itself, on a graph with one circle of three and a module outside it."""
    g = grimp.ImportGraph()
    for a, b in (("rla_engine.a", "rla_engine.b"), ("rla_engine.b", "rla_engine.c"),
                 ("rla_engine.c", "rla_engine.a"), ("rla_engine.d", "rla_engine.a")):
        g.add_import(importer=a, imported=b)
    assert circles(g) == [["rla_engine.a", "rla_engine.b", "rla_engine.c"]]


def test_no_module_takes_part_in_an_import_circle(graph):
    found = circles(graph)
    assert not found, "import circles (each line a set of modules that import each other):\n" + \
        "\n".join(" ".join(c) for c in found)


def test_no_module_imports_the_package_it_sits_in(graph):
    """A module importing its own package's __init__ runs back up a layer: what both need
    belongs in a module of its own."""
    up = [(m, p) for m in graph.modules if m.split(".")[0] in PACKAGES
          for p in graph.find_modules_directly_imported_by(m) if m.startswith(p + ".")]
    assert not up, f"modules importing their own package: {sorted(up)}"
