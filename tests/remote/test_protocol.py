"""The wire of `rla serve` (rla_engine/remote/protocol.py) and the addresses of remote databases
(address.py), as units: no ssh, no server."""
import base64
import dataclasses
import json
import math
import re
import shlex
import zlib

import numpy as np
import pytest

from rla_engine.remote.address import AddressError, SshAddress, parse_location
from rla_engine.remote.protocol import (COMPRESS_OVER, MAX_REQUEST_BYTES, PROTOCOL, ProtocolError, check_hello,
                                        decode, encode, hello, pack_columns, unpack_columns)


def round_trip(message):
    line = encode(message)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    return decode(line[:-1])


def test_a_message_round_trips_with_nan_inf_big_ints_and_unicode():
    message = {"id": 7, "ok": {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "big": 2 ** 200,
                               "neg": -(2 ** 70), "text": "μ ≥ 1 — 日本語 \u2028 \"q\" \\ \n\t", "emoji": "🎲",
                               "nested": [[1.5, [math.nan]], {"k": -math.inf}], "none": None, "t": True,
                               "tuple": (1, 2)}}
    back = round_trip(message)
    ok = back["ok"]
    assert math.isnan(ok["nan"]) and ok["inf"] == math.inf and ok["-inf"] == -math.inf
    assert ok["big"] == 2 ** 200 and ok["neg"] == -(2 ** 70)
    assert ok["text"] == message["ok"]["text"] and ok["emoji"] == "🎲"
    assert ok["nested"][0][0] == 1.5 and math.isnan(ok["nested"][0][1][0]) and ok["nested"][1]["k"] == -math.inf
    assert ok["none"] is None and ok["t"] is True and ok["tuple"] == [1, 2]


def test_a_line_is_json_without_nan_tokens():
    line = encode({"v": math.nan})
    json.loads(line, parse_constant=lambda name: pytest.fail(f"{name} on the wire"))


def test_a_string_that_looks_like_an_encoded_float_is_not_a_float():
    # {"float": "nan"} is how NaN travels; a user's own text "nan" stays text
    back = round_trip({"a": "nan", "b": {"float": "1.5"}, "c": {"float": "nan", "x": 1}})
    assert back == {"a": "nan", "b": {"float": "1.5"}, "c": {"float": "nan", "x": 1}}


def test_an_object_shaped_like_the_float_marker_stays_an_object():
    # a payload or a config may hold {"float": "nan"} itself: it travels escaped, not as NaN
    back = round_trip({"a": {"float": "nan"}, "b": {"escaped": {"float": "inf"}}, "c": [{"float": "-inf"}]})
    assert back == {"a": {"float": "nan"}, "b": {"escaped": {"float": "inf"}}, "c": [{"float": "-inf"}]}
    assert math.isnan(round_trip({"a": float("nan")})["a"])


def test_a_big_message_is_compressed_and_round_trips():
    small = {"id": 1, "ok": "x" * 100}
    assert b'"z"' not in encode(small)
    big = {"id": 2, "ok": [{"key": f"metric/{i}", "value": i / 7, "nan": math.nan} for i in range(2000)]}
    line = encode(big)
    assert len(json.dumps(big, default=str)) > COMPRESS_OVER
    assert line.startswith(b'{"z":"') and len(line) < len(json.dumps(big, default=str)) / 3
    back = decode(line)
    assert back["id"] == 2 and len(back["ok"]) == 2000 and back["ok"][1999]["key"] == "metric/1999"
    assert all(math.isnan(x["nan"]) for x in back["ok"])


def test_incompressible_text_over_the_limit_is_sent_plain():
    noise = base64.b64encode(np.random.default_rng(0).bytes(COMPRESS_OVER * 2)).decode()
    line = encode({"id": 3, "ok": noise})
    assert line.startswith(b'{"id"')
    assert decode(line)["ok"] == noise


@pytest.mark.parametrize("line, why", [
    (b'{"z": 5}', "not a string"),
    (b'{"z": "not base64!"}', "does not inflate"),
    (b'{"z": "' + base64.b64encode(b"not zlib") + b'"}', "does not inflate"),
    (b'{"z": "' + base64.b64encode(zlib.compress(b"[1, 2]")) + b'"}', "not an object"),
    (b'{"z": "' + base64.b64encode(zlib.compress(b"{nope")) + b'"}', "not JSON"),
    (b'{"z": "' + base64.b64encode(zlib.compress(b"{\"a\": 1}")[:-3]) + b'"}', "cut short"),
    (b"[1, 2]", "not an object"),
    (b'"text"', "not an object"),
    (b"{", "not JSON"),
    (b"\xff\xfe", "not JSON"),
    (b'{"a": NaN}', "not JSON"),
    (b'{"a": Infinity}', "not JSON"),
    (b"[" * 100_000, "not JSON"),
    (b"", "not JSON"),
])
def test_a_malformed_line_is_a_protocol_error(line, why):
    with pytest.raises(ProtocolError, match=why):
        decode(line)


