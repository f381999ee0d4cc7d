"""why JOBID: sacct + scontrol + logs + stored node evidence, with fakes at the
Slurm edge; real files for the logs (root-safety included)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gcm_checks import slurm, testing
from gcm_checks.accounting.diagnose import explain, log_paths, record_from_scontrol, render_why
from gcm_checks.report import write_report
from gcm_checks.report.build import build_report
from gcm_checks.report.model import JobInfo

FIX = Path(__file__).parent / "fixtures" / "accounting"
FIELDS = (FIX / "sacct-22.05-mixed.fields").read_text().strip().split(",")
ROWS = slurm.parse_sacct((FIX / "sacct-22.05-mixed.txt").read_text(), FIELDS)


def sacct_for(rows):
    calls = []

    def fetch(job_id):
        calls.append(job_id)
        return [r for r in rows if r["JobID"].split(".")[0] == job_id]

    fetch.calls = calls
    return fetch


def gone(job_id):
    raise slurm.SlurmError("scontrol: exit 1: slurm_load_jobs error: Invalid job id specified")


def settings(tmp_path):
    return testing.settings({"state_dir": str(tmp_path / "st"),
                             "report": {"report_dir": str(tmp_path / "reports"), "spool_dir": str(tmp_path / "spool")}})


def scontrol_job(job_id, state, out, **kw):
    d = {"JobId": job_id, "JobName": "train", "UserId": "root(0)", "GroupId": "root(0)", "JobState": state,
         "Reason": "None", "ExitCode": "0:0", "RunTime": "00:00:05", "TimeLimit": "00:01:00", "NodeList": "node1",
         "StdOut": out, "StdErr": out, "WorkDir": os.path.dirname(out), "Restarts": "0"}
    d.update(kw)
    return d


# job, log text, expected category, outcome, what the text must say
CASES = [
    ("4", "", "timeout_walltime", "timeout", "timeout_walltime"),
    ("5", "", "cancelled_user", "cancelled", "Cancelled by root"),
    ("2", "Traceback (most recent call last):\n  File \"t.py\", line 3\nValueError: bad learning rate\n",
     "software_exception", "failed", "software_exception"),
    ("3", "srun: error: node2: task 0: Exited with exit code 1\n", "unknown", "failed", "unknown"),
    ("1", "", "success", "completed", "Completed."),
]


@pytest.mark.parametrize("job,log,category,outcome,says", CASES)
def test_why_from_sacct_and_the_log_in_the_work_dir(tmp_path, job, log, category, outcome, says):
    # scontrol no longer knows the job: the log is found as sbatch's default name in WorkDir.
    wd = tmp_path / "jobs"
    wd.mkdir()
    (wd / f"slurm-{job}.out").write_text(log)
    rows = [dict(r, WorkDir=str(wd)) if r.get("WorkDir") else r for r in ROWS]
    fetch = sacct_for(rows)
    doc = explain(job, settings(tmp_path), sacct_job=fetch, show_job=gone)
    assert doc["found"] and doc["classification"]["category"] == category
    assert fetch.calls == [job]
    assert doc["sources"]["scontrol"].startswith("unavailable")
    assert doc["sources"]["logs"][0]["read"] is True
    assert doc["outcome"]["id"] == outcome
    text = "\n".join(render_why(doc))
    assert says in text and "Next step:" in text
    json.dumps(doc)  # --json must serialise


def test_why_while_slurmctld_still_knows_the_job_uses_its_log_paths(tmp_path):
    out = tmp_path / "7.out"
    out.write_text("step 10 loss=2.1\nRuntimeError: CUDA error: an illegal memory access was encountered\n")
    doc = explain("7", settings(tmp_path), sacct_job=sacct_for([]),
                  show_job=lambda j: scontrol_job("7", "FAILED", str(out), ExitCode="1:0", Reason="NonZeroExitCode"))
    assert doc["found"] and doc["job"]["state"] == "FAILED"
    assert doc["classification"]["category"] == "cuda_runtime"
    assert any(e["source"] == "stdout" and e["line_no"] == 2 for e in doc["classification"]["evidence"])


def test_why_prefers_final_scontrol_when_accounting_lags(tmp_path):
    out = tmp_path / "8.out"
    out.write_text("")
    lag = [{"JobID": "8", "JobName": "allocation", "User": "root", "State": "COMPLETED", "ExitCode": "0:0", "WorkDir": "",
            "End": "2026-11-30T01:00:00"}]
    doc = explain("8", settings(tmp_path), sacct_job=sacct_for(lag),
                  show_job=lambda j: scontrol_job("8", "TIMEOUT", str(out), Reason="TimeLimit"))
    assert doc["classification"]["category"] == "timeout_walltime"
    assert "not final" in doc["sources"]["sacct"]


def test_why_uses_node_evidence_from_the_stored_report(tmp_path):
    s = settings(tmp_path)
    job = JobInfo(job_id="2", user="root", uid=0, nodes=("node1",), exit_status="3:0", state="FAILED")
    xid = {"xid": 79, "severity": "fail", "responsibility": "hardware", "gpu_index": 3, "name": "GPU has fallen off the bus",
           "line": "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."}
    report = build_report(job, {"node1": {"node": "node1", "evidence": {"xids": [xid]}}}, classification=None, logs=[])
    write_report(report, s)
    doc = explain("2", s, sacct_job=sacct_for(ROWS), show_job=gone)
    assert doc["classification"]["category"] == "gpu_hardware"
    assert doc["node_evidence"]["xids"] == 1
    assert doc["sources"]["report"].endswith("report.json")


def test_why_unknown_job(tmp_path):
    doc = explain("999", settings(tmp_path), sacct_job=sacct_for(ROWS), show_job=gone)
    assert doc["found"] is False and "not known" in doc["notes"][0]
    assert "not found" in render_why(doc)[0]


def test_why_sacct_down_still_answers_from_scontrol(tmp_path):
    out = tmp_path / "3.out"
    out.write_text("")

    def down(job_id):
        raise slurm.SlurmError("sacct: exit 1: Slurm accounting storage is disabled")

    doc = explain("3", settings(tmp_path), sacct_job=down,
                  show_job=lambda j: scontrol_job("3", "OUT_OF_MEMORY", str(out), ExitCode="0:125"))
    assert doc["found"] and doc["classification"]["category"] == "host_oom"
    assert doc["sources"]["sacct"].startswith("unavailable")


def test_why_picks_a_run_of_a_requeued_job(tmp_path):
    s = settings(tmp_path)
    first = explain("6", s, run=0, sacct_job=sacct_for(ROWS), show_job=gone)
    last = explain("6", s, sacct_job=sacct_for(ROWS), show_job=gone)
    assert first["key"] == "6" and first["classification"]["category"] == "preempted"
    assert last["key"] == "6.1" and last["job"]["runs"] == 2
    missing = explain("6", s, run=5, sacct_job=sacct_for(ROWS), show_job=gone)
    assert missing["found"] is False


@pytest.fixture
def open_dir():
    """A world-traversable dir (pytest's tmp_path is 0700: uid 4242 could not reach anything)."""
    import shutil
    import tempfile

    d = tempfile.mkdtemp(prefix="gcm-why-", dir="/tmp")
    os.chmod(d, 0o755)
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="root-safety applies when run as root")
def test_why_as_root_reads_the_users_own_log_but_never_follows_their_symlink(open_dir):
    secret = open_dir / "secret"
    secret.write_text("root:$6$hash:19000:0:99999:7:::\nValueError: leaked\n")
    os.chmod(secret, 0o600)
    jobs = open_dir / "jobs"
    jobs.mkdir()
    os.chown(jobs, 4242, 4242)
    own = jobs / "8.out"
    own.write_text("ValueError: bad learning rate\n")
    os.chown(own, 4242, 4242)
    link = jobs / "9.out"
    os.symlink(secret, link)
    os.lchown(link, 4242, 4242)

    def job(j, path):
        return scontrol_job(j, "FAILED", str(path), UserId="mallory(4242)", GroupId="mallory(4242)", ExitCode="1:0")

    ok = explain("8", testing.settings(state_dir=str(open_dir)), sacct_job=sacct_for([]), show_job=lambda j: job("8", own))
    assert ok["sources"]["logs"][0]["read"] is True
    assert ok["classification"]["category"] == "software_exception"
    bad = explain("9", testing.settings(state_dir=str(open_dir)), sacct_job=sacct_for([]), show_job=lambda j: job("9", link))
    assert bad["sources"]["logs"][0]["read"] is False and "symlink" in bad["sources"]["logs"][0]["note"]
    assert "leaked" not in json.dumps(bad)
    assert bad["classification"]["category"] == "unknown"


