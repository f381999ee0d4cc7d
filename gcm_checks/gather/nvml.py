"""Gather GPU facts through NVML, every call under a deadline.

The adapter takes an ``nvml`` object that speaks pynvml's API: the real
``pynvml`` module in production, ``gcm_checks.sim.fake_nvml.FakeNvml`` in
simulation. Same names, return types and NVMLError codes, so this code path is
identical in both.

Each GPU is gathered in its own thread with ``gpu.nvml_timeout_s``: NVML blocks
forever on a wedged GPU, and a GPU that does not answer is a failed GPU, not a
hung prolog.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from gcm_checks.deadline import DeadlineExceeded, call_with_deadline, run_all

# Every NVML return code in nvml.h (nvmlReturn_t; values are stable across
# releases) and what it means on a node. Issue 18: codes missing here showed
# up as a bare "NVML_ERROR_8", and insufficient power did not mark the GPU.
NVML_ERRORS = {
    1: ("NVML_ERROR_UNINITIALIZED", "NVML was not initialised (our bug)"),
    2: ("NVML_ERROR_INVALID_ARGUMENT", "invalid argument to NVML (our bug)"),
    3: ("NVML_ERROR_NOT_SUPPORTED", "not supported on this GPU"),
    4: ("NVML_ERROR_NO_PERMISSION", "insufficient permissions to talk to the GPU driver (/dev/nvidia* access)"),
    5: ("NVML_ERROR_ALREADY_INITIALIZED", "NVML initialised twice (our bug; deprecated code)"),
    6: ("NVML_ERROR_NOT_FOUND", "not found"),
    7: ("NVML_ERROR_INSUFFICIENT_SIZE", "buffer too small for NVML's answer (our bug)"),
    8: ("NVML_ERROR_INSUFFICIENT_POWER", "the GPU's external power cables are not properly attached: reseat them"),
    9: ("NVML_ERROR_DRIVER_NOT_LOADED", "NVIDIA kernel driver is not loaded (modprobe nvidia / check dmesg)"),
    10: ("NVML_ERROR_TIMEOUT", "the GPU did not answer in time"),
    11: ("NVML_ERROR_IRQ_ISSUE", "NVIDIA driver has an interrupt problem"),
    12: ("NVML_ERROR_LIBRARY_NOT_FOUND", "libnvidia-ml.so not found: NVIDIA driver not installed"),
    13: ("NVML_ERROR_FUNCTION_NOT_FOUND", "driver too old for this NVML call"),
    14: ("NVML_ERROR_CORRUPTED_INFOROM", "corrupted InfoROM: RMA the GPU"),
    15: ("NVML_ERROR_GPU_IS_LOST", "GPU has fallen off the bus: reset the GPU or reboot"),
    16: ("NVML_ERROR_RESET_REQUIRED", "GPU requires a reset"),
    17: ("NVML_ERROR_OPERATING_SYSTEM", "the operating system blocked the call"),
    18: ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", "NVML library and kernel driver versions differ: reboot (or reload the driver) after the driver upgrade"),
    19: ("NVML_ERROR_IN_USE", "GPU is in use"),
    20: ("NVML_ERROR_MEMORY", "NVML could not allocate memory (host memory exhausted)"),
    21: ("NVML_ERROR_NO_DATA", "no data"),
    22: ("NVML_ERROR_VGPU_ECC_NOT_SUPPORTED", "ECC is not supported with vGPU on this GPU"),
    23: ("NVML_ERROR_INSUFFICIENT_RESOURCES", "not enough resources for the request (GPU partitions, MIG)"),
    24: ("NVML_ERROR_FREQ_NOT_SUPPORTED", "clock frequency not supported"),
    25: ("NVML_ERROR_ARGUMENT_VERSION_MISMATCH", "NVML structure version does not match the library (pynvml/driver skew)"),
    26: ("NVML_ERROR_DEPRECATED", "NVML call deprecated in this driver"),
    27: ("NVML_ERROR_NOT_READY", "the system is not ready for the request (driver still initialising)"),
    28: ("NVML_ERROR_GPU_NOT_FOUND", "no GPU found"),
    29: ("NVML_ERROR_INVALID_STATE", "operation not allowed in the GPU's current state"),
    999: ("NVML_ERROR_UNKNOWN", "unknown NVML error"),
}
NOT_SUPPORTED = 3
GPU_IS_LOST = 15
# Codes that mean this GPU itself is broken, whatever call raised them: a
# person or a reset must fix the hardware. NVML_ERROR_MEMORY (20) is not
# here: it is NVML failing to allocate (host memory), not a GPU fault, and
# "could not tell" never drains (rule 2).
GPU_BROKEN_CODES = {8, 14, 15, 16}

# Clock throttle / event reason bits (nvml.h nvmlClocksThrottleReason*).
THROTTLE_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def error_name(code: Optional[int]) -> str:
    return NVML_ERRORS.get(code or 999, (f"NVML_ERROR_{code}", ""))[0]


def error_cause(code: Optional[int]) -> str:
    return NVML_ERRORS.get(code or 999, ("", f"NVML error {code}"))[1]


@dataclass(frozen=True)
class GpuSnapshot:
    index: int
    pci_bus_id: str = ""
    name: str = ""
    uuid: str = ""
    responsive: bool = True  # False: NVML calls did not return before the deadline
    lost: bool = False  # NVML_ERROR_GPU_IS_LOST (or another GPU-broken code)
    broken_error: Optional[str] = None  # the NVML error name that marked it broken
    ecc_uncorrected_volatile: Optional[int] = None  # None = not supported
    retired_pages_pending: Optional[bool] = None
    remap_pending: Optional[bool] = None
    remap_failure: Optional[bool] = None
    temperature_c: Optional[int] = None
    pcie_gen: Optional[int] = None
    pcie_width: Optional[int] = None
    pcie_max_gen: Optional[int] = None
    pcie_max_width: Optional[int] = None
    throttle_reasons: Tuple[str, ...] = ()
    persistence_mode: Optional[bool] = None
    processes: Tuple[Dict[str, Any], ...] = ()
    # Counts from calls the checks already make (remapped rows).
    remapped_rows_correctable: Optional[int] = None
    remapped_rows_uncorrectable: Optional[int] = None
    # Telemetry-only readings (``extended=True``: health and epilog, never the
    # prolog); None when not read or not supported.
    power_w: Optional[float] = None
    sm_clock_mhz: Optional[int] = None
    ecc_corrected_aggregate: Optional[int] = None
    ecc_uncorrected_aggregate: Optional[int] = None
    retired_pages_sbe: Optional[int] = None
    retired_pages_dbe: Optional[int] = None
    nvlink_errors: Optional[Dict[str, int]] = None  # counter -> sum over active links
    # field -> error text for fields that failed with an unexpected error;
    # checks over those fields report ``unknown``.
    errors: Dict[str, str] = field(default_factory=dict)

    @property
    def subject(self) -> str:
        return f"GPU {self.index} ({self.pci_bus_id})" if self.pci_bus_id else f"GPU {self.index}"


@dataclass(frozen=True)
class GpuFacts:
    init_error: Optional[int] = None  # NVML error code from nvmlInit
    init_hang: bool = False
    import_error: Optional[str] = None  # pynvml itself missing: our deploy, not the GPU
    driver_version: str = ""
    count: Optional[int] = None
    gpus: Tuple[GpuSnapshot, ...] = ()
    duration_s: float = 0.0
    deadline_s: float = 0.0  # the per-GPU deadline actually applied
    # Added by the "gpu" gatherer (checks/gpu.py), not by NVML: what the PCI
    # bus shows (gcm_checks.gather.pci.PciFacts) for the zero-config rules,
    # and which running jobs own GPU processes (gcm_checks.gather.jobs.JobView).
    pci: Any = None
    jobs: Any = None
    # False when the run's budget (not the hardware deadline) cut a call
    # short, or the process was starved past its deadline (CPU contention):
    # a timeout then says nothing about the GPU and is judged unknown.
    deadline_full: bool = True

    def bus_ids(self) -> Dict[str, int]:
        return {g.pci_bus_id: g.index for g in self.gpus if g.pci_bus_id}


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def normalize_bus_id(bus_id: str) -> str:
    """'0000:3b:00.0' / '00000000:3B:00.0' -> '00000000:3B:00.0' (NVML's form)."""
    s = _text(bus_id).strip()
    if not s:
        return s
    parts = s.split(":")
    if len(parts) == 3:
        dom, bus, rest = parts
        dev_fn = rest if "." in rest else rest + ".0"
        return f"{int(dom, 16):08X}:{bus.upper()}:{dev_fn.upper()}"
    if len(parts) == 2:  # bus:dev.fn without domain
        bus, rest = parts
        dev_fn = rest if "." in rest else rest + ".0"
        return f"00000000:{bus.upper()}:{dev_fn.upper()}"
    return s.upper()


def _code(err: BaseException) -> Optional[int]:
    return getattr(err, "value", None)


def _gather_one(nvml: Any, index: int, extended: bool = False) -> GpuSnapshot:
    """All NVML reads for one GPU. Runs in a deadline thread."""
    values: Dict[str, Any] = {"index": index}
    errors: Dict[str, str] = {}
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
    except nvml.NVMLError as e:
        if _code(e) in GPU_BROKEN_CODES:
            return GpuSnapshot(index=index, lost=True, broken_error=error_name(_code(e)))
        return GpuSnapshot(index=index, errors={"handle": f"{error_name(_code(e))}: {error_cause(_code(e))}"})

    broken: List[str] = []

    def read(name: str, fn: Any, *args: Any) -> Any:
        if broken:
            return None
        try:
            return fn(handle, *args)
        except nvml.NVMLError as e:
            code = _code(e)
            if code == NOT_SUPPORTED:
                return None
            if code in GPU_BROKEN_CODES:
                broken.append(error_name(code))
                return None
            errors[name] = f"{error_name(code)}: {error_cause(code)}"
            return None

    pci = read("pci", nvml.nvmlDeviceGetPciInfo)
    if pci is not None:
        values["pci_bus_id"] = normalize_bus_id(_text(getattr(pci, "busId", "") or getattr(pci, "busIdLegacy", "")))
    values["name"] = _text(read("name", nvml.nvmlDeviceGetName) or "")
    values["uuid"] = _text(read("uuid", nvml.nvmlDeviceGetUUID) or "")
    values["ecc_uncorrected_volatile"] = read(
        "ecc", nvml.nvmlDeviceGetTotalEccErrors, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC
    )
    pending = read("retired_pages", nvml.nvmlDeviceGetRetiredPagesPendingStatus)
    values["retired_pages_pending"] = None if pending is None else bool(pending)
    rows = read("remapped_rows", nvml.nvmlDeviceGetRemappedRows)
    if rows is not None:
        # (corrected rows, uncorrected rows, is pending, failure occurred)
        values["remap_pending"] = bool(rows[2])
        values["remap_failure"] = bool(rows[3])
        values["remapped_rows_correctable"] = int(rows[0])
        values["remapped_rows_uncorrectable"] = int(rows[1])
    values["temperature_c"] = read("temperature", nvml.nvmlDeviceGetTemperature, nvml.NVML_TEMPERATURE_GPU)
    values["pcie_gen"] = read("pcie", nvml.nvmlDeviceGetCurrPcieLinkGeneration)
    values["pcie_width"] = read("pcie", nvml.nvmlDeviceGetCurrPcieLinkWidth)
    values["pcie_max_gen"] = read("pcie", nvml.nvmlDeviceGetMaxPcieLinkGeneration)
    values["pcie_max_width"] = read("pcie", nvml.nvmlDeviceGetMaxPcieLinkWidth)
    # Renamed "clock event reasons" in recent NVML; fall back for old bindings.
    reasons_fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    mask = read("throttle", reasons_fn)
    if mask is not None:
        values["throttle_reasons"] = tuple(name for bit, name in THROTTLE_BITS.items() if mask & bit)
    pm = read("persistence_mode", nvml.nvmlDeviceGetPersistenceMode)
    values["persistence_mode"] = None if pm is None else bool(pm)
    procs = read("processes", nvml.nvmlDeviceGetComputeRunningProcesses)
    if procs:
        values["processes"] = tuple(
            {"pid": int(p.pid), "used_memory_mib": int((getattr(p, "usedGpuMemory", 0) or 0) // (1024 * 1024))}
            for p in procs
        )
    if broken:
        return GpuSnapshot(index=index, pci_bus_id=values.get("pci_bus_id", ""), name=values.get("name", ""),
                           lost=True, broken_error=broken[0])
    if extended:
        values.update(_extended(nvml, handle))
    return GpuSnapshot(errors=errors, **values)


# nvml.h: NVML_CLOCK_SM, nvmlPageRetirementCause_t, nvmlNvLinkErrorCounter_t.
CLOCK_SM = 1
NVLINK_MAX_LINKS = 18
NVLINK_COUNTERS = {0: "replay", 1: "recovery", 2: "crc_flit", 3: "crc_data"}


def _extended(nvml: Any, handle: Any) -> Dict[str, Any]:
    """Readings only telemetry uses. Any error is just "no value": they
    judge nothing, so they can neither fail nor mark a GPU unknown."""

    def quiet(fn_name: str, *args: Any) -> Any:
        fn = getattr(nvml, fn_name, None)
        if fn is None:  # an old binding without this call
            return None
        try:
            return fn(handle, *args)
        except Exception:  # noqa: BLE001 - NVMLError of any code, or a binding bug
            return None

    out: Dict[str, Any] = {}
    mw = quiet("nvmlDeviceGetPowerUsage")
    out["power_w"] = None if mw is None else round(int(mw) / 1000.0, 3)
    out["sm_clock_mhz"] = quiet("nvmlDeviceGetClockInfo", CLOCK_SM)
    out["ecc_corrected_aggregate"] = quiet("nvmlDeviceGetTotalEccErrors", nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                           nvml.NVML_AGGREGATE_ECC)
    out["ecc_uncorrected_aggregate"] = quiet("nvmlDeviceGetTotalEccErrors", nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                             nvml.NVML_AGGREGATE_ECC)
    for key, cause in (("retired_pages_sbe", 0), ("retired_pages_dbe", 1)):
        pages = quiet("nvmlDeviceGetRetiredPages", cause)
        out[key] = None if pages is None else len(pages)
    links: Dict[str, int] = {}
    for link in range(NVLINK_MAX_LINKS):
        state = quiet("nvmlDeviceGetNvLinkState", link)
        if state is None:  # past the last link, or no NVLink on this GPU
            break
        if not state:
            continue
        for code, name in NVLINK_COUNTERS.items():
            n = quiet("nvmlDeviceGetNvLinkErrorCounter", link, code)
            if n is not None:
                links[name] = links.get(name, 0) + int(n)
    out["nvlink_errors"] = links or None
    return out


def gather(nvml_loader: Any, timeout_s: float, total_s: Optional[float] = None,
           init_timeout_s: Optional[float] = None, extended: bool = False) -> GpuFacts:
    """Initialise NVML and snapshot every GPU, each call under ``timeout_s``
    (``nvmlInit`` under ``init_timeout_s``) and all of it within ``total_s``.

    ``nvml_loader`` returns the nvml object (it may raise ImportError when
    pynvml itself is missing: a deploy problem, reported as unknown).
    ``extended`` adds the telemetry-only readings (power, clocks, counts,
    NVLink); the prolog never asks for them.
    """
    start = time.monotonic()
    init_timeout = init_timeout_s if init_timeout_s is not None else timeout_s
    end = start + (total_s if total_s is not None else init_timeout + 3 * timeout_s)

    def left(limit: float = timeout_s) -> float:
        # Each step gets its own deadline but never more than what is left,
        # so init + count + the per-GPU pass cannot add up past the budget.
        return max(0.01, min(limit, end - time.monotonic()))

    try:
        nvml = nvml_loader()
    except ImportError as e:
        return GpuFacts(import_error=str(e), duration_s=time.monotonic() - start)
    def full(given: float, wanted: float, began: float) -> bool:
        # The hardware had its whole deadline, and we were awake to see it
        # end: a waiter that wakes far past its deadline was starved of CPU.
        late = time.monotonic() - began - given
        return given >= wanted * 0.999 and late <= max(0.25, 0.25 * given)

    try:
        # Without persistence mode the driver initialises every GPU inside
        # nvmlInit (seconds on a big node): it gets its own, longer deadline.
        given, began = left(init_timeout), time.monotonic()
        call_with_deadline(nvml.nvmlInit, given, "nvmlInit")
    except DeadlineExceeded:
        return GpuFacts(init_hang=True, duration_s=time.monotonic() - start, deadline_s=given,
                        deadline_full=full(given, init_timeout, began))
    except nvml.NVMLError as e:
        return GpuFacts(init_error=_code(e), duration_s=time.monotonic() - start)
    try:
        driver = _text(call_with_deadline(nvml.nvmlSystemGetDriverVersion, left(), "driver version"))
    except (DeadlineExceeded, nvml.NVMLError):
        driver = ""
    try:
        count = int(call_with_deadline(nvml.nvmlDeviceGetCount, left(), "nvmlDeviceGetCount"))
    except DeadlineExceeded:
        return GpuFacts(init_hang=True, driver_version=driver, duration_s=time.monotonic() - start)
    except nvml.NVMLError as e:
        return GpuFacts(init_error=_code(e), driver_version=driver, duration_s=time.monotonic() - start)
    jobs = {f"gpu{i}": (lambda i=i: _gather_one(nvml, i, extended)) for i in range(count)}
    per_gpu, began = left(), time.monotonic()
    done = run_all(jobs, per_gpu)
    deadline_full = full(per_gpu, timeout_s, began)
    gpus = []
    for i in range(count):
        ok, value = done[f"gpu{i}"]
        if ok:
            gpus.append(value)
        elif isinstance(value, DeadlineExceeded):
            gpus.append(GpuSnapshot(index=i, responsive=False))
        else:  # our own bug inside _gather_one: say so, never call it hardware
            gpus.append(GpuSnapshot(index=i, errors={"gather": f"{type(value).__name__}: {value}"}))
    # Shut NVML down only if nothing hung: a shutdown waits on the hung call.
    if all(g.responsive for g in gpus):
        try:
            call_with_deadline(nvml.nvmlShutdown, min(left(), 1.0), "nvmlShutdown")
        except Exception:  # noqa: BLE001 - shutdown failures change nothing
            pass
    return GpuFacts(driver_version=driver, count=count, gpus=tuple(gpus), duration_s=time.monotonic() - start,
                    deadline_s=per_gpu, deadline_full=deadline_full)


def load_pynvml() -> Any:
    import pynvml  # noqa: PLC0415 - lazily, only on real hardware

    return pynvml


class HostNvml:
    """The node's NVML (pynvml): the GPU source ``suite.Context`` reads
    unless one is injected (``gcm_checks.gather.sources``)."""

    def loader(self) -> Any:
        return load_pynvml

    def bus_ids(self, ctx: Any) -> Dict[str, int]:
        return ctx.gpu_facts().bus_ids()

    def __repr__(self) -> str:
        return "HostNvml()"
