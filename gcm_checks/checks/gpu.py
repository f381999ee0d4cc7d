"""GPU checks over one NVML snapshot (gcm_checks.gather.nvml), gathered by
the suite (``suite.gather_gpu``) and handed to each check.

Each check returns one ``pass`` line for the node when every GPU is fine, and
one result per GPU otherwise, so a report stays short on healthy nodes and
precise on sick ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, List, Optional

from gcm_checks.gather.nvml import GpuFacts, GpuSnapshot, error_cause, error_name
from gcm_checks.registry import EVERY_SUITE, register
from gcm_checks.result import CheckResult, Status, cannot_tell, fail, ok, warn

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings


def _expected(settings: "Settings") -> Optional[int]:
    return settings.gpu.count


def _pci_gpus(facts: GpuFacts) -> Optional[int]:
    """NVIDIA GPUs on the PCI bus, or None when the bus could not be read."""
    pci = facts.pci
    return pci.gpu_count if pci is not None and pci.readable else None


def _on_bus(n: int) -> str:
    return f"{n} NVIDIA GPU{'s' if n != 1 else ''} on the PCI bus"


def _usable(facts: GpuFacts) -> bool:
    return facts.import_error is None and facts.init_error is None and not facts.init_hang


def _per_gpu(
    facts: GpuFacts,
    judge: Callable[[GpuSnapshot], Optional[CheckResult]],
    ok_message: str,
    fields: tuple = (),
) -> List[CheckResult]:
    """Run ``judge`` on each live GPU; collapse all-pass into one line.

    GPUs that are lost or unresponsive are judged once, by gpu.responsive;
    a GPU whose needed field errored is ``unknown`` for this check.
    """
    if not _usable(facts) or not facts.gpus:
        return []  # gpu.nvml / gpu.count speak for the node
    out: List[CheckResult] = []
    for g in facts.gpus:
        if g.lost or not g.responsive:
            continue
        bad = [f for f in fields if f in g.errors] or (["handle"] if "handle" in g.errors else [])
        if bad:
            out.append(cannot_tell(f"could not read {bad[0]}: {g.errors[bad[0]]}", g.subject))
            continue
        r = judge(g)
        if r is not None:
            out.append(r)
    if not out:
        out.append(ok(ok_message, "", gpus=len(facts.gpus)))
    return out


@register("gpu.nvml", tags=EVERY_SUITE, needs="gpu")
def check_nvml(facts: GpuFacts, settings: "Settings") -> List[CheckResult]:
    """NVML starts: driver loaded, library and driver versions agree, permissions."""
    expected = _expected(settings)
    on_bus = _pci_gpus(facts)
    # An explicit gpu.count wins; with none, GPUs on the PCI bus make this a
    # GPU node (zero-config rule, docs/slurm.md).
    gpu_node = bool(expected) if expected is not None else bool(on_bus)
    if facts.import_error:
        return [cannot_tell(f"pynvml (nvidia-ml-py) not importable: {facts.import_error}; reinstall gcm-checks")]
    if facts.init_hang:
        if not facts.deadline_full:
            return [cannot_tell(f"nvmlInit did not answer within the {facts.deadline_s:.2f}s left of the run budget "
                                        "(less than its own deadline, or the process was starved of CPU): could not tell")]
        msg = "NVML did not answer within the deadline: driver wedged; reboot the node"
        return [fail(msg) if gpu_node or expected is None else cannot_tell(msg)]
    if facts.init_error is not None:
        msg = f"NVML cannot start: {error_name(facts.init_error)}: {error_cause(facts.init_error)}"
        if expected == 0:
            return [ok("no GPUs expected on this node", nvml_error=error_name(facts.init_error))]
        # On a node that should have GPUs no job can use them: fail. That
        # includes NVML_ERROR_LIB_RM_VERSION_MISMATCH: the node is unusable
        # until it reboots onto the new driver.
        if gpu_node:
            if expected is None:
                module = "" if facts.pci.nvidia_module else "; the nvidia kernel module is not loaded"
                msg += f" ({_on_bus(on_bus or 0)}{module})"
            return [fail(msg)]
        if on_bus == 0:
            return [ok(f"no NVIDIA GPUs on the PCI bus ({error_name(facts.init_error)})",
                           nvml_error=error_name(facts.init_error))]
        # The bus could not be read and no count is configured: we cannot
        # tell a GPU node from a CPU node.
        return [cannot_tell(msg + " (set gpu.count to judge)")]
    return [ok(f"NVML ok, driver {facts.driver_version}", driver=facts.driver_version)]


@register("gpu.count", tags=EVERY_SUITE, needs="gpu")
def check_count(facts: GpuFacts, settings: "Settings") -> List[CheckResult]:
    """The node has the GPUs it should have."""
    expected = _expected(settings)
    if not _usable(facts):
        return []
    if expected is None:
        return _count_against_bus(facts)
    found = facts.count or 0
    if found < expected:
        return [fail(f"expected {expected} GPUs, NVML sees {found}: a GPU is missing from the bus; check dmesg and reseat/RMA",
                       expected=expected, found=found)]
    if found > expected:
        return [warn(f"expected {expected} GPUs, NVML sees {found}: update gpu.count", expected=expected, found=found)]
    return [ok(f"{found} GPUs as expected", expected=expected, found=found)]


def _count_against_bus(facts: GpuFacts) -> List[CheckResult]:
    """Zero-config count: every NVIDIA GPU on the PCI bus must be one NVML
    lists. A GPU NVML lists but the bus view lacks is not judged (a partial
    sysfs, e.g. in a container, must not drain)."""
    from gcm_checks.gather.nvml import normalize_bus_id

    on_bus = _pci_gpus(facts)
    if on_bus is None:
        return []
    found = facts.count or 0
    listed = {g.pci_bus_id for g in facts.gpus if g.pci_bus_id}
    unlisted = [d.address for d in facts.pci.gpus if normalize_bus_id(d.address) not in listed]
    # Without bus ids from NVML (a field failed) only the numbers can be compared.
    if len(listed) < found:
        unlisted = unlisted if found < on_bus else []
    if unlisted or found < on_bus:
        where = ", ".join(unlisted) if unlisted else "?"
        return [fail(f"{_on_bus(on_bus)}, NVML lists {found}: not listed by NVML: {where}; "
                       "check dmesg for the GPU (RmInitAdapter, XID 79), reseat or RMA",
                       expected=on_bus, found=found, unlisted=unlisted, source="pci")]
    seen = f"{found} GPUs, as on the PCI bus" if found == on_bus else f"NVML lists {found} GPUs, {_on_bus(on_bus)} (partial sysfs view)"
    return [ok(f"{seen} (gpu.count not set)", expected=on_bus, found=found, source="pci")]


@register("gpu.responsive", tags=EVERY_SUITE, needs="gpu")
def check_responsive(facts: GpuFacts, settings: "Settings") -> List[CheckResult]:
    """Every GPU answers NVML (not fallen off the bus, not wedged)."""
    if not _usable(facts) or not facts.gpus:
        return []
    out = []
    timeout = facts.deadline_s or settings.gpu.nvml_timeout_s
    for g in facts.gpus:
        if g.lost:
            if g.broken_error == "NVML_ERROR_GPU_IS_LOST":
                msg = "GPU has fallen off the bus (NVML_ERROR_GPU_IS_LOST): reset the GPU or reboot"
            else:
                msg = f"GPU unusable ({g.broken_error}): {error_cause(_code_of(g.broken_error))}"
            out.append(fail(msg, g.subject))
        elif not g.responsive and not getattr(facts, "deadline_full", True):
            # Our budget or CPU starvation ended the wait, not the GPU's own
            # deadline: budgets measure hardware, never us (rule 2).
            out.append(cannot_tell(f"NVML did not answer within the {timeout:.2f}s left of the run budget "
                                                 "(less than gpu.nvml_timeout_s, or the process was starved of CPU): could not tell",
                               g.subject))
        elif not g.responsive:
            out.append(fail(f"NVML calls did not return within {timeout:.1f}s: GPU or driver wedged; reboot",
                              g.subject))
    return out or [ok(f"all {len(facts.gpus)} GPUs answer NVML")]


def _code_of(name: Optional[str]) -> Optional[int]:
    from gcm_checks.gather.nvml import NVML_ERRORS

    for code, (n, _) in NVML_ERRORS.items():
        if n == name:
            return code
    return None


@register("gpu.ecc.uncorrectable", tags=EVERY_SUITE, needs="gpu")
def check_ecc(facts: GpuFacts, settings: "Settings") -> List[CheckResult]:
    """Volatile uncorrectable ECC errors at or below the threshold."""
    limit = settings.gpu.ecc_uncorrected_max

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        n = g.ecc_uncorrected_volatile
        if n is not None and n > limit:
            return fail(f"{n} uncorrectable ECC errors since driver load (max {limit}): reset the GPU; RMA if it recurs",
                          g.subject, count=n)
        return None

    return _per_gpu(facts, judge, "no uncorrectable ECC errors", ("ecc",))


@register("gpu.retired_pages.pending", tags=EVERY_SUITE, needs="gpu")
def check_retired_pages(facts: GpuFacts, settings: "Settings") -> List[CheckResult]:
    """No page retirement waiting for a reset (pre-Ampere)."""

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        if g.retired_pages_pending:
            return fail("page retirement pending: reset the GPU so bad memory is retired", g.subject)
        return None

    return _per_gpu(facts, judge, "no page retirement pending", ("retired_pages",))


@register("gpu.row_remap", tags=EVERY_SUITE, needs="gpu")
def check_row_remap(facts: GpuFacts, settings: "Settings") -> List[CheckResult]:
    """Row remapping neither pending (needs reset) nor failed (needs RMA)."""

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        if g.remap_failure:
            return fail("row remapping failed: no spare rows left; RMA the GPU", g.subject)
        if g.remap_pending:
            return fail("row remapping pending: reset the GPU to apply it", g.subject)
        return None

    return _per_gpu(facts, judge, "no row remapping pending or failed", ("remapped_rows",))


@register("gpu.pcie.width", tags=EVERY_SUITE, needs="gpu")
def check_pcie(facts: GpuFacts, settings: "Settings") -> List[CheckResult]:
    """PCIe link trained at full width. A lower *generation* alone is normal
    at idle (power saving), so only the width is judged."""

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        if g.pcie_width is not None and g.pcie_max_width is not None and g.pcie_width < g.pcie_max_width:
            return fail(f"PCIe link x{g.pcie_width} of x{g.pcie_max_width} (gen {g.pcie_gen}/{g.pcie_max_gen}): reseat GPU/riser, check retimer",
                          g.subject, width=g.pcie_width, max_width=g.pcie_max_width)
        return None

    return _per_gpu(facts, judge, "PCIe links at full width", ("pcie",))


@register("gpu.temperature", tags=EVERY_SUITE, needs="gpu")
def check_temperature(facts: GpuFacts, settings: "Settings") -> List[CheckResult]:
    """GPU temperature below the configured limit before a job starts."""
    limit = settings.gpu.temperature_max_c

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        if g.temperature_c is not None and g.temperature_c >= limit:
            return fail(f"{g.temperature_c} C at or above {limit} C: check cooling/fans",
                          g.subject, temperature_c=g.temperature_c)
        return None

    return _per_gpu(facts, judge, f"temperatures below {limit} C", ("temperature",))


HW_THROTTLE = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")


@register("gpu.throttle", tags=EVERY_SUITE, needs="gpu")
def check_throttle(facts: GpuFacts, settings: "Settings") -> List[CheckResult]:
    """No hardware clock slowdown (thermal, power brake). Software power
    capping and idle clocks are normal."""

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        hw = [r for r in g.throttle_reasons if r in HW_THROTTLE]
        if hw:
            return warn(f"hardware clock slowdown active ({', '.join(hw)}): check cooling and power supply",
                          g.subject, reasons=list(g.throttle_reasons))
        return None

    return _per_gpu(facts, judge, "no hardware slowdown", ("throttle",))


@register("gpu.persistence_mode", tags=EVERY_SUITE, needs="gpu")
def check_persistence(facts: GpuFacts, settings: "Settings") -> List[CheckResult]:
    """Persistence mode on (otherwise every job start re-initialises the GPU)."""

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        if g.persistence_mode is False:
            return warn("persistence mode off: enable nvidia-persistenced", g.subject)
        return None

    return _per_gpu(facts, judge, "persistence mode on", ("persistence_mode",))


@register("gpu.processes", tags=("prolog", "health", "qualify"), needs="gpu")
def check_processes(facts: GpuFacts, settings: "Settings") -> List[CheckResult]:
    """No compute processes left over from a previous job."""
    status = Status(settings.gpu.leftover_processes)
    view = facts.jobs  # gcm_checks.gather.jobs.JobView, set when any GPU has processes
    owned: List[dict] = []

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        if view is not None and not view.in_scope(g.index):
            return None  # a shared node: another job's GPU is not this prolog's to judge
        leftovers = []
        for p in g.processes:
            job = view.owner(int(p["pid"]), g.index) if view is not None else None
            if job is None:
                leftovers.append(p)
            else:
                owned.append(dict(p, gpu=g.index, job=job))
        if leftovers:
            ended = view.owners if view is not None else {}
            pids = ", ".join(f"{p['pid']} of ended job {ended[int(p['pid'])]}" if int(p["pid"]) in ended else str(p["pid"])
                             for p in leftovers)
            mib = sum(p.get("used_memory_mib", 0) for p in leftovers)
            return CheckResult("", status,
                               f"{len(leftovers)} leftover compute process(es) (pid {pids}, {mib} MiB) in no running job: kill them or reboot",
                               g.subject, details={"processes": list(leftovers)})
        return None

    out = _per_gpu(facts, judge, "no leftover GPU processes", ("processes",))
    if owned and len(out) == 1 and out[0].status is Status.PASS:
        jobs = sorted({p["job"] for p in owned})
        out = [ok(f"no leftover GPU processes ({len(owned)} belong to running job(s) {', '.join(jobs)})",
                      "", owned=owned)]
    return out
