"""Read the kernel log for a time window: streaming, constant memory, bounded.

Sources, each yielding ``KernelLine(ts, text)`` with ``ts`` in wall-clock epoch
seconds (or None when a line carries no stamp we can place):

* ``/dev/kmsg`` - the live ring buffer, read non-blocking (the read stops at
  the end instead of waiting for new messages). Its stamps are microseconds
  since boot; they are converted with the boot time as ``dmesg -T`` does
  (wall clock minus CLOCK_BOOTTIME), so they drift by whatever NTP has
  stepped the clock since boot.
* ``journalctl _TRANSPORT=kernel -o short-iso-precise --since --until`` - the
  journal keeps what the ring buffer overwrote, across boots; run through
  ``gcm_checks.proc.run`` with a deadline like every other process.
* a file - ``dmesg`` (``[ 1234.567890] msg``, since boot: converted with the
  current boot time unless the caller knows better), ``dmesg -T``
  (``[Mon Nov 30 01:02:03 2026] msg``), syslog (``Nov 30 01:02:03 host
  kernel: msg``; the year is inferred), or ISO 8601 (journalctl
  short-iso-precise, rsyslog RFC 3339, ``dmesg --time-format iso``). Plain or
  ``.gz``. Files are read in large binary chunks and only lines containing
  ``contains`` (``b"NVRM"``) are decoded and stamped: that prefilter keeps a
  1 GiB scan near ``grep`` speed and memory constant (docs/benchmarks.md).

The window (``since``, ``until``) is inclusive at both ends and compared at
the stamp's own resolution: a line stamped ``10:00:00`` by a one-second format
counts for a job that started at ``10:00:00.4`` (it may have been logged at
``.9``), but one stamped ``09:59:59`` does not. A line without a stamp is
dropped when a window is given - placing it is a guess, and guessing is how a
peer kept nodes drained until logrotate. Without a window, nothing is dropped.
"""

from __future__ import annotations

import errno
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo
from typing import IO, Any, Iterator, List, Optional, Tuple

DEFAULT_CONTAINS = b"NVRM"
XID_MARK = b"NVRM: Xid"
# What the fast file path searches for (issue 18): XID lines, the driver's
# fallen-off-the-bus text that comes without an Xid line (single-line and the
# opening of the three-line form), and NVSwitch SXids (no "NVRM" in them).
# "NVRM: The NVIDIA GPU <bus>", the opening of the three-line form, is not a
# mark of its own (one more pass over every chunk): a "fallen off the bus"
# hit looks back for it (LOOKBACK).
FILE_MARKS = (XID_MARK, b"fallen off the bus", b": SXid (")
LOOKBACK_MARK = b"fallen off the bus"
LOOKBACK = (b"NVRM: The NVIDIA GPU", b"NVRM: (PCI ID")
LOOKBACK_LINES = 2
# What the line-by-line sources (kmsg, journal, text) keep.
KERNEL_MARKS = (DEFAULT_CONTAINS, b"SXid")
FOLLOW_LINES = 4  # lines after an XID examined for its continuation
_CHUNK = 1 << 20  # 1 MiB reads into one reused buffer: memory is constant
_MAX_LINE = 1 << 20  # a "line" longer than this is binary junk; skip it
_KMSG_RECORD = 16384  # kmsg returns one record per read; records are < 8 KiB


class KernelLogUnavailable(Exception):
    """We could not read the kernel log (permission, missing tool, timeout).

    Callers turn this into ``unknown``, never ``fail`` (rule 2).
    """


@dataclass(frozen=True)
class KernelLine:
    ts: Optional[float]  # wall-clock epoch seconds, None = no usable stamp
    text: str  # the whole line as read (prefix and all)
    resolution: float = 1e-6  # 1.0 for second-resolution stamps


@dataclass
class Coverage:
    """What a read saw, filled in while iterating (for messages and tests)."""

    source: str = ""
    earliest: Optional[float] = None  # oldest stamp seen (kmsg: ring-buffer start)
    lines: int = 0  # candidate lines decoded
    undated: int = 0  # candidates dropped for lack of a stamp
    skipped_bytes: int = 0  # the parts of a time-sorted file outside the window, not read
    notes: List[str] = field(default_factory=list)

    def saw(self, ts: Optional[float]) -> None:
        if ts is not None and (self.earliest is None or ts < self.earliest):
            self.earliest = ts


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


# --------------------------------------------------------------------------
# Files


