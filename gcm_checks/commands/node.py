"""``gcm-checks node status|drain|resume``: an admin's view of gcm in Slurm.

``status`` shows, per node, Slurm's state and reason, who owns the drain
(``gcm`` when the reason starts ``gcm:``), gcm's features and the last health
summary gcm left in the node's ``Extra``. ``drain`` drains with a ``gcm:``
reason and never overwrites someone else's drain; ``resume`` lifts only gcm
drains unless ``--force``. Exit status: 0 done, 1 refused or Slurm error,
2 usage.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Dict, List

from gcm_checks.commands._suite import emit_json

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="node_command", metavar="ACTION")
    st = sub.add_parser("status", help="Slurm state, reason, owner, gcm features and last gcm result per node")
    st.add_argument("nodes", nargs="*", metavar="NODE", help="node names or hostlist expressions (default: this node; --all for every node)")
    st.add_argument("--all", action="store_true", help="every node in the cluster")
    dr = sub.add_parser("drain", help="drain NODE with a gcm: reason (never overwrites another drain)")
    dr.add_argument("node", metavar="NODE")
    dr.add_argument("--reason", required=True, help="why; stored as 'gcm: <reason>'")
    dr.add_argument("--force", action="store_true", help="replace a drain that gcm does not own")
    rs = sub.add_parser("resume", help="resume NODE if gcm drained it")
    rs.add_argument("node", metavar="NODE")
    rs.add_argument("--force", action="store_true", help="also resume a drain gcm does not own (warns)")
    for p in (st, dr, rs):
        p.add_argument("--config", metavar="PATH", help="config file (default: discovered)")
        p.add_argument("--json", action="store_true", help="print JSON")
    for p in (dr, rs):
        p.add_argument("--dry-run", action="store_true", help="print the scontrol command instead of running it")


def run(args: argparse.Namespace) -> int:
    cmd = getattr(args, "node_command", None)
    if cmd is None:
        print("gcm-checks node: choose status, drain or resume (see --help)", file=sys.stderr)
        return 2
    from gcm_checks import config, slurm

    try:
        settings = config.load(args.config)
    except config.ConfigError as e:
        print(f"gcm-checks node: configuration error: {e}", file=sys.stderr)
        return 2
    log = _StderrLog()
    backend = slurm.backend_from_settings(settings, dry_run=getattr(args, "dry_run", False), out=sys.stderr, log=None)
    if cmd == "status":
        return _status(args, settings, backend)
    if cmd == "drain":
        return _drain(args, settings, backend, log)
    return _resume(args, settings, backend, log)


class _StderrLog:
    """The ownership functions log their decisions as events with fields; an
    admin sees each on stderr as one line: ``slurm_drain_kept node=n1 ...``."""

    def _p(self, event: str, **fields: Any) -> None:
        words = [f"{k}={v!r}" if isinstance(v, str) and (not v or " " in v) else f"{k}={v}" for k, v in fields.items()]
        print(" ".join([event] + words), file=sys.stderr)

    info = warning = error = _p


def _state_dir(settings: "Settings") -> str:
    import os

    return os.path.expanduser(settings.state_dir)


def status_row(info: Any, local_drain: Any = None, would: Any = None) -> Dict[str, Any]:
    from gcm_checks.slurm.features import GCM_FEATURES, gcm_summary

    owner = None
    if info.drained or info.reason:
        owner = "gcm" if info.gcm_owned else (info.reason_user or "other")
    last = gcm_summary(info.extra)  # text or JSON Extra (extra_constraints)
    return {
        "node": info.name,
        "state": info.state,
        "reason": info.reason,
        "owner": owner,
        "gcm_features": [f for f in info.active_features if f in GCM_FEATURES],
        "last_gcm": last,
        "local_drain_record": local_drain,
        # report-only (or a broken config): what gcm decided but did not do
        "would_drain": would,
    }


def _status(args: argparse.Namespace, settings: "Settings", backend: Any) -> int:
    from gcm_checks import slurm

    names: List[str] = list(args.nodes)
    if not names and not args.all:
        names = [settings.node]
    try:
        infos = slurm.list_nodes(backend, names)
    except slurm.SlurmError as e:
        print(f"gcm-checks node status: Slurm did not answer: {e}", file=sys.stderr)
        return 1
    sd = _state_dir(settings)
    from gcm_checks.state import would_drain_record

    rows = [status_row(i, slurm.drain_record(sd, i.name) if i.name == settings.node else None,
                       would_drain_record(sd, i.name) if i.name == settings.node else None) for i in infos]
    if args.json:
        emit_json({"nodes": rows})
        return 0
    _render(rows)
    return 0


def _render(rows: List[Dict[str, Any]]) -> None:
    head = ("NODE", "STATE", "OWNER", "GCM FEATURES", "LAST GCM", "REASON")
    table = [head] + [
        (r["node"], r["state"], r["owner"] or "-", ",".join(r["gcm_features"]) or "-", r["last_gcm"] or "-", r["reason"] or "-")
        for r in rows
    ]
    from gcm_checks.commands._table import render

    render(table[0], table[1:], flexible=(3, 4, 5), gap=2)
    for r in rows:
        w = r.get("would_drain")
        if w:
            import time as _t

            when = _t.strftime("%Y-%m-%dT%H:%M:%S", _t.localtime(float(w.get("time") or 0)))
            print(f"{r['node']}: would drain ({w.get('why')}, {w.get('mode')} at {when}): {w.get('reason')}")


def _drain(args: argparse.Namespace, settings: "Settings", backend: Any, log: Any) -> int:
    from gcm_checks import slurm

    text = args.reason[len(slurm.GCM_PREFIX):].strip() if args.reason.startswith(slurm.GCM_PREFIX) else args.reason
    reason = slurm.sanitize_reason(f"{slurm.GCM_PREFIX} {text}")
    if args.force:
        try:
            info = backend.node_info(args.node)
        except slurm.SlurmError as e:
            print(f"gcm-checks node drain: Slurm did not answer: {e}", file=sys.stderr)
            return 1
        if info.drained and not info.gcm_owned:
            print(f"warning: --force: replacing {info.reason_user or '?'}'s reason {info.reason!r}", file=sys.stderr)
            try:
                backend.drain(args.node, reason)
            except slurm.SlurmError as e:
                print(f"gcm-checks node drain: {e}", file=sys.stderr)
                return 1
            out = slurm.DrainOutcome("drained", reason, "forced", info.reason)
        else:
            out = slurm.apply_drain(backend, args.node, reason, log=log)
    else:
        # No state_dir: this runs on an admin host, and health mode must
        # never auto-resume a drain an admin asked for.
        out = slurm.apply_drain(backend, args.node, reason, log=log)
    doc = {"node": args.node, "action": out.action, "reason": out.reason, "previous_reason": out.previous_reason, "detail": out.detail}
    if args.json:
        emit_json(doc)
    else:
        print(_drain_text(doc))
    return 0 if out.action in ("drained", "already", "would_drain") else 1


def _drain_text(doc: Dict[str, Any]) -> str:
    a = doc["action"]
    if a == "drained":
        return f"{doc['node']}: drained: {doc['reason']}"
    if a == "already":
        return f"{doc['node']}: already drained with this reason"
    if a == "kept_foreign":
        return f"{doc['node']}: NOT drained again: already drained by someone else ({doc['previous_reason']!r}); use --force to replace"
    if a == "would_drain":
        return f"{doc['node']}: would drain: {doc['reason']}; dry run, nothing changed"
    return f"{doc['node']}: {a}: {doc['detail']}"


def _resume(args: argparse.Namespace, settings: "Settings", backend: Any, log: Any) -> int:
    from gcm_checks import slurm

    if args.force:
        print(f"warning: --force resumes {args.node} even if the drain is not gcm's", file=sys.stderr)
    sd = _state_dir(settings) if args.node == settings.node else None
    out = slurm.apply_resume(backend, args.node, force=args.force, state_dir=sd, log=log)
    doc = {"node": args.node, "action": out.action, "previous_reason": out.previous_reason, "detail": out.detail}
    if args.json:
        emit_json(doc)
    else:
        msgs = {
            "resumed": f"{args.node}: resumed (was: {out.previous_reason})",
            "not_drained": f"{args.node}: not drained ({out.detail}); nothing to do",
            "kept_foreign": f"{args.node}: NOT resumed: drained by someone else ({out.previous_reason!r}); use --force",
            "would_resume": f"{args.node}: would resume (drained: {out.previous_reason}); dry run, nothing changed",
        }
        print(msgs.get(out.action, f"{args.node}: {out.action}: {out.detail}"))
    return 0 if out.action in ("resumed", "would_resume", "not_drained") else 1
