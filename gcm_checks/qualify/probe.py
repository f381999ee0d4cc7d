"""Performance probe per GPU: dense GEMM throughput and device memory bandwidth.

Adapters, tried in this order by ``qualify.probe: auto``:

* ``sim``   - figures from the scenario (``perf: {gemm_tflops, mem_bw_gbps}``
  per GPU); used whenever the run is simulated;
* ``torch`` - PyTorch, bf16 GEMM + device-to-device copy (optional extra);
* ``cupy``  - CuPy, fp16 GEMM + copy (optional extra; CuPy's bf16 is patchy);
* ``dcgm``  - DCGM's targeted tests (``targeted_stress``, ``memory_bandwidth``)
  with our threshold passed in: DCGM judges pass/fail per GPU but gives no
  figure we can rely on across versions, so these come back as verdicts.

Every adapter runs under a deadline (rule 1): a GEMM on a wedged GPU never
returns, and a GPU whose probe does not finish is reported, not waited for.
PyTorch and CuPy are imported only inside their adapter: never on the prolog
path (rule 7), and a node without them still qualifies through DCGM.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

METRICS = ("gemm_tflops", "mem_bw_gbps")
UNITS = {"gemm_tflops": "TFLOPS", "mem_bw_gbps": "GB/s"}
LABELS = {"gemm_tflops": "GEMM", "mem_bw_gbps": "memory bandwidth"}


@dataclass(frozen=True)
class GpuPerf:
    index: int
    subject: str
    name: str
    gemm_tflops: Optional[float] = None
    mem_bw_gbps: Optional[float] = None
    # metric -> ("pass" | "fail", text): a tool judged but gave no figure (DCGM).
    verdicts: Mapping[str, Tuple[str, str]] = field(default_factory=dict)
    # metric -> why it could not be measured (probe error, GPU lost, timeout).
    errors: Mapping[str, str] = field(default_factory=dict)
    hung: bool = False  # the probe did not return before its deadline

    def value(self, metric: str) -> Optional[float]:
        return getattr(self, metric, None)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "index": self.index,
            "subject": self.subject,
            "name": self.name,
            "gemm_tflops": self.gemm_tflops,
            "mem_bw_gbps": self.mem_bw_gbps,
            "verdicts": {k: list(v) for k, v in self.verdicts.items()},
            "errors": dict(self.errors),
            "hung": self.hung,
        }


@dataclass(frozen=True)
class PerfFacts:
    source: str  # sim | torch | cupy | dcgm | none
    gpus: Tuple[GpuPerf, ...] = ()
    problem: Optional[str] = None  # the probe as a whole could not run: unknown
    dtype: str = ""
    duration_s: float = 0.0

    def to_dict(self) -> Dict[str, Any]:
        return {"source": self.source, "problem": self.problem, "dtype": self.dtype,
                "duration_s": round(self.duration_s, 3), "gpus": [g.to_dict() for g in self.gpus]}


# --------------------------------------------------------------------------
# Arithmetic (pure, tested from tables)


def gemm_tflops(n: int, iterations: int, seconds: float) -> float:
    """An n x n by n x n GEMM is 2 n^3 floating point operations."""
    if seconds <= 0 or iterations <= 0:
        raise ValueError("need a positive time and iteration count")
    return 2.0 * n ** 3 * iterations / seconds / 1e12


def copy_bandwidth_gbps(nbytes: int, iterations: int, seconds: float) -> float:
    """A device-to-device copy of nbytes reads and writes nbytes each: 2x traffic."""
    if seconds <= 0 or iterations <= 0:
        raise ValueError("need a positive time and iteration count")
    return 2.0 * nbytes * iterations / seconds / 1e9


def timed_loop(step: Callable[[], None], sync: Callable[[], None], seconds: float, batch: int = 10) -> Tuple[int, float]:
    """Run ``step`` in batches until ``seconds`` have passed; (iterations, elapsed).

    GPU kernels are asynchronous: the clock means something only after a
    synchronize, so time whole batches between synchronizations.
    """
    sync()
    iterations = 0
    t0 = time.perf_counter()
    elapsed = 0.0
    while True:
        for _ in range(batch):
            step()
        sync()
        iterations += batch
        elapsed = time.perf_counter() - t0
        if elapsed >= seconds:
            return iterations, elapsed


# --------------------------------------------------------------------------
# GPUs to probe


@dataclass(frozen=True)
class GpuRef:
    index: int
    subject: str
    name: str
    broken: Optional[str] = None  # lost / unresponsive: do not probe, say why


def gpus_from_sim(sim: Mapping[str, Any]) -> List[GpuRef]:
    out = []
    for g in sim.get("gpus") or []:
        idx = int(g["index"])
        subject = f"GPU {idx} ({g['pci_bus_id']})" if g.get("pci_bus_id") else f"GPU {idx}"
        broken = "GPU is lost (fallen off the bus)" if g.get("lost") else ("GPU does not answer" if g.get("hang") else None)
        out.append(GpuRef(idx, subject, str(g.get("name") or ""), broken))
    return out


def gpus_from_nvml(facts: Any) -> List[GpuRef]:
    out = []
    for g in getattr(facts, "gpus", ()) or ():
        broken = None
        if g.lost:
            broken = f"GPU unusable ({g.broken_error})"
        elif not g.responsive:
            broken = "GPU does not answer NVML"
        out.append(GpuRef(g.index, g.subject, g.name, broken))
    return out


# --------------------------------------------------------------------------
# Adapters


def probe_sim(sim: Mapping[str, Any], gpus: Sequence[GpuRef]) -> PerfFacts:
    """Figures straight from the scenario: per-GPU ``perf``, else the node's ``perf``."""
    node_perf = sim.get("perf") or {}
    by_index = {int(g["index"]): g for g in sim.get("gpus") or []}
    out = []
    for ref in gpus:
        if ref.broken:
            out.append(GpuPerf(ref.index, ref.subject, ref.name, errors={m: ref.broken for m in METRICS}))
            continue
        perf = dict(node_perf)
        perf.update(by_index.get(ref.index, {}).get("perf") or {})
        figs: Dict[str, Optional[float]] = {}
        errors: Dict[str, str] = {}
        for m in METRICS:
            v = perf.get(m)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                figs[m] = float(v)
            else:
                errors[m] = "the scenario gives no figure"
        out.append(GpuPerf(ref.index, ref.subject, ref.name, figs.get("gemm_tflops"), figs.get("mem_bw_gbps"), errors=errors))
    return PerfFacts("sim", tuple(out), dtype="bf16")


