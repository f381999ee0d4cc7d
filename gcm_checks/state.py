"""Small node-local state files (atomic JSON) under ``state_dir``.

The job start records and would-drain records, written and read through
gcm_checks.jsonfile (the one atomic writer and bounded reader) like every
other state file.

The prolog records each job's start time here: Slurm 22.05 gives the epilog
no start time, and the epilog's XID window begins there.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any, Dict, Optional

from gcm_checks.jsonfile import (MAX_JSON_BYTES, MAX_JSON_DEPTH, PathLike, json_depth,  # noqa: F401 - json_depth: legacy
                                 parse_json, read_bytes, read_json, write_json)


# Legacy names, kept only for callers in files other issue-16 helpers own
# (checks/ib*.py, xid/scan.py, slurm.py, commands/epilog.py, node_action.py):
# the lead converts them to gcm_checks.jsonfile after merging, then these go.


def write_json_atomic(path: PathLike, data: Any, *, fsync: bool = True, sync_dir: bool = False, mode: int = 0o644,
                      **dump_kw: Any) -> None:
    """Deprecated: ``jsonfile.write_json`` (``durable`` = ``fsync``)."""
    write_json(path, data, mode=mode, durable=fsync or sync_dir, **dump_kw)


def load_json(path: PathLike, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Deprecated: raises where ``jsonfile.read_json`` returns None."""
    return parse_json(read_bytes(path, max_bytes=max_bytes), max_bytes=max_bytes, max_depth=max_depth)


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
    write_json(p, data, durable=False)
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


def _euid() -> int:
    return os.geteuid()


def unsafe_dir(path: str) -> Optional[str]:
    """Why root must not keep its state (or spool, or outbox) in ``path``; None when safe.

    Judged only when we run as root. The directory and every existing
    ancestor must be root's and writable by no one else (an ancestor may be
    world-writable with the sticky bit, like /tmp): whoever can write there
    can plant the symlink root follows, or the forged outbox item that
    ``notify flush`` mails. A directory that does not exist yet is fine: we
    create it 0755/0700 ourselves.
    """
    if _euid() != 0 or not path:
        return None
    p = os.path.abspath(os.path.expanduser(path))
    first = True
    while True:
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            st = None
        except OSError as e:
            return f"{p}: cannot inspect ({e.strerror or e})"
        if st is not None:
            if stat.S_ISLNK(st.st_mode) and st.st_uid != 0:
                return f"{p} is a symlink owned by uid {st.st_uid}"
            if not stat.S_ISLNK(st.st_mode):
                if st.st_uid != 0:
                    return f"{p} is owned by uid {st.st_uid}, not root"
                writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
                if writable and (first or not st.st_mode & stat.S_ISVTX):
                    return f"{p} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
            first = False
        parent = os.path.dirname(p)
        if parent == p:
            return None
        p = parent


# What the last run decided but did not do (report-only, broken config): the
# admin's view in ``gcm-checks node status``. Written only when such a
# decision is made or cleared, never on a plain healthy run.
WOULD_FILE = "would-drain.{node}.json"


def _would_path(state_dir: PathLike, node: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in node) or "_"
    return Path(state_dir) / WOULD_FILE.format(node=safe)


def record_would_drain(state_dir: PathLike, node: str, mode: str, reason: Optional[str], why: str) -> None:
    write_json(_would_path(state_dir, node),
               {"node": node, "mode": mode, "reason": reason, "why": why, "time": time.time()}, durable=False)


def clear_would_drain(state_dir: PathLike, node: str) -> None:
    try:
        _would_path(state_dir, node).unlink()
    except FileNotFoundError:
        pass


def would_drain_record(state_dir: PathLike, node: str) -> Optional[Dict[str, Any]]:
    rec = read_json(_would_path(state_dir, node))
    return rec if rec and rec.get("node") == node else None
