"""gcm_checks.slurm against a real Slurm 22.05 (slurmctld, slurmd x2, slurmdbd).

Every assertion reads Slurm's own view - ``scontrol show node``, ``sinfo -R``,
``sdiag``, ``squeue`` - never our logs.
"""

from __future__ import annotations

import os
import time

import pytest

from gcm_checks import slurm
from gcm_checks.slurm.backends import ScontrolBackend
from gcm_checks.slurm.parse import SlurmError

pytestmark = pytest.mark.slurm


@pytest.fixture
def backend(clean_cluster):
    return ScontrolBackend(timeout_s=10, env=clean_cluster.env)


def _updates(cluster) -> int:
    return cluster.sdiag_rpc_counts().get("REQUEST_UPDATE_NODE", 0)


def test_drain_shows_in_scontrol_and_sinfo_and_costs_one_rpc(clean_cluster, backend, tmp_path):
    c = clean_cluster
    reason = slurm.make_drain_reason("gpu.count", "", "expected 8 found 7")
    c.sdiag_reset()
    out = slurm.apply_drain(backend, "node2", reason, state_dir=str(tmp_path), check="gpu.count")
    assert out.action == "drained"
    assert _updates(c) == 1
    node = c.node("node2")
    assert "DRAIN" in node["State"]
    assert node["Reason"].startswith("gcm: GPU missing (gpu.count): expected 8 found 7 [root@")
    assert c.sinfo_reasons()["node2"] == "gcm: GPU missing (gpu.count): expected 8 found 7"
    # what `sinfo -R` shows by default (20 columns) names the problem
    reasons = c._cmd("sinfo", "-R", "--noheader").stdout
    assert "gcm: GPU missing (gp" in reasons
    # The same finding again: nothing to do, no RPC.
    assert slurm.apply_drain(backend, "node2", reason, state_dir=str(tmp_path)).action == "already"
    assert _updates(c) == 1


def test_foreign_drain_is_kept(clean_cluster, backend, tmp_path):
    c = clean_cluster
    c.scontrol("update", "nodename=node1", "state=drain", "reason=maintenance: swap PSU")
    c.sdiag_reset()
    out = slurm.apply_drain(backend, "node1", "gcm: gpu.ecc: GPU 0: 3 uncorrectable", state_dir=str(tmp_path))
    assert out.action == "kept_foreign" and out.previous_reason == "maintenance: swap PSU"
    assert _updates(c) == 0
    assert c.sinfo_reasons()["node1"] == "maintenance: swap PSU"
    # And it is never resumed without --force.
    assert slurm.apply_resume(backend, "node1", state_dir=str(tmp_path)).action == "kept_foreign"
    assert "DRAIN" in c.node("node1")["State"]
    assert slurm.apply_resume(backend, "node1", force=True, state_dir=str(tmp_path)).action == "resumed"
    c.wait_nodes_idle(["node1"])
    assert "node1" not in c.sinfo_reasons()


def test_gcm_drain_is_resumed(clean_cluster, backend, tmp_path):
    c = clean_cluster
    sd = str(tmp_path)
    slurm.apply_drain(backend, "node2", "gcm: gpu.count: 7 of 8", state_dir=sd, check="gpu.count")
    assert slurm.drain_record(sd, "node2") is not None
    out = slurm.resume_if_passed(backend, "node2", ["gpu.count"], state_dir=sd)
    assert out is not None and out.action == "resumed"
    c.wait_nodes_idle(["node2"])
    assert "node2" not in c.sinfo_reasons()
    assert slurm.drain_record(sd, "node2") is None


def test_admin_redrain_after_our_drain_is_not_resumed(clean_cluster, backend, tmp_path):
    c = clean_cluster
    sd = str(tmp_path)
    slurm.apply_drain(backend, "node2", "gcm: gpu.count: 7 of 8", state_dir=sd, check="gpu.count")
    # An admin takes over the drain: scontrol replaces the reason.
    c.scontrol("update", "nodename=node2", "state=drain", "reason=RMA ticket 42")
    out = slurm.resume_if_passed(backend, "node2", ["gpu.count"], state_dir=sd)
    assert out is not None and out.action == "kept_foreign"
    assert c.sinfo_reasons()["node2"] == "RMA ticket 42"


def test_hostile_reason_text_lands_sanitised(clean_cluster, backend, tmp_path):
    c = clean_cluster
    reason = slurm.make_drain_reason("xid", "GPU 1", "Xid 79 `reboot`; $(id) 'q' \"d\"\nnext line")
    slurm.apply_drain(backend, "node2", reason, state_dir=str(tmp_path))
    assert c.sinfo_reasons()["node2"] == "gcm: XID 79 GPU 1 (xid): Xid 79 reboot, (id) q d next line"


