"""What `rla serve` answers: every call by name, with the type of each argument, checked before
anything runs. Nothing here takes a path or a shell word: run ids and keys are checked as the
local console checks them, configs arrive as TOML text and are validated, exports are written
beside the served database and sent back as bytes."""
from __future__ import annotations

import base64
import tomllib
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from ..client import EngineClient
from ..config import ConfigError, from_dict, preset_names
from ..export.dispatch import output_paths
from ..export.formats import FORMATS
from ..paths import UnsafeRunId, check_run_id, logs_dir, make_private_dir
from ..vocabulary import CommandKind
from .protocol import pack_columns

MAX_TEXT = 1 << 16          # a name, a note, a query, a config's TOML
MAX_ITEMS = 10_000          # keys, run ids, seeds, arms


class BadArgs(ValueError):
    """A request whose arguments are not what the call takes (the message names the argument)."""


Check = Callable[[str, Any], Any]
Spec = Mapping[str, tuple[Check, Any]]      # argument name -> (its check, its default or REQUIRED)


def text(name: str, v: Any) -> str:
    if not isinstance(v, str) or len(v) > MAX_TEXT or "\x00" in v:
        raise BadArgs(f"{name}: expected text of at most {MAX_TEXT} characters")
    return v


def run_id(name: str, v: Any) -> str:
    try:
        return check_run_id(v)
    except UnsafeRunId as e:
        raise BadArgs(f"{name}: {e}") from None


