"""Run a suite: gather each needed area once, concurrently and under the
budget, then judge. The process always ends on time: a gatherer still running
at the budget is abandoned, not awaited.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from gcm_checks.registry import gatherer
from gcm_checks.result import CheckResult, Status, failed, unknown

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

# Margin kept at the end of the budget for judging, logging and the Slurm call.
JUDGE_MARGIN_S = 0.3
# Areas where a gatherer that outlives the whole run budget means the
# hardware is wedged. None: the GPU gatherer judges each GPU against its own
# NVML deadline and always returns inside the budget, so when the suite's
# deadline fires first it was our time that ran out (interpreter start-up,
# CPU contention with 50 prologs at once) - "could not tell", never a drain.
HANG_IS_FAILURE: set = set()


@dataclass
class Context:
    """What gatherers may use. Built once per run by the command."""

    settings: "Settings"
    node: str
    sim: Optional[Dict[str, Any]] = None
    state_dir: Optional[Path] = None  # None: the settings' state_dir
    started: float = field(default_factory=time.monotonic)
    budget_s: Optional[float] = None  # None: the settings' budget_s
    window: Optional[Tuple[float, float]] = None  # (start, end) epoch seconds for log scans
    job: Optional[Dict[str, Any]] = None
    dcgm_level: Optional[int] = None
    nvml_factory: Any = None  # test hook: () -> nvml object
    hw_telemetry: bool = False  # gather telemetry-only GPU readings (health/epilog with a sink; never prolog)
    dry_run: bool = False  # --dry-run: gatherers leave local state (scan marks, baselines) untouched
    sources: Any = None  # gcm_checks.gather.sources.Sources: injected readers; None = the host's hardware
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _sysfs_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _gpu_facts: Any = field(default=None, repr=False)
    _pci_facts: Any = field(default=None, repr=False)
    # Its own lock: the GPU gatherer holds _lock while NVML answers (or hangs).
    _pci_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _sysfs_root: Optional[str] = field(default=None, repr=False)
    _tmpdirs: List[Any] = field(default_factory=list, repr=False)
    # area -> gathered facts of the last run_suite, for evidence (epilog, report)
    facts: Dict[str, Any] = field(default_factory=dict)
    # Valid but wrong configuration noticed while running (an unknown id in
    # checks.disabled): the command logs each as a warning; never a result.
    config_warnings: List[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.sources is None and self.sim is not None:  # a simulated node injects its fakes
            from gcm_checks.sim.sources import scenario_sources

            self.sources = scenario_sources(self.sim)
        # The defaults are the settings' own (config/schema.py), not a second copy here.
        if self.state_dir is None:
            self.state_dir = Path(os.path.expanduser(self.settings.state_dir))
        if self.budget_s is None:
            self.budget_s = float(self.settings.budget_s)

    def remaining(self) -> float:
        return max(0.0, self.budget_s - (time.monotonic() - self.started))

    def _reader(self, area: str, module: str, host: str) -> Any:
        """The reader for ``area``: what was injected (``self.sources``), else
        the host's (class ``host`` of ``module``, a module the run loads
        anyway: choosing costs no import on the prolog path)."""
        found = getattr(self.sources, area, None)
        if found is not None:
            return found
        import importlib

        return getattr(importlib.import_module(module), host)()

    def _nvml_loader(self) -> Any:
        if self.nvml_factory is not None:
            return self.nvml_factory
        return self._reader("nvml", "gcm_checks.gather.nvml", "HostNvml").loader()

    def gpu_facts(self) -> Any:
        """NVML snapshot, gathered once per run (checks and the XID scan share it)."""
        with self._lock:
            if self._gpu_facts is None:
                from gcm_checks.gather import nvml

                # Finish inside the suite's gather deadline so a hung GPU is
                # judged per GPU (gpu.responsive), not as a whole-area timeout.
                # The deadlines passed are the hardware's own; ``total`` (our
                # budget) may cut them short, and gather then marks the facts
                # so a cut-short timeout is judged unknown, never fail.
                total = max(0.05, (self.remaining() - JUDGE_MARGIN_S) * 0.8)
                timeout = self.settings.gpu.nvml_timeout_s
                init_timeout = self.settings.gpu.nvml_init_timeout_s
                self._gpu_facts = nvml.gather(self._nvml_loader(), timeout, total, init_timeout,
                                             extended=self.hw_telemetry)
            return self._gpu_facts

    def gpu_bus_ids(self) -> Dict[str, int]:
        """PCI bus id (NVML form, 00000000:3B:00.0) -> GPU index."""
        return self._reader("nvml", "gcm_checks.gather.nvml", "HostNvml").bus_ids(self)

    def sysfs_root(self) -> str:
        """Root under which /sys (InfiniBand, job cgroups, the PCI bus) is
        read: the host's, or a tree the injected source wrote."""
        with self._sysfs_lock:
            if self._sysfs_root is None:
                root, cleanup = self._reader("sysfs", "gcm_checks.gather.ib", "HostSysfs").root(self)
                if cleanup is not None:
                    self._tmpdirs.append(cleanup)
                self._sysfs_root = root
            return self._sysfs_root

    def pci_facts(self) -> Any:
        """What is on the PCI bus (gcm_checks.gather.pci), read once per run:
        the GPU and the InfiniBand gatherers both compare against it."""
        with self._pci_lock:
            if self._pci_facts is None:
                self._pci_facts = self._reader("pci", "gcm_checks.gather.pci", "HostPci").read(self)
            return self._pci_facts

    def close(self) -> None:
        for t in self._tmpdirs:
            try:
                t.cleanup()
            except OSError:
                # A gatherer abandoned at the budget may still be writing the
                # simulated sysfs tree; leave the rest for tmp cleaning.
                pass
        self._tmpdirs.clear()