def iter_lines_file(
    f: IO[bytes],
    *,
    contains: Any = FILE_MARKS,
    follow: int = 0,
    follow_contains: bytes = DEFAULT_CONTAINS,
    chunk_size: int = _CHUNK,
) -> Iterator[str]:
    """Candidate lines of a binary stream, decoded; memory bounded by chunk_size.

    With ``contains`` (a byte string or a tuple of them) only lines holding one are decoded: the
    search runs over the raw chunk (``bytes.find`` is a C loop), so lines
    without it cost almost nothing. ``follow`` > 0 also yields, among the
    ``follow`` lines after each hit, those holding ``follow_contains``: the
    continuation of a multi-line NVRM message, found without decoding every
    NVRM line of the file.
    """
    # One reusable buffer, filled with readinto: no fresh 8 MiB object per
    # read (page faults cost as much as the search), and 1 MiB chunks stay
    # in cache between the copy and the search.
    buf = bytearray(chunk_size + _MAX_LINE)
    mv = memoryview(buf)
    tl = 0  # bytes of an incomplete line carried at the front of buf
    skipping = False  # inside a line too long to be a kernel message
    left = [0]  # follow lines still to examine, carried across chunks
    while True:
        k = f.readinto(mv[tl:tl + chunk_size])
        if not k:
            break
        end = tl + k
        begin = 0
        if skipping:
            nl = buf.find(b"\n", 0, end)
            if nl < 0:
                tl = 0
                continue
            begin, skipping = nl + 1, False
        last = buf.rfind(b"\n", begin, end)
        if last >= 0:
            yield from _candidates(buf, begin, last + 1, contains, follow, follow_contains, left)
            begin = last + 1
        rest = end - begin
        if rest > _MAX_LINE:
            skipping, tl = True, 0
        else:
            buf[0:rest] = buf[begin:end]
            tl = rest
    if tl and not skipping:
        last_line = bytes(buf[:tl]) + b"\n"
        yield from _candidates(last_line, 0, len(last_line), contains, follow, follow_contains, left)


def _candidates(buf: Any, begin: int, end: int, contains: Any, follow: int, follow_contains: bytes,
                left: List[int]) -> Iterator[str]:
    """Candidate lines in ``buf[begin:end]``, which holds whole lines only."""
    marks: Tuple[bytes, ...] = (contains,) if isinstance(contains, bytes) else tuple(contains or ())
    if len(marks) > 1:
        yield from _candidates_multi(buf, begin, end, marks, follow, follow_contains, left)
        return
    if marks:
        contains = marks[0]
    if contains is None or not marks:
        start = begin
        while start < end:
            nl = buf.find(b"\n", start, end)
            nl = end - 1 if nl < 0 else nl
            yield buf[start:nl].decode("utf-8", "replace").rstrip("\r")
            start = nl + 1
        return
    pos = begin  # always the start of a line
    while pos < end:
        while left[0] > 0 and pos < end:
            nl = buf.find(b"\n", pos, end)
            nl = end - 1 if nl < 0 else nl
            line = buf[pos:nl]
            if contains in line:
                left[0] = 0  # a new hit: the search below takes it
                break
            if follow_contains in line:
                yield line.decode("utf-8", "replace").rstrip("\r")
            left[0] -= 1
            pos = nl + 1
        hit = buf.find(contains, pos, end)
        if hit < 0:
            return
        r = buf.rfind(b"\n", pos, hit)
        start = r + 1 if r >= 0 else pos
        nl = buf.find(b"\n", hit, end)
        nl = end - 1 if nl < 0 else nl
        yield buf[start:nl].decode("utf-8", "replace").rstrip("\r")
        left[0] = follow
        pos = nl + 1


