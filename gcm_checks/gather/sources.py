"""Where the XID and DCGM gatherers read from: the host, or what is injected.

A gatherer never asks whether it runs on a simulated node. It asks this
module for its source and reads through it; production and simulation run
the same gather code. ``ctx.sources`` (a ``Sources``) carries what whoever
built the context injected - simulation's fakes (``gcm_checks.sim.sources``),
a test's own; an area left ``None`` reads the host's hardware.

Kept free of imports at module level: the context builder may load it on the
prolog path, and the host readers are imported only when an area is gathered
(rule 7).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Optional, Tuple

if TYPE_CHECKING:  # typing only: no import cost at run time
    from typing import Protocol

    from gcm_checks.gather.dcgm import DiagBackend
    from gcm_checks.gather.kernel_log import Coverage
    from gcm_checks.gather.kernel_log_parse import KernelLine

    class KernelLogSource(Protocol):
        # False: the lines are fixed (a scenario's text, stamped once in a
        # file) and read whole; the gatherer then has no window to compute.
        windowed: bool

        def read(self, ctx: Any, window: Optional[Tuple[float, float]], *, timeout: float,
                 coverage: Coverage) -> Iterator[KernelLine]: ...

    class DcgmSource(Protocol):
        def backend(self, ctx: Any, gpus: Optional[Tuple[int, ...]]) -> DiagBackend: ...


class Sources:
    """What the context builder injects, per area; ``None`` = the host's."""

    __slots__ = ("kernel_log", "dcgm")

    def __init__(self, kernel_log: Optional["KernelLogSource"] = None, dcgm: Optional["DcgmSource"] = None):
        self.kernel_log = kernel_log
        self.dcgm = dcgm

    def __repr__(self) -> str:
        return f"Sources(kernel_log={self.kernel_log!r}, dcgm={self.dcgm!r})"


def _injected(ctx: Any, area: str) -> Any:
    return getattr(getattr(ctx, "sources", None), area, None)


def kernel_log_source(ctx: Any) -> "KernelLogSource":
    """The kernel log to scan for XIDs: injected, else the host's (kmsg,
    journal or a file, as ``xid.source`` says)."""
    injected = _injected(ctx, "kernel_log")
    if injected is not None:
        return injected
    from gcm_checks.gather.kernel_log import HostKernelLog

    return HostKernelLog()


def dcgm_source(ctx: Any) -> "DcgmSource":
    """Where the DCGM diag runs: injected, else the host's dcgmi or pydcgm."""
    injected = _injected(ctx, "dcgm")
    if injected is not None:
        return injected
    from gcm_checks.gather.dcgm_source import HostDcgm

    return HostDcgm()
