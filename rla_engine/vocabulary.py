"""The words the engine, the store, the CLI and the console share: run statuses, event kinds,
command kinds and outcomes, task statuses, and the shapes of the rows they pass around (the
tasks table's among them). Metric keys live beside this, in `metrics.py`. Torch-free and
Qt-free: every layer may import it; code elsewhere names these members, never their strings.

The kinds are StrEnums, so a member is the very string stored in SQLite and written to JSON
(`EventKind.EPISODE == "episode"`); rows read back from the database carry plain strings.
"""
from __future__ import annotations

from enum import StrEnum
from typing import Any, NamedTuple, NotRequired, TypedDict


class Status(StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    STOPPED = "stopped"
    FAILED = "failed"
    CRASHED = "crashed"      # the engine died without saying so (found by the liveness check)


LIVE: tuple[str, ...] = (Status.RUNNING, Status.PAUSED)                 # an engine owns the run
FINAL: tuple[str, ...] = (Status.COMPLETED, Status.STOPPED, Status.FAILED, Status.CRASHED)
RESUMABLE: tuple[str, ...] = (Status.STOPPED, Status.CRASHED, Status.FAILED)   # `rla resume` takes it on


class CommandKind(StrEnum):
    """What a `commands` row asks of a live engine (DESIGN §3)."""
    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"
    CHECKPOINT = "checkpoint"
    SET_DIFFICULTY = "set_difficulty"


class CommandOutcome(StrEnum):
    """What the engine did with a command."""
    APPLIED = "applied"
    IGNORED = "ignored"          # nothing to do (a pause while paused)
    REJECTED = "rejected"        # refused: malformed, out of range, or the engine could not carry it out


class CommandResult(NamedTuple):
    """A command's outcome and what the engine adds to it: the checkpoint it saved, why it refused it.
    The commands table keeps the two apart; a command's event keeps them as one text, `str()`'s."""
    outcome: CommandOutcome
    detail: str | None = None

    def __str__(self) -> str:
        """`applied`, `applied: <checkpoint name>`, `rejected: <why>`: as the event log shows it."""
        return str(self.outcome) if self.detail is None else f"{self.outcome}: {self.detail}"

    @classmethod
    def parse(cls, text: Any) -> CommandResult | None:
        """`str()`'s text read back (a command's event, or a commands row written before the
        table had an outcome column); None where it is no command result."""
        head, colon, detail = str(text).partition(": ")
        try:
            outcome = CommandOutcome(head)
        except ValueError:
            return None
        return cls(outcome, detail if colon else None)


class EventKind(StrEnum):
    """The `kind` of an events row. A command that was carried out is recorded under its own
    kind (pause, resume, …, see CommandKind); one that was refused as `command_rejected`."""
    STARTED = "started"
    EPISODE = "episode"                          # one sampled trajectory with its verdicts
    SAMPLES = "samples"                          # language-model runs: trajectories as text, variants
    VARIANT_INVALID = "variant_invalid"          # an environment model's answer that failed validation
    VARIANT_ACCEPTED = "variant_accepted"        # the environment model's task entered the pool
    VARIANT_REJECTED = "variant_rejected"
    PAUSE = CommandKind.PAUSE.value
    RESUME = CommandKind.RESUME.value
    STOP = CommandKind.STOP.value
    CHECKPOINT = CommandKind.CHECKPOINT.value
    SET_DIFFICULTY = CommandKind.SET_DIFFICULTY.value
    COMMAND_REJECTED = "command_rejected"
    COMPLETED = Status.COMPLETED.value
    STOPPED = Status.STOPPED.value
    FAILED = Status.FAILED.value
    REWOUND = "rewound"                          # a resume deleted iterations after its checkpoint
    RESUMED_FROM_CHECKPOINT = "resumed_from_checkpoint"
    CHECKPOINT_SKIPPED = "checkpoint_skipped"    # a checkpoint passed over on resume (damaged, not this run's, …)
    CHECKPOINT_WARNING = "checkpoint_warning"    # a checkpoint not written or an older one not deleted (a
                                                 # folder in the way, an immutable file); the run goes on
    HISTORY_GAP = "history_gap"                  # a resume found the database behind its checkpoint
    PLACED = "placed"                            # Ray executor: where the run's workers (or the run) are
    WORKER_RESTARTED = "worker_restarted"        # a dead Ray worker replaced, its work resubmitted
    ALERT = "alert"                              # a health alert raised or cleared (rla_engine/alerts.py)
    SANDBOX = "sandbox"                          # the isolation model-written code runs under (coding runs)
    EPISODE_CRASHED = "episode_crashed"          # an environment failed inside an episode (a game's interpreter):
                                                 # that episode ended as a failure, the run went on


class TaskStatus(StrEnum):
    """A task row's life: a variant waits as pending, then is active in its slot, rejected, or
    dropped by an override; an active task is retired when the variant that replaces it is accepted
    (or an override or refresh gives its slot a fresh task)."""
    PENDING = "pending"
    ACTIVE = "active"
    RETIRED = "retired"
    REJECTED = "rejected"
    DROPPED = "dropped"          # a pending candidate that a difficulty override discarded


VARIANT_KINDS: tuple[str, ...] = (EventKind.VARIANT_ACCEPTED, EventKind.VARIANT_REJECTED)


class VariantOutcome(StrEnum):
    """What became of an environment model's answer, as a samples event shows it."""
    PROPOSED = "proposed"        # valid: pending, rolled out next iteration
    INVALID = "invalid"          # not JSON, or refused by the family's validation
    ACCEPTED = "accepted"
    REJECTED = "rejected"


# -- row shapes, as the store returns them ------------------------------------------------------
# A row may have been edited by hand (sqlite3 stores anything anywhere). The store reads a value
# it cannot read as a stand-in of the column's type — None, 0, "" or, for a status, DAMAGED — and
# names the column under the row's `damaged`: {column: what was stored, e.g. "NULL", "'yesterday'"}.
# Whole rows have no `damaged`. (rla_engine/store/reads.py: the rules, column by column.)
DAMAGED = "damaged"          # the status of a row whose stored status cannot be read; never stored


class RunRow(TypedDict):
    id: str
    name: str
    status: str                  # a Status, or DAMAGED
    preset: str | None
    config_json: str
    group_id: str | None
    created_at: float | None     # None only in a damaged row
    started_at: float | None
    ended_at: float | None
    heartbeat_at: float | None
    pid: int | None
    pid_start: str | None
    host: str | None
    iteration: int               # the last committed iteration
    device: str | None
    error: str | None
    notes: str
    tags: str
    archived: int
    damaged: NotRequired[dict[str, str]]


class EventRow(TypedDict):
    id: int
    run_id: str
    iteration: int               # 0 where a damaged row's cannot be read
    t: float | None              # None only in a damaged row
    kind: str                    # an EventKind
    payload: Any
    damaged: NotRequired[dict[str, str]]


class CommandRow(TypedDict):
    """A pending command as the engine reads it: `problem` says why it cannot be carried out."""
    id: int
    kind: str                    # a CommandKind when well formed
    payload: Any
    problem: str | None
    excerpt: Any                 # what its event keeps of a big payload


class TaskFields(TypedDict):
    """A task row as the pool writes it (`TaskRecord.row`), the store adding its run_id: the one
    definition of the tasks table. Its columns (TASK_COLUMNS), their SQL types (store/schema.py)
    and the fields of a bundle's task rows are read from this class."""
    uid: int
    slot: int | None             # None (slot, version, difficulty) only in a damaged row
    version: int | None
    family: str
    params_json: str
    difficulty: float | None
    status: str                  # a TaskStatus, or DAMAGED
    last_acc: float | None
    direction: str | None
    prev_acc: float | None
    new_acc: float | None
    critic_json: str | None
    created_iteration: int
    decided_iteration: int | None


class TaskRow(TaskFields):
    run_id: str
    damaged: NotRequired[dict[str, str]]


TASK_FIELDS: tuple[str, ...] = tuple(TaskFields.__annotations__)
TASK_COLUMNS: tuple[str, ...] = ("run_id", *TASK_FIELDS)      # the table's, in its order


# -- the payload of a `samples` event (language-model runs; the console's Samples panel) --------
class SampleStep(TypedDict):
    text: str                    # the policy's tokens of this step, decoded
    verdicts: list[int]          # the judge's m verdicts (+1, −1, 0 = unreadable)
    reasoning: list[str]         # the judge's m outputs, reasoning and boxed verdict
    oracle: int                  # +1 / −1, 0 where the family has no oracle (diagnostics only)


class SampleTurn(TypedDict):
    steps: list[SampleStep]      # one, or one per line for a family whose lines are steps
    observation: str             # what the environment answered


class SampleUnitTest(TypedDict):
    """One test the test generator wrote (judge.kind = tests), and how this trajectory's program did on it."""
    input: str                   # "" when the sample could not be read
    output: str
    said: str                    # the generator's whole sample (test and explanation)
    readable: bool
    correct: bool                # every correct program of the group passes it
    result: str                  # this program's status on it (a sandbox Status; "" for an unreadable test)


class SampleGroundTruth(TypedDict):
    passed: int
    total: int
    statuses: list[str]          # per ground-truth test, a sandbox Status


class SampleTrajectory(TypedDict):
    slot: int
    task: str                    # the task in words
    success: bool
    turns: list[SampleTurn]
    ground_truth: NotRequired[SampleGroundTruth]    # a program's run on the task's own tests (coding)
    unit_tests: NotRequired[list[SampleUnitTest]]   # the generated tests, with this program's results


class SampleVariant(TypedDict):
    slot: int
    direction: str               # harder | easier
    outcome: str                 # a VariantOutcome
    critic: Any                  # what the environment model was told (structured + the judge's text)
    task: str                    # the variant in words ("" when invalid)
    answer: str                  # the environment model's raw answer
    reason: str | None           # why it was invalid or rejected


class SamplesPayload(TypedDict):
    family: str
    trajectories: list[SampleTrajectory]
    variants: list[SampleVariant]    # this iteration's proposals and decisions
