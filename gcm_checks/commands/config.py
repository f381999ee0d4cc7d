"""``gcm-checks config check [--config PATH]`` and ``config show [--config PATH] [--node NAME]``.

A positional PATH (the old spelling) still works, with a deprecation note.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, List

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="config_cmd", metavar="ACTION")
    from gcm_checks.commands._conventions import add_config, add_json

    c = sub.add_parser("check", help="validate a config file (default: the discovered one)")
    s = sub.add_parser("show", help="print the configuration resolved for one node")
    s.add_argument("--node", help="node name (default: this node)")
    for p in (c, s):
        add_config(p)
        add_json(p)
        p.add_argument("path", nargs="?", help=argparse.SUPPRESS)  # deprecated: use --config PATH


# What a prolog, epilog or health run does with a config that fails here.
BROKEN_MEANS = ("prolog, epilog and health run the hardware checks with built-in defaults in report-only: "
                "nothing is drained, the log has a config_error line, the gcm_config_error metric is 1")


# What the nodes do with an unknown id in checks.disabled (gcm_checks.suite).
UNKNOWN_ID_MEANS = ("the id is ignored with a config_warning line in the log; every other setting applies and "
                    "the check the id was meant to disable still runs")


def _error(args: argparse.Namespace, e: Any, on_nodes: str) -> int:
    if args.json:
        print(json.dumps({"ok": False, "file": e.source, "key": e.key, "expected": e.expected, "error": str(e),
                          "on_nodes": on_nodes}))
    else:
        print(f"config error: {e}", file=sys.stderr)
        print(f"on the nodes: {on_nodes}", file=sys.stderr)
    return 1


def advice(settings: "Settings") -> List[str]:
    """Valid but probably not meant: each a sentence for the admin."""
    out = []
    budget = settings.budget_s
    gpu = settings.gpu
    for key, v in (("gpu.nvml_timeout_s", gpu.nvml_timeout_s), ("gpu.nvml_init_timeout_s", gpu.nvml_init_timeout_s)):
        if v >= budget * 0.8:
            out.append(f"{key} ({v:g}s) leaves no room in budget_s ({budget:g}s): a hung GPU is then never given its "
                       f"whole deadline and is reported unknown, not failed")
    return out


def run(args: argparse.Namespace) -> int:
    from gcm_checks import config

    cmd = getattr(args, "config_cmd", None)
    if cmd is None:
        print("usage: gcm-checks config {check,show} [PATH]", file=sys.stderr)
        return 2
    if getattr(args, "path", None):
        print("gcm-checks config: a positional PATH is deprecated; use --config PATH", file=sys.stderr)
    path = config.find_config(getattr(args, "config", None) or getattr(args, "path", None))
    try:
        data = config.parse_file(path) if path else {}
        settings = config.resolve(data, getattr(args, "node", None) or config.node_name(), path or "(defaults)")
    except config.ConfigError as e:
        return _error(args, e, BROKEN_MEANS)
    if cmd == "check":
        try:
            config.check_ids_known(data, path or "(defaults)")
        except config.ConfigError as e:
            return _error(args, e, UNKNOWN_ID_MEANS)
        nodes = len(data.get("nodes") or [])
        warnings = advice(settings)
        if args.json:
            print(json.dumps({"ok": True, "file": path or "(defaults)", "node_sections": nodes, "warnings": warnings}))
        else:
            print(f"{path or '(built-in defaults)'}: ok ({nodes} node section(s))")
            for w in warnings:
                print(f"warning: {w}", file=sys.stderr)
        return 0
    doc = {"source": settings.source, "node": settings.node, "matched_sections": settings.matched_sections,
           "settings": settings.data}
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        import yaml

        print(f"# {settings.source} resolved for node {settings.node} (node sections matched: {settings.matched_sections})")
        print(yaml.safe_dump(settings.data, sort_keys=False).rstrip())
    return 0
