"""``gcm-checks why JOBID``: why did job N fail? For users and admins.

Gathers sacct (all runs), ``scontrol show job`` while slurmctld still knows
the job, the job's log tails (read as the job's user when run as root, with
the same root-safety rules as the epilog) and any node evidence gcm-checks
recorded, then classifies. Works for jobs gcm-checks never saw.
Exit 0 with an answer, 1 when the job is unknown, 2 for a config error.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job_id", metavar="JOBID", help="Slurm job id (an array task as 123_4)")
    parser.add_argument("--run", type=int, default=None,
                        help="which run of a requeued job (0 = first; default: the last)")
    parser.add_argument("--config", metavar="PATH", help="config file (default: discovered, see docs)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    from gcm_checks.config import ConfigError, load

    try:
        settings = load(args.config)
    except ConfigError as e:
        print(f"gcm-checks why: configuration error: {e}", file=sys.stderr)
        return 2
    from gcm_checks.accounting.diagnose import explain, render_why

    doc = explain(args.job_id, settings, run=args.run)
    if args.json:
        json.dump(doc, sys.stdout, indent=1, sort_keys=True, default=str)
        sys.stdout.write("\n")
    else:
        for line in render_why(doc):
            print(line)
    return 0 if doc.get("found") else 1
