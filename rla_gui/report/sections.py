"""The report's sections as markup: facts about a run, and the tables html.compose lays out.

Every cell is built with escape.esc / num / value_text; nothing user-provided is interpolated raw.
"""
from __future__ import annotations

import json
import time
from collections import Counter

import numpy as np

from rla_engine import metrics
from rla_engine.ablation.arms import NO_ITERATION_LIMIT
from rla_engine.summary import BEST, FINAL, HEADLINE_ROWS, best_value, definitions, final_value, flatten, run_duration
from rla_engine.alerts import ALERTS, CLEARED, RAISED, RUN_ENDED, describe
from rla_engine.vocabulary import VARIANT_KINDS, EventKind, Status, TaskStatus

from ..model.comparison import colour_of
from . import charts
from .environment import environment_info, package_version
from .escape import DASH, duration, esc, kv_table, num, table, value_text, when

MAX_EVENT_ROWS = 2000      # a long run has tens of thousands of variant events; the file stays readable
MAX_LOG_ROWS = 2000
# The PDF lists fewer: Qt lays a table page out at ~25 ms, and 2000 rows are 60 pages no one prints.
PDF_MAX_ROWS = 300
PDF_CHUNK = 100
STATUS_COLOURS: dict[str, str] = {Status.COMPLETED: "#2ca02c", Status.RUNNING: "#1f77b4", Status.PAUSED: "#ff7f0e",
                                  Status.STOPPED: "#7f7f7f", Status.FAILED: "#d62728", Status.CRASHED: "#d62728"}
SKIPPED_EVENTS = (EventKind.EPISODE,)   # trajectories for the episode viewer: large, and not history


def version() -> str:
    return package_version("rlanything") or "?"


def now() -> str:
    return when(time.time())


class Facts:
    """What the summary needs from one bundle, computed once."""

    def __init__(self, bundle: dict):
        self.bundle, self.run = bundle, bundle["run"]
        self.data = charts.run_data(bundle)
        self.config = self.run.get("config") or {}
        self.name = str(self.run.get("name") or self.run.get("id"))

    def final(self, key: str) -> float | None:
        return final_value(self.data.xy(key)[1]) if key in self.data else None

    def best(self, key: str) -> tuple[float | None, int | None]:
        return best_value(*self.data.xy(key)) if key in self.data else (None, None)

    def total(self, key: str, event_kind: str) -> int:
        """Accepted/rejected variants: the per-iteration counts summed, else the events counted."""
        if key in self.data:
            return int(np.nansum(self.data.xy(key)[1]))
        return sum(1 for e in self.bundle.get("events") or () if e["kind"] == event_kind)

    def variants(self) -> str:
        return (f"{num(self.total(metrics.ACCEPTED, EventKind.VARIANT_ACCEPTED))} / "
                f"{num(self.total(metrics.REJECTED, EventKind.VARIANT_REJECTED))}")

    def env_steps(self) -> int | None:
        its = self.bundle.get("iterations") or []
        if its:
            return int(its[-1].get("env_steps") or 0)
        v = self.final(metrics.ENV_STEPS)
        return int(v) if v is not None else None

    def train_s(self) -> float:
        return float(sum(r.get("wall_s") or 0.0 for r in self.bundle.get("iterations") or ()))

    def duration(self) -> float | None:
        return run_duration(self.run)

    def target(self):
        return (self.config.get("run") or {}).get("iterations")

    def budget(self) -> int:
        """run.env_step_budget: the environment steps that end the run (0: none)."""
        b = (self.config.get("run") or {}).get("env_step_budget")
        return b if isinstance(b, int) and not isinstance(b, bool) and b > 0 else 0

    def progress(self) -> str:
        """How far the run got against what ends it. An ablation's arm ends at its budget of
        environment steps, its run.iterations only a ceiling no run reaches (NO_ITERATION_LIMIT):
        "213 iterations, 500,000 of 500,000 env steps", never "213 of 10,000,000"."""
        done, target = num(self.run.get("iteration")), self.target()
        if not self.budget():
            return f"{done} of {num(target)} iterations"
        ceiling = isinstance(target, int) and target < NO_ITERATION_LIMIT
        iterations = f"{done} of {num(target)} iterations" if ceiling else f"{done} iterations"
        return f"{iterations}, {num(self.env_steps())} of {num(self.budget())} env steps"


