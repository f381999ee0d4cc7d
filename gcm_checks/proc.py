"""The one way gcm-checks runs another process.

Every call has a required timeout, runs in its own process group and, on
timeout, the whole group is killed: ``dcgmi`` hangs when nv-hostengine does and
``scontrol`` hangs when slurmctld is unreachable, and a prolog must never
outlive its budget (STYLE.md practice 5).
"""

from __future__ import annotations

import enum
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence


class Outcome(str, enum.Enum):
    OK = "ok"
    NONZERO = "nonzero"
    TIMEOUT = "timeout"
    MISSING = "missing"  # binary not found / not executable


@dataclass(frozen=True)
class ProcResult:
    argv: tuple
    outcome: Outcome
    returncode: Optional[int]
    stdout: str
    stderr: str
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK

    def describe(self) -> str:
        """One line for a log or an ``unknown`` result."""
        cmd = os.path.basename(str(self.argv[0])) if self.argv else "?"
        if self.outcome is Outcome.MISSING:
            return f"{cmd}: not found ({self.stderr.strip()})"
        if self.outcome is Outcome.TIMEOUT:
            return f"{cmd}: no answer within {self.duration_s:.1f}s (killed)"
        if self.outcome is Outcome.NONZERO:
            tail = (self.stderr.strip() or self.stdout.strip()).splitlines()[-1:] or [""]
            return f"{cmd}: exit {self.returncode}: {tail[0][:200]}"
        return f"{cmd}: ok"


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Optional[Mapping[str, str]] = None,
    input_text: Optional[str] = None,
    cwd: Optional[str] = None,
) -> ProcResult:
    """Run argv (never through a shell) with a hard deadline.

    ``timeout`` is keyword-only and required on purpose.
    """
    argv = tuple(str(a) for a in argv)
    start = time.monotonic()
    try:
        p = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,  # own process group, so we can kill all of it
            text=True,
            errors="replace",
        )
    except (FileNotFoundError, PermissionError, NotADirectoryError) as e:
        return ProcResult(argv, Outcome.MISSING, None, "", str(e), time.monotonic() - start)
    try:
        out, err = p.communicate(input=input_text, timeout=max(0.0, timeout))
    except subprocess.TimeoutExpired:
        _kill_group(p)
        try:
            out, err = p.communicate(timeout=1.0)
        except subprocess.TimeoutExpired:
            # A child in uninterruptible sleep (D state, e.g. on a wedged
            # driver) cannot be reaped; abandon it rather than wait.
            out, err = "", ""
        return ProcResult(argv, Outcome.TIMEOUT, None, out or "", err or "", time.monotonic() - start)
    outcome = Outcome.OK if p.returncode == 0 else Outcome.NONZERO
    return ProcResult(argv, outcome, p.returncode, out, err, time.monotonic() - start)


class LineStream:
    """Read a process's stdout line by line under a hard deadline, in constant
    memory (``sacct`` over a fleet's week prints a million rows).

    Iterate it for the lines (without their newline); afterwards ``result``
    says how the process ended (``stdout`` is empty: it was streamed). A
    watchdog kills the whole process group at the deadline, so a consumer
    never waits longer than ``timeout``. stderr goes to a temporary file and
    only its last 4 KiB are kept.
    """

    def __init__(self, argv: Sequence[str], *, timeout: float, env: Optional[Mapping[str, str]] = None):
        self.argv = tuple(str(a) for a in argv)
        self.timeout = timeout
        self.env = env
        self.result: Optional[ProcResult] = None

    def __iter__(self):  # type: ignore[no-untyped-def]
        import tempfile
        import threading

        start = time.monotonic()
        err = tempfile.TemporaryFile()
        try:
            try:
                p = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                     env=dict(self.env) if self.env is not None else None, start_new_session=True,
                                     bufsize=1 << 20)
            except (FileNotFoundError, PermissionError, NotADirectoryError) as e:
                self.result = ProcResult(self.argv, Outcome.MISSING, None, "", str(e), time.monotonic() - start)
                return
            fired = threading.Event()

            def kill() -> None:
                fired.set()
                _kill_group(p)

            timer = threading.Timer(max(0.0, self.timeout), kill)
            timer.daemon = True
            timer.start()
            try:
                assert p.stdout is not None
                for raw in p.stdout:
                    yield raw.decode("utf-8", "replace").rstrip("\r\n")
                try:
                    p.wait(timeout=max(0.1, self.timeout - (time.monotonic() - start)))
                except subprocess.TimeoutExpired:
                    kill()
            finally:
                timer.cancel()
                if p.poll() is None:  # the consumer stopped early: do not leave it running
                    _kill_group(p)
                    try:
                        p.wait(timeout=1.0)
                    except subprocess.TimeoutExpired:
                        pass
                p.stdout.close()  # type: ignore[union-attr]
            err.seek(0, os.SEEK_END)
            size = err.tell()
            err.seek(max(0, size - 4096))
            tail = err.read().decode("utf-8", "replace")
            if fired.is_set():
                outcome = Outcome.TIMEOUT
            else:
                outcome = Outcome.OK if p.returncode == 0 else Outcome.NONZERO
            self.result = ProcResult(self.argv, outcome, None if fired.is_set() else p.returncode, "", tail,
                                     time.monotonic() - start)
        finally:
            err.close()


def _kill_group(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            p.kill()
        except ProcessLookupError:
            pass


def which(name: str, search: Sequence[str] = ("/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin", "/usr/local/sbin", "/opt/slurm/bin")) -> Optional[str]:
    """Find a binary without relying on PATH: a prolog has none (Slurm 22.05)."""
    if os.sep in name:
        return name if os.access(name, os.X_OK) else None
    dirs = list(search)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if d and d not in dirs:
            dirs.append(d)
    for d in dirs:
        cand = os.path.join(d, name)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None
