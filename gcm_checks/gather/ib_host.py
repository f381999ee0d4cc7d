"""The host side of InfiniBand from sysfs: HCA firmware and IPoIB netdevs. Pure reads.

* ``<root>/sys/class/infiniband/<hca>/{hca_type,fw_ver,board_id}``: the HCA's
  model and firmware (what ``ibstat`` prints as "CA type" / "Firmware
  version").
* ``<root>/sys/class/net/<if>/``: an IPoIB interface has ``type`` 32
  (ARPHRD_INFINIBAND); ``device/infiniband/`` names its HCA, ``dev_port``
  (0-based; older kernels ``dev_id``) its port; ``operstate`` is up/down,
  ``flags`` has IFF_UP (0x1) when an admin configured it up.

No tool, never blocks on the fabric; an unreadable file is recorded, not
raised. The ``/sys/class/*`` entries are kernel-owned symlinks, safe to follow
(rule 5 concerns user-owned paths).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from gcm_checks.gather.ib import class_dir, parse_coded

ARPHRD_INFINIBAND = 32
IFF_UP = 0x1


@dataclass(frozen=True)
class HcaInfo:
    device: str
    hca_type: str = ""  # "MT4129"
    fw_ver: str = ""  # "28.39.1002"
    board_id: str = ""  # "MT_0000000838"
    read_errors: Tuple[str, ...] = ()


@dataclass(frozen=True)
class IpoibIf:
    name: str  # "ibp26s0", "ib0"
    device: Optional[str]  # the HCA, None when sysfs does not say
    port: Optional[int]
    operstate: str  # "up", "down", "lowerlayerdown", ...
    admin_up: Optional[bool]  # IFF_UP in flags; None when unreadable
    port_state: str = ""  # "ACTIVE", "DOWN", ... of device/port ("" when unknown)

    @property
    def subject(self) -> str:
        where = f" ({self.device} port {self.port})" if self.device and self.port else ""
        return f"{self.name}{where}"


@dataclass(frozen=True)
class IbHostFacts:
    hcas: Tuple[HcaInfo, ...] = ()
    ipoib: Tuple[IpoibIf, ...] = ()
    errors: Tuple[str, ...] = ()


def _read(path: Path) -> str:
    with open(path, "r", encoding="ascii", errors="replace") as f:
        return f.read(4096).strip()


def read_hcas(root: "str | Path" = "/") -> List[HcaInfo]:
    cdir = class_dir(root)
    try:
        devices = sorted(os.listdir(cdir))
    except OSError:
        return []
    out = []
    for dev in devices:
        vals: Dict[str, str] = {}
        errs: List[str] = []
        for attr in ("hca_type", "fw_ver", "board_id"):
            try:
                vals[attr] = _read(cdir / dev / attr)
            except OSError as e:
                errs.append(f"{attr}: {e.strerror or e}")
        out.append(HcaInfo(dev, vals.get("hca_type", ""), vals.get("fw_ver", ""), vals.get("board_id", ""), tuple(errs)))
    return out


def _port_of(ndir: Path) -> Optional[int]:
    for attr, base in (("dev_port", 10), ("dev_id", 16)):
        try:
            return int(_read(ndir / attr), base) + 1
        except (OSError, ValueError):
            continue
    return None


def read_ipoib(root: "str | Path" = "/") -> Tuple[List[IpoibIf], List[str]]:
    """IPoIB netdevs with the state of the IB port under each."""
    ndir_root = Path(root) / "sys" / "class" / "net"
    try:
        names = sorted(os.listdir(ndir_root))
    except OSError:
        return [], []
    out: List[IpoibIf] = []
    errors: List[str] = []
    for name in names:
        ndir = ndir_root / name
        try:
            if int(_read(ndir / "type")) != ARPHRD_INFINIBAND:
                continue
        except (OSError, ValueError):
            continue
        try:
            oper = _read(ndir / "operstate").lower()
        except OSError as e:
            errors.append(f"{name}: operstate: {e.strerror or e}")
            continue
        try:
            admin_up: Optional[bool] = bool(int(_read(ndir / "flags"), 16) & IFF_UP)
        except (OSError, ValueError):
            admin_up = None
        try:
            hcas = sorted(os.listdir(ndir / "device" / "infiniband"))
        except OSError:
            hcas = []
        device = hcas[0] if len(hcas) == 1 else None
        port = _port_of(ndir)
        state = ""
        if device and port:
            try:
                state = parse_coded(_read(class_dir(root) / device / "ports" / str(port) / "state"))[1].upper()
            except OSError:
                state = ""
        out.append(IpoibIf(name, device, port, oper, admin_up, state))
    return out, errors


def read_host(root: "str | Path" = "/") -> IbHostFacts:
    ipoib, errors = read_ipoib(root)
    return IbHostFacts(tuple(read_hcas(root)), tuple(ipoib), tuple(errors))
