"""InfiniBand checks over a sysfs snapshot (gcm_checks.gather.ib).

What is expected comes from ``infiniband:`` in the config:

* ``expected: [{device, ports: [1], rate_gbps, link_layer}]`` (or plain device
  names), and/or ``expected_hcas: [mlx5_0, ...]`` with node-wide
  ``min_rate_gbps`` and ``link_layer``. A listed port that is missing, not
  ACTIVE/LinkUp, slower than expected or on the wrong link layer fails: jobs
  that use it would hang or crawl.
* Ports present but not listed are judged by ``unlisted_ports`` (warn by
  default: with nothing configured we cannot tell a dead rail from a
  deliberately unused second port, and a default install must not drain a
  cluster of dual-port HCAs; list the ports, or set ``fail`` where every port
  is cabled, to drain for a dead rail). Unlisted Ethernet ports (RoCE,
  bonds) are never judged here.
* Error counters that grew since the previous run warn: a growing
  symbol_error or link_downed is a cable going bad before it fails. The
  previous values live in ``<state_dir>/ib_counters.json``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from gcm_checks.registry import gatherer, register
from gcm_checks.result import CheckResult, Status, cannot_tell, fail, ok, warn

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

TAGS = ["prolog", "health", "qualify"]
BASELINE_FILE = "ib_counters.json"
NO_IB = "no InfiniBand expected"


@dataclass(frozen=True)
class IbFacts:
    snapshot: Any  # gcm_checks.gather.ib.IbSnapshot
    baseline: Optional[Mapping[str, Mapping[str, int]]] = None  # port key -> counters
    baseline_age_s: Optional[float] = None
    baseline_note: str = ""  # why there is no usable baseline, if any
    rails: Any = None  # RailFacts: what the zero-config rail rules compare against

    def to_dict(self) -> dict:
        return {"snapshot": self.snapshot.to_dict(), "baseline_age_s": self.baseline_age_s, "baseline_note": self.baseline_note}


@dataclass(frozen=True)
class ExpectedPort:
    device: str
    port: int
    rate_gbps: Optional[float] = None
    link_layer: Optional[str] = None


# --------------------------------------------------------------------------
# Gathering (and remembering counters between runs)


def _sysfs_root(ctx: Any) -> str:
    root = getattr(ctx, "sysfs_root", None)
    if callable(root):
        return str(root())
    return ctx.settings.infiniband.sysfs_root


def load_baseline(path: Path) -> Tuple[Optional[Dict[str, Dict[str, int]]], Optional[float], str]:
    from gcm_checks.jsonfile import read_json

    data = read_json(path)  # bounded size and depth: a planted file must not RecursionError
    if data is None:
        # Only now ask why (a stat the healthy path with a baseline never pays).
        if not os.path.lexists(path):
            return None, None, "first run: no previous counters"
        return None, None, "previous counters unreadable (too big, too deep, corrupt or not a JSON object); starting over"
    ports = data.get("ports")
    if not isinstance(ports, dict):
        return None, None, "previous counters file has no 'ports'; starting over"
    clean = {
        str(k): {str(c): int(v) for c, v in cs.items() if isinstance(v, int)}
        for k, cs in ports.items()
        if isinstance(cs, dict)
    }
    taken = data.get("taken_at")
    age = time.time() - float(taken) if isinstance(taken, (int, float)) else None
    return clean, age, ""


def save_baseline(path: Path, snapshot: Any) -> None:
    """Atomically replace the counters file: a crash mid-write leaves the old one."""
    from gcm_checks.jsonfile import write_json

    data = {"version": 1, "taken_at": time.time(), "ports": {p.key: dict(p.counters) for p in snapshot.ports}}
    # No fsync: losing a baseline only delays growth detection by one run,
    # and this runs in every prolog.
    write_json(path, data, durable=False)


@gatherer("ib")
def gather_ib(ctx: Any) -> IbFacts:
    from gcm_checks.gather import ib

    snap = ib.read_sysfs(_sysfs_root(ctx))
    state_dir = getattr(ctx, "state_dir", None)
    if state_dir is None:
        return IbFacts(snap, None, None, "no state_dir: counter growth not tracked", rails=_rails(ctx, snap))
    path = Path(state_dir) / BASELINE_FILE
    baseline, age, note = load_baseline(path)
    if snap.ports and not getattr(ctx, "dry_run", False):
        try:
            save_baseline(path, snap)
        except OSError as e:
            note = (note + "; " if note else "") + f"could not save counters to {path}: {e.strerror or e}"
    return IbFacts(snap, baseline, age, note, rails=_rails(ctx, snap))


def _rails(ctx: Any, snap: Any) -> Any:
    # Zero-config rail facts (models, PCI view, ports seen ACTIVE since boot):
    # gcm_checks.checks.ib_rails, which judges them.
    from gcm_checks.checks.ib_rails import gather_rails

    try:
        return gather_rails(ctx, snap)
    except Exception:  # noqa: BLE001 - never at the cost of the port facts; the rail rules then see no PCI view
        return None


# --------------------------------------------------------------------------
# Expectations


def expected_ports(settings: "Settings") -> List[ExpectedPort]:
    default_rate = settings.infiniband.min_rate_gbps
    default_ll = settings.infiniband.link_layer
    out: Dict[Tuple[str, int], ExpectedPort] = {}

    def add(device: str, ports: Any, rate: Any, ll: Any) -> None:
        plist = ports if isinstance(ports, list) else [ports if ports is not None else 1]
        for p in plist:
            out[(device, int(p))] = ExpectedPort(
                device,
                int(p),
                float(rate) if rate is not None else (float(default_rate) if default_rate is not None else None),
                str(ll) if ll else (str(default_ll) if default_ll else None),
            )

    for name in settings.infiniband.expected_hcas:
        add(str(name), [1], None, None)
    for item in settings.infiniband.expected:
        if isinstance(item, str):
            add(item, [1], None, None)
        elif isinstance(item, Mapping) and item.get("device"):
            add(str(item["device"]), item.get("ports", item.get("port", [1])), item.get("rate_gbps"), item.get("link_layer"))
        else:
            # The suite turns this into "unknown" with this text: a config
            # mistake must not pass silently, nor drain.
            raise ValueError(f"infiniband.expected: {item!r} is neither a device name nor {{device, ports, rate_gbps, link_layer}}")
    return sorted(out.values(), key=lambda e: (e.device, e.port))


@dataclass(frozen=True)
class _Plan:
    """Which ports to judge, and how hard."""

    expected: List[ExpectedPort]
    judged: List[Tuple[Any, Optional[ExpectedPort]]] = field(default_factory=list)  # (IbPort, expectation)
    missing: List[ExpectedPort] = field(default_factory=list)
    unlisted_status: Optional[Status] = Status.FAIL

    @property
    def nothing_to_do(self) -> bool:
        return not self.expected and not self.judged


def _plan(facts: IbFacts, settings: "Settings") -> _Plan:
    exp = expected_ports(settings)
    snap = facts.snapshot
    by_key = {(e.device, e.port): e for e in exp}
    judged: List[Tuple[Any, Optional[ExpectedPort]]] = []
    mode = settings.infiniband.unlisted_ports.lower()
    unlisted_status = {"fail": Status.FAIL, "warn": Status.WARN}.get(mode)
    for p in snap.ports:
        e = by_key.get((p.device, p.port))
        if e is not None:
            judged.append((p, e))
        elif unlisted_status is not None and p.link_layer.lower() == "infiniband":
            judged.append((p, None))
    missing = [e for e in exp if snap.port(e.device, e.port) is None]
    return _Plan(exp, judged, missing, unlisted_status)


def _severity(plan: _Plan, e: Optional[ExpectedPort]) -> Status:
    return Status.FAIL if e is not None else (plan.unlisted_status or Status.WARN)


def _result(status: Status, message: str, subject: str, **details: Any) -> CheckResult:
    return CheckResult("", status, message, subject, details=details)


# --------------------------------------------------------------------------
# Checks


@register("ib.hca.present", tags=TAGS, needs="ib")
def check_hca_present(facts: IbFacts, settings: "Settings") -> List[CheckResult]:
    """Every expected HCA (and port) is present in sysfs."""
    snap = facts.snapshot
    plan = _plan(facts, settings)
    if not plan.expected:
        if not snap.devices:
            return [ok(NO_IB)]
        return [ok(f"{len(snap.devices)} HCAs present ({', '.join(snap.devices)}); none listed in infiniband.expected", devices=list(snap.devices))]
    if snap.errors and not snap.devices:
        return [cannot_tell(f"cannot read {snap.class_dir}: {'; '.join(snap.errors)}")]
    results: List[CheckResult] = []
    missing_devices = sorted({e.device for e in plan.missing if e.device not in snap.devices})
    for dev in missing_devices:
        hint = (
            "no InfiniBand devices at all: is the driver loaded (modprobe mlx5_ib) and the HCA on the PCIe bus (lspci | grep -i mellanox)?"
            if not snap.class_present or not snap.devices
            else "driver did not register it: check 'lspci | grep -i mellanox', dmesg for mlx5_core errors, and the HCA's PCIe link"
        )
        results.append(fail(f"HCA {dev} missing from {snap.class_dir}; {hint}", dev, present=list(snap.devices)))
    for e in plan.missing:
        if e.device in snap.devices:
            results.append(fail(f"{e.device} has no port {e.port} in sysfs; check the HCA model and firmware port configuration", f"{e.device} port {e.port}"))
    if not results:
        results.append(ok(f"all {len({e.device for e in plan.expected})} expected HCAs present", devices=list(snap.devices)))
    return results


_STATE_HINTS = {
    "DOWN": "no logical link",
    "INIT": "link is up but the subnet manager has not configured the port; check the subnet manager (opensm/UFM) and the switch",
    "ARMED": "link is up but the subnet manager has not activated the port; check the subnet manager (opensm/UFM)",
}

_PHYS_HINTS = {
    "Polling": "no link partner (cable unplugged or switch port down); check cable and switch",
    "Disabled": "port administratively disabled (ibportstate / switch); re-enable it",
    "Sleep": "port asleep (no cable or transceiver detected); check cable and transceiver",
    "PortConfigurationTraining": "link training did not finish; reseat or replace the cable",
    "LinkErrorRecovery": "link keeps recovering from errors; reseat or replace the cable",
    "Phy Test": "port in physical test mode",
}


def _unreadable(p: Any, attrs: Tuple[str, ...]) -> Optional[CheckResult]:
    bad = {a: p.read_errors[a] for a in attrs if a in p.read_errors}
    if bad:
        return cannot_tell(f"cannot read {', '.join(f'{a} ({w})' for a, w in bad.items())}", p.subject, read_errors=bad)
    return None


def _per_port(ports: Iterable[Tuple[Any, Any]], reads: Tuple[str, ...],
              judge: Callable[[Any, Any], Optional[CheckResult]], all_fine: Callable[[int], str],
              applies: Callable[[Any, Any], bool] = lambda p, e: True) -> List[CheckResult]:
    """The one per-port loop of the IB checks: for each (port, expectation)
    that ``applies``, an unreadable attribute in ``reads`` is unknown, else
    ``judge`` returns a result or None (fine); no finding at all is one pass
    line, ``all_fine(number of ports judged)``, so a healthy report stays short."""
    results: List[CheckResult] = []
    judged = 0
    for p, e in ports:
        if not applies(p, e):
            continue
        judged += 1
        r = _unreadable(p, reads) or judge(p, e)
        if r is not None:
            results.append(r)
    return results or [ok(all_fine(judged))]


def _scope(e: Optional[ExpectedPort]) -> str:
    return "" if e is not None else " (port not listed in infiniband.expected)"


@register("ib.port.state", tags=TAGS, needs="ib")
def check_port_state(facts: IbFacts, settings: "Settings") -> List[CheckResult]:
    """Each judged port is logically ACTIVE."""
    plan = _plan(facts, settings)
    if plan.nothing_to_do:
        return [ok(NO_IB)]

    def judge(p: Any, e: Optional[ExpectedPort]) -> Optional[CheckResult]:
        if p.state == "ACTIVE":
            return None
        hint = _STATE_HINTS.get(p.state, "port not active")
        if p.state == "DOWN" and p.phys_state in _PHYS_HINTS:
            hint = _PHYS_HINTS[p.phys_state]
        elif p.state == "DOWN" and p.phys_state.lower() == "linkup":
            # Seen in the wild (Mellanox/network-operator#249): the cable
            # is fine, but no subnet manager ever brought the port up.
            hint = "physical link is up but the port is logically down (no subnet manager has configured it); check opensm/UFM and the switch"
        return _result(_severity(plan, e), f"state {p.state} / phys_state {p.phys_state or '?'}: {hint}{_scope(e)}",
                       p.subject, state=p.state, phys_state=p.phys_state)

    return _per_port(plan.judged, ("state",), judge, lambda n: f"{n} ports ACTIVE")


@register("ib.port.phys_state", tags=TAGS, needs="ib")
def check_port_phys_state(facts: IbFacts, settings: "Settings") -> List[CheckResult]:
    """Each judged port's physical link is LinkUp."""
    plan = _plan(facts, settings)
    if plan.nothing_to_do:
        return [ok(NO_IB)]

    def judge(p: Any, e: Optional[ExpectedPort]) -> Optional[CheckResult]:
        if p.phys_state.lower() == "linkup":
            return None
        hint = _PHYS_HINTS.get(p.phys_state, "physical link not up; check cable and switch port")
        return _result(_severity(plan, e), f"phys_state {p.phys_state or '?'}: {hint}{_scope(e)}", p.subject,
                       phys_state=p.phys_state)

    return _per_port(plan.judged, ("phys_state",), judge, lambda n: f"{n} ports LinkUp")


