"""Where notifications wait and how one is sent: the outbox a setting names,
and the sender that dispatches an item to its channel's sink under a deadline.

Shared by the report path (notify/__init__) and gcm-run's hook (notify/runs.py).
"""

from __future__ import annotations

from typing import Any, Dict

from gcm_checks.notify.config import NotifySettings
from gcm_checks.notify.outbox import Outbox


def outbox_for(settings: Any) -> Outbox:
    ns = NotifySettings.coerce(settings)
    if ns.outbox_dir:
        return Outbox(ns.outbox_dir)
    from gcm_checks.report.model import ReportSettings

    return Outbox(ReportSettings.coerce(settings).outbox_dir)


def sender(ns: NotifySettings):
    from gcm_checks.deadline import call_with_deadline
    from gcm_checks.notify.sinks import SINKS, SendError

    def send(item: Dict[str, Any], left: float) -> None:
        ch = ns.channel(item["channel"])
        if ch is None:
            raise SendError(f"channel {item['channel']!r} is not configured (kept for when it is)")
        timeout = max(0.1, min(ch.timeout_s, left))
        # Socket timeouts do not cover DNS; the deadline covers everything.
        call_with_deadline(lambda: SINKS[ch.type](ch, item, timeout), timeout + 0.5, f"notify:{ch.name}")

    return send
