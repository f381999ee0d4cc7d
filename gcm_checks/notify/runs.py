"""Notifications for ``gcm-run`` (the in-job wrapper): its exit report and alerts.

gcm-run runs as the job user inside the job and has already applied the
job's policy, so this only renders, queues and delivers. It uses the same
channels as job reports except admin channels (those with ``when:``), which
are for the cluster's operators, not a user's training run. As a user it
usually cannot write the root-owned outbox; then the item goes to the user's
own outbox (``$XDG_CACHE_HOME/gcm-checks/outbox``) and is tried right away.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
from typing import Any, Dict, List, Mapping, Optional

from gcm_checks.notify.config import Channel, NotifySettings
from gcm_checks.notify.outbox import Outbox


def _user_outbox(env: Mapping[str, str]) -> str:
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gcm-checks", "outbox")


def _writable_outbox(settings: Any, env: Mapping[str, str]) -> Outbox:
    from gcm_checks.notify import outbox_for

    box = outbox_for(settings)
    try:
        os.makedirs(os.path.join(box.root, "pending"), mode=0o700, exist_ok=True)
        if os.access(os.path.join(box.root, "pending"), os.W_OK):
            return box
    except OSError:
        pass
    return Outbox(_user_outbox(env))


def render_run(channel: Channel, payload: Mapping[str, Any], kind: str, to: List[str]) -> Dict[str, Any]:
    from gcm_checks.notify.sinks import slack_escape
    from gcm_checks.safeio import clean_text

    summary = " ".join(clean_text(str(payload.get("summary") or f"gcm-run {kind}")).split())
    event = "gcm_run_alert" if kind != "exit" else "gcm_run_exit"
    if channel.type == "smtp":
        detail = clean_text(json.dumps(payload, indent=2, default=str))
        return {
            "to": to,
            "subject": f"[gcm-run] {summary}"[:200],
            "text": f"{summary}\n\n{detail}\n",
            "html": f"<p>{html.escape(summary)}</p><pre>{html.escape(detail)}</pre>",
        }
    if channel.type == "slack":
        return {"body": {"text": slack_escape(f"[gcm-run] {summary}")}}
    return {"body": {"schema": "gcm-checks/notification", "version": 1, "event": event, "summary": summary, "run": dict(payload)}}


def notify_run(
    payload: Mapping[str, Any],
    kind: str = "exit",
    *,
    settings: Any = None,
    env: Optional[Mapping[str, str]] = None,
    budget_s: Optional[float] = None,
) -> Dict[str, Any]:
    """Queue and try to deliver one gcm-run report/alert. Returns what happened."""
    from gcm_checks.notify import _sender, idempotency_key
    from gcm_checks.notify.policy import recipients
    from gcm_checks.report.model import JobInfo

    env = os.environ if env is None else env
    if settings is None:
        from gcm_checks import config

        settings = config.load()
    ns = NotifySettings.coerce(settings)
    slurm = payload.get("slurm") or {}
    job = JobInfo(
        job_id=str(slurm.get("job_id") or env.get("SLURM_JOB_ID") or "nojob"),
        user=env.get("SLURM_JOB_USER") or str(payload.get("user") or ""),
        cluster=env.get("SLURM_CLUSTER_NAME", ""),
        partition=env.get("SLURM_JOB_PARTITION", ""),
        mail_user=env.get("SLURM_JOB_MAIL_USER", ""),
    )
    # One key per run and event: an exit is sent once; each alert once.
    alert = payload.get("alert") or {}
    event_id = hashlib.sha256(json.dumps([payload.get("run_id"), slurm.get("step_id"), kind, alert], sort_keys=True, default=str).encode()).hexdigest()[:12]
    box = _writable_outbox(settings, env)
    keys: List[str] = []
    skipped: Dict[str, str] = {}
    for ch in ns.channels:
        if ch.when:
            skipped[ch.name] = "admin channel"
            continue
        to: List[str] = []
        if ch.type == "smtp":
            to = recipients(ns, job)
            if not to:
                skipped[ch.name] = "no e-mail address for user"
                continue
        key = idempotency_key(f"{job.key}/run-{kind}-{event_id}", job.cluster, ch.name)
        box.enqueue(key, ch.name, render_run(ch, payload, kind, to), job_key=job.key)
        keys.append(key)
    if not keys:
        return {"sent": False, "why": "no channel wants gcm-run notifications", "skipped": skipped}
    s = box.flush(_sender(ns), budget_s=ns.budget_s if budget_s is None else budget_s, only_keys=keys, force=True)
    return {"sent": bool(s.sent) and not s.failed, "delivered": s.sent, "failed": s.failed, "queued": keys,
            "outbox": box.root, "skipped": skipped}
