"""``gcm-checks health`` and ``gcm-checks node ...`` as real processes against
the real test cluster. Assertions read Slurm's view (scontrol, sinfo, sdiag).
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from gcm_checks.proc import run

pytestmark = pytest.mark.slurm

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gcm(cluster, *args, node="node2", timeout=60, extra_env=None):
    env = dict(cluster.env, SLURMD_NODENAME=node, PYTHONPATH=REPO)
    env.pop("GCM_CHECKS_CONFIG", None)
    env.update(extra_env or {})
    return run([sys.executable, "-m", "gcm_checks", *args], timeout=timeout, env=env, cwd=REPO)


def _nodes_cfg(cluster, node2_sim, **top):
    return dict(top, nodes=[{"match": "node2", "set": {"simulate": node2_sim}}])


def test_health_drains_failing_node_then_resumes_it(clean_cluster):
    c = clean_cluster
    c.write_gcm_config(_nodes_cfg(c, "gpu-lost"))
    c.sdiag_reset()
    res = gcm(c, "health")
    assert res.returncode == 100, res.stderr  # decide.EXIT_DRAIN
    node = c.node("node2")
    assert "DRAIN" in node["State"] and node["Reason"].startswith("gcm: ") and "GPU 3" in node["Reason"]
    assert c.sinfo_reasons()["node2"].startswith("gcm: ")
    assert node["ActiveFeatures"] == "gcm_degraded" and node["Extra"].startswith("gcm degraded")
    updates = c.sdiag_rpc_counts().get("REQUEST_UPDATE_NODE", 0)
    assert updates == 2  # one drain + one features/Extra transition
    # Still failing: no new Slurm update.
    assert gcm(c, "health").returncode == 100
    assert c.sdiag_rpc_counts().get("REQUEST_UPDATE_NODE", 0) == updates
    # Repaired: the same checks pass, our drain is lifted, features flip.
    c.write_gcm_config(_nodes_cfg(c, "healthy"))
    res = gcm(c, "health")
    assert res.returncode == 0, res.stderr
    c.wait_nodes_idle(["node2"])
    node = c.node("node2")
    assert "node2" not in c.sinfo_reasons()
    assert node["ActiveFeatures"] == "gcm_ok" and node["Extra"].startswith("gcm ok")


def test_healthy_health_run_makes_no_update(clean_cluster):
    c = clean_cluster
    c.write_gcm_config({})
    gcm(c, "health", node="node1")  # first run may publish gcm_ok (a transition)
    c.sdiag_reset()
    for _ in range(2):
        assert gcm(c, "health", node="node1").returncode == 0
    counts = c.sdiag_rpc_counts()
    assert counts.get("REQUEST_UPDATE_NODE", 0) == 0
    assert counts.get("REQUEST_NODE_INFO", 0) == 0  # local state answered everything


def test_health_keeps_admin_drain(clean_cluster):
    c = clean_cluster
    c.scontrol("update", "nodename=node2", "state=drain", "reason=maintenance window")
    c.write_gcm_config(_nodes_cfg(c, "gpu-lost"))
    assert gcm(c, "health").returncode == 100
    assert c.sinfo_reasons()["node2"] == "maintenance window"
    c.write_gcm_config(_nodes_cfg(c, "healthy"))
    assert gcm(c, "health").returncode == 0
    assert c.sinfo_reasons()["node2"] == "maintenance window"  # never resumed by us


def test_report_only_drains_nothing(clean_cluster):
    c = clean_cluster
    c.write_gcm_config(_nodes_cfg(c, "gpu-lost", report_only=True))
    c.sdiag_reset()
    res = gcm(c, "health")
    assert res.returncode == 0, res.stderr
    assert "-> drain: would drain" in res.stderr and "[report-only]" in res.stderr
    counts = c.sdiag_rpc_counts()  # before this test's own reads below
    assert counts.get("REQUEST_UPDATE_NODE", 0) == 0
    assert counts.get("REQUEST_NODE_INFO", 0) == 0  # report-only does not even read the node
    assert "node2" not in c.sinfo_reasons()
    assert c.node("node2")["ActiveFeatures"] in ("", "(null)")  # no gcm_degraded either
    log = [json.loads(x) for x in open(os.path.join(c.logdir, "gcm-checks.log")) if '"would_drain"' in x]
    assert log and log[-1]["reason"].startswith("gcm: GPU 3 lost") and log[-1]["report_only"] is True


def test_health_with_slurmctld_unreachable_is_bounded_and_drains_nothing(clean_cluster, tmp_path):
    c = clean_cluster
    with open(c.conf) as f:
        text = f.read().replace(f"SlurmctldPort={c.ctld_port}", "SlurmctldPort=9")
    (tmp_path / "slurm.conf").write_text(text)
    cfg = dict(c.base_gcm_config(), state_dir=str(tmp_path / "state"), nodes=[{"match": "node2", "set": {"simulate": "gpu-lost", "slurm": {"timeout_s": 1.0}}}])
    import yaml

    (tmp_path / "gcm-checks.yaml").write_text(yaml.safe_dump(cfg))
    t0 = time.monotonic()
    res = gcm(c, "health", "--json", extra_env={"SLURM_CONF": str(tmp_path / "slurm.conf")})
    assert time.monotonic() - t0 < 45  # generous bound: it did not hang
    doc = json.loads(res.stdout)
    assert doc["verdict"] == "fail" and doc["actions"]["drain"]["action"] == "error"
    assert "node2" not in c.sinfo_reasons()


def test_node_drain_status_resume(clean_cluster):
    c = clean_cluster
    c.write_gcm_config({})
    res = gcm(c, "node", "drain", "node1", "--reason", "bad fan; $(reboot)")
    assert res.returncode == 0, res.stderr
    assert c.sinfo_reasons()["node1"] == "gcm: bad fan, (reboot)"  # ";" becomes ","
    st = json.loads(gcm(c, "node", "status", "node1", "node2", "--json").stdout)
    rows = {r["node"]: r for r in st["nodes"]}
    assert rows["node1"]["owner"] == "gcm" and "DRAIN" in rows["node1"]["state"]
    assert rows["node2"]["owner"] is None
    table = gcm(c, "node", "status", "--all").stdout
    assert "node1" in table and "node2" in table and "gcm: bad fan" in table
    res = gcm(c, "node", "resume", "node1")
    assert res.returncode == 0, res.stderr + res.stdout
    c.wait_nodes_idle(["node1"])
    assert "node1" not in c.sinfo_reasons()


def test_node_resume_refuses_foreign_drain_without_force(clean_cluster):
    c = clean_cluster
    c.write_gcm_config({})
    c.scontrol("update", "nodename=node1", "state=drain", "reason=RMA 1234")
    res = gcm(c, "node", "resume", "node1")
    assert res.returncode == 1 and "NOT resumed" in res.stdout
    assert c.sinfo_reasons()["node1"] == "RMA 1234"
    res = gcm(c, "node", "drain", "node1", "--reason", "gpu dead")
    assert res.returncode == 1 and c.sinfo_reasons()["node1"] == "RMA 1234"
    res = gcm(c, "node", "resume", "node1", "--force")
    assert res.returncode == 0 and "warning" in res.stderr
    c.wait_nodes_idle(["node1"])
    assert "node1" not in c.sinfo_reasons()


def test_node_drain_dry_run_changes_nothing(clean_cluster):
    c = clean_cluster
    c.write_gcm_config({})
    res = gcm(c, "node", "drain", "node2", "--reason", "test", "--dry-run")
    assert res.returncode == 0
    assert "would run: scontrol update nodename=node2 state=drain reason='gcm: test'" in res.stderr
    assert "node2" not in c.sinfo_reasons()
