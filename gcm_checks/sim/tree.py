"""The simulated node's kernel views, written as real-layout trees under one root.

The production gatherers read ``<root>/sys/class/infiniband``,
``<root>/sys/bus/pci/devices`` and ``<root>/proc/<pid>/cgroup`` with ``root``
= ``/``; in simulation ``root`` is a temporary directory holding what the
scenario describes, so the same code path reads it.

The PCI bus (scenario key ``pci``; docs/simulation.md): a scenario without
``pci`` gets a bus that follows its ``gpus`` and ``infiniband`` lists - every
listed GPU is on the bus, lost and hung ones too (a GPU that fell off NVML's
list is still a PCI function until it is removed), and every HCA with an
InfiniBand port is an IB controller with its ``infiniband/<name>`` entry. So
every scenario written before the PCI view existed keeps its meaning; a
scenario states a disagreement between the views (a GPU NVML does not list,
an HCA the driver did not register) with ``pci``.

One module on purpose: it is imported by every simulated run.
"""


from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from gcm_checks.gather.pci import MELLANOX, NVIDIA, pci_address

H100_SXM = 0x2330  # device id of the default simulated GPU
CONNECTX7 = 0x1021
GPU_CLASS = 0x030200  # 3D controller
IB_CLASS = 0x020700
ETH_CLASS = 0x020000
_DEFAULT_GPU_BUS = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]


def _err(msg: str) -> Exception:
    from gcm_checks.sim.schema import ScenarioError

    return ScenarioError(msg)


def _gpu_bus(i: int) -> str:
    return f"0000:{_DEFAULT_GPU_BUS[i] if i < len(_DEFAULT_GPU_BUS) else f'{0xC0 + i:02x}'}:00.0"


def _hca_bus(i: int) -> str:
    return f"0000:{0x0C + 0x10 * i:02x}:00.0" if i < 15 else f"0001:{i:02x}:00.0"


def _gpu(i: int, spec: Mapping[str, Any]) -> Dict[str, Any]:
    return {"address": str(spec.get("address") or _gpu_bus(i)), "vendor": NVIDIA,
            "device": spec.get("device", H100_SXM), "class": spec.get("class", GPU_CLASS),
            "driver": spec.get("driver", "nvidia")}


def _hca(i: int, spec: Mapping[str, Any]) -> Dict[str, Any]:
    ib = spec.get("ib_device", f"mlx5_{i}")
    return {"address": str(spec.get("address") or _hca_bus(i)), "vendor": MELLANOX,
            "device": spec.get("device", CONNECTX7), "class": spec.get("class", IB_CLASS),
            "driver": spec.get("driver", "mlx5_core"), "ib_devices": [ib] if ib else []}


def _listed(name: str, spec: Any, make: Any) -> Optional[List[Dict[str, Any]]]:
    if spec is None:
        return None
    if isinstance(spec, bool) or not isinstance(spec, (int, list)):
        raise _err(f"pci.{name}: expected a count or a list of devices")
    items = [{}] * spec if isinstance(spec, int) else spec
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise _err(f"pci.{name}[{i}]: expected a mapping")
        out.append(make(i, item))
    return out


def expand_pci(spec: Any, gpus: List[Mapping[str, Any]], ports: List[Mapping[str, Any]]) -> Dict[str, Any]:
    """``{nvidia_module, devices: [...]}`` for gcm_checks.gather.pci.write_pci_tree."""
    spec = spec if spec is not None else {}
    if not isinstance(spec, dict):
        raise _err("pci: expected a mapping {nvidia_module, gpus, hcas, other}")
    from gcm_checks.sim.schema import PCI_KEYS

    unknown = set(spec) - PCI_KEYS
    if unknown:
        raise _err(f"pci: unknown keys {sorted(unknown)}; known: {sorted(PCI_KEYS)}")
    gpu_devs = _listed("gpus", spec.get("gpus"), _gpu)
    if gpu_devs is None:
        gpu_devs = [_gpu(i, {"address": pci_address(g["pci_bus_id"])}) for i, g in enumerate(gpus)]
    hca_devs = _listed("hcas", spec.get("hcas"), _hca)
    if hca_devs is None:
        seen: Dict[str, str] = {}
        for p in ports:
            dev = str(p["device"])
            ll = str(p.get("link_layer", "InfiniBand"))
            seen.setdefault(dev, ll)
        hca_devs = []
        for i, (dev, ll) in enumerate(seen.items()):
            d = _hca(i, {"ib_device": dev})
            if ll.lower() != "infiniband":
                d["class"] = ETH_CLASS  # a RoCE/Ethernet-mode ConnectX is not an IB controller
            hca_devs.append(d)
    other = spec.get("other") or []
    if not isinstance(other, list) or not all(isinstance(o, dict) and {"address", "vendor", "device", "class"} <= set(o) for o in other):
        raise _err("pci.other: expected a list of {address, vendor, device, class[, driver]}")
    return {"nvidia_module": bool(spec.get("nvidia_module", True)), "devices": gpu_devs + hca_devs + list(other)}


def cgroup_text(job: Any) -> str:
    """A cgroup v2 file for a process of Slurm job ``job`` (slurmd 22.05 layout)."""
    return f"0::/system.slice/slurmstepd.scope/job_{job}/step_0/user/task_0\n"


def write_pci(root: Path, scenario: Mapping[str, Any]) -> None:
    from gcm_checks.gather.pci import write_pci_tree

    pci = scenario.get("pci") or {}
    write_pci_tree(root, pci.get("devices") or [], bool(pci.get("nvidia_module", True)))


def write_tree(root: Path, scenario: Mapping[str, Any], pci: bool = True) -> None:
    """The InfiniBand tree and the job cgroups (and the PCI bus unless
    ``pci=False``: the suite writes that in the GPU gatherer's thread, in
    parallel with the InfiniBand reads)."""
    from gcm_checks.gather.ib import write_sysfs_tree

    write_sysfs_tree(root, list(scenario.get("infiniband") or []))
    if pci:
        write_pci(root, scenario)
    for gpu in scenario.get("gpus") or []:
        for p in gpu.get("processes") or ():
            text = p.get("cgroup") or (cgroup_text(p["job"]) if p.get("job") is not None else None)
            if text:
                d = root / "proc" / str(int(p["pid"]))
                d.mkdir(parents=True, exist_ok=True)
                (d / "cgroup").write_text(text)
