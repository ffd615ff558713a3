"""The rule every field of an untrusted run bundle must meet before any of it is written (an
import; bundle.py turns the checked fields into rows). A bundle comes from a file anyone can
edit, and what the store accepts, every reader (`rla show`, the console, reports) must be able
to take: so each value is checked for its type, its range and its size, and every string for
text SQLite and the readers can encode. Pure Python, no SQL.

The limits are module constants read at each check; a failure is a BundleError whose one line
names the field path, e.g. `runs[0].events[3].payload: expected a JSON object, got null`.
"""
from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1      # what an SQLite INTEGER holds
# Event ids order a run's events and the console reads "events after id N": an imported id near
# INT64_MAX would leave SQLite no room to keep counting up, and every later event, of any run,
# would get a random lower id that readers never ask for. 2^53 leaves 2^63 − 2^53 ids of room.
EVENT_ID_MAX = 2**53
# Readers turn timestamps into dates (time.localtime, datetime); beyond a few thousand years those
# raise. Year 3000 is far past any real run and well inside what they take.
TIME_MAX = 32_503_680_000.0
PID_MAX = 2**31 - 1             # a pid_t; liveness checks hand the pid to os.kill
LABEL_CHARS = 1_000             # names, keys, kinds, statuses: shown on one line in tables
TEXT_CHARS = 1_000_000          # notes, errors, task parameters, strings inside payloads
JSON_DEPTH = 64                 # real configs and payloads nest < 10; readers walk them recursively

_SURROGATE = re.compile("[\ud800-\udfff]")
# a label is printed as one line in a terminal (`rla runs`): no line breaks, no escape sequences
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_BAD_LABEL = re.compile("[\ud800-\udfff\x00-\x1f\x7f-\x9f]")
_FMAX = sys.float_info.max
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_./-]{1,64}\Z")


class BundleError(ValueError):
    """A malformed bundle; the message names the first bad field."""


