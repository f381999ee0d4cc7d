"""InfiniBand facts from sysfs: one frozen snapshot, no judgement.

Reads ``<root>/sys/class/infiniband/<hca>/ports/<n>/{state,phys_state,rate,
link_layer}`` and ``counters/*``. ``root`` is a prefix (``/`` in production)
so tests and the simulated node use real-layout trees; file formats are the
kernel's (drivers/infiniband/core/sysfs.c), e.g. ``4: ACTIVE``, ``5: LinkUp``,
``400 Gb/sec (4X NDR)``, ``InfiniBand``.

Reading sysfs needs no tool (ibstat may not be installed) and never blocks on
the fabric. A file we cannot read is recorded on the port, not raised, so one
odd attribute makes that port ``unknown`` rather than the whole area.

The ``/sys/class/infiniband/<hca>`` entries are symlinks into
``/sys/devices``; they belong to the kernel, not to a user, so following them
is safe (rule 5 concerns user-owned paths).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

CLASS_DIR = ("sys", "class", "infiniband")

# ib_port_state / phys_state numbering from the IBTA spec as the kernel prints it.
PORT_STATES = {1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
PHYS_STATES = {
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "Phy Test",
}

# Counters in ports/<n>/counters/ (IBTA PortCounters) that only grow on
# errors; the rest (data, packets, xmit_wait) grow with traffic.
ERROR_COUNTERS = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
)

# Speed names the kernel prints after the width, by per-lane Gb/s.
_SPEED_BY_LANE = {2.5: "SDR", 5.0: "DDR", 10.0: "QDR", 14.0: "FDR", 25.0: "EDR", 50.0: "HDR", 100.0: "NDR", 200.0: "XDR"}
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec\b")
_CODED_RE = re.compile(r"^\s*(\d+)\s*:\s*(.*?)\s*$")


@dataclass(frozen=True)
class IbPort:
    device: str
    port: int
    state: str = ""  # "ACTIVE", "DOWN", ... ("" when unreadable)
    state_code: Optional[int] = None
    phys_state: str = ""  # "LinkUp", "Polling", ...
    phys_state_code: Optional[int] = None
    rate_gbps: Optional[float] = None
    rate_text: str = ""
    link_layer: str = ""
    counters: Mapping[str, int] = field(default_factory=dict)
    read_errors: Mapping[str, str] = field(default_factory=dict)  # attribute -> why

    @property
    def subject(self) -> str:
        return f"{self.device} port {self.port}"

    @property
    def key(self) -> str:
        return f"{self.device}/{self.port}"

    def to_dict(self) -> dict:
        return {
            "device": self.device,
            "port": self.port,
            "state": self.state,
            "state_code": self.state_code,
            "phys_state": self.phys_state,
            "phys_state_code": self.phys_state_code,
            "rate_gbps": self.rate_gbps,
            "rate_text": self.rate_text,
            "link_layer": self.link_layer,
            "counters": dict(self.counters),
            "read_errors": dict(self.read_errors),
        }


@dataclass(frozen=True)
class IbSnapshot:
    root: str
    class_dir: str
    class_present: bool  # /sys/class/infiniband exists (ib_core loaded)
    devices: Tuple[str, ...] = ()
    ports: Tuple[IbPort, ...] = ()
    errors: Tuple[str, ...] = ()  # device-level read problems

    def port(self, device: str, port: int) -> Optional[IbPort]:
        for p in self.ports:
            if p.device == device and p.port == port:
                return p
        return None

    def to_dict(self) -> dict:
        return {
            "root": self.root,
            "class_present": self.class_present,
            "devices": list(self.devices),
            "ports": [p.to_dict() for p in self.ports],
            "errors": list(self.errors),
        }


# --------------------------------------------------------------------------
# Pure parsers (one kernel attribute each)


def parse_coded(text: str) -> Tuple[Optional[int], str]:
    """``"4: ACTIVE"`` -> (4, "ACTIVE"); a bare name keeps code None."""
    m = _CODED_RE.match(text)
    if m:
        return int(m.group(1)), m.group(2)
    return None, text.strip()


def parse_rate(text: str) -> Optional[float]:
    """``"400 Gb/sec (4X NDR)"`` -> 400.0; ``"2.5 Gb/sec (1X SDR)"`` -> 2.5."""
    m = _RATE_RE.match(text)
    return float(m.group(1)) if m else None


def class_dir(root: "str | Path") -> Path:
    return Path(root).joinpath(*CLASS_DIR)


def _read(path: Path) -> str:
    with open(path, "r", encoding="ascii", errors="replace") as f:
        return f.read(4096).strip()


def _describe(e: OSError) -> str:
    return f"{type(e).__name__}: {e.strerror or e}"


def read_port(device_dir: Path, device: str, port: int) -> IbPort:
    pdir = device_dir / "ports" / str(port)
    errors: Dict[str, str] = {}
    values: Dict[str, str] = {}
    for attr in ("state", "phys_state", "rate", "link_layer"):
        try:
            values[attr] = _read(pdir / attr)
        except OSError as e:
            errors[attr] = _describe(e)
    counters: Dict[str, int] = {}
    cdir = pdir / "counters"
    try:
        names = sorted(os.listdir(cdir))
    except OSError as e:
        names = []
        errors["counters"] = _describe(e)
    for name in names:
        try:
            counters[name] = int(_read(cdir / name))
        except (OSError, ValueError) as e:
            # Some drivers return EINVAL for counters they do not implement.
            errors[f"counters/{name}"] = _describe(e) if isinstance(e, OSError) else "not an integer"
    state_code, state = parse_coded(values["state"]) if "state" in values else (None, "")
    phys_code, phys = parse_coded(values["phys_state"]) if "phys_state" in values else (None, "")
    rate_text = values.get("rate", "")
    rate = parse_rate(rate_text) if rate_text else None
    if rate_text and rate is None:
        errors["rate"] = f"unrecognised rate {rate_text[:60]!r}"
    return IbPort(
        device=device,
        port=port,
        state=state.upper(),
        state_code=state_code,
        phys_state=phys,
        phys_state_code=phys_code,
        rate_gbps=rate,
        rate_text=rate_text,
        link_layer=values.get("link_layer", ""),
        counters=counters,
        read_errors=errors,
    )


def read_sysfs(root: "str | Path" = "/") -> IbSnapshot:
    """Every HCA and port under ``<root>/sys/class/infiniband``."""
    cdir = class_dir(root)
    if not cdir.is_dir():
        return IbSnapshot(str(root), str(cdir), False)
    errors: List[str] = []
    ports: List[IbPort] = []
    try:
        devices = sorted(os.listdir(cdir))
    except OSError as e:
        return IbSnapshot(str(root), str(cdir), True, errors=(f"{cdir}: {_describe(e)}",))
    for dev in devices:
        ddir = cdir / dev
        try:
            port_names = os.listdir(ddir / "ports")
        except OSError as e:
            errors.append(f"{dev}: cannot list ports: {_describe(e)}")
            continue
        for pn in sorted(port_names, key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s)):
            if pn.isdigit():
                ports.append(read_port(ddir, dev, int(pn)))
    return IbSnapshot(str(root), str(cdir), True, tuple(devices), tuple(ports), tuple(errors))


# --------------------------------------------------------------------------
# Writing a real-layout tree (simulated node, tests)


def rate_text(rate: Any, width: int = 4) -> str:
    """The kernel's rate line for a speed in Gb/s (or a full line, kept)."""
    if isinstance(rate, str) and "Gb/sec" in rate:
        return rate
    gbps = float(rate)
    lane = gbps / width
    speed = _SPEED_BY_LANE.get(lane)
    if speed is None:
        # Not a 4X rate: try the narrower widths the kernel can print.
        for w in (1, 2, 8, 12):
            if gbps / w in _SPEED_BY_LANE:
                width, speed = w, _SPEED_BY_LANE[gbps / w]
                break
    num = f"{gbps:g}"
    return f"{num} Gb/sec ({width}X {speed})" if speed else f"{num} Gb/sec ({width}X)"


