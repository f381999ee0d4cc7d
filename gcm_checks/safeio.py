"""Root-safe access to files that belong to a job's user.

The epilog runs as root, but job logs and work directories belong to the
user, who controls every name in them. A user who points ``#SBATCH -o`` at a
symlink to ``/etc/shadow`` must not get it mailed back; a work directory
symlinked to ``/etc`` must not receive root-owned files (rule 5).

Two defences, used together:

* the path is walked one component at a time with ``openat`` and
  ``O_NOFOLLOW``; a symlink is only followed when root owns it (the admin's
  ``/home -> /gpfs/home``), never when a user does;
* when we are root and the file belongs to someone else, the walk runs in a
  forked child that has dropped to the job user's uid/gid, so even a race we
  did not foresee can only reach what the user could read anyway. Files are
  created the same way, so they belong to the user.

The forked child execs nothing, so ``gcm_checks.proc.run`` does not apply; it
is bounded the same way (deadline, then SIGKILL).
"""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import stat
import time
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

_MAX_LINKS = 40  # as the kernel's own limit (path_resolution(7))


class UnsafePath(OSError):
    """The path could not be opened without trusting a user-controlled name."""


@dataclass(frozen=True)
class Tail:
    """The end of a file, read safely. ``error`` is set when nothing was read."""

    path: str
    size: int = 0
    data: bytes = b""
    error: str = ""

    @property
    def truncated(self) -> bool:
        return len(self.data) < self.size


# --------------------------------------------------------------------------
# The walk


def _split(path: str) -> list:
    return [p for p in path.split("/") if p and p != "."]


def open_nofollow(
    path: str,
    flags: int = os.O_RDONLY,
    *,
    trusted_link_owners: Tuple[int, ...] = (0,),
    mode: int = 0o600,
) -> int:
    """Open ``path`` without following any symlink a non-trusted user owns.

    Returns a file descriptor. Raises UnsafePath for a refused symlink and
    OSError for everything else (missing file, permission denied).
    """
    if not os.path.isabs(path):
        raise UnsafePath(errno.EINVAL, "relative path refused", path)
    parts = _split(path)
    dirfd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    links = 0
    try:
        while parts:
            name = parts.pop(0)
            last = not parts
            # ".." is resolved by the kernel against the directory we hold,
            # so it needs no special case and cannot escape through a link.
            try:
                st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
            except FileNotFoundError:
                if last and flags & os.O_CREAT:
                    st = None
                else:
                    raise
            if st is not None and stat.S_ISLNK(st.st_mode):
                if st.st_uid not in trusted_link_owners:
                    raise UnsafePath(errno.ELOOP, "symlink owned by uid %d refused" % st.st_uid, path)
                links += 1
                if links > _MAX_LINKS:
                    raise UnsafePath(errno.ELOOP, "too many symlinks", path)
                target = os.readlink(name, dir_fd=dirfd)
                parts = _split(target) + parts
                if target.startswith("/"):
                    os.close(dirfd)
                    dirfd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                continue
            if last:
                return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dirfd)
            nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dirfd)
            os.close(dirfd)
            dirfd = nxt
        # The path named a directory ("/" or "a/b/" after links).
        return os.dup(dirfd) if flags & os.O_DIRECTORY else os.open(".", flags, dir_fd=dirfd)
    finally:
        os.close(dirfd)


def _read_tail_here(path: str, uid: Optional[int], max_bytes: int) -> Tail:
    try:
        fd = open_nofollow(path, os.O_RDONLY | os.O_NONBLOCK)
    except UnsafePath as e:
        return Tail(path, error=f"not read: {e.strerror}")
    except OSError as e:
        return Tail(path, error=f"not read: {e.strerror or e}")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            # A FIFO or device would block or never end.
            return Tail(path, error="not read: not a regular file")
        if uid is not None and st.st_uid != uid:
            # Also catches a hard link to a file the user does not own.
            return Tail(path, size=st.st_size, error=f"not read: owned by uid {st.st_uid}, not the job user")
        start = max(0, st.st_size - max_bytes)
        os.lseek(fd, start, os.SEEK_SET)
        chunks = []
        want = st.st_size - start
        while want > 0:
            b = os.read(fd, min(want, 1 << 20))
            if not b:
                break
            chunks.append(b)
            want -= len(b)
        return Tail(path, size=st.st_size, data=b"".join(chunks))
    finally:
        os.close(fd)


# --------------------------------------------------------------------------
# Running a small function as the job user


def _needs_drop(uid: Optional[int]) -> bool:
    return uid is not None and os.geteuid() == 0 and uid != 0


