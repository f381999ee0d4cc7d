"""Small node-local state files (atomic JSON) under ``state_dir``.

The prolog records each job's start time here: Slurm 22.05 gives the epilog
no start time, and the epilog's XID window begins there.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, Optional


def write_json_atomic(path: Path, data: Dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_json(path: Path) -> Optional[Dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def _job_path(state_dir: Path, job_id: str, node: str) -> Path:
    safe = "".join(c for c in f"{job_id}.{node}" if c.isalnum() or c in "._-")
    return Path(state_dir) / "jobs" / f"{safe}.json"


def record_job_start(state_dir: Path, job_id: str, node: str, when: Optional[float] = None) -> Path:
    p = _job_path(state_dir, job_id, node)
    write_json_atomic(p, {"job_id": job_id, "node": node, "start": time.time() if when is None else when})
    return p


def job_start(state_dir: Path, job_id: str, node: str) -> Optional[float]:
    data = read_json(_job_path(state_dir, job_id, node))
    if data and isinstance(data.get("start"), (int, float)):
        return float(data["start"])
    return None


def forget_job(state_dir: Path, job_id: str, node: str) -> None:
    try:
        _job_path(state_dir, job_id, node).unlink()
    except OSError:
        pass
