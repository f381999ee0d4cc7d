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
counts as repaired). Documents are streamed: each file is parsed, reduced to a
few packed numbers (``_Fleet``) and dropped, so memory grows
by about 0.5 KB per node, not by the documents (tests/bench/bench_fleet.py:
100,000 nodes in under 100 MB).
"""

from __future__ import annotations

import math
import os
import statistics
from array import array
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

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


def _scan(directory: str, depth: int = 2) -> Iterator[str]:
    """Result files under ``directory``, yielded as found (never all paths at once)."""
    try:
        with os.scandir(directory) as it:
            subdirs = []
            for e in it:
                if e.name.startswith("."):
                    continue  # temp files of a writer in progress
                if e.is_file(follow_symlinks=False) and e.name.endswith(".json"):
                    yield e.path
                elif depth > 1 and e.is_dir(follow_symlinks=False):
                    subdirs.append(e.path)
    except OSError:
        return
    for d in subdirs:
        yield from _scan(d, depth - 1)


def _name_key(path: str) -> Tuple[str, str]:
    """(node, stamp) from ``<node>_<stamp>_<level>.json``; node names may hold '_'."""
    parts = os.path.basename(path)[:-5].rsplit("_", 2)
    if len(parts) == 3:
        return parts[0], parts[1]
    return os.path.basename(path), ""


def _read(path: str, level: Optional[str], bad: List[str]) -> Optional[Dict[str, Any]]:
    from gcm_checks.qualify.results import ResultFileError, read

    try:
        doc = read(path)
    except ResultFileError as e:
        bad.append(str(e))  # names the path and the reason
        return None
    if level and doc.get("level") != level:
        return None
    return doc


def iter_latest(directory: str, level: Optional[str] = None, bad: Optional[List[str]] = None
                ) -> Iterator[Tuple[str, Dict[str, Any]]]:
    """The newest valid result per node as (path, doc), one at a time.

    Newest by the stamp in the file name, so only one file per node is
    parsed; an unreadable newest file falls back to the one before it. Held
    in memory meanwhile: one stamp per node, never a document. (A file may
    have been renamed: the consumer keeps the newest ``finished`` per
    document ``node``.)
    """
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{directory}: not a directory")
    bad = [] if bad is None else bad
    suffix = f"_{level}.json" if level else ".json"
    newest: Dict[str, str] = {}
    for path in _scan(directory):
        if path.endswith(suffix):
            node, stamp = _name_key(path)
            if stamp >= newest.get(node, ""):
                newest[node] = stamp
    retry: Dict[str, str] = {}  # node -> stamp that failed
    for path in _scan(directory):
        if not path.endswith(suffix):
            continue
        node, stamp = _name_key(path)
        if newest.get(node) != stamp:
            continue
        newest[node] = ""  # drops the stamp string; a second file of the same stamp is not read
        doc = _read(path, level, bad)
        if doc is None:
            retry[node] = stamp
        else:
            yield path, doc
    del newest
    if retry:  # rare: a broken newest file; the older files of those nodes only
        older: Dict[str, List[Tuple[str, str]]] = {}
        for path in _scan(directory):
            node, stamp = _name_key(path)
            if path.endswith(suffix) and node in retry and stamp < retry[node]:
                older.setdefault(node, []).append((stamp, path))
        for node in sorted(older):
            for _, path in sorted(older[node], reverse=True):
                doc = _read(path, level, bad)
                if doc is not None:
                    yield path, doc
                    break


def load_latest(directory: str, level: Optional[str] = None) -> Tuple[List[Tuple[str, Dict[str, Any]]], List[str]]:
    """Newest valid result per node as (path, doc), and the unreadable files.
    Holds every document: for tools and tests; the report streams instead."""
    bad: List[str] = []
    chosen: Dict[str, Tuple[str, Dict[str, Any]]] = {}
    for path, doc in iter_latest(directory, level, bad):
        key = doc["node"]
        if key not in chosen or doc["finished"] > chosen[key][1]["finished"]:
            chosen[key] = (path, doc)
    return sorted(chosen.values(), key=lambda x: x[1]["node"]), bad


# --------------------------------------------------------------------------
# The report, streamed


def _first_problem(doc: Dict[str, Any], status: str) -> Tuple[Tuple[str, ...], str]:
    rows = [r for r in doc.get("results") or [] if isinstance(r, dict) and r.get("status") == status]
    checks = tuple(sorted({str(r.get("check")) for r in rows}))
    first = ""
    if rows:
        r = rows[0]
        first = f"{r.get('check')} {r.get('subject') or ''}".strip() + f": {r.get('message', '')}"
    return checks, first[:300]


def _epoch(iso: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("-inf")  # validate() checked it is a string; an odd one loses ties


class _Group:
    """One (model, metric): packed values and who they belong to, 14 bytes a GPU."""

    __slots__ = ("values", "slots", "gpus", "subjects")

    def __init__(self) -> None:
        self.values = array("d")
        self.slots = array("i")
        self.gpus = array("h")
        self.subjects = array("H")


class _Fleet:
    """Accumulates one document at a time; keeps only what the report needs.

    A node seen again with a newer ``finished`` gets a new slot and its old
    slot is marked dead, so values never need to be removed from the packed
    arrays.
    """

    def __init__(self) -> None:
        self.slot_of: Dict[str, int] = {}
        self.names: List[str] = []
        self.finished = array("d")  # epoch seconds: 8 bytes, not a 70-byte string
        self.alive = bytearray()
        self.qualified = bytearray()
        self.gpu_count = array("H")
        self.problems: Dict[int, Tuple[str, FailingNode]] = {}  # slot -> (verdict, row): fail/unknown only
        self.groups: Dict[Tuple[str, str], _Group] = {}
        self.subject_ids: Dict[str, int] = {}
        self.subject_names: List[str] = []

    def add(self, path: str, doc: Dict[str, Any]) -> None:
        node = doc["node"]
        finished = _epoch(doc["finished"])
        old = self.slot_of.get(node)
        if old is not None:
            if finished <= self.finished[old]:
                return
            self.alive[old] = 0
            self.problems.pop(old, None)
        slot = len(self.names)
        self.slot_of[node] = slot
        self.names.append(node)
        self.finished.append(finished)
        self.alive.append(1)
        self.qualified.append(1 if doc.get("qualified") else 0)
        verdict = doc.get("verdict")
        if verdict in ("fail", "unknown"):
            checks, first = _first_problem(doc, verdict)
            self.problems[slot] = (verdict, FailingNode(node, verdict, checks, first, path))
        n = 0
        for g in ((doc.get("perf") or {}).get("gpus") or []):
            n += 1
            model = str(g.get("model") or g.get("name") or "unknown")
            subject = str(g.get("subject") or "")
            sid = self.subject_ids.get(subject)
            if sid is None:
                sid = self.subject_ids[subject] = len(self.subject_names)
                self.subject_names.append(subject)
            for m in METRICS:
                v = g.get(m)
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                    grp = self.groups.get((model, m))
                    if grp is None:
                        grp = self.groups[(model, m)] = _Group()
                    grp.values.append(float(v))
                    grp.slots.append(slot)
                    grp.gpus.append(int(g.get("index", -1)))
                    grp.subjects.append(sid % 65536)
        self.gpu_count.append(min(n, 65535))

    def finish(self, rep: "FleetReport", z_threshold: float, min_drop: float) -> "FleetReport":
        alive = self.alive
        rep.nodes = sum(alive)
        all_alive = rep.nodes == len(alive)
        rep.qualified = sum(q for q, a in zip(self.qualified, alive) if a)
        rep.gpus = sum(c for c, a in zip(self.gpu_count, alive) if a)
        for slot in sorted(self.problems, key=lambda s: self.names[s]):
            verdict, row = self.problems[slot]
            (rep.failing if verdict == "fail" else rep.unknown).append(row)
        for (model, metric), grp in sorted(self.groups.items()):
            if all_alive:  # the common case: no node seen twice, no index list
                keep: Sequence[int] = range(len(grp.values))
                values = grp.values
            else:
                keep = array("i", (i for i, s in enumerate(grp.slots) if alive[s]))
                values = array("d", (grp.values[i] for i in keep))
            if not len(values):
                continue
            dist, found = _stragglers_packed(values, model, metric, z_threshold, min_drop)
            rep.distributions.append(dist)
            for j in found:
                i = keep[j]
                v = grp.values[i]
                rep.stragglers.append(Straggler(self.names[grp.slots[i]], grp.gpus[i],
                                                self.subject_names[grp.subjects[i]], model, metric, v, dist.median,
                                                1.0 - v / dist.median, robust_z(v, dist.median, dist.mad)))
        rep.stragglers.sort(key=lambda s: (-s.drop, s.node, s.gpu))
        return rep


def order_statistics(values: Iterable[float], ranks: Iterable[int], n: int, lo: float, hi: float,
                     bins: int = 4096) -> Dict[int, float]:
    """The k-th smallest of ``values`` for each k in ``ranks``, exactly, without
    sorting them all: count values into ``bins`` buckets over [lo, hi], then
    sort only the buckets that hold a wanted rank. ``values`` is iterated
    twice (pass a re-iterable). Memory: the buckets plus the values of the
    hit buckets - a sorted copy of 800,000 floats would be 26 MB."""
    ranks = sorted(set(ranks))
    if hi <= lo:
        return {k: lo for k in ranks}
    scale = bins / (hi - lo)
    top = bins - 1
    counts = array("l", bytes(8 * bins))
    for v in values:
        b = int((v - lo) * scale)
        counts[b if b < top else top] += 1
    where: Dict[int, Tuple[int, int]] = {}  # rank -> (bucket, rank inside the bucket)
    cum, r = 0, 0
    for b, c in enumerate(counts):
        while r < len(ranks) and ranks[r] < cum + c:
            where[ranks[r]] = (b, ranks[r] - cum)
            r += 1
        cum += c
        if r == len(ranks):
            break
    hit: Dict[int, List[float]] = {b: [] for b, _ in where.values()}
    for v in values:
        b = int((v - lo) * scale)
        got = hit.get(b if b < top else top)
        if got is not None:
            got.append(v)
    for lst in hit.values():
        lst.sort()
    return {k: hit[b][i] for k, (b, i) in where.items()}


def _quantile_ranks(n: int, q: float) -> Tuple[int, int, float]:
    pos = (n - 1) * q
    lo = math.floor(pos)
    return lo, min(lo + 1, n - 1), pos - lo


def _stragglers_packed(values: "array[float]", model: str, metric: str, z_threshold: float,
                       min_drop: float) -> Tuple[Distribution, List[int]]:
    """find_stragglers over a packed array: the same rule and the same
    numbers (quantile(), statistics.median()), positions of the stragglers
    out, and no sorted copy of the values."""
    n = len(values)
    lo, hi = min(values), max(values)
    qs = {q: _quantile_ranks(n, q) for q in (0.05, 0.5, 0.95)}
    got = order_statistics(values, [k for a, b, _ in qs.values() for k in (a, b)], n, lo, hi)

    def q_at(q: float) -> float:
        a, b, frac = qs[q]
        return got[a] + (got[b] - got[a]) * frac

    # statistics.median: the middle one, or the mean of the two middle ones.
    med = got[n // 2] if n % 2 else (got[n // 2 - 1] + got[n // 2]) / 2
    devs = _Devs(values, med)
    dgot = order_statistics(devs, [(n - 1) // 2, n // 2], n, 0.0, max(hi - med, med - lo))
    mad = dgot[n // 2] if n % 2 else (dgot[n // 2 - 1] + dgot[n // 2]) / 2
    dist = Distribution(model, metric, n, med, mad, q_at(0.05), q_at(0.95), lo, hi)
    out: List[int] = []
    if med <= 0:
        return dist, out
    for i, v in enumerate(values):
        if 1.0 - v / med >= min_drop and robust_z(v, med, mad) <= -z_threshold:
            out.append(i)
    return dist, out


class _Devs:
    """|v - median| over the values, re-iterable, never materialised."""

    def __init__(self, values: Iterable[float], med: float) -> None:
        self.values, self.med = values, med

    def __iter__(self) -> Iterator[float]:
        med = self.med
        return (abs(v - med) for v in self.values)


def report(docs: Iterable[Tuple[str, Dict[str, Any]]], *, z_threshold: float = 3.5, min_drop: float = 0.03,
           unreadable: Sequence[str] = ()) -> FleetReport:
    fleet = _Fleet()
    for path, doc in docs:
        fleet.add(path, doc)
    rep = FleetReport(params={"z_threshold": z_threshold, "min_drop": min_drop})
    fleet.finish(rep, z_threshold, min_drop)
    rep.unreadable = list(unreadable)
    return rep


def report_dir(directory: str, *, level: Optional[str] = None, z_threshold: float = 3.5,
               min_drop: float = 0.03) -> FleetReport:
    """The fleet report over a results directory, one document in memory at a time."""
    bad: List[str] = []
    rep = report(iter_latest(directory, level, bad), z_threshold=z_threshold, min_drop=min_drop)
    rep.unreadable = bad
    return rep
