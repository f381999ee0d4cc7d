"""Shared plumbing for the commands that run a suite (prolog, epilog, health,
check): load config, open the log, build the context, render results."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional

from gcm_checks.result import CheckResult, Status


def add_common(parser: argparse.ArgumentParser, *, dry_run: bool = True) -> None:
    parser.add_argument("--config", metavar="PATH", help="config file (default: discovered, see docs)")
    parser.add_argument("--sim", metavar="SCENARIO", help="simulated node: built-in name or YAML path (hardware only)")
    parser.add_argument("--json", action="store_true", help="print a JSON document instead of text")
    parser.add_argument("--node", help="Slurm node name (default: $SLURMD_NODENAME or the short hostname)")
    parser.add_argument("--budget", type=float, metavar="SECONDS", help="override budget_s")
    if dry_run:
        parser.add_argument("--dry-run", action="store_true", help="print the Slurm action instead of taking it")


def load_settings(args: argparse.Namespace) -> Any:
    from gcm_checks import config

    return config.load(args.config, getattr(args, "node", None))


def load_settings_or_defaults(args: argparse.Namespace) -> Any:
    """Settings for a node-side run: a broken config gives built-in defaults in
    report-only (``settings.config_error`` says why), never an exception."""
    from gcm_checks import config

    return config.load_or_defaults(args.config, getattr(args, "node", None))[0]


def result_rows(results: List[CheckResult]) -> List[Dict[str, Any]]:
    return [
        {"check": r.check, "status": r.status.value, "subject": r.subject, "message": r.message,
         "duration_s": round(r.duration_s, 4)}
        for r in results
    ]


def render_table(results: List[CheckResult], out: Any = None) -> None:
    out = out or sys.stdout
    order = {Status.FAIL: 0, Status.UNKNOWN: 1, Status.WARN: 2, Status.PASS: 3}
    rows = sorted(results, key=lambda r: (order[r.status], r.check, r.subject))
    from gcm_checks.commands._table import render

    # One line per result, cut to the terminal with an ellipsis (--json has the full text).
    render(("STATUS", "CHECK", "SUBJECT", "MESSAGE"),
           [(r.status.value.upper(), r.check, r.subject or "-", r.message) for r in rows], out, flexible=(2, 3))


def counts(results: List[CheckResult]) -> Dict[str, int]:
    c = {s.value: 0 for s in Status}
    for r in results:
        c[r.status.value] += 1
    return c


def summary_line(kind: str, node: str, verdict: Status, results: List[CheckResult], action: Optional[str],
                 worst: Optional[CheckResult] = None) -> str:
    c = counts(results)
    if worst is None:
        worst = next((r for r in results if r.status is verdict and verdict is not Status.PASS), None)
    head = f"gcm-checks {kind} {node}: {verdict.value.upper()}"
    tail = f" ({c['pass']} pass, {c['warn']} warn, {c['unknown']} unknown, {c['fail']} fail)"
    what = f" - {worst.check} {worst.subject}: {worst.message}" if worst else ""
    act = f" -> {action}" if action else ""
    return head + tail + what + act


def emit_json(doc: Dict[str, Any]) -> None:
    json.dump(doc, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


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