@gatherer("gpu")
def gather_gpu(ctx: Context) -> Any:
    """The GPU area's facts: the run's NVML snapshot (``Context.gpu_facts``,
    shared with the XID scan) with what the PCI bus shows and who owns the
    GPU processes. The suite gathers them and hands them to the GPU checks;
    the checks never see the context."""
    from dataclasses import replace

    facts = ctx.gpu_facts()
    extra: dict = {}
    # Neither extra may cost the NVML facts: a failure leaves it None, which
    # the checks read as "cannot tell" (no bus comparison; no job owners).
    try:
        extra["pci"] = ctx.pci_facts()
    except Exception:  # noqa: BLE001 - our bug or an odd sysfs: not a GPU fault
        pass
    pids = [int(p["pid"]) for g in facts.gpus for p in g.processes]
    if pids:
        from gcm_checks.gather import jobs

        try:
            extra["jobs"] = jobs.gather(str(ctx.sysfs_root()), pids, str(ctx.state_dir) if ctx.state_dir else None, ctx.node)
        except Exception:  # noqa: BLE001
            pass
    return replace(facts, **extra) if extra else facts


def _apply_severity(r: CheckResult, overrides: Dict[str, str]) -> CheckResult:
    # Admins may soften or harden a check; "pass" stays pass and "unknown"
    # stays unknown so an override can never hide that we could not tell.
    want = overrides.get(r.check)
    if want and r.status in (Status.WARN, Status.FAIL):
        return r.with_status(Status(want))
    return r


def unknown_disabled(disabled: List[Any]) -> List[str]:
    """One sentence per ``checks.disabled`` entry that names no check.

    At run time an unknown id only warns (``config check`` rejects it): it
    must never break a run or drain. The other suites' check modules are
    imported only when an entry matches none of this suite's (rule 7).
    """
    from gcm_checks.checks import load_all
    from gcm_checks.registry import CHECKS, unmatched

    if not disabled:
        return []
    left = unmatched(disabled, CHECKS)
    if left:
        load_all()
        left = unmatched(left, CHECKS)
    return [f"checks.disabled: {d!r} names no check and is ignored (gcm-checks check --list shows the ids)"
            for d in left]


