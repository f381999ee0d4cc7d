"""The mass-drain brake (gcm_checks.brake): unit table, then a real Slurm
22.05 cluster of four slurmd whose nodes all fail the same check.

Assertions read Slurm's own view (``scontrol show node``, ``sinfo -R``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import pytest

from gcm_checks import brake
from gcm_checks.slurm.parse import CensusEntry
from gcm_checks.slurm.reasons import make_drain_reason

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOST = make_drain_reason("gpu.responsive", "GPU 3 (00000000:3B:00.0)", "GPU has fallen off the bus")
NOW = 1_800_000_000.0


def _census(n_drained, n_total, reason=LOST, since=NOW - 60, part=("gpu",)):
    out = [CensusEntry("me", part, False, None, None)]
    for i in range(n_total - 1):
        out.append(CensusEntry(f"n{i}", part, i < n_drained, reason if i < n_drained else None, since if i < n_drained else None))
    return out


@pytest.mark.parametrize("drained, total, share, count, braked", [
    (0, 10, 0.2, None, False),
    (1, 10, 0.2, None, False),  # 2 of 10 = 0.2: not above the share
    (2, 10, 0.2, None, True),  # a third would be 0.3
    (2, 10, None, 3, False),
    (3, 10, None, 3, True),
    (5, 10, None, None, False),  # brake off
])
def test_brake_table(drained, total, share, count, braked):
    why = brake.judge(_census(drained, total), "me", "gpu.responsive", share=share, count=count, window_s=900, now=NOW)
    assert (why is not None) is braked, why


def test_only_recent_gcm_drains_for_the_same_check_in_my_partition_count():
    others = [
        CensusEntry("a", ("gpu",), True, LOST, NOW - 5000),  # too old
        CensusEntry("b", ("gpu",), True, "gcm: mlx5_0/1 down (ib.port.state): DOWN", NOW - 10),  # other check
        CensusEntry("c", ("gpu",), True, "maintenance", NOW - 10),  # an admin's drain
        CensusEntry("d", ("cpu",), True, LOST, NOW - 10),  # another partition
        CensusEntry("e", ("gpu",), True, "gcm: gpu.responsive: GPU 1: lost", NOW - 10),  # old format: ours
    ]
    census = [CensusEntry("me", ("gpu",), False, None, None)] + others
    assert brake.judge(census, "me", "gpu.responsive", share=None, count=2, window_s=900, now=NOW) is None
    assert "1 nodes of partition gpu" in brake.judge(census, "me", "gpu.responsive", share=None, count=1, window_s=900, now=NOW)


# ---------------------------------------------------------------- real cluster

NODES4 = ("node1", "node2", "node3", "node4")


@pytest.fixture(scope="module")
def cluster4():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from slurm_cluster import SLURM_MISSING, SlurmCluster, remove_tree

    if SLURM_MISSING:
        pytest.skip(SLURM_MISSING)
    root = tempfile.mkdtemp(prefix="gcm-brake-", dir="/tmp")
    c = SlurmCluster(root, nodes=NODES4)
    c.start()
    try:
        yield c
    finally:
        c.stop()
        remove_tree(root)


def _gcm(c, mode, node):
    from gcm_checks.proc import run

    env = dict(c.env, SLURMD_NODENAME=node, PYTHONPATH=REPO)
    env.pop("GCM_CHECKS_CONFIG", None)
    return run([sys.executable, "-m", "gcm_checks", mode, "--json"], timeout=60, env=env, cwd=REPO)


@pytest.mark.slurm
def test_nodes_failing_together_stop_draining_at_the_share(cluster4):
    c = cluster4
    c.reset_nodes()
    c.write_gcm_config({"simulate": "gpu-lost", "slurm": {"brake_share": 0.5, "brake_window_s": 900}})
    results = {n: _gcm(c, "health", n) for n in NODES4}
    reasons = c.sinfo_reasons()
    drained = sorted(n for n in NODES4 if reasons.get(n, "").startswith("gcm: XID 79 GPU 3") or reasons.get(n, "").startswith("gcm: GPU 3"))
    # At most half the partition: the first two drain, the next two brake.
    assert drained == ["node1", "node2"], reasons
    for n in ("node1", "node2"):
        assert results[n].returncode == 100, results[n].stderr
    for n in ("node3", "node4"):
        r = results[n]
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["verdict"] == "unknown" and doc["actions"]["drain"]["action"] == "braked"
        assert "suspected cluster-wide cause" in doc["decision"]["brake"]
        assert "DRAIN" not in c.node(n)["State"]
        assert "NOT DRAINED - suspected cluster-wide cause" in r.stderr
    log = [json.loads(x) for x in open(os.path.join(c.logdir, "gcm-checks.log")) if '"mass_drain_brake"' in x]
    assert {e["node"] for e in log} == {"node3", "node4"} and all(e["level"] == "error" for e in log)
    # Still failing on the next run: braked again, but one alert per node and check per window.
    again = _gcm(c, "health", "node3")
    assert again.returncode == 0 and "NOT DRAINED" not in again.stderr
    log = [json.loads(x) for x in open(os.path.join(c.logdir, "gcm-checks.log")) if '"mass_drain_brake' in x]
    assert [e["event"] for e in log if e["node"] == "node3"] == ["mass_drain_brake", "mass_drain_brake_again"]
    assert "DRAIN" not in c.node("node3")["State"]


@pytest.mark.slurm
def test_braked_prolog_runs_the_job_instead_of_requeueing_it(cluster4):
    from slurm_cluster import repo_script_glob

    c = cluster4
    c.reset_nodes()
    # Two nodes already out for the same check, by gcm, a minute ago.
    for n in ("node1", "node2"):
        c.scontrol("update", f"nodename={n}", "state=drain", f"reason={LOST}")
    from http_receiver import WebhookReceiver

    hook = WebhookReceiver()
    # The admin alert from a real prolog under slurmd, default handoff
    # (detach): the flush must outlive the prolog's process group.
    c.write_gcm_config({"simulate": "gpu-lost", "slurm": {"brake_count": 2},
                        "notify": {"channels": [{"name": "ops", "type": "webhook", "url": hook.url + "/ops"}],
                                   "admin": {"channels": ["ops"]}}})
    c.use_scripts(repo_script_glob("prolog"), None)
    try:
        job = c.sbatch("#!/bin/bash\ntrue\n", nodelist="node3", job_name="braked")
        deadline = time.monotonic() + 60
        info = c.job(job)
        # Until it completes, or is requeued held by a failed prolog.
        while time.monotonic() < deadline and info.get("JobState") not in ("COMPLETED", "FAILED", "CANCELLED") \
                and not (info.get("JobState") == "PENDING" and info.get("Restarts", "0") != "0"):
            time.sleep(0.3)
            info = c.job(job)
        assert info["JobState"] == "COMPLETED", info  # not requeued held: the prolog exited 0
        assert "DRAIN" not in c.node("node3")["State"]
        assert "node3" not in c.sinfo_reasons()
        deadline = time.monotonic() + 20
        while not hook.requests and time.monotonic() < deadline:
            time.sleep(0.2)
        [req] = hook.requests
        assert req["body"]["event"] == "mass_drain_brake" and req["body"]["alert"]["mode"] == "prolog"
        assert req["body"]["alert"]["observed_by"] == "node3" and req["body"]["alert"]["drained"] == ["node1", "node2"]
    finally:
        hook.close()
        c.use_scripts(None, None)
        c.reset_nodes()


def _node_configs(c, root, url, **notify_kw):
    """One config per node with its own state_dir and outbox: the nodes of a
    real cluster share no spool, so neither may these."""
    import yaml

    paths = {}
    for n in NODES4:
        data = dict(c.base_gcm_config(), simulate="gpu-lost", slurm={"brake_share": 0.5, "brake_window_s": 900},
                    state_dir=os.path.join(root, n, "state"),
                    report={"outbox_dir": os.path.join(root, n, "outbox"), "report_dir": os.path.join(root, n, "reports"),
                            "spool_dir": os.path.join(root, n, "spool")},
                    notify=dict({"channels": [{"name": "ops", "type": "webhook", "url": url, "timeout_s": 5}],
                                 "admin": {"channels": ["ops"]}}, **notify_kw))
        paths[n] = os.path.join(root, f"{n}.yaml")
        with open(paths[n], "w") as f:
            yaml.safe_dump(data, f)
    return paths


def _gcm_with(c, mode, node, cfg):
    from gcm_checks.proc import run

    env = dict(c.env, SLURMD_NODENAME=node, PYTHONPATH=REPO)
    env.pop("GCM_CHECKS_CONFIG", None)
    return run([sys.executable, "-m", "gcm_checks", mode, "--json", "--config", cfg], timeout=60, env=env, cwd=REPO)


@pytest.mark.slurm
def test_nodes_failing_together_send_one_admin_alert(cluster4, tmp_path):
    from http_receiver import WebhookReceiver

    c = cluster4
    c.reset_nodes()
    hook = WebhookReceiver()
    try:
        # The production handoff (detach): the alert leaves from a detached process.
        cfgs = _node_configs(c, str(tmp_path), hook.url + "/ops")
        log_path = os.path.join(c.logdir, "gcm-checks.log")
        start = os.path.getsize(log_path) if os.path.exists(log_path) else 0  # the log is the module's
        results = {n: _gcm_with(c, "health", n, cfgs[n]) for n in NODES4}
        assert [results[n].returncode for n in NODES4] == [100, 100, 0, 0], [r.stderr[-300:] for r in results.values()]
        deadline = time.monotonic() + 20
        while not hook.requests and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)  # a second alert would come within this
        assert len(hook.requests) == 1, hook.requests
        [req] = hook.requests
        body = req["body"]
        assert body["event"] == "mass_drain_brake" and body["alert"]["observed_by"] == "node3"
        assert body["alert"]["drained"] == ["node1", "node2"] and body["alert"]["check"]
        assert req["headers"]["idempotency-key"] == body["dedup_key"]
        # node3 holds the marker in Slurm; node4 read it and stayed quiet.
        assert "gcm brake" in (c.node("node3").get("Extra") or "")
        with open(log_path) as f:
            f.seek(start)
            quiet = [json.loads(x) for x in f if '"mass_drain_brake_alert"' in x]
        assert [e["node"] for e in quiet] == ["node3"]
        # node3's outbox has it as sent; node4's outbox never had it.
        assert len(os.listdir(tmp_path / "node3" / "outbox" / "sent")) == 1
        assert not (tmp_path / "node4" / "outbox" / "sent").exists()
        # Still failing on the next runs: no second alert from anyone.
        for n in ("node3", "node4"):
            assert _gcm_with(c, "health", n, cfgs[n]).returncode == 0
        time.sleep(1.0)
        assert len(hook.requests) == 1
        for n in ("node3", "node4"):
            assert "DRAIN" not in c.node(n)["State"]
    finally:
        hook.close()
        c.reset_nodes()


@pytest.mark.slurm
def test_simultaneous_braked_nodes_send_one_episode_key(cluster4, tmp_path):
    import threading

    from http_receiver import WebhookReceiver

    c = cluster4
    c.reset_nodes()
    hook = WebhookReceiver()
    try:
        cfgs = _node_configs(c, str(tmp_path), hook.url + "/ops", handoff="inline")
        for n in ("node1", "node2"):
            assert _gcm_with(c, "health", n, cfgs[n]).returncode == 100
        out = {}
        threads = [threading.Thread(target=lambda n=n: out.__setitem__(n, _gcm_with(c, "health", n, cfgs[n])))
                   for n in ("node3", "node4")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        assert [out[n].returncode for n in ("node3", "node4")] == [0, 0]
        # Both may miss the other's marker (the documented limit): at most two
        # requests, and always one episode key for a receiver to dedupe on.
        assert 1 <= len(hook.requests) <= 2, hook.requests
        assert len({r["headers"]["idempotency-key"] for r in hook.requests}) == 1
    finally:
        hook.close()
        c.reset_nodes()
