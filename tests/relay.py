"""A TCP relay usable as an ssh ProxyCommand, with a slow or broken network on demand.

    python tests/relay.py HOST PORT [--rate BYTES_PER_S] [--delay SECONDS] [--control FILE]

Copies stdin to a connection to HOST:PORT and that connection to stdout, both ways at once.
--rate    at most this many bytes per second, each way
--delay   each chunk is passed on this many seconds after it was read (one-way latency)
--control while FILE holds "cut", nothing is passed on either way and nothing is closed: a network
          partition. Bytes read meanwhile are held (as TCP would retransmit them) and delivered
          once FILE holds anything else or is removed.
Exits when either side closes. Writes nothing to stdout but the relayed bytes; errors go to stderr.
"""
from __future__ import annotations

import argparse
import os
import queue
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

CHUNK = 65536
POLL_S = 0.2
HELD_CHUNKS = 64        # a full "send buffer" blocks the reader, as a stalled TCP connection does


class Gate:
    """Open unless the control file holds "cut"; polled a few times a second."""

    def __init__(self, control: Path | None) -> None:
        self.control = control
        self.open = threading.Event()
        self._check()
        if control is not None:
            threading.Thread(target=self._poll, daemon=True).start()

    def _check(self) -> None:
        try:
            cut = self.control is not None and self.control.read_text().strip() == "cut"
        except OSError:
            cut = False
        if cut:
            self.open.clear()
        else:
            self.open.set()

    def _poll(self) -> None:
        while True:
            time.sleep(POLL_S)
            self._check()


class Direction:
    """One way of the relay: a reader thread fills a bounded queue, a writer thread paces it out."""

    def __init__(self, read: Callable[[], bytes], write: Callable[[bytes], None], args: argparse.Namespace,
                 gate: Gate, done: threading.Event) -> None:
        self.read, self.write, self.gate, self.done = read, write, gate, done
        self.rate, self.delay = args.rate, args.delay
        # pieces of 1/50 s at the given rate, so that throttled bytes flow smoothly
        self.piece = max(1, int(self.rate) // 50) if self.rate else CHUNK
        self.chunks: queue.Queue = queue.Queue(HELD_CHUNKS)
        self.closing = threading.Event()
        self._next_free = 0.0
        threading.Thread(target=self._reader, daemon=True).start()
        threading.Thread(target=self._writer, daemon=True).start()

    def _reader(self) -> None:
        while True:
            try:
                data = self.read()
            except OSError:
                data = b""
            if not data:
                self.closing.set()
                self.chunks.put(None)
                return
            self.chunks.put((time.monotonic(), data))

    def _writer(self) -> None:
        try:
            while (item := self.chunks.get()) is not None:
                read_at, data = item
                if (wait := read_at + self.delay - time.monotonic()) > 0:
                    time.sleep(wait)
                for start in range(0, len(data), self.piece):
                    if not self._pass_gate():
                        return
                    self._pace(len(data[start:start + self.piece]))
                    self.write(data[start:start + self.piece])
        except OSError:
            pass
        finally:
            self.done.set()

    def _pass_gate(self) -> bool:
        """Waits while cut; False if this side closed meanwhile (what is held is then dropped)."""
        while not self.gate.open.wait(POLL_S):
            if self.closing.is_set():
                return False
        return True

    def _pace(self, size: int) -> None:
        if not self.rate:
            return
        now = time.monotonic()
        if self._next_free > now:
            time.sleep(self._next_free - now)
        self._next_free = max(self._next_free, now) + size / self.rate


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("--rate", type=float, default=0.0, help="bytes per second each way (0: no limit)")
    parser.add_argument("--delay", type=float, default=0.0, help="one-way delay per chunk, seconds")
    parser.add_argument("--control", type=Path, help='while this file holds "cut", nothing is passed on')
    args = parser.parse_args(argv)
    try:
        sock = socket.create_connection((args.host, args.port), timeout=10)
    except OSError as e:
        print(f"relay: cannot connect to {args.host}:{args.port}: {e}", file=sys.stderr)
        return 1
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    gate, done = Gate(args.control), threading.Event()
    Direction(lambda: os.read(0, CHUNK), sock.sendall, args, gate, done)
    Direction(lambda: sock.recv(CHUNK), lambda data: write_all(1, data), args, gate, done)
    done.wait()
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    # the other direction's reader may still be blocked in a read: leave without joining it
    os._exit(code)
