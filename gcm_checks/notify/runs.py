"""Notifications for ``gcm-run`` (the in-job wrapper): its exit report and alerts.

Inside a Slurm job the job run gets one message (the epilog's report, which
carries gcm-run's progress through report/runlink.py): gcm-run's exit is not
mailed there, and a stall is one worded alert per episode under the run's
``notification_key``. Outside Slurm, gcm-run mails its own exit.

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
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional

from gcm_checks.notify.config import Channel
from gcm_checks.notify.outbox import Outbox

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings


def _user_outbox(env: Mapping[str, str]) -> str:
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gcm-checks", "outbox")


def _writable_outbox(settings: "Settings", env: Mapping[str, str]) -> Outbox:
    from gcm_checks.notify.delivery import outbox_for

    box = outbox_for(settings)
    try:
        os.makedirs(os.path.join(box.root, "pending"), mode=0o700, exist_ok=True)
        if os.access(os.path.join(box.root, "pending"), os.W_OK):
            return box
    except OSError:
        pass
    return Outbox(_user_outbox(env))


def _words(payload: Mapping[str, Any], kind: str) -> str:
    """The message body in words: what gcm-run saw, never a JSON dump."""
    from gcm_checks.safeio import clean_text

    lines = []
    alert = payload.get("alert") or {}
    if alert.get("message"):
        lines.append(str(alert["message"]))
    p = payload.get("progress") or {}
    if isinstance(p, Mapping):
        if p.get("step") is not None:
            lines.append(f"Last step: {p['step']}" + (f" of {p['total']}" if p.get("total") else ""))
        if p.get("loss") is not None:
            lines.append(f"Last loss: {p['loss']}")
    slurm = payload.get("slurm") or {}
    if slurm.get("job_id"):
        lines.append(f"Slurm job: {slurm['job_id']}")
    ex = payload.get("exit") or {}
    if kind == "exit" and isinstance(ex, Mapping) and (ex.get("code") is not None or ex.get("signal")):
        lines.append(f"Exit: {ex.get('code')}" + (f" (signal {ex['signal']})" if ex.get("signal") else ""))
    if payload.get("log"):
        lines.append(f"Log: {payload['log']}")
    if kind != "exit":
        lines.append("One message per stall: you hear again only if the run stalls again after it resumed.")
    return "\n".join(clean_text(str(x)) for x in lines)


def render_run(channel: Channel, payload: Mapping[str, Any], kind: str, to: List[str]) -> Dict[str, Any]:
    from gcm_checks.notify.sinks import slack_escape
    from gcm_checks.safeio import clean_text

    summary = " ".join(clean_text(str(payload.get("summary") or f"gcm-run {kind}")).split())
    event = "gcm_run_alert" if kind != "exit" else "gcm_run_exit"
    if channel.type == "smtp":
        detail = _words(payload, kind)
        return {
            "to": to,
            "subject": f"[gcm-run] {summary}"[:200],
            "text": f"{summary}\n\n{detail}\n",
            "html": ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>"
                     f"<p><b>{html.escape(summary)}</b></p><pre>{html.escape(detail)}</pre></body></html>"),
        }
    if channel.type == "slack":
        return {"body": {"text": slack_escape(f"[gcm-run] {summary}")}}
    return {"body": {"schema": "gcm-checks/notification", "version": 1, "event": event, "summary": summary, "run": dict(payload)}}


def notify_run(
    payload: Mapping[str, Any],
    kind: str = "exit",
    *,
    settings: Optional["Settings"] = None,
    env: Optional[Mapping[str, str]] = None,
    budget_s: Optional[float] = None,
) -> Dict[str, Any]:
    """Queue and try to deliver one gcm-run report/alert. Returns what happened."""
    from gcm_checks.notify.delivery import sender
    from gcm_checks.notify.keys import notification_key, run_job_key
    from gcm_checks.notify.policy import recipients
    from gcm_checks.report.model import JobInfo

    env = os.environ if env is None else env
    if settings is None:
        from gcm_checks import config

        settings = config.load()
    ns = settings.notify
    slurm = payload.get("slurm") or {}
    # prolog/epilog see SLURM_JOB_RESTART_COUNT, the job's own tasks SLURM_RESTART_COUNT
    restarts = (env.get("SLURM_JOB_RESTART_COUNT") or env.get("SLURM_RESTART_COUNT") or "0").strip()
    job = JobInfo(
        job_id=str(slurm.get("job_id") or env.get("SLURM_JOB_ID") or "nojob"),
        restart_count=int(restarts) if restarts.isdigit() else 0,
        user=env.get("SLURM_JOB_USER") or str(payload.get("user") or ""),
        cluster=env.get("SLURM_CLUSTER_NAME", ""),
        partition=env.get("SLURM_JOB_PARTITION", ""),
        mail_user=env.get("SLURM_JOB_MAIL_USER", ""),
    )
    alert = payload.get("alert") or {}
    in_job = job.job_id != "nojob"
    if kind == "exit" and in_job:
        # One message per job run: the epilog's report carries gcm-run's
        # progress and exit (report/runlink.py); a second mail would be noise.
        from gcm_checks.report.runlink import run_status_path

        return {"sent": False, "why": f"inside Slurm job {job.job_id}: the job's report carries gcm-run's exit",
                "report_hook": run_status_path(env.get("SLURM_JOB_WORK_DIR") or os.getcwd(), run_job_key(env) or job.key)}
    if in_job:
        # A job run's alerts: one per episode (its start names it), whoever repeats it.
        episode = alert.get("episode", alert.get("at"))
        event_id = f"{kind}-{hashlib.sha256(json.dumps(episode, default=str).encode()).hexdigest()[:8]}"
    else:
        # Outside Slurm: one key per run and event.
        event_id = "run-" + kind + "-" + hashlib.sha256(json.dumps(
            [payload.get("run_id"), slurm.get("step_id"), kind, alert], sort_keys=True, default=str).encode()).hexdigest()[:12]
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
        key = notification_key(job.key, job.cluster, ch.name, event_id)
        box.enqueue(key, ch.name, render_run(ch, payload, kind, to), job_key=job.key)
        keys.append(key)
    if not keys:
        return {"sent": False, "why": "no channel wants gcm-run notifications", "skipped": skipped}
    s = box.flush(sender(ns), budget_s=ns.budget_s if budget_s is None else budget_s, only_keys=keys, force=True)
    return {"sent": bool(s.sent) and not s.failed, "delivered": s.sent, "failed": s.failed, "queued": keys,
            "outbox": box.root, "skipped": skipped}
