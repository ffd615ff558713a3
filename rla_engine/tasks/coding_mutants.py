"""Wrong programs: the reference with one small fault, each shown to fail a ground-truth test.

A mutant changes one site of the reference's syntax tree: an operator (+ for −, < for ≤, == for
!=, += for -=), an integer constant by ±1 (the off-by-one), min for max, a call's first two
arguments swapped, a flipped True/False (`reverse=`),
a dropped operand of `and`/`or` or a branch of `x if c else y` (a forgotten edge case), an `if`
whose body never runs. A mutant counts only if it fails at least one of the task's ground-truth
tests under the sandbox's own comparison (`outputs_match`); that is checked here, in-process,
with a budget of executed lines: a test on which a mutant loops (or is merely slow) proves
nothing, because whether it would pass in the sandbox in time cannot be told cheaply; another
test must show the fault. Running mutants in-process is safe
for the same reason as the references: they are our code, transformed by our code.

Tests and scripted runs use them as the "wrong programs"; the reference is the correct one.
"""
from __future__ import annotations

import ast
import copy
import sys
from collections.abc import Callable
from functools import partial

import numpy as np

from ..sandbox import outputs_match
from .coding_templates import run_reference

_BIN: dict[type, tuple[type, ...]] = {ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.Add,),
                                      ast.FloorDiv: (ast.Mult,), ast.Mod: (ast.FloorDiv,)}
_CMP: dict[type, tuple[type, ...]] = {ast.Lt: (ast.LtE,), ast.LtE: (ast.Lt,), ast.Gt: (ast.GtE,),
                                      ast.GtE: (ast.Gt,), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,)}
_NAMES = {"min": "max", "max": "min"}
Make = Callable[[ast.AST], ast.AST]


def _with(node: ast.AST, **fields) -> ast.AST:
    new = copy.deepcopy(node)
    for name, value in fields.items():
        setattr(new, name, value)
    return new


def _part(part: ast.AST, node: ast.AST) -> ast.AST:
    """A branch of `x if c else y` in place of the whole: the other case forgotten."""
    return copy.deepcopy(part)


def _drop(node: ast.AST, j: int) -> ast.AST:
    assert isinstance(node, ast.BoolOp)
    rest = [v for i, v in enumerate(node.values) if i != j]
    return rest[0] if len(rest) == 1 else ast.BoolOp(op=node.op, values=rest)


def _candidates(node: ast.AST) -> list[Make]:
    """The mutations of one node, each a function from the node to its replacement."""
    out: list[Make] = []
    if isinstance(node, (ast.BinOp, ast.AugAssign)):
        out += [partial(_with, op=op()) for op in _BIN.get(type(node.op), ())]
    elif isinstance(node, ast.Call) and len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args):
        out.append(partial(_with, args=[node.args[1], node.args[0], *node.args[2:]]))     # arguments swapped
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        out += [partial(_with, ops=[op()]) for op in _CMP.get(type(node.ops[0]), ())]
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        out += [partial(_with, value=node.value + d) for d in (1, -1)]
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        out.append(partial(_with, value=not node.value))
    elif isinstance(node, ast.Name) and node.id in _NAMES and isinstance(node.ctx, ast.Load):
        out.append(partial(_with, id=_NAMES[node.id]))
    elif isinstance(node, ast.IfExp):
        out += [partial(_part, node.body), partial(_part, node.orelse)]
    elif isinstance(node, ast.BoolOp):
        out += [partial(_drop, j=j) for j in range(len(node.values))]
    elif isinstance(node, ast.If):
        out.append(partial(_with, test=ast.Constant(value=False)))
    return out


class _Apply(ast.NodeTransformer):
    """Counts the mutation sites (post-order, deterministic) and applies the `target`-th."""

    def __init__(self, target: int):
        self.target, self.seen = target, 0

    def visit(self, node: ast.AST) -> ast.AST:
        node = self.generic_visit(node)
        for make in _candidates(node):
            hit = self.seen == self.target
            self.seen += 1
            if hit:
                return ast.copy_location(make(node), node)
        return node


def sites(source: str) -> int:
    counter = _Apply(-1)
    counter.visit(ast.parse(source))
    return counter.seen


def mutant(source: str, i: int) -> str | None:
    """The reference with its i-th site mutated, or None if that does not give a valid program."""
    tree = _Apply(i).visit(ast.parse(source))
    try:
        text = ast.unparse(ast.fix_missing_locations(tree)) + "\n"
        compile(text, "<mutant>", "exec")
    except (SyntaxError, ValueError, TypeError):
        return None
    return text


class _Budget(BaseException):
    """Raised by the tracer; a BaseException so that no `except Exception` in a program stops it."""


def traced_output(source: str, stdin: str, budget: int) -> tuple[str | None, int]:
    """(stdout, lines run) of a trusted program, the output None if it raised or ran past `budget` lines."""
    count = [0]

    def local(frame, event, arg):
        if event == "line":
            count[0] += 1
            if count[0] > budget:
                raise _Budget
        return local

    previous = sys.gettrace()          # a coverage tool's tracer, restored after
    sys.settrace(lambda frame, event, arg: local)
    try:
        return run_reference(source, stdin), count[0]
    except _Budget:
        return None, -1
    except Exception:
        return None, count[0]
    finally:
        sys.settrace(previous)


def fails(program: str, reference: str, tests: list[tuple[str, str]]) -> tuple[bool, bool]:
    """(whether `program` fails at least one test, whether it ran past ten times the reference's
    work on some test: such a mutant would cost its time limit there in the sandbox)."""
    slow = False
    for stdin, expected in tests:
        _, ref_lines = traced_output(reference, stdin, 10**9)
        got, used = traced_output(program, stdin, 10 * ref_lines + 10_000)
        if used < 0:
            slow = True                 # too slow to tell on this test: another may still show the fault
        elif got is None or not outputs_match(got.encode(), expected.encode()):
            return True, slow
    return False, slow


def wrong_programs(reference: str, tests: list[tuple[str, str]], rng: np.random.Generator, n: int) -> list[str]:
    """Up to n distinct mutants of `reference`, each failing one of `tests`, in a random order of
    sites; mutants that loop on some test come last (each costs a time limit in the sandbox)."""
    quick: list[str] = []
    slow: list[str] = []
    canonical = ast.unparse(ast.parse(reference)) + "\n"
    for i in rng.permutation(sites(reference)):
        if len(quick) >= n:
            break
        text = mutant(reference, int(i))
        if text is None or text == canonical or text in quick or text in slow:
            continue
        failed, looped = fails(text, reference, tests)
        if failed:
            (slow if looped else quick).append(text)
    return (quick + slow)[:n]