def integer(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not -(1 << 62) < v < 1 << 62:
        raise BadArgs(f"{name}: expected an integer")
    return v


def count(name: str, v: Any) -> int:
    if integer(name, v) < 0:
        raise BadArgs(f"{name}: expected an integer ≥ 0")
    return v


def of_type(kind: type, words: str) -> Check:
    def check(name: str, v: Any) -> Any:
        if not isinstance(v, kind):
            raise BadArgs(f"{name}: expected {words}")
        return v
    return check


flag = of_type(bool, "true or false")
payload = of_type(dict, "an object")


def optional(check: Check) -> Check:
    return lambda name, v: None if v is None else check(name, v)


def many(check: Check) -> Check:
    def each(name: str, v: Any) -> list:
        if not isinstance(v, list) or len(v) > MAX_ITEMS:
            raise BadArgs(f"{name}: expected a list of at most {MAX_ITEMS}")
        return [check(f"{name}[{i}]", x) for i, x in enumerate(v)]
    return each


def one_of(choices: tuple[str, ...]) -> Check:
    def check(name: str, v: Any) -> str:
        if v not in choices:
            raise BadArgs(f"{name}: expected one of {', '.join(choices)}")
        return v
    return check


def preset(name: str, v: Any) -> str:
    if v not in preset_names():
        raise BadArgs(f"{name}: {str(v)[:80]!r} is not a preset of the remote rla")
    return v


def config(name: str, v: Any) -> Any:
    """A run's whole configuration as TOML, validated as `rla run --config` would."""
    try:
        return from_dict(tomllib.loads(text(name, v)))
    except tomllib.TOMLDecodeError as e:
        raise BadArgs(f"{name}: not valid TOML ({e})") from None
    except ConfigError as e:
        raise BadArgs(f"{name}: {e}") from None


@dataclass(frozen=True)
class Call:
    run: Callable[..., Awaitable[Any]]       # (client, **checked args)
    args: Spec
    retry: bool = True                       # safe to send again after a dropped link (it changes nothing)
    held: bool = False                       # asked again and again (History, the pool): if unchanged, a tag crosses


REQUIRED = object()


def checked_args(spec: Spec, given: Any) -> dict[str, Any]:
    """The arguments of a call (its `args` spec), each checked; BadArgs names the first wrong one."""
    if not isinstance(given, dict):
        raise BadArgs("args: expected an object")
    unknown = sorted(set(given) - set(spec))
    if unknown:
        raise BadArgs(f"{unknown[0][:80]!r}: not an argument of this call")
    out = {}
    for name, (check, default) in spec.items():
        if name not in given:
            if default is REQUIRED:
                raise BadArgs(f"{name}: missing")
            out[name] = default
        else:
            out[name] = check(name, given[name])
    return out


async def _columns(c: EngineClient, run_id: str, after_iteration: int) -> dict:
    return pack_columns(await c.columns(run_id, after_iteration))


async def _series(c: EngineClient, run_id: str, key: str) -> list:
    return list(await c.series(run_id, key))


async def _start(c: EngineClient, config, preset, name, group) -> str:
    return await c.start(config, preset=preset, name=name, group=group)


async def _ablation(c: EngineClient, config, preset, seeds, budget, arms, jobs) -> list[str]:
    return list(await c.start_ablation(config, preset=preset, seeds=seeds, budget=budget, arms=arms, jobs=jobs))


async def _export(c: EngineClient, run_ids, fmt, charts, group_by) -> dict:
    """Written into a private folder beside the served database, read back, removed."""
    with TemporaryDirectory(prefix="export-", dir=make_private_dir(logs_dir(c.db_path))) as tmp:
        out = Path(tmp) / f"report.{fmt}"
        line = await c.export(run_ids, fmt, out, charts=charts, group_by=group_by)
        paths = output_paths(fmt, out)
        files = [{"zb": base64.b64encode(zlib.compress(p.read_bytes(), 6)).decode()} if p.exists() else None
                 for p in paths]
    return {"line": line, "files": files, "paths": [str(p) for p in paths]}


async def _log_tail(c: EngineClient, run_id: str, lines: int) -> str:
    return c.log_tail(run_id, lines)


RUN: Spec = {"run_id": (run_id, REQUIRED)}
ARCHIVED: Spec = {"include_archived": (flag, False)}
KEYS: Spec = {"keys": (many(text), REQUIRED)}
SOME_RUNS: Spec = {"run_ids": (optional(many(run_id)), None)}

CALLS: dict[str, Call] = {
    "run": Call(lambda c, run_id: c.run(run_id), RUN),
    "list_runs": Call(lambda c, include_archived: c.list_runs(include_archived), ARCHIVED, held=True),
    "run_summaries": Call(lambda c, keys, include_archived: c.run_summaries(keys, include_archived),
                          {**KEYS, **ARCHIVED}, held=True),
    "metric_names": Call(lambda c: c.metric_names(), {}, held=True),
    "config_fields": Call(lambda c: c.config_fields(), {}, held=True),
    "flat_configs": Call(lambda c, run_ids: c.flat_configs(run_ids), SOME_RUNS, held=True),
    "final_values": Call(lambda c, keys, run_ids: c.final_values(keys, run_ids), {**KEYS, **SOME_RUNS}, held=True),
    "best_values": Call(lambda c, keys, run_ids: c.best_values(keys, run_ids), {**KEYS, **SOME_RUNS}, held=True),
    "latest_metrics": Call(lambda c, run_id: c.latest_metrics(run_id), RUN),
    "columns": Call(_columns, {**RUN, "after_iteration": (count, 0)}),
    "events_at": Call(lambda c, run_id, iteration, kinds: c.events_at(run_id, iteration, kinds),
                      {**RUN, "iteration": (count, REQUIRED), "kinds": (optional(many(text)), None)}),
    "tasks": Call(lambda c, run_id, statuses: c.tasks(run_id, statuses),
                  {**RUN, "statuses": (optional(many(text)), None)}, held=True),
    "series": Call(_series, {**RUN, "key": (text, REQUIRED)}),
    "search_runs": Call(lambda c, query, include_archived: c.search_runs(query, include_archived),
                        {"query": (text, REQUIRED), **ARCHIVED}),
    "group_runs": Call(lambda c, group: c.group_runs(group), {"group": (run_id, REQUIRED)}),
    "log_tail": Call(_log_tail, {**RUN, "lines": (count, 20)}),
    "wait": Call(lambda c, run_id: c.wait(run_id), RUN),
    "command": Call(lambda c, run_id, kind, payload: c.command(run_id, kind, payload),
                    {**RUN, "kind": (one_of(tuple(CommandKind)), REQUIRED), "payload": (optional(payload), None)},
                    retry=False),
    "set_notes": Call(lambda c, run_id, notes: c.set_notes(run_id, notes), {**RUN, "notes": (text, REQUIRED)},
                      retry=False),
    "set_tags": Call(lambda c, run_id, tags: c.set_tags(run_id, tags), {**RUN, "tags": (many(text), REQUIRED)},
                     retry=False),
    "set_archived": Call(lambda c, run_id, archived: c.set_archived(run_id, archived),
                         {**RUN, "archived": (flag, True)}, retry=False),
    "delete_run": Call(lambda c, run_id: c.delete_run(run_id), RUN, retry=False),
    "start": Call(_start, {"config": (config, REQUIRED), "preset": (optional(preset), None),
                           "name": (optional(text), None), "group": (optional(run_id), None)}, retry=False),
    "start_ablation": Call(_ablation, {"config": (config, REQUIRED), "preset": (optional(preset), None),
                                       "seeds": (many(integer), REQUIRED), "budget": (count, REQUIRED),
                                       "arms": (many(text), REQUIRED), "jobs": (count, 1)}, retry=False),
    "resume_run": Call(lambda c, run_id, iterations, accept_unowned: c.resume_run(run_id, iterations, accept_unowned),
                       {**RUN, "iterations": (optional(count), None), "accept_unowned": (flag, False)}, retry=False),
    "export": Call(_export, {"run_ids": (many(run_id), REQUIRED), "fmt": (one_of(FORMATS), REQUIRED),
                             "charts": (optional(many(many(text))), None), "group_by": (optional(text), None)}),
}
# `watch` (a stream) and `cancel` (of a stream) are the server's own: see server.py
STREAMS: dict[str, Spec] = {"watch": {**RUN, "after_iteration": (count, 0), "after_event": (count, 0),
                                      "status": (optional(text), None)}}