class NonStandard:
    """What the parser found where strict JSON has no value for it: NaN, Infinity, or an integer
    too long to be in range. Kept (not raised) so the check can name the field it sits in."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def describe(self) -> str:
        if self.text.lstrip("-").isdigit():
            return f"an integer of {len(self.text.lstrip('-')):,} digits (outside SQLite's 64-bit range)"
        return f"{self.text} (not standard JSON)"


def _parse_int(text: str) -> int | NonStandard:
    # an int64 has at most 19 digits and a sign; longer text is out of range anyway, and int() of
    # more than 4,300 digits raises ValueError instead of returning
    return int(text) if len(text) <= 20 else NonStandard(text)


def strict_json(data: bytes | str) -> Any:
    """json.loads, with NaN/Infinity tokens and overlong integers kept as NonStandard markers."""
    return json.loads(data, parse_constant=NonStandard, parse_int=_parse_int)


class Field:
    """One field's rule. `quick` answers the common case cheaply (a long run has millions of
    values); anything it does not pass goes to check_field, which says what is wrong, or walks
    an object."""

    __slots__ = ("hi", "kind", "lo", "null_ok", "required")

    def __init__(self, kind: str, required: bool = False, lo: float | None = None, hi: float | None = None,
                 null_ok: bool = True):
        self.kind = kind                # int | num | label | text | object
        self.required = required       # missing or null is refused
        self.null_ok = null_ok          # when not required: may an explicit null stand for "missing"?
        # bounds as numbers a comparison can use; for a real, ±max float also shuts out ±inf (and
        # NaN fails every comparison)
        if kind == "int":
            self.lo, self.hi = INT64_MIN if lo is None else lo, INT64_MAX if hi is None else hi
        else:
            self.lo, self.hi = -_FMAX if lo is None else lo, _FMAX if hi is None else hi

    def quick(self, v: Any) -> bool:
        t, k = type(v), self.kind
        if k == "int":
            return t is int and self.lo <= v <= self.hi
        if k == "num":
            return ((t is float or (t is int and INT64_MIN <= v <= INT64_MAX)) and self.lo <= v <= self.hi)
        if k == "label":
            return t is str and len(v) <= LABEL_CHARS and not _BAD_LABEL.search(v)
        if k == "text":
            return t is str and len(v) <= TEXT_CHARS and not _SURROGATE.search(v)
        return False


_EXPECT = {"int": "an integer", "num": "a finite number", "label": "one line of text", "text": "text",
           "object": "a JSON object"}

COUNT = Field("int", lo=0, hi=INT64_MAX)
TIME = Field("num", lo=0.0, hi=TIME_MAX)
LABEL = Field("label")

RUN = {"id": Field("label", True), "name": Field("label", True), "status": Field("label", True), "preset": LABEL,
       "config": Field("object", True), "group_id": LABEL, "created_at": TIME, "started_at": TIME,
       "ended_at": TIME, "heartbeat_at": TIME, "pid": Field("int", lo=0, hi=PID_MAX), "host": LABEL,
       "iteration": COUNT, "device": LABEL, "error": Field("text"), "notes": Field("text"), "tags": Field("text"),
       "archived": Field("int", lo=0, hi=1), "pid_start": LABEL}
ITERATION = {"iteration": Field("int", True, 0, INT64_MAX), "t": TIME, "env_steps": COUNT,
             "wall_s": Field("num", lo=0.0)}
METRIC = {"iteration": Field("int", True, 0, INT64_MAX), "key": Field("label", True), "value": Field("num", True),
          "t": TIME}
# every reader formats an event's iteration (`rla show`, the report's markers) and reads its
# payload as an object (the dashboard, the report); the engine always writes both so
EVENT = {"id": Field("int", lo=1, hi=EVENT_ID_MAX), "iteration": Field("int", True, 0, INT64_MAX), "t": TIME,
         "kind": Field("label", True), "payload": Field("object", null_ok=False)}
_REQUIRED_COUNT = Field("int", True, 0, INT64_MAX)
# An accuracy is an average of 0/1 outcomes but may be a rounding step outside [0, 1]: finite is
# enough. Difficulty is required: text_base lets a family have none, but no family does, and
# `rla show` and the pool table compute with it; such a family must relax this with its readers.
TASK = {"uid": _REQUIRED_COUNT, "slot": _REQUIRED_COUNT, "version": _REQUIRED_COUNT,
        "family": Field("label", True), "params_json": Field("text", True), "difficulty": Field("num", True, 0.0, 1.0),
        "status": Field("label", True), "last_acc": Field("num"), "direction": LABEL, "prev_acc": Field("num"),
        "new_acc": Field("num"), "critic_json": Field("text"), "created_iteration": _REQUIRED_COUNT,
        "decided_iteration": COUNT}


def join(where: str, field: str) -> str:
    """A field path: `runs[0]` + `events` -> `runs[0].events`; at the top level just `events`."""
    return f"{where}.{field}" if where else field


def shown(v: Any) -> str:
    """A value as one short, printable line (escapes, never the raw text of a hostile string)."""
    if v is None:
        return "null"
    if isinstance(v, NonStandard):
        return v.describe()
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if isinstance(v, int) and v.bit_length() > 64:       # its digits could be too many to print
        return f"an integer of {v.bit_length():,} bits"
    if not isinstance(v, (int, float, str)):
        return f"a {type(v).__name__}"
    text = json.dumps(v)
    return text if len(text) <= 60 else text[:57] + "…"


def _key_path(where: str, key: str) -> str:
    return join(where, key) if _PLAIN_KEY.match(key) else f"{where}[{shown(key)}]"


def check_string(where: str, v: str, limit: int, label: bool) -> None:
    if len(v) > limit:
        raise BundleError(f"{where}: {len(v):,} characters, at most {limit:,}")
    bad = _SURROGATE.search(v) or (_CONTROL.search(v) if label else None)
    if bad:
        what = "a lone surrogate" if _SURROGATE.match(bad.group()) else "a control character"
        raise BundleError(f"{where}: {what} ({shown(bad.group())}) at character {bad.start()}")


def _scalar_ok(v: Any) -> bool:
    """A JSON leaf strict JSON and SQLite hold as it is (the common case, checked cheaply)."""
    t = type(v)
    if t is str:
        return len(v) <= TEXT_CHARS and not _SURROGATE.search(v)
    if t is float:
        return -_FMAX <= v <= _FMAX
    if t is int:
        return INT64_MIN <= v <= INT64_MAX
    return v is None or t is bool


def check_json(where: str, v: Any, depth: int = 0) -> None:
    """A JSON value that strict JSON, SQLite and every reader can hold: finite numbers, integers
    in SQLite's range, encodable strings of bounded size, bounded nesting."""
    t = type(v)
    if t is dict or t is list:
        _check_container(where, v, depth)
    elif t is str:
        check_string(where, v, TEXT_CHARS, label=False)
    elif t is NonStandard or t is float:
        raise BundleError(f"{where}: expected a finite number, got {shown(v)}")
    elif t is int:
        raise BundleError(f"{where}: integer {shown(v)} is outside SQLite's 64-bit range")
    elif not _scalar_ok(v):         # a set, bytes, …: only a bundle built in Python can hold one
        raise BundleError(f"{where}: expected a JSON value, got a {t.__name__}")


