"""sacct rows -> runs and steps: parsing tables from real Slurm 22.05 output."""

from __future__ import annotations

from pathlib import Path

import pytest

from gcm_checks import slurm
from gcm_checks.accounting.records import (
    JobRecord,
    ended_between,
    fmt_duration,
    group_rows,
    parse_duration,
    parse_exit,
    parse_mem,
    parse_time,
)

from corpus import corpus  # noqa: E402

FIX = Path(__file__).parent / "fixtures" / "accounting"
FIELDS = (FIX / "sacct-22.05-mixed.fields").read_text().strip().split(",")


def mixed():
    return group_rows(slurm.parse_sacct((FIX / "sacct-22.05-mixed.txt").read_text(), FIELDS))


@pytest.mark.parametrize("value,expected", [
    ("00:00:00", 0), ("00:01:22", 82), ("1-02:03:04", 93784), ("365-00:00:00", 365 * 86400),
    ("05:30", 330), ("00:00.004", 0), ("UNLIMITED", None), ("Partition_Limit", None), ("", None),
])
def test_parse_duration(value, expected):
    assert parse_duration(value) == expected


@pytest.mark.parametrize("value,expected", [
    ("6040K", 6040 * 1024), ("1.5G", int(1.5 * (1 << 30))), ("512M", 512 << 20), ("0", None), ("", None), ("12", 12),
])
def test_parse_mem(value, expected):
    assert parse_mem(value) == expected


@pytest.mark.parametrize("value,expected", [("3:0", (3, 0)), ("0:9", (0, 9)), ("0:15", (0, 15)), ("", (None, None)), ("x", (None, None))])
def test_parse_exit(value, expected):
    assert parse_exit(value) == expected


@pytest.mark.parametrize("value", ["Unknown", "None", "", "2026-13-40T00:00:00"])
def test_parse_time_unknown(value):
    assert parse_time(value) is None


def test_parse_time_round_trips_sacct_format():
    t = parse_time("2026-11-30T01:55:38")
    assert slurm.sacct_time(t) == "2026-11-30T01:55:38"


# key, state, exit, derived, failed steps, failed, runs
EXPECTED = [
    ("1", "COMPLETED", "0:0", 0, [], False, 1),
    ("2", "FAILED", "3:0", 0, [], True, 1),
    ("3", "COMPLETED", "0:0", 1, ["3.0"], True, 1),
    ("4", "TIMEOUT", "0:0", 0, [], True, 1),
    ("5", "CANCELLED", "0:0", 0, [], True, 1),
    ("6", "REQUEUED", "0:0", 0, [], True, 2),
    ("6.1", "COMPLETED", "0:0", 0, [], False, 2),
]


def test_group_rows_one_record_per_run_with_its_steps():
    recs = mixed()
    got = [(r.key, r.state, r.exit_status, r.derived_exit_code, [s.step_id for s in r.failed_steps], r.failed, r.runs) for r in recs]
    assert got == EXPECTED
    by = {r.key: r for r in recs}
    assert by["4"].elapsed_s == 82 and by["4"].timelimit_s == 60
    assert by["5"].state_raw == "CANCELLED by 0"
    assert [s.step_id for s in by["6"].steps] == ["6.batch"] and by["6"].steps[0].state == "CANCELLED"
    assert [s.step_id for s in by["6.1"].steps] == ["6.batch"] and by["6.1"].steps[0].state == "COMPLETED"
    assert by["1"].work_dir == "/scratch/gcmtest/jobs" and by["1"].nodes == "node1" and by["1"].uid == 0


def test_record_round_trips_through_dict():
    for r in mixed():
        assert JobRecord.from_dict(r.to_dict()) == r


def test_timeout_batch_step_cancelled_is_not_a_failed_step():
    # 4.batch CANCELLED 0:15 is the job being ended, not a step failing.
    r = {x.key: x for x in mixed()}["4"]
    assert r.steps[0].state == "CANCELLED" and r.failed_steps == ()


