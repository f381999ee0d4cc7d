"""The keys that make "one message per job run" hold (docs/reports.md).

Pure functions, shared by the epilog's report path (notify/__init__), gcm-run's
notices (its notice module) and the refinement pass (accounting/).
"""

from __future__ import annotations

import os
from typing import Mapping, Optional


def idempotency_key(job_key: str, cluster: str, channel: str) -> str:
    # Per job run (id + requeue count) and channel: a requeued job gets a new
    # report; the same job never gets two on one channel.
    return f"{cluster or 'cluster'}/{job_key}/{channel}"


def notification_key(job_key: str, cluster: str, channel: str, event: str = "") -> str:
    """THE key of a job run's message on one channel (docs/reports.md, "One
    message per job run"). Whoever notices first - the epilog, gcm-run, the
    refinement pass - enqueues under it; the outbox refuses a second item
    with the same key, so the user gets one message. ``event`` names the
    only other messages a run may get, each once: ``refined`` (the cause
    changed after the first was sent) and ``stall-<episode>`` (gcm-run)."""
    base = idempotency_key(job_key, cluster, channel)
    return f"{base}/{event}" if event else base


def run_job_key(env: Optional[Mapping[str, str]] = None) -> str:
    """The job key of the Slurm job run we are inside (gcm-run's side of the
    hook): ``<id>`` or ``<id>.<restart count>``, as ``JobInfo.key``."""
    e = os.environ if env is None else env
    job_id = e.get("SLURM_JOB_ID") or e.get("SLURM_JOBID") or ""
    # prolog/epilog see SLURM_JOB_RESTART_COUNT, the job's own tasks SLURM_RESTART_COUNT
    restarts = (e.get("SLURM_JOB_RESTART_COUNT") or e.get("SLURM_RESTART_COUNT") or "0").strip()
    return f"{job_id}.{restarts}" if job_id and restarts.isdigit() and int(restarts) else job_id
