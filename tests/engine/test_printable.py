"""rla_engine.text: stored text made safe for a terminal, a Qt widget and strict JSON."""
import json

from rla_engine.text import as_html, json_safe, printable, shown


def test_printable_escapes_every_control_and_bidi_character_visibly():
    assert printable("evil\x1b[2Jname") == "evil\\x1b[2Jname"
    assert printable("a\x00b\x07c\x7fd\x9be\x85") == "a\\x00b\\x07c\\x7fd\\x9be\\x85"
    assert printable("tab\there\nnext\rback") == "tab\\there\\nnext\\rback"
    assert printable("abc\u202edef\u2066\u2069\u200f\u061c") == "abc\\u202edef\\u2066\\u2069\\u200f\\u061c"
    assert printable("line\u2028sep") == "line\\u2028sep"
    assert printable("lone \ud800 surrogate") == "lone \\ud800 surrogate"
    every = "".join(map(chr, range(0x20))) + "\x7f" + "".join(map(chr, range(0x80, 0xa0)))
    assert all(0x20 <= ord(ch) < 0x7f for ch in printable(every))
    printable(every).encode("ascii")


def test_printable_leaves_ordinary_text_alone_and_keeps_what_it_is_told():
    for text in ("gridworld λ=0.5 μ≥1 ✓", "Grüße 你好 مرحبا", "C:\\runs\\a", ""):
        assert printable(text) == text
    assert printable("two\nlines\x1b", keep="\n") == "two\nlines\\x1b"
    assert printable(None) == "" and printable(42) == "42"


def test_as_html_shows_markup_verbatim():
    html = as_html("<b>bold</b> & <img src=x>\x1b\nnext")
    assert "<b>" not in html and "&lt;b&gt;bold&lt;/b&gt; &amp; &lt;img src=x&gt;\\x1b<br>next" in html


def test_json_safe_output_is_strict_json():
    deep: list = []
    for _ in range(800):
        deep = [deep]
    doc = {"nan": float("nan"), "inf": float("-inf"), "blob": b"\xff\x00", "ok": [1, 2.5, "x", None, True],
           "deep": deep, 3: "key", "odd": object.__new__(object)}
    text = json.dumps(json_safe(doc), allow_nan=False)
    back = json.loads(text)
    assert back["nan"] is None and back["inf"] is None and back["blob"] == "\ufffd\x00"
    assert back["ok"] == [1, 2.5, "x", None, True] and back["3"] == "key"


def test_shown_marks_what_the_store_could_not_read():
    row = {"id": "r1", "name": "", "iteration": 0, "status": "damaged", "device": None, "kind": "\ufffd\x00",
           "damaged": {"name": "NULL", "iteration": "'many'", "status": "NULL", "kind": "a blob of 2 bytes"}}
    assert shown(row, "name") == "?" and shown(row, "iteration") == "?"
    assert shown(row, "status") == "damaged" and shown(row, "kind") == "\ufffd\\x00"
    assert shown(row, "device", "-") == "-" and shown(row, "id") == "r1"
