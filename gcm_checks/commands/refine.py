"""``gcm-checks refine``: the batched accounting refinement pass (issue 9).

Cheap to call often: it returns at once unless ``accounting.interval_s``
passed since the last pass, so EpilogSlurmctld may call it for every job and
a systemd timer every minute; either way sacct is asked at most once per
interval for the whole cluster. Exit 0 always, except 2 for a config error:
a refinement problem is logged, never a job's or node's failure.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="PATH", help="config file (default: discovered, see docs)")
    parser.add_argument("--node", help="this node's Slurm name (for accounting.designated_node)")
    parser.add_argument("--force", action="store_true", help="run now even if the interval has not passed")
    parser.add_argument("--no-deliver", action="store_true", help="do not flush released notifications")
    parser.add_argument("--json", action="store_true", help="machine-readable summary")
    parser.add_argument("--quiet", action="store_true", help="print nothing unless something failed")


def run(args: argparse.Namespace) -> int:
    from gcm_checks.config import ConfigError, load

    try:
        settings = load(args.config, args.node)
    except ConfigError as e:
        print(f"gcm-checks refine: configuration error: {e}", file=sys.stderr)
        return 2
    from gcm_checks.accounting.refine import refine_pass

    s = refine_pass(settings, node=settings.node, force=args.force, deliver=not args.no_deliver)
    if args.json:
        json.dump(s.to_dict(), sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
    elif not args.quiet or s.errors:
        print(summary_line(s))
    for e in s.errors:
        print(f"gcm-checks refine: {e}", file=sys.stderr)
    return 0


def summary_line(s) -> str:
    if not s.ran:
        return f"gcm-checks refine: skipped: {s.skipped}"
    changed = ", ".join(f"{c['key']} {c['from']}->{c['to']}" for c in s.refined) or "none"
    return (f"gcm-checks refine: {s.sacct_calls} sacct call, {s.runs_seen} runs ended; refined: {changed}; "
            f"confirmed {len(s.confirmed)}, deferred {len(s.deferred)}, no report {s.no_report_count}, "
            f"released {len(s.released)} notification(s)")