def _parallel(gpus: Sequence[GpuRef], one: Callable[[int], Dict[str, float]], budget: float, source: str, dtype: str) -> PerfFacts:
    """Probe every healthy GPU at once (as a job would load them: power and
    thermals shared), each abandoned at the budget if it does not return."""
    from gcm_checks.deadline import DeadlineExceeded, run_all

    t0 = time.monotonic()
    jobs = {str(r.index): (lambda i=r.index: one(i)) for r in gpus if not r.broken}
    done = run_all(jobs, budget) if jobs else {}
    out = []
    for ref in gpus:
        if ref.broken:
            out.append(GpuPerf(ref.index, ref.subject, ref.name, errors={m: ref.broken for m in METRICS}))
            continue
        ok, value = done[str(ref.index)]
        if ok:
            out.append(GpuPerf(ref.index, ref.subject, ref.name, value.get("gemm_tflops"), value.get("mem_bw_gbps")))
        elif isinstance(value, DeadlineExceeded):
            msg = f"{source} probe did not finish within {budget:.0f}s: GPU or driver wedged"
            out.append(GpuPerf(ref.index, ref.subject, ref.name, errors={m: msg for m in METRICS}, hung=True))
        else:
            msg = f"{source} probe error: {type(value).__name__}: {str(value)[:200]}"
            out.append(GpuPerf(ref.index, ref.subject, ref.name, errors={m: msg for m in METRICS}))
    return PerfFacts(source, tuple(out), dtype=dtype, duration_s=time.monotonic() - t0)