def _coded(value: Any, table: Mapping[int, str]) -> str:
    """``"ACTIVE"``/``4``/``"4: ACTIVE"`` -> ``"4: ACTIVE"`` (the sysfs form)."""
    if isinstance(value, int):
        return f"{value}: {table.get(value, 'UNKNOWN')}"
    s = str(value).strip()
    if _CODED_RE.match(s):
        return s
    for code, name in table.items():
        if name.lower().replace(" ", "") == s.lower().replace(" ", "").replace("_", ""):
            return f"{code}: {name}"
        if name.lower() == s.lower():
            return f"{code}: {name}"
    return f"0: {s}"


def write_sysfs_tree(root: Path, ports: Iterable[Mapping[str, Any]]) -> None:
    """Materialise ports as ``<root>/sys/class/infiniband/<dev>/ports/<n>/...``.

    Each port: ``{device, port=1, state="ACTIVE", phys_state="LinkUp",
    rate=400 | "400 Gb/sec (4X NDR)", link_layer="InfiniBand", counters={}}``;
    optional device attributes ``hca_type``, ``fw_ver``, ``board_id``. Every
    standard PortCounters file is written (0 unless given) so a simulated port
    looks like a real one.
    """
    cdir = class_dir(root)
    cdir.mkdir(parents=True, exist_ok=True)
    for spec in ports:
        dev = str(spec["device"])
        ddir = cdir / dev
        pdir = ddir / "ports" / str(int(spec.get("port", 1)))
        (pdir / "counters").mkdir(parents=True, exist_ok=True)
        for attr in ("hca_type", "fw_ver", "board_id"):
            if attr in spec:
                (ddir / attr).write_text(f"{spec[attr]}\n")
        (pdir / "state").write_text(_coded(spec.get("state", "ACTIVE"), PORT_STATES) + "\n")
        (pdir / "phys_state").write_text(_coded(spec.get("phys_state", "LinkUp"), PHYS_STATES) + "\n")
        (pdir / "rate").write_text(rate_text(spec.get("rate", 400)) + "\n")
        (pdir / "link_layer").write_text(f"{spec.get('link_layer', 'InfiniBand')}\n")
        counters = dict.fromkeys(ERROR_COUNTERS + ("port_rcv_data", "port_xmit_data", "port_rcv_packets", "port_xmit_packets"), 0)
        counters.update(spec.get("counters") or {})
        for name, value in counters.items():
            (pdir / "counters" / name).write_text(f"{int(value)}\n")


