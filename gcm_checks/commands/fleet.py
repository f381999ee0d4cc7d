"""``gcm-checks fleet report DIR``: stragglers and failures across a
qualification sweep's result files.

Exit status: 0 report printed (stragglers and failures are findings, not
errors - script on ``--json``), 2 the directory does not exist.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="fleet_command", metavar="SUBCOMMAND")
    rep = sub.add_parser("report", help="per-model distributions, straggler GPUs, failing nodes",
                         description="Read every qualification result file under DIR (newest per node) and "
                                     "report per-model metric distributions, straggler GPUs (median/MAD) and "
                                     "nodes that failed.")
    rep.add_argument("directory", metavar="DIR", nargs="?",
                     help="results directory (default: the config's qualify.results_dir)")
    rep.add_argument("--config", metavar="PATH", help="config file, for qualify.results_dir when DIR is not given")
    rep.add_argument("--json", action="store_true", help="print a JSON document instead of text")
    rep.add_argument("--level", choices=("quick", "standard", "deep"), help="only results of this level")
    rep.add_argument("--z", type=float, default=3.5, metavar="Z",
                     help="robust z-score below which a GPU is a straggler (default 3.5)")
    rep.add_argument("--min-drop", type=float, default=0.03, metavar="FRACTION",
                     help="and at least this far below the fleet median (default 0.03 = 3%%)")
    rep.add_argument("--top", type=int, default=50, metavar="N", help="stragglers to list in text (default 50)")


def run(args: argparse.Namespace) -> int:
    if getattr(args, "fleet_command", None) != "report":
        print("usage: gcm-checks fleet report [DIR] [--config PATH] [--json]", file=sys.stderr)
        return 2
    from gcm_checks.fleet import report_dir

    if not args.directory:
        from gcm_checks import config

        try:
            args.directory = config.load(args.config).qualify.results_dir
        except config.ConfigError as e:
            print(f"gcm-checks fleet report: configuration: {e}", file=sys.stderr)
            return 2
    try:
        rep = report_dir(args.directory, level=args.level, z_threshold=args.z, min_drop=args.min_drop)
    except FileNotFoundError as e:
        print(f"gcm-checks fleet report: {e}", file=sys.stderr)
        return 2
    if args.json:
        from gcm_checks.commands._suite import emit_json

        emit_json(rep.to_dict())
    else:
        render(rep, args.top, sys.stdout)
    return 0


def render(rep: Any, top: int, out: Any) -> None:
    print(f"{rep.nodes} nodes, {rep.gpus} GPUs, {rep.qualified} qualified, {len(rep.failing)} failed, "
          f"{len(rep.unknown)} could not tell, {len(rep.stragglers)} straggler findings", file=out)
    if rep.distributions:
        print("\nDISTRIBUTION (per model)", file=out)
        print(f"{'MODEL':16} {'METRIC':12} {'GPUS':>6} {'MEDIAN':>9} {'MAD':>7} {'P05':>9} {'P95':>9} {'MIN':>9}", file=out)
        for d in rep.distributions:
            print(f"{d.model:16} {d.metric:12} {d.n:>6} {d.median:>9.1f} {d.mad:>7.2f} {d.p05:>9.1f} {d.p95:>9.1f} {d.min:>9.1f}", file=out)
    if rep.stragglers:
        print(f"\nSTRAGGLERS (robust z <= -{rep.params['z_threshold']:g} and >= {rep.params['min_drop']:.0%} below the fleet median)", file=out)
        from gcm_checks.commands._table import render as table

        table(("NODE", "GPU", "MODEL", "METRIC", "VALUE", "MEDIAN", "BELOW", "Z"),
              [(s.node, s.subject or s.gpu, s.model, s.metric, f"{s.value:.1f}", f"{s.median:.1f}", f"{s.drop:.1%}",
                f"{s.z:.1f}") for s in rep.stragglers[:top]], out, flexible=(0, 1, 2), align_right=(4, 5, 6, 7))
        if len(rep.stragglers) > top:
            print(f"... {len(rep.stragglers) - top} more (--top N or --json)", file=out)
    for title, rows in (("FAILED", rep.failing), ("COULD NOT TELL (not qualified)", rep.unknown)):
        if rows:
            print(f"\n{title}", file=out)
            from gcm_checks.commands._table import render as table

            table(("NODE", "CHECKS", "FIRST"), [(f.node, ",".join(f.checks), f.first) for f in rows], out,
                  flexible=(1, 2))
    if rep.unreadable:
        print(f"\nUNREADABLE ({len(rep.unreadable)})", file=out)
        for line in rep.unreadable[:20]:
            print(f"  {line}", file=out)
