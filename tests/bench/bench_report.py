"""Job report costs on the epilog path.

The report runs after the verdict, inside the epilog's budget: contributing
evidence, reading log tails (as the job user, through a fork, when root) and
writing three formats must stay a small slice of it, whatever the log size.

Run:  GCM_BENCH=1 python -m pytest tests/bench/bench_report.py -s
  or  python tests/bench/bench_report.py
Numbers go in docs/benchmarks.md, section "Job reports and notifications".
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import pytest

UID = GID = 4242


def _best_ms(fn, repeat: int = 20) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def measure() -> dict:
    from gcm_checks import report, safeio, testing
    from gcm_checks.report.model import JobInfo
    from gcm_checks.result import failed, passed

    base = tempfile.mkdtemp(prefix="gcm-bench-report-", dir="/tmp")
    os.chmod(base, 0o755)
    try:
        as_root = os.geteuid() == 0
        uid = UID if as_root else os.geteuid()
        log = os.path.join(base, "big.out")
        with open(log, "wb") as f:
            f.truncate(3 * 2**30)  # sparse 3 GiB: the tail read must not care
            f.seek(-100, 2)
            f.write(b"x" * 99 + b"\n")
        if as_root:
            os.chown(log, UID, GID)
        s = testing.settings({
            "report": {"spool_dir": f"{base}/spool", "report_dir": f"{base}/reports", "outbox_dir": f"{base}/outbox"},
            "notify": {"channels": [{"name": "h", "type": "webhook", "url": "http://127.0.0.1:9/"}], "handoff": "queue"}})
        evidence = {"results": [passed("gpu.count", "8 GPUs")] * 20 + [failed("gpu.ecc", "2 uncorrectable", "GPU 3")],
                    "xids": [{"code": 79, "gpu": "GPU 3", "name": "fallen off the bus"}]}
        n = [0]

        def one(nodes):
            n[0] += 1
            job = JobInfo(str(n[0]), user="alice", uid=uid, gid=uid, nodes=nodes, exit_status="1:0", stdout=log)
            for node in nodes:
                out = report.assemble_and_notify(job, s, node=node, budget_s=5, evidence=evidence)
                assert "error" not in out, out

        return {
            "read_tail 64 KiB of 3 GiB (as user: fork+setuid)" if as_root else "read_tail 64 KiB of 3 GiB":
                _best_ms(lambda: safeio.read_tail(log, uid=uid, gid=uid, max_bytes=65536)),
            "assemble_and_notify, 1 node, handoff=queue": _best_ms(lambda: one(("n1",))),
            "assemble_and_notify, 8 nodes (all 8 calls)": _best_ms(lambda: one(tuple(f"n{i}" for i in range(8))), repeat=10),
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.bench
@pytest.mark.skipif(os.environ.get("GCM_BENCH") != "1", reason="set GCM_BENCH=1 to run benchmarks")
def test_bench_report():
    for k, v in measure().items():
        print(f"{k}: {v:.2f} ms")


if __name__ == "__main__":
    for k, v in measure().items():
        print(f"| {k} | {v:.2f} |")