@register("ib.port.rate", tags=TAGS, needs="ib")
def check_port_rate(facts: IbFacts, settings: "Settings") -> List[CheckResult]:
    """Each judged ACTIVE port runs at least at the expected rate."""
    plan = _plan(facts, settings)
    if plan.nothing_to_do:
        return [ok(NO_IB)]
    default_rate = settings.infiniband.min_rate_gbps

    def want(e: Optional[ExpectedPort]) -> Optional[float]:
        return e.rate_gbps if e is not None else (float(default_rate) if default_rate is not None else None)

    def judge(p: Any, e: Optional[ExpectedPort]) -> Optional[CheckResult]:
        if p.rate_gbps is None:
            return cannot_tell(f"rate unreadable ({p.rate_text!r})", p.subject)
        if p.rate_gbps < want(e):
            return _result(_severity(plan, e),
                           f"link rate {p.rate_text} below expected {want(e):g} Gb/s: degraded link (lanes down or wrong speed); reseat/replace the cable or check the switch port",
                           p.subject, rate_gbps=p.rate_gbps, expected_gbps=want(e))
        return None

    # A port that is not ACTIVE reports a meaningless rate; the state check
    # already speaks for it.
    return _per_port(plan.judged, ("rate",), judge,
                     lambda n: f"{n} ports at expected rate" if n else "no expected rate configured (infiniband.min_rate_gbps)",
                     applies=lambda p, e: want(e) is not None and p.state == "ACTIVE")


