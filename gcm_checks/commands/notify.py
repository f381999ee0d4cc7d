"""``gcm-checks notify``: job reports and the notification outbox.

    gcm-checks notify flush [--now] [--budget S] [--json] [--strict]
    gcm-checks notify show [--state pending|sent|dead|all] [--json]
    gcm-checks notify report JOB [--json | --format txt|json|html] [--admin]
    gcm-checks notify retry [KEY] [--json]

(``--config PATH`` before or after the action.) ``flush`` is safe to run from
cron on every node as often as you like: it assembles overdue multi-node
reports, then sends what is due, each item at most once. An item that failed
waits out its backoff (it says when it is due next); ``--now`` tries every
pending item at once, except one held (``not_before``: waiting for
accounting's refinement), which no flush sends early. Its exit status is 0 even when a relay is down (the
items wait), unless ``--strict`` asks to know. Reports and channels:
docs/reports.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Optional


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gcm_checks.commands._conventions import add_config, add_json

    parser.description = (parser.description or "") + " (reports and channels: docs/reports.md)"
    add_config(parser)
    sub = parser.add_subparsers(dest="notify_command", metavar="ACTION")
    p = sub.add_parser("flush", help="assemble overdue reports and deliver due notifications",
                       description="Assemble overdue reports and deliver what is due. A failed delivery waits out its "
                                   "retry backoff; the output says when the next retry is due. --now tries every "
                                   "pending item at once.")
    p.add_argument("--now", action="store_true", help="ignore retry backoff: try every pending item now (held items still wait)")
    p.add_argument("--budget", type=float, default=None, help="seconds to spend (default notify.budget_s)")
    p.add_argument("--strict", action="store_true", help="exit 1 if anything is still pending afterwards")
    add_json(p)
    add_config(p, nested=True)
    p = sub.add_parser("show", help="list outbox items")
    p.add_argument("--state", choices=("pending", "sent", "dead", "all"), default="pending")
    add_json(p)
    add_config(p, nested=True)
    p = sub.add_parser("report", help="print a job's assembled report")
    p.add_argument("job", help="job id (or id.restart for a requeued job)")
    p.add_argument("--format", choices=("txt", "json", "html"), default="txt")
    add_json(p, help="the report as JSON (the same as --format json)")
    add_config(p, nested=True)
    p.add_argument("--admin", action="store_true",
                   help="the admin view: every node's findings, could-not-test lines, report-only decisions, notes")
    p = sub.add_parser("retry", help="move dead items back to pending")
    p.add_argument("key", nargs="?", help="one idempotency key (default: all dead items)")
    add_json(p)
    add_config(p, nested=True)


def _settings(args: argparse.Namespace) -> Any:
    from gcm_checks import config

    return config.load(args.config)


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "notify_command", None)
    if not action:
        print("gcm-checks notify: choose flush, show, report or retry", file=sys.stderr)
        return 2
    try:
        settings = _settings(args)
        settings.notify.channels  # parse the channel table before acting: a bad one stops here
    except Exception as e:  # noqa: BLE001 - ConfigError or a bad channel table
        print(f"gcm-checks notify: configuration: {e}", file=sys.stderr)
        return 2
    return {"flush": _flush, "show": _show, "report": _report, "retry": _retry}[action](args, settings)


def _flush(args: argparse.Namespace, settings: Any) -> int:
    from gcm_checks import notify, report

    node = getattr(settings, "node", "") or ""
    s = notify.flush(settings, budget_s=args.budget, force=args.now, node=node, sweep=report.sweep_and_prune)
    if s.sweep_error:  # delivery went on; the admin running this should still hear it
        print(f"gcm-checks notify: sweep failed: {s.sweep_error}", file=sys.stderr)
    pending = notify.outbox_for(settings).counts()["pending"]
    if args.json:
        print(json.dumps({**s.to_dict(), "pending": pending}, indent=2))
    else:
        for k in s.assembled:
            print(f"assembled  {k}")
        for k in s.sent:
            print(f"sent       {k}")
        for f in s.failed:
            print(f"failed     {f['key']}: {f['error']}")
        for k in s.dead:
            print(f"gave up    {k} (kept in outbox/dead; 'notify retry' to resend)")
        for h in s.held:
            until = time.strftime("%H:%M:%S", time.localtime(h["until"]))
            print(f"held       {h['key']} until {until}" + (f" ({h['why']})" if h.get("why") else ""))
        for q in getattr(s, "quarantined", ()):
            print(f"quarantined {q['name']}: {q['why']} (moved to outbox/quarantine, never sent)")
        print(f"{len(s.sent)} sent, {len(s.failed)} failed, {pending} pending")
        if pending:
            print(_next_due(notify.outbox_for(settings)))
    if getattr(s, "refused", ""):
        print(f"gcm-checks notify flush: {s.refused}", file=sys.stderr)
        return 1
    return 1 if args.strict and pending else 0


def _next_due(box: Any, now: Optional[float] = None) -> str:
    """When the next pending item will be tried: a plain flush waits out the
    backoff and every flush a hold (``not_before``), so say so instead of
    looking like it did nothing."""
    now = time.time() if now is None else now
    items = list(box.items("pending"))
    if not items:
        return "next retry: nothing pending"
    # As Outbox.next_due: the retry time or the hold, whichever is later.
    first = min(max(float(i.get("next_attempt_at") or 0), float(i.get("not_before") or 0)) for i in items)
    if first <= now:
        return "next retry: due now (the next flush sends it)"
    mins = (first - now) / 60
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(first))
    held = [i for i in items if float(i.get("not_before") or 0) > now]
    tail = "" if len(held) == len(items) else "; 'gcm-checks notify flush --now' retries now"
    if held:
        tail += f"; {len(held)} held (not_before, e.g. until accounting refines it): --now does not override a hold"
    return f"next retry due at {when} (in {mins:.0f} min){tail}"


def _show(args: argparse.Namespace, settings: Any) -> int:
    from gcm_checks import notify

    box = notify.outbox_for(settings)
    states = ("pending", "sent", "dead") if args.state == "all" else (args.state,)
    rows = []
    for st in states:
        for item in box.items(st):
            rows.append({"state": st, **{k: v for k, v in item.items() if k != "payload"}})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no {args.state} items in {box.root}")
    from gcm_checks.commands._table import render

    render(("STATE", "KEY", "ATTEMPTS", "NEXT TRY", "LAST ERROR"),
           [(r["state"], r["key"], r.get("attempts", 0),
             time.strftime("%H:%M:%S", time.localtime(max(float(r.get("next_attempt_at") or 0), float(r.get("not_before") or 0))))
             + (" held" if r.get("not_before") else "") if r["state"] == "pending" else "-",
             r.get("last_error") or "-") for r in rows], flexible=(1, 4), gap=2)
    return 0


REPORT_MAX_BYTES = 64 << 20  # as accounting.refine's reader of report.json


def _report(args: argparse.Namespace, settings: Any) -> int:
    from gcm_checks.report import report_paths

    if getattr(args, "json", False):
        args.format = "json"
    path = report_paths(settings, args.job)[f"report.{args.format}"]
    if getattr(args, "admin", False):
        from gcm_checks.jsonfile import parse_json, read_bytes
        from gcm_checks.report.render import to_text

        path = report_paths(settings, args.job)["report.json"]
        try:
            # Bounded like accounting's reader of the same file: the report
            # holds user-controlled log tails (rule 5: bound every size).
            doc = parse_json(read_bytes(path, max_bytes=REPORT_MAX_BYTES), max_bytes=REPORT_MAX_BYTES)
            sys.stdout.write(to_text(doc, audience="admin"))
            return 0
        except (OSError, ValueError) as e:
            print(f"gcm-checks notify: no readable report for job {args.job} on this node ({path}: {e})", file=sys.stderr)
            return 1
    try:
        with open(path, "rb") as f:
            sys.stdout.write(f.read().decode("utf-8", "replace"))
    except FileNotFoundError:
        print(f"gcm-checks notify: no report for job {args.job} on this node ({path})", file=sys.stderr)
        return 1
    return 0


def _retry(args: argparse.Namespace, settings: Any) -> int:
    from gcm_checks import notify

    n = notify.outbox_for(settings).retry_dead(args.key)
    print(json.dumps({"requeued": n}) if args.json else f"{n} item(s) back in pending")
    return 0
