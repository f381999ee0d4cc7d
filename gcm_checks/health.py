"""Health mode: the periodic run for Slurm's ``HealthCheckProgram``.

slurmd runs it every ``HealthCheckInterval`` whether or not a job is on the
node. It runs the ``health`` suite and applies the ownership rules of
``gcm_checks.slurm``:

* a failure drains the node with a ``gcm:`` reason, unless someone else
  already drained it (their reason is kept, our finding logged);
* when the check that caused our own drain passes again, the node is resumed
  (``slurm.resume_on_pass``, default on; only ever our drain);
* health is published as ``gcm_ok`` / ``gcm_degraded`` plus a summary in
  ``Extra``, on transitions only. ``scontrol reconfigure`` wipes
  scontrol-set features, so they are re-applied from local state when
  slurm.conf changed (checked locally, no RPC) and at least every
  ``FEATURE_VERIFY_S`` (one read) for a reconfigure without an edit.

A healthy node with nothing to change makes no Slurm call. An unreachable
slurmctld costs at most ``slurm.timeout_s`` per call and a log line - never a
hang, never a drain. ``unknown`` results change nothing in Slurm.

Exit status: 100 (decide.EXIT_DRAIN) when the decision was a drain, else 0
(slurmd only logs a non-zero health check; it never drains for it).
Report-only changes nothing: no drain, no feature, no resume; the log,
metrics and ``--json`` say what would have happened.

``gcm-checks health`` (commands/health.py) parses arguments, calls ``run``
and prints what it returns.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings


# Re-read the node's features at most this often to catch a reconfigure that
# wiped them (a slurmctld restart leaves no local trace): one cheap
# REQUEST_NODE_INFO per node every 10 minutes, not one per health run.
FEATURE_VERIFY_S = 600.0


class HealthRun:
    """What one health run decided and did, for the command to print."""

    __slots__ = ("results", "verdict", "actions", "decision", "drain_action")

    def __init__(self, results: List[Any], verdict: Any, actions: Dict[str, Any], decision: Any,
                 drain_action: Optional[str]) -> None:
        self.results, self.verdict, self.actions = results, verdict, actions
        self.decision, self.drain_action = decision, drain_action


def run(args: Any, settings: "Settings", node: str, log: Any, t0: float) -> HealthRun:
    """One health run: the suite, the decision and every Slurm side effect
    (drain, resume, features), then housekeeping and metrics, which never
    change the verdict. ``args``: the command line (``sim``, ``budget``,
    ``dry_run``, ``json``, ``reapply``, ``no_resume``)."""
    import sys

    from gcm_checks import slurm, suite
    from gcm_checks.node_action import node_context
    from gcm_checks.sinks import export_metrics, telemetry_on

    ctx = suite.build_context(settings, sim=args.sim, budget_s=args.budget, dry_run=bool(getattr(args, "dry_run", False)))
    ctx.hw_telemetry = telemetry_on(settings, "health")
    ctx.started = t0
    results, v, _ = suite.run_checks("health", ctx, log)
    backend = slurm.backend_from_settings(settings, dry_run=getattr(args, "dry_run", False),
                                          out=sys.stderr if args.json else sys.stdout, log=log)
    resume = settings.slurm.resume_on_pass and not args.no_resume
    actions = decide_and_apply(backend, node, results, state_dir=str(ctx.state_dir), log=log,
                               verify_features=args.reapply, context=node_context(args, settings, resume_on_pass=resume),
                               settings=settings)
    decision = actions.pop("_decision")
    if decision.brake:
        v = decision.verdict  # suspected cluster-wide cause: unknown, not a hardware verdict
    log.info("done", verdict=v.value, duration_s=round(time.monotonic() - t0, 4), actions=actions, decision=decision.admin)
    if not getattr(args, "dry_run", False):
        housekeeping(settings, node, log)
    drain_action = (actions.get("drain") or {}).get("action")
    # Health reads back our own drain record, so the one gcm_node_drained
    # series says what gcm holds now, whoever (prolog, epilog, health) drained.
    drained = slurm.drain_record(str(ctx.state_dir), node) is not None
    export_metrics(results, settings, node, None, "health", drain_action, log,
                   xids=[e.to_dict() for e in getattr(ctx.facts.get("xid"), "events", ())], t0=t0, ctx=ctx,
                   drained=drained,
                   log_events=_drain_events(actions, node) if settings.telemetry.otlp_endpoint else ())
    return HealthRun(results, v, actions, decision, drain_action)


def housekeeping(settings: "Settings", node: str, log: Any) -> None:
    """The periodic chores health mode carries, after the verdict and never
    able to change it: retry undelivered notifications and assemble job
    reports whose nodes never all reported (in a detached process, so a dead
    mail relay cannot slow the health check), and - on the one designated
    node only - the batched sacct refinement (docs/accounting.md)."""
    try:
        if settings.notify.channels:  # a bad table raises here: logged below, never the verdict
            from gcm_checks import notify, report

            notify.spawn_flush(settings, budget_s=settings.notify.budget_s, node=node,
                               sweep=report.sweep_and_prune)
    except Exception as e:  # noqa: BLE001 - rule 6
        log.warning("notify_flush_failed", error=f"{type(e).__name__}: {e}")
    try:
        from gcm_checks.accounting import maybe_refine

        out = maybe_refine(settings, node)
        if out is not None:
            log.info("refine", result=str(out)[:500])
    except Exception as e:  # noqa: BLE001
        log.warning("refine_failed", error=f"{type(e).__name__}: {e}")


def health_features(results: List[Any]) -> Optional[List[str]]:
    """gcm features for a verdict; None when we could not tell (change nothing)."""
    from gcm_checks.decide import health_features as hf

    return hf(results)


def passed_checks(results: List[Any]) -> List[str]:
    """Check ids whose every result passed (a check may report per GPU)."""
    from gcm_checks.result import Status

    seen: Dict[str, bool] = {}
    for r in results:
        seen[r.check] = seen.get(r.check, True) and r.status is Status.PASS
    return sorted(c for c, ok in seen.items() if ok)


def _drain_events(actions: Dict[str, Any], node: str) -> List[Any]:
    """Drains and resumes health made, as OTLP log records."""
    from gcm_checks.telemetry.events import slurm_action_event

    return [e for e in (slurm_action_event(kind, a, node) for kind, a in actions.items()) if e is not None]


def decide_and_apply(backend: Any, node: str, results: List[Any], *, state_dir: str, log: Any,
                     resume_on_pass: bool = True, verify_features: bool = False,
                     context: Any = None, settings: Optional["Settings"] = None) -> Dict[str, Any]:
    """All of health mode's Slurm side effects, as the decision core decides
    them; returns what was done, for the log and --json."""
    from gcm_checks import slurm
    from dataclasses import replace

    from gcm_checks.decide import NodeContext, action_words, decide
    from gcm_checks.result import Status

    ctx = context if context is not None else NodeContext(resume_on_pass=resume_on_pass)
    d = decide(results, "health", ctx)
    if d.report_only or d.failure is None:
        from types import SimpleNamespace

        from gcm_checks.node_action import note_would_drain

        note_would_drain(SimpleNamespace(state_dir=state_dir, node=node), d, log)
    actions: Dict[str, Any] = {}
    would = isinstance(backend, slurm.DryRunBackend)
    if d.node_action == "drain" and d.report_only:
        log.warning("would_drain", reason=d.reason, report_only=True, config_error=d.config_error)
        actions["drain"] = {"action": "would drain", "reason": d.reason, "previous_reason": None}
    elif d.node_action == "drain" and settings is not None and _braked(settings, node, d, log, backend):
        d = decide(results, "health", replace(ctx, brake=_braked(settings, node, d, log, backend)))
        actions["drain"] = {"action": "braked", "reason": None, "previous_reason": None, "why": d.brake}
    elif d.node_action == "drain":
        out = slurm.apply_drain(backend, node, d.reason, state_dir=state_dir, log=log, check=d.failure.check)
        actions["drain"] = {"action": action_words(out.action, would) if would else out.action, "reason": out.reason,
                            "previous_reason": out.previous_reason}
    elif d.node_action == "resume-if-passed":
        res = slurm.resume_if_passed(backend, node, passed_checks(results), state_dir=state_dir, log=log)
        if res is not None:
            actions["resume"] = {"action": res.action, "previous_reason": res.previous_reason}
    elif d.report_only and slurm.drain_record(state_dir, node) is not None:
        log.info("would_resume_if_passed", note="report-only: no resume")
    want = d.features
    if want is not None:
        failing = sorted({r.check for r in results if r.status in (Status.FAIL, Status.WARN)})
        status = "ok" if want == ["gcm_ok"] else "degraded"
        rec = slurm.feature_record(state_dir, node)
        stale = rec is None or (time.time() - float(rec.get("time") or 0)) > FEATURE_VERIFY_S
        out_f = slurm.apply_features(backend, node, want, slurm.summary_extra(status, failing), state_dir=state_dir,
                                     log=log, verify=verify_features or stale, manage=("gcm_ok", "gcm_degraded"),
                                     stamp=slurm.conf_stamp())
        if out_f.action != "unchanged":
            actions["features"] = {"action": out_f.action, "features": list(out_f.features), "detail": out_f.detail}
    elif d.report_only:
        wanted = health_features(results)
        if wanted:
            actions["features"] = {"action": "would set", "features": wanted, "detail": "report-only"}
    actions["_decision"] = d
    return actions


def _braked(settings: "Settings", node: str, decision: Any, log: Any, backend: Any) -> Optional[str]:
    """The mass-drain brake's answer, read once per run (cached on the decision's check)."""
    key = (node, decision.failure.check)
    if key not in _BRAKE_CACHE:
        from gcm_checks.node_action import brake_for

        why = brake_for(settings, node, decision, log)
        _BRAKE_CACHE[key] = why[len("braked: "):] if why else None
    return _BRAKE_CACHE[key]


_BRAKE_CACHE: Dict[Any, Optional[str]] = {}

