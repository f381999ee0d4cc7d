"""A scenario's fakes for the gather sources (``gcm_checks.gather.sources``).

Whoever builds the context for a simulated run injects ``scenario_sources``;
the gatherers then read the scenario through the production code path:

* the kernel log: the scenario's ``kernel_log`` text (any supported format),
  stamped by the same parser and scanned whole - its stamps are fixed in the
  scenario file and cannot fall inside a real job's window;
* DCGM: the scenario's ``dcgm_diag`` in dcgmi's place
  (``gcm_checks.sim.dcgm.CannedBackend``); without it, the node has no DCGM.

Cheap to import (the prolog's context builder loads it for ``--sim``): the
readers are imported when an area is gathered.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Optional

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


def scenario_sources(scenario: Optional[Mapping[str, Any]]) -> Sources:
    """What a simulated node injects in place of its kernel log and DCGM."""
    sc = scenario or {}
    return Sources(kernel_log=ScenarioKernelLog(sc.get("kernel_log") or "", sc.get("boot_time")),
                   dcgm=ScenarioDcgm(sc.get("dcgm_diag")))
