"""On the real Slurm 22.05 test cluster (slurm.conf in DIR/etc, not
/etc/slurm): the health check installed by `gcm-checks install` finds its
config although slurmd gives it no SLURM_CONF, and a busy node with
HealthCheckNodeState=ANY is neither degraded nor drained for its running job's
GPU processes - judged by Slurm's own view (`scontrol show node`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slurm


def _wait(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def installed(clean_cluster):
    """`gcm-checks install --slurm-conf DIR/etc/slurm.conf --prefix DIR/gcm` with
    this checkout's venv (--force: its interpreter is root's pyenv here; slurmd
    runs the scripts as root, so that is fine for this test)."""
    from slurm_cluster import REPO

    c = clean_cluster
    gcm_bin = os.path.join(REPO, ".venv", "bin", "gcm-checks")
    if not os.access(gcm_bin, os.X_OK):
        pytest.skip("needs <repo>/.venv/bin/gcm-checks")
    prefix = os.path.join(c.root, "gcm")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "GCM_CHECKS_"))}
    p = subprocess.run([sys.executable, "-m", "gcm_checks", "install", "--slurm-conf", c.conf, "--prefix", prefix,
                        "--bin", gcm_bin, "--force"], capture_output=True, text=True, env=env, timeout=60, cwd=REPO)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"HealthCheckProgram={prefix}/gcm-checks-health" in p.stdout
    try:
        yield c, prefix
    finally:
        c.use_health_check(None)
        c.reset_nodes()


def test_installed_health_check_finds_the_config_beside_a_non_default_slurm_conf(installed):
    c, prefix = installed
    assert not c.conf.startswith("/etc/slurm/")
    # The config (beside slurm.conf, kept by install) makes node2's GPU 3 lost.
    # Only a health check that found it can drain node2: with built-in defaults
    # this machine (no NVIDIA GPU on its PCI bus) passes.
    c.write_gcm_config({"nodes": [{"match": "node2", "set": {"simulate": "gpu-lost"}}]})
    c.use_health_check(os.path.join(prefix, "gcm-checks-health"), interval=2)  # slurmd runs it bare
    _wait(lambda: c.node("node2").get("Reason", "").startswith("gcm:"), 40, "node2 drained by the installed health check")
    node2 = c.node("node2")
    assert "DRAIN" in node2["State"] and "GPU 3" in node2["Reason"]
    _wait(lambda: c.node("node1").get("ActiveFeatures") == "gcm_ok", 20, "gcm_ok on node1")
    assert "DRAIN" not in c.node("node1")["State"]


def test_busy_node_health_with_state_any_is_not_degraded_by_its_jobs_processes(installed, tmp_path):
    c, prefix = installed
    job = c.sbatch("sleep 300\n", nodelist="node1", job_name="training")
    _wait(lambda: c.job_state(job) == "RUNNING", 30, "the training job running")
    # The simulated GPUs of node1 run this job's processes (their cgroup names
    # job_<id>); node2's GPU 0 holds a process of no job: a real leftover.
    scen = os.path.join(c.root, "busy.yaml")
    with open(scen, "w") as f:
        f.write(f"extends: healthy\ngpus:\n  template:\n    processes: [{{pid: 4000, used_memory_mib: 60000, job: {job}}}]\n")
    left = os.path.join(c.root, "left.yaml")
    with open(left, "w") as f:
        f.write("extends: healthy\ngpus:\n  overrides:\n    0: {processes: [{pid: 4001, used_memory_mib: 100}]}\n")
    c.write_gcm_config({"gpu": {"leftover_processes": "fail"}, "nodes": [
        {"match": "node1", "set": {"simulate": scen}}, {"match": "node2", "set": {"simulate": left}}]})
    c.use_health_check(os.path.join(prefix, "gcm-checks-health"), interval=2)
    # The control proves health ran with this config and judges processes.
    _wait(lambda: c.node("node2").get("Reason", "").startswith("gcm:"), 40, "node2 drained for its leftover")
    assert "gpu.processes" in c.node("node2")["Reason"]
    _wait(lambda: c.node("node1").get("ActiveFeatures") == "gcm_ok", 30, "gcm_ok on busy node1")
    time.sleep(5)  # two more health cycles on the busy node
    node1 = c.node("node1")
    assert "DRAIN" not in node1["State"] and node1.get("ActiveFeatures") == "gcm_ok", node1
    assert node1["Extra"].startswith("gcm ok")
    assert c.job_state(job) == "RUNNING"


def test_installed_prolog_runs_jobs_and_uninstall_keeps_the_safe_order(installed):
    from slurm_cluster import REPO

    c, prefix = installed
    prolog_glob, epilog_glob = f"{prefix}/prolog.d/*", f"{prefix}/epilog.d/*"
    c.use_scripts(prolog_glob, epilog_glob)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "GCM_CHECKS_"))}

    def uninstall():
        return subprocess.run([sys.executable, "-m", "gcm_checks", "uninstall", "--slurm-conf", c.conf, "--prefix", prefix],
                              capture_output=True, text=True, env=env, timeout=60, cwd=REPO)

    try:
        job = c.sbatch("true\n", nodelist="node1", job_name="installed")
        assert c.wait_job(job, {"COMPLETED", "FAILED"}, timeout=60)["JobState"] == "COMPLETED"
        assert os.path.exists(os.path.join(c.state_dir, "jobs", "ended"))  # the installed epilog ran gcm-checks
        p = uninstall()
        assert p.returncode == 1 and "Prolog=" in p.stderr  # slurm.conf still runs it: nothing removed
        assert os.path.exists(f"{prefix}/prolog.d/50-gcm-checks")
        c.wait_nodes_idle(timeout=60)  # no reconfigure while node1 is still completing the job
        c.use_scripts(None, None)  # the admin removes the lines and reconfigures
        p = uninstall()
        assert p.returncode == 0, p.stderr
        assert os.listdir(f"{prefix}/prolog.d") == ["00-noop"]
        # A slurmd still on the old configuration runs the glob: the no-op
        # keeps it from "Prolog error" (an empty prolog.d drains the node).
        c.use_scripts(prolog_glob, epilog_glob)
        job = c.sbatch("true\n", nodelist="node1", job_name="after-uninstall")
        assert c.wait_job(job, {"COMPLETED", "FAILED"}, timeout=60)["JobState"] == "COMPLETED"
        assert "DRAIN" not in c.node("node1")["State"]
    finally:
        c.use_scripts(None, None)
