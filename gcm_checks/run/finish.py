"""At exit (and at each alert): classify, write the report, notify.

Order matters (rule 6): the report is on disk, fsynced, before any
notification is attempted; a notification that fails waits in the outbox
(owned by ``gcm_checks.notify``); nothing here can change the exit status,
because the wrapper has already decided it and every step below is guarded.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Dict, Optional

from gcm_checks.run import status as st

if TYPE_CHECKING:  # pragma: no cover
    from gcm_checks.run.launcher import Wrapper
    from gcm_checks.run.watch import Alert

TAIL_BYTES = 64 * 1024
NOTIFY_TIMEOUT_S = 30.0

# Same words as ``gcm_checks.notify.policy`` (sbatch --extra="gcm:notify=...").
POLICY_ALIASES = {
    "always": "always", "on": "always", "yes": "always", "all": "always",
    "never": "never", "off": "never", "no": "never", "none": "never",
    "on_failure": "on_failure", "on-failure": "on_failure", "failure": "on_failure", "fail": "on_failure",
}


def normalize_policy(text: str) -> str:
    p = POLICY_ALIASES.get((text or "").strip().lower())
    if p is None:
        raise ValueError(f"unknown notify policy {text!r} (always, on_failure, never)")
    return p


def run_failed(report: dict) -> bool:
    ex = report.get("exit") or {}
    return bool(ex.get("code")) or bool(report.get("alerts_fired"))


def classify_run(log_path: str, exit_code: Optional[int], sig: Optional[int], lines_before: int = 0,
                 lines_total: Optional[int] = None) -> Dict[str, Any]:
    """The classifier's verdict on the log tail, or why there is none.

    ``lines_total`` (lines in the log, when the wrapper counted them) lets
    evidence point at the right line even though only the tail is read.
    """
    try:
        from gcm_checks.classify import ClassifyInput, LogText, classify, read_tail
    except ImportError as e:
        return {"available": False, "error": f"classifier not available: {e}"}
    try:
        text, truncated, _size = read_tail(log_path, TAIL_BYTES)
        first_line = 1
        if truncated and lines_total is not None:
            first_line = max(1, lines_total - text.count("\n") + 1)
        inp = ClassifyInput(
            logs=[LogText(os.path.basename(log_path), text, first_line)],
            exit_code=None if sig else exit_code,
            signal=sig or None,
        )
        out = classify(inp).to_dict()
        out["available"] = True
        out["log_truncated"] = bool(truncated)
        return out
    except Exception as e:  # noqa: BLE001 - unknown, not a crash (rule 2)
        return {"available": False, "error": f"classification failed: {type(e).__name__}: {e}"}


def build_report(w: "Wrapper") -> dict:
    report = w.status_dict("exited")
    report["kind"] = "gcm-run-report"
    report["alerts_fired"] = [a.kind for a in w.state.alerts if a.kind != "resumed"]
    sig = w.state.signal
    report["classification"] = classify_run(w.opts.log_path, w.state.exit_code, sig,
                                            lines_total=w.state.log_lines)
    report["summary"] = summary_line(report)
    return report


def summary_line(report: dict) -> str:
    ex = report.get("exit") or {}
    name = report.get("name") or os.path.basename(str((report.get("argv") or ["?"])[0]))
    if ex.get("launch_error"):
        return f"{name}: did not start: {ex['launch_error']}"
    how = f"killed by {ex['signal']}" if ex.get("signal") else f"exit {ex.get('code')}"
    p = report.get("progress") or {}
    at = ""
    if p.get("step") is not None:
        at = f" at step {p['step']}" + (f"/{p['total']}" if p.get("total") else "")
    why = ""
    c = report.get("classification") or {}
    if c.get("available") and c.get("sentence"):
        why = f": {c['sentence']}"
    killed = f" (ended by gcm-run: {report['killed_by']})" if report.get("killed_by") else ""
    return f"{name}: {how}{at}{killed}{why}"


def finish_run(w: "Wrapper") -> None:
    from gcm_checks.run.comment import format_comment

    report = build_report(w)
    rpath = st.report_path(w.opts.log_path)
    try:
        st.write_json_atomic(rpath, report, durable=True)
        report_ok = True
    except OSError as e:
        report_ok = False
        w.state.status_error = f"report not written: {e.strerror or e}"
    # The status file is the live view; leave it in its final state too.
    w._write_status("exited")
    if w._poster is not None:
        code = w.state.exit_code
        word = "done" if code == 0 else (f"killed {report['exit'].get('signal')}" if w.state.signal else f"exit {code}")
        w._poster.final(format_comment(w.tracker.snap, state=word))
    policy = w.opts.notify_policy
    if should_notify(policy, run_failed(report)):
        result = deliver(w, report, kind="exit", report_file=rpath if report_ok else None)
        w.state.notifications.append(result)
        w._write_status("exited")
        if report_ok:
            # The outcome belongs in the record too; the report itself was
            # already durable before we tried.
            report["notifications"] = list(w.state.notifications)
            try:
                st.write_json_atomic(rpath, report)
            except OSError:
                pass


def should_notify(policy: str, failed: bool) -> bool:
    return policy == "always" or (policy == "on_failure" and failed)


def deliver(w: "Wrapper", payload: dict, *, kind: str, report_file: Optional[str]) -> dict:
    """Hand a report to the notifier under a deadline; never raise."""
    notifier = w.opts.notifier or default_notifier
    from gcm_checks.deadline import DeadlineExceeded, call_with_deadline

    try:
        out = call_with_deadline(lambda: notifier(payload, kind), NOTIFY_TIMEOUT_S, what="notify")
        return {"kind": kind, "ok": True, "result": out if isinstance(out, dict) else str(out)}
    except DeadlineExceeded as e:
        return {"kind": kind, "ok": False, "error": str(e)}
    except Exception as e:  # noqa: BLE001 - a failing sink never changes the exit status
        return {"kind": kind, "ok": False, "error": f"{type(e).__name__}: {e}"}


def notify_event(w: "Wrapper", alert: "Alert") -> None:
    """A stall / NaN / silence notice while the job runs: in the background,
    so the output pump never waits on a mail server."""
    if w.opts.notify_policy == "never":
        return
    payload = w.status_dict("running")
    payload["kind"] = "gcm-run-alert"
    payload["alert"] = alert.to_dict()
    payload["summary"] = f"{w.opts.name or os.path.basename(w.opts.argv[0])}: {alert.message}"

    def send() -> None:
        w.state.notifications.append(deliver(w, payload, kind=alert.kind, report_file=None))

    threading.Thread(target=send, name=f"gcm-run:notify:{alert.kind}", daemon=True).start()


def default_notifier(payload: dict, kind: str) -> dict:
    """Hand a gcm-run report or alert to ``gcm_checks.notify``: the same
    channels, policy, payload rendering and outbox as the epilog's job report.

    The run report is dressed as a job report (``gcm_checks.report``) so
    every sink renders and escapes it the usual way. Our ``--notify`` choice
    travels as the job-level token ``gcm:notify=...``, so an admin who forbids
    job overrides still decides. Keys carry the run id and the event kind: a
    stall notice never collides with the epilog's report for the same job.
    A user cannot write the site outbox (root's spool); then a per-user
    outbox next to the index is used, and undelivered items wait there.
    """
    try:
        from gcm_checks import notify
        from gcm_checks.config import load
        from gcm_checks.notify.config import NotifySettings
        from gcm_checks.notify.policy import channel_wants, recipients
        from gcm_checks.report.model import ReportSettings
    except ImportError as e:
        return {"sent": False, "why": f"notification module not available ({e}); report kept on disk"}
    from dataclasses import replace

    settings = load()
    ns = NotifySettings.coerce(settings)
    if not ns.channels:
        return {"sent": False, "why": "no notification channels configured"}
    outdir = ns.outbox_dir or ReportSettings.coerce(settings).outbox_dir
    if not _writable_dir(outdir):
        outdir = os.path.join(os.path.dirname(st.index_dir()), "outbox")
    # Pin the directory: below, notify sees only these notify settings.
    ns = replace(ns, outbox_dir=outdir)
    job, jreport = as_job_report(payload, kind)
    failed = kind != "exit" or run_failed(payload)
    box = notify.outbox_for(ns)
    keys, outcome = [], {}
    for ch in ns.channels:
        key = notify.idempotency_key(f"{job.key}/gcm-run/{payload.get('run_id')}/{kind}", job.cluster, ch.name)
        if not channel_wants(ns, ch, job, failed):
            outcome[key] = "not wanted (policy)"
            continue
        to = recipients(ns, job) if ch.type == "smtp" else []
        if ch.type == "smtp" and not to:
            outcome[key] = "no e-mail address for user"
            continue
        body = notify.build_payload(ch, jreport, to)
        if kind != "exit" and "subject" in body:
            from gcm_checks.run.comment import sanitize

            body["subject"] = sanitize(f"[gcm] job {job.job_id}" + (f" ({job.name})" if job.name else "")
                                       + f": {payload.get('alert', {}).get('message', kind)}", 200)
        added = box.enqueue(key, ch.name, body, job_key=job.key)
        outcome[key] = "queued" if added else "already known"
        if added:
            keys.append(key)
    result: Dict[str, Any] = {"outbox": box.root, "items": outcome}
    if keys:
        summary = notify.flush(ns, budget_s=max(1.0, NOTIFY_TIMEOUT_S - 5.0), only_keys=keys, sweep=False)
        result["flush"] = summary.to_dict()
    return result


def _writable_dir(path: str) -> bool:
    try:
        os.makedirs(os.path.join(path, "pending"), mode=0o700, exist_ok=True)
    except OSError:
        return False
    return os.access(os.path.join(path, "pending"), os.W_OK)


def as_job_report(payload: dict, kind: str) -> "tuple[Any, dict]":
    """(JobInfo, job-report dict) for a gcm-run payload."""
    from gcm_checks.report.build import build_report
    from gcm_checks.report.model import JobInfo

    env = dict(os.environ)
    ex = payload.get("exit") or {}
    sig_no = ex.get("signal_number") or 0
    code = ex.get("code")
    slurm = payload.get("slurm") or {}
    policy = (payload.get("settings") or {}).get("notify") or ""
    extra = " ".join(x for x in (env.get("SLURM_JOB_EXTRA", ""), f"gcm:notify={policy}" if policy else "") if x)
    host = str(payload.get("host") or "")
    if kind == "exit":
        # Slurm's "exit:signal": death by signal S is "0:S", exit N is "N:0".
        exit_status = f"0:{sig_no}" if sig_no else f"{code if code is not None else 0}:0"
        state = "FAILED" if run_failed(payload) else "COMPLETED"
    else:
        exit_status, state = "", "RUNNING"
    job = JobInfo.from_env(
        env,
        job_id=str(slurm.get("job_id") or f"gcm-run-{payload.get('run_id')}"),
        user=env.get("SLURM_JOB_USER") or str(payload.get("user") or ""),
        uid=os.getuid(),
        gid=os.getgid(),
        name=str(payload.get("name") or slurm.get("job_name") or os.path.basename(str((payload.get("argv") or ["?"])[0]))),
        nodes=(host,) if host else (),
        start=payload.get("started_ts"),
        end=payload.get("updated_ts") if kind == "exit" else None,
        exit_status=exit_status,
        state=state,
        work_dir=str(payload.get("cwd") or ""),
        stdout=str(payload.get("log") or ""),
        extra=extra,
    )
    cls = payload.get("classification") if kind == "exit" else None
    if kind != "exit":
        alert = payload.get("alert") or {}
        cls = {"category": f"gcm-run {kind}", "sentence": alert.get("message", kind), "responsibility": "user",
               "evidence": []}
    if cls is not None and not cls.get("available", True):
        cls = None
    notes = [str(payload.get("summary") or "")]
    notes += [a.get("message", "") for a in payload.get("alerts") or () if a.get("kind") != "resumed"]
    logs = [{"name": "gcm-run log", "path": payload.get("log"), "text": _log_tail(payload.get("log"))}]
    report = build_report(job, {host: {"evidence": {"gcm_run": _progress_evidence(payload)}}} if host else {},
                          classification=cls, logs=logs, generated_by="gcm-run", notes=[n for n in notes if n])
    return job, report


def _progress_evidence(payload: dict) -> dict:
    p = payload.get("progress") or {}
    return {k: p.get(k) for k in ("step", "total", "percent", "loss", "eta_s", "last_progress_at", "bad_loss")}


def _log_tail(path: Any, max_bytes: int = 8192) -> str:
    if not path:
        return ""
    try:
        from gcm_checks.classify import read_tail

        return read_tail(str(path), max_bytes)[0]
    except Exception:  # noqa: BLE001 - a missing tail is a note, not a failure
        return ""
