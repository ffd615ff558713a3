"""The choices of an ablation beside the form's shared configuration: seeds, the environment-step
budget every run gets, the arms, and how many runs at a time. Checked with the same parsers as
`rla ablate`, so the dialog and the command accept the same things.

It opens on a small ablation that finishes in minutes on two cores (the full study of
docs/RESULTS.md — every arm, three seeds, 2 M steps — takes hours there) and says how long
the chosen one will take before it is started.
"""
from __future__ import annotations

import html
import math
import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QListWidget,
                               QListWidgetItem, QSpinBox, QVBoxLayout, QWidget)

from rla_engine.ablation.arms import ARM_DESCRIPTIONS, ARMS, DIAGNOSTIC_ARMS, AblationSpec, parse_arms, parse_seeds
from rla_engine.errors import InputError
from rla_engine.text import counted

from .plain_text import plain_label

# The arms that tell most: the baseline, adaptation alone, and the whole loop (the step rewards'
# share is full − outcome+env); two seeds show whether a gap is more than seed noise.
DEFAULT_ARMS = ("outcome", "outcome+env", "full")
DEFAULT_SEEDS = "0,1"
DEFAULT_JOBS = 2
# The default budget is what fills about this long with the default plan: minutes, not the hours
# of the full study (every arm, three seeds, 2 M steps).
DEFAULT_PLAN_S = 300.0
ERROR_STYLE = "color: #d32f2f;"

# Throughput of one run (the engine pins torch to one thread, so a run uses one core), measured
# on the project's 2-core machine while it did other work too, as a user's machine does:
# `rla ablate --preset quickstart --seeds 0,1 --budget 300000 --arms outcome,full --jobs 2` took
# 161 s; its runs took 4,000-6,700 env steps a second between their start and end rows, and each
# `rla run` process 15-24 s more (interpreter, torch import, database). Alone on an idle machine
# a quickstart run does ~11,000 steps/s after ~9 s of start-up, so the estimate errs long.
TENSOR_STEPS_PER_S = 6_000.0
# `rla run --preset llm-tiny` (a tiny random language model): 26 env steps in 18.8 s. Real models
# are slower still (llm-smol: about a minute an iteration).
TEXT_STEPS_PER_S = 1.4
START_S = 15.0


def steps_per_second(family_kind: str) -> float:
    """The measured rate for a family kind ("tensor" or "text", rla_engine.tasks.family_kind)."""
    return TEXT_STEPS_PER_S if family_kind == "text" else TENSOR_STEPS_PER_S


def _waves(runs: int, jobs: int) -> int:
    return math.ceil(runs / max(1, min(jobs, runs)))


def ablation_seconds(runs: int, budget: int, jobs: int, rate: float) -> float:
    """Wall time of `runs` runs of `budget` env steps each, `jobs` at a time, each on its own core."""
    return 0.0 if runs < 1 else _waves(runs, jobs) * (budget / rate + START_S)


def default_budget(rate: float, runs: int, jobs: int) -> int:
    """The budget that makes `runs` runs take about DEFAULT_PLAN_S, rounded to one digit."""
    steps = max(1.0, (DEFAULT_PLAN_S / _waves(runs, jobs) - START_S) * rate)
    digits = math.floor(math.log10(steps))
    return max(1, int(round(steps, -digits)))


