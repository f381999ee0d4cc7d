"""End to end: the real `gcm-checks epilog` process with Slurm's epilog
environment, a kernel log file with XIDs around the job window, simulated
nodes, and the exit-status contract."""

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def cfg(tmp_path):
    def make(extra=""):
        p = tmp_path / "gcm.yaml"
        p.write_text(
            f"log_path: {tmp_path}/log.jsonl\nstate_dir: {tmp_path}/state\nbudget_s: 8\n"
            f"report: {{spool_dir: {tmp_path}/spool, report_dir: {tmp_path}/reports}}\n"
            f"notify: {{outbox_dir: {tmp_path}/outbox}}\n"
            "epilog: {query_job: false}\n" + extra
        )
        return p

    return make


def epilog(cfg_path, *args, job="101", env=None, timeout=60):
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    e.update({"SLURM_JOB_ID": job, "SLURM_JOB_USER": "root", "SLURM_JOB_UID": "0", "SLURM_JOB_GID": "0",
              "SLURMD_NODENAME": "node1", "SLURM_JOB_EXIT_CODE2": "0:0", "SLURM_JOB_EXIT_CODE": "0",
              "SLURM_JOB_DERIVED_EC": "0", "SLURM_JOB_NODELIST": "node1", "SLURM_JOB_PARTITION": "gpu"})
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "gcm_checks", "epilog", "--config", str(cfg_path), "--json", "--dry-run", *args],
                          capture_output=True, text=True, env=e, timeout=timeout, cwd=str(REPO))


def iso(t):
    return dt.datetime.fromtimestamp(t).astimezone().isoformat(timespec="microseconds")


def record_start(tmp_path, job, start):
    d = tmp_path / "state" / "jobs"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{job}.node1.json").write_text(json.dumps({"job_id": job, "node": "node1", "start": start}))


@pytest.mark.parametrize(
    "offset, code, verdict",
    [
        (-1.0, 79, "pass"),  # one second before the job started: not this job's
        (+1.0, 79, "fail"),  # inside the window: drain
        (+1.0, 13, "pass"),  # application XID inside the window: never drains
    ],
)
def test_xid_window_from_the_prolog_record(cfg, tmp_path, offset, code, verdict):
    start = time.time() - 60
    record_start(tmp_path, "101", start)
    klog = tmp_path / "kern.log"
    klog.write_text(
        f"{iso(start - 3600)} node1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
        f"{iso(start + offset)} node1 kernel: NVRM: Xid (PCI:0000:3b:00): {code}, pid=4242, name=python, "
        "Graphics SM Warp Exception on (GPC 0, TPC 1, SM 0): Out Of Range Address\n"
    )
    c = cfg(f"xid: {{source: file, kernel_log_path: {klog}}}\ngpu: {{count: null}}\n")
    p = epilog(c)
    doc = json.loads(p.stdout)
    assert p.returncode == 0, p.stderr  # never "Epilog error" for a drain we made
    assert doc["verdict"] in (verdict, "unknown") if verdict == "pass" else doc["verdict"] == "fail"
    xid_fail = [r for r in doc["results"] if r["check"] == "xid.hardware" and r["status"] == "fail"]
    assert bool(xid_fail) is (verdict == "fail"), doc["results"]
    assert [x["xid"] for x in doc["xids"]] == ([code] if offset > 0 else [])
    if verdict == "fail":
        assert doc["drain_reason"].startswith("gcm: XID 79 GPU") and "(xid.hardware)" in doc["drain_reason"]
        assert "would run: scontrol update nodename=node1 state=drain" in p.stderr
    else:
        assert doc["drain_reason"] is None
    # the job start record is consumed
    assert not (tmp_path / "state" / "jobs" / "101.node1.json").exists()


def test_sim_gpu_lost_drains_with_the_xid_action_and_writes_one_report(cfg, tmp_path):
    c = cfg("gpu: {count: 8}\n")
    p = epilog(c, "--sim", "gpu-lost", env={"SLURM_JOB_EXIT_CODE2": "1:0", "SLURM_JOB_EXIT_CODE": "256"})
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["verdict"] == "fail"
    # One ranking (decide.RANKING), as in the prolog and health: the lost GPU
    # names the drain (health lifts it once the GPU answers again); the
    # first 20 characters say it.
    assert doc["drain_reason"].startswith("gcm: GPU 3 lost (gpu.responsive)"), doc["drain_reason"]
    assert any(r["check"] == "xid.hardware" and r["status"] == "fail" for r in doc["results"])
    assert doc["xids"][0]["gpu_index"] == 3  # PCI bus id mapped to the GPU index
    report = json.loads((tmp_path / "reports" / "101" / "report.json").read_text())
    assert report["classification"]["category"] == "gpu_hardware"
    assert report["classification"]["responsibility"] == "infrastructure"
    ev = json.loads((tmp_path / "state" / "evidence" / "101.node1.json").read_text())
    assert ev["xids"][0]["xid"] == 79 and ev["drains"][0]["reason"] == doc["drain_reason"]


def test_healthy_epilog_makes_no_slurm_call(cfg, tmp_path):
    c = cfg("gpu: {count: 8}\n")
    p = epilog(c, "--sim", "healthy")
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["drain_reason"] is None and doc["verdict"] in ("pass", "unknown")
    assert "would run" not in p.stderr


