"""``gcm-checks health``: the periodic run for Slurm's ``HealthCheckProgram``.

Thin: parse arguments, call ``gcm_checks.health.run``, print. What the mode
does (drain, resume, features, exit status) is documented once, in
gcm_checks/health.py.
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