@register("ib.port.link_layer", tags=TAGS, needs="ib")
def check_port_link_layer(facts: IbFacts, settings: "Settings") -> List[CheckResult]:
    """Each expected port runs the expected link layer (InfiniBand vs Ethernet)."""
    plan = _plan(facts, settings)
    if plan.nothing_to_do:
        return [ok(NO_IB)]

    def judge(p: Any, e: ExpectedPort) -> Optional[CheckResult]:
        if p.link_layer.lower() == e.link_layer.lower():
            return None
        return fail(f"link layer {p.link_layer or '?'}, expected {e.link_layer}: the port is in the wrong mode; set LINK_TYPE_P{p.port} with mlxconfig and reboot",
                      p.subject, link_layer=p.link_layer, expected=e.link_layer)

    return _per_port(plan.judged, ("link_layer",), judge,
                     lambda n: f"{n} ports on the expected link layer" if n else "no ports listed in infiniband.expected",
                     applies=lambda p, e: e is not None and bool(e.link_layer))


def watched_counters(settings: "Settings") -> Dict[str, int]:
    """counter -> growth that warns. ``error_counters_warn`` is a list (any
    growth warns) or a mapping of per-counter thresholds."""
    from gcm_checks.gather.ib import ERROR_COUNTERS

    conf = settings.infiniband.error_counters_warn
    if conf is None:
        return {c: 1 for c in ERROR_COUNTERS}
    if isinstance(conf, Mapping):
        return {str(k): max(1, int(v)) for k, v in conf.items()}
    return {str(c): 1 for c in conf}


