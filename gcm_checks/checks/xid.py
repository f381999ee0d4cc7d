"""XIDs in the job's window (epilog) or since the last scan (health).

The gatherer reads the kernel log for the window and judges each XID with
NVIDIA's catalog (``gcm_checks.xid``); the checks only group and word it:

* ``xid.hardware``: one ``fail`` per GPU with a drain-worthy XID (NVIDIA says
  reset the GPU, reboot, or a person must look), naming the XID, its time and
  the action - the action ends up in the drain reason. ``pass`` otherwise.
* ``xid.software``: one ``warn`` per GPU with XIDs that hint at driver or
  firmware trouble; application XIDs (13, 31, 43, 45, ...) are listed in a
  ``pass`` - they are the job's own bugs and never drain (rule 4).

A kernel log we cannot read is ``unknown`` for both, never ``fail`` (rule 2).

The kernel log is a source (``gcm_checks.gather.sources``): the host's by
default. Simulation injects the scenario's ``kernel_log`` text, scanned whole
- its stamps are fixed in the scenario file and cannot fall inside a real
job's window. A scenario without it is a clean log.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from gcm_checks.registry import gatherer, register
from gcm_checks.result import CheckResult, cannot_tell, fail, ok, warn

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

HARDWARE = "xid.hardware"
SOFTWARE = "xid.software"
NVSWITCH = "xid.nvswitch"  # NVSwitch SXids (issue 18)

# Most serious action first: the one a GPU's result names.
_ACTION_RANK = {"drain_inspect": 4, "reboot": 3, "reset_gpu": 2, "restart_app": 1, "none": 0}


@dataclass(frozen=True)
class XidFacts:
    events: Tuple[Any, ...] = ()  # XidEvent, in log order
    source: str = ""
    window: Optional[Tuple[float, float]] = None  # None: whole log (simulation)
    error: Optional[str] = None  # set when the kernel log could not be read
    notes: Tuple[str, ...] = ()
    sxids: Tuple[Any, ...] = ()  # SxidEvent, in log order

    def window_text(self) -> str:
        if self.window is None:
            return "the kernel log"
        from gcm_checks.gather.kernel_log_parse import iso

        return f"{iso(self.window[0])} .. {iso(self.window[1])}"


@gatherer("xid")
def gather_xid(ctx: Any) -> XidFacts:
    # Lazy imports: the prolog loads this module but never gathers XIDs (rule 7).
    from gcm_checks.gather import kernel_log
    from gcm_checks.gather.sources import kernel_log_source
    from gcm_checks.xid import scan as xscan

    settings = ctx.settings
    state_dir = str(ctx.state_dir)
    now = time.time()
    health = ctx.window is None
    log = kernel_log_source(ctx)  # the host's, or what simulation injected
    cov = kernel_log.Coverage()
    window: Optional[Tuple[float, float]] = None
    if log.windowed:
        if ctx.window is not None:
            window = (float(ctx.window[0]), float(ctx.window[1]))
        else:
            since = xscan.read_last_scan(state_dir)
            lookback = settings.xid.health_lookback_s
            # Never the whole history: the first health scan looks back a bounded time.
            if since is None or since < now - lookback:
                since = now - lookback
            window = (since, now)
    timeout = max(0.5, min(settings.xid.journal_timeout_s, ctx.remaining() - 0.5))
    lines = log.read(ctx, window, timeout=timeout, coverage=cov)
    bus_map = _bus_map(ctx)
    try:
        both = list(xscan.scan_all(lines, bus_map))
    except kernel_log.KernelLogUnavailable as e:
        return XidFacts(source=cov.source, window=window, error=str(e), notes=tuple(cov.notes))
    events = [e for e in both if isinstance(e, xscan.XidEvent)]
    sxids = tuple(e for e in both if not isinstance(e, xscan.XidEvent))
    if settings.xid.escalate_after_reset:
        esc = xscan.Escalation(state_dir, settings.xid.escalate_window_days)
        try:
            events = esc.apply(events, window[0] if window else None, now)
            if not getattr(ctx, "dry_run", False):  # a dry run changes no state
                esc.record(events, now)
        except OSError as e:
            cov.notes.append(f"XID history not updated: {e}")
    # A fixed (simulated) log has no window: no scan mark to move on.
    if health and window is not None and not getattr(ctx, "dry_run", False):
        try:
            xscan.write_last_scan(state_dir, window[1])
        except OSError as e:
            cov.notes.append(f"last-scan time not saved: {e}")
    return XidFacts(tuple(events), cov.source, window, None, tuple(cov.notes), sxids)


def _bus_map(ctx: Any) -> Dict[str, int]:
    # Without the map an event still has its bus id; only the index is lost.
    try:
        return dict(ctx.gpu_bus_ids() or {})
    except Exception:  # noqa: BLE001 - NVML trouble is the GPU checks' to report
        return {}


def _subject(ev: Any) -> str:
    if ev.gpu_index is not None:
        return f"GPU {ev.gpu_index} ({ev.pci_bus_id})"
    if ev.pci_bus_id:
        return f"GPU at {ev.pci_bus_id}"
    return "GPU (bus id not in log line)"


def _clock(ev: Any) -> str:
    # "2026-11-30T02:14:07+00:00" -> "02:14:07": enough in a drain reason.
    return ev.time[11:19] if ev.time and len(ev.time) >= 19 else "unknown time"


def _describe(ev: Any) -> str:
    from gcm_checks.xid.catalog import ACTION_TEXT

    return f"XID {ev.xid} ({ev.name}) at {_clock(ev)}: {ACTION_TEXT.get(ev.action, ev.action)}"


def _by_gpu(events: Any) -> Dict[str, List[Any]]:
    out: Dict[str, List[Any]] = {}
    for ev in events:
        out.setdefault(ev.gpu_key, []).append(ev)
    return out


def _headline(evs: List[Any]) -> Any:
    # The most serious action; among equals the earliest (the likely cause).
    return max(evs, key=lambda e: (_ACTION_RANK.get(e.action, 0), -(e.ts or 0.0)))


def _more(evs: List[Any], head: Any) -> str:
    others = sorted({e.xid for e in evs if e is not head and e.xid != head.xid})
    rest = len(evs) - 1
    if rest <= 0:
        return ""
    extra = f", also XID {', '.join(map(str, others))}" if others else ""
    return f" ({rest} more event{'s' if rest > 1 else ''}{extra})"


@register(HARDWARE, tags=["epilog", "health"], needs="xid")
def check_xid_hardware(facts: XidFacts, settings: "Settings") -> List[CheckResult]:
    """Drain-worthy XIDs (reset GPU, reboot, inspect) in the window, per GPU."""
    if facts.error:
        return [cannot_tell(f"kernel log not readable: {facts.error}", source=facts.source)]
    bad = [e for e in facts.events if e.severity == "fail"]
    if not bad:
        return [ok(f"no hardware XIDs in {facts.window_text()}", source=facts.source,
                       events=len(facts.events), notes=list(facts.notes))]
    out = []
    for evs in _by_gpu(bad).values():
        head = _headline(evs)
        msg = _describe(head) + _more(evs, head)
        out.append(fail(msg, _subject(head), xid=head.xid, action=head.action,
                          pci_bus_id=head.pci_bus_id, gpu_index=head.gpu_index, note=head.note,
                          events=[e.to_dict() for e in evs], source=facts.source))
    return out


@register(SOFTWARE, tags=["epilog", "health"], needs="xid")
def check_xid_software(facts: XidFacts, settings: "Settings") -> List[CheckResult]:
    """Driver/firmware XIDs (warn) and application XIDs (listed, never drain)."""
    if facts.error:
        return [cannot_tell(f"kernel log not readable: {facts.error}", source=facts.source)]
    out = []
    for evs in _by_gpu(e for e in facts.events if e.severity == "warn").values():
        head = evs[0]
        out.append(warn(f"XID {head.xid} ({head.name}, {head.responsibility}) at {_clock(head)}"
                          + _more(evs, head), _subject(head), events=[e.to_dict() for e in evs]))
    app = [e for e in facts.events if e.severity == "info"]
    if app:
        codes = sorted({e.xid for e in app})
        out.append(ok(f"application XIDs only ({', '.join(map(str, codes))}): the job's own errors, "
                          "not the node's", events=[e.to_dict() for e in app]))
    elif not out:
        out.append(ok(f"no driver or application XIDs in {facts.window_text()}"))
    return out


@register(NVSWITCH, tags=["epilog", "health"], needs="xid")
def check_xid_nvswitch(facts: XidFacts, settings: "Settings") -> List[CheckResult]:
    """NVSwitch SXids: a fatal one fails per switch link (the fabric needs a
    reset, every all-GPU job on the node would fail); non-fatal ones warn."""
    if facts.error:
        return [cannot_tell(f"kernel log not readable: {facts.error}", source=facts.source)]
    out: List[CheckResult] = []
    by_where: Dict[str, List[Any]] = {}
    for ev in facts.sxids:
        if ev.severity in ("fail", "warn"):
            by_where.setdefault(f"{ev.severity}|{ev.where}", []).append(ev)
    for key, evs in by_where.items():
        head = evs[0]
        verdict = {True: "Fatal", False: "Non-fatal", None: "no verdict"}[head.fatal]
        more = f" ({len(evs) - 1} more)" if len(evs) > 1 else ""
        msg = f"SXid {head.sxid} ({head.name}, {verdict}) at {_clock(head)}{more}"
        kw = dict(sxid=head.sxid, switch=head.switch, link=head.link, pci_bus_id=head.pci_bus_id,
                  events=[e.to_dict() for e in evs], source=facts.source)
        if head.severity == "fail":
            out.append(fail(msg + ": reboot the node (resets the NVSwitch fabric)", head.where,
                              action=head.action, **kw))
        else:
            out.append(warn(msg, head.where, **kw))
    if not out:
        out.append(ok(f"no NVSwitch SXids in {facts.window_text()}", events=len(facts.sxids)))
    return out
