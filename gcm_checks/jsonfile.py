"""The one atomic file writer and the one bounded JSON reader.

Every file gcm-checks keeps (node state, the report spool, the outbox, gcm-run's
status and shared files, installed scripts) is written by ``write_atomic`` and,
when it is JSON, read back by ``read_json``. Before issue 16 there were two
atomic writers (one without fsync, one with a temp name two threads could
share) and four readers that failed four ways (raise, ``{}``, ``None``,
unbounded ``json.load``); a caller could not tell from the name which it had.

Writing: a temp file beside the target (``O_EXCL | O_NOFOLLOW``, a name unique
per process and call), its mode set exactly (not through the umask), fsynced,
renamed over the target inside the same directory file descriptor, and the
directory fsynced so the rename survives a crash. A crash leaves the old file
or the new one, never half of either. ``rename`` replaces a symlink planted at
the target instead of following it (rule 5: root writes these). The
directory given by path is trusted (our own state, spool, outbox); a
directory a user controls is opened with ``safeio.open_nofollow`` (as the
user, ``safeio.write_user_file``) and handed over as ``dir_fd``.
``durable=False`` skips both fsyncs, for state whose loss is harmless and
that is written on a hot path (the prolog's job start, gcm-run's once-a-second
status): a disk flush there costs more than the work itself.

Reading: ``read_json`` returns the JSON object, or ``None`` when the file is
missing, unreadable, a symlink at its last component, not a regular file (a
FIFO must not block us), larger than ``max_bytes``, nested deeper than
``max_depth`` (``json`` recurses; a planted ``[[[[...`` would end the run with
RecursionError), not valid JSON, or valid JSON that is not an object. It never
raises for anything the file's content or existence can cause: a caller
treats ``None`` as "no usable record" and goes on.

Import-light on purpose (``json``, ``os``, ``stat``, ``time``): the prolog
writes its job record through here.
"""

from __future__ import annotations

import json
import os
import stat
import time
from typing import Any, Dict, Optional, Union

PathLike = Union[str, "os.PathLike[str]"]

# Our files are small; anything bigger or deeper is corrupt or planted.
MAX_JSON_BYTES = 4 * 1024 * 1024
MAX_JSON_DEPTH = 64


def write_atomic(path: PathLike, data: bytes, *, mode: int = 0o644, durable: bool = True,
                 dir_fd: Optional[int] = None) -> str:
    """Replace ``path`` with ``data`` all at once (see the module doc).

    With ``dir_fd``, ``path`` is a bare name inside that already opened (and
    already vetted) directory; without it the parent is created (0755) if
    missing. Returns the path written.
    """
    path = os.fspath(path)
    if dir_fd is not None:
        if "/" in path or path in ("", ".", ".."):
            raise ValueError(f"bad file name {path!r}")
        _write_at(dir_fd, path, data, mode, durable)
        return path
    d, name = os.path.split(os.path.abspath(path))
    os.makedirs(d, mode=0o755, exist_ok=True)
    dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _write_at(dfd, name, data, mode, durable)
    finally:
        os.close(dfd)
    return os.path.join(d, name)


def _write_at(dirfd: int, name: str, data: bytes, mode: int, durable: bool) -> None:
    # pid + monotonic ns: two threads of one process writing the same file
    # must not share (and truncate) one temp file.
    tmp = f".{name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dirfd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode)  # the umask must not widen or narrow what we chose
        if durable:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.rename(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp, dir_fd=dirfd)
        except OSError:
            pass
        raise
    if durable:
        try:
            os.fsync(dirfd)  # the rename itself must survive a crash
        except OSError:
            pass  # some filesystems refuse a directory fsync; the data is synced


def dumps(data: Any, *, max_bytes: Optional[int] = None, **dump_kw: Any) -> bytes:
    """``data`` as UTF-8 JSON plus a newline; ValueError over ``max_bytes``."""
    raw = (json.dumps(data, **dump_kw) + "\n").encode("utf-8")
    if max_bytes is not None and len(raw) > max_bytes:
        raise ValueError(f"JSON of {len(raw)} bytes, over {max_bytes}")
    return raw


def write_json(path: PathLike, data: Any, *, mode: int = 0o644, durable: bool = True,
               dir_fd: Optional[int] = None, max_bytes: Optional[int] = None, **dump_kw: Any) -> str:
    """``write_atomic`` of ``data`` as JSON (``dump_kw`` go to ``json.dumps``).

    ValueError (nothing written) when the text is over ``max_bytes`` or
    ``data`` cannot be serialised; OSError when the write fails.
    """
    return write_atomic(path, dumps(data, max_bytes=max_bytes, **dump_kw), mode=mode, durable=durable, dir_fd=dir_fd)


def json_depth(text: str) -> int:
    """Deepest nesting of ``[`` / ``{`` outside strings, without recursion."""
    depth = deepest = 0
    in_str = esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def parse_json(raw: "bytes | str", *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Bounded ``json.loads``; ValueError when too big, too deep or corrupt."""
    if len(raw) > max_bytes:
        raise ValueError(f"larger than {max_bytes} bytes")
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if json_depth(text) > max_depth:
        raise ValueError(f"JSON nested deeper than {max_depth}")
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None


def read_bytes(path: PathLike, *, max_bytes: int, dir_fd: Optional[int] = None) -> bytes:
    """At most ``max_bytes + 1`` bytes of a regular file, never through a
    symlink at the last component; OSError otherwise (ELOOP, ENOENT, ...)."""
    fd = os.open(os.fspath(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{os.fspath(path)}: not a regular file")
        chunks = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_json(path: PathLike, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH,
              dir_fd: Optional[int] = None) -> Optional[Dict[str, Any]]:
    """The JSON object at ``path`` or ``None`` (see the module doc for when)."""
    try:
        data = parse_json(read_bytes(path, max_bytes=max_bytes, dir_fd=dir_fd),
                          max_bytes=max_bytes, max_depth=max_depth)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
