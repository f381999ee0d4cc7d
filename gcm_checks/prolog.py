"""The prolog: the suite Slurm runs before every job.

Exit 0 unless the hardware is bad: a non-zero prolog makes Slurm requeue the
job, so config errors, missing tools and our own bugs exit 0 (logged,
counted) - one bad deploy must not drain a cluster (rule 2). A healthy run
makes no Slurm call at all (rule 3), and imports only what it runs (rule 7).

``gcm-checks prolog`` (commands/prolog.py) parses arguments, calls ``run``
and prints what it returns.
"""

from __future__ import annotations

import os
import time
from typing import Any, List, Optional


class PrologRun:
    """What one prolog run decided and did, for the command to print.

    A plain class: a dataclass costs ~0.5 ms to create at import, on the
    path every job start pays (rule 7)."""

    __slots__ = ("code", "results", "verdict", "action", "decision")

    def __init__(self, code: int, results: List[Any], verdict: Any, action: Optional[str], decision: Any) -> None:
        self.code, self.results, self.verdict, self.action, self.decision = code, results, verdict, action, decision


def run(args: Any, settings: Any, node: str, job_id: Optional[str], log: Any, t0: float) -> PrologRun:
    """Record the job's start, run the suite, decide and drain on a hardware
    ``fail``. ``args``: the command line (``sim``, ``budget``, ``dry_run``, ``json``)."""
    from pathlib import Path

    from gcm_checks import suite
    from gcm_checks.node_action import decide_and_drain
    from gcm_checks.result import Status
    from gcm_checks.sinks import export_metrics

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
    results, v, _ = suite.run_checks("prolog", ctx, log)
    decision, action = decide_and_drain(args, settings, node, ctx, results, "prolog", log)
    if action == "braked":
        v = decision.verdict
    code = decision.exit_code
    counts = {s.value: sum(1 for r in results if r.status is s) for s in Status}
    log.info("done", verdict=v.value, counts=counts, duration_s=round(time.monotonic() - t0, 4), action=action,
             decision=decision.admin)
    export_metrics(results, settings, node, job_id, "prolog", action, log, t0=t0, job_runs=code == 0)
    return PrologRun(code, results, v, action, decision)
