"""Progress in the Slurm job comment, so ``squeue -o "%.10i %.9T %.50k"``
shows it across the cluster.

Only ``gcm_checks.slurm`` talks to Slurm (rule 3); this module builds the text,
sanitises it (it comes from a user's program output and lands in slurmctld's
state and in other people's terminals) and rate-limits updates: every update
is an RPC to slurmctld, and a thousand jobs updating every second would be a
self-inflicted denial of service. Default: at most one update a minute.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Callable, Dict, Optional, Sequence

from gcm_checks.text import ascii_line
from gcm_checks.wrapper.progress import Snapshot
from gcm_checks.wrapper.watch import fmt_duration

PREFIX = "gcm:"
MAX_LEN = 120  # squeue %k shows what fits; slurmctld keeps it in every job record
DEFAULT_INTERVAL_S = 60.0
ENV_INTERVAL = "GCM_RUN_COMMENT_INTERVAL"  # seconds; tests and demos shorten it


def sanitize(text: str, max_len: int = MAX_LEN) -> str:
    """Printable ASCII only, whitespace collapsed, bounded (``text.ascii_line``)."""
    return ascii_line(text, max_len)


def _loss_text(loss: Optional[float]) -> str:
    if loss is None:
        return ""
    if loss != loss or loss in (float("inf"), float("-inf")):
        return f" loss {loss}"
    return f" loss {loss:.4g}"


def format_comment(snap: Snapshot, *, state: str = "running", alert: str = "", now_mono: Optional[float] = None,
                   stalled: bool = False, stragglers: Sequence[dict] = ()) -> str:
    """``gcm: 40% step 4000/10000 eta 2h13m loss 0.53 slow: gpu-n2 -23%``

    During a stall the ETA is replaced by how long nothing has moved
    (``STALLED 12m``): a frozen ETA on a hung job misleads.
    """
    d = snap.to_dict(running=(state == "running"), mono=now_mono)
    parts = [PREFIX]
    if state != "running":
        parts.append(state)
    if alert:
        parts.append(alert.upper())
    if stalled and state == "running":
        idle = (now_mono - snap.last_progress_mono) if now_mono is not None and snap.last_progress_mono is not None else None
        parts.append("STALLED" + (f" {fmt_duration(idle)}" if idle is not None else ""))
    if d["percent"] is not None:
        parts.append(f"{d['percent']:.0f}%")
    if snap.step is not None:
        parts.append(f"step {int(snap.step)}" + (f"/{int(snap.total)}" if snap.total else ""))
    if state == "running" and not stalled and d["eta_s"] is not None:
        parts.append(f"eta {fmt_duration(d['eta_s'])}")
    text = " ".join(parts) + _loss_text(snap.loss)
    if snap.step is None and snap.loss is None and snap.percent is None and state == "running" and not alert:
        text = f"{PREFIX} running, no progress seen yet"
    slow = straggler_text(stragglers)
    if slow:
        text += " " + slow
    return sanitize(text)


def straggler_text(stragglers: Sequence[dict]) -> str:
    """``slow: gpu-n2 -23%, gpu-n7 -21%``: worst first, at most three."""
    items = []
    for s in sorted(stragglers, key=lambda x: x.get("ratio", 0))[:3]:
        try:
            items.append(f"{s['node']} {round(100 * (float(s['ratio']) - 1)):+d}%")
        except (KeyError, TypeError, ValueError):
            continue
    return ("slow: " + ", ".join(items)) if items else ""


def interval_from_env(env: Optional[Dict[str, str]] = None, default: float = DEFAULT_INTERVAL_S) -> float:
    env = os.environ if env is None else env
    try:
        v = float(env.get(ENV_INTERVAL, ""))
        return max(0.0, v)
    except ValueError:
        return default


class CommentPoster:
    """Posts the latest comment from one background thread.

    The output pump never waits on slurmctld: ``offer`` only stores the newest
    text; the thread sends it when the interval allows. A failing backend is
    remembered (``last_error``) and retried at the next interval; it never
    raises into the wrapper (rule 6: reporting cannot change the exit status).
    """

    def __init__(self, job_id: str, send: Callable[[str, str], None], interval_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.job_id = job_id
        self._send = send
        self.interval_s = interval_s
        self._clock = clock
        self._cv = threading.Condition()
        self._pending: Optional[str] = None
        self._last_sent_text: Optional[str] = None
        self._last_sent_at: Optional[float] = None
        self._stop = False
        self.sent = 0
        self.last_error: Optional[str] = None
        self._thread = threading.Thread(target=self._loop, name="gcm-run:comment", daemon=True)
        self._thread.start()

    def offer(self, text: str) -> None:
        with self._cv:
            if text != self._last_sent_text:
                self._pending = text
                self._cv.notify()

    def _due_in(self) -> float:
        if self._last_sent_at is None:
            return 0.0
        return self._last_sent_at + self.interval_s - self._clock()

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._stop and (self._pending is None or self._due_in() > 0):
                    self._cv.wait(timeout=None if self._pending is None else max(0.01, self._due_in()))
                if self._stop:
                    return
                text, self._pending = self._pending, None
                self._last_sent_at = self._clock()
            self._post(text)

    def _post(self, text: Optional[str]) -> None:
        if text is None:
            return
        try:
            self._send(self.job_id, text)
            self._last_sent_text = text
            self.sent += 1
            self.last_error = None
        except Exception as e:  # noqa: BLE001 - never let Slurm trouble reach the pump
            self.last_error = f"{type(e).__name__}: {e}"[:300]

    def final(self, text: str, timeout: float = 10.0) -> None:
        """Stop the thread and post one last comment, bypassing the rate limit
        (the job is ending; one more RPC is fine), under a deadline."""
        with self._cv:
            self._stop = True
            self._cv.notify()
        self._thread.join(timeout=1.0)
        from gcm_checks.deadline import DeadlineExceeded, call_with_deadline

        try:
            call_with_deadline(lambda: self._post(text), timeout, what="job comment")
        except DeadlineExceeded as e:
            self.last_error = str(e)


def slurm_sender(dry_run: bool = False) -> Callable[[str, str], None]:
    """The one way to set the comment: through ``gcm_checks.slurm``."""
    import io

    from gcm_checks import slurm  # imported lazily: only jobs under Slurm pay

    # A dry-run backend would print "would run scontrol ..." into the job's
    # own stderr; give it a sink of its own.
    backend = slurm.backend_from_settings(None, dry_run=dry_run, out=io.StringIO())
    if isinstance(backend, slurm.DryRunBackend) and not dry_run:
        # No scontrol here: typically a job inside a container image.
        raise RuntimeError("no scontrol on this host (a container?)")

    def send(job_id: str, text: str) -> None:
        backend.set_job_comment(job_id, text)

    return send


def should_comment(env: Dict[str, str]) -> "tuple[bool, str]":
    """(yes, why not). Only task 0 of a job writes: every rank of a 512-GPU
    srun wrapping its own process must not race to update one comment. A
    comment the user set themselves (``sbatch --comment``) is theirs: keep it,
    as we never overwrite someone else's drain reason."""
    job = env.get("SLURM_JOB_ID")
    if not job:
        return False, "not under Slurm"
    if env.get("SLURM_PROCID", "0") not in ("", "0"):
        return False, f"task {env.get('SLURM_PROCID')} (only task 0 updates the comment)"
    own = env.get("SLURM_JOB_COMMENT", "")
    if own and not own.startswith(PREFIX):
        return False, "the job has its own comment"
    return True, ""
