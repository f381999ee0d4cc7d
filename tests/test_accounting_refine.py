"""The batched refinement pass: one sacct call per interval, reports refined,
notifications held/updated/released, never mailed twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gcm_checks import slurm, testing
from gcm_checks.accounting import refine
from gcm_checks.accounting.judge import classify_run
from gcm_checks.accounting.records import group_rows, parse_time
from gcm_checks.classify import ClassifyInput, LogText, classify
from gcm_checks.notify.outbox import Outbox
from gcm_checks.report import report_paths, write_report
from gcm_checks.report.build import build_report
from gcm_checks.report.model import JobInfo

FIX = Path(__file__).parent / "fixtures" / "accounting"
FIELDS = (FIX / "sacct-22.05-mixed.fields").read_text().strip().split(",")
ROWS = slurm.parse_sacct((FIX / "sacct-22.05-mixed.txt").read_text(), FIELDS)
# The fixture's jobs ended between 01:55:38 and 01:57:00 local time.
T_END = parse_time("2026-11-30T01:57:00")
LOGS = {
    "4": "slurmstepd-node2: error: *** JOB 4 ON node2 CANCELLED AT 2026-11-30T01:57:00 DUE TO TIME LIMIT ***\n",
    "5": "slurmstepd-node1: error: *** JOB 5 ON node1 CANCELLED AT 2026-11-30T01:55:39 ***\n",
    "3": "srun: error: node2: task 0: Exited with exit code 1\n",
}


class CountingFetch:
    """sacct through an injectable runner: every call is counted."""

    def __init__(self, rows):
        self.rows = rows
        self.calls = []

    def __call__(self, since, until):
        self.calls.append((since, until))
        return list(self.rows)


def settings_for(tmp_path, **acc):
    base = {"interval_s": 60.0, "settle_s": 5.0, "lookback_s": 86400.0, "notify_wait_s": 120.0}
    base.update(acc)
    return testing.settings({
        "state_dir": str(tmp_path / "state"),
        "report": {"report_dir": str(tmp_path / "reports"), "spool_dir": str(tmp_path / "spool"),
                   "outbox_dir": str(tmp_path / "outbox")},
        "notify": {"channels": [{"name": "hook", "type": "webhook", "url": "http://127.0.0.1:9/x"}],
                   "policy": {"default": "on_failure"}},
        "accounting": base,
    })


def epilog_report(settings, job_id, *, exit_status="0:0", run=0, log=""):
    """What the epilog wrote: it saw COMPLETING and Slurm's exit code only."""
    job = JobInfo(job_id=job_id, user="root", uid=0, gid=0, name="wrap", nodes=("node1",),
                  exit_status=exit_status, state="COMPLETING", restart_count=run)
    code, _, sig = exit_status.partition(":")
    cls = classify(ClassifyInput(logs=[LogText("stdout", log)] if log else [], exit_code=int(code), signal=int(sig)))
    logs = [{"name": "stdout", "path": f"/scratch/{job_id}.out", "size": len(log), "shown_bytes": len(log),
             "truncated": False, "text": log, "note": ""}] if log else []
    report = build_report(job, {"node1": {"node": "node1", "evidence": {}}}, classification=cls.to_dict(), logs=logs,
                          generated_by="node1", now=T_END)
    write_report(report, settings)
    return report


def stored(settings, key):
    with open(report_paths(settings, key)["report.json"]) as f:
        return json.load(f)


def test_one_sacct_call_per_interval_however_many_jobs_ended(tmp_path):
    s = settings_for(tmp_path, interval_s=300.0)
    for jid in ("1", "2", "3", "4", "5"):
        epilog_report(s, jid, exit_status="3:0" if jid == "2" else "0:0", log=LOGS.get(jid, ""))
    fetch = CountingFetch(ROWS)
    now = T_END + 60
    first = refine.refine_pass(s, now=now, fetch=fetch, deliver=False)
    assert first.ran and first.sacct_calls == 1 and len(fetch.calls) == 1
    assert first.runs_seen == 7
    # Called again and again within the interval (EpilogSlurmctld per job): no sacct.
    for dt in (1, 30, 299):
        again = refine.refine_pass(s, now=now + dt, fetch=fetch, deliver=False)
        assert not again.ran and "interval" in again.skipped
    assert len(fetch.calls) == 1
    later = refine.refine_pass(s, now=now + 300, fetch=fetch, deliver=False)
    assert later.ran and len(fetch.calls) == 2
    # Already refined runs are not refined twice.
    assert later.refined == [] and later.confirmed == []


