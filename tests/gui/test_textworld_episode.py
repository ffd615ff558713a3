"""A text game's episode (textworld_commands) in the Episode view and in the report: the transcript
of a real TextWorld game, a line per turn with the command, its verdict chips, the oracle's label
and the game's answer; the whole transcript in the tooltip; the report's "Last episode" table,
escaped."""
import numpy as np
import pytest
from PySide6.QtGui import QImage

from rla_engine.tasks import load_family
from rla_gui.panels import episode_view as EV
from rla_gui.panels.episode_view import EpisodeViewPanel
from rla_gui.report.transcript import transcript_block

FAMILY = load_family("textworld_commands")


@pytest.fixture(scope="module")
def payload():
    """An episode as the embedded backend records it, of a real game played by its walkthrough
    after one wasted turn (an empty slot)."""
    task = FAMILY.sample_many([0.3], np.random.default_rng(11))[0]
    env = FAMILY.make_env([task], 1)
    env.reset()
    actions = [15]
    env.step(np.array(actions))
    while env.active.any():
        actions.append(int(env.oracle_action()[0]))
        env.step(env.oracle_action())
    transcript = FAMILY.transcript(task, actions)
    verdicts = [[-1, -1]] + [[1, 1] if i % 2 else [1, -1] for i in range(len(actions) - 1)]
    return {"family": "textworld_commands", "slot": 3, "task": FAMILY.describe(task), "success": True,
            "info": [[0] * 6] * len(actions), "verdicts": verdicts, "oracle": [-1] + [1] * (len(actions) - 1),
            "transcript": transcript}


def render(qtbot, payload, w=700, h=420) -> QImage:
    qtbot.addWidget(viewer := EpisodeViewPanel())
    viewer.resize(w, h)
    viewer.show_episode(payload)
    return viewer, viewer.grab(viewer.picture_area()).toImage().convertToFormat(QImage.Format.Format_RGB32)


def pixels(img: QImage, color) -> int:
    want = color.rgb() & 0xFFFFFF
    return sum(1 for y in range(img.height()) for x in range(img.width()) if img.pixel(x, y) & 0xFFFFFF == want)


def test_the_transcript_is_drawn_a_turn_a_line_with_its_chips(qtbot, payload):
    steps = payload["transcript"]
    assert steps[0] == {"command": "(an empty slot)", "answer": "Nothing happens."}
    assert steps[-1]["answer"] == "You won." and len(steps) >= 2
    viewer, img = render(qtbot, payload)
    chips = {v: sum(s.count(v) for s in payload["verdicts"]) for v in (1, -1)}
    # a chip is a filled square of ~100 pixels at this size; the ✓ / ✗ glyphs hold far fewer
    assert pixels(img, EV.chip_color(1)) >= 40 * chips[1] and pixels(img, EV.chip_color(-1)) >= 40 * chips[-1]
    assert "textworld_commands" in EV.LEGENDS and not viewer.legend.isHidden()
    tip = viewer.toolTip()
    assert all(f"> {s['command']}" in tip for s in steps) and "You won." in tip
    assert "success" in tip and f"{len(steps)}/{payload['task']['turns']} steps" in tip


def test_a_short_panel_draws_the_first_turns_and_never_fails(qtbot, payload):
    long = {**payload, "transcript": payload["transcript"] * 20, "verdicts": payload["verdicts"] * 20,
            "oracle": payload["oracle"] * 20}
    _viewer, img = render(qtbot, long, 300, 160)
    assert pixels(img, EV.chip_color(-1)) > 0         # its first turn drawn, not "episode could not be drawn"


def test_the_report_lists_every_turn_escaped(payload):
    hostile = {**payload, "transcript": [*payload["transcript"], {"command": "<script>x</script>",
                                                                  "answer": "a & b <b>"}],
               "verdicts": [*payload["verdicts"], [1]], "oracle": [*payload["oracle"], -1]}
    bundle = {"events": [{"kind": "episode", "iteration": 7, "payload": hostile}]}
    html = transcript_block(bundle)
    assert html is not None and "Iteration 7" in html
    assert html.count("<tr>") == len(hostile["transcript"]) + 1      # the head and a row per turn
    assert "&lt;script&gt;x&lt;/script&gt;" in html and "<script>" not in html and "a &amp; b &lt;b&gt;" in html
    assert "Nothing happens." in html and "You won." in html
    assert transcript_block({"events": [{"kind": "episode", "iteration": 1,
                                         "payload": {"family": "gridworld", "task": {}}}]}) is None
