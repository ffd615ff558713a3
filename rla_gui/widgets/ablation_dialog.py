"""The choices of an ablation beside the form's shared configuration: seeds, the environment-step
budget every run gets, the arms, and how many runs at a time. Checked with the same parsers as
`rla ablate`, so the dialog and the command accept the same things.

Its base is the form's configuration, or the first ablation: the keyrooms preset with the arms
and budget that show the method's effect in the fewest minutes on two cores (docs/RESULTS.md,
"A first ablation"). It opens on the first ablation when the form holds the preset a newcomer
sees (the quickstart, where the method's early lead is within its seeds' spread), and otherwise on a
small ablation of the form that finishes in minutes (the full study of docs/RESULTS.md — every
arm, three seeds, 2 M steps — takes hours there). It says how long the chosen one will take
before it is started.
"""
from __future__ import annotations

import html
import math
import os

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QListWidget,
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
# The first ablation (docs/RESULTS.md, "A first ablation"): keyrooms, where the repaired `full`
# separates from `outcome+env` — from 0.75 M steps on five seeds' means, from 1 M with every seed of
# `full` above every seed of `outcome+env`, so that two seeds show it — beside the oracle's ceiling.
FIRST_ABLATION_PRESET = "keyrooms"
FIRST_ABLATION_ARMS = ("outcome", "outcome+env", "full", "full+oracle-judge")
FIRST_ABLATION_SEEDS = "0,1"
FIRST_ABLATION_BUDGET = 1_000_000
# Its wall time from Start ablation to the comparison, two at a time on the 2-core machine with
# nothing else running (the estimate below, made for every family, says twice that).
FIRST_ABLATION_S = 334.0       # 5 min 46 s and 5 min 21 s: two runs of it, their metrics equal
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
                  "everything else (the judge's profile too) is the base's.")
    return "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)


class AblationDialog(QDialog):
    """`rate` is the form's family's (steps_per_second); `form_label` names the form's configuration
    in the base's list; `first` opens on the first ablation rather than on the form."""

    def __init__(self, parent: QWidget | None = None, rate: float = TENSOR_STEPS_PER_S,
                 form_label: str = "this form", first: bool = False):
        super().__init__(parent)
        self.setWindowTitle("Start an ablation")
        self.form_rate = rate
        self.base = QComboBox()
        self.base.setObjectName("base")
        self.base.addItem(f"First ablation: the {FIRST_ABLATION_PRESET} preset, where the method's effect shows",
                          FIRST_ABLATION_PRESET)
        self.base.addItem(f"The form's configuration ({form_label})", "")
        self.base.setToolTip(f"<p>The configuration every arm shares. The first ablation runs the "
                             f"{FIRST_ABLATION_PRESET} preset with the arms {', '.join(FIRST_ABLATION_ARMS)}: there "
                             "the whole loop beats adapting the environment alone (docs/RESULTS.md).</p>")
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
        self.budget.setToolTip("Environment steps per run: every arm and seed stops once it has taken them.")
        self.arms = QListWidget()
        self.arms.setObjectName("arms")
        for arm in ARMS:
            self.arms.addItem(self._arm_item(arm))
        self.base.setCurrentIndex(0 if first else 1)
        self._base_defaults()
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
        self.base.currentIndexChanged.connect(self._base_chosen)
        self._check()

    @staticmethod
    def _arm_item(arm: str) -> QListWidgetItem:
        item = QListWidgetItem(f"{arm} (diagnostic)" if arm in DIAGNOSTIC_ARMS else arm)
        item.setData(Qt.ItemDataRole.UserRole, arm)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setToolTip(arm_tooltip(arm))
        return item

    def base_preset(self) -> str:
        """The preset every arm shares, or "" for the form's configuration."""
        return self.base.currentData() or ""

    @property
    def rate(self) -> float:
        """The base's measured steps a second: the first ablation's family is a tensor one."""
        return TENSOR_STEPS_PER_S if self.base_preset() == FIRST_ABLATION_PRESET else self.form_rate

    def _base_defaults(self) -> None:
        """The base's own plan: the first ablation's measured one, or minutes of the form's."""
        first = self.base_preset() == FIRST_ABLATION_PRESET
        arms = FIRST_ABLATION_ARMS if first else DEFAULT_ARMS
        self.seeds.setText(FIRST_ABLATION_SEEDS if first else DEFAULT_SEEDS)
        for i in range(self.arms.count()):
            item = self.arms.item(i)
            checked = item.data(Qt.ItemDataRole.UserRole) in arms
            item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
        runs = len(arms) * len(parse_seeds(self.seeds.text()))
        self.budget.setValue(FIRST_ABLATION_BUDGET if first else default_budget(self.rate, runs, self.jobs.value()))
        self.budget.setSingleStep(max(1, self.budget.value() // 5))

    def _base_chosen(self) -> None:
        with QSignalBlocker(self.arms), QSignalBlocker(self.budget), QSignalBlocker(self.seeds):
            self._base_defaults()
        self._check()

    def _layout(self) -> None:
        form = QFormLayout()
        form.addRow("Base", self.base)
        form.addRow("Seeds", self.seeds)
        form.addRow("Budget (env steps)", self.budget)
        form.addRow("Arms", self.arms)
        form.addRow("Runs at a time", self.jobs)
        intro = QLabel("Every arm runs every seed with the base's configuration; only the arm's component "
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

    def _is_first_ablation(self, spec: AblationSpec) -> bool:
        return (self.base_preset() == FIRST_ABLATION_PRESET and sorted(spec.arms) == sorted(FIRST_ABLATION_ARMS)
                and spec.seeds == parse_seeds(FIRST_ABLATION_SEEDS) and spec.budget == FIRST_ABLATION_BUDGET
                and spec.jobs == DEFAULT_JOBS)

    def _estimate_text(self, spec: AblationSpec) -> str:
        runs = len(spec.arms) * len(spec.seeds)
        plan = (f"{counted(runs, 'run')} ({counted(len(spec.arms), 'arm')} × {counted(len(spec.seeds), 'seed')}), "
                f"{min(spec.jobs, runs)} at a time: ")
        if self._is_first_ablation(spec):
            self.estimate.setToolTip("<p>Measured from Start ablation to its comparison on a 2-core machine doing "
                                     "nothing else; on a busy machine it takes longer.</p>")
            return plan + f"about {duration_text(FIRST_ABLATION_S)}, as measured."
        seconds = ablation_seconds(runs, spec.budget, spec.jobs, self.rate)
        self.estimate.setToolTip(f"<p>Measured: about {self.rate:,.0f} environment steps a second per run on one "
                                 f"core, plus {START_S:.0f} s to start each run; on a busy machine it takes "
                                 "longer.</p>")
        return plan + f"about {duration_text(seconds)}."
