"""``gcm-checks`` command line: parse, call the library, render.

Subcommands live in ``gcm_checks.commands.<module>`` and are imported only when
chosen, so ``gcm-checks prolog`` pays for nothing but the prolog (rule 7).
Each module exposes ``add_arguments(parser)`` and ``run(args) -> int``.

Exit codes follow pre-commit: 0 ok, 1 check failure / user error, 2 usage or
configuration error, 3 unexpected internal error, 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import List, Optional

# name -> (module, one-line help). Read it in one screen.
COMMANDS = {
    "prolog": ("gcm_checks.commands.prolog", "run the prolog suite (Slurm Prolog=)"),
    "epilog": ("gcm_checks.commands.epilog", "run the epilog suite (Slurm Epilog=)"),
    "health": ("gcm_checks.commands.health", "periodic health run (Slurm HealthCheckProgram=)"),
    "check": ("gcm_checks.commands.check", "run any suite by hand with a readable table"),
    "config": ("gcm_checks.commands.config", "validate or show configuration"),
    "node": ("gcm_checks.commands.node", "node status / drain / resume (gcm drains only)"),
    "xid": ("gcm_checks.commands.xid", "explain XID codes, scan the kernel log"),
    "classify": ("gcm_checks.commands.classify", "classify why a job failed"),
    "notify": ("gcm_checks.commands.notify", "job reports and the notification outbox"),
    "jobs": ("gcm_checks.commands.jobs", "running gcm-run jobs with progress"),
    "qualify": ("gcm_checks.commands.qualify", "qualify this node before production"),
    "fleet": ("gcm_checks.commands.fleet", "fleet report: stragglers across qualification results"),
    "why": ("gcm_checks.commands.why", "why did job N fail?"),
    "refine": ("gcm_checks.commands.refine", "batched sacct refinement of job reports (<= 1 sacct call per interval)"),
    "failures": ("gcm_checks.commands.failures", "failure trends by category and node"),
    "inventory": ("gcm_checks.commands.inventory", "what this node has (PCI bus, NVML, InfiniBand) as a config snippet"),
    "install": ("gcm_checks.commands.install", "install the Slurm entry scripts and config beside slurm.conf"),
    "uninstall": ("gcm_checks.commands.install", "remove what install put in place, in the safe order"),
}


def build_parser(argv: List[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gcm-checks", description="Slurm GPU node health checks.")
    from gcm_checks import __version__

    parser.add_argument("--version", action="version", version=f"gcm-checks {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # Only import the chosen command's module; list the others with their help.
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            mod = _load(module)
            if mod is not None:
                mod.add_arguments(p)
                p.set_defaults(_run=mod.run)
    return parser


def _load(module: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name == module:
            return None
        raise


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    run = getattr(args, "_run", None)
    if run is None:
        print(f"gcm-checks: '{args.command}' is not available in this build", file=sys.stderr)
        return 2
    try:
        code = int(run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code


def entry() -> None:
    """Console-script entry point: exit without waiting for abandoned calls.

    A thread stuck in a wedged NVML call can never be joined, so the process
    leaves with os._exit once output is flushed. Only here, never in main():
    tests and other callers run main() in-process.
    """
    code = main()
    from gcm_checks.deadline import abandoned_calls

    if abandoned_calls():
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    sys.exit(code)