@pytest.mark.parametrize("d,expected", [
    ({"StdOut": "/a/1.out", "StdErr": "/a/1.out"}, [("stdout", "/a/1.out")]),
    ({"StdOut": "/a/1.out", "StdErr": "/a/1.err"}, [("stdout", "/a/1.out"), ("stderr", "/a/1.err")]),
    ({}, [("stdout", "/w/slurm-4.out")]),
])
def test_log_paths(d, expected):
    rec = record_from_scontrol({"JobId": "4", "JobState": "FAILED", "WorkDir": "/w"})
    assert log_paths(d, rec, None) == expected


def test_record_from_scontrol():
    r = record_from_scontrol(scontrol_job("5", "CANCELLED", "/x/5.out", Restarts="2", UserId="alice(1001)"))
    assert (r.key, r.state, r.uid, r.user, r.timelimit_s) == ("5.2", "CANCELLED", 1001, "alice", 60)


@pytest.mark.parametrize("job_id", ["-S", "12;rm -rf /", "", "12.batch", "abc"])
def test_why_refuses_what_is_not_a_job_id(tmp_path, job_id):
    called = []
    doc = explain(job_id, settings(tmp_path), sacct_job=lambda j: called.append(j) or [], show_job=lambda j: called.append(j) or {})
    assert doc["found"] is False and called == []