@register("ib.port.errors", tags=TAGS, needs="ib")
def check_port_errors(facts: IbFacts, settings: "Settings") -> List[CheckResult]:
    """Error counters that grew since the previous run warn."""
    snap = facts.snapshot
    if not snap.ports:
        return [ok(NO_IB)]
    if facts.baseline is None:
        return [ok(f"baseline recorded for {len(snap.ports)} ports ({facts.baseline_note or 'no previous counters'})")]
    watch = watched_counters(settings)
    since = f" in the last {facts.baseline_age_s / 60:.0f} min" if facts.baseline_age_s is not None else ""

    def judge(p: Any, before: Mapping[str, int]) -> Optional[CheckResult]:
        grown = {}
        for name, threshold in watch.items():
            if name not in p.counters or name not in before:
                continue
            delta = p.counters[name] - before[name]
            # A smaller value means the counters were reset (driver reload,
            # perfquery -R): no growth to judge.
            if delta >= threshold:
                grown[name] = delta
        if not grown:
            return None
        listed = ", ".join(f"{k} +{v}" for k, v in sorted(grown.items()))
        return warn(f"error counters grew{since}: {listed}; a cable or transceiver may be going bad (check with 'mlxlink -d {p.device} -p {p.port} -c')",
                      p.subject, grown=grown)

    baseline = facts.baseline
    return _per_port(((p, baseline.get(p.key)) for p in snap.ports), (), judge,
                     lambda _: f"no error counter grew on {len(snap.ports)} ports",
                     applies=lambda p, before: before is not None)
