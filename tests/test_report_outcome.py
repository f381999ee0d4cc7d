"""The job outcome (report/outcome.py) and what follows from it: headline,
subject, who is mailed, refinement's one correction, the user's view."""

from __future__ import annotations

import json
import os

import pytest

from gcm_checks import notify, report, testing
from gcm_checks.accounting import refine
from gcm_checks.accounting.records import JobRecord
from gcm_checks.report import build, render
from gcm_checks.report.model import JobInfo
from gcm_checks.report.outcome import MAILED_BY_DEFAULT, OUTCOMES, Fault, decide, final_state

XID79 = {"time": "02:14:07", "xid": 79, "pci_bus_id": "00000000:5D:00.0", "gpu_index": 3, "severity": "fail",
         "responsibility": "hardware", "action": "reboot the node", "name": "GPU has fallen off the bus", "line": "..."}
XID13 = dict(XID79, xid=13, severity="info", responsibility="application", name="Graphics Engine Exception")
GPU3 = Fault("node2", "GPU 3 (00000000:5D:00.0)", xid=79, name="GPU has fallen off the bus")


@pytest.mark.parametrize("kw,oid,head", [
    (dict(state="COMPLETED", exit_code=0), "completed", "Completed."),
    (dict(state="COMPLETED", exit_code=0, faults=[GPU3]), "suspect",
     "Completed, but GPU 3 (00000000:5D:00.0) on node2 raised XID 79 (GPU has fallen off the bus) during the job"),
    (dict(state="FAILED", exit_code=1, classification={"category": "import_env", "responsibility": "user"}), "failed",
     "Failed: software environment / import error (your code)."),
    (dict(state="FAILED", exit_code=1, classification={"category": "gpu_hardware", "responsibility": "infrastructure"}),
     "failed", "Failed: GPU hardware fault (not your code)."),
    (dict(state="FAILED", exit_code=1, classification={"category": "gpu_oom", "responsibility": "user"}),
     "out_of_memory", "Ran out of GPU memory (your code)."),
    (dict(state="OUT_OF_MEMORY", exit_code=0), "out_of_memory", "Ran out of host memory"),
    (dict(state="TIMEOUT", elapsed="01:00:03"), "timeout", "Hit its time limit after 01:00:03."),
    (dict(state="NODE_FAIL"), "node_failure", "A node of the job failed (not your code)"),
    (dict(state="PREEMPTED"), "preempted", "Preempted by the scheduler (not your code)."),
    (dict(state="CANCELLED by 0"), "cancelled", "Cancelled by root (an admin)"),
    (dict(state="CANCELLED by 1000"), "cancelled", "Cancelled by uid 1000"),
    # the epilog may see the SIGTERM of an scancel as a failed exit
    (dict(state="FAILED", exit_code=0, signal=15, classification={"category": "cancelled_user"}), "cancelled",
     "Cancelled; nothing to fix"),
    (dict(state="REQUEUED", by_us=True), "requeued", "Your job was moved off a faulty node and requeued; nothing to do."),
    (dict(state="COMPLETED", requeued=True, faults=[GPU3]), "requeued", "Your job was moved off a faulty node"),
    (dict(state="REQUEUED"), "requeued", "Slurm requeued this run"),
    # report-only: our findings reach no user
    (dict(state="COMPLETED", faults=[GPU3], report_only=True), "completed", "Completed."),
    (dict(state="COMPLETED", requeued=True, by_us=True, report_only=True), "requeued", "Slurm requeued this run"),
    # an OOM line the job recovered from is not its outcome
    (dict(state="COMPLETED", exit_code=0, classification={"category": "gpu_oom"}), "completed", "Completed."),
    (dict(state="COMPLETED", exit_code=0, derived_exit_code=1), "failed", "Failed: exit status 0."),
])
def test_outcome_table(kw, oid, head):
    o = decide(**kw)
    assert o.id == oid and o.headline.startswith(head), o
    assert (o.mailed, o.failure) == OUTCOMES[oid][:2]


def test_mailed_by_default_is_the_documented_set():
    assert MAILED_BY_DEFAULT == {"suspect", "failed", "out_of_memory", "timeout", "node_failure", "preempted"}
    doc = open(os.path.join(os.path.dirname(__file__), "..", "docs", "reports.md")).read()
    for oid in OUTCOMES:
        assert f"`{oid}`" in doc  # the outcome table names every outcome


@pytest.mark.parametrize("state,reason,code,want", [
    ("COMPLETING", "TimeLimit", 0, "TIMEOUT"),
    ("COMPLETING", "NonZeroExitCode", 3, "FAILED"),
    ("COMPLETING", "None", 0, "COMPLETED"),
    ("CANCELLED by 0", "None", 0, "CANCELLED by 0"),
])
def test_final_state_from_the_epilog(state, reason, code, want):
    assert final_state(state, reason, code, 0) == want


def _job(**kw):
    d = dict(job_id="31", user="alice", uid=os.geteuid(), gid=os.getegid(), name="train", partition="gpu",
             cluster="c1", nodes=("node2",), start=1000.0, end=2000.0, exit_status="0:0", state="COMPLETED")
    d.update(kw)
    return JobInfo(**d)