def _candidates_multi(buf: Any, begin: int, end: int, marks: Tuple[bytes, ...], follow: int, follow_contains: bytes,
                      left: List[int]) -> Iterator[str]:
    """``_candidates`` for several marks: each mark's next position is kept and
    searched again only once passed, so each mark scans the chunk once."""
    nxt = {m: -2 for m in marks}  # -2: not searched yet; -1: none left in this chunk
    pos = begin
    while pos < end:
        while left[0] > 0 and pos < end:
            nl = buf.find(b"\n", pos, end)
            nl = end - 1 if nl < 0 else nl
            line = buf[pos:nl]
            if any(m in line for m in marks):
                left[0] = 0
                break
            if follow_contains in line:
                yield line.decode("utf-8", "replace").rstrip("\r")
            left[0] -= 1
            pos = nl + 1
        hit = -1
        for m in marks:
            p = nxt[m]
            if p == -2 or (0 <= p < pos):
                p = nxt[m] = buf.find(m, pos, end)
            if p >= 0 and (hit < 0 or p < hit):
                hit = p
        if hit < 0:
            return
        r = buf.rfind(b"\n", pos, hit)
        start = r + 1 if r >= 0 else pos
        nl = buf.find(b"\n", hit, end)
        nl = end - 1 if nl < 0 else nl
        if nxt.get(LOOKBACK_MARK) == hit:
            yield from _look_back(buf, pos, start)
        yield buf[start:nl].decode("utf-8", "replace").rstrip("\r")
        left[0] = follow
        pos = nl + 1


def _look_back(buf: Any, pos: int, start: int) -> Iterator[str]:
    """The opening lines of the three-line fallen-off-the-bus message before
    ``start`` (not yet yielded: at or after ``pos``), oldest first. Lines in
    the previous 1 MiB chunk are out of reach: the event is then read from
    its last line alone (XID 79 without a bus id)."""
    found: List[str] = []
    end = start
    for _ in range(LOOKBACK_LINES):
        if end <= pos:
            break
        r = buf.rfind(b"\n", pos, end - 1)
        b = r + 1 if r >= 0 else pos
        line = buf[b:end - 1]
        if not any(m in line for m in LOOKBACK):
            break
        found.append(line.decode("utf-8", "replace").rstrip("\r"))
        end = b
    yield from reversed(found)


def _open_log_file(path: str) -> IO[bytes]:
    """Open a kernel log file without trusting a user's symlink (rule 5)."""
    from gcm_checks.safeio import UnsafePath, open_nofollow

    try:
        fd = open_nofollow(os.path.abspath(path))
    except UnsafePath as e:
        raise KernelLogUnavailable(f"{path}: refused: {e}") from None
    except OSError as e:
        raise KernelLogUnavailable(f"{path}: {e.strerror or e}") from None
    f = os.fdopen(fd, "rb", buffering=0)
    if path.endswith(".gz"):
        import gzip

        return gzip.GzipFile(fileobj=f, mode="rb")  # type: ignore[return-value]
    return f


def read_file(
    path: str,
    *,
    since: Optional[float] = None,
    until: Optional[float] = None,
    contains: Any = FILE_MARKS,
    boot: Optional[float] = None,
    tz: Optional[tzinfo] = None,
    coverage: Optional[Coverage] = None,
) -> Iterator[KernelLine]:
    """Stream a kernel log file, yielding candidate lines in the window:
    XID, fallen-off-the-bus and SXid lines and the NVRM lines right after
    them (their continuation).

    ``boot`` converts ``[ 123.456]`` stamps and saved ``/dev/kmsg`` records
    (``pri,seq,usec,flags;msg``); without it, a boot time the capture
    carries in its first lines (``# boot_time: <ISO or @epoch>`` or
    ``btime <epoch>`` as in /proc/stat) is used, else the current boot's
    (right for ``dmesg > file`` on this node since its last boot).
    """
    f = _open_log_file(path)
    cov = coverage if coverage is not None else Coverage()
    cov.source = cov.source or f"file:{path}"
    if boot is None:
        try:
            boot = capture_boot_time(f.read(_HEAD))
            f.seek(0)
        except (OSError, ValueError) as e:
            f.close()
            raise KernelLogUnavailable(f"{path}: read failed: {e}") from None
        if boot is not None:
            cov.notes.append(f"boot time {iso(boot)} taken from the capture")
    ctx = StampContext(boot_time=boot if boot is not None else boot_time(), tz=tz, ref=until)
    try:
        reader: Any = f
        if (since is not None or until is not None) and not path.endswith(".gz"):
            from gcm_checks.gather.logseek import seek_to_window

            # Wall-clock stamps only (boot_time=None): monotonic ones restart at each boot.
            reader, cov.skipped_bytes = seek_to_window(
                f, since, until, lambda ref: lambda line: stamp(line, StampContext(None, tz, ref))[0])
        lines = iter_lines_file(reader, contains=contains, follow=FOLLOW_LINES if contains is not None else 0)
        yield from _stamped(lines, ctx, since, until, cov)
    except OSError as e:
        raise KernelLogUnavailable(f"{path}: read failed: {e}") from None
    finally:
        f.close()


