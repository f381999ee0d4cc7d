"""Spawn the wrapped command, pump its output, forward signals, keep its status.

Why the child is not started through ``gcm_checks.proc.run``: that helper is
for short calls with a deadline and captured output. Here the child *is* the
job; its deadline is Slurm's time limit, which arrives as a signal we forward,
and its output must stream through live. The same safety properties still
hold: argv only (never a shell), its own process group (so a signal reaches
torch DataLoader workers and ``torchrun`` ranks too), and nothing we do after
the launch can block on it.

Exit transparency: the wrapper returns N for exit N and 128+S for death by
signal S, like a shell, so ``sbatch`` and ``sacct`` see what they would have
seen without us. Status files, the job comment and notifications are
best-effort side channels; none can change that number (rule 6).
"""

from __future__ import annotations

import errno
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional

from gcm_checks.run import status as st
from gcm_checks.run.progress import ChunkScanner, Tracker
from gcm_checks.run.watch import Alert, Watchdog

# Slurm sends SIGTERM at the time limit (then SIGKILL after KillWait) and
# USR1/USR2 early with ``sbatch --signal``; HUP when a terminal goes away.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP)

EXIT_SETUP = 2  # could not create the log or run record: nothing launched
EXIT_NOT_EXECUTABLE = 126
EXIT_NOT_FOUND = 127

READ_SIZE = 1 << 16  # larger reads cost an mmap/munmap each (malloc threshold)
# After a small read from a pipe, wait this long before the next one so that
# a child printing line by line is read in batches: at 10,000 lines/s that is
# ~50 reads/s instead of 10,000, which keeps the pump under 3% of a core.
# The first bytes after a quiet spell are still forwarded at once; only the
# rest of a burst waits, by at most this much. Big reads never wait, and the
# pipe is enlarged (PIPE_SIZE) so the child never blocks while we wait: the
# wrapper must not slow down a program that prints a lot. Ptys are never
# waited on: their buffer is a few KiB, and a person is watching.
COALESCE_S = 0.02
COALESCE_BELOW = 1 << 14
PIPE_SIZE = 1 << 20
DRAIN_AFTER_EXIT_S = 2.0  # a grandchild holding the pipe must not keep us alive


@dataclass
class RunOptions:
    argv: List[str]
    log_path: str
    name: str = ""
    notify_policy: str = "on_failure"
    stall_after_s: Optional[float] = None
    silent_after_s: Optional[float] = None
    kill_on_stall: bool = False
    kill_on_nan: bool = False
    kill_grace_s: float = 30.0
    pty: str = "auto"  # auto | always | never
    comment: str = "auto"  # auto | off
    comment_interval_s: float = 60.0
    status_interval_s: float = 2.0
    tick_s: float = 1.0
    out_fd: int = 1
    err_fd: int = 2
    env: Optional[Mapping[str, str]] = None
    index_dir: Optional[str] = None
    # Hooks for tests and for the lead's wiring; None = the real thing.
    comment_sender: Optional[Callable[[str, str], None]] = None
    notifier: Optional[Callable[[dict, str], dict]] = None


@dataclass
class RunState:
    """Everything the wrapper learned; becomes the status file and the report."""

    run_id: str
    opts: RunOptions
    started_wall: float
    started_mono: float
    child_pid: Optional[int] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    launch_error: Optional[str] = None
    signals_forwarded: List[dict] = field(default_factory=list)
    alerts: List[Alert] = field(default_factory=list)
    killed_by: Optional[str] = None
    log_error: Optional[str] = None
    terminal_error: Optional[str] = None
    status_error: Optional[str] = None
    comment_info: Dict[str, object] = field(default_factory=dict)
    notifications: List[dict] = field(default_factory=list)
    output_bytes: int = 0
    log_lines: Optional[int] = None  # lines in the log; None if it held older runs
    ended_wall: Optional[float] = None