# key, epilog exit, log -> category at epilog, category after refinement, outcome after, its headline
CASES = [
    ("1", "0:0", "", "success", "success", "completed", "Completed."),
    ("4", "0:0", "", "success", "timeout_walltime", "timeout", "Hit its time limit"),  # reads exit 0 at epilog time
    ("5", "0:0", "", "success", "cancelled_user", "cancelled", "Cancelled by root"),  # so does scancel
    ("6", "0:0", "", "success", "preempted", "requeued", "Slurm requeued this run"),  # requeued run
]


@pytest.mark.parametrize("key,exit_status,log,before,after,outcome,headline", CASES)
def test_refinement_changes_category_and_records_where_from(tmp_path, key, exit_status, log, before, after, outcome,
                                                            headline):
    s = settings_for(tmp_path)
    rep = epilog_report(s, key, exit_status=exit_status, log=log)
    assert rep["classification"]["category"] == before
    summary = refine.refine_pass(s, now=T_END + 60, fetch=CountingFetch(ROWS), deliver=False)
    got = stored(s, key)
    assert got["classification"]["category"] == after
    assert got["accounting"]["run"]["key"] == key
    if before != after:
        assert {"key": key, "from": before, "to": after} in summary.refined
        assert got["classification"]["refined_from"] == before
        assert got["classification"]["refined_at"]
        assert got["classification_at_epilog"]["category"] == before
    else:
        assert key in summary.confirmed and "refined_from" not in got["classification"]
    # The outcome follows accounting: only a time limit is a failure the user is told about.
    assert got["outcome"]["id"] == outcome
    assert got["outcome"]["failed"] is got["outcome"]["mailed"] is (outcome == "timeout")
    # Every format was rewritten (json last); the text report leads with the new outcome.
    assert headline in Path(report_paths(s, key)["report.txt"]).read_text().splitlines()[0]


def test_failed_step_adds_evidence(tmp_path):
    s = settings_for(tmp_path)
    epilog_report(s, "3", log=LOGS["3"])
    refine.refine_pass(s, now=T_END + 60, fetch=CountingFetch(ROWS), deliver=False)
    ev = [e["text"] for e in stored(s, "3")["classification"]["evidence"]]
    assert any("step 3.0 (false) FAILED exit 1:0" in t for t in ev)
    assert any("DerivedExitCode=1:0" in t for t in ev)


def test_requeued_job_refines_each_run_by_its_key(tmp_path):
    s = settings_for(tmp_path)
    epilog_report(s, "6", run=0)
    epilog_report(s, "6", run=1)
    refine.refine_pass(s, now=T_END + 60, fetch=CountingFetch(ROWS), deliver=False)
    assert stored(s, "6")["classification"]["category"] == "preempted"
    assert stored(s, "6.1")["classification"]["category"] == "success"
    assert "run 2 of 2" in " ".join(e["text"] for e in stored(s, "6.1")["classification"]["evidence"])


