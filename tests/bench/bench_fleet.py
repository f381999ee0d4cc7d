"""Fleet report benchmark and straggler-detection quality.

Run as a script (prints the numbers recorded in docs/benchmarks.md):

    python tests/bench/bench_fleet.py

or under pytest with GCM_BENCH=1 (asserts the issue's bounds: 10,000 node
results in under 2 s; precision and recall on a simulated fleet of 4,096 GPUs
with 1% of them 5-15% slow).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from gcm_checks.fleet import report, report_dir  # noqa: E402
from gcm_checks.qualify.simfleet import make_fleet, score, write_plain  # noqa: E402

pytestmark = [
    pytest.mark.bench,
    pytest.mark.skipif(os.environ.get("GCM_BENCH") != "1", reason="benchmark: set GCM_BENCH=1"),
]


def time_report(n_nodes: int = 10_000, repeats: int = 5) -> dict:
    docs, _ = make_fleet(n_gpus=n_nodes * 8, failing_nodes=n_nodes // 100, seed=1)
    with tempfile.TemporaryDirectory(prefix="gcm-fleet-bench-") as d:
        write_plain(d, docs)
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            rep = report_dir(d)
            times.append(time.perf_counter() - t0)
    assert rep.nodes == n_nodes
    return {"nodes": n_nodes, "gpus": rep.gpus, "bytes": size, "best_s": min(times), "median_s": statistics.median(times),
            "worst_s": max(times), "stragglers": len(rep.stragglers), "failing": len(rep.failing)}


def detection(seeds=range(1, 21), z: float = 3.5, min_drop: float = 0.03, noise=(0.012, 0.008)) -> dict:
    ps, rs, fp, fn, tp = [], [], 0, 0, 0
    for seed in seeds:
        docs, truth = make_fleet(n_gpus=4096, slow_fraction=0.01, slow_range=(0.05, 0.15), seed=seed, noise=noise)
        rep = report([("", d) for d in docs], z_threshold=z, min_drop=min_drop)
        s = score({(x.node, x.gpu) for x in rep.stragglers}, truth)
        ps.append(s["precision"])
        rs.append(s["recall"])
        tp += s["true_positives"]
        fp += s["false_positives"]
        fn += s["false_negatives"]
    return {"runs": len(ps), "z": z, "min_drop": min_drop, "noise": noise,
            "precision_pooled": tp / (tp + fp), "recall_pooled": tp / (tp + fn),
            "precision_min": min(ps), "recall_min": min(rs), "tp": tp, "fp": fp, "fn": fn}


def test_fleet_report_10000_nodes_under_2s():
    r = time_report()
    print(r)
    assert r["median_s"] < 2.0


def test_straggler_detection_quality():
    r = detection()
    print(r)
    assert r["precision_pooled"] >= 0.95 and r["recall_pooled"] >= 0.95


def time_prometheus(repeats: int = 50) -> dict:
    """Build + render + atomically write the textfile for a 30-result run."""
    from gcm_checks.result import failed, passed
    from gcm_checks.telemetry import model, prometheus

    res = [passed(f"gpu.check{i}", "ok") for i in range(28)] + [failed("gpu.ecc", "bad", "GPU 3 (00000000:5D:00.0)")] * 2
    xids = [{"xid": 79, "gpu_index": 3, "severity": "fail"}] * 3
    times = []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(repeats):
            t0 = time.perf_counter()
            samples, _ = model.build(res, mode="prolog", node="gpu001", when=time.time(), job_id="1", xids=xids, drained=False)
            prometheus.write(d, "prolog", samples)
            times.append(time.perf_counter() - t0)
    return {"best_ms": 1000 * min(times), "median_ms": 1000 * statistics.median(times)}


if __name__ == "__main__":
    print("prometheus:", time_prometheus())
    print("report:", time_report())
    for z, md, noise in ((3.5, 0.03, (0.012, 0.008)), (3.0, 0.03, (0.012, 0.008)), (3.5, 0.02, (0.012, 0.008)),
                         (3.5, 0.03, (0.02, 0.015))):
        print("detection:", detection(z=z, min_drop=md, noise=noise))
