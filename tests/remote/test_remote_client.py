"""RemoteClient over a real sshd and a real `rla serve --stdio` answers every call as EngineClient
answers it on the same database: reads, edits, a finished run's watch, exports; and it starts,
watches and steers real engine runs (pause, set_difficulty, resume, stop, resume_run, ablation)."""
import asyncio
import json

import pytest
from remote_support import (copy_db, finished_db, iterations_of, merged, remote, run_async, same, until,
                            watch_all)

from rla_engine import metrics
from rla_engine.client import EngineClient, EngineError
from rla_engine.config import build
from rla_engine.export.formats import FORMATS
from rla_engine.paths import checkpoints_dir, logs_dir
from rla_engine.remote import client as remote_client
from rla_engine.vocabulary import CommandKind, CommandOutcome, CommandResult


@pytest.fixture
def shared(tmp_path_factory):
    return finished_db(tmp_path_factory)


def test_every_read_call_answers_as_the_local_client(ssh_env, shared):
    db, (long_id, short_id) = shared

    async def scenario():
        here, there = EngineClient(db), remote(ssh_env, db)
        try:
            await there.connect()
            assert there.state == "connected" and there.server_version
            keys = await here.metric_names()
            assert metrics.MU in keys and metrics.SUCCESS in keys
            events = await here.events_at(long_id, 2)
            assert events, "iteration 2 of a tiny run has events"
            kinds = sorted({e["kind"] for e in events})[:1]
            statuses = sorted({t["status"] for t in await here.tasks(long_id)})[:1]
            calls = [
                ("list_runs", ()), ("list_runs", (True,)),
                ("run_summaries", (keys,)), ("run_summaries", ([metrics.MU, "no/such/key"], True)),
                ("metric_names", ()), ("config_fields", ()),
                ("flat_configs", ()), ("flat_configs", ([short_id],)),
                ("final_values", (keys,)), ("final_values", ([metrics.MU], [long_id, "nosuchrun"])),
                ("best_values", (keys,)), ("best_values", ([metrics.SUCCESS], [short_id])),
                ("latest_metrics", (long_id,)), ("latest_metrics", ("nosuchrun",)),
                ("columns", (long_id,)), ("columns", (long_id, 17)), ("columns", (short_id, 99)),
                ("events_at", (long_id, 2)), ("events_at", (long_id, 2, kinds)), ("events_at", (short_id, 999)),
                ("tasks", (long_id,)), ("tasks", (short_id, statuses)),
                *[("series", (long_id, k)) for k in keys],
                ("search_runs", ("remote",)), ("search_runs", ("short",)), ("search_runs", ('"OR NEAR( *',)),
                ("group_runs", ("g-remote",)), ("group_runs", ("nogroup",)),
                ("run", (long_id,)), ("run", ("nosuchrun",)),
                ("wait", (short_id,)),
            ]
            for name, args in calls:
                mine, theirs = await getattr(here, name)(*args), await getattr(there, name)(*args)
                same(mine, theirs, f"{name}{args!r:.80}")
            # asked again (as History asks every 2 s), an unchanged answer crosses as its tag only, and
            # is still the whole, right answer; a changed one crosses whole
            for name, args in [("run_summaries", (keys,)), ("final_values", (keys,)), ("tasks", (long_id,))]:
                before = there.bytes_received
                same(await getattr(here, name)(*args), await getattr(there, name)(*args), f"{name} again")
                assert there.bytes_received - before < 200, (name, there.bytes_received - before)
            notes = (await here.run(short_id))["notes"]      # the shared database is left as it was
            await here.set_notes(short_id, "changed here, seen there")
            before = there.bytes_received
            rows = await there.run_summaries(keys)
            same(await here.run_summaries(keys), rows)
            assert there.bytes_received - before > 1000
            await here.set_notes(short_id, notes)
            assert set(await there.search_runs("remote")) == {long_id, short_id}
            assert await there.group_runs("g-remote") == [short_id]
            columns = await there.columns(long_id)
            assert list(columns[metrics.SUCCESS][0]) == list(range(1, 31))
            # the log, as the console shows it
            assert await there.log_text(long_id, 5) == here.log_tail(long_id, 5)
        finally:
            await there.close()
            await here.close()
        assert there.state == "connected"       # closed by us, not lost: nothing reported a drop
    run_async(scenario())


def test_a_finished_run_watched_remotely_is_the_local_watch(ssh_env, shared):
    db, (long_id, short_id) = shared

    async def scenario():
        here, there = EngineClient(db), remote(ssh_env, db)
        try:
            for run_id in (long_id, short_id):
                mine, theirs = await watch_all(here, run_id), await watch_all(there, run_id)
                same(merged(mine), merged(theirs), run_id)
                assert theirs[-1].run["status"] == "completed"
                assert theirs[-1].after_iteration == mine[-1].after_iteration
                assert theirs[-1].after_event == mine[-1].after_event
            assert [u async for u in there.watch("nosuchrun")] == []
        finally:
            await there.close()
            await here.close()
    run_async(scenario())