def test_placeholder_and_fresh_runs_wait_for_the_next_pass(tmp_path):
    s = settings_for(tmp_path, interval_s=10.0, settle_s=5.0)
    epilog_report(s, "1")
    epilog_report(s, "9")
    end9 = "2026-11-30T01:57:00"
    placeholder = [{"JobID": "9", "JobName": "allocation", "User": "root", "State": "COMPLETED", "ExitCode": "0:0",
                    "DerivedExitCode": "0:0", "End": end9, "WorkDir": ""}]
    final = [{"JobID": "9", "JobName": "train", "User": "root", "State": "TIMEOUT", "ExitCode": "0:0",
              "DerivedExitCode": "0:0", "End": end9, "WorkDir": "/w", "Elapsed": "00:01:02", "Timelimit": "00:01:00"}]
    fetch = CountingFetch(ROWS + placeholder)
    # The first pass sees job 1 ended 2 s ago (< settle_s): deferred too.
    p1 = refine.refine_pass(s, now=T_END - 80, fetch=CountingFetch(ROWS[:2]), deliver=False)
    assert p1.deferred == ["1"] and stored(s, "1")["classification"].get("refined_at") is None
    p2 = refine.refine_pass(s, now=T_END + 30, fetch=fetch, deliver=False)
    assert "9" in p2.deferred and "1" in p2.confirmed
    assert "refined_from" not in stored(s, "9")["classification"]
    st = refine.read_state(s.accounting_state_file)
    assert "9" in st["deferred"]
    # The next window still reaches back to job 9's end although last_until moved on.
    fetch.rows = ROWS + final
    p3 = refine.refine_pass(s, now=T_END + 4000, fetch=fetch, deliver=False)
    assert p3.since <= parse_time(end9)
    assert stored(s, "9")["classification"]["category"] == "timeout_walltime"
    assert "9" not in refine.read_state(s.accounting_state_file)["deferred"]


def test_report_written_after_the_pass_is_refined_without_another_sacct_call(tmp_path):
    s = settings_for(tmp_path, interval_s=10.0)
    fetch = CountingFetch(ROWS)
    p1 = refine.refine_pass(s, now=T_END + 60, fetch=fetch, deliver=False)
    assert "4" in p1.no_report
    epilog_report(s, "4")  # the multi-node report got assembled late
    fetch.rows = []  # sacct no longer lists it in the new window
    refine.refine_pass(s, now=T_END + 200, fetch=fetch, deliver=False)
    assert stored(s, "4")["classification"]["category"] == "timeout_walltime"
    assert len(fetch.calls) == 2


def test_sacct_failure_is_reported_and_the_window_is_kept(tmp_path):
    s = settings_for(tmp_path, interval_s=10.0)
    epilog_report(s, "4")

    def broken(since, until):
        raise slurm.SlurmError("sacct: exit 1: Slurm accounting storage is disabled")

    p1 = refine.refine_pass(s, now=T_END + 60, fetch=broken, deliver=False)
    assert p1.errors and "accounting storage is disabled" in p1.errors[0]
    assert stored(s, "4")["classification"]["category"] == "success"
    p2 = refine.refine_pass(s, now=T_END + 120, fetch=CountingFetch(ROWS), deliver=False)
    assert p2.since <= T_END  # the failed pass did not advance the window
    assert stored(s, "4")["classification"]["category"] == "timeout_walltime"


def test_designated_node_and_lock(tmp_path):
    s = settings_for(tmp_path, designated_node="ctl1")
    fetch = CountingFetch(ROWS)
    assert "designated" in refine.refine_pass(s, node="gpu7", now=T_END, fetch=fetch).skipped
    lock = refine._Lock(s.accounting_state_file + ".lock")
    assert lock.acquire()
    try:
        assert "another" in refine.refine_pass(s, node="ctl1", now=T_END, fetch=fetch).skipped
    finally:
        lock.release()
    assert refine.refine_pass(s, node="ctl1", now=T_END + 60, fetch=fetch, deliver=False).ran
    assert len(fetch.calls) == 1


# ---------------------------------------------------------------- notifications


def queue_like_the_epilog(s, report):
    from gcm_checks import notify

    job = JobInfo.from_dict(report["job"])
    return notify.enqueue_report(report, job, s, now=T_END)


