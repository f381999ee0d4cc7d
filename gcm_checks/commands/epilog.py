"""``gcm-checks epilog``: after every job, on every node of the job.

Reads the job from Slurm's epilog environment, scans the kernel log for XIDs
inside the job's window (the prolog recorded the start; Slurm 22.05 gives the
epilog none), runs DCGM diagnostics and a fast GPU re-check, and drains on a
hardware ``fail`` with the prolog's reason format and ownership rules.

Exit status: 0 after draining the node itself - a non-zero epilog makes Slurm
drain with "Epilog error", hiding our reason - and 100 (decide.EXIT_DRAIN)
only when the node should be drained but our drain could not be made, so
Slurm drains it anyway.

Then, after the verdict is fixed: this node's evidence goes to the job report
(one report per job, assembled by exactly one node) and notification is handed
off; neither can change the exit status (rule 6).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from gcm_checks.commands._suite import add_common


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    parser.add_argument("--no-report", action="store_true", help="skip the job report and notification")


def run(args: argparse.Namespace) -> int:
    from gcm_checks.guard import guarded

    return guarded(args, "epilog", _run)


def _run(args, settings, node, job_id, log, t0) -> int:
    from gcm_checks import suite
    from gcm_checks.classify import exit_info_from_env
    from gcm_checks.commands._suite import render
    from gcm_checks.epilog import (_job_failed, _log_events, _report, _show_job, _write_local_evidence,
                                   dcgm_level_after_failure, drain_evidence, evidence_of, job_window, run_context)
    from gcm_checks.sinks import _telemetry
    from gcm_checks.suite import run_checks
    from gcm_checks.node_action import apply_decision, node_context
    from gcm_checks.decide import decide, is_would_drain, settle
    from gcm_checks.result import Status

    env = os.environ
    budget = args.budget or settings.get("epilog.budget_s") or settings.get("budget_s")
    ctx = suite.build_context(settings, sim=args.sim, budget_s=budget, dry_run=bool(getattr(args, "dry_run", False)))
    from gcm_checks.sinks import telemetry_on

    # Hardware readings for graphs: a few more NVML calls, after a job, never before one.
    ctx.hw_telemetry = telemetry_on(settings, "epilog")
    ctx.started = t0
    exit_info = exit_info_from_env(env)
    show = _show_job(settings, job_id, log, node, env)
    now = time.time()
    ctx.window, window_from = job_window(Path(ctx.state_dir), job_id, node, show, now)
    failed_job = _job_failed(exit_info, show)
    if failed_job:
        ctx.dcgm_level = dcgm_level_after_failure(settings, ctx.budget_s, log)
    # DCGM diagnoses only this job's GPUs: others may be running jobs.
    ctx.job = {"job_id": job_id, "gpus": env.get("SLURM_JOB_GPUS"), **exit_info}
    log.info("job", window_from=window_from, failed=failed_job, state=show.get("JobState"), reason=show.get("Reason"), **exit_info)

    results, v, _ = run_checks(args, "epilog", ctx, log)
    decision = decide(results, "epilog", node_context(args, settings))
    action = apply_decision(args, settings, node, ctx, decision, log)
    if action and action.startswith("braked: "):
        decision = decide(results, "epilog", node_context(args, settings, brake=action[len("braked: "):]))
        v, action = decision.verdict, "braked"
    drain_reason = decision.reason
    # Our drain made (or kept: someone else's drain is already there): 0.
    # Could not drain at all: EXIT_DRAIN so Slurm drains the node itself.
    decision = settle(decision, action)
    code = decision.exit_code
    counts = {s.value: sum(1 for r in results if r.status is s) for s in Status}
    log.info("done", verdict=v.value, counts=counts, duration_s=round(time.monotonic() - t0, 4), action=action)

    # --- everything below is after the verdict and cannot change it -------
    from gcm_checks.state import job_record

    # The prolog's count names this run: a run ended by a requeue already
    # sees the next count in its epilog environment and in scontrol.
    restarts = job_record(Path(ctx.state_dir), job_id, node).get("restart_count") if job_id else None
    evidence = evidence_of(ctx, results)
    try:
        evidence.update(run_context(settings, env, show, restarts))
        if exit_info.get("derived_exit_code"):
            evidence["derived_exit_code"] = int(exit_info["derived_exit_code"])
        if drain_reason and action:
            d = drain_evidence(ctx.state_dir, node, drain_reason, action)
            # The decision core knows report-only and the would-drain spelling.
            d.update(report_only=decision.report_only, would_drain=is_would_drain(action))
            evidence["drains"] = [d]
    except Exception as e:  # noqa: BLE001 - report context is a bonus; the verdict is decided (rule 6)
        log.warning("report_context_failed", error=f"{type(e).__name__}: {e}")
        if drain_reason and action:
            evidence["drains"] = [{"node": node, "reason": drain_reason, "action": action}]
    _write_local_evidence(ctx, job_id, node, evidence, log)
    report = None
    if job_id and settings.get("epilog.report") and not getattr(args, "no_report", False):
        report = _report(settings, node, job_id, show, exit_info, evidence, log, restarts)
    _telemetry(results, settings, node, job_id, "epilog", action, log, xids=evidence["xids"], t0=t0, ctx=ctx,
               log_events=_log_events(report, node, drain_reason, action) if settings.get("telemetry.otlp_endpoint") else ())
    if job_id:
        from gcm_checks.state import forget_job

        forget_job(Path(ctx.state_dir), job_id, node)
    render(args, "epilog", node, results, v, drain_reason, action, decision=decision,
           extra={"job_id": job_id, "window": evidence["xid_window"], "xids": evidence["xids"], "report": report})
    return code