def kicker(what: str) -> str:
    """The line above the title: what the document is, and which version made it when. At the
    top, not as the last line: there the PDF could push it alone onto a page of its own (Qt's rich
    text cannot keep a paragraph with the one before it)."""
    return (f'<p class="kicker">{esc(what)} &nbsp;<span class="made">· made by RLAnything {esc(version())} '
            f"on {esc(now())}</span></p>")


def badge(status) -> str:
    colour = STATUS_COLOURS.get(str(status), "#555555")
    return f'<span class="badge" style="background-color:{colour}">&nbsp;{esc(status)}&nbsp;</span>'


def tags_text(run: dict) -> str:
    tags = [t.strip() for t in str(run.get("tags") or "").split(",") if t.strip()]
    return ", ".join(esc(t) for t in tags) if tags else DASH


def diagnostic_text(f: Facts) -> str:
    """A run whose judge was replaced by the oracle is a diagnostic, said before anything else."""
    judge = f.config.get("judge") or {}
    if judge.get("source") != "oracle":
        return ""
    noise = float(judge.get("oracle_noise") or 0.0)
    flipped = f", each flipped at random with p = {noise:g}" if noise else ""
    return ('<p class="error"><b>Diagnostic run, not a learner</b><br>The judge was replaced: its verdicts are '
            f"the task family's oracle step labels (judge.source = oracle{esc(flipped)}). The rm/* values measure "
            "that oracle, not a learned judge.</p>")


def notes_text(run: dict) -> str:
    out = ""
    if run.get("notes"):
        out += f'<p class="notes"><b>Notes</b><br>{esc(run["notes"]).replace(chr(10), "<br>")}</p>'
    if run.get("error"):
        out += f'<p class="error"><b>Error</b><br>{esc(run["error"]).replace(chr(10), "<br>")}</p>'
    return out


def title_block(f: Facts) -> str:
    """Name, status, the run's facts and the summary side by side (one screen, one PDF page
    with the first chart), then notes and error in full width."""
    r = f.run
    summary = f'<div class="section" id="summary"><h2>Summary</h2>{summary_table([f])}</div>'
    return (kicker("RLAnything run report") +
            f"<h1>{esc(f.name)}</h1>"
            f"<p>{badge(r.get('status'))}&nbsp; run <code>{esc(r.get('id'))}</code></p>"
            '<table class="layout" cellspacing="0" cellpadding="0"><tr><td valign="top" style="border:none">'
            "<h2>Run</h2>"
            + kv_table([("preset", esc(r.get("preset") or DASH)), ("tags", tags_text(r)),
                        ("group", esc(r.get("group_id"))),
                        ("created", esc(when(r.get("created_at")))), ("started", esc(when(r.get("started_at")))),
                        ("ended", esc(when(r.get("ended_at")))), ("duration", esc(duration(f.duration()))),
                        ("progress", f.progress()),
                        ("device", esc(r.get("device"))),
                        ("host", f"{esc(r.get('host'))} (pid {esc(r.get('pid'))})")])
            + '</td><td width="24" style="border:none"></td>'
            + f'<td valign="top" style="border:none">{summary}</td></tr></table>'
            + diagnostic_text(f) + notes_text(r))


def summary_table(facts: list[Facts]) -> str:
    """Final and best values; one run → final/best columns, several → a column per run."""
    if len(facts) == 1:
        f = facts[0]
        rows = []
        tiers = [(f"eval @ tier {metrics.tier_of(k):g}", k, True) for k in f.data.tier_keys()]
        for label, key, has_best in HEADLINE_ROWS[:2] + tuple(tiers) + HEADLINE_ROWS[2:]:
            b, at = f.best(key) if has_best else (None, None)
            rows.append([esc(label), num(f.final(key)), num(b) if has_best else "", num(at) if has_best else ""])
        rows += [[esc("variants accepted / rejected"), f.variants(), "", ""],
                 [esc("environment steps"), num(f.env_steps()), "", ""],
                 [esc("training time (sum of iterations)"), esc(duration(f.train_s())), "", ""],
                 [esc("run duration"), esc(duration(f.duration())), "", ""]]
        return table(["", "final", "best", "at iteration"], rows, "summary", numeric=(1, 2, 3)) + meanings()
    head = [""] + [run_label(f, i) for i, f in enumerate(facts)]
    rows = [[esc("status")] + [badge(f.run.get("status")) for f in facts],
            [esc("progress")] + [f.progress() for f in facts]]
    for label, key, has_best in HEADLINE_ROWS:
        rows.append([esc(f"{label} — final")] + [num(f.final(key)) for f in facts])
        if has_best:
            rows.append([esc(f"{label} — best")] + [num(f.best(key)[0]) for f in facts])
    rows += [[esc("variants accepted / rejected")] + [f.variants() for f in facts],
             [esc("environment steps")] + [num(f.env_steps()) for f in facts],
             [esc("training time")] + [esc(duration(f.train_s())) for f in facts],
             [esc("run duration")] + [esc(duration(f.duration())) for f in facts]]
    return table(head, rows, "summary", numeric=tuple(range(1, len(head)))) + meanings()


