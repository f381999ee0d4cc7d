"""Whole-process wall time of `gcm-checks prolog` - what every job start pays.

Measures, on this machine:
- bare `python -c pass` (the floor),
- `gcm-checks prolog` on the healthy 8-GPU + 8-port simulated node,
- `gcm-checks prolog` on the gpu-hang scenario (must end within budget + 0.5 s),
and reports medians. Targets (issue 2, 2-core machine): healthy median
<= 150 ms; hang <= budget + 0.5 s.

Run:  python tests/bench/bench_prolog.py [--runs 15]
Numbers go in docs/benchmarks.md, section "Prolog".
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def wall(argv, env) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--budget", type=float, default=3.0)
    args = ap.parse_args()
    exe = shutil.which("gcm-checks", path=os.path.dirname(sys.executable)) or shutil.which("gcm-checks")
    if not exe:
        print("gcm-checks not installed next to this python", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="gcm-bench-"))
    cfg = tmp / "c.yaml"
    cfg.write_text(f"log_path: {tmp}/log.jsonl\nstate_dir: {tmp}/state\nbudget_s: {args.budget}\n"
                   "gpu: {count: 8}\n")
    env = dict(os.environ, GCM_CHECKS_CONFIG=str(cfg))
    env.pop("SLURM_JOB_ID", None)
    bare = [wall([sys.executable, "-c", "pass"], env) for _ in range(args.runs)]
    healthy = [wall([exe, "prolog", "--sim", "healthy"], env) for _ in range(args.runs)]
    hang = [wall([exe, "prolog", "--sim", "gpu-hang", "--dry-run"], env) for _ in range(max(3, args.runs // 3))]
    # Per-GPU deadline (60 s) beyond the budget: only the global budget stops it.
    cfg2 = tmp / "c2.yaml"
    cfg2.write_text(cfg.read_text().replace("gpu: {count: 8}", "gpu: {count: 8, nvml_timeout_s: 60}"))
    env2 = dict(env, GCM_CHECKS_CONFIG=str(cfg2))
    hang_budget = [wall([exe, "prolog", "--sim", "gpu-hang", "--dry-run"], env2) for _ in range(max(3, args.runs // 3))]
    shutil.rmtree(tmp, ignore_errors=True)
    ms = lambda xs: statistics.median(xs) * 1000  # noqa: E731
    print(f"python -c pass          median {ms(bare):7.1f} ms  (n={len(bare)})")
    print(f"prolog healthy          median {ms(healthy):7.1f} ms  min {min(healthy)*1000:.1f}  max {max(healthy)*1000:.1f}  (n={len(healthy)})  target <= 150")
    print(f"prolog gpu-hang         median {ms(hang):7.1f} ms  max {max(hang)*1000:.1f}  (n={len(hang)})  target <= {args.budget*1000 + 500:.0f} (budget {args.budget:g} s + 0.5 s)")
    print(f"prolog gpu-hang, NVML deadline 60 s > budget  median {ms(hang_budget):7.1f} ms  max {max(hang_budget)*1000:.1f}  target <= {args.budget*1000 + 500:.0f}")
    print(f"ratio healthy/bare      {statistics.median(healthy) / statistics.median(bare):.1f}x")
    pci_read()
    return 0


def pci_read(functions: int = 300, runs: int = 51) -> None:
    """The zero-config PCI read (gcm_checks.gather.pci) on a real-layout tree
    the size of a big GPU node (8 GPUs, 8 HCAs, the rest bridges and
    chipset functions), in process: its share of every prolog."""
    from gcm_checks.gather import pci

    tmp = Path(tempfile.mkdtemp(prefix="gcm-bench-pci-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))
    devs = [{"address": f"0000:{i:02x}:00.0", "vendor": 0x10DE, "device": 0x2330, "class": 0x030200, "driver": "nvidia"} for i in range(8)]
    devs += [{"address": f"0000:{0x40 + i:02x}:00.0", "vendor": 0x15B3, "device": 0x1021, "class": 0x020700,
              "driver": "mlx5_core", "ib_devices": [f"mlx5_{i}"]} for i in range(8)]
    devs += [{"address": f"0001:{i // 8:02x}:{i % 8:02x}.0", "vendor": 0x8086, "device": 0x1234, "class": 0x060400}
             for i in range(functions - len(devs))]
    pci.write_pci_tree(tmp, devs)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        facts = pci.read_pci(tmp)
        times.append(time.perf_counter() - t0)
    assert len(facts.gpus) == 8 and len(facts.hcas) == 8
    t0 = time.perf_counter()
    pci.read_pci("/")
    here = time.perf_counter() - t0
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"PCI read, {functions} functions  median {statistics.median(times) * 1000:7.2f} ms  (n={runs}); this machine's /sys: {here * 1000:.2f} ms")


if __name__ == "__main__":
    sys.exit(main())
