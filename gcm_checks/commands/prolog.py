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

from gcm_checks.commands._suite import add_common


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)


def run(args: argparse.Namespace) -> int:
    return run_hardware_suite(args, "prolog")


def run_hardware_suite(args: argparse.Namespace, kind: str) -> int:
    t0 = time.monotonic()
    from gcm_checks.config import ConfigError

    try:
        from gcm_checks.commands._suite import load_settings

        settings = load_settings(args)
    except ConfigError as e:
        # Never a requeue or a drain for our own configuration problem.
        print(f"gcm-checks {kind}: UNKNOWN - configuration error, no checks run: {e}", file=sys.stderr)
        return 0
    from gcm_checks.logs import close_log, open_log

    node = settings.node
    job_id = os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID")
    log = open_log(settings.get("log_path"), mode=kind, node=node, job_id=job_id)
    try:
        return _run(args, kind, settings, node, job_id, log, t0)
    except Exception as e:  # noqa: BLE001 - our bug: report, never drain
        log.exception("internal_error", error=str(e))
        print(f"gcm-checks {kind} {node}: UNKNOWN - internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 0
    finally:
        close_log()


def _run(args, kind, settings, node, job_id, log, t0) -> int:
    from pathlib import Path

    from gcm_checks import runner
    from gcm_checks.commands._suite import emit_json, result_rows, summary_line
    from gcm_checks.result import Status, first_failure, verdict

    ctx = runner.build_context(settings, sim=args.sim, budget_s=args.budget)
    ctx.started = t0  # the budget counts from process start, not from here
    log.info("start", sim=ctx.sim.get("name") if ctx.sim else None, budget_s=ctx.budget_s, config=settings.source)
    if kind == "prolog" and job_id:
        try:
            from gcm_checks.state import record_job_start

            record_job_start(Path(ctx.state_dir), job_id, node)
        except OSError as e:
            log.warning("job_start_not_recorded", error=str(e))
    try:
        results = runner.run_suite(kind, ctx)
    finally:
        ctx.close()
    v = verdict(results)
    for r in results:
        if r.status is not Status.PASS:
            log.info("result", **r.to_dict())
    fail = first_failure(results)
    drain_reason = None
    action = None
    code = 0
    if fail is not None:
        from gcm_checks import slurm

        drain_reason = slurm.make_drain_reason(fail.check, fail.subject, fail.message)
        if slurm.report_only(settings):
            action = "report-only: would drain"
            log.warning("would_drain", reason=drain_reason)
        else:
            backend = slurm.backend_from_settings(settings, dry_run=getattr(args, "dry_run", False),
                                                  out=sys.stderr if args.json else sys.stdout, log=log)
            outcome = slurm.apply_drain(backend, node, drain_reason, state_dir=str(ctx.state_dir), log=log, check=fail.check)
            action = outcome.action
            log.warning("drain", action=outcome.action, reason=drain_reason, detail=outcome.detail)
            # Non-zero so Slurm requeues the job elsewhere; even if our drain
            # failed, Slurm's own "Prolog error" drain keeps the job off this GPU.
            code = 1
    counts = {s.value: sum(1 for r in results if r.status is s) for s in Status}
    log.info("done", verdict=v.value, counts=counts, duration_s=round(time.monotonic() - t0, 4), action=action)
    if args.json:
        emit_json({"verdict": v.value, "drain_reason": drain_reason, "node": node, "action": action,
                   "results": result_rows(results)})
    else:
        from gcm_checks.commands._suite import render_table

        if sys.stdout.isatty() or getattr(args, "dry_run", False) or v is not Status.PASS:
            render_table(results)
    print(summary_line(kind, node, v, results, action), file=sys.stderr)
    return code
