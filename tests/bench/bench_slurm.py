"""Slurm integration costs, on the real 22.05 test cluster.

What matters: booting the test cluster (every real-daemon test pays it once),
what one scontrol round trip costs the failing prolog, and that a healthy
health run stays free of Slurm calls.

Run:  GCM_BENCH=1 python -m pytest tests/bench/bench_slurm.py -s
  or  python tests/bench/bench_slurm.py
Numbers go in docs/benchmarks.md, section "Slurm integration".
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))  # tests/, for slurm_cluster


def _median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def measure() -> dict:
    from slurm_cluster import SLURM_MISSING, SlurmCluster, remove_tree

    from gcm_checks import slurm
    from gcm_checks.proc import run

    if SLURM_MISSING:
        raise RuntimeError(SLURM_MISSING)
    out = {}
    root = tempfile.mkdtemp(prefix="gcm-slurm-bench-", dir="/tmp")
    c = SlurmCluster(root)
    t0 = time.perf_counter()
    c.start()
    out["boot (first, incl. mariadb-install-db)"] = (time.perf_counter() - t0) * 1000
    try:
        be = slurm.ScontrolBackend(timeout_s=10, env=c.env)
        out["scontrol show node (node_info)"] = _median_ms(lambda: be.node_info("node2"), 20)

        def drain_resume() -> None:
            slurm.apply_drain(be, "node2", "gcm: bench", state_dir=os.path.join(root, "st"))
            slurm.apply_resume(be, "node2", state_dir=os.path.join(root, "st"))

        out["apply_drain + apply_resume (4 scontrol calls)"] = _median_ms(drain_resume, 10)
        c.wait_nodes_idle()
        env = dict(c.env, SLURMD_NODENAME="node1", PYTHONPATH=REPO)
        health = [sys.executable, "-m", "gcm_checks", "health"]
        run(health, timeout=60, env=env)  # first run publishes gcm_ok
        c.sdiag_reset()
        out["gcm-checks health, healthy, nothing to change (process)"] = _median_ms(lambda: run(health, timeout=60, env=env), 5)
        counts = c.sdiag_rpc_counts()
        # sdiag's own REQUEST_STATS_INFO is the only other message expected.
        out["  REQUEST_NODE_INFO + REQUEST_UPDATE_NODE in those 5 runs"] = float(counts.get("REQUEST_NODE_INFO", 0) + counts.get("REQUEST_UPDATE_NODE", 0))
    finally:
        t0 = time.perf_counter()
        c.stop()
        out["stop"] = (time.perf_counter() - t0) * 1000
        remove_tree(root)
    return out


@pytest.mark.bench
def test_bench_slurm():
    if os.environ.get("GCM_BENCH") != "1":
        pytest.skip("set GCM_BENCH=1 to run benchmarks")
    from slurm_cluster import SLURM_MISSING

    if SLURM_MISSING:
        pytest.skip(SLURM_MISSING)
    for k, v in measure().items():
        print(f"{k:60} {v:10.1f}")


if __name__ == "__main__":
    for k, v in measure().items():
        print(f"{k:60} {v:10.1f}")
