"""Run a qualification: the level's suites in order, then publish the outcome.

Suites run on one context (one NVML snapshot, one budget). A check that
carries several of the level's tags runs once, in the first suite that has
it: ``gpu.*`` is tagged prolog, epilog and qualify, and judging the same
snapshot three times would only triple the report.

Outcome in Slurm (through ``gcm_checks.slurm`` only, rule 3):

* pass or warn: node feature ``gcm_qualified`` added to gcm's other features,
  and ``gcm qualified <date>`` in the node's ``Extra``;
* fail: drain ``gcm: qualify: <check>: <subject>: <message>`` and remove
  ``gcm_qualified``;
* unknown (no fail, but something we could not tell): not qualified, no
  drain - admins put a node in production only once it qualifies, so
  "could not tell" keeps it out without blaming the hardware (rule 2).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from gcm_checks.qualify.levels import Level
from gcm_checks.result import CheckResult, Status, verdict

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

QUALIFIED_FEATURE = "gcm_qualified"

# progress(phase_index, phase_count, label, finished_results_or_None)
Progress = Callable[[int, int, str, Optional[List[CheckResult]]], None]


@dataclass
class QualifyOutcome:
    node: str
    level: Level
    started: float
    finished: float = 0.0
    results: List[CheckResult] = field(default_factory=list)
    perf: Any = None
    sim: Optional[str] = None
    slurm_action: Optional[str] = None
    slurm_reason: Optional[str] = None
    result_path: Optional[str] = None
    result_error: Optional[str] = None

    @property
    def verdict(self) -> Status:
        return verdict(self.results)

    @property
    def qualified(self) -> bool:
        return self.verdict in (Status.PASS, Status.WARN)


def with_disabled(settings: "Settings", ids: Sequence[str]) -> Any:
    """A copy of ``settings`` with ``ids`` added to checks.disabled."""
    import copy

    data = copy.deepcopy(settings.data)
    checks = data.setdefault("checks", {})
    checks["disabled"] = list(checks.get("disabled") or []) + [i for i in ids if i not in (checks.get("disabled") or [])]
    return replace(settings, data=data)


def run_phases(ctx: Any, level: Level, progress: Optional[Progress] = None) -> List[CheckResult]:
    """Each suite of ``level`` in order on one context; each check once."""
    from gcm_checks import suite
    from gcm_checks.checks import load_all
    from gcm_checks.registry import select

    load_all()
    base = ctx.settings
    already: List[str] = []
    out: List[CheckResult] = []
    total = len(level.suites)
    for i, tag in enumerate(level.suites):
        settings = with_disabled(base, already)
        specs = select(tag, settings.checks.disabled)
        if progress:
            progress(i, total, tag, None)
        ctx.settings = settings
        try:
            results = suite.run_suite(tag, ctx) if specs else []
        finally:
            ctx.settings = base
        already.extend(s.id for s in specs)
        out.extend(results)
        if progress:
            progress(i + 1, total, tag, results)
    return out


def qualify(
    settings: "Settings",
    level: Level,
    *,
    sim: Optional[str] = None,
    progress: Optional[Progress] = None,
    budget_s: Optional[float] = None,
) -> QualifyOutcome:
    """Run the level on this node. Takes no Slurm action (see ``publish``)."""
    from gcm_checks import suite

    started = time.time()
    ctx = suite.build_context(settings, sim=sim, budget_s=budget_s if budget_s is not None else level.budget_s)
    ctx.dcgm_level = level.dcgm_level
    # The qualification is the "job": XIDs count from its start (rule 4).
    ctx.window = (started, started + ctx.budget_s)
    ctx.perf_probe_s = level.probe_s  # read by the perf gatherer
    out = QualifyOutcome(settings.node or "", level, started, sim=ctx.sim.get("name") if ctx.sim else None)
    try:
        out.results = run_phases(ctx, level, progress)
    finally:
        ctx.close()
    out.perf = getattr(ctx, "perf_facts", None)
    out.finished = time.time()
    return out


def write_result(outcome: QualifyOutcome, results_dir: str) -> Optional[str]:
    """Atomic result file; an unwritable directory is reported, not raised."""
    from gcm_checks.qualify import results

    doc = results.build_doc(
        node=outcome.node, level=outcome.level.name, started=outcome.started, finished=outcome.finished,
        verdict=outcome.verdict.value, qualified=outcome.qualified, results=outcome.results, perf=outcome.perf,
        probe_s=outcome.level.probe_s, sim=outcome.sim, slurm_action=outcome.slurm_action,
        slurm_reason=outcome.slurm_reason,
    )
    try:
        outcome.result_path = results.write(results_dir, doc)
        outcome.result_error = None
    except OSError as e:
        outcome.result_error = f"cannot write result file in {results_dir}: {e}"
    return outcome.result_path


def drain_reason(fail: CheckResult) -> str:
    from gcm_checks import slurm

    short = fail.details.get("short") if isinstance(fail.details, dict) else None
    return slurm.make_drain_reason(fail.check, fail.subject, str(short or fail.message), context="qualify")


def publish(outcome: QualifyOutcome, settings: "Settings", *, state_dir: str, dry_run: bool = False,
            out: Any = None, log: Any = None) -> Tuple[str, Optional[str]]:
    """Feature on pass, drain on fail, nothing on unknown. Returns (action, reason).

    Only ``gcm_qualified`` is managed here (``manage=``): health's gcm_ok /
    gcm_degraded and every admin feature stay as they are. The feature call
    passes no state_dir: the local feature record belongs to health mode,
    which re-applies its own features after a reconfigure; qualification
    always reads the node instead (it runs rarely).
    """
    from gcm_checks import slurm

    from gcm_checks.decide import NodeContext, decide

    node = outcome.node
    v = outcome.verdict
    # The decision core's one ranking names the drain, as in every mode.
    decision = decide(outcome.results, "qualify", NodeContext(report_only=slurm.report_only(settings), dry_run=dry_run,
                                                              config_error=getattr(settings, "config_error", None)))
    fail = decision.failure
    reason = drain_reason(fail) if fail is not None else None
    if v is Status.UNKNOWN:
        return "not qualified (could not tell); no Slurm change", None
    if decision.report_only:
        return ("would drain" if fail else f"would set {QUALIFIED_FEATURE}"), reason
    backend = slurm.backend_from_settings(settings, dry_run=dry_run, out=out, log=log)
    manage = (QUALIFIED_FEATURE,)
    if fail is not None:
        d = slurm.apply_drain(backend, node, reason or "", state_dir=state_dir, log=log, check=fail.check)
        try:
            info = backend.node_info(node)
            had = QUALIFIED_FEATURE in info.active_features or QUALIFIED_FEATURE in info.available_features
        except slurm.SlurmError:
            had = False  # logged by apply_drain's own read already
        if had:
            # A node that fails requalification must not stay selectable by
            # --constraint=gcm_qualified.
            failing = sorted({r.check for r in outcome.results if r.status is Status.FAIL})
            slurm.apply_features(backend, node, [], slurm.summary_extra("qualify-failed", failing, outcome.finished),
                                 log=log, verify=True, manage=manage)
        return d.action, d.reason
    f = slurm.apply_features(backend, node, [QUALIFIED_FEATURE], slurm.summary_extra("qualified", (), outcome.finished),
                             log=log, verify=True, manage=manage)
    action = {"applied": f"set {QUALIFIED_FEATURE}", "reapplied": f"set {QUALIFIED_FEATURE}",
              "unchanged": f"{QUALIFIED_FEATURE} already set"}.get(f.action, f"error: {f.detail}")
    if isinstance(backend, slurm.DryRunBackend):
        action = f"dry run: would set {QUALIFIED_FEATURE}"
    return action, None


def summary(outcome: QualifyOutcome) -> Dict[str, Any]:
    """The JSON the command prints (the result file plus where it went)."""
    from gcm_checks.qualify import results

    doc = results.build_doc(
        node=outcome.node, level=outcome.level.name, started=outcome.started, finished=outcome.finished,
        verdict=outcome.verdict.value, qualified=outcome.qualified, results=outcome.results, perf=outcome.perf,
        probe_s=outcome.level.probe_s, sim=outcome.sim, slurm_action=outcome.slurm_action,
        slurm_reason=outcome.slurm_reason,
    )
    doc["result_file"] = outcome.result_path
    doc["result_error"] = outcome.result_error
    return doc