def duration_text(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    if minutes < 48 * 60:
        return f"{minutes // 60} h {minutes % 60:02d} min"
    return f"{minutes / (24 * 60):.0f} days"


def _toml(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def arm_tooltip(arm: str) -> str:
    """The arm's purpose and, from its definition, exactly what it switches (paragraphs, which a
    tooltip wraps; a plain-text tooltip runs out in one line)."""
    switches = ", ".join(f"{key} = {_toml(value)}" for key, value in ARMS[arm])
    paragraphs = (ARM_DESCRIPTIONS.get(arm, arm), f"Sets {switches}.",
                  "The μ gate, the critic and the judge's source keep the paper's form unless set here; "
                  "everything else is the form's.")
    return "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)


class AblationDialog(QDialog):
    def __init__(self, parent: QWidget | None = None, rate: float = TENSOR_STEPS_PER_S):
        super().__init__(parent)
        self.setWindowTitle("Start an ablation")
        self.rate = rate
        self.seeds = QLineEdit(DEFAULT_SEEDS)
        self.seeds.setObjectName("seeds")
        self.seeds.setToolTip("Every arm runs every seed, e.g. 0,1,2.")
        self.jobs = QSpinBox()
        self.jobs.setObjectName("jobs")
        self.jobs.setRange(1, max(1, os.cpu_count() or 1))
        self.jobs.setValue(DEFAULT_JOBS)       # one core has room for one run at a time only
        self.jobs.setToolTip("Runs at a time; each uses one core.")
        self.budget = QSpinBox()
        self.budget.setObjectName("budget")
        self.budget.setRange(1, 2_000_000_000)
        self.budget.setGroupSeparatorShown(True)
        runs = len(DEFAULT_ARMS) * len(parse_seeds(DEFAULT_SEEDS))
        self.budget.setValue(default_budget(rate, runs, self.jobs.value()))
        self.budget.setSingleStep(max(1, self.budget.value() // 5))
        self.budget.setToolTip("Environment steps per run: every arm and seed stops once it has taken them.")
        self.arms = QListWidget()
        self.arms.setObjectName("arms")
        for arm in ARMS:
            self.arms.addItem(self._arm_item(arm))
        self.estimate = plain_label()
        self.estimate.setObjectName("estimate")
        self.estimate.setWordWrap(True)
        self.error = plain_label()      # it quotes what was typed
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Start ablation")
        self._layout()
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.seeds.textChanged.connect(self._check)
        self.arms.itemChanged.connect(self._check)
        self.budget.valueChanged.connect(self._check)
        self.jobs.valueChanged.connect(self._check)
        self._check()

    @staticmethod
    def _arm_item(arm: str) -> QListWidgetItem:
        item = QListWidgetItem(f"{arm} (diagnostic)" if arm in DIAGNOSTIC_ARMS else arm)
        item.setData(Qt.ItemDataRole.UserRole, arm)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(Qt.CheckState.Checked if arm in DEFAULT_ARMS else Qt.CheckState.Unchecked)
        item.setToolTip(arm_tooltip(arm))
        return item

    def _layout(self) -> None:
        form = QFormLayout()
        form.addRow("Seeds", self.seeds)
        form.addRow("Budget (env steps)", self.budget)
        form.addRow("Arms", self.arms)
        form.addRow("Runs at a time", self.jobs)
        intro = QLabel("Every arm runs every seed with the form's configuration; only the arm's component "
                       "changes (hover an arm to see which). The runs form one group, opened as a comparison "
                       "at the end.")
        intro.setWordWrap(True)
        column = QVBoxLayout(self)
        column.addWidget(intro)
        column.addLayout(form)
        column.addWidget(self.estimate)
        column.addWidget(self.error)
        column.addWidget(self.buttons)

    def checked_arms(self) -> list[str]:
        return [self.arms.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.arms.count())
                if self.arms.item(i).checkState() == Qt.CheckState.Checked]

    def spec(self) -> AblationSpec:
        """The choices; raises InputError naming what is wrong."""
        return AblationSpec(parse_seeds(self.seeds.text()), self.budget.value(),
                            parse_arms(",".join(self.checked_arms())), self.jobs.value())

    def _check(self) -> None:
        try:
            spec = self.spec()
            problem = ""
        except InputError as e:
            spec, problem = None, str(e)
        self.error.setText(problem)
        self.estimate.setText("" if spec is None else self._estimate_text(spec))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(not problem)

    def _estimate_text(self, spec: AblationSpec) -> str:
        runs = len(spec.arms) * len(spec.seeds)
        at_once = min(spec.jobs, runs)
        seconds = ablation_seconds(runs, spec.budget, spec.jobs, self.rate)
        self.estimate.setToolTip(f"<p>Measured: about {self.rate:,.0f} environment steps a second per run on one "
                                 f"core, plus {START_S:.0f} s to start each run; on a busy machine it takes "
                                 "longer.</p>")
        return (f"{counted(runs, 'run')} ({counted(len(spec.arms), 'arm')} × {counted(len(spec.seeds), 'seed')}), "
                f"{at_once} at a time: "
                f"about {duration_text(seconds)}.")
