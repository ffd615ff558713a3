"""The wire between a console and `rla serve --stdio`: one JSON object per line, both ways.

    server, first:  {"rla": "serve", "protocol": 1, "version": "…", "db": "…"}    (or "error": why)
    request:        {"id": 7, "call": "list_runs", "args": {"include_archived": false}, "unless": "<tag>"}
    answer:         {"id": 7, "ok": <result>, "tag": "<tag>"}   or   {"id": 7, "error": {"kind": …, "message": …}}
                    or, when the result's tag is the request's `unless`: {"id": 7, "same": true}
    a stream:       {"id": 7, "update": {…}} … then its answer ("watch"; ended early by "cancel")
    a beat:         {"beat": 1}    when the server has had nothing to say for BEAT_S

A message whose JSON is longer than COMPRESS_OVER, and that deflates well (a sample of it tells),
is sent as {"z": "<base64 of zlib(JSON)>"}; short answers stay readable. Metric columns travel as
their raw bytes, deflated (pack_columns), or as plain numbers when they are few. NaN and ±inf
travel as {"float": "nan"} (strict JSON has none). The version is bumped whenever a call or a
message changes meaning; the server says its version first, and the console refuses another
with one line naming both.
"""
from __future__ import annotations

import base64
import hashlib
import json
import math
import zlib
from typing import Any

import numpy as np

PROTOCOL = 1
BEAT_S = 2.0                     # the server's heartbeat on an idle link
COMPRESS_OVER = 4096             # bytes of JSON
MAX_REQUEST_BYTES = 1 << 20      # a request line (the server refuses longer ones)
MAX_ANSWER_BYTES = 1 << 30       # an answer line (a report's files, compressed)


class ProtocolError(ValueError):
    """A line that is not a message of this protocol."""


FLOAT, ESCAPED = "float", "escaped"


