"""What is on the PCI bus: NVIDIA GPUs and InfiniBand HCAs, from sysfs.

The PCI bus is the view that does not depend on the driver: a GPU that fell
off NVML's list, or an HCA whose driver never registered it, is still an
entry under ``/sys/bus/pci/devices``. With nothing configured, this is what
"the node should have" means (docs/slurm.md, zero-config rules).

Reads ``<root>/sys/bus/pci/devices/<addr>/{vendor,class,device}`` (the
kernel's ``0x10de`` / ``0x030200`` text), the ``driver`` link, ``physfn``
(SR-IOV virtual functions are not boards) and, for HCAs, the
``infiniband/<name>`` entries the mlx5 driver creates. ``root`` is a prefix
(``/`` in production) so the simulated node writes a real-layout tree.

Cost: one listdir plus one small read per PCI function (the vendor), and a
few more reads only for NVIDIA/Mellanox functions: ~1-2 ms on a node with a
few hundred functions, so it may run in every prolog. The entries are kernel
symlinks into /sys/devices, not user-owned paths (rule 5 does not apply).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple

NVIDIA = 0x10DE
MELLANOX = 0x15B3
# PCI class codes (base class << 8 | subclass): VGA-compatible display and
# 3D controller are GPUs (H100/A100 SXM are 0x0302, PCIe boards with a display
# engine 0x0300); NVSwitches (0x0680) and HDMI audio functions (0x0403) are not.
GPU_CLASSES = (0x0300, 0x0302)
IB_CLASS = 0x0207  # "Infiniband controller"; a ConnectX in Ethernet mode is 0x0200
DEVICES_DIR = ("sys", "bus", "pci", "devices")
NVIDIA_MODULE = ("sys", "module", "nvidia")
# A driver other than these on a GPU means it was given away on purpose
# (vfio-pci for a VM): NVML will not list it and should not.
GPU_DRIVERS = ("nvidia", "")


# NamedTuples, not dataclasses: this module loads in every prolog, and a
# frozen dataclass costs ~0.5 ms to create at import (measured), a NamedTuple 0.1.
class PciDevice(NamedTuple):
    address: str  # "0000:18:00.0" as the kernel names it
    vendor: int
    device: int
    pci_class: int  # 24-bit class code, e.g. 0x030200
    driver: str = ""  # bound driver name, "" when none
    ib_devices: Tuple[str, ...] = ()  # infiniband/<name> under the function (HCAs)

    @property
    def base_class(self) -> int:
        return self.pci_class >> 8

    def to_dict(self) -> dict:
        return {"address": self.address, "vendor": f"0x{self.vendor:04x}", "device": f"0x{self.device:04x}",
                "class": f"0x{self.pci_class:06x}", "driver": self.driver, "ib_devices": list(self.ib_devices)}


class PciFacts(NamedTuple):
    root: str
    readable: bool  # False: no sysfs PCI tree (container, not Linux): we cannot tell
    gpus: Tuple[PciDevice, ...] = ()  # NVIDIA display/3D functions meant for the nvidia driver
    hcas: Tuple[PciDevice, ...] = ()  # Mellanox/NVIDIA InfiniBand functions (no virtual functions)
    nvidia_module: Optional[bool] = None  # /sys/module/nvidia present
    other_gpus: Tuple[PciDevice, ...] = ()  # NVIDIA GPUs bound to another driver (vfio-pci ...)
    error: str = ""

    @property
    def gpu_count(self) -> Optional[int]:
        return len(self.gpus) if self.readable else None

    def gpu_addresses(self) -> List[str]:
        return [d.address for d in self.gpus]

    def to_dict(self) -> dict:
        return {"readable": self.readable, "nvidia_module": self.nvidia_module, "error": self.error,
                "gpus": [d.to_dict() for d in self.gpus], "hcas": [d.to_dict() for d in self.hcas],
                "other_gpus": [d.to_dict() for d in self.other_gpus]}


def _read_small(path: str) -> str:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 64).decode("ascii", "replace").strip()
    finally:
        os.close(fd)


def _hex(text: str) -> int:
    return int(text, 16)


def is_gpu(vendor: int, pci_class: int) -> bool:
    return vendor == NVIDIA and (pci_class >> 8) in GPU_CLASSES


def is_ib_hca(vendor: int, pci_class: int) -> bool:
    return vendor == MELLANOX and (pci_class >> 8) == IB_CLASS


def read_pci(root: "str | Path" = "/") -> PciFacts:
    """NVIDIA GPUs and IB HCAs under ``<root>/sys/bus/pci/devices``."""
    ddir = os.path.join(str(root), *DEVICES_DIR)
    try:
        names = sorted(os.listdir(ddir))
    except OSError as e:
        return PciFacts(str(root), False, error=f"{ddir}: {e.strerror or e}")
    gpus: List[PciDevice] = []
    other: List[PciDevice] = []
    hcas: List[PciDevice] = []
    for name in names:
        base = os.path.join(ddir, name)
        try:
            vendor = _hex(_read_small(base + "/vendor"))
            if vendor not in (NVIDIA, MELLANOX):
                continue
            pci_class = _hex(_read_small(base + "/class"))
            if not (is_gpu(vendor, pci_class) or is_ib_hca(vendor, pci_class)):
                continue
            if os.path.lexists(base + "/physfn"):
                continue  # SR-IOV virtual function: its physical function is counted
            device = _hex(_read_small(base + "/device"))
        except (OSError, ValueError):
            continue  # a function that vanished mid-scan (hot unplug) is not ours to judge here
        try:
            driver = os.path.basename(os.readlink(base + "/driver"))
        except OSError:
            driver = ""
        if is_gpu(vendor, pci_class):
            dev = PciDevice(name, vendor, device, pci_class, driver)
            (gpus if driver in GPU_DRIVERS else other).append(dev)
            continue
        try:
            ib = tuple(sorted(os.listdir(base + "/infiniband")))
        except OSError:
            ib = ()
        hcas.append(PciDevice(name, vendor, device, pci_class, driver, ib))
    module = os.path.isdir(os.path.join(str(root), *NVIDIA_MODULE))
    return PciFacts(str(root), True, tuple(gpus), tuple(hcas), module, tuple(other))


# --------------------------------------------------------------------------
# Writing a real-layout tree (simulated node, tests)


def pci_address(bus_id: str) -> str:
    """NVML's ``00000000:18:00.0`` -> the kernel's ``0000:18:00.0``."""
    parts = str(bus_id).strip().split(":")
    if len(parts) == 3:
        dom, bus, rest = parts
        return f"{int(dom, 16):04x}:{bus.lower()}:{rest.lower() if '.' in rest else rest.lower() + '.0'}"
    return str(bus_id).lower()


def write_pci_tree(root: Path, devices: Iterable[Mapping[str, Any]], nvidia_module: bool = True) -> None:
    """Materialise PCI functions as ``<root>/sys/bus/pci/devices/<addr>/...``.

    Each device: ``{address, vendor, device, class, driver="", ib_devices=[]}``
    (ints or hex strings). ``driver`` becomes a link into
    ``sys/bus/pci/drivers/<name>`` as in the real tree. Plain os calls: the
    simulated prolog writes this tree on every run (tests/bench/bench_prolog.py).
    """
    base = str(root)
    ddir = os.path.join(base, *DEVICES_DIR)
    os.makedirs(ddir, exist_ok=True)
    if nvidia_module:
        os.makedirs(os.path.join(base, *NVIDIA_MODULE), exist_ok=True)
    drivers = os.path.join(base, "sys", "bus", "pci", "drivers")
    for spec in devices:
        d = os.path.join(ddir, str(spec["address"]))
        os.makedirs(d, exist_ok=True)
        for attr, width in (("vendor", 4), ("device", 4), ("class", 6)):
            v = spec[attr]
            v = int(v, 16) if isinstance(v, str) else int(v)
            fd = os.open(os.path.join(d, attr), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o444)
            try:
                os.write(fd, f"0x{v:0{width}x}\n".encode())
            finally:
                os.close(fd)
        drv = str(spec.get("driver") or "")
        if drv:
            os.makedirs(os.path.join(drivers, drv), exist_ok=True)
            os.symlink(os.path.join(drivers, drv), os.path.join(d, "driver"))
        for ib in spec.get("ib_devices") or ():
            os.makedirs(os.path.join(d, "infiniband", str(ib)), exist_ok=True)


class HostPci:
    """The node's PCI bus, read under the context's sysfs root: the PCI
    source ``suite.Context`` reads unless one is injected."""

    def read(self, ctx: Any) -> PciFacts:
        return read_pci(ctx.sysfs_root())

    def __repr__(self) -> str:
        return "HostPci()"
