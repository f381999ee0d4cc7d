"""A scenario's fakes for the gather sources (``gcm_checks.gather.sources``).

Whoever builds the context for a simulated run injects ``scenario_sources``;
the gatherers then read the scenario through the production code path:

* the kernel log: the scenario's ``kernel_log`` text (any supported format),
  stamped by the same parser and scanned whole - its stamps are fixed in the
  scenario file and cannot fall inside a real job's window;
* DCGM: the scenario's ``dcgm_diag`` in dcgmi's place
  (``gcm_checks.sim.dcgm.CannedBackend``); without it, the node has no DCGM;
* NVML: ``gcm_checks.sim.fake_nvml.FakeNvml`` over the scenario's ``gpus``;
* sysfs: a real-layout tree (InfiniBand, job cgroups) written from the
  scenario into a temporary directory, read by the production sysfs readers;
* the PCI bus: the scenario's ``pci`` written into that tree, then read;
* qualify's performance probe: the scenario's ``perf`` figures.

Cheap to import (the prolog's context builder loads it for ``--sim``): the
readers are imported when an area is gathered.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

from gcm_checks.gather.sources import Sources


class ScenarioKernelLog:
    """The scenario's ``kernel_log`` text as the kernel log."""

    windowed = False  # stamps fixed in a file: read whole, never windowed

    def __init__(self, text: Any = "", boot_time: Any = None):
        self.text = str(text or "")
        self.boot_time = boot_time  # converted when read: a bad value is that area's "unknown", not a crash

    def read(self, ctx: Any, window: Any, *, timeout: float, coverage: Any) -> Iterator[Any]:
        from gcm_checks.gather.kernel_log import read_text

        coverage.source = "simulation"
        boot = self.boot_time
        return read_text(self.text, boot=float(boot) if boot is not None else None, coverage=coverage)

    def __repr__(self) -> str:
        return f"ScenarioKernelLog({len(self.text)} chars)"


class ScenarioDcgm:
    """The scenario's ``dcgm_diag`` as what dcgmi prints (or how it ends)."""

    def __init__(self, canned: Any = None):
        self.canned = canned

    def backend(self, ctx: Any, gpus: Any) -> Any:
        if self.canned is None:
            from gcm_checks.gather.dcgm import MissingBackend

            return MissingBackend("sim", "dcgmi not installed (simulation scenario has no dcgm_diag)")
        from gcm_checks.sim.dcgm import CannedBackend

        return CannedBackend(self.canned, gpus)

    def __repr__(self) -> str:
        return f"ScenarioDcgm({'canned' if self.canned is not None else 'none'})"


class ScenarioNvml:
    """``FakeNvml`` over the scenario in pynvml's place."""

    def __init__(self, scenario: Mapping[str, Any]):
        self.scenario = scenario

    def loader(self) -> Any:
        from gcm_checks.sim.fake_nvml import FakeNvml

        scenario = self.scenario
        return lambda: FakeNvml(scenario)

    def bus_ids(self, ctx: Any) -> Dict[str, int]:
        # Straight from the scenario, not through NVML: a scenario's hung GPU
        # still has its bus id for the XID scan to name.
        from gcm_checks.gather.nvml import normalize_bus_id

        return {normalize_bus_id(g["pci_bus_id"]): int(g["index"]) for g in self.scenario.get("gpus") or []}

    def __repr__(self) -> str:
        return f"ScenarioNvml({len(self.scenario.get('gpus') or [])} GPUs)"


class ScenarioSysfs:
    """The scenario written as a real-layout /sys tree in a temporary directory."""

    def __init__(self, scenario: Mapping[str, Any]):
        self.scenario = scenario

    def root(self, ctx: Any) -> Tuple[str, Any]:
        from gcm_checks.sim.tree import write_tree

        # tmpfs when there is one: like the real sysfs, and ~20x
        # faster to create than a disk-backed /tmp on this path.
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        tmp = tempfile.TemporaryDirectory(prefix="gcm-sim-sysfs-", dir=shm)
        write_tree(Path(tmp.name), self.scenario, pci=False)  # ScenarioPci writes the bus
        return tmp.name, tmp

    def __repr__(self) -> str:
        return "ScenarioSysfs()"


class ScenarioPci:
    """The scenario's ``pci`` written into the context's sysfs tree, then read
    by the production reader (in the GPU gatherer's thread, in parallel with
    the InfiniBand reads)."""

    def __init__(self, scenario: Mapping[str, Any]):
        self.scenario = scenario

    def read(self, ctx: Any) -> Any:
        from gcm_checks.gather.pci import read_pci
        from gcm_checks.sim.tree import write_pci

        root = ctx.sysfs_root()
        write_pci(Path(root), self.scenario)
        return read_pci(root)

    def __repr__(self) -> str:
        return "ScenarioPci()"


class ScenarioPerf:
    """The scenario's ``perf`` figures as qualify's performance probe."""

    def __init__(self, scenario: Mapping[str, Any]):
        self.scenario = scenario

    def measure(self, ctx: Any, seconds: float) -> Any:
        from gcm_checks.qualify.probe import gpus_from_sim, probe_sim

        return probe_sim(self.scenario, gpus_from_sim(self.scenario))

    def __repr__(self) -> str:
        return "ScenarioPerf()"


def scenario_sources(scenario: Optional[Mapping[str, Any]]) -> Sources:
    """What a simulated node injects in place of every hardware reader."""
    sc = scenario or {}
    return Sources(kernel_log=ScenarioKernelLog(sc.get("kernel_log") or "", sc.get("boot_time")),
                   dcgm=ScenarioDcgm(sc.get("dcgm_diag")), nvml=ScenarioNvml(sc), sysfs=ScenarioSysfs(sc),
                   pci=ScenarioPci(sc), perf=ScenarioPerf(sc))
