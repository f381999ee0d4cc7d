"""Seek to a time window in a time-sorted log file (binary search).

A 1-day XID window in a 30-day kernel log used to cost the whole file: the
prefilter is fast, but it still reads every byte. Log files written by
syslog, journald exports and ``dmesg -T`` captures are appended in time
order, so the offset where the window starts can be found by bisection over
byte offsets, reading a few lines at each probe (about 30 probes for 30 GiB).

Guarded, because a wrong seek would hide an XID:

* only wall-clock stamps take part (ISO 8601, ``dmesg -T``, syslog). A file
  of ``[ 123.456]`` monotonic stamps restarts at each boot and is not sorted;
  no probe finds a stamp there, so nothing is skipped;
* the file's first and last stamps must be in order, and the start sits
  ``margin_s`` (default 10 minutes) before ``since``: a clock step or
  reordering by a log shipper smaller than that loses nothing;
* the offsets returned are always line starts; the start is ``0`` and the
  end the file's size whenever anything is in doubt (no stamp, unsorted
  ends, a probe read error). The end is found the same way: the read stops
  at the first stamped line more than ``margin_s`` after the window.

Pure over a seekable binary file; gzip files are not seeked (no random
access) and are read whole as before.
"""

from __future__ import annotations

import os
from typing import IO, Callable, Optional, Tuple

PROBE_BYTES = 64 * 1024  # read this much at a probe to find a stamped line
MIN_SPAN = 256 * 1024  # stop bisecting when the interval is this small
DEFAULT_MARGIN_S = 600.0

Stamper = Callable[[str], Optional[float]]


def _first_stamp(f: IO[bytes], offset: int, stamper: Stamper, size: int) -> Tuple[Optional[float], int]:
    """(stamp of the first stamped whole line at or after ``offset``, that
    line's start offset)."""
    f.seek(offset)
    data = f.read(PROBE_BYTES)
    pos = 0
    if offset > 0:  # we landed mid-line: the next line starts after '\n'
        nl = data.find(b"\n")
        if nl < 0:
            return None, size
        pos = nl + 1
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            break  # a partial line at the end of the probe
        ts = stamper(data[pos:nl].decode("utf-8", "replace"))
        if ts is not None:
            return ts, offset + pos
        pos = nl + 1
    return None, offset + pos


def _last_stamp(f: IO[bytes], size: int, stamper: Stamper) -> Optional[float]:
    start = max(0, size - PROBE_BYTES)
    f.seek(start)
    data = f.read(PROBE_BYTES)
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first piece is a partial line
    for raw in reversed(lines):
        ts = stamper(raw.decode("utf-8", "replace")) if raw else None
        if ts is not None:
            return ts
    return None


def window_start(f: IO[bytes], since: float, stamper: Stamper, *, margin_s: float = DEFAULT_MARGIN_S,
                 size: Optional[int] = None) -> int:
    """Byte offset (a line start) from which a time-sorted file must be read
    to see every line stamped at or after ``since - margin_s``; 0 when the
    file does not look time-sorted or anything is in doubt. Leaves the file
    position undefined: the caller seeks to the returned offset."""
    try:
        if size is None:
            size = os.fstat(f.fileno()).st_size
        if size <= 2 * MIN_SPAN:
            return 0
        target = since - margin_s
        first, _ = _first_stamp(f, 0, stamper, size)
        last = _last_stamp(f, size, stamper)
        if first is None or last is None or last < first or first >= target:
            return 0
        # Invariant: the first stamped line at or after ``lo`` is before the
        # target (true at 0); ``hi`` is at or past a line stamped >= target.
        lo, hi = 0, size
        while hi - lo > MIN_SPAN:
            mid = (lo + hi) // 2
            ts, _ = _first_stamp(f, mid, stamper, size)
            if ts is None:  # a long stretch without stamps: stop narrowing, stay safe
                break
            if ts < target:
                lo = mid
            else:
                hi = mid
        if lo == 0:
            return 0
        # Start at the first whole line after ``lo``, stamped or not (an
        # unstamped continuation line must not be skipped).
        f.seek(lo)
        nl = f.read(PROBE_BYTES).find(b"\n")
        return lo + nl + 1 if nl >= 0 else 0
    except (OSError, ValueError):
        return 0


def window_end(f: IO[bytes], until: float, stamper: Stamper, *, margin_s: float = DEFAULT_MARGIN_S,
               size: Optional[int] = None) -> int:
    """Byte offset (a line start) past which a time-sorted file holds only
    lines stamped after ``until + margin_s``; the file's size when in doubt."""
    try:
        if size is None:
            size = os.fstat(f.fileno()).st_size
        if size <= 2 * MIN_SPAN:
            return size
        target = until + margin_s
        first, _ = _first_stamp(f, 0, stamper, size)
        last = _last_stamp(f, size, stamper)
        if first is None or last is None or last < first or last <= target:
            return size
        # Invariant: the first stamped line at or after ``hi`` is after the
        # target; the one at or after ``lo`` is not (or ``lo`` is 0).
        lo, hi = 0, size
        while hi - lo > MIN_SPAN:
            mid = (lo + hi) // 2
            ts, _ = _first_stamp(f, mid, stamper, size)
            if ts is None:
                return size
            if ts > target:
                hi = mid
            else:
                lo = mid
        if hi >= size:
            return size
        ts, start = _first_stamp(f, hi, stamper, size)
        # End before the first stamped line after ``hi``: it and all that
        # follow are past the target; what lies before it is read.
        return start if ts is not None and ts > target and start < size else size
    except (OSError, ValueError):
        return size if size is not None else 0


class Bounded:
    """A raw binary reader that stops after ``limit`` bytes (the window's end)."""

    def __init__(self, f: IO[bytes], limit: int) -> None:
        self._f, self._left = f, max(0, limit)

    def readinto(self, b: "bytearray | memoryview") -> int:
        if self._left <= 0:
            return 0
        mv = memoryview(b)
        n = self._f.readinto(mv[: self._left] if len(mv) > self._left else mv) or 0
        self._left -= n
        return n

    def read(self, n: int = -1) -> bytes:
        n = self._left if n is None or n < 0 else min(n, self._left)
        data = self._f.read(n) if n > 0 else b""
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._f.close()


def seek_to_window(f: IO[bytes], since: Optional[float], until: Optional[float],
                   stamper_for: Callable[[Optional[float]], Stamper]) -> Tuple[IO[bytes], int]:
    """The reader for the window of a time-sorted file, and the bytes it
    skips (0: the whole file is read). ``f`` is positioned at the start.

    ``stamper_for(ref)`` makes the line stamper; ``ref`` dates year-less
    syslog stamps. The file's last write dates its last line, so lines after
    the window do not look a year old and unsort the file.
    """
    try:
        size = os.fstat(f.fileno()).st_size
        ref: Optional[float] = max(until or 0.0, os.fstat(f.fileno()).st_mtime)
    except (OSError, AttributeError, ValueError):
        f.seek(0)
        return f, 0
    stamper = stamper_for(ref)
    start = window_start(f, since, stamper, size=size) if since is not None else 0
    end = window_end(f, until, stamper, size=size) if until is not None else size
    if end <= start:  # in doubt (or an empty window): read from the start, to the end
        start, end = 0, size
    f.seek(start)
    skipped = start + (size - end)
    return (Bounded(f, end - start) if end < size else f), skipped