def meanings(*more: str) -> str:
    """Under a summary table: what its "final" and "best" are (the one definition every table uses)."""
    return f'<p class="muted">{esc("; ".join((definitions([FINAL, BEST]), *more)))}.</p>'


def run_label(f: Facts, i: int) -> str:
    return f'<span style="color:{colour_of(i)}">■</span>&nbsp;{esc(f.name)}'


def tier_table(f: Facts) -> str:
    rows = []
    for key in f.data.tier_keys():
        _, y = f.data.xy(key)
        b, at = f.best(key)
        rows.append([num(metrics.tier_of(key)), num(len(y)), num(float(y[0])), f"{num(b)} (it. {num(at)})",
                     num(float(y[-1]))])
    if not rows:
        return '<p class="muted">No evaluation was stored for this run.</p>'
    return table(["tier", "evaluations", "first", "best", "final"], rows, "tiers", numeric=(0, 1, 2, 3, 4))


def config_table(config: dict, per_row: int = 3) -> str:
    """The sections side by side, `per_row` to a row: a one-column list of ~40 keys would be a
    narrow strip down a whole page (and PDF readers then guess the text runs vertically)."""
    groups = [(s, v) if isinstance(v, dict) else ("", {s: v}) for s, v in config.items()]
    cells = [f"<h3>{esc(section)}</h3>" + table(None, ([esc(k), value_text(v)] for k, v in flatten(values).items()),
                                                "config")
             for section, values in groups]
    rows = ["<tr>" + "".join(f'<td valign="top" style="border:none;padding-right:18px">{c}</td>'
                             for c in cells[i:i + per_row]) + "</tr>" for i in range(0, len(cells), per_row)]
    return f'<table class="layout" cellspacing="0" cellpadding="0">{"".join(rows)}</table>'


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)


def event_details(payload) -> str:
    """A payload as `key=value` pairs (nested keys dotted), cut short, escaped."""
    if not isinstance(payload, dict):
        return value_text(payload)
    return value_text(" · ".join(f"{k}={_short(v)}" for k, v in flatten(payload).items()), limit=300)




def _timeline(events: list[dict]) -> list[dict]:
    """The events with each iteration's variant decisions folded into one entry: the adaptation
    log lists every variant in full, and a long run decides some every iteration."""
    out: list[dict] = []
    for e in events:
        if e["kind"] not in VARIANT_KINDS:
            out.append(e)
            continue
        last = out[-1] if out else None
        if last is None or last["kind"] != "variants" or last["iteration"] != e["iteration"]:
            last = {"iteration": e["iteration"], "t": e.get("t"), "kind": "variants", "payload": {},
                    "accepted": [], "rejected": []}
            out.append(last)
        p = e.get("payload") or {}
        last["accepted" if e["kind"] == EventKind.VARIANT_ACCEPTED else "rejected"].append(
            f"{p.get('slot', '?')} (→ {_short(p.get('difficulty'))})" if e["kind"] == EventKind.VARIANT_ACCEPTED else
            str(p.get("slot", "?")))
    return out


def _timeline_details(e: dict) -> str:
    if e["kind"] != "variants":
        return event_details(e.get("payload"))
    parts = [f"{label} {len(e[label])}: slot{'s' if len(e[label]) > 1 else ''} {', '.join(e[label])}"
             for label in ("accepted", "rejected") if e[label]]
    return value_text(" · ".join(parts), 300)


