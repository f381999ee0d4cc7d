"""``gcm-checks prolog``: the suite Slurm runs before every job.

Exit 0 unless the hardware is bad: a non-zero prolog makes Slurm requeue the
job, so config errors, missing tools and our own bugs exit 0 (logged,
counted) - one bad deploy must not drain a cluster (rule 2). A healthy run
makes no Slurm call at all (rule 3).
"""

from __future__ import annotations

import argparse
import os
import time

from gcm_checks.commands._suite import add_common, render
from gcm_checks.guard import guarded
from gcm_checks.node_action import apply_decision, node_context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)


def run(args: argparse.Namespace) -> int:
    return guarded(args, "prolog", _run)


def _run(args, settings, node, job_id, log, t0) -> int:
    from pathlib import Path

    from gcm_checks import suite
    from gcm_checks.decide import decide
    from gcm_checks.result import Status
    from gcm_checks.sinks import _telemetry
    from gcm_checks.suite import run_checks

    ctx = suite.build_context(settings, sim=args.sim, budget_s=args.budget, dry_run=bool(getattr(args, "dry_run", False)))
    ctx.started = t0  # the budget counts from process start, not from here
    if job_id:
        try:
            from gcm_checks.gather.jobs import starting_job
            from gcm_checks.state import record_job_start

            # Slurm 22.05 gives the epilog no start time: its XID window starts here.
            restarts = os.environ.get("SLURM_JOB_RESTART_COUNT", "")
            record_job_start(Path(ctx.state_dir), job_id, node,
                             restart_count=int(restarts) if restarts.isdigit() else None,
                             gpus=starting_job(os.environ)[1])
        except OSError as e:
            log.warning("job_start_not_recorded", error=str(e))
    results, v, _ = run_checks(args, "prolog", ctx, log)
    decision = decide(results, "prolog", node_context(args, settings))
    action = apply_decision(args, settings, node, ctx, decision, log)
    if action and action.startswith("braked: "):
        # Suspected cluster-wide cause: unknown, no drain, no requeue.
        decision = decide(results, "prolog", node_context(args, settings, brake=action[len("braked: "):]))
        v, action = decision.verdict, "braked"
    code = decision.exit_code
    counts = {s.value: sum(1 for r in results if r.status is s) for s in Status}
    log.info("done", verdict=v.value, counts=counts, duration_s=round(time.monotonic() - t0, 4), action=action,
             decision=decision.admin)
    _telemetry(results, settings, node, job_id, "prolog", action, log, t0=t0, job_runs=code == 0)
    render(args, "prolog", node, results, v, decision.reason, action, decision=decision)
    return code


