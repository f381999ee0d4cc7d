"""``gcm-checks qualify`` end to end on the real Slurm 22.05 test cluster.

Qualification runs the way docs/qualify.md tells admins to run it: as a
Slurm job on the node (sbatch, exclusive), finding its config beside
slurm.conf. Every assertion reads Slurm's own view (scontrol show node) or the
result file the job wrote.
"""

from __future__ import annotations

import glob
import json
import os
import sys

import pytest

pytestmark = pytest.mark.slurm

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _qualify_job(c, node: str, scenario: str, results_dir: str, level: str = "standard") -> dict:
    # The scenario replaces the hardware only; Slurm, the config discovery and
    # scontrol are real. The level's budget is kept small for the test.
    c.write_gcm_config({"simulate": scenario, "qualify": {"results_dir": results_dir,
                                                           "levels": {level: {"budget_s": 60}}}})
    script = f"#!/bin/bash\ncd {REPO}\nexec {sys.executable} -m gcm_checks qualify --level {level}\n"
    job = c.sbatch(script, nodelist=node, exclusive=True, job_name=f"qualify-{node}")
    return c.wait_job(job, {"COMPLETED", "FAILED"}, timeout=90)


def _cleanup(c, node: str) -> None:
    c.write_gcm_config()  # back to the base config for the tests that follow
    c.scontrol("update", f"nodename={node}", "AvailableFeatures=", "ActiveFeatures=", check=False)
    for p in glob.glob(os.path.join(c.state_dir, f"slurm-*.{node}.json")):
        os.unlink(p)
    c.reset_nodes()


def test_qualify_pass_sets_feature_and_extra(clean_cluster, tmp_path):
    c = clean_cluster
    results = tmp_path / "results"
    try:
        done = _qualify_job(c, "node1", "healthy-dcgm", str(results))
        out = open(os.path.join(c.jobdir, f"{done['JobId']}.out")).read()
        assert done["JobState"] == "COMPLETED", out
        node = c.node("node1")
        assert "gcm_qualified" in node["AvailableFeatures"].split(","), node
        assert "gcm_qualified" in node["ActiveFeatures"].split(",")
        assert node["Extra"].startswith("gcm qualified 20")
        assert "DRAIN" not in node["State"]
        # Users (or admins' production partitions) can now ask for it.
        job = c.sbatch("true\n", constraint="gcm_qualified", job_name="needs-qualified")
        ran = c.wait_job(job, {"COMPLETED", "FAILED"}, timeout=60)
        assert ran["JobState"] == "COMPLETED" and ran["NodeList"] == "node1"
        files = list(results.glob("node1_*_standard.json"))
        assert len(files) == 1
        doc = json.loads(files[0].read_text())
        assert doc["schema"] == "gcm-checks/qualify" and doc["version"] == 1
        assert doc["node"] == "node1" and doc["verdict"] == "pass" and doc["qualified"] is True
        assert {"perf.gemm", "perf.mem_bw", "dcgm.diag", "gpu.nvml"} <= {r["check"] for r in doc["results"]}
        assert len(doc["perf"]["gpus"]) == 8
        assert doc["slurm"]["action"] == "set gcm_qualified"
    finally:
        _cleanup(c, "node1")


def test_qualify_slow_gpu_drains_with_qualify_reason(clean_cluster, tmp_path):
    c = clean_cluster
    try:
        done = _qualify_job(c, "node2", "slow-gpu", str(tmp_path / "results"))
        # Not qualified: the job says so with its exit status.
        assert done["JobState"] == "FAILED" and done["ExitCode"].startswith("1:")
        node = c.node("node2")
        assert "DRAIN" in node["State"]
        assert node["Reason"].startswith("gcm: GPU 5 slow (qualify perf.gemm)"), node["Reason"]
        assert "518 TFLOPS" in node["Reason"] and "740 expected" in node["Reason"]
        assert "gcm_qualified" not in node.get("ActiveFeatures", "")
        assert c.sinfo_reasons()["node2"].startswith("gcm: GPU 5 slow (qu")
    finally:
        _cleanup(c, "node2")
