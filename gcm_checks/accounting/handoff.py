"""The refinement pass's hand-off to the outbox: hold, refresh, correct.

"One message per job run" (docs/reports.md): the epilog may hold a job's
first message for the pass (``hold_notifications``); the pass refreshes a
message still waiting and sends at most one correction, only when a
failure's cause changed (``notify_refined``). Item rewrites follow the
outbox's own lock discipline.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings



def _outbox(settings: "Settings") -> Any:
    from gcm_checks import notify

    return notify.outbox_for(settings)


def job_items(settings: "Settings", job_key: str, state: str) -> List[Dict[str, Any]]:
    return [it for it in _outbox(settings).items(state) if it.get("job_key") == job_key]


def _rewrite_pending(settings: "Settings", key: str, update: Callable[[Dict[str, Any]], bool]) -> bool:
    """Rewrite one pending item through the outbox's public API (its lock
    discipline stays the outbox's business). False when a flush holds it or
    it is gone."""
    return _outbox(settings).rewrite(key, update)


def hold_notifications(settings: "Settings", job_key: str, *, now: Optional[float] = None) -> List[str]:
    """Hold a job's first delivery for ``accounting.notify_wait_s`` (the
    outbox item's ``not_before``) so the refinement pass can correct the
    category first. Call right after
    ``notify.enqueue_report`` (before any flush). Returns the keys held.

    If no refinement comes (slurmdbd down), the hold simply expires and the
    next ``notify flush`` sends the epilog's answer: waiting is bounded.
    """
    acc = settings.accounting
    if acc.notify_wait_s <= 0:
        return []
    now = time.time() if now is None else now
    held = []
    for it in job_items(settings, job_key, "pending"):
        def upd(item: Dict[str, Any]) -> bool:
            if int(item.get("attempts", 0)):
                return False  # already tried: its backoff rules
            # not_before: the outbox's hold, which no flush (not even --now) sends before.
            item["not_before"] = max(float(item.get("not_before") or 0), now + acc.notify_wait_s)
            item["held_for"] = "accounting"
            return True

        if _rewrite_pending(settings, it["key"], upd):
            held.append(it["key"])
    return held


def release_notifications(settings: "Settings", report: Mapping[str, Any], *, now: Optional[float] = None) -> List[str]:
    """Give a job's waiting notifications the refined report and make them due."""
    from gcm_checks import notify

    ns = settings.notify
    now = time.time() if now is None else now
    job_key = (report.get("job") or {}).get("key", "")
    released = []
    for it in job_items(settings, job_key, "pending"):
        ch = ns.channel(it.get("channel", ""))

        def upd(item: Dict[str, Any], ch: Any = ch) -> bool:
            if ch is not None:
                item["payload"] = notify.build_payload(ch, report, list((item.get("payload") or {}).get("to") or []))
            if not int(item.get("attempts", 0)):
                item["next_attempt_at"] = min(float(item.get("next_attempt_at", now)), now)
            item.pop("not_before", None)  # released: due now
            item.pop("held_for", None)
            item["refined_at"] = now
            return True

        if _rewrite_pending(settings, it["key"], upd):
            released.append(it["key"])
    return released


def cause_changed(old: Optional[str], new: Optional[str]) -> bool:
    """Worth a second message: an unknown cause became a known failure, or
    one failure became a different one. success/cancel are never causes."""
    quiet = (None, "", "unknown", "success", "cancelled_user")
    return new not in quiet and old != new


def notify_refined(settings: "Settings", report: Mapping[str, Any], *, now: Optional[float] = None,
                   change: Optional[Mapping[str, Any]] = None) -> List[str]:
    """What the refined report warrants, under "one message per job run":

    - a message still waiting in the outbox gets the refined report;
    - none was queued yet and the refined outcome is mailed by default (a
      NODE_FAIL the epilog read as exit 0): the first one is queued now;
    - one was sent and the cause changed (``cause_changed``): one correction,
      under the run's ``refined`` key, so never a second correction;
    - an outcome not mailed by default (completed, cancelled, requeued)
      never starts a message here, whatever the policy says.
    Returns the keys due for delivery.
    """
    from gcm_checks import notify
    from gcm_checks.report.model import JobInfo

    outcome = report.get("outcome") or {}
    job = JobInfo.from_dict(report.get("job") or {})
    keys = release_notifications(settings, report, now=now)
    if not outcome.get("mailed"):
        return keys
    sent = job_items(settings, job.key, "sent")
    if not sent:
        queued = notify.enqueue_report(report, job, settings, now=now)
    elif change and change.get("after_notification") and cause_changed(change.get("from"), change.get("to")):
        queued = notify.enqueue_report(report, job, settings, now=now, event="refined")
    else:
        queued = {}
    for k, v in queued.items():
        if v == "queued" and k not in keys:
            keys.append(k)
    return keys


__all__ = ["cause_changed", "hold_notifications", "job_items", "notify_refined", "release_notifications"]
