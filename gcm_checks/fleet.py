"""Fleet report over qualification result files: distributions, stragglers,
failing nodes.

A straggler is a GPU that passes every check yet runs behind the fleet: the
GPU every synchronous job waits for. We find them per GPU model and metric
with robust statistics - the median and the median absolute deviation (MAD) -
because a fleet that contains slow GPUs has a mean and a standard deviation
pulled toward them, while the median and MAD barely move when 1% of the
values are off (the breakdown point of both is 50%).

A GPU is a straggler for a metric when both hold:

* its robust z-score ``(value - median) / (1.4826 * MAD)`` is at most
  ``-z_threshold`` (default 3.5): it is unusual for this fleet, and
* it is at least ``min_drop`` (default 3%) below the median: it matters to a
  job. The floor keeps a very uniform fleet (tiny MAD) from flagging GPUs
  that are 0.5% slow.

Only the newest result per node is used (a node requalified after a repair
counts as repaired). Pure functions over loaded documents, plus one loader;
10,000 node results are summarised in well under 2 s (tests/bench).
"""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

METRICS = ("gemm_tflops", "mem_bw_gbps")
# 1.4826 * MAD estimates the standard deviation of normally distributed data.
MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Straggler:
    node: str
    gpu: int
    subject: str
    model: str
    metric: str
    value: float
    median: float
    drop: float  # fraction below the median: 0.08 = 8% slower
    z: float  # robust z-score (negative = slower)

    def to_dict(self) -> Dict[str, Any]:
        return {"node": self.node, "gpu": self.gpu, "subject": self.subject, "model": self.model,
                "metric": self.metric, "value": self.value, "fleet_median": round(self.median, 3),
                "below_fleet_pct": round(100 * self.drop, 2), "robust_z": round(self.z, 2)}


@dataclass(frozen=True)
class Distribution:
    model: str
    metric: str
    n: int
    median: float
    mad: float
    p05: float
    p95: float
    min: float
    max: float

    def to_dict(self) -> Dict[str, Any]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


@dataclass(frozen=True)
class FailingNode:
    node: str
    verdict: str
    checks: Tuple[str, ...]
    first: str  # "check subject: message" of the first fail / unknown
    file: str

    def to_dict(self) -> Dict[str, Any]:
        return {"node": self.node, "verdict": self.verdict, "checks": list(self.checks), "first": self.first,
                "file": self.file}


@dataclass
class FleetReport:
    nodes: int = 0
    gpus: int = 0
    qualified: int = 0
    distributions: List[Distribution] = field(default_factory=list)
    stragglers: List[Straggler] = field(default_factory=list)
    failing: List[FailingNode] = field(default_factory=list)  # verdict fail
    unknown: List[FailingNode] = field(default_factory=list)  # could not tell: not qualified
    unreadable: List[str] = field(default_factory=list)  # "path: why"
    params: Dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "schema": "gcm-checks/fleet-report", "version": 1,
            "nodes": self.nodes, "gpus": self.gpus, "qualified": self.qualified, "params": self.params,
            "distributions": [d.to_dict() for d in self.distributions],
            "stragglers": [s.to_dict() for s in self.stragglers],
            "failing": [f.to_dict() for f in self.failing],
            "unknown": [f.to_dict() for f in self.unknown],
            "unreadable": list(self.unreadable),
        }


# --------------------------------------------------------------------------
# Statistics (pure)


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        raise ValueError("no values")
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def median_mad(values: Sequence[float]) -> Tuple[float, float]:
    med = statistics.median(values)
    return med, statistics.median([abs(v - med) for v in values])


def robust_z(value: float, median: float, mad: float) -> float:
    sigma = MAD_TO_SIGMA * mad
    if sigma <= 0:
        return 0.0 if value == median else math.copysign(math.inf, value - median)
    return (value - median) / sigma


def find_stragglers(
    points: Sequence[Tuple[str, int, str, float]],
    model: str,
    metric: str,
    *,
    z_threshold: float = 3.5,
    min_drop: float = 0.03,
) -> Tuple[Distribution, List[Straggler]]:
    """``points`` are (node, gpu index, subject, value) for one model and metric."""
    values = sorted(p[3] for p in points)
    med, mad = median_mad(values)
    dist = Distribution(model, metric, len(values), med, mad, quantile(values, 0.05), quantile(values, 0.95),
                        values[0], values[-1])
    out: List[Straggler] = []
    if med <= 0:
        return dist, out
    for node, gpu, subject, v in points:
        drop = 1.0 - v / med
        if drop < min_drop:
            continue
        z = robust_z(v, med, mad)
        if z <= -z_threshold:
            out.append(Straggler(node, gpu, subject, model, metric, v, med, drop, z))
    return dist, out


# --------------------------------------------------------------------------
# Loading


