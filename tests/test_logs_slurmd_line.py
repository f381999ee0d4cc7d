"""logs.slurmd_line: the one plain stderr line library code writes."""

from __future__ import annotations

import io
import sys

from gcm_checks.logs import slurmd_line


def test_one_line_on_stderr(capsys):
    slurmd_line("gcm-checks prolog n1: NOT DRAINED - braked")
    assert capsys.readouterr() == ("", "gcm-checks prolog n1: NOT DRAINED - braked\n")


def test_never_raises_when_stderr_is_gone(monkeypatch):
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    slurmd_line("nobody hears this")  # ValueError on a closed file: swallowed
