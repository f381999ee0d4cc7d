"""Parse NVRM XID lines: pure functions over text, no I/O.

Formats seen in the wild (../shared/corpus/formats/xid_lines.txt):

    NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.
    NVRM: Xid (0000:01:00): 16, Head 00000000 Count 00000000      (older: no "PCI:")
    NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 ...)
    NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)
    NVRM: Xid (PCI:0000:00:08): 94, ..., Contained: SM (0x1). RST: No, D-RST: No

The driver also reports a GPU that fell off the bus WITHOUT an Xid line
(issue 18); each form becomes the same XID 79 event (``origin``
"fallen_off_bus"), so the scanner and the classifier read it alike:

    NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.
    NVRM: The NVIDIA GPU 0000:18:00.0                              (three lines,
    NVRM: (PCI ID: 10de:2901) installed in this system has          one event)
    NVRM: fallen off the bus and is not responding to commands.

A message can continue on following ``NVRM:`` lines (XID 79 is followed by
"GPU has fallen off the bus" / "GPU at PCI:..." lines, long 48 lines are
split by printk); ``group`` attaches them to the XID they belong to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from gcm_checks.gather.kernel_log_parse import KernelLine

MAX_LINE = 512  # event text kept per event: enough for any real XID, bounded for reasons and HTML
_MAX_CONTINUATION = 4

# The bus id in the parentheses: "PCI:0000:3b:00", "0000:01:00", "0019:01:00",
# sometimes with a function ".0". Domain 4 or 8 hex digits.
_RE_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\)\s*:\s*(?P<xid>\d+)\s*,?\s?(?P<rest>.*)"
)
# Anything else that still names an Xid number ("NVRM: Xid: 79, ...", "NVRM: Xid (GPU-uuid): 79, ...").
_RE_XID_LOOSE = re.compile(r"NVRM: Xid(?: \([^)]*\))?\s*:\s*(?P<xid>\d+)\s*,\s?(?P<rest>.*)")
_RE_PID = re.compile(r"\bpid=(?:'<unknown>'|(?P<pid>\d+))")
_RE_NAME = re.compile(r"\bname=(?P<name><unknown>|[^,\s]+)")
# NVLink5 (144-150): "<sub> <Fatal|Nonfatal|Link Fatal> XC<n> i<n> Link <n> (<intrInfo> <errorStatus> ...)"
_RE_NVLINK5 = re.compile(
    r"(?P<sub>[A-Z][A-Z0-9_/]*)\s+(?P<sev>Nonfatal|Non-fatal|Link\s+Fatal|Fatal)\s+XC(?P<xc>\d+)\s+i(?P<inj>\d+)"
    r"\s+Link\s+(?P<link>-?\d+)\s*\((?P<regs>[^)]*)\)",
    re.IGNORECASE,
)
_RE_RECOVERY = re.compile(r"\bto\s+0x[0-9A-Fa-f]+\s*\((?P<action>[^)]+)\)")
_RE_RECOVERY_WORDS = re.compile(
    r"(Node Reboot Required|Reboot the system|GPU Reset Required|Drain and Reset|Drain P2P)", re.IGNORECASE
)
_RE_RST = re.compile(r"\bRST:\s*(?P<rst>Yes|No)\b(?:.*?\bD-RST:\s*(?P<drst>Yes|No)\b)?", re.IGNORECASE)
_BUS = r"(?:PCI:)?(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)"
# "NVRM: GPU 0000:29:00.0: GPU has fallen off the bus." (no Xid line before it on some drivers)
_RE_FALLEN_GPU = re.compile(r"NVRM: GPU (?:at )?" + _BUS + r":?\s+GPU has fallen off the bus", re.IGNORECASE)
# First line of the three-line form; only a later "fallen off the bus" line makes it an event
# (the same opening also starts "... installed in this system is not supported").
_RE_GPU_HEADER = re.compile(r"NVRM: The NVIDIA GPU " + _BUS + r"(?:\s|$)")
_RE_FALLEN_ANY = re.compile(r"NVRM:.*\bfallen off the bus", re.IGNORECASE)
FALLEN_OFF_BUS = 79  # NVIDIA's code for the same fault


@dataclass(frozen=True)
class ParsedXid:
    xid: int
    bus_raw: Optional[str]  # as printed: "0000:3b:00"
    message: str  # text after "NN, "
    pid: Optional[int] = None
    process: Optional[str] = None
    decoded: Tuple[Tuple[str, object], ...] = ()  # for catalog.assess, hashable
    origin: str = "xid"  # "xid": an Xid line; "fallen_off_bus": the driver's text without one

    @property
    def pci_bus_id(self) -> Optional[str]:
        return normalise_bus_id(self.bus_raw) if self.bus_raw else None

    def decoded_dict(self) -> Dict[str, object]:
        return dict(self.decoded)


def normalise_bus_id(raw: Optional[str]) -> Optional[str]:
    """Any PCI bus id spelling to NVML's: ``00000000:3B:00.0``.

    ``0000:3b:00`` (the XID line), ``PCI:0000:3b:00``, ``00000000:3B:00.0``
    (NVML), ``0000:3b:00.0`` (sysfs) and ``3b:00.0`` (lspci) all name the same
    device; the function defaults to 0 because XID lines omit it.
    """
    if not raw:
        return None
    s = raw.strip()
    if s[:4].upper() == "PCI:":
        s = s[4:]
    func = "0"
    if "." in s:
        s, func = s.rsplit(".", 1)
    parts = s.split(":")
    if len(parts) == 2:
        parts = ["0"] + parts
    if len(parts) != 3:
        return None
    dom, bus, dev = parts
    try:
        return f"{int(dom, 16):08X}:{int(bus, 16):02X}:{int(dev, 16):02X}.{int(func, 16):X}"
    except ValueError:
        return None


def sanitise(text: str, limit: int = MAX_LINE) -> str:
    """Printable ASCII only, bounded: the text lands in drain reasons, shells and HTML (rule 5)."""
    from gcm_checks.text import ascii_line

    return ascii_line(text, limit)


def parse_xid(line: str) -> Optional[ParsedXid]:
    """The XID in one kernel line, or None if the line holds no XID.

    The one reading of a kernel line, shared by ``xid scan`` and the
    classifier: a fallen-off-the-bus message without an Xid is XID 79.
    """
    m = _RE_XID.search(line)
    bus: Optional[str]
    if m:
        bus = m.group("bus")
    else:
        m = _RE_XID_LOOSE.search(line)
        if not m:
            return _parse_fallen(line)
        bus = None
    xid = int(m.group("xid"))
    rest = m.group("rest").strip()
    pm = _RE_PID.search(rest)
    nm = _RE_NAME.search(rest)
    pid = int(pm.group("pid")) if pm and pm.group("pid") else None
    name = nm.group("name") if nm and nm.group("name") != "<unknown>" else None
    return ParsedXid(xid, bus, rest, pid, name, tuple(sorted(decode(xid, rest).items())))


def _parse_fallen(line: str) -> Optional[ParsedXid]:
    m = _RE_FALLEN_GPU.search(line)
    if m:
        return ParsedXid(FALLEN_OFF_BUS, m.group("bus"), _message_part(line), origin="fallen_off_bus")
    if _RE_FALLEN_ANY.search(line):
        # The last line of the three-line form, read alone: no bus id on it.
        return ParsedXid(FALLEN_OFF_BUS, None, _message_part(line), origin="fallen_off_bus")
    return None


def gpu_header(line: str) -> Optional[str]:
    """The bus id of a "NVRM: The NVIDIA GPU <bus>" opening line, else None."""
    m = _RE_GPU_HEADER.search(line)
    return m.group("bus") if m else None


def decode(xid: int, message: str) -> Dict[str, object]:
    """Message details that change the judgement (see catalog.assess)."""
    out: Dict[str, object] = {}
    if 144 <= xid <= 150:
        m = _RE_NVLINK5.search(message)
        if m:
            sev = m.group("sev").lower()
            regs = m.group("regs").split()
            out["nvlink_subcode"] = m.group("sub")
            out["nvlink_fatal"] = "fatal" in sev and not sev.startswith("non")
            out["nvlink_link_fatal"] = sev.startswith("link")
            out["nvlink_cross_contain"] = m.group("xc") != "0"
            out["nvlink_injected"] = m.group("inj") != "0"
            out["nvlink_link"] = int(m.group("link"))
            if regs:
                out["nvlink_intr_info"] = regs[0]
            if len(regs) > 1:
                out["nvlink_error_status"] = regs[1]
    elif xid == 154:
        m = _RE_RECOVERY.search(message)
        if m:
            out["recovery_action"] = m.group("action").strip()
        else:
            w = _RE_RECOVERY_WORDS.search(message)
            if w:
                out["recovery_action"] = w.group(1)
    elif xid in (94, 95):
        m = _RE_RST.search(message)
        if m:
            out["reset_required"] = m.group("rst").lower() == "yes"
            if m.group("drst"):
                out["drain_reset_required"] = m.group("drst").lower() == "yes"
    return out


def _is_continuation(first: "XidLine", nxt: KernelLine) -> bool:
    # Same message = logged within the same second by the driver, an NVRM
    # line that is not itself an XID.
    if "Xid" in nxt.text or "NVRM" not in nxt.text:
        return False
    fl = first.line
    if fl.ts is None or nxt.ts is None:
        same_time = fl.ts is None and nxt.ts is None
    else:
        same_time = abs(nxt.ts - fl.ts) <= 1.0
    if not same_time:
        return False
    opening = gpu_header(nxt.text)
    if opening is not None:
        # "The NVIDIA GPU <bus>" opens the three-line fallen-off-the-bus
        # message: it continues only an XID 79 of that same GPU (one fault
        # told twice); after any other XID it starts its own event, or its bus
        # id would end up in the other XID's text and the 79 would have none.
        return first.parsed.xid == FALLEN_OFF_BUS and normalise_bus_id(opening) == first.parsed.pci_bus_id
    own = _parse_fallen(nxt.text)
    if own is None:
        return True
    # A fallen-off-the-bus line continues only an XID 79 (or the three-line
    # opening) of the same GPU; after any other XID it is an event of its own.
    if first.parsed.xid != FALLEN_OFF_BUS:
        return False
    return own.bus_raw is None or first.parsed.bus_raw is None or own.pci_bus_id == first.parsed.pci_bus_id


def _message_part(line: str) -> str:
    i = line.find("NVRM:")
    return line[i + 5:].strip() if i >= 0 else line.strip()


@dataclass(frozen=True)
class XidLine:
    """One XID occurrence: its first kernel line, the parse, continuation text."""

    line: KernelLine
    parsed: ParsedXid
    continuation: Tuple[str, ...] = ()

    @property
    def full_text(self) -> str:
        if not self.continuation:
            return self.line.text
        return self.line.text + " | " + " | ".join(self.continuation)


def group(lines: Iterable[KernelLine]) -> Iterator[XidLine]:
    """XID occurrences with their continuation lines, in log order, streaming.

    Holds at most one pending occurrence: memory stays constant.
    """
    pending: Optional[XidLine] = None
    header = False  # pending is a "The NVIDIA GPU <bus>" opening, not yet an event
    cont: List[str] = []
    for kl in lines:
        if pending is not None and len(cont) < _MAX_CONTINUATION and _is_continuation(pending, kl):
            cont.append(_message_part(kl.text))
            if header and _RE_FALLEN_ANY.search(kl.text):
                header = False  # the three-line form is complete: XID 79 on the opening's bus
            continue
        if pending is not None and not header:
            yield _finish(pending, cont)
        pending, cont, header = None, [], False
        p = parse_xid(kl.text)
        if p is not None:
            pending = XidLine(kl, p)
            continue
        bus = gpu_header(kl.text)
        if bus is not None:
            pending = XidLine(kl, ParsedXid(FALLEN_OFF_BUS, bus, _message_part(kl.text), origin="fallen_off_bus"))
            header = True
    if pending is not None and not header:
        yield _finish(pending, cont)


def _finish(x: XidLine, cont: List[str]) -> XidLine:
    if not cont:
        return x
    p = x.parsed
    # A continuation can carry the part that decides (XID 154's action, 94's RST).
    extra = decode(p.xid, p.message + " " + " ".join(cont))
    merged = dict(p.decoded)
    for k, v in extra.items():
        merged.setdefault(k, v)
    p2 = ParsedXid(p.xid, p.bus_raw, p.message, p.pid, p.process, tuple(sorted(merged.items())), p.origin)
    return XidLine(x.line, p2, tuple(cont))