def events_block(bundle: dict, max_rows: int = MAX_EVENT_ROWS, chunk: int = 0) -> str:
    events = [e for e in bundle.get("events") or () if e["kind"] not in SKIPPED_EVENTS]
    counts = Counter(e["kind"] for e in events)
    lines = " · ".join(f"{esc(k)} {n}" for k, n in counts.most_common())
    out = (f'<p class="muted">{len(events):,} events ({lines or "none"}). Recorded episodes are not listed; '
           "an iteration's variant decisions share one row (the adaptation log has each).</p>")
    timeline = _timeline(events)
    rows: list = []
    shown: list[dict | None] = list(timeline)
    if len(timeline) > max_rows:     # the first and the last half: how it began and how it ended
        half = max_rows // 2
        shown = [*timeline[:half], None, *timeline[-half:]]
    for e in shown:
        if e is None:
            rows.append(esc(f"… {len(timeline) - 2 * half:,} rows in the middle are not listed "
                            "(the CSV and JSON exports hold every event) …"))
            continue
        rows.append([num(e.get("iteration")), esc(time.strftime("%m-%d %H:%M:%S", time.localtime(e.get("t") or 0))),
                     esc(e["kind"]), _timeline_details(e)])
    return out + (table(["iteration", "time", "event", "details"], rows, "events", numeric=(0,), chunk=chunk, wide=True)
                  if rows else "")


def alert_spans(bundle: dict) -> list[dict]:
    """Each alert the run raised, with where it began (`since`), where it was raised and where it
    ended (None: still active when the data ends), in the order raised. A resumed run's repeated
    raise continues the span its run's end had closed."""
    spans: list[dict] = []
    open_: dict[str, dict] = {}
    for e in bundle.get("events") or ():
        p = e.get("payload")
        if e.get("kind") != EventKind.ALERT or not isinstance(p, dict) or not isinstance(p.get("alert"), str):
            continue
        name = p["alert"]
        if p.get("state") == RAISED:
            last = next((sp for sp in reversed(spans) if sp["alert"] == name), None)
            if p.get("resumed") and last is not None and last["reason"] == RUN_ENDED:
                last.update(ended=None, reason="")
                open_[name] = last
                continue
            open_[name] = {"alert": name, "since": p.get("since"), "raised": e.get("iteration"), "ended": None,
                           "reason": "", "payload": p}
            spans.append(open_[name])
        elif p.get("state") == CLEARED and name in open_:
            span = open_.pop(name)
            span.update(ended=e.get("iteration"), reason=str(p.get("reason", "")))
    return spans


def alerts_block(bundle: dict) -> str:
    """The alerts the theory raised during the run: what held, from when to when, what it means
    and what a person might do."""
    spans = alert_spans(bundle)
    if not spans:
        return '<p class="muted">No alert was raised: μ stayed above 1, the judge did not collapse, tasks ' \
               "stayed in band, the environment model's answers were mostly valid and every loss was finite.</p>"
    rows = []
    for sp in spans:
        rule, p = ALERTS.get(sp["alert"]), sp["payload"]
        ended = ("end of the run" if sp["reason"] == RUN_ENDED else num(sp["ended"])) if sp["ended"] is not None \
            else "still active"
        rows.append([esc(rule.title if rule else sp["alert"]), num(sp["since"]), num(sp["raised"]), ended,
                     value_text(describe(p), 200),
                     value_text(f"{p.get('message', '')} What to do: {p.get('advice', '')}", 600)])
    return table(["alert", "began", "raised", "ended", "what held", "what it means"], rows, "alerts", wide=True)


# a variant's outcome in the adaptation log, by its task row's status
OUTCOMES = {TaskStatus.ACTIVE: "accepted", TaskStatus.RETIRED: "accepted", TaskStatus.REJECTED: "rejected",
            TaskStatus.PENDING: "pending", TaskStatus.DROPPED: "dropped"}


def critic_summary(critic_json) -> str:
    """The focus, then the scalar counts as key=value; acc/direction are columns already."""
    if not critic_json:
        return DASH
    try:
        critic = json.loads(critic_json) if isinstance(critic_json, str) else critic_json
    except (TypeError, ValueError):
        return value_text(critic_json, 200)
    if not isinstance(critic, dict):
        return value_text(critic, 200)
    parts = [str(critic["focus"])] if "focus" in critic else []
    for k, v in critic.items():    # lists (cells, steps) are positions for the mutator, not a summary
        if k not in ("focus", "acc", "direction") and not isinstance(v, (list, dict)):
            parts.append(f"{k}={_short(v)}")
    return value_text(" · ".join(parts), 240)