def _plain(value: Any) -> Any:
    """NaN and ±inf as {"float": "nan"}: JSON has no such numbers, and a metric may hold them. A
    stored object of that very shape (a payload, a config) travels escaped, so it stays itself."""
    if isinstance(value, float) and not math.isfinite(value):
        return {FLOAT: repr(value)}
    if isinstance(value, dict):
        plain = {k: _plain(v) for k, v in value.items()}
        return {ESCAPED: plain} if len(plain) == 1 and next(iter(plain)) in (FLOAT, ESCAPED) else plain
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _restored(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and value.get(FLOAT) in ("nan", "inf", "-inf"):
            return float(value[FLOAT])
        if len(value) == 1 and isinstance(value.get(ESCAPED), dict):
            return {k: _restored(v) for k, v in value[ESCAPED].items()}
        return {k: _restored(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restored(v) for v in value]
    return value


def encode(message: dict) -> bytes:
    """One line (with its newline), compressed when that pays."""
    text = json.dumps(_plain(message), separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    data = text.encode()
    if len(data) > COMPRESS_OVER and _compressible(data):
        packed = base64.b64encode(zlib.compress(data, 6))
        if len(packed) < len(data):
            data = b'{"z":"' + packed + b'"}'
    return data + b"\n"


def tag_of(result: Any) -> str:
    """A short fingerprint of a result: a console sends its last one back (`unless`), and an
    unchanged result is answered by {"same": true} instead of again in full."""
    text = json.dumps(_plain(result), separators=(",", ":"), allow_nan=False)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _compressible(data: bytes) -> bool:
    """Whether deflating pays, judged on a sample: a history's columns are deflated already."""
    if len(data) <= 1 << 18:
        return True
    sample = data[: 1 << 16]
    return len(zlib.compress(sample, 1)) < 0.75 * len(sample)


def decode(line: bytes, limit: int = MAX_ANSWER_BYTES) -> dict:
    """The message of one line; ProtocolError names what is wrong with it."""
    if len(line) > limit:
        raise ProtocolError(f"a line of {len(line)} bytes (at most {limit})")
    try:
        message = json.loads(line, parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        raise ProtocolError(f"not JSON: {_short(e)}") from None
    if isinstance(message, dict) and message.keys() == {"z"}:
        if not isinstance(message["z"], str):
            raise ProtocolError("a compressed message that is not a string")
        try:
            packed = base64.b64decode(message["z"], validate=True)
        except ValueError as e:
            raise ProtocolError(f"a compressed message that does not inflate: {_short(e)}") from None
        return decode(inflate(packed, limit, "a compressed message"), limit)
    if not isinstance(message, dict):
        raise ProtocolError(f"a JSON {type(message).__name__}, not an object")
    try:
        return _restored(message)
    except RecursionError:
        raise ProtocolError("not JSON: nested too deeply") from None


def inflate(data: bytes, limit: int = MAX_ANSWER_BYTES, what: str = "deflated data") -> bytes:
    """zlib data inflated, never past `limit` bytes (a hostile end cannot fill this one's memory);
    ProtocolError if it is not whole."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit)
    except zlib.error as e:
        raise ProtocolError(f"{what} that does not inflate: {_short(e)}") from None
    if inflater.unconsumed_tail:
        raise ProtocolError(f"{what} that inflates to over {limit} bytes")
    if not inflater.eof:      # cut short: its checksum was never read
        raise ProtocolError(f"{what} that does not inflate: cut short")
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 200 else text[:199] + "…"


ARRAY_DTYPES = ("<i8", "<f8")


def pack_columns(columns: dict[str, tuple[np.ndarray, ...]]) -> dict[str, list[dict]]:
    """Metric columns (iterations, values, t) as their raw bytes, deflated: a 100k-iteration
    history is a few megabytes instead of a Python object per value, and NaN stays NaN."""
    return {key: [_pack(np.asarray(c)) for c in cols] for key, cols in columns.items()}


PLAIN_UNDER = 256      # values: a live update's few are JSON numbers, which the message's deflate shrinks together


def _pack(a: np.ndarray) -> dict:
    a = a.astype("<i8" if a.dtype.kind in "iu" else "<f8", copy=False)
    if len(a) < PLAIN_UNDER:
        return {"a": a.dtype.str, "v": a.tolist()}
    return {"a": a.dtype.str, "zb": base64.b64encode(zlib.compress(a.tobytes(), 1)).decode()}


def unpack_columns(packed: Any) -> dict[str, tuple[np.ndarray, ...]]:
    if not isinstance(packed, dict):
        raise ProtocolError("metric columns that are not an object")
    out = {}
    for key, cols in packed.items():
        if not isinstance(cols, list) or len(cols) != 3:
            raise ProtocolError(f"metric {key!r}: not three columns")
        arrays = tuple(_unpack(c) for c in cols)
        if len({len(a) for a in arrays}) != 1:
            raise ProtocolError(f"metric {key!r}: columns of different lengths")
        out[key] = arrays
    return out


def _unpack(col: Any) -> np.ndarray:
    if not isinstance(col, dict) or col.get("a") not in ARRAY_DTYPES:
        raise ProtocolError("a column that is not a packed array")
    dtype = np.int64 if col["a"] == "<i8" else np.float64
    if isinstance(col.get("v"), list):
        try:
            return np.array(col["v"], dtype=dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise ProtocolError(f"a column that does not unpack: {_short(e)}") from None
    if not isinstance(col.get("zb"), str):
        raise ProtocolError("a column that is not a packed array")
    try:
        raw = inflate(base64.b64decode(col["zb"], validate=True), what="a column")
        return np.frombuffer(raw, dtype=col["a"]).astype(dtype)
    except (ValueError, zlib.error) as e:
        raise ProtocolError(f"a column that does not unpack: {_short(e)}") from None


def hello(db: str, version: str, error: str | None = None) -> dict:
    message: dict[str, Any] = {"rla": "serve", "protocol": PROTOCOL, "version": version, "db": db}
    if error is not None:
        message["error"] = error
    return message


def check_hello(message: dict) -> None:
    """Raise ProtocolError unless this is a server of our protocol that opened its database."""
    if message.get("rla") != "serve":
        raise ProtocolError("the remote command did not answer as `rla serve`")
    theirs = message.get("protocol")
    if theirs != PROTOCOL:
        raise ProtocolError(f"the remote rla {message.get('version', '?')} speaks protocol {theirs}, this console "
                            f"speaks protocol {PROTOCOL}: install the same version of the project on both machines")
    if message.get("error"):
        raise ProtocolError(str(message["error"]))
