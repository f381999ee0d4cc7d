"""Expected performance per GPU model: shipped data, overridden by config.

The shipped table (``gcm_checks/data/qualify/baselines.yaml``) holds typical
*measured* figures, not datasheet peaks. ``qualify.baselines`` in config
overrides or adds entries, keyed by our model key (``H100-SXM``) or by the
exact NVML device name, so an admin can calibrate from a fleet report without
learning our regular expressions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

DATA = Path(__file__).resolve().parent.parent / "data" / "qualify" / "baselines.yaml"
METRICS = ("gemm_tflops", "mem_bw_gbps")


@dataclass(frozen=True)
class Baseline:
    model: str  # our key, e.g. "H100-SXM"; the NVML name when nothing matched
    gemm_tflops: Optional[float] = None
    mem_bw_gbps: Optional[float] = None
    source: str = "shipped"  # shipped | config | none

    def expected(self, metric: str) -> Optional[float]:
        return getattr(self, metric, None)


@lru_cache(maxsize=1)
def shipped() -> Tuple[Tuple[str, "re.Pattern[str]", Dict[str, float]], ...]:
    import yaml

    with open(DATA, encoding="utf-8") as f:
        doc = yaml.safe_load(f) or {}
    out = []
    for m in doc.get("models") or []:
        figs = {k: float(m[k]) for k in METRICS if m.get(k) is not None}
        out.append((str(m["model"]), re.compile(str(m["match"])), figs))
    return tuple(out)


def model_key(gpu_name: str) -> Optional[str]:
    """Our model key for an NVML device name, or None for an unknown model."""
    for key, pattern, _ in shipped():
        if pattern.search(gpu_name or ""):
            return key
    return None


def lookup(gpu_name: str, overrides: Optional[Mapping[str, Any]] = None) -> Baseline:
    """Baseline for one GPU: config by exact name, then by model key, then shipped."""
    overrides = overrides or {}
    key = model_key(gpu_name)
    figs: Dict[str, float] = {}
    source = "none"
    for k, pattern, f in shipped():
        if k == key:
            figs, source = dict(f), "shipped"
            break
    for name in (key, gpu_name):
        over = overrides.get(name) if name else None
        if isinstance(over, Mapping):
            for metric in METRICS:
                if over.get(metric) is not None:
                    figs[metric] = float(over[metric])
                    source = "config"
    return Baseline(key or gpu_name or "unknown", figs.get("gemm_tflops"), figs.get("mem_bw_gbps"), source)


def known_models() -> List[str]:
    return [k for k, _, _ in shipped()]
