"""The live status dict of a wrapped run: what ``<log>.status.json`` holds.

Built from the wrapper's state at one instant. It is also the base of the
exit report (``finish``) and of the job summary the epilog's report reads
(``shared.summary_name``). Pure over its inputs except for the clock.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from typing import Any, Dict, Mapping, Optional

from gcm_checks.wrapper import status as st


def user_name(env: Dict[str, str]) -> str:
    """The account that runs us, from the passwd entry of our uid: ``USER``
    is unset under cron, in containers and in ``env -i``, and a mail to
    ``1000@example.com`` reaches nobody."""
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return env.get("USER") or env.get("LOGNAME") or str(os.getuid())


def signame(sig: Optional[int]) -> Optional[str]:
    if not sig:
        return None
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"SIG{sig}"


def progress_dict(w: Any, running: bool, mono: float) -> dict:
    snap = w.watcher.tracker.snap
    p = snap.to_dict(running=running, mono=mono)
    stalled_s = None
    if running and w.watcher.watchdog.stalled and snap.last_progress_mono is not None:
        stalled_s = round(mono - snap.last_progress_mono, 1)
        p["eta_s"] = None  # no honest ETA while nothing moves: say "stalled 12m"
    p["stalled_s"] = stalled_s
    p["metrics"] = {k: _finite_or_str(v) for k, v in w.watcher.tracker.metrics.items()}
    p["history"] = w.watcher.tracker.history_dict()
    return p


def _finite_or_str(v: float):
    return v if v == v and v not in (float("inf"), float("-inf")) else str(v)


def status_dict(w: Any, state: str) -> dict:
    s = w.state
    o = w.opts
    running = state in ("starting", "running")
    now, mono = time.time(), time.monotonic()
    return {
        "schema": st.SCHEMA,
        "kind": "gcm-run",
        "run_id": s.run_id,
        "name": o.name,
        "state": state,
        "host": st.host(),
        "user": w.user,
        "wrapper_pid": os.getpid(),
        "child_pid": s.child_pid,
        "argv": list(o.argv),
        "cwd": os.getcwd(),
        "log": os.path.abspath(o.log_path),
        "started_at": st.iso(s.started_wall),
        "started_ts": s.started_wall,
        "updated_at": st.iso(now),
        "updated_ts": now,
        "ended_at": st.iso(s.ended_wall),
        "elapsed_s": round((s.ended_wall or now) - s.started_wall, 1),
        "slurm": {k: w.env.get(v) for k, v in (("job_id", "SLURM_JOB_ID"), ("step_id", "SLURM_STEP_ID"),
                                                ("procid", "SLURM_PROCID"), ("job_name", "SLURM_JOB_NAME"),
                                                ("restart_count", "SLURM_RESTART_COUNT"),
                                                ("node", "SLURMD_NODENAME"))},
        "progress": progress_dict(w, running, mono),
        "alerts": [a.to_dict() for a in s.alerts],
        "stragglers": w.stragglers.current() if w.stragglers is not None else [],
        "stragglers_seen": w.stragglers.seen() if w.stragglers is not None else [],
        "straggler_check": w.stragglers.info() if w.stragglers is not None else {"enabled": False},
        "signals_forwarded": list(s.signals_forwarded),
        "killed_by": s.killed_by,
        "exit": None if running else {"code": s.exit_code, "signal": signame(s.signal),
                                      "signal_number": s.signal, "launch_error": s.launch_error},
        "output_bytes": s.output_bytes,
        "notifications": list(s.notifications),
        "problems": [p for p in (s.log_error, s.terminal_error, s.status_error) if p],
        "comment": dict(s.comment_info, **({"last_error": w.poster.last_error, "sent": w.poster.sent}
                                           if w.poster else {})),
        "settings": {"stall_after_s": o.stall_after_s, "stall_auto": o.stall_after_s is None and o.stall_auto,
                     "silent_after_s": o.silent_after_s, "kill_on_stall": o.kill_on_stall,
                     "kill_on_nan": o.kill_on_nan, "notify": o.notify_policy},
    }


def run_id(env: Mapping[str, str]) -> str:
    job = env.get("SLURM_JOB_ID")
    base = f"{st.host()}-{os.getpid()}"
    if job:
        base = f"job{job}.{env.get('SLURM_STEP_ID', 'x')}.{env.get('SLURM_PROCID', '0')}-{base}"
    return f"{base}-{uuid.uuid4().hex[:6]}"
