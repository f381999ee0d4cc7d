"""gcm-run's signal forwarding: what Slurm sends the wrapper reaches the job.

Slurm signals the step's processes, which is the wrapper; the job only hears
it if we pass it on, to its whole process group (torch DataLoader workers,
``torchrun`` ranks). A signal that arrives before the launch is held and
forwarded right after it. SIGWINCH also resizes the job's pseudo-terminals.
The handlers run between bytecodes in the main thread: they stay tiny.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any, Dict, List

from gcm_checks.wrapper import streams as sio

# Slurm sends SIGTERM at the time limit (then SIGKILL after KillWait) and
# USR1/USR2 early with ``sbatch --signal``; HUP when a terminal goes away.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP)


class SignalForwarder:
    """Installed around the launch; reads ``w.proc``, ``w.reaped``, ``w.ptys``
    and records each forward in ``w.state.signals_forwarded``."""

    def __init__(self, w: Any) -> None:
        self.w = w
        self.pending: List[int] = []
        self._old_handlers: Dict[int, object] = {}

    def install(self) -> None:
        for sig in FORWARDED:
            try:
                self._old_handlers[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, OSError):  # not the main thread (tests may call us so)
                pass
        try:
            self._old_handlers[signal.SIGWINCH] = signal.signal(signal.SIGWINCH, self._on_winch)
        except (ValueError, OSError):
            pass

    def restore(self) -> None:
        for sig, h in self._old_handlers.items():
            try:
                signal.signal(sig, h)  # type: ignore[arg-type]
            except (ValueError, OSError, TypeError):
                pass

    def launched(self) -> None:
        """The child exists: forward what arrived before it did."""
        for sig in self.pending:
            self.forward(sig)
        self.pending.clear()

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.w.proc is None:
            self.pending.append(signum)
            return
        self.forward(signum)

    def forward(self, signum: int) -> None:
        w = self.w
        rec = {"signal": signal.Signals(signum).name, "at": time.time(), "delivered": False}
        if w.proc is not None and not w.reaped:
            try:
                os.killpg(w.proc.pid, signum)
                rec["delivered"] = True
            except (ProcessLookupError, PermissionError) as e:
                rec["error"] = str(e)
        w.state.signals_forwarded.append(rec)
        w.dirty = True

    def _on_winch(self, signum: int, frame: object) -> None:
        w = self.w
        for master, ours in w.ptys.items():
            sio.copy_winsize(ours, master)
        if w.proc is not None and not w.reaped:
            try:
                os.killpg(w.proc.pid, signal.SIGWINCH)
            except OSError:
                pass