_HEAD = 4096  # where a capture's own boot time may be
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


def _marked(line: str, marks: Any) -> bool:
    if marks is None:
        return True
    if isinstance(marks, (str, bytes)):
        return marks in line
    return any(m in line for m in marks)


def read_text(
    text: str,
    *,
    since: Optional[float] = None,
    until: Optional[float] = None,
    contains: Any = tuple(m.decode() for m in KERNEL_MARKS),
    boot: Optional[float] = None,
    tz: Optional[tzinfo] = None,
    coverage: Optional[Coverage] = None,
) -> Iterator[KernelLine]:
    """The same as ``read_file`` for text already in memory (simulation, tests)."""
    cov = coverage if coverage is not None else Coverage()
    cov.source = cov.source or "text"
    if boot is None:
        boot = capture_boot_time(text[:_HEAD].encode("utf-8", "replace"))
    ctx = StampContext(boot_time=boot if boot is not None else boot_time(), tz=tz, ref=until)
    lines = (ln for ln in text.splitlines() if _marked(ln, contains))
    yield from _stamped(lines, ctx, since, until, cov)


def _stamped(lines, ctx: StampContext, since, until, cov: Coverage) -> Iterator[KernelLine]:
    windowed = since is not None or until is not None
    for line in lines:
        cov.lines += 1
        ts, res = stamp(line, ctx)
        cov.saw(ts)
        if ts is None and windowed:
            cov.undated += 1
            continue
        if in_window(ts, res, since, until):
            yield KernelLine(ts, line, res)


# --------------------------------------------------------------------------
# /dev/kmsg


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


def read_kmsg(
    path: str = "/dev/kmsg",
    *,
    since: Optional[float] = None,
    until: Optional[float] = None,
    contains: Any = KERNEL_MARKS,
    boot: Optional[float] = None,
    coverage: Optional[Coverage] = None,
    max_records: int = 2_000_000,
) -> Iterator[KernelLine]:
    """Read the kernel ring buffer from its oldest record to now, without blocking.

    ``coverage.earliest`` tells the caller how far back the ring buffer
    reached: if it is after ``since``, the window start was overwritten and
    the caller should fall back to the journal.
    """
    cov = coverage if coverage is not None else Coverage()
    cov.source = cov.source or "kmsg"
    b = boot if boot is not None else boot_time()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise KernelLogUnavailable(f"{path}: {e.strerror or e}") from None
    try:
        for _ in range(max_records):
            try:
                rec = os.read(fd, _KMSG_RECORD)
            except BlockingIOError:
                break  # caught up with the writer: done, do not wait
            except BrokenPipeError:
                continue  # records we were about to read were overwritten
            except InterruptedError:
                continue
            except OSError as e:
                if e.errno == errno.EINVAL:
                    continue  # record larger than our buffer: skip it
                raise KernelLogUnavailable(f"{path}: read failed: {e.strerror or e}") from None
            if not rec:
                break
            # Every record is stamped, so track coverage before filtering.
            if cov.earliest is None:
                kl = parse_kmsg_record(rec, b)
                if kl is not None:
                    cov.saw(kl.ts)
            if not _marked(rec, contains):
                continue
            kl = parse_kmsg_record(rec, b)
            if kl is None:
                continue
            cov.lines += 1
            if in_window(kl.ts, kl.resolution, since, until):
                yield kl
    finally:
        os.close(fd)


# --------------------------------------------------------------------------
# journald


def read_journal(
    since: Optional[float],
    until: Optional[float],
    *,
    timeout: float,
    journalctl: Optional[str] = None,
    contains: Any = tuple(m.decode() for m in KERNEL_MARKS),
    coverage: Optional[Coverage] = None,
) -> Iterator[KernelLine]:
    """Kernel messages from the journal for the window, across boots.

    ``_TRANSPORT=kernel`` rather than ``-k``: ``-k`` implies the current boot
    only, and a health scan "since last scan" may span a reboot.
    """
    from gcm_checks import proc

    cov = coverage if coverage is not None else Coverage()
    cov.source = cov.source or "journal"
    exe = journalctl or proc.which("journalctl")
    if exe is None:
        raise KernelLogUnavailable("journalctl: not found")
    # No -q: it hides "No journal files were found", which must read as
    # "could not tell", not as "no XIDs".
    argv = [exe, "_TRANSPORT=kernel", "-o", "short-iso-precise", "--no-pager"]
    if since is not None:
        argv += ["--since", f"@{int(since)}"]  # whole seconds; filtered precisely below
    if until is not None:
        argv += ["--until", f"@{int(until) + 1}"]
    r = proc.run(argv, timeout=timeout, env={"LC_ALL": "C", "TZ": os.environ.get("TZ", ":/etc/localtime")})
    if not r.ok:
        raise KernelLogUnavailable(r.describe())
    if "No journal files were found" in r.stderr or "No journal files were found" in r.stdout:
        raise KernelLogUnavailable("journalctl: no journal files on this node")
    ctx = StampContext(tz=None, ref=until)
    lines = (ln for ln in r.stdout.splitlines() if _marked(ln, contains))
    yield from _stamped(lines, ctx, since, until, cov)


