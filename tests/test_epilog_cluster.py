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


def _scenario(cluster, name, kernel_log):
    """A simulated node whose kernel log holds ``kernel_log`` (healthy otherwise)."""
    path = os.path.join(cluster.root, f"{name}.yaml")
    body = "".join(f"  {ln}\n" for ln in kernel_log.strip().splitlines())
    with open(path, "w") as f:
        f.write(f"description: issue 18 {name}\nextends: healthy\nkernel_log: |\n{body}")
    return path


def _drained_reason(c, node="node2"):
    n = _wait(lambda: (lambda n: n if "DRAIN" in n.get("State", "") else None)(c.node(node)))
    assert n, c.node(node)
    return n["Reason"]


def test_epilog_drains_on_fallen_off_the_bus_without_an_xid_line(gcm_scripts_cluster):
    c = gcm_scripts_cluster
    sim = _scenario(c, "fallen-off-bus", """
[Mon Nov 30 02:14:07 2026] NVRM: The NVIDIA GPU 0000:5d:00.0
[Mon Nov 30 02:14:07 2026] NVRM: (PCI ID: 10de:2330) installed in this system has
[Mon Nov 30 02:14:07 2026] NVRM: fallen off the bus and is not responding to commands.
""")
    c.write_gcm_config(_cfg(c, sim))
    job = c.sbatch("#!/bin/bash\nexit 1\n", nodelist="node2", job_name="fobjob")
    c.wait_job(job, {"FAILED"}, timeout=60)
    reason = _drained_reason(c)
    assert reason.startswith("gcm: XID 79 GPU 3 (xid.hardware) 00000000:5D:00.0: XID 79"), reason
    assert "Epilog error" not in reason


def test_epilog_drains_on_a_fatal_sxid_naming_switch_and_link(gcm_scripts_cluster):
    c = gcm_scripts_cluster
    sim = _scenario(c, "nvswitch-fatal", """
[Mon Nov 30 02:14:07 2026] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 37 LTSSM Fault Up
[Mon Nov 30 02:14:07 2026] nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine instance 37 Sub-engine instance 00
""")
    c.write_gcm_config(_cfg(c, sim))
    job = c.sbatch("#!/bin/bash\nexit 0\n", nodelist="node2", job_name="sxidjob")
    c.wait_job(job, {"COMPLETED"}, timeout=60)
    reason = _drained_reason(c)
    assert reason.startswith("gcm: SXid 20034 nvswitch2 (xid.nvswitch) nvswitch2 (00000000:07:00.0) link 37"), reason
    assert "SXid 20034" in reason
    report = os.path.join(c.root, "reports", str(job), "report.json")
    assert _wait(lambda: os.path.exists(report), 15)
    text = open(report).read()
    assert "xid.nvswitch" in text and '"sxid": 20034' in text