def test_notes_tags_archive_and_delete_read_back_as_written(ssh_env, shared, tmp_path):
    db = copy_db(shared[0], tmp_path / "copy")
    long_id, short_id = shared[1]

    async def scenario():
        here, there = EngineClient(db), remote(ssh_env, db)
        try:
            await there.set_notes(long_id, "wide sweep — μ ≥ 1 ✓ 'quoted' \"too\"")
            await there.set_tags(long_id, ["keep", "ünïcode", "two words"])
            await there.set_archived(short_id)
            for client in (here, there):
                run = await client.run(long_id)
                assert run["notes"] == "wide sweep — μ ≥ 1 ✓ 'quoted' \"too\""
                assert run["tags"] == "keep,ünïcode,two words"
                assert [r["id"] for r in await client.list_runs()] == [long_id]
                assert {r["id"] for r in await client.list_runs(include_archived=True)} == {long_id, short_id}
                assert await client.search_runs("sweep") == [long_id]
                assert await client.search_runs("short") == []
                assert await client.search_runs("short", include_archived=True) == [short_id]
            same(await here.list_runs(True), await there.list_runs(True))
            await there.set_archived(short_id, False)
            assert {r["id"] for r in await here.list_runs()} == {long_id, short_id}

            assert checkpoints_dir(db, short_id).is_dir()
            await there.delete_run(short_id)
            assert await there.run(short_id) is None and await here.run(short_id) is None
            assert not checkpoints_dir(db, short_id).exists()
            assert checkpoints_dir(db, long_id).is_dir()
            assert [r["id"] for r in await there.list_runs(True)] == [long_id]
            # an unsafe id is refused by the server's own check, as a bad request
            with pytest.raises(EngineError, match="run_id"):
                await there.delete_run("../runs")
            assert db.exists()
        finally:
            await there.close()
            await here.close()
    run_async(scenario())


def test_a_run_started_remotely_streams_and_is_steered(ssh_env, tmp_path):
    db = tmp_path / "live" / "runs.db"

    async def scenario():
        there = remote(ssh_env, db, create=True)
        try:
            cfg = build(preset="tiny", sets=["run.iterations=2000"])
            run_id = await there.start(cfg, preset="tiny", name="remote live")
            updates, results = [], {}

            def seen(u):
                updates.append(u)
                results.update((e["payload"]["command"], CommandResult.parse(e["payload"]["result"]))
                               for e in u.events if isinstance(e["payload"], dict) and "command" in e["payload"])
            watcher = asyncio.ensure_future(watch_all(there, run_id, seen))
            await until(lambda: len(iterations_of(updates, metrics.SUCCESS)) >= 3, what="live metrics")
            assert updates[0].run["status"] == "running" and updates[0].run["name"] == "remote live"

            with pytest.raises(EngineError, match="stop it before deleting"):
                await there.delete_run(run_id)

            async def outcome(kind, payload=None):
                cmd = await there.command(run_id, kind, payload)
                return await until(lambda: results.get(cmd), what=f"the outcome of {kind}")
            assert await outcome(CommandKind.PAUSE) == (CommandOutcome.APPLIED, None)
            assert (await there.run(run_id))["status"] == "paused"
            assert (await outcome(CommandKind.SET_DIFFICULTY, {"value": 0.6})).outcome == CommandOutcome.APPLIED
            assert (await outcome(CommandKind.SET_DIFFICULTY, {"value": "high"})).outcome == CommandOutcome.REJECTED
            paused_at = max(iterations_of(updates, metrics.SUCCESS))
            assert await outcome(CommandKind.RESUME) == (CommandOutcome.APPLIED, None)
            await until(lambda: max(iterations_of(updates, metrics.SUCCESS)) >= paused_at + 3,
                        what="iterations after resume")
            await there.stop(run_id)
            assert await there.wait(run_id) == "stopped"
            await asyncio.wait_for(watcher, 30)
            iterations = iterations_of(updates, metrics.SUCCESS)
            assert iterations == list(range(1, len(iterations) + 1))           # none twice, none missing
            kinds = [e["kind"] for u in updates for e in u.events]
            assert kinds.index("pause") < kinds.index("set_difficulty") < kinds.index("resume") < kinds.index("stopped")
            stopped_at = (await there.run(run_id))["iteration"]

            # resumed from its last checkpoint, a few more iterations, watched to the end
            await there.resume_run(run_id, iterations=3)
            resumed = await watch_all(there, run_id)
            final = await there.run(run_id)
            assert final["status"] == "completed", final
            assert final["iteration"] >= stopped_at + 1
            assert max(iterations_of(resumed, metrics.SUCCESS)) == final["iteration"]
            await there.delete_run(run_id)
            assert await there.list_runs(True) == []
        finally:
            await there.close()
    run_async(scenario(), timeout=180)


