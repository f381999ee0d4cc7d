"""sacct_rows and sacct_stream: one preamble, so the same query runs the same
sacct command line and parses the same way, whichever a caller uses."""

from __future__ import annotations

import pytest

from gcm_checks import slurm
from gcm_checks.slurm.parse import SlurmError


def _fake_sacct(tmp_path, rows):
    """A stand-in sacct that records its argv (one word a line) and prints ``rows``."""
    argv_file = tmp_path / "argv"
    script = tmp_path / "sacct"
    body = "".join(f"echo '{r}'\n" for r in rows)
    script.write_text(f"#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done > {argv_file}\n{body}")
    script.chmod(0o755)
    return str(script), argv_file


@pytest.mark.parametrize("query", [
    {"since": 0.0, "until": 60.0},
    {"job_ids": ["12", "13"], "duplicates": False},
    {"since": 0.0, "partition": "gpu", "fields": ("JobID", "State")},
])
def test_rows_and_stream_run_the_same_command(tmp_path, query):
    fields = query.get("fields", slurm.SACCT_FIELDS)
    row = "|".join(["12"] + ["x"] * (len(fields) - 1))
    sacct, argv_file = _fake_sacct(tmp_path, [row])
    rows = slurm.sacct_rows(sacct=sacct, timeout=10, **query)
    argv_rows = argv_file.read_text().splitlines()
    streamed = list(slurm.sacct_stream(sacct=sacct, timeout=10, **query))
    argv_stream = argv_file.read_text().splitlines()
    assert argv_rows == argv_stream == slurm.sacct_argv(sacct, **query)[1:]
    assert rows == streamed == [dict(zip(fields, row.split("|")))]


@pytest.mark.parametrize("call", [
    lambda **kw: slurm.sacct_rows(**kw),
    lambda **kw: list(slurm.sacct_stream(**kw)),
    lambda **kw: slurm.sacct_job("7", **kw),
])
def test_a_missing_sacct_is_a_slurm_error_for_every_entry_point(call):
    with pytest.raises(SlurmError, match="sacct: not found"):
        call(sacct="/nonexistent/sacct", since=0.0)


def test_an_unknown_query_keyword_is_refused():
    with pytest.raises(TypeError):
        slurm.sacct_rows(sacct="/bin/true", sincee=0.0)
