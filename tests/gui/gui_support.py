"""Helpers shared by the GUI tests."""
import asyncio

TINY = ["--preset", "tiny"]          # resources/presets/tiny.toml: seconds per run



async def until(predicate, timeout=60.0, what="condition"):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