# --------------------------------------------------------------------------
# Choosing a source

SOURCES = ("auto", "kmsg", "journal", "file")


def kmsg_earliest(path: str = "/dev/kmsg", boot: Optional[float] = None) -> Optional[float]:
    """Stamp of the oldest record still in the ring buffer (one read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise KernelLogUnavailable(f"{path}: {e.strerror or e}") from None
    try:
        for _ in range(16):
            try:
                rec = os.read(fd, _KMSG_RECORD)
            except (BrokenPipeError, InterruptedError):
                continue
            except BlockingIOError:
                return None
            except OSError as e:
                raise KernelLogUnavailable(f"{path}: read failed: {e.strerror or e}") from None
            kl = parse_kmsg_record(rec, boot if boot is not None else boot_time())
            return kl.ts if kl else None
        return None
    finally:
        os.close(fd)


def read_window(
    source: str = "auto",
    *,
    path: Optional[str] = None,
    since: Optional[float] = None,
    until: Optional[float] = None,
    timeout: float = 5.0,
    boot: Optional[float] = None,
    tz: Optional[tzinfo] = None,
    kmsg_path: str = "/dev/kmsg",
    coverage: Optional[Coverage] = None,
) -> Iterator[KernelLine]:
    """Kernel lines in the window from the chosen source.

    ``auto``: a file when ``path`` is given; else ``/dev/kmsg`` when its ring
    buffer still reaches back to ``since`` (no process, no journal needed);
    else the journal; else what ``/dev/kmsg`` has, with a coverage note.
    Raises KernelLogUnavailable (lazily, on first iteration) when nothing
    can be read.
    """
    cov = coverage if coverage is not None else Coverage()
    if source not in SOURCES:
        raise ValueError(f"kernel log source must be one of {SOURCES}, not {source!r}")
    if source == "file" or (source == "auto" and path):
        if not path:
            raise KernelLogUnavailable("source 'file' needs a kernel log path")
        return read_file(path, since=since, until=until, boot=boot, tz=tz, coverage=cov)
    if source == "kmsg":
        return read_kmsg(kmsg_path, since=since, until=until, boot=boot, coverage=cov)
    if source == "journal":
        return read_journal(since, until, timeout=timeout, coverage=cov)
    return _auto(kmsg_path, since, until, timeout, boot, cov)


def _auto(kmsg_path: str, since, until, timeout: float, boot, cov: Coverage) -> Iterator[KernelLine]:
    kmsg_error = ""
    try:
        b = boot if boot is not None else boot_time()
        earliest = kmsg_earliest(kmsg_path, b)
        # A ring buffer that still starts at boot (stamp 0) has lost nothing:
        # it covers everything this boot logged, whatever the window.
        if since is None or earliest is None or earliest <= since or earliest - b < 1.0:
            yield from read_kmsg(kmsg_path, since=since, until=until, boot=boot, coverage=cov)
            return
        cov.notes.append(f"kernel ring buffer starts at {iso(earliest)}, after the window start; using the journal")
    except KernelLogUnavailable as e:
        kmsg_error = str(e)
    try:
        # The journal's whole output arrives at once; only then yield.
        lines = list(read_journal(since, until, timeout=timeout, coverage=cov))
    except KernelLogUnavailable as e:
        if kmsg_error:
            raise KernelLogUnavailable(f"{kmsg_error}; {e}") from None
        cov.notes.append(f"journal unavailable ({e}); the window start may be missing from the ring buffer")
        cov.source = "kmsg"
        yield from read_kmsg(kmsg_path, since=since, until=until, boot=boot, coverage=cov)
        return
    yield from lines
