"""RemoteClient: the EngineClient of a database on another machine, reached over SSH.

It has the calls the console makes of an EngineClient, with the same results and errors, and
adds a connection that can drop: `connect()` opens it (RemoteError names what is missing or
wrong), `on_state` hears of every change ("connecting", "connected", "lost", with one line to
show). A dropped link is reopened with backoff; reads asked meanwhile wait for it and are
asked again, a watch picks up where its last update left off, and a change (a command, a
start) is never sent twice: one that was cut off says it may or may not have happened.
"""
from __future__ import annotations

import asyncio
import base64
import collections
import copy
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from ..client import POLL_S, EngineError, Update
from ..config import Config, validate
from ..export.dispatch import check_targets
from ..export.files import write_atomic_many
from ..store import StoreError
from .address import SshAddress
from .calls import CALLS
from .protocol import MAX_ANSWER_BYTES, ProtocolError, check_hello, decode, encode, inflate, unpack_columns

CONNECT_TIMEOUT_S = 30.0
BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)
STDERR_KEPT = 4096
RETRIES = 3               # a read whose answer breaks the link this often is given up
PATIENT = {"wait"}        # reads that wait for a lost link as long as it takes (and a watch)
HELD_ANSWERS = 64


class RemoteError(EngineError):
    """The remote database cannot be served: ssh failed, `rla` is missing there, another
    protocol version, not a database. One line that says which."""

    def __init__(self, cause: str):
        super().__init__(" ".join(cause.split()))


class LinkLost(Exception):
    """The connection went away with a call or a stream still open."""


class _Link:
    """One ssh process speaking the protocol; dead for good once `lost` is set."""

    def __init__(self, proc: asyncio.subprocess.Process, dead_after_s: float):
        self.proc, self.dead_after_s = proc, dead_after_s
        self.pending: dict[int, asyncio.Future] = {}
        self.streams: dict[int, asyncio.Queue] = {}
        self.lost: str | None = None
        self.stderr: collections.deque[bytes] = collections.deque(maxlen=64)
        self._next = 0
        self._buffer = bytearray()
        self._scanned = 0              # how far the buffer is known to hold no newline
        self.bytes_in = 0

    def stderr_tail(self) -> str:
        text = b"".join(self.stderr)[-STDERR_KEPT:].decode(errors="replace")
        return " ".join(text.split())

    async def read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(4096):
            self.stderr.append(chunk)

    async def next_message(self, silent_s: float | None = None) -> dict | None:
        """The next message; None at the end of the stream. A link silent for `dead_after_s`
        (the server beats every BEAT_S) is dead: a cut network is found without ssh's help;
        `silent_s`: a longer silence allowed (before the server's first line: a login, a jump host)."""
        assert self.proc.stdout is not None
        # a whole history is one line of tens of megabytes: each byte is scanned and copied once
        while (end := self._buffer.find(b"\n", self._scanned)) < 0:
            self._scanned = len(self._buffer)
            chunk = await asyncio.wait_for(self.proc.stdout.read(1 << 20), silent_s or self.dead_after_s)
            if not chunk:
                return None
            self.bytes_in += len(chunk)
            self._buffer += chunk
            if len(self._buffer) > MAX_ANSWER_BYTES:
                raise ProtocolError(f"an answer over {MAX_ANSWER_BYTES} bytes")
        line = bytes(self._buffer[:end])
        del self._buffer[:end + 1]
        self._scanned = 0
        return decode(line)

    async def ask(self, call: str, args: dict, unless: str | None = None) -> asyncio.Future:
        """Send a call; its answer comes in the returned future (LinkLost if the link goes first).
        The id is taken and the future registered before the write yields: a concurrent call
        cannot take the same id, nor an early answer find no one waiting."""
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        rid = self._take_id()
        self.pending[rid] = future
        try:
            await self.write({"id": rid, "call": call, "args": args, **({"unless": unless} if unless else {})})
        except BaseException:
            # nobody will await it: a link lost later must not fail it unseen ("never retrieved")
            self.pending.pop(rid, None)
            future.cancel()
            raise
        return future

    async def stream(self, call: str, args: dict) -> tuple[int, asyncio.Queue]:
        """Open a stream (a watch): its messages come in the returned queue, {"lost": why} last if the link goes."""
        queue: asyncio.Queue = asyncio.Queue()
        rid = self._take_id()
        self.streams[rid] = queue
        await self.write({"id": rid, "call": call, "args": args})
        return rid, queue

    def _take_id(self) -> int:
        if self.lost is not None:
            raise LinkLost(self.lost)
        self._next += 1
        return self._next

    async def write(self, message: dict) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(encode(message))
            await self.proc.stdin.drain()
        except (ConnectionError, RuntimeError) as e:
            raise LinkLost(f"cannot write to ssh: {e}") from None

    def cancel_stream(self, rid: int) -> None:
        """Without waiting: it runs where a watch is being closed or cancelled."""
        self.streams.pop(rid, None)
        if self.lost is None and self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.write(encode({"id": self._take_id(), "call": "cancel", "args": {"stream": rid}}))

    def deliver(self, message: dict) -> None:
        rid = message.get("id")
        if rid in self.streams:
            self.streams[rid].put_nowait(message)
        elif rid in self.pending:
            future = self.pending.pop(rid)
            if not future.done():
                future.set_result(message)

    def close(self, why: str) -> None:
        if self.lost is None:
            self.lost = why
        for future in self.pending.values():
            if not future.done():
                future.set_exception(LinkLost(why))
        self.pending.clear()
        for queue in self.streams.values():
            queue.put_nowait({"lost": why})
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()      # else its transport outlives the process (and the loop)


