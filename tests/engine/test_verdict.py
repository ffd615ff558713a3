r"""parse_verdict (rla_engine.rewards): the last `\boxed{` in a judge's output decides its verdict.

Every row is checked by hand: find the last `\boxed{`, read up to the first `}` after it, strip
whitespace, and map `1`/`+1` -> +1, `-1` -> -1, anything else (or no box, an unclosed last box,
a `{` inside) -> 0. Raw strings, so `\b` below is a backslash and a b, as a model writes it.
"""
import pytest

from rla_engine.rewards import parse_verdict

CASES = [
    # readable verdicts
    (r"\boxed{1}", 1),
    (r"\boxed{+1}", 1),
    (r"\boxed{-1}", -1),
    (r"\boxed{ 1 }", 1),                                     # whitespace inside the braces
    ("\\boxed{  -1\n}", -1),                                 # a real newline is whitespace too
    ("\\boxed{\t+1 }", 1),
    (r"The step moves right, correct. \boxed{1}", 1),
    (r"\boxed{1} on reflection it is wrong \boxed{-1}", -1),  # the last box decides
    (r"\boxed{-1} no wait \boxed{+1}", 1),
    (r"\boxed{-1} and then some text after it", -1),         # text after the box is ignored
    (r"\boxed{1}}", 1),                                      # a stray } after the box is outside it
    (r"\boxed{\boxed{1}}", 1),                               # the inner box is the last one opened
    # unreadable: 0
    ("", 0),
    ("I think it is right: 1", 0),                           # no box at all
    (r"\boxed{0}", 0),
    (r"\boxed{2}", 0),
    (r"\boxed{yes}", 0),
    (r"\boxed{}", 0),                                        # empty box
    (r"\boxed{ }", 0),
    (r"\boxed{+ 1}", 0),                                     # a space inside the number
    (r"\boxed{1.0}", 0),
    (r"\boxed{--1}", 0),
    ("\\boxed{\u22121}", 0),                                 # Unicode minus sign, not '-'
    (r"\boxed{-1", 0),                                       # unclosed
    # the last box is unclosed: the earlier closed box does not count
    (r"\boxed{1} but then \boxed{-1", 0),
    (r"\boxed{{1}}", 0),                                     # nested braces
    (r"\boxed{1{}}", 0),
    (r"\boxed {1}", 0),                                      # not the literal '\boxed{'
    (r"boxed{1}", 0),                                        # no backslash
    (r"\fbox{1}", 0),
    (r"\Boxed{1}", 0),                                       # case matters
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_parse_verdict_table(text, expected):
    assert parse_verdict(text) == expected


def test_the_table_is_large_and_covers_all_three_values():
    assert len(CASES) >= 20
    assert {v for _, v in CASES} == {1, -1, 0}


def test_the_result_is_a_plain_int():
    assert type(parse_verdict(r"\boxed{+1}")) is int


@pytest.mark.parametrize("bad", [None, b"\\boxed{1}", 1])
def test_a_non_string_is_a_caller_bug(bad):
    with pytest.raises(ValueError, match="must be a str"):
        parse_verdict(bad)
