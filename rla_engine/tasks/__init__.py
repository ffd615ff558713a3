"""Torch-free registry of task families.

A family registers a `FamilySpec` here (name, docs, the module that holds its environment).
Forms, the CLI and tests list families through `family_names()` without naming them; the engine
calls `load_family(name)` which imports the module lazily.

Families are plug-ins: besides the built-in ones below, every installed package that declares an
entry point in the group `rla.families` whose object is a `FamilySpec` is registered on first use
(docs/families.md). The spec's module must import without torch, since the console lists it.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from importlib.metadata import entry_points

ENTRY_POINT_GROUP = "rla.families"


@dataclass(frozen=True)
class FamilySpec:
    name: str
    summary: str
    module: str          # defines `FAMILY`, an instance of tasks.base.Family or tasks.text_base.TextFamily
    kind: str = "tensor"  # tensor: the embedded networks play it; text: language models do
    has_oracle: bool = True  # its episodes carry oracle step labels (judge.source = oracle needs them)
    runs_programs: bool = False  # its policy writes programs, graded by tests (judge.kind = tests needs it)
    requires: tuple[str, ...] = ()  # modules of optional packages it plays with (not needed to list it)
    install: str = ""            # how to install them, said when one is missing
    cheap_tasks: bool = True     # a task is drawn in microseconds (textworld's are compiled games: seconds)

    def load(self):
        return importlib.import_module(self.module).FAMILY

    def missing(self) -> str | None:
        """None if every module it requires is installed, else one line naming what to install."""
        for name in self.requires:
            try:
                found = importlib.util.find_spec(name) is not None
            except (ImportError, ValueError):     # a broken install counts as a missing one
                found = False
            if not found:
                return f"needs the Python package {name!r}, which is not installed: {self.install}"
        return None


_REGISTRY: dict[str, FamilySpec] = {}
_discovered = False
PLUGIN_PROBLEMS: list[str] = []      # plug-ins that could not be registered, and why


def register(spec: FamilySpec) -> FamilySpec:
    _REGISTRY[spec.name] = spec
    return spec


def _discover() -> None:
    """Register the installed plug-ins once; a broken one is skipped and said, never fatal."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            spec = ep.load()
        except Exception as e:      # any error of someone else's package: skip it, say why
            PLUGIN_PROBLEMS.append(f"{ep.name} ({ep.value}): {type(e).__name__}: {e}")
            continue
        if not isinstance(spec, FamilySpec) or spec.kind not in ("tensor", "text"):
            PLUGIN_PROBLEMS.append(f"{ep.name} ({ep.value}): not a FamilySpec of kind tensor or text")
            continue
        if spec.name in _REGISTRY:
            PLUGIN_PROBLEMS.append(f"{ep.name} ({ep.value}): the family name {spec.name!r} is taken")
            continue
        register(spec)
    for line in PLUGIN_PROBLEMS:
        print(f"rla: task family plug-in skipped: {line}", file=sys.stderr)


def family_names(kind: str | None = None) -> list[str]:
    """Every registered family (plug-ins included), or those of one kind (tensor | text)."""
    _discover()
    return sorted(n for n, s in _REGISTRY.items() if kind is None or s.kind == kind)


def family_spec(name: str) -> FamilySpec:
    _discover()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown task family {name!r}; families are {', '.join(family_names())}") from None


def family_kind(name: str) -> str:
    """tensor or text; an unknown name is left to the field's own check (tensor)."""
    _discover()
    spec = _REGISTRY.get(name)
    return spec.kind if spec else "tensor"


def load_family(name: str):
    return family_spec(name).load()


register(FamilySpec(
    "gridworld",
    "Navigate an N×N grid with walls to a goal; difficulty raises size, wall density and distance.",
    "rla_engine.tasks.gridworld"))
register(FamilySpec(
    "arithmetic",
    "Write the running value of a chain of k operations mod 10; difficulty raises k and the operators.",
    "rla_engine.tasks.arithmetic"))
register(FamilySpec(
    "keyrooms",
    "Rooms in a row, a locked door between each two and its key in the room before: key, door, …, goal; "
    "difficulty raises size, doors and walls.",
    "rla_engine.tasks.keyrooms"))
register(FamilySpec(
    "text_arithmetic",
    "A word problem of k operations, solved in writing: one `value = N` line per step, then the boxed answer "
    "(language models).",
    "rla_engine.tasks.text_arithmetic", kind="text"))
register(FamilySpec(
    "text_world",
    "A household text game: rooms, containers and objects, a goal such as putting a clean mug in the cabinet; "
    "the admissible commands are listed each turn (language models).",
    "rla_engine.tasks.text_world", kind="text"))
register(FamilySpec(
    "coding",
    "Stdin/stdout programming problems from twelve templates, answered with one Python program run in a sandbox "
    "on the ground-truth tests; difficulty raises input size, value range, composed outputs and edge cases "
    "(language models).",
    "rla_engine.tasks.coding", kind="text", runs_programs=True))
register(FamilySpec(
    "textworld",
    "Real text games from Microsoft TextWorld's generator (the engine under ALFWorld): reach a goal through rooms, "
    "doors, containers and objects; difficulty follows the quest length, then rooms and objects (language models; "
    "the textworld extra).",
    "rla_engine.tasks.textworld_family", kind="text", requires=("textworld",),
    install="pip install 'rlanything[textworld]'", cheap_tasks=False))
register(FamilySpec(
    "textworld_commands",
    "The textworld family's real games played by the embedded networks: each turn the policy picks one of the "
    "game's admissible commands from hashed text features (no language model; the textworld extra).",
    "rla_engine.tasks.textworld_commands", requires=("textworld",),
    install="pip install 'rlanything[textworld]'", cheap_tasks=False))
