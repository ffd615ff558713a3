"""`rla serve --stdio --db PATH`: the served end of a remote console, started by the console over
the user's own SSH (address.py). It reads requests from stdin and writes answers to stdout (the
protocol in protocol.py), never listens on a port, and reaches only the database it was started
on through an EngineClient, as a local console would. Engines it starts run in their own
sessions: a dropped link ends this process, never a run.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from importlib import metadata
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..client import EngineClient, EngineError
from ..store import StoreError, open_store
from .calls import CALLS, STREAMS, BadArgs, checked_args
from .protocol import BEAT_S, MAX_REQUEST_BYTES, ProtocolError, decode, encode, hello, pack_columns, tag_of

FINISH_S = 10.0
STUCK_S = 60.0           # a write to the console that has not gone out in this long: nobody reads
Write = Callable[[bytes], Awaitable[None]]


def installed_version() -> str:
    """This project's version as installed (what a console names when the protocols differ)."""
    try:
        return metadata.version("rlanything")
    except metadata.PackageNotFoundError:
        return "unknown"


def error(kind: str, message: str, **more: Any) -> dict:
    return {"kind": kind, "message": " ".join(str(message).split())[:2000], **more}


def error_of(e: BaseException) -> dict:
    """What a failed call says: never a traceback, always the cause in one line."""
    if isinstance(e, EngineError):
        return error("engine", e.cause, log=e.log, run_id=e.run_id)
    if isinstance(e, BadArgs | ProtocolError):
        return error("bad_request", str(e))
    if isinstance(e, StoreError):
        return error("store", str(e))
    return error("failed", f"{type(e).__name__}: {e}")


