"""``gcm-checks failures``: failure trends by category, responsibility and node.

Failures only (the outcome, report/outcome.py: a completed, cancelled or
requeued run is none, whatever its category), one sacct call for the whole
range. Each failed run is classified from its
stored gcm-checks report where this machine has one, else from sacct's fields
alone (marked "sacct only"). Nodes that keep appearing in infrastructure-
caused failures are listed as suspects even if every check on them passes.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", default="7d", help="start: 7d, 12h, 30m, 2w or YYYY-MM-DD[THH:MM] (default 7d)")
    parser.add_argument("--until", default=None, help="end, same forms (default: now)")
    parser.add_argument("--partition", "-p", default=None, help="only this partition")
    parser.add_argument("--top", type=int, default=10, help="suspect nodes to list")
    parser.add_argument("--config", metavar="PATH", help="config file (default: discovered, see docs)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    import time

    from gcm_checks.config import ConfigError, load

    try:
        settings = load(args.config)
    except ConfigError as e:
        print(f"gcm-checks failures: configuration error: {e}", file=sys.stderr)
        return 2
    from gcm_checks.accounting.diagnose import failure_trends, parse_since
    from gcm_checks.accounting.trends import render
    from gcm_checks.slurm.parse import SlurmError

    now = time.time()
    try:
        since = parse_since(args.since, now)
        until = parse_since(args.until, now) if args.until else now
    except ValueError as e:
        print(f"gcm-checks failures: {e}", file=sys.stderr)
        return 1
    try:
        doc = failure_trends(settings, since=since, until=until, partition=args.partition, top=args.top)
    except SlurmError as e:
        # No accounting here: we cannot tell, and say so.
        print(f"gcm-checks failures: accounting unavailable: {e}", file=sys.stderr)
        return 3
    if args.json:
        json.dump(doc, sys.stdout, indent=1, sort_keys=True)
        sys.stdout.write("\n")
    else:
        for line in render(doc):
            print(line)
        if doc.get("suspect_completions"):
            # Not failures, but results an admin may want re-checked.
            print(f"\n{len(doc['suspect_completions'])} run(s) completed with a hardware fault on their GPUs: "
                  + ", ".join(doc["suspect_completions"][:10]))
    return 0
