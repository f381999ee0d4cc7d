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

Stamps and the window test are ``kernel_log_parse``'s (its docstring says
how a window is compared); the chunked prefilter of files is
``kernel_log_lines``'s. A line without a stamp is dropped when a window is
given: placing it is a guess, and guessing is how a peer kept nodes drained
until logrotate. Without a window, nothing is dropped.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import IO, Any, Iterator, List, Optional

# The parsing and line-scanning names, importable from here as before.
from gcm_checks.gather.kernel_log_lines import (  # noqa: F401
    DEFAULT_CONTAINS,
    FILE_MARKS,
    XID_MARK,
    iter_lines_file,
)
from gcm_checks.gather.kernel_log_parse import (  # noqa: F401
    KernelLine,
    StampContext,
    boot_time,
    capture_boot_time,
    in_window,
    iso,
    parse_iso,
    parse_kmsg_record,
    stamp,
)

# What the line-by-line sources (kmsg, journal, text) keep.
KERNEL_MARKS = (DEFAULT_CONTAINS, b"SXid")
FOLLOW_LINES = 4  # lines after an XID examined for its continuation
_KMSG_RECORD = 16384  # kmsg returns one record per read; records are < 8 KiB


class KernelLogUnavailable(Exception):
    """We could not read the kernel log (permission, missing tool, timeout).

    Callers turn this into ``unknown``, never ``fail`` (rule 2).
    """


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
# Files


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


class HostKernelLog:
    """The host's kernel log as the XID gatherer's source
    (``gcm_checks.gather.sources``): ``xid.source`` and
    ``xid.kernel_log_path`` choose kmsg, the journal or a file."""

    windowed = True  # the gatherer reads a job's window or "since the last scan"

    def read(self, ctx: Any, window: Any, *, timeout: float, coverage: Coverage) -> Iterator[KernelLine]:
        # A generator, so "file source without a path" surfaces in the
        # caller's iteration as unknown, like every other unreadable log.
        settings = ctx.settings
        source = settings.xid.source
        path = settings.xid.kernel_log_path
        yield from read_window(source, path=path, since=window[0], until=window[1], timeout=timeout,
                               coverage=coverage)

    def __repr__(self) -> str:
        return "HostKernelLog()"
