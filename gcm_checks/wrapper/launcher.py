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
import time
from typing import TYPE_CHECKING, Dict, List, Optional

from gcm_checks.wrapper import guard, live
from gcm_checks.wrapper import status as st
from gcm_checks.wrapper import streams as sio
from gcm_checks.wrapper.options import RunOptions, RunState  # noqa: F401 - RunOptions is public here
from gcm_checks.wrapper.signals import SignalForwarder
from gcm_checks.wrapper.watch import Alert
from gcm_checks.wrapper.watcher import ProgressWatcher

if TYPE_CHECKING:
    from gcm_checks.wrapper.finish import RunView

EXIT_SETUP = 2  # could not create the log or run record: nothing launched
EXIT_NOT_EXECUTABLE = 126
EXIT_NOT_FOUND = 127

# Reads go into one preallocated buffer per stream (os.readv), as big as the
# pipe: a 1 GB burst is then ~1,000 reads, with no allocation per read, and
# the bytes reach the terminal and the log through memoryviews, uncopied.
# Only the newest watcher.SCAN_BYTES of a read are handed to the progress scanner.
READ_SIZE = 1 << 20
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


class Wrapper:
    """One wrapped run: launch, pump, signals, status, exit.

    Data flows one way. Signals reach the job through ``signals``
    (wrapper/signals.py). The wrapper feeds output to its ``watcher``
    (wrapper/watcher.py) and hands each alert to ``sides.on_alert``; at exit
    it calls ``finish.finish_run`` with a ``finish.RunView`` (``view``).
    ``sides`` uses only the public part below (``state``, ``opts``, ``env``,
    ``watcher``, ``poster``, ``proc``, ``reaped``, ``dirty``, ``kill_at``, ``view``,
    ``log_write``); neither imports this module.
    """

    def __init__(self, opts: RunOptions) -> None:
        self.opts = opts
        self.env: Dict[str, str] = dict(os.environ if opts.env is None else opts.env)
        now_w, now_m = time.time(), time.monotonic()
        self.state = RunState(run_id=live.run_id(self.env), opts=opts, started_wall=now_w, started_mono=now_m)
        self.user = live.user_name(self.env)
        self.watcher = ProgressWatcher(opts, now_m)
        self.stragglers = None
        self.sentinel: Optional[guard.Sentinel] = None
        self.log_fd: Optional[int] = None
        self.status_file = st.status_path(opts.log_path)
        self.index_entry: Optional[str] = None
        self.proc: Optional[subprocess.Popen] = None
        self.signals = SignalForwarder(self)
        self.ptys: Dict[int, int] = {}  # pty master -> our terminal fd (SIGWINCH copies the size)
        self.reaped = False
        self.poster = None
        self.kill_at: Optional[float] = None
        self._last_status_mono = 0.0
        self.dirty = True

    # ------------------------------------------------------------ public

    def run(self) -> int:
        err = self._prepare()
        if err:
            sio.say(self.opts.err_fd, f"gcm-run: {err}; nothing was launched\n")
            return EXIT_SETUP
        # Before any thread exists (the comment poster starts after launch).
        self.sentinel = guard.Sentinel()
        self._old_subreaper = guard.become_subreaper()
        self.signals.install()
        try:
            code = self._launch_and_pump()
        finally:
            self.signals.restore()
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
            self.write_status("starting", durable=True)
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

    # ------------------------------------------------------------ launch + pump

    def _streams(self) -> "tuple[Dict[int, int], List[int], Dict[int, int]]":
        """(read fd -> our fd, fds to hand the child, pty master -> our fd)."""

        want = self.opts.pty
        readers: Dict[int, int] = {}
        child: List[int] = []
        ptys: Dict[int, int] = {}
        for ours in (self.opts.out_fd, self.opts.err_fd):
            use_pty = want == "always" or (want == "auto" and sio.isatty(ours))
            if use_pty:
                # A terminal for a terminal: tqdm and friends then draw their
                # carriage-return bars exactly as they would without us.
                master, slave = os.openpty()
                sio.raw_output(slave)
                sio.copy_winsize(ours, slave)
                ptys[master] = ours
                readers[master] = ours
                child.append(slave)
            else:
                r, w = os.pipe()
                sio.grow_pipe(r)
                readers[r] = ours
                child.append(w)
        for fd in list(readers):
            os.set_inheritable(fd, False)
        return readers, child, ptys

    def _launch_and_pump(self) -> int:
        readers, child_fds, self.ptys = self._streams()
        try:
            self.proc = subprocess.Popen(
                self.opts.argv,
                stdin=None,  # inherited: pdb and input() keep working
                stdout=child_fds[0],
                stderr=child_fds[1],
                env=self._child_env(),
                start_new_session=True,
                close_fds=True,
                preexec_fn=guard.die_with_parent_hook(),
            )
        except OSError as e:
            for fd in child_fds + list(readers):
                sio.close_fd(fd)
            return self._launch_failed(e)
        finally:
            for fd in child_fds:
                sio.close_fd(fd)
        self.state.child_pid = self.proc.pid
        if self.sentinel is not None:
            self.sentinel.watch_group(self.proc.pid)
        self._start_stragglers()
        self.write_status("running")
        self._start_comment_poster()
        self.signals.launched()
        return self._pump(readers)

    def _launch_failed(self, e: OSError) -> int:
        code = EXIT_NOT_FOUND if e.errno == errno.ENOENT else EXIT_NOT_EXECUTABLE
        why = f"gcm-run: cannot run {self.opts.argv[0]!r}: {e.strerror or e} (exit {code})\n"
        self.state.launch_error = why.strip()
        self.log_write(why.encode())
        if self.log_fd is not None:
            try:
                os.fsync(self.log_fd)
            except OSError:
                pass
        sio.say(self.opts.err_fd, why)
        self.state.exit_code = code
        return code

    def _pump(self, readers: Dict[int, int]) -> int:
        assert self.proc is not None
        opts = self.opts
        drain_until: Optional[float] = None
        next_tick = time.monotonic() + opts.tick_s
        dead_outputs: set = set()
        bufs: Dict[int, bytearray] = {}
        next_poll = 0.0
        busy = False
        while True:
            now = time.monotonic()
            # While output streams in, ask about the child every 50 ms, not
            # per read: a waitpid per 4 KiB pty read showed in the burst figures.
            if drain_until is None and (not busy or now >= next_poll):
                next_poll = now + 0.05
                if self._poll_child():
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
                buf = bufs.get(fd)
                if buf is None:
                    buf = bufs[fd] = bytearray(READ_SIZE)
                try:
                    n = os.readv(fd, [buf])
                except OSError as e:
                    # EIO is how a pty says "the other side closed".
                    if e.errno not in (errno.EIO, errno.EBADF):
                        raise
                    n = 0
                if not n:
                    sio.close_fd(fd)
                    del readers[fd]
                    continue
                data = memoryview(buf)[:n]
                dest = readers[fd]
                if dest not in dead_outputs and not sio.write_all(dest, data):
                    dead_outputs.add(dest)
                    self.state.terminal_error = f"fd {dest} closed; output continues to the log only"
                self.log_write(data)
                self.state.output_bytes += n
                if self.state.log_lines is not None:
                    self.state.log_lines += buf.count(b"\n", 0, n)
                self.watcher.feed(fd, data)
                self.dirty = True
                got += n if fd not in self.ptys else COALESCE_BELOW
            busy = got > 0
            if 0 < got < COALESCE_BELOW and drain_until is None:
                time.sleep(COALESCE_S)
            now = time.monotonic()
            if now >= next_tick:
                self.watcher.guard(self._tick, now)
                next_tick = now + opts.tick_s
        for fd in list(readers):
            sio.close_fd(fd)
        self.watcher.flush()
        # These alerts go out with the exit report, not as separate notices.
        self.state.alerts.extend(self.watcher.final_alerts())
        rc = self.proc.wait()
        self.reaped = True
        if rc < 0:
            self.state.signal = -rc
            return 128 - rc
        return rc

    def _poll_child(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            self.reaped = True
            return True
        return False

    def log_write(self, data: "bytes | memoryview") -> None:
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
        self.watcher.check(now, wall, self._on_alert)
        snap = self.watcher.tracker.snap
        if self.kill_at is not None and now >= self.kill_at and not self.reaped:
            self.kill_at = None
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # type: ignore[union-attr]
            except OSError:
                pass
        if self.stragglers is not None:
            self.stragglers.tick(snap, now, wall, self.watcher.tracker.done)
        if self.sentinel is not None and self.proc is not None:
            self.sentinel.watch_pids(guard.adopted_children(self.proc.pid))
        if self.poster is not None:
            from gcm_checks.wrapper.comment import format_comment

            slow = self.stragglers.current() if self.stragglers is not None else []
            self.poster.offer(format_comment(snap, alert=self.watcher.current_alert(), now_mono=now,
                                              stalled=self.watcher.watchdog.stalled, stragglers=slow))
        if self.dirty and now - self._last_status_mono >= self.opts.status_interval_s:
            self.write_status("running")

    def _on_alert(self, alert: Alert) -> None:
        from gcm_checks.wrapper.sides import on_alert

        on_alert(self, alert)

    def _start_comment_poster(self) -> None:
        from gcm_checks.wrapper.sides import start_comment_poster

        start_comment_poster(self)

    # ------------------------------------------------------------ status

    def status_dict(self, state: str) -> dict:
        return live.status_dict(self, state)

    def view(self) -> "RunView":
        """What ``finish`` needs, as of now (the episode count moves while the job runs)."""
        from gcm_checks.wrapper.finish import RunView

        return RunView(opts=self.opts, env=self.env, state=self.state, status_dict=self.status_dict,
                       write_status=self.write_status, stragglers=self.stragglers, poster=self.poster,
                       snap=self.watcher.tracker.snap, quiet_episodes=self.watcher.quiet_episodes)

    def _start_stragglers(self) -> None:
        from gcm_checks.wrapper import stragglers

        try:
            self.stragglers = stragglers.from_wrapper(self)
        except Exception as e:  # noqa: BLE001 - a side channel never stops the job
            self.state.status_error = f"straggler check off: {type(e).__name__}: {e}"
            self.stragglers = None

    def write_status(self, state: str, durable: bool = False) -> None:
        data = self.status_dict(state)
        if durable:
            st.write_run_json(self.status_file, data, durable=True)  # errors reach _prepare
        else:
            try:
                st.write_run_json(self.status_file, data)
                self.state.status_error = None
            except OSError as e:
                self.state.status_error = f"status file: {e.strerror or e}"
        self._last_status_mono = time.monotonic()
        self.dirty = False

    # ------------------------------------------------------------ exit

    def _finish(self, code: int) -> int:
        self.state.exit_code = code
        self.state.ended_wall = time.time()
        from gcm_checks.wrapper.finish import finish_run

        try:
            finish_run(self.view())
        except Exception as e:  # noqa: BLE001 - our bug must not change the job's exit status
            sio.say(self.opts.err_fd, f"gcm-run: internal error while writing the run report: {type(e).__name__}: {e}\n")
        finally:
            if self.log_fd is not None:
                sio.close_fd(self.log_fd)
                self.log_fd = None
            st.unregister_run(self.index_entry)
            if self.stragglers is not None:
                self.stragglers.close()
            if self.sentinel is not None:
                self.sentinel.release()
            guard.restore_subreaper(getattr(self, "_old_subreaper", None))
        return code


def run_wrapped(opts: RunOptions) -> int:
    return Wrapper(opts).run()
