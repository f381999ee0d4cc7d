"""Candidate lines of a kernel log file: streaming, constant memory.

Files are read in large binary chunks and only lines containing a mark
(``NVRM: Xid``, the fallen-off-the-bus text, ``SXid``) are decoded: the search
runs over the raw chunk, so the other lines cost almost nothing. That
prefilter keeps a 1 GiB scan near ``grep`` speed and memory constant
(docs/benchmarks.md, "XID scan"). Stamps and windows are ``kernel_log_parse``'s.
"""

from __future__ import annotations

from typing import IO, Any, Iterator, List, Sequence, Tuple

DEFAULT_CONTAINS = b"NVRM"
XID_MARK = b"NVRM: Xid"
# What the fast file path searches for (issue 18): XID lines, the driver's
# fallen-off-the-bus text that comes without an Xid line (single-line and the
# opening of the three-line form), and NVSwitch SXids (no "NVRM" in them).
# "NVRM: The NVIDIA GPU <bus>", the opening of the three-line form, is not a
# mark of its own (one more pass over every chunk): a "fallen off the bus"
# hit looks back for it (LOOKBACK), into the previous read's last lines too
# (_Carry.opening): else a read boundary inside the message loses its bus id.
FILE_MARKS = (XID_MARK, b"fallen off the bus", b": SXid (")
LOOKBACK_MARK = b"fallen off the bus"
LOOKBACK = (b"NVRM: The NVIDIA GPU", b"NVRM: (PCI ID")
LOOKBACK_LINES = 2
# The byte the two Xid marks share, rare in kernel logs: one memchr pass finds
# both (_Plan). Past one anchor per _DENSE_BYTES bytes (checked every
# _DENSE_MIN anchors), a Python step per anchor costs more than a find pass
# per mark (docs/benchmarks.md).
ANCHOR = b"X"
_DENSE_MIN = 64
_DENSE_BYTES = 256
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
    plan = _Plan((contains,) if isinstance(contains, bytes) else tuple(contains or ()))
    tl = 0  # bytes of an incomplete line carried at the front of buf
    skipping = False  # inside a line too long to be a kernel message
    carry = _Carry()
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
            yield from _candidates(buf, begin, last + 1, plan, follow, follow_contains, carry)
            if plan.look_back:
                # Once per read: the lines that may open a three-line message
                # whose last line the next read holds.
                carry.opening = _look_back(buf, carry.pos, last + 1, carry.opening if carry.pos == begin else ())
            begin = last + 1
        rest = end - begin
        if rest > _MAX_LINE:
            skipping, tl = True, 0
            carry.opening = []  # the junk line comes between: nothing opens across it
        else:
            buf[0:rest] = buf[begin:end]
            tl = rest
    if tl and not skipping:
        last_line = bytes(buf[:tl]) + b"\n"
        yield from _candidates(last_line, 0, len(last_line), plan, follow, follow_contains, carry)


class _Carry:
    """What one read's lines hand the next: ``left``, follow lines still to
    examine; ``opening``, the trailing lines of the last read that may open a
    three-line fallen-off-the-bus message (decoded, oldest first, none yielded
    yet); ``pos``, where the last ``_candidates`` call stopped (every line
    before it was yielded or examined)."""

    __slots__ = ("left", "opening", "pos")

    def __init__(self) -> None:
        self.left = 0
        self.opening: List[str] = []
        self.pos = 0


def _candidates(buf: Any, begin: int, end: int, plan: "_Plan", follow: int, follow_contains: bytes,
                carry: _Carry) -> Iterator[str]:
    """Candidate lines in ``buf[begin:end]``, which holds whole lines only:
    the one scanning loop for one mark or several."""
    marks = plan.marks
    carry.pos = end
    if not marks:  # no filter: every line
        start = begin
        while start < end:
            nl = buf.find(b"\n", start, end)
            nl = end - 1 if nl < 0 else nl
            yield buf[start:nl].decode("utf-8", "replace").rstrip("\r")
            start = nl + 1
        return
    search = _Search(buf, begin, end, plan)
    pos = begin  # always the start of a line
    while pos < end:
        while carry.left > 0 and pos < end:
            nl = buf.find(b"\n", pos, end)
            nl = end - 1 if nl < 0 else nl
            line = buf[pos:nl]
            if any(m in line for m in marks):
                carry.left = 0  # a new hit: the search below takes it
                break
            if follow_contains in line:
                yield line.decode("utf-8", "replace").rstrip("\r")
            carry.left -= 1
            pos = nl + 1
        hit = search.next_hit(pos)
        if hit < 0:
            carry.pos = pos
            return
        r = buf.rfind(b"\n", pos, hit)
        start = r + 1 if r >= 0 else pos
        nl = buf.find(b"\n", hit, end)
        nl = end - 1 if nl < 0 else nl
        line = buf[start:nl]
        if plan.look_back and _first_mark(line, marks) == LOOKBACK_MARK:
            # At the read's first unhandled line the message may have begun in the previous read.
            yield from _look_back(buf, pos, start, carry.opening if pos == begin else ())
        yield line.decode("utf-8", "replace").rstrip("\r")
        carry.left = follow
        pos = nl + 1


