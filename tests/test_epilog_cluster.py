"""The epilog end to end on the real Slurm test cluster: Epilog=<repo>/epilog.d/*
runs `gcm-checks epilog` after a job; assertions read Slurm's own view."""

from __future__ import annotations

import json
import os
import time

import pytest

pytestmark = pytest.mark.slurm


def _cfg(cluster, node2_sim, **extra):
    root = cluster.root
    return dict(
        {
            "gpu": {"count": 8},
            "report": {"spool_dir": os.path.join(root, "spool"), "report_dir": os.path.join(root, "reports")},
            "notify": {"outbox_dir": os.path.join(root, "outbox")},
            "nodes": [{"match": "node2", "set": {"simulate": node2_sim}}],
        },
        **extra,
    )


def _wait(predicate, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    return predicate()


def test_epilog_drains_after_an_xid_and_the_job_still_completes(gcm_scripts_cluster):
    c = gcm_scripts_cluster
    c.write_gcm_config(_cfg(c, "xid-during-job"))
    c.sdiag_reset()
    # the job dies with a CUDA error when its GPU falls off the bus
    job = c.sbatch("#!/bin/bash\necho 'RuntimeError: CUDA error: unspecified launch failure' >&2\nexit 1\n",
                   nodelist="node2", job_name="xidjob")
    info = c.wait_job(job, {"FAILED"}, timeout=60)
    assert info["JobState"] == "FAILED"
    node = _wait(lambda: (lambda n: n if "DRAIN" in n.get("State", "") else None)(c.node("node2")))
    assert node, c.node("node2")
    assert node["Reason"].startswith("gcm: XID 79 GPU 3 (xid.hardware) 00000000:5D:00.0: XID 79"), node["Reason"]
    # sinfo -R's default 20 columns name the XID and the GPU
    assert c.sinfo_reasons()["node2"][:20] == "gcm: XID 79 GPU 3 (x"
    assert c.sdiag_rpc_counts().get("REQUEST_UPDATE_NODE", 0) == 1  # the drain, nothing else
    report = os.path.join(c.root, "reports", str(job), "report.json")
    assert _wait(lambda: os.path.exists(report), 15)
    doc = json.loads(open(report).read())
    # hardware evidence beats the CUDA error it caused
    assert doc["classification"]["category"] == "gpu_hardware"
    assert doc["classification"]["responsibility"] == "infrastructure"
    assert doc["job"]["job_id"] == str(job)
    # the epilog itself exited 0 (no "Epilog error" overwrote our reason)
    assert "Epilog error" not in c.node("node2")["Reason"]


def test_healthy_epilog_leaves_the_node_alone(gcm_scripts_cluster):
    c = gcm_scripts_cluster
    c.write_gcm_config(_cfg(c, "healthy"))
    c.sdiag_reset()
    job = c.sbatch("#!/bin/bash\nexit 3\n", nodelist="node2", job_name="fail3")
    c.wait_job(job, {"FAILED"}, timeout=60)
    time.sleep(1.0)  # let the epilog finish
    assert "DRAIN" not in c.node("node2")["State"]
    assert c.sdiag_rpc_counts().get("REQUEST_UPDATE_NODE", 0) == 0
    report = os.path.join(c.root, "reports", str(job), "report.json")
    assert _wait(lambda: os.path.exists(report), 15)
    doc = json.loads(open(report).read())
    assert doc["job"]["exit_status"] == "3:0"
    assert doc["classification"]["responsibility"] in ("user", "unknown")