def test_held_notification_goes_out_with_the_refined_category(tmp_path):
    s = settings_for(tmp_path)
    rep = epilog_report(s, "2", exit_status="3:0")
    keys = [k for k, v in queue_like_the_epilog(s, rep).items() if v == "queued"]
    assert len(keys) == 1
    held = refine.hold_notifications(s, "2", now=T_END)
    assert held == keys
    box = Outbox(str(tmp_path / "outbox"))
    item = next(box.items("pending"))
    assert item["not_before"] == T_END + 120 and item["next_attempt_at"] == T_END  # held, not backed off
    assert box.next_due() == T_END + 120
    # A flush before refinement sends nothing, not even --now (force): the item is held.
    sent = []
    early = box.flush(lambda it, left: sent.append(it), budget_s=5, now=lambda: T_END + 10, force=True)
    assert early.skipped == keys and early.held == [{"key": keys[0], "until": T_END + 120, "why": "accounting"}]
    assert sent == []
    summary = refine.refine_pass(s, now=T_END + 60, fetch=CountingFetch(ROWS), deliver=False)
    assert summary.released == keys
    item = next(box.items("pending"))
    assert item["next_attempt_at"] <= T_END + 60 and "held_for" not in item and "not_before" not in item
    body = item["payload"]["body"]
    assert body["report"]["accounting"]["run"]["state"] == "FAILED"
    box.flush(lambda it, left: sent.append(it), budget_s=5, now=lambda: T_END + 61)
    assert [it["key"] for it in sent] == keys


def test_refined_after_the_mail_went_out_is_recorded_not_mailed_twice(tmp_path):
    s = settings_for(tmp_path)
    rep = epilog_report(s, "5", exit_status="0:0")
    # The epilog thought it a success; say the admin policy mails always.
    s = testing.settings(s, **{"notify.policy.default": "always"})
    keys = [k for k, v in queue_like_the_epilog(s, rep).items() if v == "queued"]
    box = Outbox(str(tmp_path / "outbox"))
    box.flush(lambda it, left: None, budget_s=5, now=lambda: T_END + 1)
    assert box.state_of(keys[0]) == "sent"
    summary = refine.refine_pass(s, now=T_END + 60, fetch=CountingFetch(ROWS), deliver=False)
    assert summary.after_notification == ["5"]
    got = stored(s, "5")
    assert got["classification"]["category"] == "cancelled_user"
    assert got["classification"]["notified_as"] == "success"
    assert any("a correction is sent only when the cause of a failure changed" in n for n in got["notes"])
    assert list(box.items("pending")) == [] and summary.released == []


def test_job_that_failed_only_by_accounting_gets_its_first_notification(tmp_path):
    s = settings_for(tmp_path)
    rep = epilog_report(s, "4")  # timeout: exit 0 at epilog time, on_failure policy queued nothing
    assert [v for v in queue_like_the_epilog(s, rep).values()] == ["not wanted (policy)"]
    summary = refine.refine_pass(s, now=T_END + 60, fetch=CountingFetch(ROWS), deliver=False)
    box = Outbox(str(tmp_path / "outbox"))
    items = list(box.items("pending"))
    assert len(items) == 1 and items[0]["job_key"] == "4" and summary.released == [items[0]["key"]]
    assert "timeout_walltime" in json.dumps(items[0]["payload"])


def test_hold_is_bounded_and_off_when_wait_is_zero(tmp_path):
    s = settings_for(tmp_path, notify_wait_s=0.0)
    rep = epilog_report(s, "2", exit_status="3:0")
    queue_like_the_epilog(s, rep)
    assert refine.hold_notifications(s, "2", now=T_END) == []


def test_refine_report_is_pure_and_keeps_the_old_answer():
    rec = {r.key: r for r in group_rows(ROWS)}["4"]
    old = {"job": {"key": "4", "state": "COMPLETING"}, "outcome": {"failed": False, "state": "COMPLETING"},
           "classification": {"category": "success", "rule": "exit.success"}, "notes": []}
    cls = classify_run(rec).to_dict()
    new, change = refine.refine_report(old, rec, cls, now=T_END)
    assert old["classification"] == {"category": "success", "rule": "exit.success"}  # input untouched
    assert change == {"key": "4", "from": "success", "to": "timeout_walltime"}
    assert {k: new["outcome"][k] for k in ("id", "failed", "job_failed", "state")} == \
        {"id": "timeout", "failed": True, "job_failed": True, "state": "TIMEOUT"}
    same, none = refine.refine_report(new, rec, cls, now=T_END + 1)
    assert none is None and same["classification"]["refined_from"] == "success"


