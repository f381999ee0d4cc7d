"""Where a wrapped run's state lives on disk, and how it gets there safely.

- ``<log>.status.json``  live status, rewritten atomically (temp + rename) so a
  reader (``gcm-checks jobs``, a dashboard, a tail -f) never sees half a file.
- ``<log>.report.json``  the final run report, written (and fsynced) before
  any notification is attempted (rule 6: nothing lost).
- an index directory of small pointer files, one per running wrapper, so
  ``gcm-checks jobs`` can find runs whose logs live anywhere.

This module is imported by ``gcm-checks jobs``: keep it light.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

from gcm_checks.jsonfile import read_json, write_json

SCHEMA = 1


def status_path(log_path: str) -> str:
    return log_path + ".status.json"


def report_path(log_path: str) -> str:
    return log_path + ".report.json"


def index_dir(env: Optional[Dict[str, str]] = None) -> str:
    """Per-user index of running wrappers (``GCM_RUN_INDEX`` overrides)."""
    env = os.environ if env is None else env
    if env.get("GCM_RUN_INDEX"):
        return env["GCM_RUN_INDEX"]
    base = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "gcm-run", "active")


def iso(wall: Optional[float]) -> Optional[str]:
    if wall is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(wall))


def fsync_dir(path: str) -> None:
    try:
        fd = os.open(path or ".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_run_json(path: str, data: Any, *, durable: bool = False, mode: int = 0o644) -> None:
    """gcm-run's JSON style (indented, sorted, no NaN) through jsonfile's one writer.

    ``durable`` fsyncs: used for the run record before launch and the report
    at exit, not for the frequent status updates (an fsync per second would
    cost more than the whole pump).
    """
    write_json(path, data, durable=durable, mode=mode, indent=1, sort_keys=True, allow_nan=False, default=str)


def host() -> str:
    return socket.gethostname().split(".")[0]


def index_entry_path(index: str, run_id: str) -> str:
    return os.path.join(index, run_id + ".json")


def register_run(index: str, run_id: str, status_file: str) -> Optional[str]:
    """Best effort: a missing index only hides the run from ``jobs``."""
    try:
        os.makedirs(index, mode=0o700, exist_ok=True)
        p = index_entry_path(index, run_id)
        write_run_json(p, {"status": os.path.abspath(status_file), "host": host(), "pid": os.getpid()}, mode=0o600)
        return p
    except OSError:
        return None


def unregister_run(entry: Optional[str]) -> None:
    if entry:
        try:
            os.unlink(entry)
        except OSError:
            pass


def pid_alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True  # exists, someone else's
    return True


def list_runs(index: str, extra_status_files: Tuple[str, ...] = ()) -> List[dict]:
    """Status dicts of runs in the index (and any extra status files).

    Runs whose wrapper died without cleaning up (kill -9, node crash) are
    marked ``state = "lost"`` rather than shown as running forever.
    """
    paths: List[str] = []
    if os.path.isdir(index):
        for name in sorted(os.listdir(index)):
            if not name.endswith(".json"):
                continue
            ptr = read_json(os.path.join(index, name), max_bytes=1 << 20)
            if ptr and isinstance(ptr.get("status"), str):
                paths.append(ptr["status"])
    paths.extend(extra_status_files)
    out: List[dict] = []
    seen = set()
    me = host()
    for p in paths:
        if p in seen:
            continue
        seen.add(p)
        st = read_json(p, max_bytes=1 << 20)
        if not st:
            continue
        st["_status_file"] = p
        if st.get("state") == "running" and st.get("host") == me and not pid_alive(st.get("wrapper_pid")):
            st["state"] = "lost"
        out.append(st)
    return out


def iter_status_files(directory: str) -> Iterator[str]:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return
    for n in names:
        if n.endswith(".status.json"):
            yield os.path.join(directory, n)
