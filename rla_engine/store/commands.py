"""Commands to a run's engine: adding them, parsing rows anyone may have written, stamping them applied."""
from __future__ import annotations

import json
from typing import Any

from ..vocabulary import CommandResult, CommandRow
from .base import EVENT_EXCERPT_CHARS, StoreBase, _now, dumps, insert_events

COMMAND_MAX_BYTES = 65_536      # a command payload is a few numbers; more is not a command


def parse_command(kind: bytes | None, payload: bytes | None) -> tuple[str, Any, str | None]:
    """(kind, payload, problem) of a stored command row written by anyone: the bytes may be
    anything, so every way they can be wrong is a reason to reject, never an exception."""
    kind_text = (kind or b"").decode("utf-8", "replace")[:80]
    if kind is None or not kind.isascii() or not kind_text.isidentifier():
        return kind_text, None, f"command kind {kind_text!r} is not a command name"
    raw = payload or b"{}"
    if len(raw) > COMMAND_MAX_BYTES:
        return kind_text, None, f"payload is {len(raw)} bytes; at most {COMMAND_MAX_BYTES}"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return kind_text, None, f"payload is not UTF-8 text (byte {e.start})"
    try:
        value = json.loads(text)
    except RecursionError:
        return kind_text, None, "payload is nested too deeply"
    except ValueError as e:       # also a number of thousands of digits (int conversion limit)
        return kind_text, None, f"payload is not valid JSON ({str(e)[:120]})"
    return kind_text, value, None


def payload_excerpt(payload: bytes | None) -> Any:
    """What a command's event keeps of its payload: small ones whole, big ones cut."""
    text = (payload or b"").decode("utf-8", "replace")
    if len(text) <= EVENT_EXCERPT_CHARS:
        return text
    return text[:EVENT_EXCERPT_CHARS] + f"… ({len(payload or b'')} bytes)"


class CommandsMixin(StoreBase):
    def add_command(self, run_id: str, kind: str, payload: dict | None = None) -> int:
        with self._write() as conn:
            cur = conn.execute("INSERT INTO commands (run_id, kind, payload_json, created_at) VALUES (?, ?, ?, ?)",
                               [run_id, kind, dumps(payload if payload is not None else {}), _now()])
            return int(cur.lastrowid)

    def pending_commands(self, run_id: str) -> list[CommandRow]:
        """Commands not yet applied, oldest first, as {id, kind, payload, problem, excerpt}. Any
        process can insert a row, so the raw bytes are parsed here and a bad row comes back with
        its `problem` (the engine rejects it with that reason) rather than raising."""
        rows = self.db.execute("SELECT id, CAST(kind AS BLOB), CAST(payload_json AS BLOB) FROM commands "
                               "WHERE run_id = ? AND applied_at IS NULL ORDER BY id", [run_id]).fetchall()
        out: list[CommandRow] = []
        for command_id, kind, payload in rows:
            kind_text, value, problem = parse_command(kind, payload)
            out.append({"id": command_id, "kind": kind_text, "payload": value, "problem": problem,
                        "excerpt": payload_excerpt(payload)})
        return out

    def expire_commands(self, run_id: str, result: CommandResult) -> int:
        """Close every command still pending for a run without applying it; return how many."""
        with self._write() as conn:
            return conn.execute("UPDATE commands SET applied_at = ?, outcome = ?, detail = ? "
                                "WHERE run_id = ? AND applied_at IS NULL",
                                [_now(), result.outcome, result.detail, run_id]).rowcount

    def finish_command(self, command_id: int, result: CommandResult, run_id: str | None = None, iteration: int = 0,
                       event: tuple[str, dict] | None = None) -> None:
        """Stamp a command applied with its result, and record its event in the same transaction."""
        with self._write() as conn:
            conn.execute("UPDATE commands SET applied_at = ?, outcome = ?, detail = ? WHERE id = ?",
                         [_now(), result.outcome, result.detail, command_id])
            if event is not None:
                insert_events(conn, [(run_id, iteration, _now(), event[0], dumps(event[1]))])

    def command(self, command_id: int) -> dict | None:
        """The command's row; `outcome` and `detail` are None while it is pending. A row closed
        before the table had them (migration 005) is read from its `result` text (kept whole as
        the detail where that text names no outcome)."""
        rows = list(self.db.query("SELECT * FROM commands WHERE id = ?", [command_id]))
        if not rows:
            return None
        row = rows[0]
        text = row.pop("result")
        if row["outcome"] is None and text is not None:
            row["outcome"], row["detail"] = CommandResult.parse(text) or (None, text)
        return row