# --------------------------------------------------------------------------
# Zero-config: which HCAs are the same model (siblings on identical rails)


def read_models(root: "str | Path", devices: Iterable[str]) -> Dict[str, str]:
    """device -> model, from ``hca_type`` (``MT4129``) and ``board_id``
    (``MT_0000000838``); "" when neither is readable. Two HCAs with the same
    model are siblings whose same-numbered ports should look alike."""
    cdir = class_dir(root)
    out: Dict[str, str] = {}
    for dev in devices:
        parts = []
        for attr in ("hca_type", "board_id"):
            try:
                parts.append(_read(cdir / dev / attr)[:64])
            except OSError:
                parts.append("")
        out[dev] = "/".join(parts).strip("/")
    return out


def read_boot_id(root: "str | Path" = "/") -> str:
    """The kernel's boot id: "since boot" memories start over when it changes."""
    try:
        return _read(Path(root) / "proc" / "sys" / "kernel" / "random" / "boot_id")[:64]
    except OSError:
        return ""


class HostSysfs:
    """The node's /sys, under ``infiniband.sysfs_root`` (``/`` unless set):
    the sysfs source ``suite.Context`` reads unless one is injected. Nothing
    to clean up."""

    def root(self, ctx: Any) -> Tuple[str, Any]:
        return ctx.settings.infiniband.sysfs_root, None

    def __repr__(self) -> str:
        return "HostSysfs()"