def test_a_compression_bomb_stops_at_the_limit():
    bomb = b'{"a":"' + b"x" * 5_000_000 + b'"}'
    line = b'{"z":"' + base64.b64encode(zlib.compress(bomb, 9)) + b'"}'
    assert len(line) < MAX_REQUEST_BYTES
    with pytest.raises(ProtocolError, match="inflates to over"):
        decode(line, MAX_REQUEST_BYTES)
    # padding after a whole message is no way round the limit either
    padded = b'{"z":"' + base64.b64encode(zlib.compress(b'{"a":1}' + b" " * 5_000_000, 9)) + b'"}'
    with pytest.raises(ProtocolError, match="inflates to over"):
        decode(padded, MAX_REQUEST_BYTES)
    assert decode(line)["a"] == "x" * 5_000_000        # the answer limit is far larger


def test_a_line_over_the_limit_is_refused():
    with pytest.raises(ProtocolError, match="at most 10"):
        decode(b'{"a": "' + b"x" * 20 + b'"}', 10)


def test_columns_round_trip_with_nan_inf_and_empty():
    columns = {
        "a": (np.array([1, 2, 3], dtype=np.int64), np.array([0.5, math.nan, -math.inf]), np.array([1.0, 2.0, 3.0])),
        "b": (np.array([1.0, 5.0]), np.array([math.inf, 1e308]), np.array([math.nan, 0.0])),
        "empty": (np.array([], dtype=np.int64), np.array([]), np.array([])),
        "i32": (np.array([7], dtype=np.int32), np.array([1], dtype=np.int8), np.array([2], dtype=np.uint16)),
    }
    back = unpack_columns(round_trip({"ok": pack_columns(columns)})["ok"])
    assert list(back) == list(columns)
    for key, cols in columns.items():
        for mine, theirs in zip(cols, back[key]):
            np.testing.assert_array_equal(mine, theirs)
            assert theirs.dtype in (np.int64, np.float64)
            assert theirs.flags.writeable          # the reader's own arrays (a plot appends to them)
    assert unpack_columns(pack_columns(columns))["a"][0].dtype == np.int64


@pytest.mark.parametrize("packed, why", [
    ([], "not an object"),
    ({"k": "x"}, "not three columns"),
    ({"k": [1, 2]}, "not three columns"),
    ({"k": [*pack_columns({"k": (np.ones(2),) * 3})["k"][:2], {"a": "<f8", "zb": 5}]}, "not a packed array"),
    ({"k": [{"a": "|O", "zb": ""}] * 3}, "not a packed array"),
    ({"k": [{"a": "<f8", "zb": "!!"}] * 3}, "does not unpack"),
    ({"k": [{"a": "<f8", "zb": base64.b64encode(b"raw").decode()}] * 3}, "does not unpack"),
    ({"k": [{"a": "<f8", "zb": base64.b64encode(zlib.compress(b"12345")).decode()}] * 3}, "does not unpack"),
])
def test_malformed_columns_are_protocol_errors(packed, why):
    with pytest.raises(ProtocolError, match=why):
        unpack_columns(packed)


def test_columns_of_different_lengths_are_refused():
    packed = pack_columns({"k": (np.array([1, 2]), np.array([1.0]), np.array([1.0, 2.0]))})
    with pytest.raises(ProtocolError, match="different lengths"):
        unpack_columns(packed)


def test_hello_of_this_protocol_passes_and_another_names_both_versions():
    check_hello(hello("/x.db", "1.2.3"))
    with pytest.raises(ProtocolError, match="cannot open"):
        check_hello(hello("/x.db", "1.2.3", "cannot open /x.db"))
    other = {**hello("/x.db", "9.9"), "protocol": 99}
    with pytest.raises(ProtocolError) as mismatch:
        check_hello(other)
    text = str(mismatch.value)
    assert "protocol 99" in text and f"protocol {PROTOCOL}" in text and "9.9" in text
    for stranger in ({}, {"rla": "other", "protocol": PROTOCOL}, {"protocol": PROTOCOL}):
        with pytest.raises(ProtocolError, match="did not answer as `rla serve`"):
            check_hello(stranger)
    with pytest.raises(ProtocolError, match="protocol None"):
        check_hello({"rla": "serve"})


