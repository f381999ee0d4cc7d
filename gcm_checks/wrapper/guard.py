"""Leave nothing of the job behind when the wrapper itself is killed -9.

Three layers, because no single one covers it (prctl(2)):

- the child gets ``PR_SET_PDEATHSIG`` (SIGTERM): it hears when we die. Only
  the direct child, though: the flag is cleared in every fork, so DataLoader
  workers and ``torchrun`` ranks would be orphaned to PID 1;
- a *sentinel*, a tiny forked copy of the wrapper in its own session (so a
  ``kill -9 -<our pgid>`` or a terminal hangup does not take it too), holds
  the read end of a pipe. When the pipe closes without the word ``done``
  (the wrapper died without finishing) it sends SIGTERM to the job's process
  group and to every adopted orphan it was told about, then SIGKILL after a
  grace period;
- the wrapper is a ``PR_SET_CHILD_SUBREAPER``: a grandchild that escapes the
  group with setsid and whose parent exits is re-parented to us, not to PID
  1, so we can name it to the sentinel.

Every step is best effort: on a system without prctl the job runs as before.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Callable, List, Optional, Set

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
GRACE_S = 5.0


def _prctl() -> Optional[Callable[..., int]]:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except Exception:  # noqa: BLE001 - non-Linux, no libc: best effort
        return None


def die_with_parent_hook(sig: int = int(signal.SIGTERM)) -> Optional[Callable[[], None]]:
    """A pre-exec hook for the child. libc is loaded here, in the parent:
    nothing may be imported after fork."""
    prctl = _prctl()
    if prctl is None:
        return None

    def hook() -> None:
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)

    return hook


PR_GET_CHILD_SUBREAPER = 37


def become_subreaper() -> Optional[int]:
    """Set the flag; returns its previous value (to restore), None if not set.
    The flag outlives the run in our process: a caller that runs the wrapper
    in-process (tests, tools) must get its old value back (``restore_subreaper``),
    or every orphan of its later children would become its zombie."""
    prctl = _prctl()
    if prctl is None:
        return None
    try:
        import ctypes

        old = ctypes.c_int(0)
        prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(old), 0, 0, 0)
        return old.value if prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 else None
    except Exception:  # noqa: BLE001
        return None


def restore_subreaper(old: Optional[int]) -> None:
    prctl = _prctl()
    if prctl is None or old is None:
        return
    try:
        prctl(PR_SET_CHILD_SUBREAPER, int(old), 0, 0, 0)
    except Exception:  # noqa: BLE001
        pass


def adopted_children(known: int) -> List[int]:
    """Our children other than the job's first process: orphans that the
    subreaper flag brought back to us (Linux >= 3.5 lists them here)."""
    try:
        with open(f"/proc/self/task/{os.getpid()}/children", "rb") as f:
            pids = [int(x) for x in f.read().split()[:256]]
    except (OSError, ValueError):
        return []
    return [p for p in pids if p != known]


class Sentinel:
    """Fork the sentinel (before any thread exists: fork copies only the
    calling thread, and a lock held by another thread would stay held)."""

    def __init__(self, grace_s: float = GRACE_S) -> None:
        self.pid: Optional[int] = None
        self._w: Optional[int] = None
        self._told: Set[int] = set()
        import warnings

        r, w = os.pipe()
        try:
            with warnings.catch_warnings():  # 3.12 warns about fork with threads; ours touches no lock
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError:
            os.close(r)
            os.close(w)
            return
        if pid == 0:  # pragma: no cover - runs in the forked sentinel (tested end to end)
            try:
                os.close(w)
                _sentinel_main(r, grace_s)
            finally:
                os._exit(0)
        os.close(r)
        os.set_inheritable(w, False)
        self.pid, self._w = pid, w

    def _say(self, text: str) -> None:
        if self._w is None:
            return
        try:
            os.write(self._w, text.encode())
        except OSError:
            self._w = None

    def watch_group(self, pgid: int) -> None:
        self._say(f"g {pgid}\n")

    def watch_pids(self, pids: List[int]) -> None:
        new = [p for p in pids if p not in self._told]
        for p in new:
            self._told.add(p)
            self._say(f"p {p}\n")

    def release(self) -> None:
        """The wrapper finished normally: the sentinel exits without killing."""
        self._say("done\n")
        if self._w is not None:
            try:
                os.close(self._w)
            except OSError:
                pass
            self._w = None
        if self.pid is not None:
            for _ in range(50):  # reap it; it exits as soon as it reads "done"
                try:
                    if os.waitpid(self.pid, os.WNOHANG)[0]:
                        break
                except ChildProcessError:
                    break
                time.sleep(0.01)
            self.pid = None


def _sentinel_main(r: int, grace_s: float) -> None:  # pragma: no cover - forked process
    os.setsid()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
                signal.SIGWINCH, signal.SIGPIPE):
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (OSError, ValueError):
            pass
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    # Hold nothing of the wrapper's: a reader waiting for EOF on the
    # wrapper's stdout must not wait for us.
    os.closerange(3, r)
    os.closerange(r + 1, 65536)
    buf = b""
    while True:
        try:
            chunk = os.read(r, 4096)
        except InterruptedError:
            continue
        except OSError:
            chunk = b""
        if not chunk:
            break
        buf += chunk
        if len(buf) > (1 << 20):
            buf = buf[-(1 << 16):]
    groups: List[int] = []
    pids: List[int] = []
    done = False
    for line in buf.decode("ascii", "replace").splitlines():
        parts = line.split()
        if parts == ["done"]:
            done = True
        elif len(parts) == 2 and parts[1].isdigit() and int(parts[1]) > 1:
            (groups if parts[0] == "g" else pids).append(int(parts[1]))
    if done:
        return
    _kill_all(groups, pids, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _any_alive(groups, pids):
        time.sleep(0.1)
    _kill_all(groups, pids, signal.SIGKILL)


def _kill_all(groups: List[int], pids: List[int], sig: int) -> None:  # pragma: no cover - forked process
    for g in groups:
        try:
            os.killpg(g, sig)
        except OSError:
            pass
    for p in pids:
        try:
            os.kill(p, sig)
        except OSError:
            pass


def _any_alive(groups: List[int], pids: List[int]) -> bool:  # pragma: no cover - forked process
    for g in groups:
        try:
            os.killpg(g, 0)
            return True
        except OSError:
            pass
    for p in pids:
        try:
            os.kill(p, 0)
            return True
        except OSError:
            pass
    return False
