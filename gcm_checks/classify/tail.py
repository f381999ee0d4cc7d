"""Read the end of a log within a fixed byte budget.

A 50 GB log must cost the same as a 50 KB one: we seek to ``size - max_bytes``
and read at most ``max_bytes``; nothing before that is touched. The epilog runs
as root and opens users' files itself (root-safely, as the user); it hands us
the fd. When we open a path ourselves we refuse to follow a final symlink
(O_NOFOLLOW), so a user cannot point their log at /etc/shadow (rule 5).
"""

from __future__ import annotations

import os
import stat
from typing import Tuple, Union

DEFAULT_MAX_BYTES = 1 << 20  # 1 MiB: the end of a failed job's log is where the cause is.


def read_tail(path_or_fd: Union[str, "os.PathLike[str]", int], max_bytes: int = DEFAULT_MAX_BYTES) -> Tuple[str, bool, int]:
    """Return (text, truncated, total_size) for the last ``max_bytes`` of a file.

    ``truncated`` is True when bytes before the window were skipped; the first
    (partial) line is then dropped so evidence never quotes half a line -
    unless the window holds nothing else (one line longer than the window).
    Bytes that are not UTF-8 are replaced, never fatal.
    """
    if max_bytes <= 0:
        raise ValueError("max_bytes must be positive")
    if isinstance(path_or_fd, int):
        return _read_fd_tail(path_or_fd, max_bytes)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(os.fspath(path_or_fd), flags)
    try:
        return _read_fd_tail(fd, max_bytes)
    finally:
        os.close(fd)


def _read_fd_tail(fd: int, max_bytes: int) -> Tuple[str, bool, int]:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        # A FIFO or device would block or never end: not a log we can bound.
        raise OSError(f"not a regular file (mode {stat.filemode(st.st_mode)})")
    size = st.st_size
    start = max(0, size - max_bytes)
    chunks = []
    got = 0
    pos = start
    while got < max_bytes:
        # pread leaves the caller's fd offset alone (the epilog may reuse it).
        data = os.pread(fd, min(max_bytes - got, 1 << 20), pos)
        if not data:
            break
        chunks.append(data)
        got += len(data)
        pos += len(data)
    raw = b"".join(chunks)
    truncated = start > 0
    if truncated:
        nl = raw.find(b"\n")
        if 0 <= nl < len(raw) - 1:
            raw = raw[nl + 1:]
        # else: one line longer than the window; its end is all we have, keep it.
    return raw.decode("utf-8", errors="replace"), truncated, size
