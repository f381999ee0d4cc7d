"""``gcm-checks epilog``: after every job, on every node of the job.

Parses the command line, runs ``gcm_checks.epilog`` under the guard every
mode shares (our bugs exit 0) and prints the result. Exit status: 100
(decide.EXIT_DRAIN) only when the node should be drained but our drain could
not be made; everything else 0 (see gcm_checks/epilog.py).
"""

from __future__ import annotations

import argparse

from gcm_checks.commands._suite import add_common


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    parser.add_argument("--no-report", action="store_true", help="skip the job report and notification")


def run(args: argparse.Namespace) -> int:
    from gcm_checks.guard import guarded

    return guarded(args, "epilog", _run)


def _run(args, settings, node, job_id, log, t0) -> int:
    from gcm_checks import epilog
    from gcm_checks.commands._suite import render

    out = epilog.run(args, settings, node, job_id, log, t0)
    render(args, "epilog", node, out.results, out.verdict, out.drain_reason, out.action, decision=out.decision,
           extra=out.extra)
    return out.code
