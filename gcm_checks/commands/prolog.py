"""``gcm-checks prolog``: the suite Slurm runs before every job.

Parses the command line, runs ``gcm_checks.prolog`` under the guard every
mode shares (our bugs exit 0) and prints the result. Exit 100
(decide.EXIT_DRAIN) only when the hardware is bad; everything else 0.
"""

from __future__ import annotations

import argparse

from gcm_checks.commands._suite import add_common, render
from gcm_checks.guard import guarded


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)


def run(args: argparse.Namespace) -> int:
    return guarded(args, "prolog", _run)


def _run(args, settings, node, job_id, log, t0) -> int:
    from gcm_checks import prolog

    out = prolog.run(args, settings, node, job_id, log, t0)
    render(args, "prolog", node, out.results, out.verdict, out.decision.reason, out.action, decision=out.decision)
    return out.code
