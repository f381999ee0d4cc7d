"""At exit (and at each alert): classify, write the report, notify.

Order matters (rule 6): the report is on disk, fsynced, before any
notification is attempted; a notification that fails waits in the outbox
(owned by ``gcm_checks.notify``); nothing here can change the exit status,
because the wrapper has already decided it and every step below is guarded.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional

from gcm_checks.wrapper import status as st
from gcm_checks.wrapper.options import RunOptions, RunState

if TYPE_CHECKING:  # types only: the exit path imports comment lazily, as before
    from gcm_checks.wrapper.comment import CommentPoster
    from gcm_checks.wrapper.progress import Snapshot
    from gcm_checks.wrapper.stragglers import Stragglers

# Alerts are passed in, never imported (watch.Alert): only its kind,
# message and to_dict() are used here.
Alert = Any


@dataclass(frozen=True)
class RunView:
    """What the exit and alert steps need from the wrapper, and no more.

    The launcher builds one when it calls in (``Wrapper.view``); this module
    never sees the wrapper itself, so it cannot import the launcher (no import
    circle) nor reach into the pump's private state. ``state`` is the
    wrapper's own live RunState: notifications and errors recorded here
    show in its status file.
    """

    opts: RunOptions
    env: Mapping[str, str]
    state: RunState
    status_dict: Callable[[str], dict]  # the status file's document in a given state
    write_status: Callable[[str], None]
    stragglers: Optional["Stragglers"] = None  # None when the check is off
    poster: Optional["CommentPoster"] = None  # None when no job comment is posted
    snap: Optional["Snapshot"] = None  # the progress tracker's latest, for the job comment
    quiet_episodes: int = 0  # stall/silence episodes so far (one notice per episode)

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


def build_report(w: RunView) -> dict:
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


def finish_run(w: RunView) -> None:
    from gcm_checks.wrapper.comment import format_comment

    skip = not_notifying(w.env)
    if not skip and in_slurm_job(w.env):
        skip = (f"inside Slurm job {w.env.get('SLURM_JOB_ID')}: gcm-run's progress goes into the job's one "
                "report, which the epilog sends")
    if skip:
        w.state.notifications.append({"kind": "exit", "ok": True, "skipped": skip})
    report = build_report(w)
    rpath = st.report_path(w.opts.log_path)
    try:
        st.write_run_json(rpath, report, durable=True)
        report_ok = True
    except OSError as e:
        report_ok = False
        w.state.status_error = f"report not written: {e.strerror or e}"
    if w.stragglers is not None:
        # Task 0's last word, where the epilog's job report reads it.
        w.stragglers.final(report)
    if w.poster is not None:
        code = w.state.exit_code
        word = "done" if code == 0 else (f"killed {report['exit'].get('signal')}" if w.state.signal else f"exit {code}")
        seen = w.stragglers.seen() if w.stragglers is not None else []
        w.poster.final(format_comment(w.snap, state=word, stragglers=seen))
    # The status file is the live view; leave it in its final state too.
    w.write_status("exited")
    if not skip and should_notify(w.opts.notify_policy, run_failed(report)):
        result = deliver(w, report, kind="exit", report_file=rpath if report_ok else None)
        w.state.notifications.append(result)
        w.write_status("exited")
        if report_ok:
            # The outcome belongs in the record too; the report itself was
            # already durable before we tried.
            report["notifications"] = list(w.state.notifications)
            try:
                st.write_run_json(rpath, report)
            except OSError:
                pass


def not_notifying(env: Dict[str, str]) -> Optional[str]:
    """Why this wrapper must not notify, or None. Only task 0 of a Slurm step
    notifies: ``srun -n 512 gcm-run ...`` wraps every rank, and one failed job
    must be one message, not 512 (the epilog's job report covers every node)."""
    procid = env.get("SLURM_PROCID", "0")
    return None if procid in ("", "0") else f"task {procid}: only task 0 notifies"


def in_slurm_job(env: Mapping[str, str]) -> bool:
    return bool(env.get("SLURM_JOB_ID"))


def should_notify(policy: str, failed: bool) -> bool:
    return policy == "always" or (policy == "on_failure" and failed)


def deliver(w: RunView, payload: dict, *, kind: str, report_file: Optional[str]) -> dict:
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


def notify_event(w: RunView, alert: Alert) -> None:
    """A stall / NaN / silence notice while the job runs: in the background,
    so the output pump never waits on a mail server."""
    if w.opts.notify_policy == "never" or not_notifying(w.env):
        return
    payload = w.status_dict("running")
    payload["kind"] = "gcm-run-alert"
    payload["alert"] = alert.to_dict()
    payload["summary"] = f"{w.opts.name or os.path.basename(w.opts.argv[0])}: {alert.message}"
    # One key per episode (notify.notification_key, event "stall-<n>"): a
    # stall and the silence of the same hang are one episode.
    if alert.kind in ("stalled", "silent"):
        payload["episode"] = w.quiet_episodes or 1
        payload["event"] = f"stall-{payload['episode']}"
    else:
        payload["episode"] = sum(1 for a in w.state.alerts if a.kind == alert.kind)
        payload["event"] = f"{alert.kind}-{payload['episode']}"

    def send() -> None:
        w.state.notifications.append(deliver(w, payload, kind=alert.kind, report_file=None))

    threading.Thread(target=send, name=f"gcm-run:notify:{alert.kind}", daemon=True).start()


def default_notifier(payload: dict, kind: str) -> dict:
    """Deliver a gcm-run exit report or alert through ``gcm_checks.notify``.

    The exit report is rebuilt as a job report (``run.notice.exit_report``:
    headline, cause, evidence, budgeted log tail, progress curves); an alert
    is a few sentences. gcm-run has already applied ``--notify``.
    """
    try:
        from gcm_checks.wrapper import notice
    except ImportError as e:  # pragma: no cover - notify/report not installed
        return {"sent": False, "why": f"notification module not available ({e}); report kept on disk"}
    from gcm_checks import config

    env = os.environ
    settings = config.load()
    if kind == "exit":
        report = notice.exit_report(payload, payload.get("classification"), env, settings)
        job = notice.job_for_run(payload, env)
        # The job report's own key: outside Slurm the run is the job.
        return notice.deliver("exit", "", job, report=report, settings=settings, env=env)
    job = alert_job(payload, env)
    words = notice.alert_text(payload, payload.get("alert") or {})
    event = str(payload.get("event") or f"{kind}-{payload.get('episode', 1)}")
    return notice.deliver(kind, event, job, words=words, settings=settings, env=env)


def alert_job(payload: Mapping[str, Any], env: Mapping[str, str]) -> Any:
    """The job an alert is about: the Slurm job (its key: id + requeue
    count), or the run itself outside Slurm."""
    if not env.get("SLURM_JOB_ID"):
        from gcm_checks.wrapper.notice import job_for_run

        return job_for_run(payload, env)
    from gcm_checks.report.model import JobInfo

    # Inside the job Slurm says SLURM_RESTART_COUNT; the prolog/epilog say
    # SLURM_JOB_RESTART_COUNT. Either gives the key the epilog's report uses.
    restarts = env.get("SLURM_RESTART_COUNT") or env.get("SLURM_JOB_RESTART_COUNT") or ""
    return JobInfo(job_id=env["SLURM_JOB_ID"], user=env.get("SLURM_JOB_USER") or str(payload.get("user") or ""),
                   name=env.get("SLURM_JOB_NAME", ""), cluster=env.get("SLURM_CLUSTER_NAME", ""),
                   partition=env.get("SLURM_JOB_PARTITION", ""), mail_user=env.get("SLURM_JOB_MAIL_USER", ""),
                   restart_count=int(restarts) if restarts.isdigit() else 0)
