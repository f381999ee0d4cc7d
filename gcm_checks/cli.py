"""``gcm-checks`` command line: parse, call the library, render.

Subcommands live in ``gcm_checks.commands.<module>`` and are imported only when
chosen, so ``gcm-checks prolog`` pays for nothing but the prolog (rule 7).
Each module exposes ``add_arguments(parser)`` and ``run(args) -> int``.

Exit statuses: see EXIT_TABLE (also in ``--help`` and docs/slurm.md). The
node modes Slurm runs (prolog, epilog, health) exit 0 for anything but a
drain decision (``decide.EXIT_DRAIN``): a crash, a usage error, an error
while reporting an error, all end as 0 plus one stderr line slurmd logs.
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


# The modes slurmd runs: their exit status is a contract with Slurm.
NODE_MODES = ("prolog", "epilog", "health")
EXIT_DRAIN = 100  # == decide.EXIT_DRAIN (not imported: keep --help cheap)

EXIT_TABLE = """exit status:
  prolog, epilog, health (run by slurmd; the entry scripts enforce it too):
    0    anything but a drain decision: healthy, warn, unknown, report-only,
         a broken config (defaults ran in report-only), our own crash
    100  drain decision: prolog found bad hardware (Slurm requeues the job;
         the node is drained 'gcm: ...'), epilog could not make the drain it
         decided (Slurm drains 'Epilog error'), health drained the node
  other commands:
    0 ok, 1 check failed or refused ('config check': the config is bad),
    2 usage or configuration error, 3 internal error, 130 interrupted
"""


def build_parser(argv: List[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gcm-checks", description="Slurm GPU node health checks.",
                                     epilog=EXIT_TABLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    from gcm_checks import __version__

    parser.add_argument("--version", action="version", version=f"gcm-checks {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    # Only import the chosen command's module; list the others with their help.
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text, epilog=EXIT_TABLE,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if name == chosen:
            mod = _load(module)
            if mod is not None:
                mod.add_arguments(p)
                p.set_defaults(_run=mod.run)
                _exit_table_everywhere(p)
    return parser


def _exit_table_everywhere(parser: argparse.ArgumentParser) -> None:
    """Every action's --help (``notify flush``, ``node drain``, ...) ends with
    the exit-status table too; the commands define only their arguments."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                if child.epilog is None:
                    child.epilog = EXIT_TABLE
                child.formatter_class = argparse.RawDescriptionHelpFormatter
                _exit_table_everywhere(child)


def _load(module: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name == module:
            return None
        raise


def _say(line: str) -> None:
    """One line on stderr; never raises (stderr may be closed or on a full disk).

    ``logs.slurmd_line`` for the last-resort handler: it must work even when
    importing the rest of gcm_checks is what failed, so it imports nothing."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        pass


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    mode = next((a for a in argv if not a.startswith("-")), None)
    mode = mode if mode in COMMANDS else None
    node_mode = mode in NODE_MODES
    try:
        code = _main(argv)
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    except SystemExit as e:  # argparse: usage errors and --help
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
        if node_mode and code not in (0, EXIT_DRAIN):
            _say(f"gcm-checks {mode}: UNKNOWN - usage error (exit {code}); no checks run, nothing changed")
    except BaseException as e:  # noqa: BLE001 - the contract: no traceback reaches slurmd as non-zero
        try:
            what = f"{type(e).__name__}: {e}"
        except BaseException:  # noqa: BLE001 - even str(e) can fail
            what = type(e).__name__
        _say(f"gcm-checks {mode or ''}: UNKNOWN - internal error: {what}"[:2000])
        code = 0 if node_mode else 3
    if node_mode and code not in (0, EXIT_DRAIN):
        code = 0
    return code


def _main(argv: List[str]) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    run = getattr(args, "_run", None)
    if run is None:
        print(f"gcm-checks: '{args.command}' is not available in this build", file=sys.stderr)
        return 2
    return int(run(args) or 0)


def entry() -> None:
    """Console-script entry point: exit without waiting for abandoned calls.

    A thread stuck in a wedged NVML call can never be joined, so the process
    leaves with os._exit once output is flushed. Only here, never in main():
    tests and other callers run main() in-process. A flush that fails (stdout
    on a full disk, a closed pipe) must not turn the status into Python's 120.
    """
    code = main()
    from gcm_checks.deadline import abandoned_calls

    flushed = True
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            flushed = False
    if abandoned_calls() or not flushed:
        os._exit(code)
    sys.exit(code)
