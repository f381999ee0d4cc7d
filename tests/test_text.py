"""gcm_checks.text: one rule set for every place text is shown (see its module doc)."""

from __future__ import annotations

import pytest

from gcm_checks.text import ascii_line, clean_text, one_line, strip_escapes

HOSTILE = "job\x1b]52;c;ZXZpbA==\x07 name\x1b[31m\r\nSubject: x\u2028y\u202etxt.exe\x00\x9b\tend"


@pytest.mark.parametrize("raw,expected", [
    (HOSTILE, "job name\nSubject: x\nytxt.exe\tend"),
    (b"caf\xc3\xa9\r\nnext\rline", "caf\u00e9\nnext\nline"),
    (b"\xff bytes", "\ufffd bytes"),
    ("a\x0bb\x0cc\x85d", "a\nb\nc\nd"),
    ("lone \x1b esc", "lone  esc"),
    (42, "42"),
])
def test_clean_text_keeps_lines_and_tabs_and_drops_the_rest(raw, expected):
    assert clean_text(raw) == expected


@pytest.mark.parametrize("raw,limit,expected", [
    (HOSTILE, None, "job name Subject: x ytxt.exe end"),
    ("  many   spaces\t\there  ", None, "many spaces here"),
    ("x" * 50, 10, "xxxxxxx..."),
    ("x" * 10, 10, "x" * 10),
    ("abcdef", 2, "ab"),
])
def test_one_line(raw, limit, expected):
    assert one_line(raw, limit) == expected


def test_ascii_line_marks_non_ascii_and_bounds_after():
    assert ascii_line("caf\u00e9 \u202eok", 120) == "caf? ok"
    assert ascii_line("\u00e9" * 20, 10) == "???????..."


def test_strip_escapes_only_touches_escape_sequences():
    assert strip_escapes("\x1b[1mloss\x1b[0m 0.5\tx") == "loss 0.5\tx"
    assert strip_escapes("plain\x00") == "plain\x00"
