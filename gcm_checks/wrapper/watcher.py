"""gcm-run's progress watcher: the child's output in, progress and alerts out.

One line scanner per output stream feeds one ``Tracker`` (percent, rate,
ETA, loss); the ``Watchdog`` judges its snapshots (stall, silence, NaN). The
watcher knows nothing of the launcher: the launcher hands it bytes and the
time, and acts on the alerts it returns (``sides.on_alert``). The data flows
one way, launcher -> watcher, launcher -> finish, and the status file and the
finish step read the watcher's ``tracker`` and ``watchdog``.

Everything here sees a user's output, so every call from the pump goes
through ``guard``: nothing in the output (``GCM_PROGRESS {"eta_s":
Infinity}``, absurd numbers, deep JSON) may crash gcm-run, kill the child or
change its exit status.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional

from gcm_checks.wrapper import streams as sio
from gcm_checks.wrapper.options import RunOptions
from gcm_checks.wrapper.progress import ChunkScanner, Tracker
from gcm_checks.wrapper.watch import Alert, Watchdog

# Only the newest SCAN_BYTES of a read are handed to the progress scanner.
SCAN_BYTES = 1 << 16


class ProgressWatcher:
    def __init__(self, opts: RunOptions, now_mono: float) -> None:
        self.tracker = Tracker()
        # One line buffer per stream: a loss dict on stdout must never be
        # glued to half a progress bar on stderr.
        self.scanners: Dict[int, ChunkScanner] = {}
        self.watchdog = Watchdog(opts.stall_after_s, opts.silent_after_s, now_mono, auto=opts.stall_auto)
        self.err_fd = opts.err_fd
        self.error: Optional[str] = None  # the first error guard() swallowed
        # A hung job is usually both stalled and silent: one episode, one
        # message (issue 13). ``quiet_episodes`` numbers the episodes.
        self.quiet_episode = False
        self.quiet_episodes = 0

    def guard(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - see the module doc
            if self.error is None:
                self.error = f"{type(e).__name__}: {e}"[:300]
                try:
                    sio.say(self.err_fd, f"gcm-run: progress tracking error ignored ({self.error}); the job goes on\n")
                except Exception:  # noqa: BLE001
                    pass

    def feed(self, fd: int, data: memoryview) -> None:
        sc = self.scanners.get(fd)
        if sc is None:
            sc = self.scanners[fd] = ChunkScanner(self.tracker)
        n = len(data)
        if n <= SCAN_BYTES:
            self.guard(sc.feed, bytes(data), time.monotonic(), time.time())
        else:  # a flood: the newest part holds the news (see ChunkScanner)
            self.guard(sc.feed, bytes(data[n - SCAN_BYTES:]), time.monotonic(), time.time(), True)

    def flush(self) -> None:
        for sc in self.scanners.values():
            self.guard(sc.flush, time.monotonic(), time.time())

    def check(self, now: float, wall: float, on_alert: Callable[[Alert], None]) -> None:
        """Periodic: let the scanners time out partial lines, judge, and hand
        each alert to ``on_alert`` (the launcher's side effects)."""
        for sc in self.scanners.values():
            sc.poll(now, wall)
        for alert in self.watchdog.check(self.tracker.snap, now, wall):
            on_alert(alert)
        if not (self.watchdog.stalled or self.watchdog.silent):
            self.quiet_episode = False  # the next stall or silence is a new episode

    def new_quiet_episode(self) -> bool:
        """True for the first stall/silence alert of an episode (notify once)."""
        if self.quiet_episode:
            return False
        self.quiet_episode = True
        self.quiet_episodes += 1
        return True

    def final_alerts(self) -> List[Alert]:
        """Judged once more at exit: a NaN printed just before exit, or a
        stall that ended with the last line, must still reach the report (a
        stall at exit is just the end)."""
        out: List[Alert] = []

        def judge() -> None:
            out.extend(a for a in self.watchdog.check(self.tracker.snap, time.monotonic(), time.time())
                       if a.kind in ("diverged", "resumed"))

        self.guard(judge)
        return out

    def current_alert(self) -> str:
        """The alert word for the job comment."""
        if self.watchdog.diverged:
            return "nan loss"
        if self.watchdog.stalled:
            return ""  # format_comment says "STALLED 12m" itself
        if self.watchdog.silent:
            return "silent"
        return ""
