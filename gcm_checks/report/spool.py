"""Per-node evidence spool and the "exactly one node assembles" claim.

Layout under ``report.spool_dir`` (a cluster filesystem in production, so
every node of a job sees the others' files)::

    <job key>/job.json            the JobInfo (each node writes the same)
    <job key>/nodes/<node>.json   one node's evidence, written atomically
    <job key>/claimed             created with O_CREAT|O_EXCL by the assembler
    <job key>/assembled           written once the report is on disk

A node's epilog writes its evidence, then lists ``nodes/``. If every node of
the job is there (or ``gather_timeout_s`` has passed since the first one
arrived) it tries to create ``claimed``; O_EXCL lets exactly one creator win,
also on NFSv3+ (open(2)). Because each node writes before it lists, the last
node to finish always sees all files, so a complete job is always assembled
by somebody's epilog. Nodes that never report (node died) are covered by
``overdue``: the next ``notify flush`` or health run on any node assembles
the job with the evidence it has and names the missing nodes. An assembler
that died between claim and report is retried once (``stuck``).
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any, Dict, List, Mapping, Optional

from gcm_checks.report.model import JobInfo
from gcm_checks.jsonfile import read_json, write_json

_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def safe_name(s: str) -> str:
    """A path component from a Slurm name: no '/', no '..', never empty."""
    out = _SAFE.sub("_", str(s)).lstrip(".")
    return out or "_"


def job_dir(spool_dir: str, key: str) -> str:
    return os.path.join(spool_dir, safe_name(key))


def write_contribution(spool_dir: str, job: JobInfo, node: str, evidence: Mapping[str, Any], now: Optional[float] = None) -> str:
    d = job_dir(spool_dir, job.key)
    os.makedirs(os.path.join(d, "nodes"), mode=0o755, exist_ok=True)
    write_json(os.path.join(d, "job.json"), job.to_dict(), mode=0o640)
    doc = {"node": node, "at": time.time() if now is None else now, "evidence": evidence}
    return write_json(os.path.join(d, "nodes", safe_name(node) + ".json"), doc, mode=0o640)


def read_contributions(spool_dir: str, key: str) -> Dict[str, Dict[str, Any]]:
    """node -> {"node", "at", "evidence"}; unreadable files are skipped (a
    half-written file cannot exist thanks to rename, but a foreign one can)."""
    nd = os.path.join(job_dir(spool_dir, key), "nodes")
    out: Dict[str, Dict[str, Any]] = {}
    try:
        names = sorted(os.listdir(nd))
    except FileNotFoundError:
        return out
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        doc = read_json(os.path.join(nd, name))
        if doc is not None:
            out[str(doc.get("node") or name[:-5])] = doc
    return out


def read_job(spool_dir: str, key: str) -> Optional[JobInfo]:
    doc = read_json(os.path.join(job_dir(spool_dir, key), "job.json"))
    try:
        return None if doc is None else JobInfo.from_dict(doc)
    except (ValueError, TypeError):
        return None


def ready(job: JobInfo, contributions: Mapping[str, Any], gather_timeout_s: float, now: Optional[float] = None) -> bool:
    """Every node reported, or the first report is older than the timeout."""
    now = time.time() if now is None else now
    expected = set(job.nodes)
    if expected and expected <= set(contributions):
        return True
    if not expected and contributions:
        return True  # node list unknown: whoever reports assembles
    first = min((float(c.get("at") or now) for c in contributions.values()), default=now)
    return bool(contributions) and now - first >= gather_timeout_s


def claim(spool_dir: str, key: str, node: str, name: str = "claimed") -> bool:
    """True for exactly one caller per job key and claim name, ever."""
    path = os.path.join(job_dir(spool_dir, key), name)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        return False
    try:
        os.write(fd, json.dumps({"node": node, "at": time.time(), "pid": os.getpid()}).encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


def mark_assembled(spool_dir: str, key: str, node: str, report_path: str) -> None:
    doc = {"node": node, "at": time.time(), "report": report_path}
    write_json(os.path.join(job_dir(spool_dir, key), "assembled"), doc, mode=0o644)


def stuck(spool_dir: str, key: str, after_s: float, now: Optional[float] = None) -> bool:
    """Claimed long ago but never assembled: the assembler died in between.

    One retry is allowed (claim name ``claimed.retry``), so a crash costs a
    delay, not the report, and two sweepers still cannot both assemble.
    """
    d = job_dir(spool_dir, key)
    if os.path.exists(os.path.join(d, "assembled")) or os.path.exists(os.path.join(d, "claimed.retry")):
        return False
    try:
        at = os.stat(os.path.join(d, "claimed")).st_mtime
    except OSError:
        return False
    return (time.time() if now is None else now) - at >= after_s


def overdue(spool_dir: str, gather_timeout_s: float, now: Optional[float] = None, stuck_after_s: float = 900.0) -> List[str]:
    """Job keys nobody claimed that are now ready (complete or timed out),
    plus claimed ones whose assembler died (``stuck``)."""
    out = []
    try:
        keys = sorted(os.listdir(spool_dir))
    except FileNotFoundError:
        return out
    for key in keys:
        job = read_job(spool_dir, key)
        if job is None:
            continue
        if os.path.exists(os.path.join(spool_dir, key, "claimed")):
            if stuck(spool_dir, key, stuck_after_s, now):
                out.append(job.key)
            continue
        if ready(job, read_contributions(spool_dir, key), gather_timeout_s, now):
            out.append(job.key)
    return out


def prune(spool_dir: str, older_than_s: float, now: Optional[float] = None) -> int:
    """Remove assembled job dirs older than ``older_than_s``; returns how many.

    Only assembled ones: their report is on disk, so nothing is lost.
    """
    import shutil

    now = time.time() if now is None else now
    n = 0
    try:
        keys = os.listdir(spool_dir)
    except FileNotFoundError:
        return 0
    for key in keys:
        c = os.path.join(spool_dir, key, "assembled")
        try:
            if now - os.stat(c).st_mtime >= older_than_s:
                shutil.rmtree(os.path.join(spool_dir, key), ignore_errors=True)
                n += 1
        except OSError:
            continue
    return n
