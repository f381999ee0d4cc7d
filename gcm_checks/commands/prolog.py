"""``gcm-checks prolog``: the suite Slurm runs before every job.

Exit 0 unless the hardware is bad: a non-zero prolog makes Slurm requeue the
job, so config errors, missing tools and our own bugs exit 0 (logged,
counted) - one bad deploy must not drain a cluster (rule 2). A healthy run
makes no Slurm call at all (rule 3).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, List, Optional, Tuple

from gcm_checks.commands._suite import add_common


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)


def run(args: argparse.Namespace) -> int:
    return guarded(args, "prolog", _run)


def guarded(args: argparse.Namespace, kind: str, body: Callable[..., int]) -> int:
    """Load config and open the log, then run ``body``; anything that goes
    wrong on our side is reported and exits 0 - never a drain or requeue."""
    t0 = time.monotonic()
    from gcm_checks.config import ConfigError

    try:
        from gcm_checks.commands._suite import load_settings

        settings = load_settings(args)
    except ConfigError as e:
        print(f"gcm-checks {kind}: UNKNOWN - configuration error, no checks run: {e}", file=sys.stderr)
        return 0
    from gcm_checks.logs import close_log, open_log

    node = settings.node
    job_id = os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID")
    # The prolog runs before every job: structlog's import alone would be a
    # quarter of its time budget, so it writes the same lines without it.
    log = open_log(settings.get("log_path"), fast=(kind == "prolog"), mode=kind, node=node, job_id=job_id)
    try:
        return body(args, settings, node, job_id, log, t0)
    except Exception as e:  # noqa: BLE001 - our bug: report, never drain
        log.exception("internal_error", error=str(e))
        print(f"gcm-checks {kind} {node}: UNKNOWN - internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 0
    finally:
        close_log()


def run_checks(args: argparse.Namespace, kind: str, ctx: Any, log: Any) -> Tuple[List[Any], Any, Optional[Any]]:
    """Run the suite; return (results, verdict, first failure)."""
    from gcm_checks import runner
    from gcm_checks.result import Status, first_failure, verdict

    log.info("start", sim=ctx.sim.get("name") if ctx.sim else None, budget_s=ctx.budget_s, config=ctx.settings.source)
    try:
        results = runner.run_suite(kind, ctx)
    finally:
        ctx.close()
    for r in results:
        if r.status is not Status.PASS:
            log.info("result", **r.to_dict())
    return results, verdict(results), first_failure(results)


def drain_for(args: argparse.Namespace, settings: Any, node: str, ctx: Any, fail: Any, log: Any) -> Tuple[str, str]:
    """Drain for a hardware failure under the ownership rules.

    Returns (drain_reason, action); action is the slurm.DrainOutcome action,
    or "report-only: would drain".
    """
    from gcm_checks import slurm

    reason = slurm.make_drain_reason(fail.check, fail.subject, fail.message)
    if slurm.report_only(settings):
        log.warning("would_drain", reason=reason)
        return reason, "report-only: would drain"
    backend = slurm.backend_from_settings(settings, dry_run=getattr(args, "dry_run", False),
                                          out=sys.stderr if args.json else sys.stdout, log=log)
    outcome = slurm.apply_drain(backend, node, reason, state_dir=str(ctx.state_dir), log=log, check=fail.check)
    log.warning("drain", action=outcome.action, reason=reason, detail=outcome.detail)
    return reason, outcome.action


def render(args: argparse.Namespace, kind: str, node: str, results: List[Any], v: Any, drain_reason: Optional[str],
           action: Optional[str], extra: Optional[dict] = None) -> None:
    from gcm_checks.commands._suite import emit_json, render_table, result_rows, summary_line
    from gcm_checks.result import Status

    if args.json:
        doc = {"verdict": v.value, "drain_reason": drain_reason, "node": node, "action": action,
               "results": result_rows(results)}
        doc.update(extra or {})
        emit_json(doc)
    elif sys.stdout.isatty() or getattr(args, "dry_run", False) or v is not Status.PASS:
        render_table(results)
    print(summary_line(kind, node, v, results, action), file=sys.stderr)


def _run(args, settings, node, job_id, log, t0) -> int:
    from pathlib import Path

    from gcm_checks import runner
    from gcm_checks.result import Status

    ctx = runner.build_context(settings, sim=args.sim, budget_s=args.budget, dry_run=bool(getattr(args, "dry_run", False)))
    ctx.started = t0  # the budget counts from process start, not from here
    if job_id:
        try:
            from gcm_checks.state import record_job_start

            # Slurm 22.05 gives the epilog no start time: its XID window starts here.
            restarts = os.environ.get("SLURM_JOB_RESTART_COUNT", "")
            record_job_start(Path(ctx.state_dir), job_id, node,
                             restart_count=int(restarts) if restarts.isdigit() else None)
        except OSError as e:
            log.warning("job_start_not_recorded", error=str(e))
    results, v, fail = run_checks(args, "prolog", ctx, log)
    drain_reason = action = None
    code = 0
    if fail is not None:
        drain_reason, action = drain_for(args, settings, node, ctx, fail, log)
        # Non-zero so Slurm requeues the job elsewhere - even if our drain
        # failed, Slurm's own "Prolog error" drain keeps jobs off this GPU.
        # Report-only mode never requeues.
        code = 0 if action.startswith("report-only") else 1
    counts = {s.value: sum(1 for r in results if r.status is s) for s in Status}
    log.info("done", verdict=v.value, counts=counts, duration_s=round(time.monotonic() - t0, 4), action=action)
    _telemetry(results, settings, node, job_id, "prolog", action, log, t0=t0)
    render(args, "prolog", node, results, v, drain_reason, action)
    return code


def _ib_for_telemetry(ctx: Any, log: Any) -> Any:
    """The epilog judges no IB port, but its readings are graphed: one sysfs
    read (no device call), under a deadline, after the verdict."""
    try:
        from gcm_checks.deadline import call_with_deadline
        from gcm_checks.gather import ib

        snap = call_with_deadline(lambda: ib.read_sysfs(ctx.sysfs_root()), 1.0, "ib sysfs for telemetry")
        return snap if snap.class_present else None
    except Exception as e:  # noqa: BLE001 - no IB readings is not an error of the run
        log.info("telemetry_ib_skipped", error=f"{type(e).__name__}: {e}")
        return None


def _job_runs(action: Optional[str]) -> bool:
    """After this prolog, does the job run here? Not when it failed the node
    (Slurm requeues it; no epilog may come to remove its gcm_job_info)."""
    return action is None or action.startswith("report-only")


def telemetry_on(settings: Any, mode: str) -> bool:
    """A sink is configured that this mode writes to."""
    keys = ("telemetry.prometheus_textfile_dir",) if mode == "prolog" else \
        ("telemetry.prometheus_textfile_dir", "telemetry.otlp_endpoint")
    return any(settings.get(k) for k in keys)


def _telemetry(results: List[Any], settings: Any, node: str, job_id: Optional[str], mode: str, action: Optional[str],
               log: Any, xids: Any = None, *, t0: Optional[float] = None, ctx: Any = None,
               drained: Optional[bool] = None, log_events: Any = ()) -> None:
    """Metrics sinks (Prometheus textfile, OTLP) when configured; never a verdict.

    The prolog writes only the local textfile: it must not wait on a network
    collector (or import the OpenTelemetry SDK) before every job, and it
    exports no hardware readings (those cost NVML calls; health and the
    epilog gather them). ``drained``: the drain state when the caller knows
    it; by default only "we drained now" is known.
    """
    sinks = ("prometheus",) if mode == "prolog" else ("prometheus", "otlp")
    if not telemetry_on(settings, mode):
        return
    if drained is None and action in ("drained", "already"):
        drained = True
    facts = getattr(ctx, "facts", None) or {}
    try:
        from gcm_checks import telemetry

        ib_snapshot = facts.get("ib")
        if ib_snapshot is None and mode == "epilog" and ctx is not None:
            ib_snapshot = _ib_for_telemetry(ctx, log)

        telemetry.export(results, settings, mode=mode, node=node, job_id=job_id, xids=xids, drained=drained, log=log,
                         sinks=sinks, duration_s=None if t0 is None else time.monotonic() - t0,
                         gpu_facts=None if mode == "prolog" else facts.get("gpu"),
                         ib_snapshot=None if mode == "prolog" else ib_snapshot,
                         job_gpus=os.environ.get("SLURM_JOB_GPUS") if mode == "prolog" and _job_runs(action) else None,
                         log_events=log_events)
    except Exception as e:  # noqa: BLE001 - a sink never changes the verdict (rule 6)
        log.warning("telemetry_failed", error=f"{type(e).__name__}: {e}")
