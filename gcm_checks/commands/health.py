"""``gcm-checks health``: the periodic run for Slurm's ``HealthCheckProgram``
(the mode itself: gcm_checks/health.py).

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
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from gcm_checks.commands._suite import add_common


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    parser.add_argument("--reapply", action="store_true", help="re-read the node now and re-apply gcm features if Slurm lost them")
    parser.add_argument("--no-resume", action="store_true", help="never resume, even a drain made by gcm (overrides slurm.resume_on_pass)")


def run(args: argparse.Namespace) -> int:
    from gcm_checks.guard import guarded

    return guarded(args, "health", lambda a, settings, node, _job, log, t0: _run(a, settings, node, log, t0))


def _run(args: argparse.Namespace, settings: Any, node: str, log: Any, t0: float) -> int:
    from gcm_checks import health
    from gcm_checks.commands._suite import emit_json, render_table, result_rows, summary_line
    from gcm_checks.result import Status

    out = health.run(args, settings, node, log, t0)
    results, v, actions, decision = out.results, out.verdict, out.actions, out.decision
    action_text = ", ".join(f"{k}: {a['action']}" for k, a in actions.items()) or None
    if decision.config_error:
        action_text = f"{action_text or 'no change'} [config error: defaults, report-only]"
    elif decision.report_only and action_text:
        action_text += " [report-only]"
    if args.json:
        emit_json({"verdict": v.value, "node": node, "actions": actions, "results": result_rows(results),
                   "report_only": decision.report_only, "would_drain": out.drain_action == "would drain",
                   "config_error": decision.config_error, "decision": decision.to_dict()})
    elif sys.stdout.isatty() or getattr(args, "dry_run", False) or v is not Status.PASS:
        render_table(results)
    print(summary_line("health", node, v, results, action_text, worst=decision.failure), file=sys.stderr)
    return decision.exit_code
