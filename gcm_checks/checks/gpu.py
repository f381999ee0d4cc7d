"""GPU checks over one NVML snapshot (gcm_checks.gather.nvml).

Each check returns one ``pass`` line for the node when every GPU is fine, and
one result per GPU otherwise, so a report stays short on healthy nodes and
precise on sick ones.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional

from gcm_checks.gather.nvml import GpuFacts, GpuSnapshot, error_cause, error_name
from gcm_checks.registry import gatherer, register
from gcm_checks.result import CheckResult, Status, failed, passed, unknown, warned

PROLOG = ("prolog", "epilog", "health", "qualify")


@gatherer("gpu")
def gather_gpu(ctx: Any) -> GpuFacts:
    return ctx.gpu_facts()


def _expected(settings: Any) -> Optional[int]:
    return settings.get("gpu.count")


def _usable(facts: GpuFacts) -> bool:
    return facts.import_error is None and facts.init_error is None and not facts.init_hang


def _per_gpu(
    check_id: str,
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
            out.append(unknown(check_id, f"could not read {bad[0]}: {g.errors[bad[0]]}", g.subject))
            continue
        r = judge(g)
        if r is not None:
            out.append(r)
    if not out:
        out.append(passed(check_id, ok_message, "", gpus=len(facts.gpus)))
    return out


@register("gpu.nvml", tags=PROLOG, needs="gpu")
def check_nvml(facts: GpuFacts, settings: Any) -> List[CheckResult]:
    """NVML starts: driver loaded, library and driver versions agree, permissions."""
    expected = _expected(settings)
    gpu_node = bool(expected)
    if facts.import_error:
        return [unknown("gpu.nvml", f"pynvml (nvidia-ml-py) not importable: {facts.import_error}; reinstall gcm-checks")]
    if facts.init_hang:
        if not facts.deadline_full:
            return [unknown("gpu.nvml", f"nvmlInit did not answer within the {facts.deadline_s:.2f}s left of the run budget "
                                        "(less than its own deadline, or the process was starved of CPU): could not tell")]
        msg = "NVML did not answer within the deadline: driver wedged; reboot the node"
        return [failed("gpu.nvml", msg) if gpu_node or expected is None else unknown("gpu.nvml", msg)]
    if facts.init_error is not None:
        msg = f"NVML cannot start: {error_name(facts.init_error)}: {error_cause(facts.init_error)}"
        if expected == 0:
            return [passed("gpu.nvml", "no GPUs expected on this node", nvml_error=error_name(facts.init_error))]
        # On a node that should have GPUs no job can use them: fail. Where the
        # count is not configured we cannot tell if this is a GPU node.
        return [failed("gpu.nvml", msg) if gpu_node else unknown("gpu.nvml", msg + " (set gpu.count to judge)")]
    return [passed("gpu.nvml", f"NVML ok, driver {facts.driver_version}", driver=facts.driver_version)]


@register("gpu.count", tags=PROLOG, needs="gpu")
def check_count(facts: GpuFacts, settings: Any) -> List[CheckResult]:
    """The node has the GPUs it should have."""
    expected = _expected(settings)
    if expected is None or not _usable(facts):
        return []
    found = facts.count or 0
    if found < expected:
        return [failed("gpu.count", f"expected {expected} GPUs, NVML sees {found}: a GPU is missing from the bus; check dmesg and reseat/RMA",
                       expected=expected, found=found)]
    if found > expected:
        return [warned("gpu.count", f"expected {expected} GPUs, NVML sees {found}: update gpu.count", expected=expected, found=found)]
    return [passed("gpu.count", f"{found} GPUs as expected", expected=expected, found=found)]


@register("gpu.responsive", tags=PROLOG, needs="gpu")
def check_responsive(facts: GpuFacts, settings: Any) -> List[CheckResult]:
    """Every GPU answers NVML (not fallen off the bus, not wedged)."""
    if not _usable(facts) or not facts.gpus:
        return []
    out = []
    timeout = facts.deadline_s or settings.get("gpu.nvml_timeout_s")
    for g in facts.gpus:
        if g.lost:
            if g.broken_error == "NVML_ERROR_GPU_IS_LOST":
                msg = "GPU has fallen off the bus (NVML_ERROR_GPU_IS_LOST): reset the GPU or reboot"
            else:
                msg = f"GPU unusable ({g.broken_error}): {error_cause(_code_of(g.broken_error))}"
            out.append(failed("gpu.responsive", msg, g.subject))
        elif not g.responsive and not getattr(facts, "deadline_full", True):
            # Our budget or CPU starvation ended the wait, not the GPU's own
            # deadline: budgets measure hardware, never us (rule 2).
            out.append(unknown("gpu.responsive", f"NVML did not answer within the {timeout:.2f}s left of the run budget "
                                                 "(less than gpu.nvml_timeout_s, or the process was starved of CPU): could not tell",
                               g.subject))
        elif not g.responsive:
            out.append(failed("gpu.responsive", f"NVML calls did not return within {timeout:.1f}s: GPU or driver wedged; reboot",
                              g.subject))
    return out or [passed("gpu.responsive", f"all {len(facts.gpus)} GPUs answer NVML")]


def _code_of(name: Optional[str]) -> Optional[int]:
    from gcm_checks.gather.nvml import NVML_ERRORS

    for code, (n, _) in NVML_ERRORS.items():
        if n == name:
            return code
    return None


@register("gpu.ecc.uncorrectable", tags=PROLOG, needs="gpu")
def check_ecc(facts: GpuFacts, settings: Any) -> List[CheckResult]:
    """Volatile uncorrectable ECC errors at or below the threshold."""
    limit = settings.get("gpu.ecc_uncorrected_max")

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        n = g.ecc_uncorrected_volatile
        if n is not None and n > limit:
            return failed("gpu.ecc.uncorrectable", f"{n} uncorrectable ECC errors since driver load (max {limit}): reset the GPU; RMA if it recurs",
                          g.subject, count=n)
        return None

    return _per_gpu("gpu.ecc.uncorrectable", facts, judge, "no uncorrectable ECC errors", ("ecc",))


@register("gpu.retired_pages.pending", tags=PROLOG, needs="gpu")
def check_retired_pages(facts: GpuFacts, settings: Any) -> List[CheckResult]:
    """No page retirement waiting for a reset (pre-Ampere)."""

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        if g.retired_pages_pending:
            return failed("gpu.retired_pages.pending", "page retirement pending: reset the GPU so bad memory is retired", g.subject)
        return None

    return _per_gpu("gpu.retired_pages.pending", facts, judge, "no page retirement pending", ("retired_pages",))


@register("gpu.row_remap", tags=PROLOG, needs="gpu")
def check_row_remap(facts: GpuFacts, settings: Any) -> List[CheckResult]:
    """Row remapping neither pending (needs reset) nor failed (needs RMA)."""

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        if g.remap_failure:
            return failed("gpu.row_remap", "row remapping failed: no spare rows left; RMA the GPU", g.subject)
        if g.remap_pending:
            return failed("gpu.row_remap", "row remapping pending: reset the GPU to apply it", g.subject)
        return None

    return _per_gpu("gpu.row_remap", facts, judge, "no row remapping pending or failed", ("remapped_rows",))


@register("gpu.pcie.width", tags=PROLOG, needs="gpu")
def check_pcie(facts: GpuFacts, settings: Any) -> List[CheckResult]:
    """PCIe link trained at full width. A lower *generation* alone is normal
    at idle (power saving), so only the width is judged."""

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        if g.pcie_width is not None and g.pcie_max_width is not None and g.pcie_width < g.pcie_max_width:
            return failed("gpu.pcie.width",
                          f"PCIe link x{g.pcie_width} of x{g.pcie_max_width} (gen {g.pcie_gen}/{g.pcie_max_gen}): reseat GPU/riser, check retimer",
                          g.subject, width=g.pcie_width, max_width=g.pcie_max_width)
        return None

    return _per_gpu("gpu.pcie.width", facts, judge, "PCIe links at full width", ("pcie",))


@register("gpu.temperature", tags=PROLOG, needs="gpu")
def check_temperature(facts: GpuFacts, settings: Any) -> List[CheckResult]:
    """GPU temperature below the configured limit before a job starts."""
    limit = settings.get("gpu.temperature_max_c")

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        if g.temperature_c is not None and g.temperature_c >= limit:
            return failed("gpu.temperature", f"{g.temperature_c} C at or above {limit} C: check cooling/fans",
                          g.subject, temperature_c=g.temperature_c)
        return None

    return _per_gpu("gpu.temperature", facts, judge, f"temperatures below {limit} C", ("temperature",))


HW_THROTTLE = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")


@register("gpu.throttle", tags=PROLOG, needs="gpu")
def check_throttle(facts: GpuFacts, settings: Any) -> List[CheckResult]:
    """No hardware clock slowdown (thermal, power brake). Software power
    capping and idle clocks are normal."""

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        hw = [r for r in g.throttle_reasons if r in HW_THROTTLE]
        if hw:
            return warned("gpu.throttle", f"hardware clock slowdown active ({', '.join(hw)}): check cooling and power supply",
                          g.subject, reasons=list(g.throttle_reasons))
        return None

    return _per_gpu("gpu.throttle", facts, judge, "no hardware slowdown", ("throttle",))


@register("gpu.persistence_mode", tags=PROLOG, needs="gpu")
def check_persistence(facts: GpuFacts, settings: Any) -> List[CheckResult]:
    """Persistence mode on (otherwise every job start re-initialises the GPU)."""

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        if g.persistence_mode is False:
            return warned("gpu.persistence_mode", "persistence mode off: enable nvidia-persistenced", g.subject)
        return None

    return _per_gpu("gpu.persistence_mode", facts, judge, "persistence mode on", ("persistence_mode",))


@register("gpu.processes", tags=("prolog", "health", "qualify"), needs="gpu")
def check_processes(facts: GpuFacts, settings: Any) -> List[CheckResult]:
    """No compute processes left over from a previous job."""
    status = Status(settings.get("gpu.leftover_processes"))

    def judge(g: GpuSnapshot) -> Optional[CheckResult]:
        if g.processes:
            pids = ", ".join(str(p["pid"]) for p in g.processes)
            mib = sum(p.get("used_memory_mib", 0) for p in g.processes)
            return CheckResult("gpu.processes", status,
                               f"{len(g.processes)} leftover compute process(es) (pid {pids}, {mib} MiB): kill them or reboot",
                               g.subject, details={"processes": list(g.processes)})
        return None

    return _per_gpu("gpu.processes", facts, judge, "no leftover GPU processes", ("processes",))
