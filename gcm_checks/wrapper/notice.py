"""What gcm-run tells people, built with the job report's own builders.

- Outside Slurm, the exit notice IS a job report (``report.build`` /
  ``report.render``): headline, cause, evidence, a budgeted log tail whose
  cut is said out loud, plus the training-progress section and its curves.
- Inside a Slurm job, gcm-run sends no exit notice: its status becomes the
  progress section of the job's one report (``report.progress.attach``),
  mailed once by the epilog (issue 13: a cancelled gcm-run job sent 4 mails).
- A stall, a silence or a NaN loss while the job runs is one short message
  in words per episode, never a JSON dump.

Delivery goes through ``gcm_checks.notify`` (channels, outbox, retries); the
notification key is the job's (``JobInfo.key``: id + requeue count) with the
event appended, so a retry never doubles a message.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Dict, List, Mapping, Optional


def job_for_run(status: Mapping[str, Any], env: Mapping[str, str]) -> Any:
    """The ``JobInfo`` the report builders want, for a run outside Slurm."""
    from gcm_checks.report.model import JobInfo

    ex = status.get("exit") or {}
    code, sig = ex.get("code"), ex.get("signal_number")
    if sig:
        exit_status, state = f"0:{sig}", "CANCELLED" if sig in (2, 15, 1) else "FAILED"
    else:
        exit_status, state = f"{code or 0}:0", "COMPLETED" if not code else "FAILED"
    argv = status.get("argv") or ["?"]
    return JobInfo(
        job_id=str(status.get("run_id") or "gcm-run"),
        user=str(status.get("user") or ""),
        uid=os.getuid(), gid=os.getgid(),
        name=str(status.get("name") or os.path.basename(str(argv[0]))),
        start=status.get("started_ts"), end=status.get("updated_ts"),
        exit_status=exit_status, state=state,
        work_dir=str(status.get("cwd") or ""), stdout=str(status.get("log") or ""),
        mail_user=env.get("GCM_RUN_MAIL", ""),
    )


def exit_report(status: Mapping[str, Any], classification: Optional[Mapping[str, Any]], env: Mapping[str, str],
                settings: Any) -> Dict[str, Any]:
    """A report of the job-report schema for a run outside Slurm."""
    from gcm_checks.report import build
    from gcm_checks.report.progress import from_status

    job = job_for_run(status, env)
    logs = build.collect_logs(job, settings.report)
    cls = dict(classification) if classification and classification.get("available") else None
    notes = [] if cls or not classification else [str(classification.get("error") or "not classified")]
    report = build.build_report(job, {}, classification=cls, logs=logs,
                                generated_by=f"gcm-run@{socket.gethostname().split('.')[0]}", notes=notes)
    report["progress"] = from_status(status)
    try:  # the job report's own gcm-run section, where report.runlink exists
        from gcm_checks.report.runlink import run_section

        report["run"] = run_section(status)
    except ImportError:
        pass
    return report


def alert_text(status: Mapping[str, Any], alert: Mapping[str, Any]) -> Dict[str, str]:
    """Subject and body of a stall / silence / NaN message, in words."""
    from gcm_checks.report.progress import summary_lines
    from gcm_checks.text import clean_text, one_line

    slurm = status.get("slurm") or {}
    name = status.get("name") or os.path.basename(str((status.get("argv") or ["?"])[0]))
    who = f"job {slurm['job_id']} ({name})" if slurm.get("job_id") else str(name)
    what = {"stalled": "stalled", "silent": "went silent", "diverged": "loss is NaN/inf"}.get(str(alert.get("kind")), str(alert.get("kind")))
    subject = one_line(f"[gcm-run] {who} {what}")[:200]
    body = [clean_text(f"{who} on {status.get('host')}: {alert.get('message')}."), ""]
    from gcm_checks.report.progress import from_status

    body += summary_lines({"progress": dict(from_status(status), alerts=[])})
    body += ["", "The job is still running; gcm-run will not write again about this episode.",
             f"Log: {status.get('log')}", f"Status: gcm-checks jobs {status.get('log')}.status.json"]
    if alert.get("kind") == "stalled":
        body.append("If it hangs in a collective, py-spy dump --pid <rank pid> shows where.")
    return {"subject": subject, "text": "\n".join(body) + "\n"}


def _key(notify: Any, job: Any, channel: str, event: str) -> str:
    """The job run's notification key (``notify.notification_key``: the job
    report's key, plus ``/<event>`` for the few other messages of a run)."""
    fn = getattr(notify, "notification_key", None)
    if fn is not None:
        return fn(job.key, job.cluster, channel, event)
    base = notify.idempotency_key(job.key, job.cluster, channel)
    return f"{base}/{event}" if event else base


def deliver(kind: str, event: str, job: Any, *, report: Optional[Mapping[str, Any]] = None,
            words: Optional[Mapping[str, str]] = None, settings: Any = None, env: Optional[Mapping[str, str]] = None,
            budget_s: Optional[float] = None) -> Dict[str, Any]:
    """Queue one notice per user channel and try it now. Returns what happened."""
    from gcm_checks import notify
    from gcm_checks.notify.policy import recipients
    from gcm_checks.notify.delivery import writable_outbox as _writable_outbox
    from gcm_checks.notify.sinks import slack_escape

    env = os.environ if env is None else env
    if settings is None:
        from gcm_checks import config

        settings = config.load()
    ns = settings.notify
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
        if report is not None:
            payload = notify.build_payload(ch, report, to)
        else:
            w = words or {}
            if ch.type == "smtp":
                payload = {"to": to, "subject": w.get("subject", ""), "text": w.get("text", "")}
            elif ch.type == "slack":
                payload = {"body": {"text": slack_escape(w.get("subject", "") + "\n" + w.get("text", ""))}}
            else:
                payload = {"body": {"schema": "gcm-checks/notification", "version": 1, "event": f"gcm_run_{kind}",
                                    "summary": w.get("subject", ""), "text": w.get("text", "")}}
        key = _key(notify, job, ch.name, event)
        box.enqueue(key, ch.name, payload, job_key=job.key)
        keys.append(key)
    if not keys:
        return {"sent": False, "why": "no channel wants gcm-run notifications", "skipped": skipped}
    s = box.flush(notify.sender(ns), budget_s=ns.budget_s if budget_s is None else budget_s, only_keys=keys, force=True)
    return {"sent": bool(s.sent) and not s.failed, "delivered": s.sent, "failed": s.failed, "queued": keys,
            "outbox": box.root, "skipped": skipped}