def _node(ev, name="node2"):
    return {"node2": {"node": name, "evidence": ev}}


UNKNOWN_DCGM = {"check": "dcgm.diag", "status": "unknown", "subject": "", "message": "DCGM diag level 1: dcgmi not installed"}


def test_suspect_report_names_gpu_xid_and_action_and_hides_admin_noise():
    ev = {"xids": [XID79, XID13], "results": [UNKNOWN_DCGM],
          "drains": [{"node": "node2", "reason": "gcm: xid.hardware: GPU 3", "action": "already",
                      "held_reason": "gcm: gpu.responsive: GPU 3 lost"}]}
    doc = build.build_report(_job(), _node(ev), classification={"category": "success", "responsibility": "unknown"})
    o = doc["outcome"]
    assert o["id"] == "suspect" and o["mailed"] and o["failed"] and not o["failure"]
    assert "GPU 3" in o["headline"] and "XID 79" in o["headline"] and "Check the results" in o["action"]
    assert [f["xid"] for f in o["faults"]] == [79]  # the application XID 13 is not a fault
    txt = render.to_text(doc)
    assert txt.startswith("Job 31 (train): Completed, but GPU 3")
    # the drain shown is the one Slurm holds, not the epilog's own finding
    assert "node2 is drained: gcm: gpu.responsive: GPU 3 lost" in txt and "xid.hardware" not in txt
    assert "dcgmi" not in txt and "?" not in txt and "Cause:" not in txt
    assert "dcgmi not installed" in render.to_text(doc, audience="admin")
    assert render.subject(doc) == "[gcm] job 31 (train) completed, results suspect (GPU fault, not your code)"


def test_rows_without_data_are_left_out():
    doc = build.build_report(JobInfo(job_id="5", exit_status="0:0", state="COMPLETED"), {})
    txt = render.to_text(doc)
    assert "?" not in txt and "Partition" not in txt and "Start / end" not in txt
    assert txt.splitlines()[0] == "Job 5: Completed."


def test_gcm_run_progress_reaches_the_report(tmp_path):
    from gcm_checks.report.runlink import run_section, run_status_path

    wd = tmp_path / "wd"
    job = _job(work_dir=str(wd), restart_count=1, exit_status="1:0", state="FAILED")
    path = run_status_path(str(wd), job.key)
    assert path == f"{wd}/.gcm-run/31.1.status.json"
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as f:
        json.dump({"progress": {"step": 40, "total": 100, "percent": 40.0, "loss": 2.31},
                   "alerts": [{"kind": "stalled", "message": "no progress for 30 min at step 40"}],
                   "exit": {"code": 1, "signal": None}, "log": "/scratch/train.log"}, f)
    s = testing.settings(report={"spool_dir": str(tmp_path / "sp"), "report_dir": str(tmp_path / "rp"),
                                 "outbox_dir": str(tmp_path / "ob")})
    report.contribute(job, "node2", {}, s)
    done = report.assemble(job, s, node="node2", classification={"category": "unknown"})
    assert done.report["run"] == run_section(json.load(open(path)))
    txt = open(done.paths["report.txt"]).read()
    assert "Progress:    step 40/100, 40.0%" in txt and "Last loss:   2.31" in txt and "Stalled:     no progress" in txt


# --- refinement: one correction at most, never for an outcome not mailed --


def _settings(tmp_path, policy="on_failure"):
    return testing.settings({
        "state_dir": str(tmp_path / "st"),
        "report": {"spool_dir": str(tmp_path / "sp"), "report_dir": str(tmp_path / "rp"), "outbox_dir": str(tmp_path / "ob")},
        "notify": {"channels": [{"name": "hook", "type": "webhook", "url": "http://127.0.0.1:9/x"}],
                   "policy": {"default": policy}}})


def _epilog_report(s, cls, **job_kw):
    job = _job(**job_kw)
    doc = build.build_report(job, _node({}), classification=cls)
    report.write_report(doc, s)
    notify.enqueue_report(doc, job, s)
    return doc


def _sent_all(s):
    box = notify.outbox_for(s)
    box.flush(lambda item, left: None, budget_s=5, force=True)
    return box


def _rec(state, exit_code=1, **kw):
    return JobRecord(job_id="31", state=state.split()[0], state_raw=state, exit_code=exit_code, signal=0,
                     end=2000.0, **kw)


def test_unknown_cause_becomes_known_one_correction_only(tmp_path):
    s = _settings(tmp_path)
    before = _epilog_report(s, {"category": "unknown", "responsibility": "unknown"}, exit_status="1:0", state="FAILED")
    box = _sent_all(s)
    assert box.counts()["sent"] == 1
    cls = {"category": "import_env", "responsibility": "user", "evidence": [], "sentence": "ImportError"}
    new, change = refine.refine_report(before, _rec("FAILED"), cls, now=3000.0, notified=True)
    keys = refine.notify_refined(s, new, change=change)
    assert keys == ["cluster/31/hook/refined".replace("cluster", "c1")]
    assert render.subject(new).endswith("[corrected]")
    # a second pass only refreshes the waiting correction; once it is sent, nothing more
    again = refine.notify_refined(s, new, change=change)
    assert set(again) <= set(keys) and box.counts()["pending"] == 1
    _sent_all(s)
    assert refine.notify_refined(s, new, change=change) == [] and box.counts() == {"pending": 0, "sent": 2, "dead": 0}


