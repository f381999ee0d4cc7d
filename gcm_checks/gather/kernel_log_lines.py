"""Candidate lines of a kernel log file: streaming, constant memory.

Files are read in large binary chunks and only lines containing a mark
(``NVRM: Xid``, the fallen-off-the-bus text, ``SXid``) are decoded: the search
runs over the raw chunk, so the other lines cost almost nothing. That
prefilter keeps a 1 GiB scan near ``grep`` speed and memory constant
(docs/benchmarks.md). Stamps and windows are ``kernel_log_parse``'s.
"""

from __future__ import annotations

from typing import IO, Any, Iterator, List, Tuple

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
_CHUNK = 1 << 20  # 1 MiB reads into one reused buffer: memory is constant
_MAX_LINE = 1 << 20  # a "line" longer than this is binary junk; skip it


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

