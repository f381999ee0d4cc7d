"""``gcm-checks check --tag TAG``: run any suite by hand, read-only.

How an admin looks at a node before returning it to service. Takes no Slurm
action; the exit status reflects the worst result at or above ``--fail-on``.
"""

from __future__ import annotations

import argparse
import sys

from gcm_checks.commands._suite import add_common


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser, dry_run=False)
    parser.add_argument("--tag", default="health", choices=("prolog", "epilog", "health", "qualify"),
                        help="which suite to run (default: health)")
    parser.add_argument("--fail-on", default="fail", choices=("warn", "unknown", "fail"),
                        help="lowest status that makes the exit code 1 (default: fail)")
    parser.add_argument("--list", action="store_true", help="list the registered checks and exit")


def run(args: argparse.Namespace) -> int:
    import time

    from gcm_checks.commands._suite import emit_json, load_settings, render_table, result_rows, summary_line
    from gcm_checks.config import ConfigError
    from gcm_checks.result import Status, verdict

    if args.list:
        return _list(args)
    t0 = time.monotonic()
    try:
        settings = load_settings(args)
    except ConfigError as e:
        print(f"gcm-checks check: {e}", file=sys.stderr)
        return 2
    from gcm_checks import suite

    ctx = suite.build_context(settings, sim=args.sim, budget_s=args.budget)
    ctx.started = t0
    try:
        results = suite.run_suite(args.tag, ctx)
    finally:
        ctx.close()
    for w in ctx.config_warnings:
        print(f"warning: {w}", file=sys.stderr)
    v = verdict(results)
    if args.json:
        emit_json({"verdict": v.value, "node": settings.node, "tag": args.tag, "results": result_rows(results)})
    else:
        render_table(results)
        print(summary_line(f"check --tag {args.tag}", settings.node, v, results, None))
    return 1 if v.rank >= Status(args.fail_on).rank else 0


def _list(args: argparse.Namespace) -> int:
    from gcm_checks.checks import load_all
    from gcm_checks.registry import CHECKS

    load_all()
    rows = sorted(CHECKS.values(), key=lambda s: s.id)
    if args.json:
        from gcm_checks.commands._suite import emit_json

        emit_json({"checks": [{"id": s.id, "tags": sorted(s.tags), "needs": s.needs, "doc": s.doc} for s in rows]})
        return 0
    for s in rows:
        print(f"{s.id:28} {','.join(sorted(s.tags)):28} {s.doc.splitlines()[0] if s.doc else ''}")
    return 0
