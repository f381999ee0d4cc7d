"""Kernel log parsing: where a line's time stamp is, what epoch it means,
and whether it falls in a window. Pure text in, epoch out (``boot_time``
reads the clock; nothing here opens a file).

The window (``since``, ``until``) is inclusive at both ends and compared at
the stamp's own resolution: a line stamped ``10:00:00`` by a one-second format
counts for a job that started at ``10:00:00.4`` (it may have been logged at
``.9``), but one stamped ``09:59:59`` does not. A line without a stamp is
dropped when a window is given - placing it is a guess, and guessing is how a
peer kept nodes drained until logrotate. Without a window, nothing is dropped.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Optional, Tuple


@dataclass(frozen=True)
class KernelLine:
    ts: Optional[float]  # wall-clock epoch seconds, None = no usable stamp
    text: str  # the whole line as read (prefix and all)
    resolution: float = 1e-6  # 1.0 for second-resolution stamps


# --------------------------------------------------------------------------
# Time helpers


def boot_time() -> float:
    """Wall-clock epoch of boot, as ``dmesg -T`` computes it."""
    try:
        return time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
    except (AttributeError, OSError):
        pass
    try:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return time.time() - time.monotonic()


_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}


def _naive_epoch(y: int, mo: int, d: int, h: int, mi: int, s: int, tz: Optional[tzinfo]) -> float:
    """Epoch for a wall-clock time without offset: local time unless ``tz``."""
    if tz is None:
        return time.mktime((y, mo, d, h, mi, s, 0, 0, -1))
    return datetime(y, mo, d, h, mi, s, tzinfo=tz).timestamp()


def iso(ts: float, tz: Optional[tzinfo] = None) -> str:
    """ISO 8601 with offset (local time unless ``tz``), microseconds only if any."""
    dt = datetime.fromtimestamp(ts, tz) if tz is not None else datetime.fromtimestamp(ts).astimezone()
    if dt.microsecond == 0:
        return dt.isoformat(timespec="seconds")
    return dt.isoformat(timespec="microseconds")


_ISO_ARG = re.compile(
    r"^(\d{4})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d)(?::(\d\d)(?:[.,](\d{1,9}))?)?)?\s*(Z|[+-]\d\d:?\d\d)?$"
)


def parse_iso(value: str, tz: Optional[tzinfo] = None) -> float:
    """Parse an ISO 8601 time (``2026-11-30T01:02:03+00:00``, ``...Z``,
    ``2026-11-30 01:02``, ``2026-11-30``) or ``@epoch`` into epoch seconds.

    Python 3.9's ``fromisoformat`` rejects ``Z`` and ``+0000``, hence our own.
    """
    v = value.strip()
    if v.startswith("@"):
        return float(v[1:])
    m = _ISO_ARG.match(v)
    if not m:
        raise ValueError(f"not an ISO 8601 time: {value!r}")
    y, mo, d, h, mi, s, frac, off = m.groups()
    base = _iso_epoch(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), off, tz)
    return base + (float("0." + frac) if frac else 0.0)


def _iso_epoch(y: int, mo: int, d: int, h: int, mi: int, s: int, off: Optional[str], tz: Optional[tzinfo]) -> float:
    if not off:
        return _naive_epoch(y, mo, d, h, mi, s, tz)
    if off == "Z":
        offset = timedelta(0)
    else:
        sign = -1 if off[0] == "-" else 1
        digits = off[1:].replace(":", "")
        offset = sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:4]))
    return datetime(y, mo, d, h, mi, s, tzinfo=timezone(offset)).timestamp()


# --------------------------------------------------------------------------
# Line stamps. Only candidate lines (those containing ``contains``) get here.

# Wall-clock stamps may sit anywhere before the message: a syslog relay or a
# log shipper often prefixes its own text ("Xid errors on instance: h, Error:
# May 19 07:08:57 h kernel: ..."), and ``dmesg --decode`` prefixes
# "kern  :warn  : ".
_RE_ISO = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(Z|[+-]\d\d:?\d\d)?(?=[\s\]])"
)
_RE_DMESG_T = re.compile(r"\[(?:\w{3}) (\w{3}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\]")
_RE_SYSLOG = re.compile(r"(?:^|\s)(\w{3}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) \S+ ")
_RE_MONO = re.compile(r"\[\s*(\d+)\.(\d+)\]")
# A saved /dev/kmsg record: "pri,seq,usec,flags[,...];message" (Documentation/ABI/testing/dev-kmsg).
_RE_KMSG = re.compile(r"^\s*\d+,\d+,(\d+),[^;]*;")
# Where the message starts: stamps are only looked for before it.
_RE_MSG_START = re.compile(r"NVRM|nvidia-nvswitch\d|SXid \(")


@dataclass(frozen=True)
class StampContext:
    boot_time: Optional[float] = None  # for ``[ 123.456]`` stamps; None = no conversion
    tz: Optional[tzinfo] = None  # zone for stamps without an offset; None = local
    ref: Optional[float] = None  # "now" for syslog year inference


def stamp(line: str, ctx: StampContext) -> Tuple[Optional[float], float]:
    """(epoch or None, resolution) for one kernel log line."""
    # Only look before the message itself, so a date inside a message (a
    # filename, a quoted log) is never taken for the stamp.
    ms = _RE_MSG_START.search(line)
    head = line if ms is None else line[:ms.start()]
    k = _RE_KMSG.match(head)
    if k:
        # No wall clock in a kmsg record: microseconds since boot, placed with the boot time.
        if ctx.boot_time is None:
            return None, 1e-6
        return ctx.boot_time + int(k.group(1)) / 1e6, 1e-6
    m = _RE_ISO.search(head)
    if m:
        y, mo, d, h, mi, s, frac, off = m.groups()
        ts = _iso_epoch(int(y), int(mo), int(d), int(h), int(mi), int(s), off, ctx.tz)
        if frac:
            return ts + float("0." + frac), 1e-6
        return ts, 1.0
    m = _RE_DMESG_T.search(head)
    if m:
        mon, d, h, mi, s, y = m.groups()
        if mon in _MONTHS:
            return _naive_epoch(int(y), _MONTHS[mon], int(d), int(h), int(mi), int(s), ctx.tz), 1.0
    m = _RE_SYSLOG.search(head)
    if m and m.group(1) in _MONTHS:
        mon, d, h, mi, s = m.groups()
        return _syslog_epoch(_MONTHS[mon], int(d), int(h), int(mi), int(s), ctx), 1.0
    m = _RE_MONO.search(head)
    if m and ctx.boot_time is not None:
        return ctx.boot_time + int(m.group(1)) + float("0." + m.group(2)), 1e-6
    return None, 1.0


def _syslog_epoch(mo: int, d: int, h: int, mi: int, s: int, ctx: StampContext) -> float:
    # Classic syslog has no year. Take the reference's year; a stamp more
    # than a day in the future belongs to last year (a December line read in
    # January).
    ref = ctx.ref if ctx.ref is not None else time.time()
    year = (datetime.fromtimestamp(ref, ctx.tz) if ctx.tz else datetime.fromtimestamp(ref)).year
    try:
        ts = _naive_epoch(year, mo, d, h, mi, s, ctx.tz)
    except ValueError:  # Feb 29 in a non-leap year
        ts = _naive_epoch(year - 1, mo, d, h, mi, s, ctx.tz)
    if ts > ref + 86400:
        ts = _naive_epoch(year - 1, mo, d, h, mi, s, ctx.tz)
    return ts


def in_window(ts: Optional[float], resolution: float, since: Optional[float], until: Optional[float]) -> bool:
    """Inclusive window test at the stamp's resolution (see module doc).

    A stamp of resolution ``r`` stands for some instant in ``[ts, ts + r)``;
    it counts when that span can reach the window.
    """
    if since is None and until is None:
        return True
    if ts is None:
        return False
    if since is not None and ts + resolution <= since:
        return False
    if until is not None and ts > until:
        return False
    return True


_RE_CAPTURE_BOOT = re.compile(rb"^(?:#\s*boot[_ -]?time\s*[:=]\s*(?P<iso>\S+)|btime\s+(?P<btime>\d+))\s*$",
                              re.MULTILINE | re.IGNORECASE)


def capture_boot_time(head: bytes) -> Optional[float]:
    """The boot time a capture records in its first lines, or None."""
    m = _RE_CAPTURE_BOOT.search(head or b"")
    if not m:
        return None
    if m.group("btime"):
        return float(m.group("btime"))
    try:
        return parse_iso(m.group("iso").decode("ascii", "replace"))
    except ValueError:
        return None

def parse_kmsg_record(rec: bytes, boot: float) -> Optional[KernelLine]:
    """One ``/dev/kmsg`` record: ``pri,seq,usec,flags[,...];message\\n[ KEY=v\\n]``.

    See Documentation/ABI/testing/dev-kmsg. Non-printable bytes arrive
    escaped as ``\\xNN``; continuation lines (dictionary) start with a space.
    """
    semi = rec.find(b";")
    if semi < 0:
        return None
    fields = rec[:semi].split(b",")
    if len(fields) < 3:
        return None
    try:
        usec = int(fields[2])
    except ValueError:
        return None
    nl = rec.find(b"\n", semi)
    msg = rec[semi + 1:nl if nl >= 0 else len(rec)].decode("utf-8", "replace")
    mono = usec / 1e6
    return KernelLine(boot + mono, f"[{mono:12.6f}] {msg}", 1e-6)
