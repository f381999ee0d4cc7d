"""Where notifications wait and how one is sent: the outbox a setting names,
and the sender that dispatches an item to its channel's sink under a deadline.

Shared by the report path (notify/__init__), admin alerts (notify/admin.py)
and gcm-run (its notice module delivers through ``writable_outbox``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, Mapping

from gcm_checks.notify.outbox import Outbox

if TYPE_CHECKING:
    from gcm_checks.config.types import Notify, Settings


def outbox_for(settings: "Settings") -> Outbox:
    return Outbox(settings.outbox_dir)


def user_outbox(env: Mapping[str, str]) -> str:
    """The job user's own outbox: ``$XDG_CACHE_HOME/gcm-checks/outbox``."""
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gcm-checks", "outbox")


def writable_outbox(settings: "Settings", env: Mapping[str, str]) -> Outbox:
    """The site outbox, or - for gcm-run, which runs as the job user and
    usually cannot write the root-owned one - the user's own outbox; an item
    there is tried at once and kept for the user's next run."""
    box = outbox_for(settings)
    try:
        os.makedirs(os.path.join(box.root, "pending"), mode=0o700, exist_ok=True)
        if os.access(os.path.join(box.root, "pending"), os.W_OK):
            return box
    except OSError:
        pass
    return Outbox(user_outbox(env))


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
