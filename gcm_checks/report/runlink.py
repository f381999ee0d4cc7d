"""The hook between ``gcm-run`` (inside a Slurm job) and the job's report.

One message per job run (issue 13): gcm-run does not mail its own exit
report when it runs inside a Slurm job; the job's report carries its
progress and loss instead, and the epilog's one message says it all.

gcm-run's side (wrapper/, as the job user)::

    from gcm_checks.report.runlink import run_status_path
    path = run_status_path(os.environ["SLURM_JOB_WORK_DIR"] or os.getcwd(), notify.run_job_key())
    # write (atomically) a copy of <log>.status.json there - rank 0 only

The report's side: ``assemble`` calls ``read_run_status(job, settings)``,
which reads that file as the job's user (``safeio.read_tail``: no symlink
followed, bounded size) and ``run_section`` keeps the few fields a reader
needs: progress, loss, stall episodes, gcm-run's own exit. Stall alerts are
the only gcm-run messages left, one per episode, under
``notify.notification_key(job_key, cluster, channel, f"stall-{episode}")``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

RUN_DIR = ".gcm-run"
MAX_STATUS_BYTES = 256 * 1024


def run_status_path(work_dir: str, job_key: str) -> str:
    from gcm_checks.report.spool import safe_name

    return os.path.join(work_dir, RUN_DIR, f"{safe_name(job_key)}.status.json")


def read_run_status(job: Any, settings: "Settings") -> Optional[Dict[str, Any]]:
    """gcm-run's status for this job run, condensed; None when there is none."""
    from gcm_checks import safeio

    if not job.work_dir:
        return None
    if job.uid is None and os.geteuid() == 0:
        return None  # cannot read as the owner: do not read as root
    rs = settings.report
    path = run_status_path(job.work_dir, job.key)
    tail = safeio.read_tail(path, uid=job.uid, gid=job.gid, max_bytes=MAX_STATUS_BYTES, timeout=rs.read_timeout_s,
                            user=job.user)
    if tail.error or tail.truncated or not tail.data:
        return None
    from gcm_checks.jsonfile import parse_json

    try:
        doc = parse_json(tail.data)  # bounded depth: a user's file must not RecursionError the epilog
    except ValueError:
        return None
    return run_section(doc) if isinstance(doc, Mapping) else None


def run_section(doc: Mapping[str, Any]) -> Dict[str, Any]:
    """The report's ``run`` section from a gcm-run status document."""
    p = doc.get("progress") or {}
    out: Dict[str, Any] = {"source": "gcm-run"}
    if isinstance(p, Mapping):
        parts: List[str] = []
        if p.get("step") is not None:
            parts.append(f"step {p['step']}" + (f"/{p['total']}" if p.get("total") else ""))
        if p.get("percent") is not None:
            parts.append(f"{p['percent']}%")
        if p.get("epoch") is not None:
            parts.append(f"epoch {p['epoch']}" + (f"/{p['max_epochs']}" if p.get("max_epochs") else ""))
        if parts:
            out["progress"] = ", ".join(parts)
        if p.get("loss") is not None:
            out["loss"] = p["loss"]
        if p.get("bad_loss") is not None:
            out["bad_loss"] = p["bad_loss"]
    stalls = [str(a.get("message") or a.get("kind")) for a in doc.get("alerts") or ()
              if isinstance(a, Mapping) and str(a.get("kind", "")) in ("stalled", "silent", "diverged")]
    if stalls:
        out["stalls"] = stalls[:10]
    ex = doc.get("exit")
    if isinstance(ex, Mapping):
        out["exit"] = {k: ex.get(k) for k in ("code", "signal") if ex.get(k) is not None}
    if doc.get("log"):
        out["log"] = str(doc["log"])
    return out


__all__ = ["RUN_DIR", "run_status_path", "read_run_status", "run_section"]