# -- addresses -------------------------------------------------------------------------------------------
def test_a_local_path_stays_a_path(tmp_path):
    assert parse_location(str(tmp_path / "a.db")) == tmp_path / "a.db"
    assert parse_location(tmp_path) == tmp_path


@pytest.mark.parametrize("text, host, user, port, path, rla", [
    ("ssh://box/data/runs.db", "box", None, None, "/data/runs.db", "rla"),
    ("ssh://me@box.lan:2222/data/runs.db?rla=/opt/venv/bin/rla", "box.lan", "me", 2222, "/data/runs.db",
     "/opt/venv/bin/rla"),
    ("ssh://box/~/runs.db", "box", None, None, "~/runs.db", "rla"),
    ("ssh://[::1]:22/a%20b/r%3Bs.db", "[::1]", None, 22, "/a b/r;s.db", "rla"),
    ("ssh://box_1/x.db", "box_1", None, None, "/x.db", "rla"),
])
def test_an_ssh_address_is_parsed(text, host, user, port, path, rla):
    address = parse_location(text)
    assert address == SshAddress(host=host, path=path, user=user, port=port, rla=rla)
    assert parse_location(str(address)) == address          # its text names it again


@pytest.mark.parametrize("text, why", [
    ("ssh://-oProxyCommand=touch%20x/db", "host"),
    ("ssh://-oProxyCommand=x/db", "host"),
    ("ssh://-x/db", "host"),
    ("ssh:///db", "host"),
    ("ssh://ho st/db", "host"),
    ("ssh://host;rm/db", "host"),
    ("ssh://$(id)/db", "host"),
    ("ssh://-l@box/db", "user"),
    ("ssh://-oProxyCommand=x@box/db", "user"),
    ("ssh://a;b@box/db", "user"),
    ("ssh://me:secret@box/db", "password"),
    ("ssh://box", "no database path"),
    ("ssh://box/", "no database path"),
    ("ssh://box:99999/db", "box:99999"),
    ("ssh://box:x/db", "box:x"),
    ("ssh://box/a%00b", "control character"),
    ("ssh://box/a%0Ab", "control character"),
    ("ssh://box/db?rla=-oProxyCommand=x", "rla="),
    ("ssh://box/db?rla=", "rla="),
    ("ssh://box/db?rla=a%0Ab", "rla="),
    ("ssh://box/db?cmd=x", "unknown option 'cmd'"),
])
def test_a_bad_ssh_address_is_refused_naming_the_part(text, why):
    with pytest.raises(AddressError, match=re.escape(why)):
        parse_location(text)


def test_ssh_argv_puts_every_user_part_after_the_options_and_quotes_the_remote_command(monkeypatch):
    monkeypatch.setenv("RLA_SSH", "ssh -F '/my dir/config'")
    hostile = "/data/a b;touch x;$(touch y)/`id`/'q\"/runs.db"
    address = SshAddress(host="box", path=hostile, user="me", port=2200, rla="/opt/my venv/bin/rla")
    argv = address.ssh_argv()
    assert argv[:3] == ["ssh", "-F", "/my dir/config"]
    dashdash = argv.index("--")
    assert argv[dashdash + 1] == "box" and len(argv) == dashdash + 3
    assert argv[argv.index("-p") + 1] == "2200" and argv[argv.index("-l") + 1] == "me"
    assert "BatchMode=yes" in argv
    # what the remote shell splits the one command string into: exactly our words
    assert shlex.split(argv[-1]) == ["/opt/my venv/bin/rla", "serve", "--stdio", "--db", hostile]
    monkeypatch.delenv("RLA_SSH")
    assert SshAddress(host="box", path="/x.db").ssh_argv()[0] == "ssh"


def test_ssh_is_given_an_ipv6_host_bare_and_a_home_relative_command_to_expand():
    address = parse_location("ssh://[::1]:2200/x/runs.db?rla=~/my venv/bin/rla")
    assert isinstance(address, SshAddress) and str(address).startswith("ssh://[::1]:2200/")
    argv = address.ssh_argv()
    assert argv[-2] == "::1"
    # the remote shell expands the leading ~/ (the remote home) and takes the rest as one word
    assert argv[-1].startswith("~/'my venv/bin/rla' serve ")
    assert shlex.split(argv[-1])[0] == "~/my venv/bin/rla"


def test_create_is_asked_only_when_chosen():
    address = SshAddress(host="box", path="/x.db")
    assert "--create" not in address.ssh_argv()[-1]
    made = dataclasses.replace(address, create=True)
    assert shlex.split(made.ssh_argv()[-1])[-1] == "--create"
    assert made == address and str(made) == str(address)      # not part of the address: not in the recent list
