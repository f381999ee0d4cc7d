"""sacct parsing that loses nothing (issue 18 item 4) and streams (issue 17
item 6): our captures in tests/fixtures/accounting (README.md there)."""

from __future__ import annotations

import os
import sys

import pytest

from gcm_checks import slurm
from gcm_checks.accounting.diagnose import failure_trends
from gcm_checks.accounting.records import SacctNotes, group_rows, iter_records
from gcm_checks.proc import LineStream, Outcome

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "accounting")
FIELDS = list(slurm.SACCT_FIELDS)
FAKE_SACCT = os.path.join(os.path.dirname(__file__), "bench", "fake_sacct.py")


def _read(name):
    return open(os.path.join(FIX, name)).read()


def _records(name, notes=None):
    return group_rows(slurm.parse_sacct(_read(name), FIELDS, notes), notes=notes)


def test_rows_grouped_by_job_whatever_their_order():
    notes = SacctNotes()
    recs = {r.job_id: r for r in _records("sacct-out-of-order.txt", notes)}
    assert set(recs) == {"41", "42"}
    r = recs["41"]
    assert (r.state, r.exit_code, r.nodes, r.synthesized) == ("FAILED", 1, "gpu[001-002]", False)
    assert sorted(s.step_id for s in r.steps) == ["41.0", "41.batch", "41.extern"]
    assert [s.step_id for s in recs["42"].steps] == ["42.batch"]
    assert notes.to_list() == [] and notes.rows == 6


def test_orphan_steps_become_a_synthesised_job_and_are_noted():
    notes = SacctNotes()
    recs = {r.job_id: r for r in _records("sacct-orphan-steps.txt", notes)}
    r = recs["51"]
    assert r.synthesized and (r.state, r.exit_code, r.signal, r.nodes) == ("FAILED", 2, 0, "gpu005")
    assert r.failed and r.final and r.end is not None and r.max_rss_bytes == 4096 * 1024
    assert not recs["50"].synthesized
    assert notes.synthesized == 1 and "51" in notes.to_list()[0] and "no job row" in notes.to_list()[0]


def test_newlines_inside_fields_are_joined_back_and_the_rest_reported():
    notes = SacctNotes()
    recs = {r.job_id: r for r in _records("sacct-newline-in-fields.txt", notes)}
    assert sorted(recs) == ["60", "61", "62", "64"]
    assert recs["61"].name == "multi\nline name" and recs["61"].exit_code == 2 and recs["61"].user == "carol"
    assert recs["62"].work_dir == "/home/carol/odd\ndir" and len(recs["62"].steps) == 1
    assert notes.reassembled == 2
    assert notes.dropped_rows == 1 and any("dropped" in n for n in notes.to_list())


def test_pipe_in_job_name_still_joined_and_header_skipped_without_a_note():
    notes = SacctNotes()
    text = "|".join(FIELDS) + "\n" + _read("sacct-out-of-order.txt").replace("|train|", "|a|b|", 1)
    recs = {r.job_id: r for r in group_rows(slurm.parse_sacct(text, FIELDS, notes))}
    assert recs["41"].name == "a|b" and notes.dropped_rows == 0


def test_streaming_groups_close_after_the_window_but_lose_nothing():
    rows = slurm.parse_sacct(_read("sacct-out-of-order.txt") + _read("sacct-orphan-steps.txt"), FIELDS)
    groups = list(iter_records(rows, open_jobs=2))  # the disorder spans 2 jobs: the window holds it
    jobs = sorted(r.job_id for g in groups for r in g)
    assert jobs == ["41", "42", "50", "51"]
    assert len([r for g in groups for r in g if r.job_id == "41"][0].steps) == 3
    # Disorder wider than the window: split, never lost - every row is in some record, the split noted.
    notes = SacctNotes()
    narrow = [r for g in iter_records(rows, open_jobs=1, notes=notes) for r in g]
    assert sum(1 + len(r.steps) - (1 if r.synthesized else 0) for r in narrow) == len(rows)
    assert notes.synthesized >= 2 and "51" in notes.synthesized_examples


def test_real_capture_unchanged():
    fields = open(os.path.join(FIX, "sacct-22.05-mixed.fields")).read().strip().split(",")
    notes = SacctNotes()
    recs = group_rows(slurm.parse_sacct(_read("sacct-22.05-mixed.txt"), fields, notes), notes=notes)
    assert recs and not any(r.synthesized for r in recs) and notes.dropped_rows == 0


def test_failures_report_carries_the_notes():
    rows = slurm.parse_sacct(_read("sacct-orphan-steps.txt") + _read("sacct-newline-in-fields.txt"), FIELDS)
    t0 = 1_700_000_000.0
    doc = failure_trends(None, since=0.0, until=4e9, fetch=lambda **kw: rows)
    assert doc["failed"] >= 3
    assert any("no job row" in n for n in doc["notes"])
    assert t0  # window is wide open: every run counts


