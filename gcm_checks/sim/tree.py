"""Write the simulated node's kernel views as real-layout trees under one root.

The production gatherers read ``<root>/sys/class/infiniband``,
``<root>/sys/bus/pci/devices`` and ``<root>/proc/<pid>/cgroup`` with ``root``
= ``/``; in simulation ``root`` is a temporary directory holding what the
scenario describes, so the same code path reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping


def cgroup_text(job: Any) -> str:
    """A cgroup v2 file for a process of Slurm job ``job`` (slurmd 22.05 layout)."""
    return f"0::/system.slice/slurmstepd.scope/job_{job}/step_0/user/task_0\n"


def write_tree(root: Path, scenario: Mapping[str, Any]) -> None:
    from gcm_checks.gather.ib import write_sysfs_tree
    from gcm_checks.gather.pci import write_pci_tree

    write_sysfs_tree(root, list(scenario.get("infiniband") or []))
    pci = scenario.get("pci") or {}
    write_pci_tree(root, pci.get("devices") or [], bool(pci.get("nvidia_module", True)))
    for gpu in scenario.get("gpus") or []:
        for p in gpu.get("processes") or ():
            text = p.get("cgroup") or (cgroup_text(p["job"]) if p.get("job") is not None else None)
            if text:
                d = root / "proc" / str(int(p["pid"]))
                d.mkdir(parents=True, exist_ok=True)
                (d / "cgroup").write_text(text)
