"""Where notifications wait and how one is sent: the outbox a setting names,
and the sender that dispatches an item to its channel's sink under a deadline.

Shared by the report path (notify/__init__) and gcm-run's hook (notify/runs.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict

from gcm_checks.notify.outbox import Outbox

if TYPE_CHECKING:
    from gcm_checks.config.types import Notify, Settings


def outbox_for(settings: "Settings") -> Outbox:
    return Outbox(settings.outbox_dir)


def sender(ns: "Notify"):
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
