"""Where every gatherer reads from: the host, or what is injected.

A gatherer never asks whether it runs on a simulated node. It asks this
module for its source and reads through it; production and simulation run
the same gather code. ``ctx.sources`` (a ``Sources``) carries what whoever
built the context injected - simulation's fakes (``gcm_checks.sim.sources``),
a test's own; an area left ``None`` reads the host's hardware.

Kept free of imports at module level: the context builder may load it on the
prolog path, and the host readers are imported only when an area is gathered
(rule 7). The GPU, sysfs and PCI areas are chosen by ``suite.Context`` itself
(``gpu_facts``, ``sysfs_root``, ``pci_facts``), whose host readers
(``gather.nvml.HostNvml``, ``gather.ib.HostSysfs``, ``gather.pci.HostPci``)
live in modules every prolog loads anyway: choosing them costs no import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Optional, Tuple

if TYPE_CHECKING:  # typing only: no import cost at run time
    from typing import Protocol

    from gcm_checks.gather.dcgm import DiagBackend
    from gcm_checks.gather.kernel_log import Coverage
    from gcm_checks.gather.kernel_log_parse import KernelLine
    from gcm_checks.gather.pci import PciFacts

    class KernelLogSource(Protocol):
        # False: the lines are fixed (a scenario's text, stamped once in a
        # file) and read whole; the gatherer then has no window to compute.
        windowed: bool

        def read(self, ctx: Any, window: Optional[Tuple[float, float]], *, timeout: float,
                 coverage: Coverage) -> Iterator[KernelLine]: ...

    class DcgmSource(Protocol):
        def backend(self, ctx: Any, gpus: Optional[Tuple[int, ...]]) -> DiagBackend: ...

    class NvmlSource(Protocol):
        def loader(self) -> Callable[[], Any]: ...  # () -> the pynvml module (or its stand-in)

        def bus_ids(self, ctx: Any) -> Dict[str, int]: ...  # PCI bus id (NVML form) -> GPU index

    class SysfsSource(Protocol):
        # The root under which /sys is read, and what to clean up with the
        # context (a temporary tree) or None.
        def root(self, ctx: Any) -> Tuple[str, Any]: ...

    class PciSource(Protocol):
        def read(self, ctx: Any) -> PciFacts: ...

    class PerfSource(Protocol):
        # -> gcm_checks.qualify.probe.PerfFacts (not imported: gather sits below qualify)
        def measure(self, ctx: Any, seconds: float) -> Any: ...


class Sources:
    """What the context builder injects, per area; ``None`` = the host's.

    ``perf`` (qualify's performance probe) has no host reader here: the
    probe's adapters (torch, cupy, dcgmi) live in ``gcm_checks.qualify.probe``.
    """

    __slots__ = ("kernel_log", "dcgm", "nvml", "sysfs", "pci", "perf")

    def __init__(self, kernel_log: Optional["KernelLogSource"] = None, dcgm: Optional["DcgmSource"] = None,
                 nvml: Optional["NvmlSource"] = None, sysfs: Optional["SysfsSource"] = None,
                 pci: Optional["PciSource"] = None, perf: Optional["PerfSource"] = None):
        self.kernel_log = kernel_log
        self.dcgm = dcgm
        self.nvml = nvml
        self.sysfs = sysfs
        self.pci = pci
        self.perf = perf

    def __repr__(self) -> str:
        areas = ", ".join(f"{a}={getattr(self, a)!r}" for a in self.__slots__)
        return f"Sources({areas})"


def injected(ctx: Any, area: str) -> Any:
    """What was injected for ``area``, or None (read the host's)."""
    return getattr(getattr(ctx, "sources", None), area, None)


def kernel_log_source(ctx: Any) -> "KernelLogSource":
    """The kernel log to scan for XIDs: injected, else the host's (kmsg,
    journal or a file, as ``xid.source`` says)."""
    found = injected(ctx, "kernel_log")
    if found is not None:
        return found
    from gcm_checks.gather.kernel_log import HostKernelLog

    return HostKernelLog()


def dcgm_source(ctx: Any) -> "DcgmSource":
    """Where the DCGM diag runs: injected, else the host's dcgmi or pydcgm."""
    found = injected(ctx, "dcgm")
    if found is not None:
        return found
    from gcm_checks.gather.dcgm_source import HostDcgm

    return HostDcgm()
