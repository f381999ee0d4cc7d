"""The directory a job's gcm-run tasks share, made and used without surprises.

``$GCM_RUN_SHARED_DIR/job-<key>/`` when set, else
``<working dir>/.gcm-run/job-<key>/`` (``key`` = job id, plus ``.N`` for the
Nth requeue, as in the job's report). Every task writes its own small file;
task 0 reads them all and writes the verdict. Task 0 also leaves its status
as ``<working dir>/.gcm-run/<key>.status.json`` (``summary_name``), where
the epilog's job report reads it (``report.runlink``, ``report.progress``).

Safety (rule 5): the two directories we create are opened with
``O_NOFOLLOW | O_DIRECTORY`` and must be owned by us and not writable by
group or others; every file is opened relative to that directory fd with
``O_NOFOLLOW``, written through a temp file and a rename, and read with a
size cap. A planted symlink or a foreign directory switches the feature off
for this run (said in the status file), never the job.
"""

from __future__ import annotations

import os
import stat
from typing import Dict, Iterator, Mapping, Optional, Tuple

from gcm_checks.jsonfile import read_json, write_json

MAX_FILE_BYTES = 64 * 1024
MAX_TASK_FILES = 4096
SUMMARY_MAX_BYTES = 256 * 1024  # what the report's reader accepts (report.runlink)


def summary_name(key: str) -> str:
    """``<key>.status.json``, the name ``report.runlink.run_status_path`` uses."""
    from gcm_checks.report.spool import safe_name

    return f"{safe_name(key)}.status.json"
STRAGGLERS = "stragglers.json"


def job_key(env: Mapping[str, str]) -> str:
    """Same key as ``report.model.JobInfo.key``: id, plus the requeue count."""
    job = "".join(c for c in env.get("SLURM_JOB_ID", "") if c.isalnum() or c in "._-")[:40]
    restarts = env.get("SLURM_RESTART_COUNT", "") or env.get("SLURM_JOB_RESTART_COUNT", "")
    return f"{job}.{restarts}" if restarts.isdigit() and int(restarts) > 0 else job


def default_base(env: Mapping[str, str], cwd: str) -> str:
    return os.path.join(cwd, ".gcm-run")


def shared_base(env: Mapping[str, str], cwd: str) -> str:
    return env.get("GCM_RUN_SHARED_DIR") or default_base(env, cwd)


class SharedDir:
    """An open, checked directory; all file access goes through its fd."""

    def __init__(self, path: str, fd: int) -> None:
        self.path = path
        self.fd = fd

    @classmethod
    def open_base(cls, base: str) -> "SharedDir":
        os.makedirs(os.path.dirname(os.path.abspath(base)) or "/", exist_ok=True)
        return cls(base, _open_own_dir(base))

    @classmethod
    def open(cls, base: str, name: str) -> "SharedDir":
        """Create (if needed) and open ``base/name``; OSError if unsafe."""
        os.makedirs(os.path.dirname(os.path.abspath(base)) or "/", exist_ok=True)
        base_fd = _open_own_dir(base, sticky_ok=True)
        try:
            try:
                os.mkdir(name, 0o700, dir_fd=base_fd)
            except FileExistsError:
                pass
            fd = _open_own_dir(name, dir_fd=base_fd)
        finally:
            os.close(base_fd)
        return cls(os.path.join(base, name), fd)

    def write_json(self, name: str, data: object, max_bytes: Optional[int] = None) -> None:
        # Not durable: task files are rewritten every sample; a lost one is
        # rewritten at the next.
        write_json(name, data, mode=0o600, durable=False, dir_fd=self.fd, max_bytes=max_bytes,
                   allow_nan=False, default=str, separators=(",", ":"))

    def read_json(self, name: str) -> Optional[dict]:
        return read_json(name, max_bytes=MAX_FILE_BYTES, dir_fd=self.fd)

    def names(self, prefix: str) -> Iterator[str]:
        try:
            entries = os.listdir(self.fd)
        except OSError:
            return
        n = 0
        for e in sorted(entries):
            if e.startswith(prefix) and e.endswith(".json"):
                n += 1
                if n > MAX_TASK_FILES:
                    return
                yield e

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass


def _open_own_dir(path: str, dir_fd: Optional[int] = None, *, sticky_ok: bool = False) -> int:
    """Open a directory that is ours and writable by nobody else. With
    ``sticky_ok`` (a base like ``$GCM_RUN_SHARED_DIR=/scratch/shared``), a
    sticky world-writable directory is fine too: others cannot replace what
    we create in it, and our job directory below is checked strictly."""
    if dir_fd is None:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    st = os.fstat(fd)
    ours = st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if not ours and not (sticky_ok and st.st_mode & stat.S_ISVTX and st.st_uid in (0, os.geteuid())):
        os.close(fd)
        raise PermissionError(f"{path}: not ours, or writable by others")
    return fd


def open_for_job(env: Mapping[str, str], cwd: str) -> Tuple[Optional[SharedDir], Optional[SharedDir], Dict[str, str]]:
    """(shared dir, summary dir, problems). The summary dir is
    ``<working dir>/.gcm-run``, where the epilog looks."""
    problems: Dict[str, str] = {}
    name = f"job-{job_key(env)}"
    shared = summary = None
    try:
        shared = SharedDir.open(shared_base(env, cwd), name)
    except OSError as e:
        problems["shared_dir"] = f"{os.path.join(shared_base(env, cwd), name)}: {e.strerror or e}"
    try:
        summary = SharedDir.open_base(default_base(env, cwd))
    except OSError as e:
        problems["summary_dir"] = f"{default_base(env, cwd)}: {e.strerror or e}"
    return shared, summary, problems
