"""End to end: Slurm runs the repo's prolog.d/ and epilog.d/ scripts.

node2 simulates a lost GPU (config ``nodes: [{match: node2, set: {simulate:
gpu-lost}}]`` in gcm-checks.yaml beside slurm.conf). A job that lands there is
requeued, completes on node1, and node2 stays drained with a ``gcm:`` reason.
On a healthy node the prolog costs slurmctld no REQUEST_UPDATE_NODE at all; a
drain costs exactly one. Everything is read from Slurm: scontrol, sinfo,
sacct, sdiag.
"""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.slurm


def _prefer_node2(c):
    # Lower weight is preferred: make the scheduler pick node2 first so the
    # job meets the bad node before it can be requeued onto the good one.
    c.scontrol("update", "nodename=node1", "weight=100")
    c.scontrol("update", "nodename=node2", "weight=1")


def _release_if_waiting(c, job):
    """A requeued job waits for its credential to expire before it can run
    again (facts #11); nudge it so the test does not sit out the delay."""
    info = c.job(job)
    if info.get("JobState") == "PENDING":
        c.scontrol("release", job, check=False)
        c.scontrol("update", f"jobid={job}", "StartTime=now", check=False)


def test_failing_node_drains_and_job_completes_elsewhere(gcm_scripts_cluster):
    c = gcm_scripts_cluster
    c.write_gcm_config({"nodes": [{"match": "node2", "set": {"simulate": "gpu-lost"}}]})
    _prefer_node2(c)
    c.sdiag_reset()
    job = c.sbatch("echo ran on $SLURMD_NODENAME\n", job_name="e2e-fail", nodes=1, requeue=True)
    end = time.monotonic() + 90
    state = ""
    while time.monotonic() < end:
        state = c.job_state(job)
        if state == "COMPLETED":
            break
        if state == "PENDING" and "DRAIN" in c.node("node2").get("State", ""):
            _release_if_waiting(c, job)
        time.sleep(0.3)
    info = c.wait_job(job, {"COMPLETED"}, timeout=5)
    assert info["NodeList"] == "node1"
    assert int(info.get("Restarts", "0")) >= 1
    node = c.node("node2")
    assert "DRAIN" in node["State"]
    # Which check reports the lost GPU first (NVML or its XID 79) is the
    # checks' business; ours is that the reason is gcm's and names the GPU.
    assert node["Reason"].startswith("gcm: ") and "GPU 3" in node["Reason"]
    assert node["Reason"].endswith("]")  # Slurm's own " [root@time]" stamp: not overwritten by "Prolog error"
    reason = c.sinfo_reasons()["node2"]
    assert reason.startswith("gcm: ") and "GPU 3" in reason
    # Our drain was the only node update: exactly one REQUEST_UPDATE_NODE
    # (Slurm's own "Prolog error" drain happens inside slurmctld, not by RPC,
    # and it kept our reason).
    assert c.sdiag_rpc_counts().get("REQUEST_UPDATE_NODE", 0) == 1
    rows = [r for r in c.sacct(job, fields="JobID,State,NodeList", duplicates=True) if r["JobID"] == job]
    # The accounting record tells the story: requeued off node2, completed on node1.
    assert [(r["State"], r["NodeList"]) for r in rows] == [("REQUEUED", "node2"), ("COMPLETED", "node1")]
    with open(f"{c.jobdir}/{job}.out") as f:
        assert "ran on node1" in f.read()


def test_healthy_node_prolog_makes_no_update_rpc(gcm_scripts_cluster):
    c = gcm_scripts_cluster
    c.write_gcm_config({})
    # The first job after a (re)configure can pay one-off costs; measure the next two.
    first = c.sbatch("true\n", job_name="warm", nodelist="node1")
    c.wait_job(first, {"COMPLETED", "FAILED"}, timeout=60)
    c.sdiag_reset()
    jobs = [c.sbatch("true\n", job_name=f"healthy{i}", nodelist=n) for i, n in enumerate(("node1", "node2"))]
    for j in jobs:
        assert c.wait_job(j, {"COMPLETED", "FAILED"}, timeout=60)["JobState"] == "COMPLETED"
    counts = c.sdiag_rpc_counts()
    assert counts.get("REQUEST_COMPLETE_PROLOG", 0) == 2  # the prolog did run
    assert counts.get("REQUEST_UPDATE_NODE", 0) == 0
    assert c.sinfo_reasons() == {}