def test_drain_that_cannot_be_made_exits_nonzero_so_slurm_drains(cfg, tmp_path):
    # scontrol that always fails: our drain cannot be made -> exit 1
    fake = tmp_path / "scontrol"
    fake.write_text("#!/bin/sh\necho 'slurm_load_node error: Unable to contact slurm controller' >&2\nexit 1\n")
    fake.chmod(0o755)
    c = cfg(f"gpu: {{count: 8}}\nslurm: {{scontrol: {fake}, timeout_s: 2}}\n")
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    e.update({"SLURM_JOB_ID": "7", "SLURMD_NODENAME": "node1"})
    p = subprocess.run([sys.executable, "-m", "gcm_checks", "epilog", "--config", str(c), "--sim", "gpu-lost", "--no-report"],
                       capture_output=True, text=True, env=e, timeout=60, cwd=str(REPO))
    assert p.returncode == 100, p.stderr  # decide.EXIT_DRAIN: Slurm drains "Epilog error"
    assert "-> drain failed" in p.stderr


def test_report_failure_never_changes_the_exit_status(cfg, tmp_path):
    # an unwritable report dir: the verdict and exit code stay those of the checks
    c = cfg("gpu: {count: 8}\n")
    c.write_text(c.read_text().replace(f"report_dir: {tmp_path}/reports", "report_dir: /proc/no-such-dir"))
    p = epilog(c, "--sim", "gpu-lost")
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["verdict"] == "fail" and doc["report"].get("error")


def test_report_key_uses_the_prologs_restart_count(cfg, tmp_path):
    # A run ended by `scontrol requeue` sees SLURM_JOB_RESTART_COUNT=1 in its
    # epilog already; its report must still be filed under run 0.
    d = tmp_path / "state" / "jobs"
    d.mkdir(parents=True)
    (d / "55.node1.json").write_text(json.dumps({"job_id": "55", "node": "node1", "start": time.time() - 10,
                                                 "restart_count": 0}))
    c = cfg("gpu: {count: 8}\n")
    p = epilog(c, "--sim", "healthy", job="55", env={"SLURM_JOB_RESTART_COUNT": "1"})
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "reports" / "55" / "report.json").exists()
    assert not (tmp_path / "reports" / "55.1").exists()


def test_only_the_first_node_asks_slurmctld_and_shares_the_answer(cfg, tmp_path):
    # A fake scontrol that records each call: a 2-node job costs one job read.
    calls = tmp_path / "calls"
    fake = tmp_path / "scontrol"
    fake.write_text(
        "#!/bin/sh\n"
        f"echo \"$*\" >> {calls}\n"
        "echo 'JobId=300 JobName=bigtrain UserId=root(0) JobState=COMPLETING Reason=NonZeroExitCode "
        "StartTime=2026-11-30T01:00:00 NodeList=node[1-2] MailUser=(null)'\n"
    )
    fake.chmod(0o755)
    c = cfg(f"gpu: {{count: 8}}\nslurm: {{scontrol: {fake}}}\n")
    c.write_text(c.read_text().replace("epilog: {query_job: false}", "epilog: {query_job: true}"))
    env = {"SLURM_JOB_NODELIST": "node[1-2]", "SLURM_JOB_EXIT_CODE2": "1:0", "SLURM_JOB_EXIT_CODE": "256"}
    p1 = epilog(c, "--sim", "healthy", job="300", env=dict(env, SLURMD_NODENAME="node1"))
    assert p1.returncode == 0, p1.stderr
    assert calls.read_text().splitlines() == ["show job -o 300"]
    assert not (tmp_path / "reports" / "300").exists()  # node2 has not reported yet
    p2 = epilog(c, "--sim", "healthy", job="300", env=dict(env, SLURMD_NODENAME="node2"))
    assert p2.returncode == 0, p2.stderr
    assert calls.read_text().splitlines() == ["show job -o 300"]  # node2 asked nothing
    report = json.loads((tmp_path / "reports" / "300" / "report.json").read_text())
    # node2 assembled, with what node1 learned from slurmctld
    assert report["job"]["name"] == "bigtrain"
    assert report["classification"]["category"] != "success"


def test_with_job_facts_fills_only_empty_fields():
    from gcm_checks.report import JobInfo, with_job_facts

    job = JobInfo(job_id="1", name="", state="COMPLETING")
    contribs = {"node1": {"evidence": {"job_facts": {"name": "train", "state": "FAILED", "nodes": ["node1", "node2"]}}},
                "node2": {"evidence": {}}}
    out = with_job_facts(job, contribs)
    assert out.name == "train" and out.state == "COMPLETING" and out.nodes == ("node1", "node2")


def test_deeper_dcgm_level_only_when_the_budget_holds_it():
    from gcm_checks import config
    from gcm_checks.epilog import dcgm_level_after_failure
    from gcm_checks.logs import NullLog

    s = config.resolve({}, "n1")  # dcgm_level_after_failure: 2 (about 2 minutes)
    assert dcgm_level_after_failure(s, 10.0, NullLog()) == 1
    assert dcgm_level_after_failure(s, 180.0, NullLog()) == 2
