"""Tables fit the terminal: long values cut with an ellipsis, short ones
untouched, pipes left whole unless COLUMNS says otherwise."""

from __future__ import annotations

import io

import pytest

from gcm_checks.commands import _table


@pytest.mark.parametrize("natural, total, flexible, expect", [
    ([6, 10, 200], 80, None, [6, 10, 62]),          # the last column gives
    ([6, 10, 20], 80, None, [6, 10, 20]),           # fits: untouched
    ([6, 100, 100], 80, [1, 2], [6, 36, 36]),       # the widest flexible columns give, evenly
    ([6, 10, 200], None, None, [6, 10, 200]),       # not a terminal: whole
    ([30, 30, 30], 20, None, [30, 30, 4]),          # cannot fit: never below the minimum
])
def test_fit_widths(natural, total, flexible, expect):
    assert _table.fit_widths(natural, total, flexible=flexible) == expect


def test_render_cuts_with_an_ellipsis_to_the_width():
    out = io.StringIO()
    rows = [["FAIL", "gpu.ecc.uncorrectable", "GPU 3 (00000000:5D:00.0)", "x" * 300]]
    _table.render(["STATUS", "CHECK", "SUBJECT", "MESSAGE"], rows, out, width=80)
    lines = out.getvalue().splitlines()
    assert all(len(ln) <= 80 for ln in lines)
    assert lines[1].endswith(_table.ELLIPSIS) and lines[1].startswith("FAIL   gpu.ecc.uncorrectable")


def test_pipes_are_not_cut_unless_columns_is_set(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert _table.terminal_width(io.StringIO()) is None
    monkeypatch.setenv("COLUMNS", "60")
    assert _table.terminal_width(io.StringIO()) == 60


def test_newlines_in_values_stay_on_one_row():
    out = io.StringIO()
    _table.render(["A", "B"], [["x", "line1\nline2"]], out, width=None)
    assert out.getvalue().splitlines()[1] == "x line1 line2"
