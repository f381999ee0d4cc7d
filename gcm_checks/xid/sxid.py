"""NVSwitch SXids: the catalogue, the line parser and the judgement. Pure.

On HGX/DGX nodes the NVSwitch driver reports fabric errors as SXids:

    nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 20034, Fatal, Link 30 LTSSM Fault Up
    nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)
    nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine instance 60 Sub-engine instance 00
    nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Data {0x10000000, 0x10000000, ...}

The first two are events; the "Severity ... Engine instance" and "Data {...}"
lines are register details printed after an event and are not events
themselves. Source of the catalogue: NVIDIA Fabric Manager User Guide
(DU-09883-001), appendix "NVSwitch SXid Errors": non-fatal (D.4), fatal
(D.5), always fatal (D.6) and other notable (D.7) SXids.

Judgement (why): the driver prints its own verdict, "Fatal" or "Non-fatal",
on the event line. A fatal SXid means the switch port or the whole fabric
must be reset before NVLink traffic works again: every all-GPU job on the
node will fail, so the node drains (``fail``, reboot - a reboot resets the
GPUs and NVSwitches, which is what the guide asks for). An always-fatal code
drains even when the line carries no verdict. Non-fatal SXids are ``warn``
(reported, never drain), except the single-bit ECC errors the switch corrects
by itself and the ones NVIDIA says to ignore, which are ``info``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

# Kinds, as the Fabric Manager guide groups them.
NONFATAL = "non_fatal"
FATAL = "fatal"  # D.5: fatal to the port/partition (the line says "Fatal")
ALWAYS_FATAL = "always_fatal"  # D.6 and 10003: fatal to the whole fabric
NOTABLE = "notable"  # D.7: host errors and thermal events

_SBE = "Single bit ECC error (corrected by the NVSwitch; no impact)"


@dataclass(frozen=True)
class SxidInfo:
    code: int
    name: str
    kind: str
    impact: str
    recovery: str

    def to_dict(self) -> dict:
        return {"sxid": self.code, "name": self.name, "kind": self.kind, "impact": self.impact,
                "recovery": self.recovery}


_STALL = "NVLink traffic of the GPUs on this port stalls; CUDA jobs are aborted with XID 45."
_PORT_RESET = "Reset the GPUs and NVSwitches (reboot); if the same SXid returns, have the NVSwitch inspected."
_FABRIC_RESET = "Always fatal to the whole fabric: reboot the node (resets every GPU and NVSwitch)."

_ROWS: Tuple[Tuple[int, str, str, str, str], ...] = (
    # Non-fatal (D.4)
    (11004, "Ingress invalid ACL", NONFATAL, "Only from a wrong Fabric Manager partition configuration; " + _STALL,
     "Check the partition routing (nvswitch-audit), then restart the workload."),
    (11012, _SBE, NONFATAL, "None.", "None needed."),
    (11021, _SBE, NONFATAL, "None.", "None needed."),
    (11022, _SBE, NONFATAL, "None.", "None needed."),
    (11023, _SBE, NONFATAL, "None.", "None needed."),
    (12021, _SBE, NONFATAL, "None.", "None needed."),
    (12023, _SBE, NONFATAL, "None.", "None needed."),
    (12028, "Egress non-posted PRIV error", NONFATAL, _STALL, "Restart the workload; if it repeats, reboot."),
    (15008, _SBE, NONFATAL, "None.", "None needed."),
    (15011, _SBE, NONFATAL, "None.", "None needed."),
    (19049, _SBE, NONFATAL, "None.", "None needed."),
    (19055, _SBE, NONFATAL, "None.", "None needed."),
    (19057, _SBE, NONFATAL, "None.", "None needed."),
    (19059, _SBE, NONFATAL, "None.", "None needed."),
    (19062, _SBE, NONFATAL, "None.", "None needed."),
    (19065, _SBE, NONFATAL, "None.", "None needed."),
    (19068, _SBE, NONFATAL, "None.", "None needed."),
    (19071, _SBE, NONFATAL, "None.", "None needed."),
    (19084, "AN1 heartbeat timeout", NONFATAL, "Usually followed by a fatal SXid on the same port.",
     "Reset all GPUs and NVSwitches if a fatal SXid follows."),
    (20001, "TX replay error", NONFATAL, "NVLink packets are retransmitted: lower NVLink throughput on the port.",
     "None; watch for repeats."),
    (20009, "RX short error rate", NONFATAL, "Non-fatal link errors.", "None; watch for repeats."),
    (20012, "Broken/inconsistent connection", NONFATAL, "A broken link or an uncoordinated shutdown.",
     "If not an uncoordinated shutdown, check the link's mechanical connections."),
    (22013, "Minion link DLREQ interrupt", NONFATAL, "None (NVIDIA: can be safely ignored).", "None needed."),
    (24001, _SBE, NONFATAL, "None.", "None needed."),
    (24002, _SBE, NONFATAL, "None.", "None needed."),
    (24003, _SBE, NONFATAL, "None.", "None needed."),
    # Fatal (D.5)
    (11001, "Ingress invalid command", FATAL, _STALL, _PORT_RESET),
    (11009, "Ingress invalid VCSet", FATAL, _STALL, _PORT_RESET),
    (11013, "Ingress header DBE", FATAL, _STALL, _PORT_RESET),
    (11018, "Ingress RID DBE", FATAL, _STALL, _PORT_RESET),
    (11019, "Ingress RLAN DBE", FATAL, _STALL, _PORT_RESET),
    (11020, "Ingress control parity", FATAL, _STALL, _PORT_RESET),
    (12001, "Egress crossbar overflow", FATAL, _STALL, _PORT_RESET),
    (12002, "Egress packet route", FATAL, _STALL, _PORT_RESET),
    (12022, "Egress input ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (12024, "Egress output ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (12025, "Egress credit overflow", FATAL, _STALL, _PORT_RESET),
    (12026, "Egress destination request ID error", FATAL, _STALL, _PORT_RESET),
    (12027, "Egress destination response ID error", FATAL, _STALL, _PORT_RESET),
    (12030, "Egress control parity error", FATAL, _STALL, _PORT_RESET),
    (12031, "Egress credit parity error", FATAL, _STALL, _PORT_RESET),
    (12032, "Egress flit type mismatch", FATAL, _STALL, _PORT_RESET),
    (14017, "TS ATO timeout", FATAL, _STALL, _PORT_RESET),
    (15001, "Route buffer over/underflow", FATAL, _STALL, _PORT_RESET),
    (15006, "Route transdone over/underflow", FATAL, _STALL, _PORT_RESET),
    (15009, "Route GLT DBE", FATAL, _STALL, _PORT_RESET),
    (15010, "Route parity", FATAL, _STALL, _PORT_RESET),
    (15012, "Route incoming DBE", FATAL, _STALL, _PORT_RESET),
    (15013, "Route credit parity", FATAL, _STALL, _PORT_RESET),
    (19047, "NCISOC HDR ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (19048, "NCISOC DAT ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (19054, "HDR RAM ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (19056, "DAT0 RAM ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (19058, "DAT1 RAM ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (19060, "CREQ RAM HDR ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (19061, "CREQ RAM DAT ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (19063, "Response RAM HDR ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (19064, "Response RAM DAT ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (19066, "COM RAM HDR ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (19067, "COM RAM DAT ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (19069, "RSP1 RAM HDR ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (19070, "RSP1 RAM DAT ECC DBE error", FATAL, _STALL, _PORT_RESET),
    (20034, "LTSSM Fault Up", FATAL,
     "The NVLink went down from active (LTSSM fault); usually with other NVLink errors.",
     "Reset the GPU (H100) or reboot; if it persists, report the GPU/NVSwitch."),
    (22012, "Minion link NA interrupt", FATAL, "A broken/inconsistent connection or an uncoordinated shutdown.",
     "If not an uncoordinated shutdown, check the link's mechanical connections."),
    (24004, "Sourcetrack TCEN0 crumbstore DBE", FATAL, _STALL, _PORT_RESET),
    (24005, "Sourcetrack TCEN0 TD crumbstore DBE", FATAL, _STALL, _PORT_RESET),
    (24006, "Sourcetrack TCEN1 crumbstore DBE", FATAL, _STALL, _PORT_RESET),
    (24007, "Sourcetrack timeout error", FATAL, _STALL, _PORT_RESET),
    # Always fatal (D.6)
    (12020, "Egress sequence ID error", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (22003, "Minion halt", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (22011, "Minion exterror", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23001, "Ingress SRC-VC buffer overflow", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23002, "Ingress SRC-VC buffer underflow", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23003, "Egress DST-VC credit overflow", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23004, "Egress DST-VC credit underflow", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23005, "Ingress packet burst error", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23006, "Ingress packet sticky error", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23007, "Possible bubbles at ingress", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23008, "Ingress packet invalid dst error", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23009, "Ingress packet parity error", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23010, "Ingress SRC-VC buffer overflow", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23011, "Ingress SRC-VC buffer underflow", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23012, "Egress DST-VC credit overflow", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23013, "Egress DST-VC credit underflow", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23014, "Ingress packet burst error", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23015, "Ingress packet sticky error", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23016, "Possible bubbles at ingress", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    (23017, "Ingress credit parity error", ALWAYS_FATAL, "Fatal to the whole fabric.", _FABRIC_RESET),
    # Other notable (D.7)
    (10001, "Host PRIV error", NOTABLE, "Not fatal, but may be followed by fatal SXids.", "Watch for fatal SXids."),
    (10002, "Host PRIV timeout", NOTABLE, "Not fatal, but may be followed by fatal SXids.", "Watch for fatal SXids."),
    (10003, "Host unhandled interrupt", ALWAYS_FATAL, "Never expected; fatal to the whole fabric if it occurs.",
     _FABRIC_RESET),
    (10004, "Host thermal event start", NOTABLE,
     "Links may drop to single-lane (power saving) mode: lower NVLink throughput.", "Check the system cooling."),
    (10005, "Host thermal event end", NOTABLE, "The thermal event is over.", "Check the system cooling."),
)

CATALOG: Dict[int, SxidInfo] = {r[0]: SxidInfo(*r) for r in _ROWS}
_IGNORABLE = frozenset(c for c, i in CATALOG.items() if i.name == _SBE or c in (22013, 10005))


def lookup(code: int) -> SxidInfo:
    """The catalogue row, or an 'unknown' row (judged by the line's own verdict)."""
    return CATALOG.get(code) or SxidInfo(code, "Unknown SXid (not in the Fabric Manager guide we know)", "unknown",
                                         "Unknown.", "Follow the Fatal/Non-fatal verdict printed with it.")


@dataclass(frozen=True)
class ParsedSxid:
    switch: Optional[str]  # "nvswitch0" (from "nvidia-nvswitch0:"), None when not printed
    bus_raw: str  # as printed: "0000:05:00.0"
    code: int
    fatal: Optional[bool]  # the driver's own verdict; None when the line has none
    link: Optional[int]
    message: str  # text after "NNNNN, "


# "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress ..."
_RE_SXID = re.compile(
    r"(?:nvidia-(?P<switch>nvswitch\d+):\s*)?SXid \((?:PCI:)?(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}"
    r"(?:\.[0-7])?)\)\s*:\s*(?P<code>\d+)\s*,\s*(?P<rest>.*)"
)
_RE_VERDICT = re.compile(r"^(?P<v>Non-fatal|Nonfatal|Fatal)\b\s*,?\s*", re.IGNORECASE)
_RE_LINK = re.compile(r"\bLink\s+(?P<link>\d+)\b", re.IGNORECASE)
# Register details printed after an event: not events themselves.
_RE_DETAIL = re.compile(r"^(?:Severity\s+\d+\s+Engine instance|Data\s*\{)", re.IGNORECASE)


def parse_sxid(line: str) -> Optional[ParsedSxid]:
    """The SXid event in one kernel line; None for other lines and for detail lines."""
    if "SXid" not in line:
        return None
    m = _RE_SXID.search(line)
    if not m:
        return None
    rest = m.group("rest").strip()
    if _RE_DETAIL.match(rest):
        return None
    v = _RE_VERDICT.match(rest)
    fatal: Optional[bool] = None
    if v:
        fatal = v.group("v").lower() == "fatal"
        rest = rest[v.end():]
    lk = _RE_LINK.search(rest)
    return ParsedSxid(m.group("switch"), m.group("bus"), int(m.group("code")), fatal,
                      int(lk.group("link")) if lk else None, rest.strip())


@dataclass(frozen=True)
class SxidAssessment:
    severity: str  # info | warn | fail
    action: str  # none | reboot (catalog.ACTIONS)
    name: str
    kind: str


def assess(p: ParsedSxid) -> SxidAssessment:
    info = lookup(p.code)
    if p.fatal or info.kind == ALWAYS_FATAL:
        return SxidAssessment("fail", "reboot", info.name, info.kind)
    if p.code in _IGNORABLE and not p.fatal:
        return SxidAssessment("info", "none", info.name, info.kind)
    # Non-fatal by the driver's own word, or no verdict on a code that is not
    # always fatal: reported, never drains ("could not tell" never drains).
    return SxidAssessment("warn", "none", info.name, info.kind)