def torch_one(index: int, seconds: float, n: int = 8192, copy_bytes: int = 1 << 30) -> Dict[str, float]:
    import torch

    dev = torch.device("cuda", index)

    def sync() -> None:
        torch.cuda.synchronize(dev)

    # Separate functions so each phase's buffers are freed when it returns.
    def gemm() -> float:
        a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        c = torch.empty(n, n, device=dev, dtype=torch.bfloat16)
        for _ in range(3):  # warm up: cuBLAS picks its kernel on the first calls
            torch.matmul(a, b, out=c)
        iters, dt = timed_loop(lambda: torch.matmul(a, b, out=c), sync, seconds / 2)
        return gemm_tflops(n, iters, dt)

    def copy() -> float:
        src = torch.empty(copy_bytes, device=dev, dtype=torch.uint8)
        dst = torch.empty_like(src)
        dst.copy_(src)
        iters, dt = timed_loop(lambda: dst.copy_(src), sync, seconds / 2)
        return copy_bandwidth_gbps(copy_bytes, iters, dt)

    out = {"gemm_tflops": gemm(), "mem_bw_gbps": copy()}
    torch.cuda.empty_cache()
    return out


def cupy_one(index: int, seconds: float, n: int = 8192, copy_bytes: int = 1 << 30) -> Dict[str, float]:
    import cupy

    def gemm(sync: Callable[[], None]) -> float:
        a = cupy.random.random((n, n), dtype=cupy.float32).astype(cupy.float16)
        b = cupy.random.random((n, n), dtype=cupy.float32).astype(cupy.float16)
        c = cupy.empty((n, n), dtype=cupy.float16)
        for _ in range(3):
            cupy.matmul(a, b, out=c)
        iters, dt = timed_loop(lambda: cupy.matmul(a, b, out=c), sync, seconds / 2)
        return gemm_tflops(n, iters, dt)

    def copy(sync: Callable[[], None]) -> float:
        src = cupy.empty(copy_bytes, dtype=cupy.uint8)
        dst = cupy.empty_like(src)
        iters, dt = timed_loop(lambda: cupy.copyto(dst, src), sync, seconds / 2)
        return copy_bandwidth_gbps(copy_bytes, iters, dt)

    # The device context is per thread: each GPU's probe runs in its own.
    with cupy.cuda.Device(index) as dev:
        out = {"gemm_tflops": gemm(dev.synchronize), "mem_bw_gbps": copy(dev.synchronize)}
        cupy.get_default_memory_pool().free_all_blocks()
    return out