class RemoteClient:
    dead_after_s = 10.0        # a link silent this long is given up (the server beats every 2 s)
    connect_timeout_s = CONNECT_TIMEOUT_S   # how long a connection may take to say its first line
    call_wait_s = 60.0         # how long a read waits for a lost link to come back before it fails

    def __init__(self, address: SshAddress):
        self.location = address
        self.state, self.state_text = "new", ""
        self.on_state: list[Callable[[str, str], None]] = []
        self.server_version = ""
        self._link: _Link | None = None
        self._up = asyncio.Event()           # set while a link is open
        self._lost = asyncio.Event()         # set when the open link went away: the keeper reopens it
        self._keeper: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()
        self._closed = False
        self._connecting = asyncio.Lock()
        self._received = 0
        # (call, args) -> (tag, result) of reads asked before: an unchanged answer is not sent again
        self._held: dict[tuple[str, str] | None, tuple[str, Any]] = {}

    # -- the connection ------------------------------------------------------------------------
    def _say(self, state: str, text: str) -> None:
        self.state, self.state_text = state, text
        for listener in list(self.on_state):
            listener(state, text)

    async def connect(self) -> None:
        """Open the connection (RemoteError says why it cannot be); after that it is kept open."""
        async with self._connecting:          # two first calls at once open one link
            if self._link is not None and self._link.lost is None:
                return
            self._say("connecting", "connecting over ssh…")
            try:
                link = await self._open()
            except RemoteError as e:
                self._say("failed", str(e))
                raise
            self._attach(link)
            # made once: a reconnect must not make it again where it has gone (a disk unmounted meanwhile)
            self.location = dataclasses.replace(self.location, create=False)
            if self._keeper is None:
                self._keeper = asyncio.ensure_future(self._keep())

    @property
    def ssh_pid(self) -> int | None:
        """The pid of the ssh process of the open link (None while none is open)."""
        link = self._link
        return link.proc.pid if link is not None and link.lost is None else None

    @property
    def bytes_received(self) -> int:
        """Bytes read from the remote end since this client was made (a benchmark's measure)."""
        return self._received + (self._link.bytes_in if self._link is not None else 0)

    def _attach(self, link: _Link) -> None:
        if self._link is not None:
            self._received += self._link.bytes_in
        self._link = link
        self._own(self._read(link))
        self._up.set()
        self._say("connected", f"connected over ssh (rla {self.server_version})")

    async def _open(self) -> _Link:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.location.ssh_argv(), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True, limit=MAX_ANSWER_BYTES)
        except OSError as e:
            raise RemoteError(f"cannot start ssh: {e.strerror or e}") from None
        link = _Link(proc, self.dead_after_s)
        self._own(link.read_stderr())
        try:
            first = await link.next_message(self.connect_timeout_s)
            if first is None:
                why = await self._why_ended(link)
                link.close(why)
                raise RemoteError(why)
            check_hello(first)
        except TimeoutError:
            await self._discard(link, "no answer")
            raise RemoteError(f"{self.location.host}: no answer from `{self.location.rla} serve` within "
                              f"{self.connect_timeout_s:.0f} s {link.stderr_tail()}".strip()) from None
        except ProtocolError as e:
            await self._discard(link, str(e))
            raise RemoteError(f"{self.location.host}: {e}") from None
        except BaseException:              # cancelled (the console closed meanwhile): no ssh left behind
            link.close("cancelled")
            raise
        self.server_version = str(first.get("version", "?"))
        return link

    @staticmethod
    async def _discard(link: _Link, why: str) -> None:
        """Close the link and reap its ssh (killed, it exits at once): nothing of it outlives the call."""
        link.close(why)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(link.proc.wait(), 5.0)

    async def _why_ended(self, link: _Link) -> str:
        code = await link.proc.wait()
        await asyncio.sleep(0.05)               # the last of its stderr
        tail, host, rla = link.stderr_tail(), self.location.host, self.location.rla
        if code == 127 or "command not found" in tail or "No such file" in tail:
            return (f"{host}: `{rla}` was not found there ({tail}). Install this project on {host}, or name its "
                    f"command in the address: ssh://{host}{self.location.path}?rla=/path/to/venv/bin/rla")
        if "invalid choice: 'serve'" in tail:
            return f"{host}: the rla there has no `serve` command (an older version): update it ({tail})"
        if code == 255:
            return f"ssh to {host} failed: {tail or 'exit code 255'}"
        return f"{host}: `{rla} serve` exited with code {code}: {tail or 'no output'}"

    def _own(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _read(self, link: _Link) -> None:
        why = "closed"
        try:
            while (message := await link.next_message()) is not None:
                link.deliver(message)
            code = await link.proc.wait()
            why = f"ssh exited with code {code}" + (f": {link.stderr_tail()}" if link.stderr_tail() else "")
        except TimeoutError:
            why = f"no answer for {link.dead_after_s:.0f} s"
        except ProtocolError as e:
            why = f"a garbled answer ({e})"
        except (ConnectionError, OSError) as e:
            why = str(e)
        finally:
            link.close(why)
            if link is self._link:
                self._up.clear()
                self._lost.set()

    async def _keep(self) -> None:
        """Reopen a lost link, waiting longer after each failure; says each step on `on_state`."""
        while not self._closed:
            await self._lost.wait()
            self._lost.clear()
            for attempt in range(1, 1 << 30):
                if self._closed:
                    return
                why = self._link.lost if self._link is not None else "closed"
                delay = BACKOFF_S[min(attempt - 1, len(BACKOFF_S) - 1)]
                self._say("lost", f"connection lost ({why}); reconnecting in {delay:g} s (attempt {attempt})")
                await asyncio.sleep(delay)
                try:
                    link = await self._open()
                    if self._closed:
                        link.close("closed")
                        return
                    self._attach(link)
                    break
                except RemoteError as e:
                    self._say("lost", f"reconnecting failed ({e})")

    async def _ready(self, wait: bool, patient: bool = False) -> _Link:
        """The open link. Without it: a change fails at once (`wait` false); a read waits up to
        call_wait_s for the link to come back; a watch or a wait (`patient`) as long as it takes
        (a laptop asleep for an hour: the run is still there when it wakes)."""
        while True:
            if self._closed:
                raise EngineError(f"the connection to {self.location.label} was closed")
            if self._link is None and self._keeper is None:
                await self.connect()
            link = self._link
            if link is not None and link.lost is None:
                return link
            if not wait:
                raise EngineError(f"{self.location.label} is not connected ({self.state_text}): nothing was sent")
            try:
                await asyncio.wait_for(self._up.wait(), None if patient else self.call_wait_s)
            except TimeoutError:
                raise EngineError(f"{self.location.label} is unreachable: {self.state_text}") from None

    async def close(self) -> None:
        self._closed = True
        self._up.set()            # whoever waits for the link wakes, and finds it closed
        if self._keeper is not None:
            self._keeper.cancel()
        link, self._link = self._link, None
        if link is not None and link.proc.returncode is None:
            if link.proc.stdin is not None:
                link.proc.stdin.close()             # the server's stdin ends: it finishes and exits
            try:
                await asyncio.wait_for(link.proc.wait(), 2.0)
            except TimeoutError:
                pass
        if link is not None:
            await self._discard(link, "closed")
        for task in list(self._tasks):
            task.cancel()

    # -- calls ---------------------------------------------------------------------------------
    async def _call(self, name: str, /, **args: Any) -> Any:
        call = CALLS[name]
        key = (name, repr(sorted(args.items()))) if call.held else None
        for attempt in range(1, RETRIES + 1):
            link = await self._ready(wait=call.retry, patient=name in PATIENT)
            held = self._held.get(key) if key else None
            try:
                answer = await (await link.ask(name, args, unless=held[0] if held else None))
            except LinkLost as e:
                if call.retry and attempt < RETRIES:
                    continue
                if call.retry:
                    raise EngineError(f"the connection to {self.location.host} was lost {RETRIES} times while "
                                      f"`{name}` was answered ({e})") from None
                raise EngineError(f"the connection to {self.location.host} was lost before `{name}` was answered "
                                  f"({e}): it may or may not have been carried out") from None
            if "error" in answer:
                raise self._error(answer["error"])
            if answer.get("same") and held is not None:
                return copy.deepcopy(held[1])
            if key is not None and isinstance(answer.get("tag"), str):
                if len(self._held) >= HELD_ANSWERS:
                    self._held.pop(next(iter(self._held)))
                self._held[key] = (answer["tag"], copy.deepcopy(answer.get("ok")))
            return answer.get("ok")
        raise AssertionError("unreachable")

    def _error(self, error: Any) -> Exception:
        if not isinstance(error, dict):
            return EngineError(f"{self.location.host}: a garbled error")
        message = str(error.get("message", ""))
        if error.get("kind") == "engine":
            log = error.get("log")
            return EngineError(message, log if isinstance(log, str) else None, error.get("run_id"))
        if error.get("kind") == "store":
            return StoreError(message)
        return EngineError(f"{self.location.host}: {message}")

    async def watch(self, run_id: str, interval: float = POLL_S) -> AsyncIterator[Update]:
        """As EngineClient.watch; across a dropped link it goes on from its last update."""
        at: dict[str, Any] = {"after_iteration": 0, "after_event": 0, "status": None}
        while True:
            link = await self._ready(wait=True, patient=True)
            try:
                rid, queue = await link.stream("watch", {"run_id": run_id, **at})
            except LinkLost:
                continue
            shown: dict = {}                  # the run row as last shown: updates carry what changed
            try:
                while True:
                    message = await queue.get()
                    if "lost" in message:
                        break
                    if "update" not in message:
                        if "error" in message:
                            raise self._error(message["error"])
                        return
                    update = self._update(message["update"], shown)
                    shown = dict(update.run)
                    at = {"after_iteration": update.after_iteration, "after_event": update.after_event,
                          "status": update.run["status"]}
                    yield update
            finally:
                if rid in link.streams:
                    link.cancel_stream(rid)

    @staticmethod
    def _update(u: dict, shown: dict) -> Update:
        run = {k: v for k, v in {**shown, **u["run"]}.items() if k not in u.get("run_gone", ())}
        return Update(run, unpack_columns(u["metrics"]), u["events"], bool(u["rewound"]),  # type: ignore[arg-type]
                      int(u["after_iteration"]), int(u["after_event"]))

    # -- the EngineClient calls the console makes ------------------------------------------------
    async def start(self, cfg: Config, *, preset: str | None = None, name: str | None = None,
                    group: str | None = None) -> str:
        validate(cfg)
        return await self._call("start", config=cfg.to_toml(), preset=preset, name=name, group=group)

    async def start_ablation(self, cfg: Config, *, preset: str | None, seeds: list[int], budget: int,
                             arms: list[str], jobs: int = 1) -> tuple[str, str]:
        validate(cfg)
        group, first = await self._call("start_ablation", config=cfg.to_toml(), preset=preset, seeds=list(seeds),
                                        budget=budget, arms=list(arms), jobs=jobs)
        return group, first

    async def group_runs(self, group: str) -> list[str]:
        return await self._call("group_runs", group=group)

    async def resume_run(self, run_id: str, iterations: int | None = None, accept_unowned: bool = False) -> None:
        await self._call("resume_run", run_id=run_id, iterations=iterations, accept_unowned=accept_unowned)

    async def command(self, run_id: str, kind: str, payload: dict | None = None) -> int:
        return await self._call("command", run_id=run_id, kind=str(kind), payload=payload)

    async def stop(self, run_id: str) -> int:
        return await self._call("command", run_id=run_id, kind="stop", payload=None)

    async def list_runs(self, include_archived: bool = False) -> list:
        return await self._call("list_runs", include_archived=include_archived)

    async def run_summaries(self, keys: list[str], include_archived: bool = False) -> list[dict]:
        return await self._call("run_summaries", keys=list(keys), include_archived=include_archived)

    async def metric_names(self) -> list[str]:
        return await self._call("metric_names")

    async def config_fields(self) -> list[str]:
        return await self._call("config_fields")

    async def flat_configs(self, run_ids: list[str] | None = None) -> dict[str, dict]:
        return await self._call("flat_configs", run_ids=None if run_ids is None else list(run_ids))

    async def final_values(self, keys: list[str], run_ids: list[str] | None = None) -> dict[str, dict[str, float]]:
        return await self._call("final_values", keys=list(keys), run_ids=None if run_ids is None else list(run_ids))

    async def best_values(self, keys: list[str], run_ids: list[str] | None = None) -> dict[str, dict[str, float]]:
        return await self._call("best_values", keys=list(keys), run_ids=None if run_ids is None else list(run_ids))

    async def latest_metrics(self, run_id: str) -> dict[str, float]:
        return await self._call("latest_metrics", run_id=run_id)

    async def columns(self, run_id: str, after_iteration: int = 0) -> dict:
        return unpack_columns(await self._call("columns", run_id=run_id, after_iteration=after_iteration))

    async def events_at(self, run_id: str, iteration: int, kinds: list[str] | None = None) -> list:
        return await self._call("events_at", run_id=run_id, iteration=iteration,
                                kinds=None if kinds is None else list(kinds))

    async def tasks(self, run_id: str, statuses: list[str] | None = None) -> list:
        return await self._call("tasks", run_id=run_id,
                                statuses=None if statuses is None else [str(s) for s in statuses])

    async def series(self, run_id: str, key: str) -> tuple[list[int], list[float]]:
        iterations, values = await self._call("series", run_id=run_id, key=key)
        return iterations, values

    async def search_runs(self, query: str, include_archived: bool = False) -> list[str]:
        return await self._call("search_runs", query=query, include_archived=include_archived)

    async def set_notes(self, run_id: str, notes: str) -> None:
        await self._call("set_notes", run_id=run_id, notes=notes)

    async def set_tags(self, run_id: str, tags: list[str]) -> None:
        await self._call("set_tags", run_id=run_id, tags=list(tags))

    async def set_archived(self, run_id: str, archived: bool = True) -> None:
        await self._call("set_archived", run_id=run_id, archived=archived)

    async def delete_run(self, run_id: str) -> None:
        await self._call("delete_run", run_id=run_id)

    async def run(self, run_id: str):
        return await self._call("run", run_id=run_id)

    async def wait(self, run_id: str, poll: float = 0.2) -> str:
        return await self._call("wait", run_id=run_id)

    async def log_text(self, run_id: str, lines: int = 20) -> str:
        return await self._call("log_tail", run_id=run_id, lines=lines)

    async def export(self, run_ids: list[str], fmt: str, out: Path, force: bool = False,
                     charts: list[list[str]] | None = None, group_by: str | None = None) -> str:
        """Rendered there, beside the database, and written here: the targets are checked here
        first (as a local export checks them), so a refused one costs no rendering."""
        from ..export.formats import ExportInputError
        try:
            paths = check_targets(None, fmt, out, force)
        except ExportInputError as e:
            raise EngineError("export failed (exit 2)", f"rla export: {e}") from None
        result = await self._call("export", run_ids=list(run_ids), fmt=fmt, charts=charts, group_by=group_by)
        files = {p: inflate(base64.b64decode(f["zb"])) for p, f in zip(paths, result["files"]) if f}
        write_atomic_many(files, force)
        line = str(result["line"])
        for theirs, ours in zip(result.get("paths", []), paths):
            line = line.replace(str(theirs), str(ours))
        return f"{line} (from {self.location.host})"