def _scan(directory: str, depth: int = 2) -> List[str]:
    out: List[str] = []
    try:
        with os.scandir(directory) as it:
            for e in it:
                if e.name.startswith("."):
                    continue  # temp files of a writer in progress
                if e.is_file(follow_symlinks=False) and e.name.endswith(".json"):
                    out.append(e.path)
                elif depth > 1 and e.is_dir(follow_symlinks=False):
                    out.extend(_scan(e.path, depth - 1))
    except OSError:
        pass
    return out


def _name_key(path: str) -> Tuple[str, str]:
    """(node, stamp) from ``<node>_<stamp>_<level>.json``; node names may hold '_'."""
    parts = os.path.basename(path)[:-5].rsplit("_", 2)
    if len(parts) == 3:
        return parts[0], parts[1]
    return os.path.basename(path), ""


def load_latest(directory: str, level: Optional[str] = None) -> Tuple[List[Tuple[str, Dict[str, Any]]], List[str]]:
    """Newest valid result per node as (path, doc), and the unreadable files."""
    from gcm_checks.qualify.results import ResultFileError, validate

    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{directory}: not a directory")
    by_node: Dict[str, List[Tuple[str, str]]] = {}
    for path in _scan(directory):
        node, stamp = _name_key(path)
        if level and not path.endswith(f"_{level}.json"):
            continue
        by_node.setdefault(node, []).append((stamp, path))
    chosen: Dict[str, Tuple[str, Dict[str, Any]]] = {}
    bad: List[str] = []
    for node, files in by_node.items():
        # Newest first by the stamp in the name; the document's own "node" and
        # "finished" decide in the end (a file may have been renamed).
        for _, path in sorted(files, reverse=True):
            try:
                with open(path, "rb") as f:
                    doc = validate(json.loads(f.read()), path)
            except ResultFileError as e:
                bad.append(str(e))  # names the path already
                continue
            except OSError as e:
                bad.append(f"{path}: {e.strerror or e}")
                continue
            except ValueError as e:
                bad.append(f"{path}: not JSON ({e})")
                continue
            if level and doc.get("level") != level:
                continue
            key = doc["node"]
            if key not in chosen or doc["finished"] > chosen[key][1]["finished"]:
                chosen[key] = (path, doc)
            break
    return sorted(chosen.values(), key=lambda x: x[1]["node"]), bad


# --------------------------------------------------------------------------
# The report


def _first_problem(doc: Dict[str, Any], status: str) -> Tuple[Tuple[str, ...], str]:
    rows = [r for r in doc.get("results") or [] if isinstance(r, dict) and r.get("status") == status]
    checks = tuple(sorted({str(r.get("check")) for r in rows}))
    first = ""
    if rows:
        r = rows[0]
        first = f"{r.get('check')} {r.get('subject') or ''}".strip() + f": {r.get('message', '')}"
    return checks, first[:300]


def report(docs: Iterable[Tuple[str, Dict[str, Any]]], *, z_threshold: float = 3.5, min_drop: float = 0.03,
           unreadable: Sequence[str] = ()) -> FleetReport:
    rep = FleetReport(params={"z_threshold": z_threshold, "min_drop": min_drop}, unreadable=list(unreadable))
    groups: Dict[Tuple[str, str], List[Tuple[str, int, str, float]]] = {}
    for path, doc in docs:
        rep.nodes += 1
        node = doc["node"]
        verdict = doc.get("verdict")
        if doc.get("qualified"):
            rep.qualified += 1
        if verdict == "fail":
            checks, first = _first_problem(doc, "fail")
            rep.failing.append(FailingNode(node, verdict, checks, first, path))
        elif verdict == "unknown":
            checks, first = _first_problem(doc, "unknown")
            rep.unknown.append(FailingNode(node, verdict, checks, first, path))
        for g in ((doc.get("perf") or {}).get("gpus") or []):
            rep.gpus += 1
            model = str(g.get("model") or g.get("name") or "unknown")
            for m in METRICS:
                v = g.get(m)
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                    groups.setdefault((model, m), []).append((node, int(g.get("index", -1)), str(g.get("subject") or ""), float(v)))
    for (model, metric), points in sorted(groups.items()):
        dist, found = find_stragglers(points, model, metric, z_threshold=z_threshold, min_drop=min_drop)
        rep.distributions.append(dist)
        rep.stragglers.extend(found)
    rep.stragglers.sort(key=lambda s: (-s.drop, s.node, s.gpu))
    return rep


def report_dir(directory: str, *, level: Optional[str] = None, z_threshold: float = 3.5,
               min_drop: float = 0.03) -> FleetReport:
    docs, bad = load_latest(directory, level)
    return report(docs, z_threshold=z_threshold, min_drop=min_drop, unreadable=bad)