def adaptation_block(bundle: dict, max_rows: int = MAX_LOG_ROWS, chunk: int = 0) -> str:
    tasks = bundle.get("tasks") or []
    variants = [t for t in tasks if (t.get("version") or 0) > 0]
    if not variants:
        return '<p class="muted">No task was rewritten in this run.</p>'
    parents = {(t["slot"], t["version"]): t for t in tasks if t["status"] in (TaskStatus.ACTIVE, TaskStatus.RETIRED)}
    by_slot: dict[int, list[dict]] = {}
    for t in variants:
        by_slot.setdefault(t["slot"], []).append(t)
    active = {t["slot"]: t for t in tasks if t["status"] == TaskStatus.ACTIVE}
    summary = []
    for slot in sorted(by_slot):
        vs = by_slot[slot]
        outcome = Counter("override" if not t.get("direction") else OUTCOMES.get(t["status"], t["status"]) for t in vs)
        live = active.get(slot)
        summary.append([num(slot), num(len(vs)), num(outcome["accepted"]), num(outcome["rejected"]),
                        num(outcome["pending"] + outcome["dropped"] + outcome["override"]),
                        num(live["version"]) if live else DASH, num(live["difficulty"]) if live else DASH])
    rows: list = []
    for t in sorted(variants, key=lambda t: (t["slot"], t["version"], t["uid"]))[:max_rows]:
        parent = parents.get((t["slot"], t["version"] - 1))
        result = "override" if not t.get("direction") else OUTCOMES.get(t["status"], t["status"])
        diff = f"{num(parent['difficulty'])} → {num(t['difficulty'])}" if parent else num(t.get("difficulty"))
        rows.append([num(t["slot"]), f"v{num(t['version'])}",
                     f"{num(t.get('created_iteration'))} → {num(t.get('decided_iteration'))}",
                     esc(t.get("direction")), f"{num(t.get('prev_acc'), 2)} → {num(t.get('new_acc'), 2)}", diff,
                     esc(result), critic_summary(t.get("critic_json"))])
    note = (f'<p class="muted">The first {max_rows:,} of {len(variants):,} variants are listed '
            "(the CSV and JSON exports hold them all).</p>" if len(variants) > max_rows else "")
    return ("<h3>Per slot</h3>"
            + table(["slot", "variants", "accepted", "rejected", "other", "current version", "current difficulty"],
                    summary, "slots", numeric=(0, 1, 2, 3, 4, 5, 6))
            + "<h3>Every variant</h3>"
            + '<p class="muted">Iterations: asked → decided. Accuracy: the slot\'s before → the variant\'s. '
              "Difficulty: the task it rewrote → the variant.</p>"
            + table(["slot", "version", "iterations", "direction", "acc before → after", "difficulty", "outcome",
                     "critic"], rows, "adaptation", numeric=(0,), chunk=chunk, wide=True) + note)


def _params(params_json) -> tuple[str, str]:
    try:
        p = json.loads(params_json) if isinstance(params_json, str) else (params_json or {})
    except (TypeError, ValueError):
        return value_text(params_json, 200), DASH
    if isinstance(p, dict) and isinstance(p.get("params"), dict):
        return value_text(" · ".join(f"{k}={_short(v)}" for k, v in p["params"].items()), 240), esc(p.get("seed"))
    return value_text(p, 240), DASH


def pool_table(bundle: dict) -> str:
    rows = []
    for t in sorted(bundle.get("tasks") or (), key=lambda t: (t["slot"], t["version"], t["uid"])):
        if t["status"] in (TaskStatus.ACTIVE, TaskStatus.PENDING):
            params, seed = _params(t.get("params_json"))
            rows.append([num(t["slot"]), f"v{num(t['version'])}", esc(t["status"]), esc(t.get("family")),
                         num(t.get("difficulty")), num(t.get("last_acc"), 2), params, seed])
    if not rows:
        return '<p class="muted">The run stored no task pool.</p>'
    return table(["slot", "version", "status", "family", "difficulty", "last acc", "parameters", "seed"], rows,
                 "pool", numeric=(0, 4, 5), wide=True)


def local_environment() -> dict:
    """Used when the caller passes no environment: the facts of this machine."""
    return environment_info()


def environment_block(facts: list[Facts], environment: dict | None) -> str:
    env = local_environment() if environment is None else environment
    rows: list = []
    for k, v in env.items():
        if isinstance(v, dict):
            rows.append(esc(k))
            rows += [[esc(k2), esc(v2 if v2 is not None else "not installed")] for k2, v2 in flatten(v).items()]
        else:
            rows.append([esc(k), value_text(v)])
    runs = table(["run", "device", "host", "pid"],
                 ([run_label(f, i) if len(facts) > 1 else esc(f.name), esc(f.run.get("device")),
                   esc(f.run.get("host")), esc(f.run.get("pid"))] for i, f in enumerate(facts)), "devices")
    return ("<h3>Where the run trained</h3>" + runs
            + "<h3>Software (the machine that wrote this report)</h3>" + table(["", "version"], rows, "env"))