def _check_container(where: str, v: dict | list, depth: int) -> None:
    """Its items; a path is made only for an item that needs a closer look."""
    if depth >= JSON_DEPTH:
        raise BundleError(f"{where}: nested more than {JSON_DEPTH} levels deep")
    if type(v) is dict:
        for k, item in v.items():
            if type(k) is not str or len(k) > LABEL_CHARS or _SURROGATE.search(k):
                _bad_name(where, k)
            if not _scalar_ok(item):
                check_json(_key_path(where, k), item, depth + 1)
    else:
        for n, item in enumerate(v):
            if not _scalar_ok(item):
                check_json(f"{where}[{n}]", item, depth + 1)


def _bad_name(where: str, k: Any) -> None:
    if type(k) is not str:          # only a bundle built in Python can have one
        raise BundleError(f"{where}: a field name that is not text ({shown(k)})")
    check_string(f"{_key_path(where, k)} (its name)", k, LABEL_CHARS, label=False)


def check_field(where: str, f: Field, v: Any) -> None:
    """A value that is present, not null, and not passed by `f.quick`: say what is wrong with it
    (or, for an object, walk it)."""
    if f.kind in ("int", "num"):
        if not _number_ok(f.kind, v):
            raise BundleError(f"{where}: expected {_EXPECT[f.kind]}, got {shown(v)}")
        if not f.lo <= v <= f.hi:
            raise BundleError(f"{where}: {shown(v)} is outside [{_bound(f.lo)}, {_bound(f.hi)}]")
    elif f.kind in ("label", "text"):
        if type(v) is not str:
            raise BundleError(f"{where}: expected {_EXPECT[f.kind]}, got {shown(v)}")
        check_string(where, v, LABEL_CHARS if f.kind == "label" else TEXT_CHARS, label=f.kind == "label")
    else:
        if type(v) is not dict:
            raise BundleError(f"{where}: expected a JSON object, got {shown(v)}")
        check_json(where, v)


def _number_ok(kind: str, v: Any) -> bool:
    # a whole number where a real is stored still goes to SQLite as an integer: it must fit one
    if type(v) is int:
        return kind == "int" or INT64_MIN <= v <= INT64_MAX
    return kind == "num" and type(v) is float and math.isfinite(v)


def _bound(x: float) -> str:
    return "…" if abs(x) == _FMAX else f"{x:g}" if isinstance(x, float) else str(x)


def check_row(where: str, row: Any, spec: dict[str, Field]) -> tuple:
    """The values of `row` in `spec`'s order, each checked; a field that is not required may be
    missing (None). Unknown fields are refused: a newer format is a new format name, not
    silently dropped data."""
    if type(row) is not dict:
        raise BundleError(f"{where}: expected an object, got {shown(row)}")
    if not row.keys() <= spec.keys():
        raise BundleError(f"{where}: unknown field {shown(next(k for k in row if k not in spec))}")
    out = []
    for name, f in spec.items():
        v = row.get(name)
        if v is None:
            if f.required or (not f.null_ok and name in row):
                raise BundleError(f"{join(where, name)}: expected {_EXPECT[f.kind]}, "
                                  f"got {'null' if name in row else 'nothing'}")
        elif not f.quick(v):
            check_field(join(where, name), f, v)
        out.append(v)
    return tuple(out)