def test_requeued_runs_report_keyed_like_the_next_run_is_matched_by_time(tmp_path):
    # Real 22.05 behaviour (tests/test_accounting_slurm.py): the epilog of a run
    # ended by `scontrol requeue` already sees SLURM_JOB_RESTART_COUNT=1, so
    # run 0's report lands under "6.1". Its end time says which run it is.
    s = settings_for(tmp_path)
    recs = {r.key: r for r in group_rows(ROWS)}
    job = JobInfo(job_id="6", user="root", uid=0, nodes=("node2",), exit_status="0:0", state="COMPLETING",
                  restart_count=1, end=recs["6"].end + 0.4)
    log = "first run\nslurmstepd-node2: error: *** JOB 6 ON node2 CANCELLED AT 2026-11-30T01:55:52 DUE TO JOB REQUEUE ***\n"
    report = build_report(job, {}, classification={"category": "cancelled_user", "rule": "slurm.cancelled"},
                          logs=[{"name": "stdout", "path": "/x", "size": 1, "shown_bytes": 1, "truncated": False,
                                 "text": log, "note": ""}], now=T_END)
    write_report(report, s)
    summary = refine.refine_pass(s, now=T_END + 60, fetch=CountingFetch(ROWS), deliver=False)
    got = stored(s, "6.1")
    assert got["accounting"]["run"]["key"] == "6" and got["accounting"]["run"]["state"] == "REQUEUED"
    assert got["classification"]["category"] == "preempted"
    assert {"key": "6", "from": "cancelled_user", "to": "preempted"} in summary.refined
    assert "6.1" in summary.no_report  # run 1's own report is missing; it is not confused with run 0's


@pytest.mark.parametrize("report_end,run,expected", [
    (None, "6", True),  # no time: trusted by key
    (0.4, "6", True),
    (0.4, "6.1", False),  # ended 37 s before run 1 ended
    (37.5, "6.1", True),
    (37.5, "6", False),  # run 1 ended after run 0 and before this report: it is run 1's
    (-30.0, "6", False),  # written before the run ended
])
def test_report_belongs_to(report_end, run, expected):
    recs = {r.key: r for r in group_rows(ROWS)}
    base = recs["6"].end
    rep = {"job": {"end": None if report_end is None else base + report_end}}
    siblings = [r.end for k, r in recs.items() if k.startswith("6") and k != run]
    assert refine.report_belongs_to(rep, recs[run], siblings) is expected


def test_refinement_never_mails_a_cancel_or_a_requeue(tmp_path):
    # Issue 13: `refine` mailed a plain scancel as "FAILED: cancelled_user"
    # and a requeued run as "FAILED: preempted". Neither is mailed by default.
    s = settings_for(tmp_path)
    for key in ("5", "6"):
        rep = epilog_report(s, key)
        assert [v for v in queue_like_the_epilog(s, rep).values()] == ["not wanted (policy)"]
    summary = refine.refine_pass(s, now=T_END + 60, fetch=CountingFetch(ROWS), deliver=False)
    assert {c["key"] for c in summary.refined} >= {"5", "6"}
    assert list(Outbox(str(tmp_path / "outbox")).items("pending")) == [] and summary.released == []
    assert (stored(s, "5")["outcome"]["id"], stored(s, "6")["outcome"]["id"]) == ("cancelled", "requeued")


def test_multi_node_requeued_run_is_one_report_and_no_mail(tmp_path):
    from gcm_checks import notify
    from gcm_checks.report import build

    s = settings_for(tmp_path)
    job = JobInfo(job_id="40", user="root", uid=0, gid=0, name="ddp", nodes=("node1", "node2"), exit_status="0:0",
                  state="COMPLETED", restart_count=0)
    # only the first node asked slurmctld, and saw the requeue
    contribs = {"node1": {"node": "node1", "evidence": {"requeued": True}},
                "node2": {"node": "node2", "evidence": {"drains": [{"node": "node2", "reason": "gcm: gpu.responsive",
                                                                    "action": "drained"}]}}}
    doc = build.build_report(job, contribs, classification={"category": "success"})
    assert doc["context"]["requeued"] and doc["outcome"]["id"] == "requeued"
    assert doc["outcome"]["headline"] == "Your job was moved off a faulty node and requeued; nothing to do."
    queued = notify.enqueue_report(doc, job, s)
    assert queued and set(queued.values()) == {"not wanted (policy)"}