def test_features_preserved_reapplied_after_reconfigure(clean_cluster, backend, tmp_path):
    c = clean_cluster
    sd = str(tmp_path)
    c.scontrol("update", "nodename=node1", "AvailableFeatures=a100,ib", "ActiveFeatures=a100,ib")
    out = slurm.apply_features(backend, "node1", ["gcm_ok"], slurm.summary_extra("ok"), state_dir=sd)
    assert out.action == "applied"
    node = c.node("node1")
    assert node["AvailableFeatures"].split(",") == ["a100", "ib", "gcm_ok"]
    assert node["ActiveFeatures"].split(",") == ["a100", "ib", "gcm_ok"]
    assert node["Extra"].startswith("gcm ok ")
    # Users can ask for a healthy node.
    job = c.sbatch("true\n", constraint="gcm_ok", job_name="constraint")
    done = c.wait_job(job, {"COMPLETED", "FAILED"}, timeout=60)
    assert done["JobState"] == "COMPLETED" and done["NodeList"] == "node1"
    # A transition to degraded swaps only our feature.
    slurm.apply_features(backend, "node1", ["gcm_degraded"], slurm.summary_extra("degraded", ["gpu.ecc"]), state_dir=sd)
    assert c.node("node1")["ActiveFeatures"].split(",") == ["a100", "ib", "gcm_degraded"]
    # scontrol reconfigure drops scontrol-set features (facts #8); Extra survives.
    c.scontrol("reconfigure")
    deadline = time.monotonic() + 15
    while "gcm_degraded" in c.node("node1").get("ActiveFeatures", "") and time.monotonic() < deadline:
        time.sleep(0.2)
    node = c.node("node1")
    assert "gcm_degraded" not in node.get("ActiveFeatures", "")
    assert node["Extra"].startswith("gcm degraded")
    # Without verify the local record says "unchanged" (zero RPCs); verify re-applies.
    assert slurm.apply_features(backend, "node1", ["gcm_degraded"], None, state_dir=sd).action == "unchanged"
    assert slurm.apply_features(backend, "node1", ["gcm_degraded"], None, state_dir=sd, verify=True).action == "reapplied"
    assert "gcm_degraded" in c.node("node1")["ActiveFeatures"].split(",")
    c.wait_nodes_idle()


def test_job_comment_and_show_job(clean_cluster, backend):
    c = clean_cluster
    job = c.sbatch("sleep 30\n", job_name="commented", nodelist="node1")
    c.wait_job(job, {"RUNNING"}, timeout=30)
    backend.set_job_comment(job, "gcm-run: step 3/10")
    shown = backend.show_job(job)
    assert shown["JobName"] == "commented" and shown["Comment"] == "gcm-run: step 3/10"
    out = c._cmd("squeue", "-h", "-j", job, "-o", "%k").stdout.strip()
    assert out == "gcm-run: step 3/10"
    c.scontrol("update", f"jobid={job}", "timelimit=0:01", check=False)
    c._cmd("scancel", job)


def test_unreachable_slurmctld_is_a_bounded_error(clean_cluster, tmp_path):
    c = clean_cluster
    # A copy of the cluster's slurm.conf pointing at a port nobody listens on.
    with open(c.conf) as f:
        text = f.read().replace(f"SlurmctldPort={c.ctld_port}", "SlurmctldPort=9")
    dead = tmp_path / "slurm.conf"
    dead.write_text(text)
    be = ScontrolBackend(timeout_s=1.0, env=dict(c.env, SLURM_CONF=str(dead)))
    t0 = time.monotonic()
    with pytest.raises(SlurmError):
        be.node_info("node2")
    out = slurm.apply_drain(be, "node2", "gcm: x", state_dir=str(tmp_path))
    assert out.action == "error"
    assert time.monotonic() - t0 < 30  # generous: proves "bounded", not speed
    # Nothing reached the real cluster.
    assert "node2" not in c.sinfo_reasons()
    assert os.path.exists(c.conf)


def test_reset_nodes_clears_features_and_extra(clean_cluster):
    c = clean_cluster
    c.scontrol("update", "nodename=node2", "AvailableFeatures=x,gcm_ok", "ActiveFeatures=gcm_ok", "Extra=gcm ok")
    c.reset_nodes()
    node = c.node("node2")
    assert node["AvailableFeatures"] == "(null)" and not node.get("Extra")


def test_json_extra_round_trips_through_real_scontrol(clean_cluster, backend, tmp_path):
    """The JSON form of Extra (what SchedulerParameters=extra_constraints
    wants) goes through scontrol update and comes back from scontrol show
    node intact, with an admin's key kept; node status reads our summary."""
    import json

    c = clean_cluster
    c.scontrol("update", "nodename=node1", 'Extra={"rack":"12"}')
    out = slurm.apply_features(backend, "node1", ["gcm_ok"], slurm.summary_extra("degraded", ["gpu.ecc", "ib.port.state"]),
                               state_dir=str(tmp_path))
    assert out.action == "applied"
    extra = c.node("node1")["Extra"]
    doc = json.loads(extra)
    assert doc["rack"] == "12" and doc["gcm_health"] == "degraded"
    assert doc["gcm_health_failing"] == "gpu.ecc,ib.port.state"
    info = backend.node_info("node1")
    assert slurm.gcm_summary(info.extra).startswith("gcm degraded ")
    c.scontrol("update", "nodename=node1", "Extra=")


@pytest.mark.parametrize("nhc_reason, resumed", [
    (None, True),                        # NHC re-issued the drain with our note unchanged
    ("gcm: NHC: check_fs_mount: /scratch not mounted", False),  # a changed note: left for an admin
])
def test_nhc_redrain_keeps_or_changes_our_reason(clean_cluster, backend, tmp_path, nhc_reason, resumed):
    """docs/slurm.md, beside NHC: NHC's node-mark-offline, meeting a node
    drained with another tool's note, drains it again with that note (or,
    if its view of the note differs, a different text). The same text keeps
    the drain ours (health may resume it); a different text does not."""
    c = clean_cluster
    reason = slurm.make_drain_reason("gpu.temperature", "GPU 3", "93 C")
    sd = str(tmp_path)
    assert slurm.apply_drain(backend, "node2", reason, state_dir=sd, check="gpu.temperature").action == "drained"
    c.scontrol("update", "nodename=node2", "state=drain", f"reason={nhc_reason or reason}")
    out = slurm.resume_if_passed(backend, "node2", ["gpu.temperature"], state_dir=sd)
    assert out is not None and (out.action == "resumed") == resumed, out
    state = c.node("node2")["State"]
    assert ("DRAIN" not in state) == resumed
