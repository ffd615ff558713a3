"""EngineClient against a real `rla run` subprocess: start, watch, steer, wait."""
import asyncio

from rla_engine.config import build
from rla_engine import metrics
from rla_engine.client import EngineClient, EngineError
from rla_engine.paths import log_path
from rla_engine.store import Store
from rla_engine.vocabulary import CommandKind, CommandOutcome, CommandResult



async def until(predicate, timeout=60.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        value = await predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


def test_start_watch_pause_override_resume_stop(tmp_path):
    async def scenario():
        client = EngineClient(tmp_path / "h.db")
        cfg = build(preset="tiny", sets=["run.iterations=2000"])
        run_id = await client.start(cfg, preset="quickstart", name="client test")
        keys, kinds, results = set(), [], {}

        async def consume():
            async for update in client.watch(run_id):
                keys.update(update.metrics)
                kinds.extend(e["kind"] for e in update.events)
                # a command's outcome reaches the console as its event, as here
                results.update((e["payload"]["command"], CommandResult.parse(e["payload"]["result"]))
                               for e in update.events if "command" in e["payload"])
        watcher = asyncio.create_task(consume())
        await until(lambda: asyncio.sleep(0, metrics.MU in keys))

        async def outcome(command_id):
            return await until(lambda: asyncio.sleep(0, results.get(command_id)))

        # the console's Pause, Apply and Resume (controller.command)
        cmd = await client.command(run_id, CommandKind.PAUSE)
        assert await outcome(cmd) == (CommandOutcome.APPLIED, None)
        assert (await client.run(run_id))["status"] == "paused"
        cmd = await client.command(run_id, CommandKind.SET_DIFFICULTY, {"value": 0.6})
        assert (await outcome(cmd)).outcome == CommandOutcome.APPLIED
        cmd = await client.command(run_id, CommandKind.RESUME)
        assert await outcome(cmd) == (CommandOutcome.APPLIED, None)
        await until(lambda: asyncio.sleep(0, kinds.count("episode") >= 3))
        await client.stop(run_id)
        assert await client.wait(run_id) == "stopped"
        await asyncio.wait_for(watcher, 30)
        run = await client.run(run_id)
        await client.close()
        return run, keys, kinds

    run, keys, kinds = asyncio.run(scenario())
    assert run["name"] == "client test" and run["preset"] == "quickstart"
    assert {metrics.SUCCESS, metrics.MU, metrics.DIFFICULTY_MEAN, metrics.OUTCOME_AGREEMENT} <= keys
    for kind in ("started", "pause", "set_difficulty", "resume", "stop", "stopped"):
        assert kind in kinds
    assert kinds.index("pause") < kinds.index("set_difficulty") < kinds.index("resume") < kinds.index("stopped")
    assert log_path(tmp_path / "h.db", run["id"]).read_text().count("it ") > 0


def test_a_failing_engine_is_reported_with_the_tail_of_its_log(tmp_path):
    async def scenario():
        client = EngineClient(tmp_path / "h.db")
        try:
            # valid config, but this machine has no CUDA device: the engine exits 2 at start
            await client.start(build(preset="tiny", sets=["run.device=cuda"]))
        except EngineError as e:
            return str(e)
        finally:
            await client.close()
        return "started"

    import torch
    if torch.cuda.is_available():
        import pytest
        pytest.skip("needs a machine without CUDA")
    message = asyncio.run(scenario())
    assert "exited with code 2" in message and "run.device" in message and "CUDA" in message


def test_a_run_that_finishes_between_two_polls_still_counts_as_started(tmp_path):
    """CI once saw a 2-iteration run start, complete and exit before the client's next poll."""
    async def scenario():
        client = EngineClient(tmp_path / "h.db")
        real_db = client._db
        first = True

        async def slow_first_look(fn, *args):
            nonlocal first
            if fn is Store.get_run and first:
                first = False
                await client.processes[args[0]].wait()   # the engine has finished meanwhile
                return None
            return await real_db(fn, *args)
        client._db = slow_first_look
        try:
            run_id = await client.start(build(preset="tiny", sets=["run.iterations=2"]))
            return await client.run(run_id)
        finally:
            await client.close()

    run = asyncio.run(scenario())
    assert run["status"] == "completed"
    assert run["preset"] == ""          # started with none: the console's own config file is no preset
