"""``gcm-checks jobs``: running gcm-run jobs with progress bars, ETA, last loss.

Reads the status files that ``gcm-run`` keeps next to each log, found through
the per-user index (``~/.local/state/gcm-run/active``, ``GCM_RUN_INDEX``) or
given directly. Thin: the data comes from ``gcm_checks.wrapper.status``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import List, Optional


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="status files (<log>.status.json) or directories holding them, besides the index")
    parser.add_argument("--index", help="index directory (default: $GCM_RUN_INDEX or ~/.local/state/gcm-run/active)")
    parser.add_argument("--all", action="store_true", help="also show finished and lost runs")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    from gcm_checks.commands._conventions import add_config

    add_config(parser, used=False)
    parser.add_argument("--width", type=int, default=20, help="progress bar width")


def run(args: argparse.Namespace) -> int:
    import os

    from gcm_checks.wrapper import status as st

    extra: List[str] = []
    for p in args.paths:
        if os.path.isdir(p):
            extra.extend(st.iter_status_files(p))
        else:
            extra.append(p)
    runs = st.list_runs(args.index or st.index_dir(), tuple(extra))
    if not args.all:
        runs = [r for r in runs if r.get("state") in ("running", "starting")]
    runs.sort(key=lambda r: r.get("started_ts") or 0)
    if args.json:
        json.dump({"runs": runs}, sys.stdout, indent=1, sort_keys=True, default=str)
        sys.stdout.write("\n")
        return 0
    if not runs:
        print("no running gcm-run jobs" + ("" if args.all else " (use --all to include finished ones)"))
        return 0
    for line in render(runs, width=args.width, now=time.time()):
        print(line)
    return 0


def bar(percent: Optional[float], width: int) -> str:
    if percent is None:
        return "[" + "?" * width + "]"
    filled = int(round(width * max(0.0, min(100.0, percent)) / 100.0))
    return "[" + "#" * filled + "." * (width - filled) + "]"


def _clean(text: object, limit: int = 40) -> str:
    # Names and messages come from users' programs: printable only, bounded,
    # so a crafted run name cannot drive an admin's terminal.
    from gcm_checks.text import one_line

    return one_line(text, limit)


def render(runs: List[dict], *, width: int = 20, now: float) -> List[str]:
    from gcm_checks.wrapper.watch import fmt_duration

    rows = []
    for r in runs:
        p = r.get("progress") or {}
        job = (r.get("slurm") or {}).get("job_id") or "-"
        name = r.get("name") or " ".join(str(a) for a in (r.get("argv") or [])[:2])
        step = ""
        if p.get("step") is not None:
            step = f"{p['step']}" + (f"/{p['total']}" if p.get("total") else "")
        pct = p.get("percent")
        eta = fmt_duration(p.get("eta_s")) if p.get("eta_s") is not None else "-"
        if p.get("stalled_s"):
            eta = f"stalled {fmt_duration(p['stalled_s'])}"
        loss = p.get("loss")
        loss_s = "-" if loss is None else (f"{loss:.4g}" if isinstance(loss, (int, float)) else str(loss))
        state = r.get("state", "?")
        flags = [a.get("kind") for a in (r.get("alerts") or []) if a.get("kind") != "resumed"]
        if state not in ("running", "starting"):
            ex = r.get("exit") or {}
            state = f"{state}:{ex.get('signal') or ex.get('code')}" if ex else state
        age = fmt_duration(now - float(r.get("updated_ts") or now))
        from gcm_checks.commands.jobs_spark import loss_sparkline, slow_text

        rows.append((
            str(job), _clean(name, 28), state, bar(pct, width),
            "-" if pct is None else f"{pct:5.1f}%", step or "-", eta, loss_s, loss_sparkline(p) or "-",
            ",".join(sorted(set(f for f in flags if f))) or "-", _clean(slow_text(r), 40) or "-", r.get("host", "?"), age,
        ))
    head = ("JOB", "NAME", "STATE", "PROGRESS", "PCT", "STEP", "ETA", "LOSS", "LOSS CURVE", "ALERTS", "SLOW", "HOST",
            "UPDATED")
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    return [fmt.format(*head)] + [fmt.format(*row) for row in rows]
