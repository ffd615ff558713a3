"""Helpers shared by the GUI tests."""
import asyncio

TINY_SETS = ["task.pool_size=8", "rollout.tasks_per_iter=4", "rollout.rollouts_per_task=4",
             "eval.tasks_per_tier=4", "eval.every=2", "policy.hidden=32", "judge.hidden=32"]



async def until(predicate, timeout=60.0, what="condition"):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
