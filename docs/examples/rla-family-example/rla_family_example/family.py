"""A complete text family in one small file: is a number even or odd?

One turn, one step: the policy answers `even` or `odd`. Difficulty is the number's length
(1 to 12 digits). The oracle labels the answer, the critic counts wrong answers by the last digit,
the procedural environment model changes the length, and the language-model environment model
rewrites {"number": N} under the rules of `from_json`.
"""
from __future__ import annotations

import numpy as np

from rla_engine.tasks.task import Task, draw_seed, fresh_seed
from rla_engine.tasks.text_base import TextEpisode, TextFamily, TurnResult

MAX_DIGITS = 12


def _digits_for(d: float) -> int:
    return 1 + round(min(max(d, 0.0), 1.0) * (MAX_DIGITS - 1))


class ParityEpisode(TextEpisode):
    def __init__(self, number: int):
        self.number = number

    def respond(self, steps: list[str]) -> TurnResult:
        said = steps[0].strip().strip(".").lower() if steps else ""
        right = "even" if self.number % 2 == 0 else "odd"
        ok = said == right
        return TurnResult(labels=[1 if ok else -1], infos=[{"last_digit": self.number % 10, "said": said[:20]}],
                          observation="Correct." if ok else "That is not the answer.", done=True, success=ok)


class ParityFamily(TextFamily):
    name = "parity"
    max_turns = 1

    def difficulty(self, params: dict) -> float:
        return (len(str(params["number"])) - 1) / (MAX_DIGITS - 1)

    def _task(self, digits: int, seed: int) -> Task:
        rng = np.random.default_rng(seed)
        lo = 0 if digits == 1 else 10 ** (digits - 1)
        return Task(self.name, {"number": int(rng.integers(lo, 10**digits))}, seed)

    def sample(self, d: float, rng: np.random.Generator, held_out: bool = False) -> Task:
        return self._task(_digits_for(d), draw_seed(rng, held_out))

    def validate(self, task: Task) -> str | None:
        n = task.params.get("number")
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n < 10**MAX_DIGITS:
            return f"number must be an integer from 0 to {10**MAX_DIGITS - 1}"
        return None

    def instruction(self, task: Task) -> str:
        return f"Is {task.params['number']} even or odd? Answer with one word: even or odd."

    def start(self, task: Task) -> ParityEpisode:
        return ParityEpisode(task.params["number"])

    def critic(self, task: Task, steps: list[tuple[int, dict]]) -> dict:
        return {"wrong_answers": len(steps), "last_digits": sorted({info["last_digit"] for _, info in steps})}

    def mutate(self, task: Task, direction: str, critic: dict, rng: np.random.Generator) -> Task:
        digits = len(str(task.params["number"])) + (1 if direction == "harder" else -1)
        return self._task(min(max(digits, 1), MAX_DIGITS), fresh_seed(rng, task.seed))

    def variant_schema(self) -> str:
        return f'{{"number": N}} with N an integer from 0 to {10**MAX_DIGITS - 1}; more digits is harder.'

    def task_json(self, task: Task) -> dict:
        return {"number": task.params["number"]}

    def from_json(self, data: object, root: Task) -> Task:
        if not isinstance(data, dict) or set(data) != {"number"}:
            raise ValueError('a variant must be {"number": N}')
        task = Task(self.name, {"number": data["number"]}, root.seed)
        reason = self.validate(task)
        if reason:
            raise ValueError(reason)
        return task

    def describe(self, task: Task) -> dict:
        return {"text": self.instruction(task), "number": task.params["number"]}


FAMILY = ParityFamily()
