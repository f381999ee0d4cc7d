"""File descriptors of the output pump: pipes, ptys, writes that never raise.

Split from ``launcher`` so the pump's plumbing reads on one screen.
"""

from __future__ import annotations

import os
import select


def isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def raw_output(fd: int) -> None:
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


def copy_winsize(src: int, dst: int) -> None:
    import fcntl
    import termios

    try:
        ws = fcntl.ioctl(src, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(dst, termios.TIOCSWINSZ, ws)
    except OSError:
        pass


def grow_pipe(fd: int, size: int = 1 << 20) -> None:
    """Best effort: a 1 MiB pipe (Linux F_SETPIPE_SZ; capped by
    /proc/sys/fs/pipe-max-size for unprivileged users)."""
    import fcntl

    try:
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except OSError:
        pass


def write_all(fd: int, data: bytes) -> bool:
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


def say(fd: int, text: str) -> None:
    write_all(fd, text.encode("utf-8", "replace"))


def close_fd(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
