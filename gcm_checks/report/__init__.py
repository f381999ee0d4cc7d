"""One report per job: evidence from every node, written before any notification.

The epilog's API (see docs/reports.md)::

    from gcm_checks.report import JobInfo, assemble_and_notify
    job = JobInfo.from_env(os.environ, state="FAILED", start=..., end=...)
    outcome = assemble_and_notify(job, settings, node=node, budget_s=3.0,
                                  evidence={"results": results, "xids": xids,
                                            "drains": drains},
                                  classification=cls.to_dict())

It is called *after* the epilog decided its exit status and drains, never
raises, and returns a dict for the epilog's log. Heavy imports happen inside
the functions (rule 7).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional

from gcm_checks.report.assembly import (
    Assembled, Classifier, assemble, contribute, report_paths, stuck_after, with_job_facts, write_report,
)
from gcm_checks.report.model import SCHEMA, SCHEMA_VERSION, JobInfo

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

__all__ = [
    "SCHEMA", "SCHEMA_VERSION", "JobInfo", "Assembled",
    "contribute", "assemble", "assemble_and_notify", "sweep", "sweep_and_prune", "write_report", "report_paths",
]


def assemble_and_notify(
    job: JobInfo,
    settings: "Settings",
    *,
    node: str,
    budget_s: float,
    evidence: Optional[Mapping[str, Any]] = None,
    classification: Optional[Mapping[str, Any]] = None,
    classifier: Optional[Classifier] = None,
    handoff: Optional[str] = None,
) -> Dict[str, Any]:
    """The epilog's one call after its verdict. Never raises.

    1. (if ``evidence``) contribute this node's evidence;
    2. if this node is the assembler: write the report, queue notifications;
    3. deliver per ``notify.handoff``: ``inline`` within ``budget_s``,
       ``detach`` (default) in a detached process, ``queue`` for the next flush.
    """
    start = time.monotonic()
    out: Dict[str, Any] = {"key": job.key, "node": node, "assembled": False}
    try:
        if evidence is not None:
            out["contribution"] = contribute(job, node, evidence, settings)
        done = assemble(job, settings, node=node, classification=classification, classifier=classifier)
        if done is None:
            out["waiting"] = "not the assembler (evidence missing from other nodes, or claimed elsewhere)"
            return out
        out.update(assembled=True, paths=done.paths, user_copy=done.user_copy or done.user_copy_error)
        from gcm_checks import notify

        ns = settings.notify
        out["queued"] = notify.enqueue_report(done.report, job, settings)
        # Where a refinement pass runs (accounting.notify_wait_s > 0), the
        # first delivery waits for sacct's final word on the job.
        from gcm_checks.accounting import hold_notifications

        held = set(hold_notifications(settings, job.key))
        if held:
            out["held_for_refinement"] = sorted(held)
        keys = [k for k, v in out["queued"].items() if v == "queued" and k not in held]
        mode = handoff or ns.handoff
        left = budget_s - (time.monotonic() - start)
        if not keys or mode == "queue":
            out["delivery"] = "queued"
        elif mode == "inline":
            s = notify.flush(settings, budget_s=max(0.0, left), only_keys=keys, node=node)
            out["delivery"] = s.to_dict()
        else:
            out["delivery"] = {"detached_pid": notify.spawn_flush(settings, budget_s=ns.budget_s, node=node, only_keys=keys)}
    except Exception as e:  # noqa: BLE001 - rule 6: a report problem never changes the verdict
        out["error"] = f"{type(e).__name__}: {e}"
    return out


def sweep(settings: "Settings", *, node: str = "", now: Optional[float] = None) -> List[str]:
    """Assemble jobs whose nodes never all reported; queue their notifications.

    Run by ``notify flush`` and the health run. Returns the keys assembled.
    """
    from gcm_checks import notify
    from gcm_checks.report import spool

    rs = settings.report
    node = node or os.uname().nodename.split(".")[0]
    done_keys = []
    for key in spool.overdue(rs.spool_dir, rs.gather_timeout_s, now, stuck_after(rs)):
        done = assemble(None, settings, node=node, key=key, force=True, now=now)
        if done is None:
            continue
        notify.enqueue_report(done.report, JobInfo.from_dict(done.report["job"]), settings, now=now)
        done_keys.append(key)
    return done_keys


def sweep_and_prune(settings: "Settings", *, node: str = "") -> List[str]:
    """What runs before a full delivery (``notify flush``, the health run):
    assemble overdue reports (queueing their notifications), then forget
    what is past retention. Handed to ``notify.flush(sweep=...)`` by its
    caller, so notify never imports report backwards."""
    from gcm_checks import notify
    from gcm_checks.report import spool

    assembled = sweep(settings, node=node)
    rs = settings.report
    # Spool first: once a job's dir is gone nothing can enqueue its keys, so
    # forgetting their sent records afterwards cannot cause a second send.
    spool.prune(rs.spool_dir, rs.retention_s)
    notify.outbox_for(settings).prune_sent(rs.retention_s)
    return assembled
