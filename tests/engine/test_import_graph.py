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
    """Every strongly connected set of two or more modules (Tarjan's algorithm, iteratively)."""
    modules = sorted(m for m in graph.modules if m.split(".")[0] in PACKAGES)
    edges = {m: sorted(i for i in graph.find_modules_directly_imported_by(m) if i.split(".")[0] in PACKAGES)
             for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                part = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    part.append(m)
                    if m == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


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
