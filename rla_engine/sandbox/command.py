"""`rla sandbox check` and `rla sandbox run`: what isolation holds on this machine, and one program
run the way the coding setting runs it. Imports nothing heavy (no torch)."""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from ..errors import InputError
from .pool import SandboxPool
from .probe import probe_level
from .types import LEVELS, Job, Limits

SHOWN_BYTES = 65_536     # stdout printed by `run` (the run itself keeps Limits.output_bytes)


def add_parser(sub) -> None:
    box = sub.add_parser("sandbox", help="check the sandbox for model-written programs, or run one program in it")
    what = box.add_subparsers(dest="sandbox_command", required=True)
    check = what.add_parser("check", help="list each isolation guarantee and whether it holds here")
    check.add_argument("--json", action="store_true", help="machine-readable output")
    run = what.add_parser("run", help="run one Python program in the sandbox")
    run.add_argument("program", help="a Python source file")
    run.add_argument("--input", help="a file given as the program's stdin")
    run.add_argument("--time-limit", type=float, default=Limits.time_s, metavar="S", help="CPU seconds (default 4)")
    run.add_argument("--require", choices=("isolated", "any"), default="isolated")
    run.add_argument("--json", action="store_true", help="machine-readable output")


def main(a: argparse.Namespace) -> int:
    return check(a.json) if a.sandbox_command == "check" else run(a)


def check(as_json: bool) -> int:
    levels = {lv: probe_level(lv) for lv in LEVELS}
    best = next((iso for iso, _ in levels.values() if iso is not None), None)
    if as_json:
        print(json.dumps({
            "level": best.level if best else None,
            "guarantees": [{"name": n, "holds": h, "how": how} for n, h, how in (best.guarantees if best else [])],
            "levels": {lv: {"works": iso is not None, "why_not": why} for lv, (iso, why) in levels.items()}},
            indent=2))
        return 0
    print(f"sandbox level: {best.level if best else 'none'}")
    for name, holds, how in best.guarantees if best else []:
        print(f"  [{'yes' if holds else 'NO '}] {name}: {how}")
    for lv, (iso, why) in levels.items():
        print(f"  level {lv}: {'works' if iso is not None else 'unavailable: ' + why}")
    return 0


def run(a: argparse.Namespace) -> int:
    if not (math.isfinite(a.time_limit) and 0 < a.time_limit <= 600):
        raise InputError(f"--time-limit {a.time_limit}: must be more than 0 and at most 600 seconds")
    program = _read(a.program, "program").decode("utf-8", "surrogateescape")
    stdin = _read(a.input, "--input") if a.input else b""
    with SandboxPool(require=a.require, workers=1) as pool:
        ex = pool.run([Job(program, stdin, limits=Limits(time_s=a.time_limit))])[0]
    if a.json:
        print(json.dumps({"status": ex.status.value, "seconds": round(ex.seconds, 4), "returncode": ex.returncode,
                          "detail": ex.detail, "level": pool.isolation.level,
                          "stdout": ex.stdout[:SHOWN_BYTES].decode("utf-8", "replace"),
                          "stderr": ex.stderr[-4096:].decode("utf-8", "replace")}))
        return 0
    print(f"status {ex.status.value}  {ex.seconds:.3f}s  exit {ex.returncode}  level {pool.isolation.level}"
          + (f"  ({ex.detail})" if ex.detail else ""))
    sys.stdout.flush()
    sys.stdout.buffer.write(ex.stdout[:SHOWN_BYTES])
    if len(ex.stdout) > SHOWN_BYTES:
        print(f"\n… {len(ex.stdout) - SHOWN_BYTES} more bytes not shown")
    if ex.stderr:
        sys.stderr.buffer.write(ex.stderr[-4096:])
    return 0


def _read(path: str, what: str) -> bytes:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{what} {path}: no such file")
    try:
        return p.read_bytes()
    except OSError as e:
        raise InputError(f"{what} {path}: {e.strerror}") from None
