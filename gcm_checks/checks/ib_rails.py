"""Zero-config InfiniBand rules: what "should be up" means when the config
lists no ports (``infiniband.expected`` / ``expected_hcas`` empty).

* ``ib.hca.pci``: every Mellanox/NVIDIA InfiniBand controller on the PCI bus
  (vendor 0x15b3, class 0x0207) has its ``/sys/class/infiniband`` device. One
  without is an HCA the driver failed to bring up.
* ``ib.port.rail``: a port that is not ACTIVE while the same port of its
  same-model sibling HCAs is ACTIVE (at least half of them, and at least one)
  is a dead rail, not a deliberately unused port. A port seen ACTIVE since
  this boot stays expected (``<state_dir>/ib_seen_active.json``, keyed by the
  kernel's boot id), so a dead rail on a node whose other rails also went
  down is still caught.

An explicit expectation always wins: with ports listed in the config, or
``infiniband.unlisted_ports`` set to neither ``warn`` nor ``fail``, these
rules stay silent and ``gcm_checks.checks.ib`` judges what is listed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Mapping, NamedTuple, Tuple

from gcm_checks.registry import register
from gcm_checks.result import CheckResult, fail, ok

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

TAGS = ["prolog", "health", "qualify"]
SEEN_ACTIVE_FILE = "ib_seen_active.json"


class RailFacts(NamedTuple):  # not a dataclass: cheaper to create at import, on the prolog path
    models: Mapping[str, str] = {}  # device -> hca_type/board_id (never mutated)
    seen_active: FrozenSet[str] = frozenset()  # port keys seen ACTIVE earlier this boot
    pci: Any = None  # gcm_checks.gather.pci.PciFacts, None when not available
    note: str = ""


def _load_seen(path: Path, boot_id: str) -> FrozenSet[str]:
    from gcm_checks.jsonfile import read_json

    data = read_json(path) or {}
    ports = data.get("ports")
    if data.get("boot_id") != boot_id or not isinstance(ports, list):
        return frozenset()
    return frozenset(str(p) for p in ports[:4096] if isinstance(p, str))


def gather_rails(ctx: Any, snap: Any) -> RailFacts:
    from gcm_checks.gather import ib

    root = snap.root
    models = ib.read_models(root, snap.devices) if snap.devices else {}
    pci_facts = getattr(ctx, "pci_facts", None)
    pci = pci_facts() if callable(pci_facts) else None
    state_dir = getattr(ctx, "state_dir", None)
    if state_dir is None or not snap.ports:
        return RailFacts(models, frozenset(), pci)
    boot_id = ib.read_boot_id(root)
    path = Path(state_dir) / SEEN_ACTIVE_FILE
    seen = _load_seen(path, boot_id)
    active = {p.key for p in snap.ports if p.state == "ACTIVE"}
    note = ""
    # Written only when a port joins the set (rule 3: write on state changes).
    if not active <= seen and not getattr(ctx, "dry_run", False):
        from gcm_checks.jsonfile import write_json

        try:
            write_json(path, {"boot_id": boot_id, "ports": sorted(seen | active)}, durable=False)
        except OSError as e:
            note = f"could not save {path}: {e.strerror or e}"
    return RailFacts(models, seen, pci, note)


def zero_config(settings: "Settings") -> bool:
    """True when the config lists no InfiniBand expectation (explicit config wins)."""
    if settings.infiniband.expected_hcas or settings.infiniband.expected:
        return False
    return settings.infiniband.unlisted_ports.lower() in ("warn", "fail")


def _rails(facts: Any) -> RailFacts:
    return facts.rails if facts.rails is not None else RailFacts()


@register("ib.hca.pci", tags=TAGS, needs="ib")
def check_hca_on_bus(facts: Any, settings: "Settings") -> List[CheckResult]:
    """Every InfiniBand HCA on the PCI bus is registered by its driver (zero-config)."""
    pci = _rails(facts).pci
    if not zero_config(settings):
        return [ok("InfiniBand expectations configured; judged by ib.hca.present")]
    if pci is None or not pci.readable:
        return [ok("PCI bus not readable here; nothing to compare")]
    if not pci.hcas:
        return [ok("no InfiniBand HCAs on the PCI bus")]
    known = set(facts.snapshot.devices)
    out = []
    for d in pci.hcas:
        if not any(n in known for n in d.ib_devices):
            drv = f"bound to {d.driver}" if d.driver else "no driver bound"
            out.append(fail(f"InfiniBand HCA on the PCI bus ({d.address}, device 0x{d.device:04x}, {drv}) has no "
                               "/sys/class/infiniband device: the driver did not bring it up; check dmesg for mlx5_core, "
                               "'modprobe mlx5_ib', the firmware and the HCA's PCIe link",
                               d.address, address=d.address, driver=d.driver))
    return out or [ok(f"all {len(pci.hcas)} InfiniBand HCAs on the PCI bus registered", hcas=len(pci.hcas))]


def dead_rails(facts: Any) -> List[Tuple[Any, str]]:
    """(port, why) for every InfiniBand port that should be up and is not."""
    rails = _rails(facts)
    ports = [p for p in facts.snapshot.ports if p.link_layer.lower() == "infiniband" and "state" not in p.read_errors]
    groups: Dict[Tuple[str, int], List[Any]] = {}
    for p in ports:
        groups.setdefault((rails.models.get(p.device, ""), p.port), []).append(p)
    out = []
    for p in ports:
        if p.state == "ACTIVE":
            continue
        if p.key in rails.seen_active:
            out.append((p, "it was ACTIVE earlier since this boot"))
            continue
        siblings = [s for s in groups[(rails.models.get(p.device, ""), p.port)] if s.device != p.device]
        up = sum(1 for s in siblings if s.state == "ACTIVE")
        if up and 2 * up >= len(siblings):
            model = rails.models.get(p.device) or "same-model"
            out.append((p, f"port {p.port} of {up} of {len(siblings)} sibling {model} HCAs is ACTIVE"))
    return out


@register("ib.port.rail", tags=TAGS, needs="ib")
def check_rails(facts: Any, settings: "Settings") -> List[CheckResult]:
    """No dead rail: a port down while its same-model siblings are up, or down
    after being ACTIVE since boot, fails (zero-config)."""
    if not zero_config(settings):
        return [ok("InfiniBand expectations configured; judged by ib.port.*")]
    dead = dead_rails(facts)
    out = [fail(f"dead rail: state {p.state or '?'} / phys_state {p.phys_state or '?'} while {why}; "
                       f"check the cable, transceiver and switch port (mlxlink -d {p.device} -p {p.port})",
                  p.subject, state=p.state, phys_state=p.phys_state)
           for p, why in dead]
    n = sum(1 for p in facts.snapshot.ports if p.link_layer.lower() == "infiniband")
    return out or [ok(f"no dead rail among {n} InfiniBand ports" if n else "no InfiniBand ports")]
