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
from gcm_checks.node_action import apply_decision, node_context


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)


def run(args: argparse.Namespace) -> int:
    return guarded(args, "prolog", _run)


def guarded(args: argparse.Namespace, kind: str, body: Callable[..., int]) -> int:
    """Load config and open the log, then run ``body``; anything that goes
    wrong on our side is reported and exits 0 - never a drain or requeue.

    A broken config does not stop the run: the hardware is still checked with
    built-in defaults in report-only (``config.load_or_defaults``), so the
    admin learns of the bad node AND of the bad config, and nothing drains.
    """
    t0 = time.monotonic()
    from gcm_checks.config import load_or_defaults

    settings, cfg_err = load_or_defaults(args.config, getattr(args, "node", None))
    if cfg_err is not None:
        _say(f"gcm-checks {kind}: CONFIG ERROR - {cfg_err}; running built-in defaults in report-only "
             "(nothing is drained); fix it, then run 'gcm-checks config check'")
    from gcm_checks.logs import close_log, open_log

    node = settings.node
    job_id = os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID")
    # The prolog runs before every job: structlog's import alone would be a
    # quarter of its time budget, so it writes the same lines without it.
    log = open_log(settings.get("log_path"), fast=(kind == "prolog"), mode=kind, node=node, job_id=job_id)
    try:
        if cfg_err is not None:
            log.error("config_error", error=str(cfg_err), file=cfg_err.source, key=cfg_err.key,
                      running="built-in defaults, report-only")
        refuse_unsafe_dirs(settings, kind, log)
        return body(args, settings, node, job_id, log, t0)
    except BrokenPipeError:  # the reader went away (| head): nothing to report
        return 0
    except Exception as e:  # noqa: BLE001 - our bug: report, never drain
        try:
            log.exception("internal_error", error=str(e))
        except Exception:  # noqa: BLE001 - a full log disk must not turn this into a crash
            pass
        _say(f"gcm-checks {kind} {node}: UNKNOWN - internal error: {type(e).__name__}: {e}")
        return 0
    finally:
        try:
            close_log()
        except Exception:  # noqa: BLE001
            pass


def refuse_unsafe_dirs(settings: Any, kind: str, log: Any) -> None:
    """Root never uses a state, spool or outbox directory others can write.

    Refused loudly and never a drain: the state moves to a fresh private
    directory for this run (job start, drain records, baselines are not
    kept), and the job report and notification are skipped.
    """
    from gcm_checks.state import unsafe_dir

    problem = unsafe_dir(str(settings.get("state_dir") or ""))
    if problem:
        import tempfile

        private = tempfile.mkdtemp(prefix="gcm-checks-state-")
        log.error("unsafe_dir", setting="state_dir", problem=problem, using=private)
        _say(f"gcm-checks {kind}: REFUSED state_dir: {problem}; using {private} for this run - fix: chown root, chmod go-w")
        settings.data["state_dir"] = private
    for key in ("report.spool_dir", "report.outbox_dir", "notify.outbox_dir"):
        problem = unsafe_dir(str(settings.get(key) or ""))
        if problem:
            log.error("unsafe_dir", setting=key, problem=problem, skipped="job report and notification")
            _say(f"gcm-checks {kind}: REFUSED {key}: {problem}; job report and notification skipped - fix: chown root, chmod go-w")
            settings.data.setdefault("epilog", {})["report"] = False
            settings.data.setdefault("notify", {})["channels"] = []


def _say(line: str) -> None:
    """One line on stderr (slurmd's log); never raises."""
    try:
        print(line, file=sys.stderr)
    except Exception:  # noqa: BLE001 - stderr closed or on a full disk
        pass


def run_checks(args: argparse.Namespace, kind: str, ctx: Any, log: Any) -> Tuple[List[Any], Any, Optional[Any]]:
    """Run the suite; return (results, verdict, the failure that names a drain)."""
    from gcm_checks import suite
    from gcm_checks.decide import pick_failure
    from gcm_checks.result import Status, verdict

    log.info("start", sim=ctx.sim.get("name") if ctx.sim else None, budget_s=ctx.budget_s, config=ctx.settings.source)
    try:
        results = suite.run_suite(kind, ctx)
    finally:
        ctx.close()
    for w in ctx.config_warnings:
        log.warning("config_warning", detail=w)
    for r in results:
        if r.status is not Status.PASS:
            log.info("result", **r.to_dict())
    return results, verdict(results), pick_failure(results)