def _wait(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_health_check_program_drains_publishes_and_resumes(gcm_scripts_cluster):
    """slurmd itself runs bin/gcm-checks-health every HealthCheckInterval."""
    from slurm_cluster import REPO

    c = gcm_scripts_cluster
    c.write_gcm_config({"nodes": [{"match": "node2", "set": {"simulate": "gpu-lost"}}]})
    c.use_health_check(c.health_wrapper(f"{REPO}/bin/gcm-checks-health"), interval=2)
    try:
        _wait(lambda: c.sinfo_reasons().get("node2", "").startswith("gcm: "), 40, "node2 drained by the health check")
        _wait(lambda: c.node("node1").get("ActiveFeatures") == "gcm_ok", 20, "gcm_ok on node1")
        _wait(lambda: c.node("node2").get("ActiveFeatures") == "gcm_degraded", 20, "gcm_degraded on node2")
        assert "node1" not in c.sinfo_reasons()
        assert c.node("node1")["Extra"].startswith("gcm ok")
        # Users asking for healthy nodes get node1 only.
        job = c.sbatch("true\n", constraint="gcm_ok", job_name="constrained")
        assert c.wait_job(job, {"COMPLETED"}, timeout=60)["NodeList"] == "node1"
        # The GPU is repaired: the next health run lifts our own drain.
        c.write_gcm_config({})
        _wait(lambda: "node2" not in c.sinfo_reasons(), 40, "node2 resumed by the health check")
        _wait(lambda: c.node("node2").get("ActiveFeatures") == "gcm_ok", 20, "gcm_ok on node2")
        # An admin edits slurm.conf and reconfigures: Slurm drops the features
        # (facts #8); the next health run notices the edit and restores them.
        # (Health checks paused meanwhile, to see the wipe happen.)
        program = c.health_program
        c.use_health_check(None)
        _wait(lambda: c.node("node1").get("ActiveFeatures") == "(null)", 20, "features wiped by reconfigure")
        c.use_health_check(program, interval=2)
        _wait(lambda: c.node("node1").get("ActiveFeatures") == "gcm_ok" and c.node("node2").get("ActiveFeatures") == "gcm_ok", 30, "features re-applied after reconfigure")
    finally:
        c.use_health_check(None)


def test_prolog_flags_alloc_contain_as_docs_recommend(gcm_scripts_cluster):
    """docs/slurm.md recommends PrologFlags=Alloc,Contain: the prolog still
    drains a bad node with our reason, and a healthy node runs the job with
    its extern step (Contain). 22.05 with proctrack/linuxproc (facts: Contain
    works there; cgroup is what production uses)."""
    c = gcm_scripts_cluster
    saved = list(c.extra_conf)
    c.extra_conf = saved + ["PrologFlags=Alloc,Contain"]
    try:
        c._reconfigure()
        flags = [ln for ln in c.scontrol("show", "config").stdout.splitlines() if ln.startswith("PrologFlags")]
        assert flags and "Contain" in flags[0], flags
        c.write_gcm_config({"nodes": [{"match": "node2", "set": {"simulate": "gpu-lost"}}]})
        bad = c.sbatch("true\n", job_name="contain-bad", nodelist="node2", requeue=True)
        end = time.monotonic() + 60
        while time.monotonic() < end and "DRAIN" not in c.node("node2").get("State", ""):
            time.sleep(0.3)
        node = c.node("node2")
        assert "DRAIN" in node["State"] and node["Reason"].startswith("gcm: ") and "GPU 3" in node["Reason"]
        good = c.sbatch("echo ok\n", job_name="contain-good", nodelist="node1")
        info = c.wait_job(good, {"COMPLETED", "FAILED"}, timeout=60)
        assert info["JobState"] == "COMPLETED"
        steps = [r["JobID"] for r in c.sacct(good, fields="JobID,State", duplicates=True)]
        assert f"{good}.extern" in steps, steps
    finally:
        c.extra_conf = saved
        c._reconfigure()