def test_refined_to_an_outcome_not_mailed_sends_nothing_even_with_policy_always(tmp_path):
    s = _settings(tmp_path, policy="always")
    before = _epilog_report(s, {"category": "success", "responsibility": "unknown"})
    box = _sent_all(s)
    cls = {"category": "cancelled_user", "responsibility": "user", "evidence": [], "sentence": "cancelled"}
    new, change = refine.refine_report(before, _rec("CANCELLED by 1000", exit_code=0), cls, now=3000.0, notified=True)
    assert new["outcome"]["id"] == "cancelled" and not new["outcome"]["mailed"]
    assert refine.notify_refined(s, new, change=change) == [] and box.counts() == {"pending": 0, "sent": 1, "dead": 0}


def test_same_cause_after_refinement_is_not_mailed_again(tmp_path):
    s = _settings(tmp_path)
    cls = {"category": "gpu_oom", "responsibility": "user", "evidence": [], "sentence": "oom"}
    before = _epilog_report(s, cls, exit_status="1:0", state="FAILED")
    box = _sent_all(s)
    new, change = refine.refine_report(before, _rec("FAILED"), cls, now=3000.0, notified=True)
    assert change is None and refine.notify_refined(s, new, change=change) == []
    assert box.counts()["sent"] == 1


def test_report_only_never_mails_a_user_about_our_findings(tmp_path):
    s = _settings(tmp_path)
    ev = {"xids": [XID79], "report_only": True,
          "drains": [{"node": "node2", "reason": "gcm: xid.hardware: GPU 3", "action": "report-only: would drain"}]}
    job = _job()
    doc = build.build_report(job, _node(ev), classification={"category": "success"})
    assert doc["context"]["report_only"] and doc["outcome"]["id"] == "completed" and not doc["outcome"]["failed"]
    assert notify.enqueue_report(doc, job, s) == {"c1/31/hook": "not wanted (policy)"}
    txt = render.to_text(doc)
    assert "drain" not in txt and "XID" not in txt
    assert "would drain (report-only): gcm: xid.hardware: GPU 3" in render.to_text(doc, audience="admin")


@pytest.mark.parametrize("show,this_run,requeued", [
    # measured on 22.05: the epilog of a run whose prolog failed looks like a success, but Restarts moved on
    ({"JobState": "COMPLETING", "Reason": "None", "Restarts": "1"}, 0, True),
    ({"JobState": "COMPLETING", "Reason": "None", "Restarts": "1"}, 1, False),
    ({"JobState": "PENDING", "Reason": "launch failed requeued held", "Restarts": "1"}, None, True),
    ({"JobState": "COMPLETING", "Reason": "TimeLimit", "Restarts": "0"}, 0, False),
])
def test_epilog_knows_a_requeued_run(show, this_run, requeued):
    from gcm_checks.epilog import run_context

    ctx = run_context(testing.settings(report_only=False), {"SLURM_JOB_GPUS": "0,3"}, show, this_run)
    assert bool(ctx.get("requeued")) is requeued and ctx["job_gpus"] == [0, 3] and ctx["report_only"] is False


def test_faults_only_on_the_jobs_gpus():
    from gcm_checks.report.outcome import faults_of

    nodes = [{"node": "n1", "evidence": {"job_gpus": [0, 1], "xids": [XID79]}}]
    assert faults_of(nodes) == []  # GPU 3 belongs to another job on this shared node
    nodes[0]["evidence"]["job_gpus"] = [3]
    assert [f.xid for f in faults_of(nodes)] == [79]


@pytest.mark.parametrize("d,line", [
    ({"node": "n1", "reason": "gcm: gpu.ecc", "action": "drained", "held_reason": "gcm: gpu.ecc"}, "n1 drained: gcm: gpu.ecc"),
    ({"node": "n1", "reason": "gcm: xid.hardware", "action": "already", "held_reason": "gcm: gpu.responsive"},
     "n1 is drained: gcm: gpu.responsive"),
    ({"node": "n1", "reason": "gcm: gpu.ecc", "action": "kept_foreign"},
     "wanted to drain n1 (gcm: gpu.ecc), but it is already out of service: drained by an admin"),
    ({"node": "n1", "reason": "gcm: gpu.ecc", "action": "error"},
     "wanted to drain n1 (gcm: gpu.ecc), but the drain failed; Slurm drains it itself"),
    ({"node": "n1", "reason": "gcm: gpu.ecc", "action": "report-only: would drain"}, None),
])
def test_drains_are_worded_from_what_slurm_holds(d, line):
    assert render.drain_line(d) == line
