"""Admin alerts: messages for the cluster's operators, not a job's user.

Today one kind: the mass-drain brake (gcm_checks.brake) held back drains
because many nodes failed the same check at once. An alert goes through the
same outbox as job reports (on disk first, retries, one item per key) to
``notify.admin_routes()``: ``notify.admin.channels``, else every admin
channel (``when:``). E-mail goes to ``notify.admin.to`` only; an alert never
falls back to a job user's address.

The caller gives the alert its key. For the brake it is the same on every
node that sees the same episode, so two nodes that both send (they share no
outbox) carry the same ``Idempotency-Key`` / ``dedup_key`` / Message-ID and a
receiver that honours them keeps one (see brake.py for how the nodes avoid
sending twice in the first place).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional

from gcm_checks.notify.config import Channel

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings


def alert_payload(channel: Channel, alert: Mapping[str, Any], key: str, to: List[str]) -> Dict[str, Any]:
    """One alert rendered for one channel: words for people, fields for machines."""
    from gcm_checks.notify.sinks import slack_escape
    from gcm_checks.text import clean_text

    subject = " ".join(clean_text(str(alert.get("subject") or "gcm-checks admin alert")).split())[:200]
    text = clean_text(str(alert.get("text") or subject))
    if channel.type == "smtp":
        return {"to": to, "subject": subject, "text": text + "\n",
                "html": ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>"
                         f"<p><b>{html.escape(subject)}</b></p><pre>{html.escape(text)}</pre></body></html>")}
    if channel.type == "slack":
        return {"body": {"text": slack_escape(f"{subject}\n{text}")}}
    # dedup_key: the field PagerDuty Events v2 and similar receivers group
    # on; the same value as the Idempotency-Key header.
    return {"body": {"schema": "gcm-checks/notification", "version": 1, "event": str(alert.get("event") or "admin_alert"),
                     "dedup_key": key, "summary": subject, "text": text,
                     "alert": {k: v for k, v in alert.items() if k not in ("subject", "text")}}}


def enqueue_alert(settings: "Settings", key: str, alert: Mapping[str, Any], now: Optional[float] = None) -> Dict[str, str]:
    """Queue ``alert`` on every admin route under ``<key>/<channel>``.
    Returns item key -> what happened ("queued", "already known", or why not)."""
    from gcm_checks.notify.delivery import outbox_for

    ns = settings.notify
    box = outbox_for(settings)
    out: Dict[str, str] = {}
    for ch in ns.admin_routes():
        item_key = f"{key}/{ch.name}"
        to: List[str] = []
        if ch.type == "smtp":
            to = list(ns.admin.recipients())
            if not to:
                out[item_key] = "no admin address (notify.admin.to)"
                continue
        added = box.enqueue(item_key, ch.name, alert_payload(ch, alert, item_key, to), job_key=key, now=now)
        out[item_key] = "queued" if added else "already known"
    return out


def send_alert(settings: "Settings", key: str, alert: Mapping[str, Any], *, node: str = "",
               handoff: Optional[str] = None) -> Dict[str, Any]:
    """Queue, then deliver per ``notify.handoff`` (``detach``: a detached
    process, so a prolog never waits on a relay; ``inline``: within
    ``notify.budget_s``; ``queue``: the next ``notify flush``). Never raises."""
    from gcm_checks import notify

    out: Dict[str, Any] = {"key": key}
    try:
        ns = settings.notify
        out["queued"] = queued = enqueue_alert(settings, key, alert)
        keys = [k for k, v in queued.items() if v == "queued"]
        mode = handoff or ns.handoff
        if not ns.admin_routes():
            out["delivery"] = "no admin channel (notify.admin.channels, or a channel with when:)"
        elif not keys or mode == "queue":
            out["delivery"] = "queued"
        elif mode == "inline":
            out["delivery"] = notify.flush(settings, budget_s=ns.budget_s, only_keys=keys, node=node).to_dict()
        else:
            out["delivery"] = {"detached_pid": notify.spawn_flush(settings, budget_s=ns.budget_s, node=node, only_keys=keys)}
    except Exception as e:  # noqa: BLE001 - an alert problem never changes a verdict (rule 2)
        out["error"] = f"{type(e).__name__}: {e}"
    return out


__all__ = ["alert_payload", "enqueue_alert", "send_alert"]