class Wrapper:
    def __init__(self, opts: RunOptions) -> None:
        self.opts = opts
        self.env: Dict[str, str] = dict(os.environ if opts.env is None else opts.env)
        now_w, now_m = time.time(), time.monotonic()
        self.state = RunState(run_id=_run_id(self.env), opts=opts, started_wall=now_w, started_mono=now_m)
        self.tracker = Tracker()
        self.scanner = ChunkScanner(self.tracker)
        self.watchdog = Watchdog(opts.stall_after_s, opts.silent_after_s, now_m)
        self.log_fd: Optional[int] = None
        self.status_file = st.status_path(opts.log_path)
        self.index_entry: Optional[str] = None
        self.proc: Optional[subprocess.Popen] = None
        self._pending_signals: List[int] = []
        self._old_handlers: Dict[int, object] = {}
        self._reaped = False
        self._poster = None
        self._kill_at: Optional[float] = None
        self._last_status_mono = 0.0
        self._dirty = True

    # ------------------------------------------------------------ public

    def run(self) -> int:
        err = self._prepare()
        if err:
            _say(self.opts.err_fd, f"gcm-run: {err}; nothing was launched\n")
            return EXIT_SETUP
        self._install_signal_handlers()
        try:
            code = self._launch_and_pump()
        finally:
            self._restore_signal_handlers()
        return self._finish(code)

    # ------------------------------------------------------------ setup

    def _prepare(self) -> Optional[str]:
        """Create the log and the run record, durably, before any launch."""
        path = self.opts.log_path
        try:
            d = os.path.dirname(os.path.abspath(path))
            os.makedirs(d, exist_ok=True)
            # Append: a requeued Slurm job reruns with the same log name, and
            # the first attempt's output is evidence too.
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
            if os.geteuid() == 0:
                # Rule 5: as root, never write through a link someone planted.
                flags |= os.O_NOFOLLOW
            self.log_fd = os.open(path, flags, 0o644)
            if os.fstat(self.log_fd).st_size == 0:
                self.state.log_lines = 0
            os.fsync(self.log_fd)
            self._write_status("starting", durable=True)
            st.fsync_dir(d)
        except OSError as e:
            if self.log_fd is not None:
                os.close(self.log_fd)
                self.log_fd = None
            return f"cannot create the log or run record at {path!r}: {e.strerror or e}"
        idx = self.opts.index_dir or st.index_dir(self.env)
        self.index_entry = st.register_run(idx, self.state.run_id, self.status_file)
        return None

    def _child_env(self) -> Dict[str, str]:
        env = dict(self.env)
        # Python buffers stdout in 8 KiB blocks when it is not a terminal,
        # which would make progress (and the last words before a crash)
        # arrive late or never. Respect an explicit setting.
        env.setdefault("PYTHONUNBUFFERED", "1")
        env["GCM_RUN_STATUS"] = os.path.abspath(self.status_file)
        env["GCM_RUN_LOG"] = os.path.abspath(self.opts.log_path)
        return env

    # ------------------------------------------------------------ signals

    def _install_signal_handlers(self) -> None:
        for sig in FORWARDED:
            try:
                self._old_handlers[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, OSError):  # not the main thread (tests may call us so)
                pass
        try:
            self._old_handlers[signal.SIGWINCH] = signal.signal(signal.SIGWINCH, self._on_winch)
        except (ValueError, OSError):
            pass

    def _restore_signal_handlers(self) -> None:
        for sig, h in self._old_handlers.items():
            try:
                signal.signal(sig, h)  # type: ignore[arg-type]
            except (ValueError, OSError, TypeError):
                pass

    def _on_signal(self, signum: int, frame: object) -> None:
        # Runs between bytecodes in the main thread: keep it tiny.
        if self.proc is None:
            self._pending_signals.append(signum)
            return
        self._forward(signum)

    def _forward(self, signum: int) -> None:
        rec = {"signal": signal.Signals(signum).name, "at": time.time(), "delivered": False}
        if self.proc is not None and not self._reaped:
            try:
                os.killpg(self.proc.pid, signum)
                rec["delivered"] = True
            except (ProcessLookupError, PermissionError) as e:
                rec["error"] = str(e)
        self.state.signals_forwarded.append(rec)
        self._dirty = True

    def _on_winch(self, signum: int, frame: object) -> None:
        for master, ours in getattr(self, "_ptys", {}).items():
            _copy_winsize(ours, master)
        if self.proc is not None and not self._reaped:
            try:
                os.killpg(self.proc.pid, signal.SIGWINCH)
            except OSError:
                pass

    # ------------------------------------------------------------ launch + pump

    def _streams(self) -> "tuple[Dict[int, int], List[int], Dict[int, int]]":
        """(read fd -> our fd, fds to hand the child, pty master -> our fd)."""

        want = self.opts.pty
        readers: Dict[int, int] = {}
        child: List[int] = []
        ptys: Dict[int, int] = {}
        for ours in (self.opts.out_fd, self.opts.err_fd):
            use_pty = want == "always" or (want == "auto" and _isatty(ours))
            if use_pty:
                # A terminal for a terminal: tqdm and friends then draw their
                # carriage-return bars exactly as they would without us.
                master, slave = os.openpty()
                _raw_output(slave)
                _copy_winsize(ours, slave)
                ptys[master] = ours
                readers[master] = ours
                child.append(slave)
            else:
                r, w = os.pipe()
                _grow_pipe(r)
                readers[r] = ours
                child.append(w)
        for fd in list(readers):
            os.set_inheritable(fd, False)
        return readers, child, ptys

    def _launch_and_pump(self) -> int:
        readers, child_fds, self._ptys = self._streams()
        try:
            self.proc = subprocess.Popen(
                self.opts.argv,
                stdin=None,  # inherited: pdb and input() keep working
                stdout=child_fds[0],
                stderr=child_fds[1],
                env=self._child_env(),
                start_new_session=True,
                close_fds=True,
                preexec_fn=_die_with_parent(),
            )
        except OSError as e:
            for fd in child_fds + list(readers):
                _close(fd)
            return self._launch_failed(e)
        finally:
            for fd in child_fds:
                _close(fd)
        self.state.child_pid = self.proc.pid
        self._write_status("running")
        self._start_comment_poster()
        for sig in self._pending_signals:
            self._forward(sig)
        self._pending_signals.clear()
        return self._pump(readers)

    def _launch_failed(self, e: OSError) -> int:
        code = EXIT_NOT_FOUND if e.errno == errno.ENOENT else EXIT_NOT_EXECUTABLE
        why = f"gcm-run: cannot run {self.opts.argv[0]!r}: {e.strerror or e} (exit {code})\n"
        self.state.launch_error = why.strip()
        self._log_write(why.encode())
        if self.log_fd is not None:
            try:
                os.fsync(self.log_fd)
            except OSError:
                pass
        _say(self.opts.err_fd, why)
        self.state.exit_code = code
        return code

    def _pump(self, readers: Dict[int, int]) -> int:
        assert self.proc is not None
        opts = self.opts
        drain_until: Optional[float] = None
        next_tick = time.monotonic() + opts.tick_s
        dead_outputs: set = set()
        while True:
            now = time.monotonic()
            if drain_until is None and self._poll_child():
                drain_until = now + DRAIN_AFTER_EXIT_S
            if drain_until is not None and (not readers or now >= drain_until):
                break
            timeout = max(0.0, next_tick - now)
            if drain_until is not None:
                timeout = min(timeout, max(0.0, drain_until - now))
            if readers:
                try:
                    ready, _, _ = select.select(list(readers), [], [], timeout)
                except InterruptedError:  # pragma: no cover - PEP 475 retries
                    ready = []
            else:
                # Output closed, child alive: just wait, keeping the watchdog.
                time.sleep(min(timeout, 0.2) if timeout > 0 else 0)
                ready = []
            got = 0
            for fd in ready:
                try:
                    data = os.read(fd, READ_SIZE)
                except OSError as e:
                    # EIO is how a pty says "the other side closed".
                    if e.errno not in (errno.EIO, errno.EBADF):
                        raise
                    data = b""
                if not data:
                    _close(fd)
                    del readers[fd]
                    continue
                dest = readers[fd]
                if dest not in dead_outputs and not _write_all(dest, data):
                    dead_outputs.add(dest)
                    self.state.terminal_error = f"fd {dest} closed; output continues to the log only"
                self._log_write(data)
                self.state.output_bytes += len(data)
                if self.state.log_lines is not None:
                    self.state.log_lines += data.count(b"\n")
                self._guard(self.scanner.feed, data, time.monotonic(), time.time())
                self._dirty = True
                got += len(data) if fd not in self._ptys else COALESCE_BELOW
            if 0 < got < COALESCE_BELOW and drain_until is None:
                time.sleep(COALESCE_S)
            now = time.monotonic()
            if now >= next_tick:
                self._guard(self._tick, now)
                next_tick = now + opts.tick_s
        for fd in list(readers):
            _close(fd)
        self._guard(self.scanner.flush, time.monotonic(), time.time())
        # A NaN printed just before exit, or a stall that ended with the last
        # line, must still reach the report: judge once more. These alerts go
        # out with the exit report, not as separate notices.
        self._guard(self._final_alerts)
        rc = self.proc.wait()
        self._reaped = True
        if rc < 0:
            self.state.signal = -rc
            return 128 - rc
        return rc

    def _final_alerts(self) -> None:
        for alert in self.watchdog.check(self.tracker.snap, time.monotonic(), time.time()):
            if alert.kind in ("diverged", "resumed"):  # a stall at exit is just the end
                self.state.alerts.append(alert)

    def _guard(self, fn: Any, *args: Any) -> None:
        """Progress parsing and periodic work see the child's output: nothing
        in it (GCM_PROGRESS {"eta_s": Infinity}, absurd numbers, deep JSON)
        may crash gcm-run, kill the child or change its exit status."""
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001
            if not getattr(self, "_guard_error", None):
                self._guard_error = f"{type(e).__name__}: {e}"[:300]
                try:
                    sys.stderr.write(f"gcm-run: progress tracking error ignored ({self._guard_error}); the job goes on\n")
                except Exception:  # noqa: BLE001
                    pass

    def _poll_child(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            self._reaped = True
            return True
        return False

    def _log_write(self, data: bytes) -> None:
        if self.log_fd is None or self.state.log_error:
            return
        try:
            view = memoryview(data)
            while view:
                n = os.write(self.log_fd, view)
                view = view[n:]
        except OSError as e:
            # Disk full or quota: the job must go on; say so in the status.
            self.state.log_error = f"log write failed: {e.strerror or e}"

    # ------------------------------------------------------------ periodic work

    def _tick(self, now: float) -> None:
        wall = time.time()
        snap = self.tracker.snap
        for alert in self.watchdog.check(snap, now, wall):
            self._on_alert(alert)
        if self._kill_at is not None and now >= self._kill_at and not self._reaped:
            self._kill_at = None
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
            except OSError:
                pass
        if self._poster is not None:
            from gcm_checks.run.comment import format_comment

            self._poster.offer(format_comment(snap, alert=self._current_alert()))
        if self._dirty and now - self._last_status_mono >= self.opts.status_interval_s:
            self._write_status("running")

    def _current_alert(self) -> str:
        if self.watchdog.diverged:
            return "nan loss"
        if self.watchdog.stalled:
            return "stalled"
        if self.watchdog.silent:
            return "silent"
        return ""

    def _on_alert(self, alert: Alert) -> None:
        self.state.alerts.append(alert)
        self._dirty = True
        kill = (alert.kind == "stalled" and self.opts.kill_on_stall) or (
            alert.kind == "diverged" and self.opts.kill_on_nan
        ) or (alert.kind == "silent" and self.opts.kill_on_stall)
        if alert.kind != "resumed":
            from gcm_checks.run.finish import notify_event

            notify_event(self, alert)
        if kill and self.state.killed_by is None and self.proc is not None and not self._reaped:
            self.state.killed_by = alert.kind
            note = f"\n[gcm-run] {alert.message}; ending the job (SIGTERM, SIGKILL after {self.opts.kill_grace_s:.0f}s)\n"
            self._log_write(note.encode())
            _say(self.opts.err_fd, note)
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except OSError:
                pass
            self._kill_at = time.monotonic() + self.opts.kill_grace_s

    def _start_comment_poster(self) -> None:
        from gcm_checks.run import comment as cm

        info = self.state.comment_info
        if self.opts.comment == "off":
            info["enabled"], info["why_not"] = False, "disabled (--no-comment)"
            return
        ok, why = cm.should_comment(self.env)
        if not ok:
            info["enabled"], info["why_not"] = False, why
            return
        send = self.opts.comment_sender
        if send is None:
            try:
                send = cm.slurm_sender()
            except Exception as e:  # noqa: BLE001 - no Slurm module/binary: no comment, job goes on
                info["enabled"], info["why_not"] = False, f"slurm backend unavailable: {e}"
                return
        info["enabled"] = True
        info["job_id"] = self.env["SLURM_JOB_ID"]
        info["interval_s"] = self.opts.comment_interval_s
        self._poster = cm.CommentPoster(self.env["SLURM_JOB_ID"], send, self.opts.comment_interval_s)

    # ------------------------------------------------------------ status

    def status_dict(self, state: str) -> dict:
        s = self.state
        o = self.opts
        running = state in ("starting", "running")
        return {
            "schema": st.SCHEMA,
            "kind": "gcm-run",
            "run_id": s.run_id,
            "name": o.name,
            "state": state,
            "host": st.host(),
            "user": self.env.get("USER") or self.env.get("LOGNAME") or str(os.getuid()),
            "wrapper_pid": os.getpid(),
            "child_pid": s.child_pid,
            "argv": list(o.argv),
            "cwd": os.getcwd(),
            "log": os.path.abspath(o.log_path),
            "started_at": st.iso(s.started_wall),
            "started_ts": s.started_wall,
            "updated_at": st.iso(time.time()),
            "updated_ts": time.time(),
            "ended_at": st.iso(s.ended_wall),
            "elapsed_s": round((s.ended_wall or time.time()) - s.started_wall, 1),
            "slurm": {k: self.env.get(v) for k, v in (("job_id", "SLURM_JOB_ID"), ("step_id", "SLURM_STEP_ID"),
                                                         ("procid", "SLURM_PROCID"), ("job_name", "SLURM_JOB_NAME"))},
            "progress": self.tracker.snap.to_dict(running=running),
            "alerts": [a.to_dict() for a in s.alerts],
            "signals_forwarded": list(s.signals_forwarded),
            "killed_by": s.killed_by,
            "exit": None if running else {"code": s.exit_code, "signal": _signame(s.signal),
                                          "signal_number": s.signal, "launch_error": s.launch_error},
            "output_bytes": s.output_bytes,
            "notifications": list(s.notifications),
            "problems": [p for p in (s.log_error, s.terminal_error, s.status_error) if p],
            "comment": dict(s.comment_info, **({"last_error": self._poster.last_error, "sent": self._poster.sent}
                                               if self._poster else {})),
            "settings": {"stall_after_s": o.stall_after_s, "silent_after_s": o.silent_after_s,
                         "kill_on_stall": o.kill_on_stall, "kill_on_nan": o.kill_on_nan,
                         "notify": o.notify_policy},
        }

    def _write_status(self, state: str, durable: bool = False) -> None:
        data = self.status_dict(state)
        if durable:
            st.write_json_atomic(self.status_file, data, durable=True)  # errors reach _prepare
        else:
            try:
                st.write_json_atomic(self.status_file, data)
                self.state.status_error = None
            except OSError as e:
                self.state.status_error = f"status file: {e.strerror or e}"
        self._last_status_mono = time.monotonic()
        self._dirty = False

    # ------------------------------------------------------------ exit

    def _finish(self, code: int) -> int:
        self.state.exit_code = code
        self.state.ended_wall = time.time()
        from gcm_checks.run.finish import finish_run

        try:
            finish_run(self)
        except Exception as e:  # noqa: BLE001 - our bug must not change the job's exit status
            _say(self.opts.err_fd, f"gcm-run: internal error while writing the run report: {type(e).__name__}: {e}\n")
        finally:
            if self.log_fd is not None:
                _close(self.log_fd)
                self.log_fd = None
            st.unregister_run(self.index_entry)
        return code


# ---------------------------------------------------------------- helpers


def _run_id(env: Mapping[str, str]) -> str:
    job = env.get("SLURM_JOB_ID")
    base = f"{st.host()}-{os.getpid()}"
    if job:
        base = f"job{job}.{env.get('SLURM_STEP_ID', 'x')}.{env.get('SLURM_PROCID', '0')}-{base}"
    return f"{base}-{uuid.uuid4().hex[:6]}"


def _signame(sig: Optional[int]) -> Optional[str]:
    if not sig:
        return None
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"SIG{sig}"


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _raw_output(fd: int) -> None:
    """Turn off output post-processing on the pty, so the log gets the bytes
    the program wrote (no ``\\n`` -> ``\\r\\n``); our own terminal still adds
    its ``\\r`` when we write to it."""
    import termios

    try:
        attrs = termios.tcgetattr(fd)
        attrs[1] &= ~termios.OPOST
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
    except termios.error:
        pass


def _copy_winsize(src: int, dst: int) -> None:
    import fcntl
    import termios

    try:
        ws = fcntl.ioctl(src, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(dst, termios.TIOCSWINSZ, ws)
    except OSError:
        pass


def _grow_pipe(fd: int) -> None:
    """Best effort: a 1 MiB pipe (Linux F_SETPIPE_SZ; capped by
    /proc/sys/fs/pipe-max-size for unprivileged users)."""
    import fcntl

    try:
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_SIZE)
    except OSError:
        pass


def _die_with_parent() -> Optional[Callable[[], None]]:
    """A pre-exec hook that makes the child get SIGTERM if the wrapper is
    killed -9, so a training run is never left orphaned outside Slurm's reach.
    libc is loaded here, in the parent: nothing may be imported after fork."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except Exception:  # noqa: BLE001 - best effort (non-Linux, no libc)
        return None
    PR_SET_PDEATHSIG = 1
    sig = int(signal.SIGTERM)

    def hook() -> None:
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)

    return hook


def _write_all(fd: int, data: bytes) -> bool:
    """Write everything; False if the destination is gone (closed pipe,
    hung-up terminal). Never raises: the job outlives its terminal."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [], 1.0)
            continue
        except InterruptedError:
            continue
        except OSError:
            return False
        view = view[n:]
    return True


def _say(fd: int, text: str) -> None:
    _write_all(fd, text.encode("utf-8", "replace"))


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def run_wrapped(opts: RunOptions) -> int:
    return Wrapper(opts).run()
