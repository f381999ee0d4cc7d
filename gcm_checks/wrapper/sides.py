"""The wrapper's side channels while the job runs: alerts and the job comment.

Functions over the wrapper (passed in, never imported: no import circle
with ``launcher``). Nothing here may raise into the pump or change the exit
status.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from gcm_checks.wrapper.streams import say


def on_alert(w: Any, alert: Any) -> None:
    w.state.alerts.append(alert)
    w.dirty = True
    kill = (alert.kind == "stalled" and w.opts.kill_on_stall) or (
        alert.kind == "diverged" and w.opts.kill_on_nan
    ) or (alert.kind == "silent" and w.opts.kill_on_stall)
    if alert.kind in ("stalled", "silent"):
        # A hung job is usually both stalled and silent: one episode, one
        # message (issue 13: one stall sent 2 alert mails). The launcher
        # ends the episode when neither holds any more.
        if w.watcher.new_quiet_episode():
            _notify(w, alert)
    elif alert.kind != "resumed":
        _notify(w, alert)
    if kill and w.state.killed_by is None and w.proc is not None and not w.reaped:
        w.state.killed_by = alert.kind
        note = f"\n[gcm-run] {alert.message}; ending the job (SIGTERM, SIGKILL after {w.opts.kill_grace_s:.0f}s)\n"
        w.log_write(note.encode())
        say(w.opts.err_fd, note)
        try:
            os.killpg(w.proc.pid, signal.SIGTERM)
        except OSError:
            pass
        w.kill_at = time.monotonic() + w.opts.kill_grace_s


def _notify(w: Any, alert: Any) -> None:
    from gcm_checks.wrapper.finish import notify_event

    notify_event(w.view(), alert)


def start_comment_poster(w: Any) -> None:
    from gcm_checks.wrapper import comment as cm

    info = w.state.comment_info
    if w.opts.comment == "off":
        info["enabled"], info["why_not"] = False, "disabled (--no-comment)"
        return
    ok, why = cm.should_comment(w.env)
    if not ok:
        info["enabled"], info["why_not"] = False, why
        return
    send = w.opts.comment_sender
    if send is None:
        try:
            send = cm.slurm_sender()
        except Exception as e:  # noqa: BLE001 - no Slurm module/binary: no comment, job goes on
            info["enabled"], info["why_not"] = False, f"slurm backend unavailable: {e}"
            return
    info["enabled"] = True
    info["job_id"] = w.env["SLURM_JOB_ID"]
    info["interval_s"] = w.opts.comment_interval_s
    w.poster = cm.CommentPoster(w.env["SLURM_JOB_ID"], send, w.opts.comment_interval_s)