def importable(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# DCGM targeted tests and the plugin parameter that carries our threshold.
# memory_bandwidth.minimum_bandwidth is in MB/s; targeted_stress.target_stress
# in GFLOPS (DCGM diagnostics user guide, "Parameters").
DCGM_TESTS = {
    "mem_bw_gbps": ("memory_bandwidth", "memory_bandwidth.minimum_bandwidth", 1000.0),
    "gemm_tflops": ("targeted_stress", "targeted_stress.target_stress", 1000.0),
}


def dcgm_argv(dcgmi: str, metric: str, threshold: Optional[float]) -> List[str]:
    test, param, scale = DCGM_TESTS[metric]
    argv = [dcgmi, "diag", "-r", test, "-j"]
    if threshold:
        argv += ["-p", f"{param}={threshold * scale:.0f}"]
    return argv


def probe_dcgm(gpus: Sequence[GpuRef], thresholds: Mapping[str, Optional[float]], dcgmi: str, timeout: float) -> PerfFacts:
    """DCGM's targeted tests, judged by DCGM against our threshold (verdicts, no figures)."""
    from gcm_checks import proc
    from gcm_checks.gather import dcgm

    t0 = time.monotonic()
    path = proc.which(dcgmi)
    if path is None:
        return PerfFacts("dcgm", problem=f"no performance probe: PyTorch, CuPy and dcgmi ({dcgmi}) are all unavailable; "
                                            "install gcm-checks[perf] or datacenter-gpu-manager")
    verdicts: Dict[int, Dict[str, Tuple[str, str]]] = {r.index: {} for r in gpus}
    errors: Dict[int, Dict[str, str]] = {r.index: {} for r in gpus}
    per_test = max(1.0, timeout / len(DCGM_TESTS))
    for metric in METRICS:
        report = dcgm.interpret(proc.run(dcgm_argv(path, metric, thresholds.get(metric)), timeout=per_test), 0, "dcgmi")
        test = DCGM_TESTS[metric][0]
        if not report.ok:
            for r in gpus:
                errors[r.index][metric] = f"dcgmi {test}: {report.problem}"
            continue
        seen = set()
        for e in report.entries:
            if e.entity_group != "GPU" or e.entity_id not in verdicts:
                continue
            if e.status is dcgm.DiagStatus.FAIL:
                text = "; ".join(x.describe() for x in e.errors)[:300] or "failed"
                verdicts[e.entity_id][metric] = ("fail", f"DCGM {test}: {text}")
            elif e.status in (dcgm.DiagStatus.PASS, dcgm.DiagStatus.WARN):
                verdicts[e.entity_id].setdefault(metric, ("pass", f"DCGM {test} passed"))
            seen.add(e.entity_id)
        for r in gpus:
            if r.index not in seen:
                errors[r.index][metric] = f"DCGM {test} reported nothing for this GPU (skipped or not supported)"
    out = []
    for r in gpus:
        if r.broken:
            out.append(GpuPerf(r.index, r.subject, r.name, errors={m: r.broken for m in METRICS}))
        else:
            out.append(GpuPerf(r.index, r.subject, r.name, verdicts=verdicts[r.index], errors=errors[r.index]))
    return PerfFacts("dcgm", tuple(out), duration_s=time.monotonic() - t0)


def choose(preference: str, have: Callable[[str], bool] = importable) -> str:
    """Which adapter ``qualify.probe`` means on this node."""
    if preference != "auto":
        return preference
    if have("torch"):
        return "torch"
    if have("cupy"):
        return "cupy"
    return "dcgm"


def measure(ctx: Any, seconds: float) -> PerfFacts:
    """Gather the node's performance figures with the adapter config asks for."""
    from gcm_checks.qualify.baselines import lookup

    settings = ctx.settings
    from gcm_checks.gather.sources import injected

    fake = injected(ctx, "perf")  # simulation's figures (gcm_checks.sim.sources.ScenarioPerf), a test's own
    if fake is not None:
        return fake.measure(ctx, seconds)
    facts = ctx.gpu_facts()
    gpus = gpus_from_nvml(facts)
    if not gpus:
        return PerfFacts("none", problem="NVML lists no GPUs to probe")
    kind = choose(settings.qualify.probe)
    budget = max(1.0, ctx.remaining() - 2.0)
    if kind == "none":
        return PerfFacts("none", problem="performance probe disabled (qualify.probe: none)")
    if kind in ("torch", "cupy"):
        if not importable(kind):
            return PerfFacts(kind, problem=f"qualify.probe is {kind} but {kind} is not importable; install gcm-checks[perf]")
        one = torch_one if kind == "torch" else cupy_one
        # Per GPU: the timed part plus allocation and warm-up; never past the run budget.
        return _parallel(gpus, lambda i: one(i, seconds), min(budget, seconds * 3 + 30), kind, "bf16" if kind == "torch" else "fp16")
    fraction = settings.qualify.fraction
    overrides = settings.qualify.baselines
    thresholds: Dict[str, Optional[float]] = {}
    for m in METRICS:
        figs = [lookup(g.name, overrides).expected(m) for g in gpus]
        known = [f for f in figs if f]
        thresholds[m] = min(known) * fraction if known else None
    return probe_dcgm(gpus, thresholds, settings.dcgm.dcgmi or "dcgmi", budget)  # null: search (no PATH)