def render(args: argparse.Namespace, kind: str, node: str, results: List[Any], v: Any, drain_reason: Optional[str],
           action: Optional[str], extra: Optional[dict] = None, decision: Any = None) -> None:
    from gcm_checks.commands._suite import emit_json, render_table, result_rows, summary_line
    from gcm_checks.result import Status

    if args.json:
        doc = {"verdict": v.value, "drain_reason": drain_reason, "node": node, "action": action,
               "results": result_rows(results)}
        if decision is not None:
            doc.update(report_only=decision.report_only, would_drain=action == "would drain",
                       config_error=decision.config_error, decision=decision.to_dict())
        doc.update(extra or {})
        emit_json(doc)
    elif sys.stdout.isatty() or getattr(args, "dry_run", False) or v is not Status.PASS:
        render_table(results)
    from gcm_checks.decide import action_words

    words = action_words(action)
    if decision is not None and decision.config_error:
        words = f"{words or 'no change'} [config error: defaults, report-only]"
    elif decision is not None and decision.report_only and words:
        words += " [report-only]"
    worst = decision.failure if decision is not None else None
    print(summary_line(kind, node, v, results, words, worst=worst), file=sys.stderr)


def _run(args, settings, node, job_id, log, t0) -> int:
    from pathlib import Path

    from gcm_checks import suite
    from gcm_checks.decide import decide
    from gcm_checks.result import Status

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


def _ib_for_telemetry(ctx: Any, log: Any) -> Any:
    """The epilog judges no IB port, but its readings are graphed: one sysfs
    read (no device call), under a deadline, after the verdict."""
    try:
        from gcm_checks.deadline import call_with_deadline
        from gcm_checks.gather import ib

        root = ctx.sysfs_root()
        rebuilt = False
        if getattr(ctx, "sim", None) is not None and not os.path.isdir(root):
            # The simulated tree went with the suite's ctx.close(): build it again for this read.
            ctx._sysfs_root = None
            root, rebuilt = ctx.sysfs_root(), True
        try:
            snap = call_with_deadline(lambda: ib.read_sysfs(root), 1.0, "ib sysfs for telemetry")
        finally:
            if rebuilt:
                ctx.close()
        return snap if snap.class_present else None
    except Exception as e:  # noqa: BLE001 - no IB readings is not an error of the run
        log.info("telemetry_ib_skipped", error=f"{type(e).__name__}: {e}")
        return None


def telemetry_on(settings: Any, mode: str) -> bool:
    """A sink is configured that this mode writes to."""
    keys = ("telemetry.prometheus_textfile_dir",) if mode == "prolog" else \
        ("telemetry.prometheus_textfile_dir", "telemetry.otlp_endpoint")
    return any(settings.get(k) for k in keys)


def _telemetry(results: List[Any], settings: Any, node: str, job_id: Optional[str], mode: str, action: Optional[str],
               log: Any, xids: Any = None, *, t0: Optional[float] = None, ctx: Any = None,
               drained: Optional[bool] = None, log_events: Any = (), job_runs: bool = False) -> None:
    """Metrics sinks (Prometheus textfile, OTLP) when configured; never a verdict.

    The prolog writes only the local textfile: it must not wait on a network
    collector (or import the OpenTelemetry SDK) before every job, and it
    exports no hardware readings (those cost NVML calls; health and the
    epilog gather them). ``drained``: the drain state when the caller knows
    it; by default only "we drained now" is known. ``job_runs``: the prolog
    lets the job start here, so its GPUs are tied to it (gcm_job_info); a
    requeued job gets no epilog here to untie them.
    """
    sinks = ("prometheus",) if mode == "prolog" else ("prometheus", "otlp")
    if not telemetry_on(settings, mode):
        return
    gauges = {"gcm_config_error": 1.0 if getattr(settings, "config_error", None) else 0.0,
              "gcm_would_drain": 1.0 if action == "would drain" else 0.0,
              "gcm_drain_braked": 1.0 if (action or "").startswith("braked") else 0.0}
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
                         job_gpus=os.environ.get("SLURM_JOB_GPUS") if mode == "prolog" and job_runs else None,
                         log_events=log_events, gauges=gauges)
    except Exception as e:  # noqa: BLE001 - a sink never changes the verdict (rule 6)
        log.warning("telemetry_failed", error=f"{type(e).__name__}: {e}")
