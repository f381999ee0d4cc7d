"""Notifications as sinks in one pipeline, behind a durable outbox.

    keys = enqueue_report(report, job, settings)     # decide + persist, no network
    summary = flush(settings, budget_s=5.0)           # deliver what is due
    spawn_flush(settings, budget_s=30.0)              # same, in a detached process

Nothing here raises into the epilog for a delivery problem, and nothing here
can change an exit status: the epilog has decided before we are called.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional

from gcm_checks.notify.config import Channel
from gcm_checks.notify.delivery import outbox_for, sender, writable_outbox
from gcm_checks.notify.keys import idempotency_key, notification_key, run_job_key
from gcm_checks.notify.outbox import FlushSummary, Outbox

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

__all__ = ["Channel", "Outbox", "FlushSummary", "enqueue_report", "flush", "spawn_flush", "outbox_for",
           "writable_outbox", "idempotency_key", "notification_key", "run_job_key", "sender"]


def build_payload(channel: Channel, report: Mapping[str, Any], recipients: List[str]) -> Dict[str, Any]:
    from gcm_checks.report import render
    from gcm_checks.notify.sinks import slack_escape

    if channel.type == "smtp":
        return {"to": recipients, "subject": render.subject(report), "text": render.to_text(report), "html": render.to_html(report)}
    if channel.type == "slack":
        return {"body": {"text": slack_escape(render.short_text(report))}}
    # Generic webhook: the whole report minus log text (bounded, and the log
    # paths are there); receivers key on schema/version.
    slim = dict(report)
    slim["logs"] = [{k: v for k, v in log.items() if k != "text"} for log in report.get("logs") or ()]
    return {"body": {"schema": "gcm-checks/notification", "version": 1, "event": "job_report",
                     "summary": render.short_text(report), "report": slim}}


def enqueue_report(report: Mapping[str, Any], job: Any, settings: "Settings", now: Optional[float] = None,
                   event: str = "") -> Dict[str, str]:
    """Put one item per wanted channel in the outbox. Returns key -> what happened.

    Called only after the report is on disk (nothing lost if we die here).
    Whether the user is told follows the policy and the report's outcome
    (mailed by default or not, report/outcome.py).
    """
    from gcm_checks.notify.policy import channel_wants, recipients
    from gcm_checks.report.model import report_failed

    ns = settings.notify
    box = outbox_for(settings)
    failed = report_failed(report)
    out: Dict[str, str] = {}
    for ch in ns.channels:
        key = notification_key(job.key, job.cluster, ch.name, event)
        if not channel_wants(ns, ch, job, failed):
            out[key] = "not wanted (policy)"
            continue
        to: List[str] = []
        if ch.type == "smtp":
            to = recipients(ns, job)
            if not to:
                out[key] = "no e-mail address for user"
                continue
        added = box.enqueue(key, ch.name, build_payload(ch, report, to), job_key=job.key, now=now)
        out[key] = "queued" if added else "already known"
    return out


def flush(
    settings: "Settings",
    *,
    budget_s: Optional[float] = None,
    only_keys: Optional[List[str]] = None,
    force: bool = False,
    node: str = "",
    sweep: Optional[Callable[..., List[str]]] = None,
) -> FlushSummary:
    """Deliver what is due.

    ``sweep(settings, node=node)`` runs first on a full flush (no
    ``only_keys``): the caller passes ``report.sweep_and_prune`` so overdue
    multi-node reports are assembled and queued before delivery. A sweep
    problem is kept in ``summary.sweep_error`` (the caller says it: this
    library prints nothing) and never blocks delivery.
    """
    import time

    ns = settings.notify
    budget = ns.budget_s if budget_s is None else budget_s
    end = time.monotonic() + budget
    assembled: List[str] = []
    sweep_error = ""
    if sweep is not None and only_keys is None:
        try:
            assembled = list(sweep(settings, node=node))
        except Exception as e:  # noqa: BLE001 - a sweep problem must not block delivery
            sweep_error = f"{type(e).__name__}: {e}"
    summary = outbox_for(settings).flush(
        sender(ns),
        budget_s=max(0.0, end - time.monotonic()),
        backoff_base_s=ns.backoff_base_s,
        backoff_max_s=ns.backoff_max_s,
        give_up_after_s=ns.give_up_after_s,
        only_keys=only_keys,
        force=force,
    )
    summary.assembled = assembled
    summary.sweep_error = sweep_error
    return summary


def spawn_flush(settings: "Settings", *, budget_s: float, node: str = "", only_keys: Optional[List[str]] = None,
                sweep: Optional[Callable[..., List[str]]] = None) -> Optional[int]:
    """Deliver in a detached grandchild and return at once (its pid, or None).

    The epilog must not wait for a mail relay. slurmd reads the epilog's
    output until EOF and kills its process group, so the grandchild starts a
    new session and points fds 0-2 at /dev/null. It is bounded by its budget
    (and SIGALRM as a backstop). It execs nothing, so proc.run does not apply.
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(w)
        grandchild = os.read(r, 32)
        os.close(r)
        os.waitpid(pid, 0)
        try:
            return int(grandchild or b"0") or None
        except ValueError:
            return None
    # first child
    try:
        os.close(r)
        os.setsid()
        gpid = os.fork()
        if gpid:
            os.write(w, str(gpid).encode())
            os._exit(0)
        os.close(w)
        import signal

        signal.alarm(int(budget_s) + 5)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        try:
            flush(settings, budget_s=budget_s, node=node, only_keys=only_keys, sweep=sweep)
        finally:
            os._exit(0)
    except BaseException:  # noqa: BLE001
        os._exit(1)
    return None  # not reached
