"""``gcm-checks notify``: job reports and the notification outbox.

    gcm-checks notify flush [--now] [--budget S] [--json] [--strict]
    gcm-checks notify show [--state pending|sent|dead|all] [--json]
    gcm-checks notify report JOB [--format txt|json|html] [--admin]
    gcm-checks notify retry [KEY]

``flush`` is safe to run from cron on every node as often as you like: it
assembles overdue multi-node reports, then sends what is due, each item at
most once. Its exit status is 0 even when a relay is down (the items wait),
unless ``--strict`` asks to know.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="config file (default: discovery, see docs/configuration)")
    sub = parser.add_subparsers(dest="notify_command", metavar="ACTION")
    p = sub.add_parser("flush", help="assemble overdue reports and deliver due notifications")
    p.add_argument("--now", action="store_true", help="ignore retry backoff: try every pending item now")
    p.add_argument("--budget", type=float, default=None, help="seconds to spend (default notify.budget_s)")
    p.add_argument("--strict", action="store_true", help="exit 1 if anything is still pending afterwards")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("show", help="list outbox items")
    p.add_argument("--state", choices=("pending", "sent", "dead", "all"), default="pending")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("report", help="print a job's assembled report")
    p.add_argument("job", help="job id (or id.restart for a requeued job)")
    p.add_argument("--format", choices=("txt", "json", "html"), default="txt")
    p.add_argument("--admin", action="store_true",
                   help="the admin view: every node's findings, could-not-test lines, report-only decisions, notes")
    p = sub.add_parser("retry", help="move dead items back to pending")
    p.add_argument("key", nargs="?", help="one idempotency key (default: all dead items)")
    p.add_argument("--json", action="store_true")


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
        from gcm_checks import notify

        notify.NotifySettings.coerce(settings)  # validate channels before acting
    except Exception as e:  # noqa: BLE001 - ConfigError or a bad channel table
        print(f"gcm-checks notify: configuration: {e}", file=sys.stderr)
        return 2
    return {"flush": _flush, "show": _show, "report": _report, "retry": _retry}[action](args, settings)


def _flush(args: argparse.Namespace, settings: Any) -> int:
    from gcm_checks import notify

    node = getattr(settings, "node", "") or ""
    s = notify.flush(settings, budget_s=args.budget, force=args.now, node=node)
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
        for q in getattr(s, "quarantined", ()):
            print(f"quarantined {q['name']}: {q['why']} (moved to outbox/quarantine, never sent)")
        print(f"{len(s.sent)} sent, {len(s.failed)} failed, {pending} pending")
    if getattr(s, "refused", ""):
        print(f"gcm-checks notify flush: {s.refused}", file=sys.stderr)
        return 1
    return 1 if args.strict and pending else 0


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
    for r in rows:
        nxt = time.strftime("%H:%M:%S", time.localtime(r.get("next_attempt_at") or 0)) if r["state"] == "pending" else ""
        err = f"  last error: {r['last_error']}" if r.get("last_error") else ""
        print(f"{r['state']:<8} {r['key']:<40} attempts={r.get('attempts', 0)} {('next ' + nxt) if nxt else ''}{err}")
    return 0


def _report(args: argparse.Namespace, settings: Any) -> int:
    from gcm_checks.report import report_paths

    path = report_paths(settings, args.job)[f"report.{args.format}"]
    if getattr(args, "admin", False):
        from gcm_checks.report.render import to_text

        path = report_paths(settings, args.job)["report.json"]
        try:
            with open(path, "rb") as f:
                sys.stdout.write(to_text(json.load(f), audience="admin"))
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