def test_sacct_stream_from_a_stand_in_sacct(tmp_path, monkeypatch):
    monkeypatch.setenv("GCM_FAKE_SACCT_ROWS", "2000")
    notes = SacctNotes()
    rows = list(slurm.sacct_stream(sacct=FAKE_SACCT, timeout=60.0, notes=notes))
    assert len(rows) == 2000 and notes.lines == 2000 and notes.dropped_rows == 0
    recs = group_rows(rows)
    assert len(recs) == 500 and sum(1 for r in recs if "[" in r.nodes) == 150  # 30% multi-node


def test_sacct_stream_raises_when_sacct_fails(tmp_path):
    bad = tmp_path / "sacct"
    bad.write_text("#!/bin/sh\necho '1|1|x'\necho 'sacct: error: Slurm accounting storage is disabled' >&2\nexit 1\n")
    bad.chmod(0o755)
    with pytest.raises(slurm.SlurmError, match="accounting storage is disabled"):
        list(slurm.sacct_stream(sacct=str(bad), timeout=10.0))


def test_line_stream_kills_at_the_deadline(tmp_path):
    s = LineStream([sys.executable, "-c", "import time; print('a', flush=True); time.sleep(30)"], timeout=0.5)
    assert list(s) == ["a"]
    assert s.result.outcome is Outcome.TIMEOUT and s.result.duration_s < 10


def test_line_stream_missing_binary():
    s = LineStream(["/nonexistent/sacct"], timeout=1.0)
    assert list(s) == [] and s.result.outcome is Outcome.MISSING


def test_failures_cli_streams_and_exits_3_when_sacct_dies_midway(tmp_path, capsys):
    import json as _json

    from gcm_checks.cli import main

    bad = tmp_path / "sacct"
    bad.write_text("#!/bin/sh\necho '1|1|x|u|1|p|FAILED|1:0|0:0|None|00:00:01|01:00:00||n1|"
                   "2026-11-30T00:00:00|2026-11-30T00:00:00|2026-11-30T00:00:01|/w'\n"
                   "echo 'sacct: error: slurmdbd: connection lost' >&2\nexit 1\n")
    bad.chmod(0o755)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"accounting:\n  sacct: {bad}\nstate_dir: {tmp_path}/st\n")
    assert main(["failures", "--config", str(cfg), "--since", "2026-11-01"]) == 3
    assert "connection lost" in capsys.readouterr().err
    good = tmp_path / "sacct2"
    good.write_text(f"#!/bin/sh\nGCM_FAKE_SACCT_ROWS=400 exec {sys.executable} {FAKE_SACCT}\n")
    good.chmod(0o755)
    cfg.write_text(f"accounting:\n  sacct: {good}\nstate_dir: {tmp_path}/st\n")
    assert main(["failures", "--config", str(cfg), "--since", "2020-01-01", "--until", "2030-01-01", "--json"]) == 0
    doc = _json.loads(capsys.readouterr().out)
    assert doc["runs"] == 100 and doc["sacct"]["rows"] == 400 and doc["notes"] == []


@pytest.mark.parametrize("tz", ["UTC", "America/New_York", "Europe/Berlin", "Asia/Kolkata"])
def test_fast_parse_time_matches_mktime_across_dst(tz, monkeypatch):
    import time as _time

    from gcm_checks.accounting import records

    monkeypatch.setenv("TZ", tz)
    _time.tzset()
    records._HOUR_CACHE.clear()
    try:
        for stamp in ("2026-03-08T01:59:59", "2026-03-08T03:00:00", "2026-11-01T00:30:00", "2026-11-01T01:30:00",
                      "2026-11-01T02:30:00", "2026-03-29T01:59:59", "2026-03-29T03:00:01", "2026-10-25T02:30:00",
                      "2026-12-31T23:59:59", "2024-02-29T12:00:00"):
            want = _time.mktime(_time.strptime(stamp, "%Y-%m-%dT%H:%M:%S"))
            assert records.parse_time(stamp) == want, (tz, stamp)
            assert records.parse_time(stamp, utc=True) == float(__import__("calendar").timegm(
                _time.strptime(stamp, "%Y-%m-%dT%H:%M:%S")))
        for bad in ("Unknown", "None", "", "2026-13-01T00:00:00", "2026-11-30T01:02", "2026-11-30T01:xx:00"):
            assert records.parse_time(bad) is None, bad
    finally:
        records._HOUR_CACHE.clear()
        monkeypatch.delenv("TZ")
        _time.tzset()