def _drop_to(uid: int, gid: int, user: str = "") -> None:
    # With the user's name, take their supplementary groups too: project
    # directories are often writable through a group. The NSS lookup may
    # hang on a dead LDAP server; the caller's deadline covers that.
    try:
        if not user:
            raise KeyError(user)
        os.initgroups(user, gid)
    except (KeyError, OSError):
        os.setgroups([gid])
    os.setgid(gid)
    os.setuid(uid)
    # os.setuid from root sets real, effective and saved ids: no way back.


def as_user(fn: Callable[[], dict], uid: int, gid: int, *, timeout: float, user: str = "") -> dict:
    """Run fn() in a child that has become uid/gid; return its JSON-able dict.

    The child is killed at the deadline. A failure comes back as
    ``{"error": "..."}`` rather than an exception: the caller reports it.
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            os.close(r)
            signal.alarm(max(1, int(timeout) + 1))  # belt and braces
            _drop_to(uid, gid, user)
            out = fn()
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            out = {"error": f"{type(e).__name__}: {e}"}
            code = 1
        try:
            data = json.dumps(out).encode()
            view = memoryview(data)
            while view:
                n = os.write(w, view)
                view = view[n:]
        finally:
            os._exit(code)
    os.close(w)
    buf = bytearray()
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([r], [], [], left)
            if not ready:
                continue
            chunk = os.read(r, 1 << 16)
            if not chunk:
                break
            buf += chunk
    finally:
        os.close(r)
        if timed_out:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap(pid)
    if timed_out:
        return {"error": f"no answer within {timeout:.1f}s (killed)"}
    try:
        return json.loads(bytes(buf).decode() or "{}")
    except ValueError:
        return {"error": "child returned garbage"}


def _reap(pid: int) -> None:
    # A child stuck in D state on a dead NFS server cannot be reaped; do not
    # wait for it forever.
    for _ in range(50):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.02)


def read_tail(
    path: str,
    *,
    uid: Optional[int],
    gid: Optional[int] = None,
    max_bytes: int,
    timeout: float = 5.0,
    user: str = "",
) -> Tail:
    """Read at most the last ``max_bytes`` of a user's file, safely.

    ``uid`` is the job user: the file must belong to them. ``uid=None`` skips
    the ownership check (for files gcm-checks wrote itself).
    """
    if not path:
        return Tail(path, error="no path")
    if not _needs_drop(uid):
        return _read_tail_here(path, uid, max_bytes)

    def child() -> dict:
        t = _read_tail_here(path, uid, max_bytes)
        return {"size": t.size, "data": t.data.hex(), "error": t.error}

    out = as_user(child, uid, gid if gid is not None else uid, timeout=timeout, user=user)  # type: ignore[arg-type]
    if "data" not in out:
        return Tail(path, error=f"not read: {out.get('error', 'unknown error')}")
    return Tail(path, size=int(out["size"]), data=bytes.fromhex(out["data"]), error=out["error"])


# --------------------------------------------------------------------------
# Writing


# The one atomic writer lives in jsonfile (import-light, on the prolog path).
# Deprecated alias for notify/outbox.py (another helper's file); the lead
# points it at jsonfile.write_atomic after merging, then this goes.
def atomic_write(path: str, data: bytes, *, mode: int = 0o640) -> str:
    from gcm_checks.jsonfile import write_atomic

    return write_atomic(path, data, mode=mode)


def write_user_file(
    directory: str,
    name: str,
    data: bytes,
    *,
    uid: int,
    gid: int,
    mode: int = 0o600,
    timeout: float = 5.0,
    user: str = "",
) -> str:
    """Create ``directory/name`` atomically, as the user, owned by the user.

    Raises UnsafePath/OSError when the directory is a user symlink, is not
    the user's to write, or the write fails. ``mode`` defaults to 0600: a
    report may say things the user's group should not read.
    """
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"bad file name {name!r}")

    from gcm_checks.jsonfile import write_atomic

    def work() -> dict:
        dirfd = open_nofollow(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            # Whether the user may write here is the kernel's call: we are
            # the user by now (or root writing for root).
            write_atomic(name, data, mode=mode, dir_fd=dirfd)
        finally:
            os.close(dirfd)
        return {"ok": True}

    if _needs_drop(uid):
        out = as_user(work, uid, gid, timeout=timeout, user=user)
        if not out.get("ok"):
            raise OSError(errno.EIO, f"could not write as uid {uid}: {out.get('error')}", directory)
    else:
        work()
    return os.path.join(directory, name)


# --------------------------------------------------------------------------
# Text that came out of a log: gcm_checks.text is the one sanitiser. This
# alias stays for notify/runs.py (another helper's file) until the lead
# points it at gcm_checks.text after merging.
from gcm_checks.text import clean_text  # noqa: E402,F401


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}".replace(".0 ", " ")
        size /= 1024
    return f"{n} B"



# The directory rule lives in state.py (on the prolog path, import-light).
from gcm_checks.state import unsafe_dir  # noqa: E402,F401
