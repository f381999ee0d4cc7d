"""A simulated fleet of qualification results, for tests and benchmarks.

Healthy GPUs vary a little from part to part (silicon, HBM stacks, cooling);
we model that as normal noise around the model's figure: about 1.2% for GEMM
throughput and 0.8% for memory bandwidth (the H100 spread we assume; change
``noise`` to match a real fleet). A chosen fraction of GPUs is slow by a
uniform 5-15% - in GEMM always, and in memory bandwidth for half of them (a
clock or power problem slows compute first; an HBM problem slows both).

Documents are built with ``gcm_checks.qualify.results.build_doc``, so the
fleet report reads exactly what ``qualify`` writes.
"""

from __future__ import annotations

import json
import os
import random

from typing import Any, Dict, List, Optional, Set, Tuple

from gcm_checks.qualify.probe import GpuPerf, PerfFacts
from gcm_checks.result import failed, passed

H100 = {"name": "NVIDIA H100 80GB HBM3", "gemm_tflops": 740.0, "mem_bw_gbps": 3020.0}


def make_fleet(
    n_gpus: int = 4096,
    gpus_per_node: int = 8,
    slow_fraction: float = 0.01,
    slow_range: Tuple[float, float] = (0.05, 0.15),
    noise: Tuple[float, float] = (0.012, 0.008),
    seed: int = 8,
    failing_nodes: int = 0,
    gpu: Optional[Dict[str, Any]] = None,
    started: float = 1_790_000_000.0,
) -> Tuple[List[Dict[str, Any]], Set[Tuple[str, int]]]:
    """Result documents for ``n_gpus // gpus_per_node`` nodes, and the set of
    (node, gpu index) that were made slow (the truth to score against)."""
    rng = random.Random(seed)
    spec = dict(H100, **(gpu or {}))
    n_nodes = n_gpus // gpus_per_node
    total = n_nodes * gpus_per_node
    slow = set(rng.sample(range(total), round(total * slow_fraction)))
    truth: Set[Tuple[str, int]] = set()
    docs: List[Dict[str, Any]] = []
    width = max(4, len(str(n_nodes)))
    for n in range(n_nodes):
        node = f"gpu{n:0{width}d}"
        gpus = []
        for i in range(gpus_per_node):
            gemm = spec["gemm_tflops"] * rng.gauss(1.0, noise[0])
            bw = spec["mem_bw_gbps"] * rng.gauss(1.0, noise[1])
            if n * gpus_per_node + i in slow:
                factor = 1.0 - rng.uniform(*slow_range)
                gemm *= factor
                if rng.random() < 0.5:
                    bw *= factor
                truth.add((node, i))
            gpus.append(GpuPerf(i, f"GPU {i}", spec["name"], round(gemm, 2), round(bw, 2)))
        results = [passed("gpu.nvml", "NVML ok"), passed("perf.gemm", "ok"), passed("perf.mem_bw", "ok")]
        verdict = "pass"
        if n < failing_nodes:
            results.append(failed("gpu.ecc.uncorrectable", "12 uncorrectable ECC errors", "GPU 2"))
            verdict = "fail"
        from gcm_checks.qualify.results import build_doc

        t = started + n
        docs.append(build_doc(node=node, level="standard", started=t, finished=t + 300, verdict=verdict,
                              qualified=verdict == "pass", results=results,
                              perf=PerfFacts("sim", tuple(gpus), dtype="bf16"), probe_s=10.0))
    return docs, truth


def write_plain(directory: str, docs: List[Dict[str, Any]]) -> None:
    """Write documents fast (no fsync) - for building benchmark fixtures only;
    ``qualify`` itself writes atomically with ``results.write``."""
    from gcm_checks.qualify.results import file_name

    os.makedirs(directory, exist_ok=True)
    for doc in docs:
        with open(os.path.join(directory, file_name(doc["node"], doc["finished"], doc["level"])), "w") as f:
            json.dump(doc, f, separators=(",", ":"))


def score(found: Set[Tuple[str, int]], truth: Set[Tuple[str, int]]) -> Dict[str, float]:
    tp = len(found & truth)
    precision = tp / len(found) if found else 1.0
    recall = tp / len(truth) if truth else 1.0
    return {"true_positives": tp, "false_positives": len(found - truth), "false_negatives": len(truth - found),
            "precision": precision, "recall": recall}


