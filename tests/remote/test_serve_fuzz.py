"""`rla serve` fed what no console sends: random bytes, JSON of the wrong shape, ids of every type,
unknown calls, arguments of the wrong types, deep nesting, huge numbers, over-long lines.

(a) in process, with hypothesis: the real Server (server.py) on a copy of a real tiny database;
every line gets at most one answer, each a message of the protocol, no exception escapes, the
server never hangs, and a request answered with an error changes nothing in the database.
(b) a corpus of malformed lines to the real `rla serve --stdio` subprocess (no ssh): each is
answered with an error, the process exits 0 when stdin ends and prints no traceback."""
import asyncio
import base64
import json
import os
import shutil
import sqlite3
import subprocess
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from remote_support import RLA, rla_run, run_async

from rla_engine.client import EngineClient, EngineError
from rla_engine.remote.calls import CALLS, STREAMS
from rla_engine.remote.protocol import MAX_REQUEST_BYTES, decode, encode
from rla_engine.remote.server import Server


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A database with one finished 3-iteration run, its id, and the dump of its rows."""
    db = tmp_path_factory.mktemp("fuzz") / "runs.db"
    run_id = rla_run(db, 3, "fuzzed")
    return db, run_id, dump(db)


@pytest.fixture(scope="module")
def no_engines():
    """A request that would start a process (an engine, a report renderer) is refused instead:
    the fuzz is of the protocol, and a valid start is tested for real in test_remote_client.py."""
    async def refuse(*_args, **_kw):
        raise EngineError("no process is started in the fuzz")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(EngineClient, "_spawn", refuse)
        patch.setattr(EngineClient, "_render", staticmethod(refuse))
        yield


def dump(db: Path) -> list[str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return list(conn.iterdump())


def serve(db: Path, lines: list[bytes], timeout: float = 20.0) -> tuple[dict, list[dict]]:
    """Feed the lines to a Server (then the end of its stdin); its hello and the messages it wrote."""
    written: list[bytes] = []

    async def write(data: bytes) -> None:
        written.append(data)

    async def main() -> None:
        reader = asyncio.StreamReader(limit=MAX_REQUEST_BYTES)      # as serve_stdio makes it
        for line in lines:
            reader.feed_data(line)
        reader.feed_eof()
        await Server(db, write).serve(reader)
    run_async(main(), timeout, collect=False)       # no exception escapes, none is left unretrieved, no hang
    messages = []
    for data in written:
        assert data.endswith(b"\n") and data.count(b"\n") == 1, data[:200]
        messages.append(decode(data[:-1]))
    assert messages and messages[0].get("rla") == "serve" and "error" not in messages[0], messages[:1]
    return messages[0], messages[1:]


def check_answers(lines: list[bytes], answers: list[dict]) -> list[dict]:
    """At most one answer a line, each with an id that was asked (or null), and "ok", "same" or a
    well-formed "error"; the final answers returned (beats and stream updates left out)."""
    final = [a for a in answers if "beat" not in a and "update" not in a]
    asked = sum(1 for line in lines if line.strip())
    assert len(final) <= asked, (len(final), asked)
    for answer in final:
        assert "id" in answer, answer
        outcome = {"ok", "error", "same"} & set(answer)
        assert len(outcome) == 1, answer
        if "error" in answer:
            error = answer["error"]
            assert isinstance(error, dict) and isinstance(error.get("kind"), str), answer
            assert isinstance(error.get("message"), str) and "Traceback" not in error["message"], answer
    return final


# -- (a) hypothesis -----------------------------------------------------------------------------------
ARG_NAMES = sorted({name for call in CALLS.values() for name in call.args} | set(STREAMS["watch"]) | {"stream"})
CALL_NAMES = sorted(CALLS) + sorted(STREAMS) + ["cancel"]
WRITES = {name for name, call in CALLS.items() if not call.retry}

scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2 ** 80), max_value=2 ** 80)
           | st.floats() | st.text(max_size=12)
           | st.sampled_from(["nosuchrun", "../etc/passwd", "a b", "pause", "stop", "csv", "html", "tiny", "-x",
                              "run.iterations=1", "[run]\niterations = 1\n", "", "\x00", "é" * 40, 10 ** 30, -1, 0]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=10)
ids = (st.integers(min_value=-3, max_value=12) | st.integers() | st.floats() | st.text(max_size=4) | st.none()
       | st.booleans() | st.lists(st.integers(), max_size=2) | st.dictionaries(st.text(max_size=2), st.integers(),
                                                                                  max_size=1))
calls = st.sampled_from(CALL_NAMES) | st.sampled_from(["", "Cancel", "__init__", "run ", "list_runs\x00",
                                                       "serve", "CALLS"]) | values


def requests(run_id: str):
    runs = st.sampled_from([run_id, "nosuchrun"])
    args = (st.dictionaries(st.sampled_from(ARG_NAMES) | st.text(max_size=8), values | runs, max_size=5)
            | st.fixed_dictionaries({"run_id": runs}, optional={name: values for name in ARG_NAMES if name != "run_id"})
            | values)
    return st.fixed_dictionaries({}, optional={"id": ids, "call": calls, "args": args, "unless": values,
                                               "z": values, "extra": values})


SHAPES = {
    "deep list": lambda: b"[" * 50_000 + b"\n",
    "deep call": lambda: b'{"id": 1, "call": ' + b"[" * 5000 + b"\n",
    "long id": lambda: b'{"id": 1' + b"0" * 5000 + b"}\n",
    "long run id": lambda: b'{"id": 1, "call": "run", "args": {"run_id": "' + b"a" * 100_000 + b'"}}\n',
    "good": lambda: b'{"id": 2, "call": "list_runs", "args": {}}\n',
    "empty": lambda: b"\n",
    "blank": lambda: b"   \n",
    "no call": lambda: b'{"id": 3}\n',
    "object": lambda: b"{}\n",
    "null": lambda: b"null\n",
    "watch": lambda: b'{"id": 4, "call": "watch", "args": {"run_id": "nosuchrun"}}\n',
    "cancel list": lambda: b'{"id": 5, "call": "cancel", "args": {"stream": [1]}}\n',
    "call list": lambda: b'{"id": 6, "call": ["run"]}\n',
    "call object": lambda: b'{"id": 7, "call": {"a": 1}}\n',
    "bomb": lambda: b'{"z": "' + base64.b64encode(zlib.compress(b" " * 2_000_000)) + b'"}\n',
}


def lines_of(run_id: str):
    as_json = requests(run_id).map(lambda r: json.dumps(r, ensure_ascii=False).encode() + b"\n")
    as_z = requests(run_id).map(
        lambda r: b'{"z":"' + base64.b64encode(zlib.compress(json.dumps(r).encode())) + b'"}\n')
    noise = st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"") + b"\n")
    shapes = st.sampled_from(sorted(SHAPES)).map(lambda name: SHAPES[name]())     # built when drawn: a short repr
    return st.lists(as_json | as_z | noise | shapes, min_size=1, max_size=8)


@pytest.mark.usefixtures("no_engines")
def test_random_requests_are_answered_or_refused_and_change_nothing(pristine, tmp_path_factory):
    db, run_id, rows = pristine

    # as tests/engine/test_config_fuzz.py: the same examples each run unless RLA_FUZZ_RANDOM is set,
    # RLA_FUZZ_SCALE times as many
    @settings(max_examples=200 * int(os.environ.get("RLA_FUZZ_SCALE", "1")), deadline=None, database=None,
              derandomize=not os.environ.get("RLA_FUZZ_RANDOM"), print_blob=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(lines=lines_of(run_id))
    def fuzz(lines):
        copy = tmp_path_factory.mktemp("served") / "runs.db"
        shutil.copy(db, copy)
        _hello, answers = serve(copy, lines)
        final = check_answers(lines, answers)
        sent = [_request(line) for line in lines]
        sent_ids = [r.get("id") for r in sent if isinstance(r, dict)]
        for answer in final:
            assert answer["id"] is None or answer["id"] in sent_ids, answer
        changed_by = {r.get("call") for r in sent if isinstance(r, dict) and isinstance(r.get("call"), str)} & WRITES
        if not (changed_by and any("ok" in a for a in final)):
            assert dump(copy) == rows, lines
        shutil.rmtree(copy.parent)
    fuzz()


def _request(line: bytes):
    try:
        return decode(line.rstrip(b"\n"), MAX_REQUEST_BYTES)
    except ValueError:
        return None


@pytest.mark.usefixtures("no_engines")
def test_each_kind_of_bad_request_gets_its_own_error(pristine, tmp_path):
    """Hand-picked lines, one answer each, in order, naming what is wrong; a good request after
    them is still answered: the server goes on."""
    db = tmp_path / "runs.db"
    shutil.copy(pristine[0], db)
    run_id = pristine[1]
    cases = [
        (b"not json", None, "not JSON"),
        (b"[1, 2]", None, "not an object"),
        (b'{"call": "list_runs"}', None, "integer id"),
        (b'{"id": true, "call": "list_runs"}', None, "integer id"),
        (b'{"id": 1.5, "call": "list_runs"}', None, "integer id"),
        (b'{"id": "7", "call": "list_runs"}', None, "integer id"),
        (b'{"id": 10, "call": "no_such_call"}', 10, "unknown call 'no_such_call'"),
        (b'{"id": 11}', 11, "unknown call 'None'"),
        (b'{"id": 12, "call": ["list_runs"]}', 12, "unknown call"),
        (b'{"id": 13, "call": {"x": 1}}', 13, "unknown call"),
        (b'{"id": 14, "call": "list_runs", "args": []}', 14, "args: expected an object"),
        (b'{"id": 15, "call": "list_runs", "args": {"include_archived": 1}}', 15, "include_archived"),
        (b'{"id": 16, "call": "list_runs", "args": {"limit": 1}}', 16, "'limit': not an argument"),
        (b'{"id": 17, "call": "run", "args": {}}', 17, "run_id: missing"),
        (b'{"id": 18, "call": "run", "args": {"run_id": "../../etc"}}', 18, "run_id"),
        (b'{"id": 19, "call": "columns", "args": {"run_id": "r", "after_iteration": -1}}', 19, "after_iteration"),
        (b'{"id": 20, "call": "columns", "args": {"run_id": "r", "after_iteration": 1e400}}', 20, "after_iteration"),
        (b'{"id": 21, "call": "columns", "args": {"run_id": "r", "after_iteration": ' + b"9" * 40 + b"}}", 21,
         "after_iteration"),
        (b'{"id": 22, "call": "command", "args": {"run_id": "r", "kind": "reboot"}}', 22, "kind: expected one of"),
        (b'{"id": 23, "call": "command", "args": {"run_id": "r", "kind": "pause", "payload": []}}', 23, "payload"),
        (b'{"id": 24, "call": "start", "args": {"config": "[run]\\niterations = \\"x\\""}}', 24, "run.iterations"),
        (b'{"id": 25, "call": "start", "args": {"config": "not = [toml"}}', 25, "not valid TOML"),
        (b'{"id": 26, "call": "start", "args": {"config": "", "preset": "../x"}}', 26, "not a preset"),
        (b'{"id": 27, "call": "export", "args": {"run_ids": ["r"], "fmt": "exe"}}', 27, "fmt"),
        (b'{"id": 28, "call": "set_tags", "args": {"run_id": "r", "tags": "a,b"}}', 28, "tags: expected a list"),
        (b'{"id": 29, "call": "set_notes", "args": {"run_id": "r", "notes": "a\\u0000b"}}', 29, "notes"),
        (b'{"id": 30, "call": "cancel", "args": {"stream": [1]}}', 30, None),
        (b'{"id": 31, "call": "watch", "args": {"run_id": "r", "status": 5}}', 31, "status"),
        (b'{"id": 32, "call": "wait", "args": {"run_id": 5}}', 32, "run_id"),
        (b'{"z": "!!!"}', None, "does not inflate"),
        (b'{"z": "' + base64.b64encode(zlib.compress(b" " * 2_000_000)) + b'"}', None, "inflates to over"),
        (b'{"id": 33, "call": "list_runs", "args": {}, "unless": 5}', 33, None),
    ]
    lines = [line + b"\n" for line, _, _ in cases] + [b'{"id": 99, "call": "run", "args": {"run_id": "%s"}}\n'
                                                     % run_id.encode()]
    _hello, answers = serve(db, lines)
    final = check_answers(lines, answers)
    assert len(final) == len(lines), final
    by_id = {a["id"]: a for a in final if a["id"] is not None}
    nameless = [a for a in final if a["id"] is None]
    assert len(nameless) == sum(1 for _, rid, _ in cases if rid is None)
    for (line, _rid, why), answer in zip([c for c in cases if c[1] is None], nameless):
        assert why in answer["error"]["message"], (line, answer)
    for line, rid, why in cases:
        if rid is not None and why is not None:
            assert why in by_id[rid]["error"]["message"], (line, by_id[rid])
            assert by_id[rid]["error"]["kind"] == "bad_request", by_id[rid]
    assert by_id[30] == {"id": 30, "ok": None}
    assert "ok" in by_id[33]
    assert by_id[99]["ok"]["id"] == run_id and by_id[99]["ok"]["status"] == "completed"
    assert dump(db) == pristine[2]


@pytest.mark.usefixtures("no_engines")
def test_a_line_over_the_limit_is_refused_and_ends_the_connection(pristine, tmp_path):
    db = tmp_path / "runs.db"
    shutil.copy(pristine[0], db)
    lines = [b'{"id": 1, "call": "metric_names"}\n', b'{"id": 2, "call": "run", "args": {"run_id": "'
             + b"a" * MAX_REQUEST_BYTES + b'"}}\n', b'{"id": 3, "call": "metric_names"}\n']
    _hello, answers = serve(db, lines)
    final = check_answers(lines, answers)
    assert sorted(final, key=lambda a: a["id"] is None)[0]["id"] == 1 and len(final) == 2, final
    final.sort(key=lambda a: a["id"] is None)
    assert "over" in final[1]["error"]["message"] and "closing" in final[1]["error"]["message"]


def test_an_id_in_use_is_refused(pristine, tmp_path):
    """Two requests with one id, the second read while the first is still open: the second is
    refused, the first is answered."""
    db = tmp_path / "runs.db"
    shutil.copy(pristine[0], db)
    lines = [encode({"id": 1, "call": "run", "args": {"run_id": pristine[1]}}),
             encode({"id": 1, "call": "metric_names", "args": {}})]
    _hello, answers = serve(db, lines)
    final = check_answers(lines, answers)
    assert len(final) == 2
    refused, answered = sorted(final, key=lambda a: "ok" in a)
    assert refused == {"id": 1, "error": {"kind": "bad_request", "message": "id 1 is already in use"}}
    assert answered["ok"]["id"] == pristine[1]


# -- (b) the real `rla serve --stdio` -------------------------------------------------------------------
CORPUS = [
    b"", b"   ", b"garbage", b"\xff\xfe\xfd", b"\x00\x00", b"{", b"}", b"[]", b"null", b"42", b'"text"', b"NaN",
    b'{"id": NaN}', b'{"id": Infinity, "call": "list_runs"}', b'{"id": 1e999, "call": "list_runs"}',
    b'{"id": ' + b"9" * 5000 + b', "call": "list_runs"}', b"[" * 100_000, b'{"a":' * 10_000,
    b'{"id": 1, "call": "list_runs", "args": {"include_archived": "yes"}}',
    b'{"id": 2, "call": "nosuch"}', b'{"id": 3, "call": ["list_runs"]}', b'{"id": 4, "call": {"k": 1}}',
    b'{"id": 5, "call": "cancel", "args": {"stream": {"k": 1}}}', b'{"id": 6, "call": "run", "args": "x"}',
    b'{"id": 7, "call": "export", "args": {"run_ids": ["../x"], "fmt": "csv"}}',
    b'{"id": 8, "call": "start_ablation", "args": {"config": "", "seeds": [1.5], "budget": 1, "arms": []}}',
    b'{"id": 9, "call": "events_at", "args": {"run_id": "r", "iteration": true}}',
    b'{"z": 1}', b'{"z": "AAAA"}', b'{"z": "' + base64.b64encode(zlib.compress(b"[1]")) + b'"}',
    b'{"id": 10, "call": "tasks", "args": {"run_id": "r", "statuses": [1, 2]}}',
    b'{"id": 11, "call": "metric_names"}',      # a good one: still answered after all of the above
]


def test_the_real_server_answers_a_corpus_of_bad_lines_and_exits_cleanly(pristine, tmp_path):
    db = tmp_path / "runs.db"
    shutil.copy(pristine[0], db)
    over_long = b'{"id": 12, "call": "run", "args": {"run_id": "' + b"x" * (MAX_REQUEST_BYTES + 10) + b'"}}'
    after = b'{"id": 13, "call": "metric_names"}'
    data = b"".join(line + b"\n" for line in [*CORPUS, over_long, after])
    done = subprocess.run([str(RLA), "serve", "--stdio", "--db", str(db)], input=data, capture_output=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr and b"Traceback" not in done.stdout, done.stderr.decode()[-3000:]
    lines = done.stdout.split(b"\n")
    assert lines[-1] == b""
    messages = [decode(line) for line in lines[:-1]]
    assert messages[0]["rla"] == "serve" and "error" not in messages[0]
    final = [m for m in messages[1:] if "beat" not in m]
    asked = [line for line in CORPUS if line.strip()]
    assert len(final) == len(asked) + 1, [m.get("id") for m in final]      # each line once, and the over-long one
    # errors all but the good call, and the cancel of a stream that is not there (nothing to cancel)
    assert all("error" in m for m in final if m["id"] not in (5, 11)), [m for m in final if "error" not in m]
    assert next(m for m in final if m["id"] == 5) == {"id": 5, "ok": None}
    assert {m["id"] for m in final} <= {None, *range(1, 13)}
    assert next(m for m in final if m["id"] == 11)["ok"]
    closing = [m for m in final if "closing" in m.get("error", {}).get("message", "")]
    assert len(closing) == 1 and closing[0]["id"] is None and "over" in closing[0]["error"]["message"]
    assert 13 not in {m["id"] for m in final}                                # nothing read after that
    assert dump(db) == pristine[2]
