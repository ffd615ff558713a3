"""The report's section for a text game's run (textworld, textworld_commands): its newest recorded
episode as a transcript, a row per turn with what was played, the judge's verdicts, the oracle's
label and the game's answer — what the Episode view (or, for a language model, the Samples panel)
showed last.

The commands and the game's text are model output and game text: every cell goes through
escape.esc / value_text, cut first.
"""
from __future__ import annotations

from rla_engine.vocabulary import EventKind

from .escape import esc, table, value_text

GAMES = ("textworld", "textworld_commands")
ANSWER_CHARS = 300
COMMAND_CHARS = 200


def _verdicts(votes) -> str:
    return " ".join({1: "+1", -1: "−1"}.get(v, "?") for v in votes or []) or "—"


def _oracle(label) -> str:
    return {1: "✓", -1: "✗"}.get(label, "—")


def newest_episode(bundle: dict) -> tuple[dict, list[tuple[str, list, int | None, str]]] | None:
    """(what it was, its turns as (played, verdicts, oracle, answer)) of the newest game episode."""
    for e in reversed(bundle.get("events") or []):
        payload = e.get("payload") if isinstance(e.get("payload"), dict) else {}
        if payload.get("family") not in GAMES:
            continue
        if e["kind"] == EventKind.EPISODE and isinstance(payload.get("transcript"), list):
            verdicts, oracle = payload.get("verdicts") or [], payload.get("oracle") or []
            turns = [(str(s.get("command")), verdicts[i] if i < len(verdicts) else [],
                      oracle[i] if i < len(oracle) else None, str(s.get("answer")))
                     for i, s in enumerate(payload["transcript"]) if isinstance(s, dict)]
            return {"task": (payload.get("task") or {}).get("text"), "success": payload.get("success"),
                    "iteration": e.get("iteration")}, turns
        if e["kind"] == EventKind.SAMPLES and payload.get("trajectories"):
            t = payload["trajectories"][0]
            turns = [(" ".join(str(s.get("text")) for s in turn.get("steps") or []),
                      [v for s in turn.get("steps") or [] for v in s.get("verdicts") or []],
                      (turn.get("steps") or [{}])[0].get("oracle"), str(turn.get("observation") or ""))
                     for turn in t.get("turns") or []]
            return {"task": t.get("task"), "success": t.get("success"), "iteration": e.get("iteration")}, turns
    return None


def transcript_block(bundle: dict) -> str | None:
    """The section's markup, or None if the run recorded no game episode."""
    found = newest_episode(bundle)
    if found is None:
        return None
    what, turns = found
    head = (f'<p class="muted">Iteration {esc(what["iteration"])} · {"won" if what["success"] else "not won"} · '
            "verdicts: the judge's samples of the step; oracle: the game's own label (the judge never sees it)</p>"
            f"<p>{value_text(what['task'] or '', 1500)}</p>")
    rows = [[str(i + 1), value_text(played, COMMAND_CHARS), esc(_verdicts(votes)), esc(_oracle(label)),
             value_text(answer, ANSWER_CHARS)] for i, (played, votes, label, answer) in enumerate(turns)]
    return head + table(["turn", "played", "verdicts", "oracle", "the game's answer"], rows, "transcript", wide=True)
