"""Fleet report benchmark and straggler-detection quality.

Run as a script (prints the numbers recorded in docs/benchmarks.md):

    python tests/bench/bench_fleet.py

or under pytest with GCM_BENCH=1 (asserts the issue's bounds: 10,000 node
results in under 2 s; peak memory of ``fleet report`` at most 100 MB at
100,000 nodes, measured in a child process; precision and recall on a
simulated fleet of 4,096 GPUs with 1% of them 5-15% slow).

    python tests/bench/bench_fleet.py memory 100000   # one memory figure
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
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


def write_fleet(directory: str, n_nodes: int, chunk: int = 2_000) -> int:
    """Result files for ``n_nodes`` nodes, written chunk by chunk so the
    generator never holds the fleet either. Returns bytes written."""
    from gcm_checks.qualify.results import file_name

    os.makedirs(directory, exist_ok=True)
    total = 0
    width = max(4, len(str(n_nodes)))
    for start in range(0, n_nodes, chunk):
        n = min(chunk, n_nodes - start)
        docs, _ = make_fleet(n_gpus=n * 8, failing_nodes=n // 100, seed=start + 1, started=1_790_000_000.0 + start)
        for i, doc in enumerate(docs):
            doc["node"] = f"gpu{start + i:0{width}d}"
            data = json.dumps(doc, separators=(",", ":"))
            total += len(data)
            with open(os.path.join(directory, file_name(doc["node"], doc["finished"], doc["level"])), "w") as f:
                f.write(data)
    return total


# VmHWM, not ru_maxrss: ru_maxrss survives exec and would count the parent's
# pages at fork time.
_HWM = "float([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0]) / 1024"
_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from gcm_checks.fleet import report_dir
rep = report_dir(sys.argv[1])
out = json.dumps(rep.to_dict())
print(json.dumps({"nodes": rep.nodes, "gpus": rep.gpus, "stragglers": len(rep.stragglers),
                  "failing": len(rep.failing), "seconds": time.perf_counter() - t0, "json_bytes": len(out),
                  "max_rss_mb": %s}))
""" % _HWM


def memory_report(n_nodes: int) -> dict:
    """Peak RSS of a fresh process running the whole fleet report (load,
    statistics, the --json document) over ``n_nodes`` result files."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory(prefix="gcm-fleet-mem-") as d:
        size = write_fleet(d, n_nodes)
        p = subprocess.run([sys.executable, "-c", _CHILD, d], capture_output=True, text=True, timeout=3600,
                           env=dict(os.environ, PYTHONPATH=repo))
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        out = json.loads(p.stdout)
    out["files_mb"] = round(size / 1e6, 1)
    out["interpreter_baseline_mb"] = _baseline_rss()
    return out


def _baseline_rss() -> float:
    p = subprocess.run([sys.executable, "-c", "import gcm_checks.fleet, gcm_checks.qualify.results; print(%s)" % _HWM],
                       capture_output=True, text=True, timeout=60)
    return round(float(p.stdout), 1)


def test_fleet_report_memory_100000_nodes():
    r = memory_report(100_000)
    print(r)
    assert r["nodes"] == 100_000 and r["max_rss_mb"] <= 100


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
            samples, _ = model.build(res, mode="prolog", node="gpu001", when=time.time(), job_id="1", xids=xids,
                                     job_gpu_list=["0", "1", "2", "3", "4", "5", "6", "7"], duration_s=0.1)
            prometheus.write(d, "prolog", samples, job_id="1")
            times.append(time.perf_counter() - t0)
    return {"best_ms": 1000 * min(times), "median_ms": 1000 * statistics.median(times)}


if __name__ == "__main__":
    if sys.argv[1:2] == ["memory"]:
        for n in sys.argv[2:] or ("10000", "100000"):
            print("memory:", memory_report(int(n)))
        sys.exit(0)
    print("prometheus:", time_prometheus())
    print("report:", time_report())
    for z, md, noise in ((3.5, 0.03, (0.012, 0.008)), (3.0, 0.03, (0.012, 0.008)), (3.5, 0.02, (0.012, 0.008)),
                         (3.5, 0.03, (0.02, 0.015))):
        print("detection:", detection(z=z, min_drop=md, noise=noise))
