"""The qualification result file: versioned JSON, written atomically.

One file per run, ``<results_dir>/<node>_<UTC time>_<level>.json``, so a
sweep across a fleet writes many files into one shared directory without
locking, and ``gcm-checks fleet report DIR`` reads them all. A reader never
sees half a file (temp file, fsync, rename - rule 6).

Schema ``gcm-checks/qualify`` version 1::

    {"schema": "gcm-checks/qualify", "version": 1, "node", "level",
     "started", "finished" (ISO 8601 UTC), "duration_s", "verdict",
     "qualified", "gcm_checks_version", "sim",
     "perf": {"source", "dtype", "probe_s",
              "gpus": [{"index", "subject", "name", "model",
                        "gemm_tflops", "mem_bw_gbps"}]},
     "counts": {"pass", "warn", "unknown", "fail"},
     "results": [CheckResult.to_dict(), ...],
     "slurm": {"action", "reason"}}

Readers accept any version up to ``VERSION`` and reject newer ones by name,
so an old fleet report never misreads a newer file.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any, Dict, Iterable, List, Optional

SCHEMA = "gcm-checks/qualify"
VERSION = 1


class ResultFileError(ValueError):
    pass


def iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def build_doc(
    *,
    node: str,
    level: str,
    started: float,
    finished: float,
    verdict: str,
    qualified: bool,
    results: Iterable[Any],
    perf: Optional[Any] = None,
    probe_s: float = 0.0,
    sim: Optional[str] = None,
    slurm_action: Optional[str] = None,
    slurm_reason: Optional[str] = None,
) -> Dict[str, Any]:
    from gcm_checks import __version__
    from gcm_checks.qualify.baselines import model_key

    rows = [r.to_dict() for r in results]
    counts = {s: 0 for s in ("pass", "warn", "unknown", "fail")}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    gpus: List[Dict[str, Any]] = []
    if perf is not None:
        for g in perf.gpus:
            gpus.append({"index": g.index, "subject": g.subject, "name": g.name,
                         "model": model_key(g.name) or g.name or "unknown",
                         "gemm_tflops": g.gemm_tflops, "mem_bw_gbps": g.mem_bw_gbps})
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "node": node,
        "level": level,
        "started": iso(started),
        "finished": iso(finished),
        "duration_s": round(finished - started, 3),
        "verdict": verdict,
        "qualified": qualified,
        "gcm_checks_version": __version__,
        "sim": sim,
        "perf": {"source": getattr(perf, "source", None), "dtype": getattr(perf, "dtype", ""),
                 "problem": getattr(perf, "problem", None), "probe_s": probe_s, "gpus": gpus},
        "counts": counts,
        "results": rows,
        "slurm": {"action": slurm_action, "reason": slurm_reason},
    }


_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def file_name(node: str, finished_iso: str, level: str) -> str:
    # The node name comes from Slurm or the hostname; keep it a plain file name.
    safe = _SAFE_NAME.sub("_", node or "unknown").lstrip(".") or "unknown"
    stamp = _SAFE_NAME.sub("", finished_iso.replace("-", "").replace(":", ""))
    return f"{safe}_{stamp}_{_SAFE_NAME.sub('_', level)}.json"


def write(results_dir: str, doc: Dict[str, Any]) -> str:
    """Write ``doc`` atomically into ``results_dir``; returns the path."""
    from gcm_checks.jsonfile import write_atomic

    path = os.path.join(os.path.expanduser(results_dir), file_name(doc["node"], doc["finished"], doc["level"]))
    data = (json.dumps(doc, indent=1, sort_keys=False) + "\n").encode("utf-8")
    # 0644: the fleet report runs as an admin, not necessarily as root.
    return write_atomic(path, data, mode=0o644)


def validate(doc: Any, where: str = "(document)") -> Dict[str, Any]:
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ResultFileError(f"{where}: not a gcm-checks qualify result (schema {SCHEMA!r} expected)")
    v = doc.get("version")
    if not isinstance(v, int) or v < 1:
        raise ResultFileError(f"{where}: bad version {v!r}")
    if v > VERSION:
        raise ResultFileError(f"{where}: version {v} is newer than this gcm-checks understands ({VERSION}); upgrade")
    for key in ("node", "finished", "verdict"):
        if not isinstance(doc.get(key), str):
            raise ResultFileError(f"{where}: missing {key!r}")
    return doc


MAX_RESULT_BYTES = 4 * 1024 * 1024  # one node's result; anything bigger is not ours


def read(path: str) -> Dict[str, Any]:
    """The validated result at ``path``; ResultFileError (with the reason) otherwise."""
    from gcm_checks.jsonfile import parse_json, read_bytes

    try:
        # Bounded (size and depth) like every JSON read, but the reason is kept for the report.
        doc = parse_json(read_bytes(path, max_bytes=MAX_RESULT_BYTES), max_bytes=MAX_RESULT_BYTES)
    except OSError as e:
        raise ResultFileError(f"{path}: {e.strerror or e}") from None
    except ValueError as e:
        raise ResultFileError(f"{path}: not JSON ({e})") from None
    return validate(doc, path)