def run_suite(tag: str, ctx: Context) -> List[CheckResult]:
    from gcm_checks.checks import load_all
    from gcm_checks.deadline import DeadlineExceeded, run_all
    from gcm_checks.registry import GATHERERS, run_check, select

    load_all(tag)
    disabled = ctx.settings.checks.disabled
    specs = select(tag, disabled)
    ctx.config_warnings.extend(unknown_disabled(disabled))
    needs = sorted({s.needs for s in specs})
    jobs = {}
    for n in needs:
        fn = GATHERERS.get(n)
        if fn is not None:
            jobs[n] = (lambda fn=fn: _timed(fn, ctx))
    gather_budget = max(0.05, ctx.remaining() - JUDGE_MARGIN_S)
    gathered = run_all(jobs, gather_budget)
    overrides = ctx.settings.checks.severity
    results: List[CheckResult] = []
    reported = set()
    for spec in specs:
        ok, value = gathered.get(spec.needs, (False, LookupError(f"no gatherer named {spec.needs!r}")))
        if not ok:
            # One result per area, not one per check: the checks of an area
            # that could not be gathered all say the same thing.
            if spec.needs in reported:
                continue
            reported.add(spec.needs)
            gid = f"{spec.needs}.gather"
            if isinstance(value, DeadlineExceeded):
                msg = f"gathering {spec.needs} did not finish within the {gather_budget:.1f}s left of the run budget"
                r = failed(gid, msg + ": hardware not answering") if spec.needs in HANG_IS_FAILURE else \
                    unknown(gid, msg + " (start-up or CPU contention?); nothing judged")
            else:
                r = unknown(gid, f"could not gather {spec.needs}: {type(value).__name__}: {value}")
            results.append(r)
            continue
        facts, gather_s = value
        ctx.facts[spec.needs] = facts
        t0 = time.monotonic()
        out = run_check(spec, facts, ctx.settings)  # stamps the row's id on each result
        dt = gather_s + (time.monotonic() - t0)
        from dataclasses import replace

        results.extend(_apply_severity(replace(r, duration_s=r.duration_s or dt), overrides) for r in out)
    return results


def _timed(fn: Any, ctx: Context) -> Tuple[Any, float]:
    t0 = time.monotonic()
    facts = fn(ctx)
    return facts, time.monotonic() - t0


def run_checks(kind: str, ctx: Any, log: Any) -> Tuple[List[Any], Any, Optional[Any]]:
    """Run the suite; return (results, verdict, the failure that names a drain)."""
    from gcm_checks.decide import pick_failure
    from gcm_checks.result import Status, verdict

    log.info("start", sim=ctx.sim.get("name") if ctx.sim else None, budget_s=ctx.budget_s, config=ctx.settings.source)
    try:
        results = run_suite(kind, ctx)
    finally:
        ctx.close()
    for w in ctx.config_warnings:
        log.warning("config_warning", detail=w)
    for r in results:
        if r.status is not Status.PASS:
            log.info("result", **r.to_dict())
    return results, verdict(results), pick_failure(results)



def build_context(settings: "Settings", *, sim: Optional[str] = None, budget_s: Optional[float] = None, **kw: Any) -> Context:
    """Context for a run: the scenario from ``--sim`` or config ``simulate``."""
    scenario = None
    name = sim or settings.simulate
    if name:
        from gcm_checks.sim.scenario import load as load_scenario

        scenario = load_scenario(name)
    return Context(
        settings=settings,
        node=settings.node or "",
        sim=scenario,
        state_dir=Path(os.path.expanduser(settings.state_dir)),
        budget_s=float(budget_s if budget_s is not None else settings.budget_s),
        **kw,
    )