class _Plan:
    """How a set of marks is searched, worked out once per file.

    Marks that hold ``ANCHOR`` followed by the same byte (``NVRM: Xid`` and
    ``: SXid (``: "Xi") are found together: ``find`` of one byte is
    ``memchr``, several times faster than a substring search, and each anchor
    found is checked against every such mark in place: one pass for both
    instead of one pass each. Other marks get a ``find`` pass each. A regex
    alternation of the three marks measured 5x slower than three ``find``
    passes (``re`` tests an alternation's first bytes one byte at a time).
    """

    __slots__ = ("marks", "group", "second", "plain", "look_back")

    def __init__(self, marks: Tuple[bytes, ...]) -> None:
        self.marks = marks
        group = tuple((m, m.index(ANCHOR)) for m in marks if ANCHOR in m[:-1])
        seconds = {m[off + 1] for m, off in group}
        # One mark alone: its own find is as fast, without the dense-anchor worry.
        if len(group) < 2 or len(seconds) != 1:
            group = ()
        self.group = group
        self.second = seconds.pop() if group else -1  # the byte after every grouped anchor
        grouped = {m for m, _ in group}
        self.plain = tuple(m for m in marks if m not in grouped)
        self.look_back = LOOKBACK_MARK in marks


class _Search:
    """Where the next mark at or after ``pos`` is, in one chunk's ``buf[begin:end]``
    (whole lines: ``buf[end - 1]`` is a newline).

    Each way of searching (the anchored group, each plain mark) keeps its
    next hit and searches again only once ``pos`` has passed it, so each
    scans the chunk once however many hits it has (an XID storm stays
    linear). A hit is a position inside the first line that holds a mark.
    """

    __slots__ = ("buf", "begin", "end", "group", "second", "gnext", "plain", "nxt", "misses")

    def __init__(self, buf: Any, begin: int, end: int, plan: _Plan) -> None:
        self.buf, self.begin, self.end = buf, begin, end
        self.group, self.second, self.gnext = plan.group, plan.second, -2  # -2: not searched yet
        self.plain = list(plan.plain)
        self.nxt = [-2] * len(self.plain)  # -1: none left in this chunk
        self.misses = 0

    def next_hit(self, pos: int) -> int:
        hit = -1
        if self.group:
            g = self.gnext
            if g == -2 or 0 <= g < pos:
                g = self.gnext = self._anchored(pos)
            hit = g
        buf, end, nxt = self.buf, self.end, self.nxt
        for i, m in enumerate(self.plain):  # read after _anchored: it may have added marks
            p = nxt[i]
            if p == -2 or 0 <= p < pos:
                p = nxt[i] = buf.find(m, pos, end)
            if p >= 0 and (hit < 0 or p < hit):
                hit = p
        return hit

    def _anchored(self, pos: int) -> int:
        """The first anchor at or after ``pos`` that belongs to a grouped mark.
        This loop runs once per anchor byte in the file: kept lean on purpose."""
        buf, end, second, group, find = self.buf, self.end, self.second, self.group, self.buf.find
        p = find(ANCHOR, pos, end)
        while True:
            for _ in range(_DENSE_MIN):
                if p < 0:
                    return -1
                # buf[p + 1] exists: buf[end - 1] is a newline, not the anchor.
                if buf[p + 1] == second:
                    for m, off in group:
                        s = p - off
                        # s >= pos: a mark never spans a line start, and a
                        # negative start would count from the end of buf.
                        if s >= pos and buf.startswith(m, s, end):
                            return p
                p = find(ANCHOR, p + 1, end)
            self.misses += _DENSE_MIN
            if p >= 0 and self.misses * _DENSE_BYTES > p - self.begin:
                # Anchors are too common here (a log full of "XFS" or "0X..."):
                # a Python step per anchor would cost more than a find pass
                # per mark, so the rest of this chunk searches them plainly.
                self.plain += [m for m, _ in group]
                self.nxt += [-2] * len(group)
                self.group = ()
                return -1


def _first_mark(line: Any, marks: Tuple[bytes, ...]) -> bytes:
    """The mark that comes first in ``line``: a fallen-off-the-bus text after
    an Xid on the same line is that Xid's own wording, not the three-line form."""
    first, at = b"", -1
    for m in marks:
        i = line.find(m)
        if i >= 0 and (at < 0 or i < at):
            first, at = m, i
    return first


def _look_back(buf: Any, pos: int, start: int, before: Sequence[str] = ()) -> List[str]:
    """The opening lines of the three-line fallen-off-the-bus message before
    ``start`` (not yet yielded: at or after ``pos``), oldest first. Where the
    walk reaches ``pos`` still inside the message it goes on into ``before``,
    the previous read's trailing opening lines (empty unless ``pos`` is this
    read's first line)."""
    found: List[str] = []
    end = start
    while len(found) < LOOKBACK_LINES:
        if end <= pos:
            found += reversed(before[max(0, len(before) - (LOOKBACK_LINES - len(found))):])
            break
        r = buf.rfind(b"\n", pos, end - 1)
        b = r + 1 if r >= 0 else pos
        line = buf[b:end - 1]
        if not any(m in line for m in LOOKBACK):
            break
        found.append(line.decode("utf-8", "replace").rstrip("\r"))
        end = b
    found.reverse()
    return found

