"""The flags every command takes, spelled once: ``--config PATH`` and ``--json``.

``tests/test_cli_help.py`` walks every subcommand's ``--help`` and fails for a
command without them.
"""

from __future__ import annotations

import argparse

CONFIG_HELP = "config file (default: discovered - $GCM_CHECKS_CONFIG, gcm-checks.yaml beside slurm.conf, /etc/gcm-checks/config.yaml)"
UNUSED_CONFIG_HELP = "config file; accepted for uniformity, this command reads no configuration"
JSON_HELP = "print one JSON document instead of text (full values: text tables are cut to the terminal)"


def add_config(parser: argparse.ArgumentParser, *, used: bool = True, nested: bool = False) -> None:
    """``nested``: a subcommand under a parent that also takes --config; its
    default must not overwrite the parent's value, so either position works."""
    parser.add_argument("--config", metavar="PATH", help=CONFIG_HELP if used else UNUSED_CONFIG_HELP,
                        default=argparse.SUPPRESS if nested else None)


def add_json(parser: argparse.ArgumentParser, help: str = JSON_HELP) -> None:
    parser.add_argument("--json", action="store_true", help=help)
