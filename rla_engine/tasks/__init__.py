"""Torch-free registry of task families.

A family registers a `FamilySpec` here (name, docs, the module that holds its torch
environment). Forms, the CLI and tests list families through `family_names()` without naming
them; the engine calls `load_family(name)` which imports the module lazily.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class FamilySpec:
    name: str
    summary: str
    module: str          # defines `FAMILY`, an instance of tasks.base.Family

    def load(self):
        return importlib.import_module(self.module).FAMILY


_REGISTRY: dict[str, FamilySpec] = {}


def register(spec: FamilySpec) -> FamilySpec:
    _REGISTRY[spec.name] = spec
    return spec


def family_names() -> list[str]:
    return sorted(_REGISTRY)


def family_spec(name: str) -> FamilySpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown task family {name!r}; families are {', '.join(family_names())}") from None


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