class Server:
    def __init__(self, db_path: Path, write: Write, create: bool = True):
        self.db_path, self.create = db_path, create
        self.client = EngineClient(db_path)
        self._write = write
        self._lock = asyncio.Lock()
        self._last_write = time.monotonic()
        self.tasks: dict[Any, asyncio.Task] = {}
        self.streams: set[int] = set()           # ids of the tasks that stream (or wait) until cancelled

    async def send(self, message: dict) -> None:
        data = encode(message)
        async with self._lock:
            await self._write(data)
            self._last_write = time.monotonic()

    async def serve(self, reader: asyncio.StreamReader) -> None:
        """Answer requests until stdin ends (the console or its ssh went away) or a line is too long."""
        problem = await self._open()
        await self.send(hello(str(self.db_path), installed_version(), problem))
        if problem is not None:
            return
        beat = asyncio.ensure_future(self._beat())
        try:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError:
                    return                                    # stdin closed
                except asyncio.LimitOverrunError:
                    await self.send({"id": None, "error": error("bad_request", "a request line over "
                                                                f"{MAX_REQUEST_BYTES} bytes: closing")})
                    return
                if line.strip():
                    await self.handle(line)
        finally:
            beat.cancel()
            await self._finish()
            await self.client.close()

    async def _finish(self) -> None:
        """At the end of stdin: calls already asked are answered (a script's last request), a
        stream or a long wait is not waited for."""
        for rid in self.streams:
            if rid in self.tasks:
                self.tasks[rid].cancel()
        pending = [t for rid, t in self.tasks.items() if rid not in self.streams]
        if pending:
            _, late = await asyncio.wait(pending, timeout=FINISH_S)
            for task in late:
                task.cancel()

    async def _open(self) -> str | None:
        if not self.create and not self.db_path.exists():
            return (f"there is no database at {self.db_path} (a mistyped path?); to make a new one there, "
                    "tick “Create it if it is missing” in File ▸ Open remote database…")
        try:
            await asyncio.get_running_loop().run_in_executor(None, lambda: open_store(self.db_path).close())
        except StoreError as e:
            return f"{self.db_path}: {e}"
        return None

    async def _beat(self) -> None:
        """A line now and then on an idle link, so that the console can tell a dead link from a quiet one."""
        while True:
            await asyncio.sleep(BEAT_S / 2)
            if time.monotonic() - self._last_write >= BEAT_S:
                await self.send({"beat": 1})

    async def handle(self, line: bytes) -> None:
        try:
            request = decode(line, MAX_REQUEST_BYTES)
            rid = request.get("id")
            if isinstance(rid, bool) or not isinstance(rid, int):
                raise ProtocolError("a request needs an integer id")
        except ProtocolError as e:
            await self.send({"id": None, "error": error("bad_request", str(e))})
            return
        name = request.get("call")
        try:
            if rid in self.tasks:
                raise ProtocolError(f"id {rid} is already in use")
            if name == "cancel":
                self._cancel(request.get("args"))
                await self.send({"id": rid, "ok": None})
                return
            if not isinstance(name, str):
                raise ProtocolError(f"unknown call {str(name)[:80]!r}")
            if name in STREAMS:
                work = self._watch(rid, **checked_args(STREAMS[name], request.get("args", {})))
            elif name in CALLS:
                call = CALLS[name]
                unless = request.get("unless")
                work = self._answer(rid, call.run(self.client, **checked_args(call.args, request.get("args", {}))),
                                    (unless if isinstance(unless, str) else "") if call.held else None)
            else:
                raise ProtocolError(f"unknown call {str(name)[:80]!r}")
        except Exception as e:        # a request no check foresaw is refused too: the server goes on
            await self.send({"id": rid, "error": error_of(e)})
            return
        if name in STREAMS or name == "wait":      # only once its arguments passed: else it leaks
            self.streams.add(rid)
        task = self.tasks[rid] = asyncio.ensure_future(work)
        task.add_done_callback(lambda _: self._forget(rid))

    def _forget(self, rid: int) -> None:
        self.tasks.pop(rid, None)
        self.streams.discard(rid)

    def _cancel(self, args: Any) -> None:
        stream = args.get("stream") if isinstance(args, dict) else None
        # only a stream (or a wait): a start or a delete is not to be stopped half-way
        task = self.tasks.get(stream) if isinstance(stream, int) and stream in self.streams else None
        if task is not None:
            task.cancel()

    async def _answer(self, rid: int, work: Awaitable[Any], unless: str | None = None) -> None:
        """The result. For a call the console asks again and again (`unless` not None) the result
        comes with its tag, or, when that is `unless` (the one the console holds), only that it is
        the same: History's rows every 2 s cross once while nothing changes."""
        try:
            result = await work
        except asyncio.CancelledError:
            raise
        except Exception as e:           # any failure is an answer; the server goes on
            await self.send({"id": rid, "error": error_of(e)})
            return
        try:
            if unless is None:
                await self.send({"id": rid, "ok": result})
                return
            tag = tag_of(result)
            await self.send({"id": rid, "same": True} if tag == unless else {"id": rid, "ok": result, "tag": tag})
        except (TypeError, ValueError) as e:      # a result JSON cannot hold: still an answer, never silence
            await self.send({"id": rid, "error": error_of(e)})

    async def _watch(self, rid: int, run_id: str, after_iteration: int, after_event: int, status: str | None) -> None:
        async def stream() -> None:
            shown: dict = {}
            async for u in self.client.watch(run_id, after_iteration=after_iteration, after_event=after_event,
                                             status=status):
                # the run row's fields that changed since the last update: its config (2 kB) once
                changed = {k: v for k, v in u.run.items() if k not in shown or shown[k] != v}
                gone = [k for k in shown if k not in u.run]
                shown = dict(u.run)
                await self.send({"id": rid, "update": {
                    "run": changed, "run_gone": gone, "metrics": pack_columns(u.metrics), "events": u.events,
                    "rewound": u.rewound, "after_iteration": u.after_iteration, "after_event": u.after_event}})
        await self._answer(rid, stream())


async def serve_stdio(db_path: Path, create: bool) -> int:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_REQUEST_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    # nothing else may write to the protocol's stdout: a stray print would corrupt a message
    with contextlib.redirect_stdout(sys.stderr):
        def write_all(data: bytes) -> None:
            view = memoryview(data)
            while view:
                view = view[out.write(view) or 0:]

        async def write(data: bytes) -> None:
            try:
                await asyncio.wait_for(loop.run_in_executor(None, write_all, data), STUCK_S)
            except TimeoutError:
                # nobody has read for a minute: the link is dead but ssh has not noticed (a pulled
                # cable keeps TCP open for hours); a served database is never left watched by no one
                print(f"rla serve: no reader for {STUCK_S:.0f} s: exiting", file=sys.stderr, flush=True)
                os._exit(1)
        # the console may go away mid-answer: there is no one left to tell
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await Server(db_path, write, create).serve(reader)
    return 0


def main(db: str, create: bool = False) -> int:
    return asyncio.run(serve_stdio(Path(db).expanduser(), create))