def test_an_ablation_started_remotely_runs_every_arm(ssh_env, tmp_path):
    db = tmp_path / "ablate" / "runs.db"

    async def scenario():
        there = remote(ssh_env, db, create=True)
        try:
            group, first = await there.start_ablation(build(preset="tiny"), preset="tiny", seeds=[0], budget=400,
                                                      arms=["outcome", "full"])
            assert first.startswith(group) and ".outcome." in first
            runs = await until(lambda: _two(there.group_runs(group)), timeout=90, what="both arms")
            for run_id in runs:
                assert await there.wait(run_id) == "completed"
            here = EngineClient(db)
            try:
                same(await here.group_runs(group), await there.group_runs(group))
            finally:
                await here.close()
            # the table it writes beside the database
            await until(lambda: (logs_dir(db) / f"{group}.md").exists(), timeout=60, what="the ablation's table")
        finally:
            await there.close()
    run_async(scenario(), timeout=180)


async def _two(runs):
    got = await runs
    return got if len(got) == 2 else None


# -- export -------------------------------------------------------------------------------------------
def test_export_writes_the_files_a_local_export_writes(ssh_env, shared, tmp_path):
    db, ids = shared
    here_dir, there_dir = tmp_path / "here", tmp_path / "there"
    here_dir.mkdir()
    there_dir.mkdir()

    async def scenario():
        here, there = EngineClient(db), remote(ssh_env, db)
        try:
            for fmt in ("csv", "json", "html"):
                mine = await here.export(ids, fmt, here_dir / f"r.{fmt}")
                theirs = await there.export(ids, fmt, there_dir / f"r.{fmt}")
                assert str(there_dir / f"r.{fmt}") in theirs and "(from rla-test)" in theirs
                assert str(here_dir / f"r.{fmt}") in mine
        finally:
            await there.close()
            await here.close()
    run_async(scenario())
    for name in ("r.csv", "r.events.csv"):
        assert (there_dir / name).read_bytes() == (here_dir / name).read_bytes(), name
    same(json.loads((there_dir / "r.json").read_text()), json.loads((here_dir / "r.json").read_text()))
    html, local_html = (there_dir / "r.html").read_text(), (here_dir / "r.html").read_text()
    assert 0.9 < len(html) / len(local_html) < 1.1
    assert "remote long" in html and "remote short" in html
    # nothing is left beside the served database
    assert not [p for p in logs_dir(db).iterdir() if p.name.startswith("export-")]


def test_an_existing_target_is_refused_before_anything_is_sent(ssh_env, shared, tmp_path, monkeypatch):
    """For every format, and for each file of a two-file format: no request leaves the console
    (the link's own record of what it wrote), nothing appears beside the served database, the
    existing file is unchanged; a forced export then writes over it."""
    db, ids = shared
    sent: list[str] = []
    write = remote_client._Link.write

    async def recording(self, message):
        sent.append(message.get("call"))
        return await write(self, message)
    monkeypatch.setattr(remote_client._Link, "write", recording)
    targets = {"csv": ["r.csv", "r.events.csv"], "parquet": ["r.parquet", "r.events.parquet"]}
    logs = logs_dir(db)
    logs.mkdir(exist_ok=True)
    before = logs.stat().st_mtime_ns, sorted(p.name for p in logs.iterdir())

    async def scenario():
        there = remote(ssh_env, db)
        try:
            await there.connect()
            assert await there.metric_names()
            for fmt in FORMATS:
                for existing in targets.get(fmt, [f"r.{fmt}"]):
                    folder = tmp_path / f"{fmt}-{existing}"
                    folder.mkdir()
                    (folder / existing).write_text("mine\n")
                    with pytest.raises(EngineError, match="exit 2") as refused:
                        await there.export(ids, fmt, folder / f"r.{fmt}")
                    assert existing in str(refused.value)
                    assert (folder / existing).read_text() == "mine\n"
                    assert sorted(p.name for p in folder.iterdir()) == [existing]
            assert await there.metric_names()       # a round trip after the refusals: they sent nothing
            assert sent == ["metric_names", "metric_names"]
            assert (logs.stat().st_mtime_ns, sorted(p.name for p in logs.iterdir())) == before
            line = await there.export(ids, "csv", tmp_path / "csv-r.csv" / "r.csv", force=True)
            assert "wrote" in line
            assert (tmp_path / "csv-r.csv" / "r.csv").read_text() != "mine\n"
        finally:
            await there.close()
    run_async(scenario())


def test_an_export_refused_there_says_why(ssh_env, shared, tmp_path):
    db, ids = shared

    async def scenario():
        there = remote(ssh_env, db)
        try:
            with pytest.raises(EngineError, match="nosuchrun"):
                await there.export(["nosuchrun"], "csv", tmp_path / "x.csv")
            with pytest.raises(EngineError, match="docx"):
                await there.export(ids, "docx", tmp_path / "x.docx")
        finally:
            await there.close()
    run_async(scenario())
    assert sorted(p.name for p in tmp_path.iterdir()) == []

