"""A database on another machine, watched and steered over the user's own SSH: `address` (where a
database is), `protocol` (the wire), `calls` and `server` (`rla serve --stdio`, the remote end),
`client` (RemoteClient, the console's end). Torch-free and Qt-free."""
from __future__ import annotations

from pathlib import Path

from ..client import EngineClient
from .address import AddressError, SshAddress, parse_location
from .client import RemoteClient, RemoteError

__all__ = ["AddressError", "RemoteClient", "RemoteError", "SshAddress", "client_for", "connected", "parse_location"]


def client_for(location: Path | SshAddress) -> EngineClient | RemoteClient:
    """The client of a database: local (a path) or remote (an ssh:// address)."""
    return RemoteClient(location) if isinstance(location, SshAddress) else EngineClient(location)


async def connected(address: SshAddress) -> RemoteClient:
    """A remote database's client, connected (ssh, its `rla serve`); RemoteError saying why it
    cannot be, with nothing of the attempt left running."""
    client = RemoteClient(address)
    try:
        await client.connect()
    except RemoteError:
        await client.close()
        raise
    return client