# --------------------------------------------------------------- streaming (issue 17)


def test_the_pass_reads_a_stream_and_a_late_sacct_failure_keeps_what_was_done(tmp_path):
    """sacct_stream raises after its last row when sacct failed: the runs
    refined before that stay refined (the last jobs, whose rows may be cut,
    are not judged), the window is not advanced."""
    s = settings_for(tmp_path, interval_s=10.0)
    epilog_report(s, "4")
    consumed = []
    # iter_records holds the last 4,096 jobs open (rows of a job may still
    # come); a job is refined once that many others followed it.
    job_row = next(r for r in ROWS if r["JobID"] == "1")
    filler = [dict(job_row, JobID=str(100_000 + i), JobIDRaw=str(100_000 + i)) for i in range(4100)]

    def cut_off(since, until):
        def rows():
            for r in ROWS + filler:
                consumed.append(r["JobID"])
                yield r
            raise slurm.SlurmError("sacct: timed out after 30.0s")
        return rows()

    p1 = refine.refine_pass(s, now=T_END + 60, fetch=cut_off, deliver=False)
    assert p1.errors == ["sacct: sacct: timed out after 30.0s"] and len(consumed) == len(ROWS) + 4100
    assert stored(s, "4")["classification"]["category"] == "timeout_walltime"  # refined from the stream
    st = refine.read_state(s.accounting_state_file)
    assert "4" in st["refined"] and "last_until" not in st
    # The next pass reads the same window again and does not refine "4" twice.
    p2 = refine.refine_pass(s, now=T_END + 120, fetch=CountingFetch(ROWS), deliver=False)
    assert p2.since <= T_END and "4" not in [c["key"] for c in p2.refined] and "4" not in p2.confirmed


def test_runs_without_a_report_cost_no_state_once_past_report_wait(tmp_path):
    """At fleet scale most runs have no report on this machine: only runs
    that may still get one (ended < report_wait_s ago) are remembered, and
    the summary keeps a count plus a few examples."""
    s = settings_for(tmp_path, interval_s=10.0, report_wait_s=60.0)
    p = refine.refine_pass(s, now=T_END + 3600, fetch=CountingFetch(ROWS), deliver=False)
    assert p.no_report_count == p.runs_seen - len(p.deferred) > 0
    assert refine.read_state(s.accounting_state_file)["waiting"] == {}
    s2 = settings_for(tmp_path / "b", interval_s=10.0, report_wait_s=900.0)
    p = refine.refine_pass(s2, now=T_END + 60, fetch=CountingFetch(ROWS), deliver=False)
    assert set(refine.read_state(s2.accounting_state_file)["waiting"]) == set(p.no_report)


def test_no_report_examples_are_capped_and_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(refine, "NO_REPORT_EXAMPLES", 2)
    s = settings_for(tmp_path, interval_s=10.0)
    p = refine.refine_pass(s, now=T_END + 60, fetch=CountingFetch(ROWS), deliver=False)
    assert len(p.no_report) == 2 and p.no_report_count > 2


def test_default_fetch_streams_a_stand_in_sacct(tmp_path):
    """The production fetch: slurm.sacct_stream over a real process."""
    script = tmp_path / "sacct"
    text = (FIX / "sacct-22.05-mixed.txt").read_text()
    (tmp_path / "rows.txt").write_text(text)
    script.write_text(f"#!/bin/sh\ncat {tmp_path / 'rows.txt'}\n")
    script.chmod(0o755)
    s = settings_for(tmp_path, interval_s=10.0, sacct=str(script))
    epilog_report(s, "4")
    rows = refine.default_fetch(s)(T_END - 3600, T_END + 60)
    assert not isinstance(rows, list)  # a stream, not the whole output
    p = refine.refine_pass(s, now=T_END + 60, deliver=False)
    assert not p.errors and stored(s, "4")["classification"]["category"] == "timeout_walltime"