def test_placeholder_row_is_recognised_and_deferred():
    rows = [
        {"JobID": "9", "JobName": "allocation", "User": "root", "State": "COMPLETED", "ExitCode": "0:0", "WorkDir": "", "End": "2026-11-30T01:00:00"},
        {"JobID": "9.batch", "JobName": "batch", "State": "COMPLETED", "ExitCode": "0:0"},
        {"JobID": "10", "JobName": "allocation", "User": "alice", "State": "COMPLETED", "ExitCode": "0:0", "WorkDir": "/home/alice", "End": "2026-11-30T01:00:00"},
    ]
    recs = group_rows(rows)
    assert [r.placeholder for r in recs] == [True, False]
    assert not recs[0].final and recs[1].final
    t = parse_time("2026-11-30T01:00:00")
    assert [r.key for r in ended_between(recs, t - 10, t + 10)] == ["9", "10"]


def test_ended_between_keeps_only_final_runs_in_window():
    recs = mixed()
    t0 = parse_time("2026-11-30T01:55:50")
    t1 = parse_time("2026-11-30T01:57:30")
    assert [r.key for r in ended_between(recs, t0, t1)] == ["4", "6", "6.1"]


@pytest.mark.parametrize("line,fields,expected", [
    ("12|a|b|FAILED", ["JobID", "JobName", "State"], {"JobID": "12", "JobName": "a|b", "State": "FAILED"}),
    ("JobID|State", ["JobID", "State"], None),  # a header is skipped
    ("1|2|3", ["JobID", "State"], None),  # no JobName to absorb the extra column: dropped
])
def test_parse_sacct_odd_lines(line, fields, expected):
    rows = slurm.parse_sacct(line + "\n", fields)
    assert rows == ([expected] if expected else [])


def test_parse_sacct_corpus_with_header_and_steps():
    text = corpus("formats", "sacct", "cluster_utils87_sacct_parsable2_cancelled_0-10.txt").read_text()
    if not text:
        pytest.skip("corpus not present")
    header = text.splitlines()[0].split("|")
    recs = group_rows(slurm.parse_sacct(text, header))
    assert [r.job_id for r in recs] == ["239023", "239024", "239025", "239026"]
    # srun step cancelled with signal 10 inside a COMPLETED job: a failed step? No:
    # CANCELLED steps are the job ending them (srun --kill-on-bad-exit, scancel of a step).
    assert all(len(r.steps) == 3 for r in recs)
    assert all(r.steps[-1].signal == 10 for r in recs)


@pytest.mark.parametrize("s,expected", [(0, "00:00:00"), (82, "00:01:22"), (93784, "1-02:03:04"), (None, "?")])
def test_fmt_duration(s, expected):
    assert fmt_duration(s) == expected


@pytest.mark.parametrize("kw,want,absent", [
    ({"since": 0.0, "until": 60.0}, ["--duplicates", "--allusers", "-S", "-E"], ["-j", "-r"]),
    ({"job_ids": ["12"]}, ["-j", "12", "--duplicates"], ["--allusers"]),
    ({"since": 0.0, "partition": "gpu"}, ["-r", "gpu"], ["-j"]),
])
def test_sacct_argv(kw, want, absent):
    argv = slurm.sacct_argv("/usr/bin/sacct", **kw)
    assert argv[:3] == ["/usr/bin/sacct", "--parsable2", "--noheader"]
    for w in want:
        assert w in argv
    for a in absent:
        assert a not in argv


def test_sacct_rows_failures_are_slurm_errors():
    from gcm_checks.proc import Outcome, ProcResult

    def runner(argv, timeout, env=None):
        return ProcResult(tuple(argv), Outcome.NONZERO, 1, "", "sacct: error: Slurm accounting storage is disabled", 0.01)

    with pytest.raises(slurm.SlurmError, match="accounting storage is disabled"):
        slurm.sacct_rows(since=0, until=1, sacct="/bin/true", runner=runner)
    with pytest.raises(slurm.SlurmError, match="not found"):
        slurm.sacct_rows(since=0, until=1, sacct="/nonexistent/sacct")


def test_sacct_rows_uses_the_timeout_and_parses():
    from gcm_checks.proc import Outcome, ProcResult

    seen = {}

    def runner(argv, timeout, env=None):
        seen["timeout"] = timeout
        return ProcResult(tuple(argv), Outcome.OK, 0, (FIX / "sacct-22.05-mixed.txt").read_text(), "", 0.01)

    rows = slurm.sacct_rows(since=0, until=1, sacct="/bin/true", runner=runner, timeout=7.5)
    assert seen["timeout"] == 7.5 and len(rows) == 15 and rows[0]["JobID"] == "1"
