"""Scan a window of the kernel log for XIDs and judge each one.

``scan`` turns kernel lines (from ``gcm_checks.gather.kernel_log``) into
``XidEvent``s: time, code, normalised PCI bus id, GPU index from the
caller's map (NVML or the simulated node), and the catalog's judgement
refined by the message. It streams: one pending event at a time.

Escalation (``Escalation``): the same drain-worthy XID again on the same GPU
in a *later* scan means the remedy did not hold - gcm drained the node on
the first one, someone reset/rebooted and resumed it, and it came back. Such
an event's action becomes ``drain_inspect`` (a person looks, likely RMA).
History is a small JSON file under the caller's state dir, written
atomically, pruned to ``window_days``.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, replace
from datetime import tzinfo
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

from gcm_checks.gather.kernel_log_parse import KernelLine, iso
from gcm_checks.xid import catalog, sxid
from gcm_checks.xid.parse import XidLine, group, normalise_bus_id, sanitise

STATE_HISTORY = "xid_history.json"
STATE_LAST_SCAN = "xid_last_scan.json"


@dataclass(frozen=True)
class XidEvent:
    time: Optional[str]  # ISO 8601 with offset; None only for undated lines outside a window
    xid: int
    pci_bus_id: Optional[str]  # "00000000:3B:00.0"
    gpu_index: Optional[int]
    severity: str  # info | warn | fail
    responsibility: str
    action: str
    name: str
    line: str  # raw text, sanitised and bounded
    ts: Optional[float] = None  # epoch, not in to_dict (``time`` says it)
    note: str = ""  # why the judgement differs from the catalog default

    def to_dict(self) -> dict:
        # The schema others consume: keep these keys exactly.
        return {
            "time": self.time,
            "xid": self.xid,
            "pci_bus_id": self.pci_bus_id,
            "gpu_index": self.gpu_index,
            "severity": self.severity,
            "responsibility": self.responsibility,
            "action": self.action,
            "name": self.name,
            "line": self.line,
        }

    @property
    def gpu_key(self) -> str:
        """Identity of the GPU for grouping: bus id, else index, else unknown."""
        if self.pci_bus_id:
            return self.pci_bus_id
        if self.gpu_index is not None:
            return f"gpu{self.gpu_index}"
        return "unknown"


def normalise_bus_map(bus_map: Optional[Mapping[str, int]]) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for k, v in (bus_map or {}).items():
        n = normalise_bus_id(k)
        if n is not None:
            out[n] = int(v)
    return out


def to_event(x: XidLine, bus_map: Mapping[str, int], tz: Optional[tzinfo] = None) -> XidEvent:
    p = x.parsed
    bus = p.pci_bus_id
    a = catalog.assess(p.xid, p.decoded_dict())
    note = a.note
    if p.origin == "fallen_off_bus":
        # Issue 18: some drivers print only this text, no "Xid (...): 79" line.
        note = (note + "; " if note else "") + "the driver said the GPU fell off the bus without an Xid line: read as XID 79"
    return XidEvent(
        time=iso(x.line.ts, tz) if x.line.ts is not None else None,
        xid=p.xid,
        pci_bus_id=bus,
        gpu_index=bus_map.get(bus) if bus else None,
        severity=a.severity,
        responsibility=a.responsibility,
        action=a.action,
        name=a.name,
        line=sanitise(x.full_text),
        ts=x.line.ts,
        note=note,
    )


@dataclass(frozen=True)
class SxidEvent:
    """An NVSwitch SXid: its own kind of event (``kind: sxid`` in JSON)."""

    time: Optional[str]
    sxid: int
    switch: Optional[str]  # "nvswitch0"
    pci_bus_id: Optional[str]  # the switch's, NVML spelling
    fatal: Optional[bool]  # the driver's verdict on the line
    link: Optional[int]
    severity: str
    action: str
    name: str
    line: str
    ts: Optional[float] = None

    def to_dict(self) -> dict:
        return {"kind": "sxid", "time": self.time, "sxid": self.sxid, "switch": self.switch,
                "pci_bus_id": self.pci_bus_id, "fatal": self.fatal, "link": self.link, "severity": self.severity,
                "action": self.action, "name": self.name, "line": self.line}

    @property
    def where(self) -> str:
        """"nvswitch0 (00000000:05:00.0) link 30": what a drain reason names."""
        sw = self.switch or "NVSwitch"
        out = f"{sw} ({self.pci_bus_id})" if self.pci_bus_id else sw
        return out + (f" link {self.link}" if self.link is not None else "")


def to_sxid_event(kl: KernelLine, p: "sxid.ParsedSxid", tz: Optional[tzinfo] = None) -> SxidEvent:
    a = sxid.assess(p)
    return SxidEvent(
        time=iso(kl.ts, tz) if kl.ts is not None else None, sxid=p.code, switch=p.switch,
        pci_bus_id=normalise_bus_id(p.bus_raw), fatal=p.fatal, link=p.link, severity=a.severity,
        action=a.action, name=a.name, line=sanitise(kl.text), ts=kl.ts)


def scan_all(
    lines: Iterable[KernelLine],
    bus_map: Optional[Mapping[str, int]] = None,
    *,
    tz: Optional[tzinfo] = None,
) -> Iterator[Union[XidEvent, SxidEvent]]:
    """XID and SXid events in ``lines``, in one pass, in log order (an SXid
    logged between an XID and its continuation lines comes out after it)."""
    bm = normalise_bus_map(bus_map)
    found: List[SxidEvent] = []

    def xid_lines() -> Iterator[KernelLine]:
        for kl in lines:
            if "SXid" in kl.text:
                p = sxid.parse_sxid(kl.text)
                if p is not None:
                    found.append(to_sxid_event(kl, p, tz))
                continue
            yield kl

    for x in group(xid_lines()):
        ev = to_event(x, bm, tz)
        early = [s for s in found if s.ts is not None and ev.ts is not None and s.ts < ev.ts]
        for s in early:
            yield s
        found[:] = [s for s in found if s not in early]
        yield ev
        yield from found
        found.clear()
    yield from found


def scan(
    lines: Iterable[KernelLine],
    bus_map: Optional[Mapping[str, int]] = None,
    *,
    tz: Optional[tzinfo] = None,
) -> Iterator[XidEvent]:
    """XID events in ``lines`` (already windowed by the reader), in log order."""
    for ev in scan_all(lines, bus_map, tz=tz):
        if isinstance(ev, XidEvent):
            yield ev


# --------------------------------------------------------------------------
# Small JSON state, written atomically


def _read_json(path: str) -> dict:
    from gcm_checks.state import load_json

    try:
        data = load_json(path)  # bounded size and depth: deep JSON must not RecursionError
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        # Missing or corrupt state loses history, never the scan itself.
        return {}


def _write_json(path: str, data: dict) -> None:
    from gcm_checks.state import write_json_atomic

    write_json_atomic(path, data, sort_keys=True)


def read_last_scan(state_dir: str) -> Optional[float]:
    """End of the previous health scan (epoch), or None."""
    v = _read_json(os.path.join(state_dir, STATE_LAST_SCAN)).get("until")
    return float(v) if isinstance(v, (int, float)) else None


def write_last_scan(state_dir: str, until: float) -> None:
    _write_json(os.path.join(state_dir, STATE_LAST_SCAN), {"until": until, "written": time.time()})


# --------------------------------------------------------------------------
# Escalation


class Escalation:
    """Escalate a drain-worthy XID seen again on the same GPU in a later scan.

    History: ``{bus_or_gpu: {xid: last_epoch}}``. "Later" means the previous
    occurrence is older than this scan's window start, so repeats inside one
    job (XID 119 every 6 s) do not escalate themselves.
    """

    def __init__(self, state_dir: str, window_days: float = 30.0):
        self.path = os.path.join(state_dir, STATE_HISTORY)
        self.window_s = window_days * 86400.0
        self._history: Optional[Dict[str, Dict[str, float]]] = None

    @property
    def history(self) -> Dict[str, Dict[str, float]]:
        if self._history is None:
            raw = _read_json(self.path).get("gpus", {})
            self._history = {
                g: {x: float(t) for x, t in codes.items() if isinstance(t, (int, float))}
                for g, codes in raw.items() if isinstance(codes, dict)
            }
        return self._history

    def apply(self, events: Iterable[XidEvent], window_start: Optional[float], now: Optional[float] = None) -> List[XidEvent]:
        now = time.time() if now is None else now
        out = []
        for ev in events:
            prev = self.history.get(ev.gpu_key, {}).get(str(ev.xid))
            if (
                ev.severity == "fail"
                and prev is not None
                and now - prev <= self.window_s
                and (window_start is None or prev < window_start)
                and (ev.ts is None or prev < ev.ts)
            ):
                ev = replace(
                    ev,
                    action="drain_inspect",
                    note=(ev.note + "; " if ev.note else "")
                    + f"same XID on this GPU before the last remedy ({iso(prev)}): escalated",
                )
            out.append(ev)
        return out

    def record(self, events: Iterable[XidEvent], now: Optional[float] = None) -> None:
        now = time.time() if now is None else now
        h = self.history
        changed = False
        for ev in events:
            if ev.severity != "fail":
                continue
            t = ev.ts if ev.ts is not None else now
            slot = h.setdefault(ev.gpu_key, {})
            if slot.get(str(ev.xid), -1.0) < t:
                slot[str(ev.xid)] = t
                changed = True
        # Prune what is too old to escalate anything.
        for g in list(h):
            for x in [x for x, t in h[g].items() if now - t > self.window_s]:
                del h[g][x]
                changed = True
            if not h[g]:
                del h[g]
        if changed:
            _write_json(self.path, {"version": 1, "gpus": h})


def summarise(events: Iterable[XidEvent]) -> Dict[str, List[XidEvent]]:
    """Events grouped by GPU key, in log order."""
    out: Dict[str, List[XidEvent]] = {}
    for ev in events:
        out.setdefault(ev.gpu_key, []).append(ev)
    return out


def worst(events: Iterable[XidEvent]) -> Tuple[str, Optional[XidEvent]]:
    """The most severe event (the first of the worst), and its severity."""
    order = {"info": 0, "warn": 1, "fail": 2}
    best: Optional[XidEvent] = None
    for ev in events:
        if best is None or order[ev.severity] > order[best.severity]:
            best = ev
    return (best.severity if best else "info"), best


def recorded_since(state_dir: str, since: float) -> List[Tuple[str, int, float]]:
    """Drain-worthy XIDs remembered in the history at or after ``since``:
    ``[(gpu key, xid, last time)]``, oldest first.

    For resume decisions: an XID is an event, not a state, so a health scan
    whose window has moved past it passes even if nobody reset the GPU.
    Pass the boot time to ask "has a drain-worthy XID happened since the last
    reboot?" before resuming an XID drain.
    """
    raw = _read_json(os.path.join(state_dir, STATE_HISTORY)).get("gpus", {})
    out = []
    for gpu, codes in raw.items():
        if not isinstance(codes, dict):
            continue
        for xid, t in codes.items():
            if isinstance(t, (int, float)) and t >= since and str(xid).isdigit():
                out.append((gpu, int(xid), float(t)))
    return sorted(out, key=lambda r: r[2])
