"""Small node-local state files (atomic JSON) under ``state_dir``.

One atomic-write helper for every piece of local state (job start times, XID
history and scan marks, IB counter baselines, drain records, run status).

The prolog records each job's start time here: Slurm 22.05 gives the epilog
no start time, and the epilog's XID window begins there.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Dict, Optional, Union

PathLike = Union[str, "os.PathLike[str]"]


def write_json_atomic(path: PathLike, data: Any, *, fsync: bool = True, sync_dir: bool = False, mode: int = 0o644,
                      **dump_kw: Any) -> None:
    """Write JSON to a temp file beside ``path`` and rename it into place.

    A crash leaves the old file or the new one, never half of either.
    ``fsync=False`` for state whose loss is harmless (it costs a disk flush
    on the prolog path); ``sync_dir`` also makes the rename itself durable.
    ``mode`` is applied exactly (not through the umask). No tempfile import:
    this runs before every job.
    """
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, mode=0o755, exist_ok=True)
    tmp = os.path.join(d, f".{os.path.basename(path)}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, **dump_kw)
            f.write("\n")
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if sync_dir:
        try:
            dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            os.fsync(dfd)
        except OSError:
            pass
        finally:
            os.close(dfd)


def read_json(path: PathLike) -> Optional[Dict[str, Any]]:
    """The JSON object at ``path``, or None if missing, unreadable or corrupt."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def _job_path(state_dir: PathLike, job_id: str, node: str) -> Path:
    safe = "".join(c for c in f"{job_id}.{node}" if c.isalnum() or c in "._-")
    return Path(state_dir) / "jobs" / f"{safe}.json"


# Jobs whose epilog has run, as empty marker files: a process still in such a
# job's cgroup (unkillable, in D state) is a leftover, not the job's.
ENDED_DIR = "ended"
ENDED_KEEP = 2000  # markers kept; the oldest half goes when there are more


def ended_path(state_dir: PathLike, job_id: str, node: str) -> Path:
    p = _job_path(state_dir, job_id, node)
    return p.parent / ENDED_DIR / p.stem


def job_ended(state_dir: PathLike, job_id: str, node: str) -> bool:
    return os.path.exists(ended_path(state_dir, job_id, node))


def _mark_ended(state_dir: PathLike, job_id: str, node: str) -> None:
    p = ended_path(state_dir, job_id, node)
    try:
        os.makedirs(p.parent, mode=0o755, exist_ok=True)
        os.close(os.open(p, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644))
        names = os.listdir(p.parent)
        if len(names) > ENDED_KEEP:
            old = sorted(names, key=lambda n: os.stat(os.path.join(p.parent, n)).st_mtime)[: len(names) // 2]
            for n in old:
                os.unlink(os.path.join(p.parent, n))
    except OSError:
        pass  # a lost marker only means a stuck process of this job is not called a leftover


def record_job_start(state_dir: PathLike, job_id: str, node: str, when: Optional[float] = None,
                     restart_count: Optional[int] = None, gpus: Optional[list] = None) -> Path:
    """What the epilog needs from job start: the time (its XID window) and the
    restart count (a run ended by a requeue already sees the next count in its
    epilog environment, so the report key must come from here)."""
    p = _job_path(state_dir, job_id, node)
    data: Dict[str, Any] = {"job_id": job_id, "node": node, "start": time.time() if when is None else when}
    if restart_count is not None:
        data["restart_count"] = int(restart_count)
    try:
        os.unlink(ended_path(state_dir, job_id, node))  # a requeued job runs again
    except OSError:
        pass
    if gpus is not None:
        # The job's GPU indices: health and later prologs treat processes on
        # them as this job's, not leftovers, until the epilog forgets the job
        # (gcm_checks.gather.jobs; the rule for nodes without job cgroups).
        data["gpus"] = sorted(int(g) for g in gpus)
    # No fsync: if a crash loses it, the epilog falls back to slurmctld's StartTime.
    write_json_atomic(p, data, fsync=False)
    return p


def job_record(state_dir: PathLike, job_id: str, node: str) -> Dict[str, Any]:
    """The prolog's record for this job on this node ({} when there is none)."""
    return read_json(_job_path(state_dir, job_id, node)) or {}


def job_start(state_dir: PathLike, job_id: str, node: str) -> Optional[float]:
    start = job_record(state_dir, job_id, node).get("start")
    return float(start) if isinstance(start, (int, float)) else None


def forget_job(state_dir: PathLike, job_id: str, node: str) -> None:
    try:
        _job_path(state_dir, job_id, node).unlink()
    except OSError:
        pass
    _mark_ended(state_dir, job_id, node)
