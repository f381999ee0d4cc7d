"""InfiniBand and DCGM costs on the prolog/epilog path.

IB runs in every prolog: reading an 8-rail node's sysfs (4 attributes and ~25
counters per port) and judging it must stay a small slice of the 10 s budget.
DCGM parsing runs once per epilog on a large document (8 GPUs x every test).

Run:  GCM_BENCH=1 python -m pytest tests/bench/bench_ib_dcgm.py -s
  or  python tests/bench/bench_ib_dcgm.py
Numbers go in docs/benchmarks.md, section "InfiniBand and DCGM".
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from gcm_checks import testing


def _best_ms(fn, repeat: int = 50) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def measure() -> dict:
    from gcm_checks.checks import dcgm as dcgm_checks
    from gcm_checks.checks import ib as ib_checks
    from gcm_checks.gather import ib
    from gcm_checks.sim.dcgm import CannedBackend
    from gcm_checks.testing import dcgm_diag_json

    out = {}
    with tempfile.TemporaryDirectory() as d:
        root, state = Path(d) / "root", Path(d) / "state"
        ib.write_sysfs_tree(root, [{"device": f"mlx5_{i}", "port": 1} for i in range(8)])
        settings = testing.settings({"infiniband.expected_hcas": [f"mlx5_{i}" for i in range(8)], "infiniband.min_rate_gbps": 400})
        ctx = SimpleNamespace(settings=settings, state_dir=state, sim=None, sysfs_root=lambda: str(root))
        out["ib_read_sysfs_8_ports_ms"] = _best_ms(lambda: ib.read_sysfs(root))
        out["ib_gather_with_baseline_8_ports_ms"] = _best_ms(lambda: ib_checks.gather_ib(ctx))
        facts = ib_checks.gather_ib(ctx)
        checks = [ib_checks.check_hca_present, ib_checks.check_port_state, ib_checks.check_port_phys_state,
                  ib_checks.check_port_rate, ib_checks.check_port_link_layer, ib_checks.check_port_errors]
        out["ib_judge_6_checks_ms"] = _best_ms(lambda: [c(facts, settings) for c in checks])
    doc = dcgm_diag_json(8, {1: "GPU 1 bad", 7: "GPU 7 bad"})
    out["dcgm_parse_and_judge_8_gpus_ms"] = _best_ms(
        lambda: dcgm_checks.check_dcgm_diag(CannedBackend(doc).run(1, 60), testing.settings())
    )
    return out


@pytest.mark.bench
@pytest.mark.skipif(os.environ.get("GCM_BENCH") != "1", reason="benchmarks run with GCM_BENCH=1")
def test_ib_dcgm_bench():
    for k, v in measure().items():
        print(f"{k}: {v:.3f}")


if __name__ == "__main__":
    for k, v in measure().items():
        print(f"{k}: {v:.3f}")
