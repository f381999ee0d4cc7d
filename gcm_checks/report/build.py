"""Assemble the report dict from the job, every node's evidence and log tails.

Pure except for ``collect_logs``, which reads the user's logs through
``gcm_checks.safeio`` (never as root through a user's symlink).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence

from gcm_checks.report.model import SCHEMA, SCHEMA_VERSION, JobInfo

if TYPE_CHECKING:
    from gcm_checks.config.types import Report


# Classifier categories that do not make a job "failed" for the report and
# the on_failure policy (ids from gcm_checks.classify.taxonomy).
NOT_FAILURES = frozenset({"success", "unknown", "cancelled_user"})


def collect_logs(job: JobInfo, settings: "Report") -> List[Dict[str, Any]]:
    """Bounded tails of the job's stdout/stderr, each cut said out loud.

    The budget is per file and in total; what is cut is named with its full
    size and path so nobody mistakes a tail for the whole log (issue 6, 5).
    """
    from gcm_checks import safeio
    from gcm_checks.text import clean_text

    logs: List[Dict[str, Any]] = []
    left = max(0, int(settings.log_total_bytes))
    wanted = [("stdout", job.stdout)]
    if job.stderr and job.stderr != job.stdout:
        wanted.append(("stderr", job.stderr))
    for name, path in wanted:
        if not path:
            continue
        cap = min(int(settings.log_tail_bytes), left)
        entry: Dict[str, Any] = {"name": name, "path": path, "size": None, "shown_bytes": 0, "truncated": False, "text": "", "note": ""}
        if cap <= 0:
            entry["note"] = f"{name}: not shown, report log budget spent; full log at {path}"
            logs.append(entry)
            continue
        if job.uid is None and os.geteuid() == 0:
            # Without the owner we can neither check ownership nor drop to
            # the user: reading as root could leak a root-only file.
            entry["note"] = f"{name}: not read: job uid unknown ({path})"
            logs.append(entry)
            continue
        tail = safeio.read_tail(path, uid=job.uid, gid=job.gid, max_bytes=cap, timeout=settings.read_timeout_s, user=job.user)
        entry["size"] = tail.size if not tail.error or tail.size else None
        if tail.error:
            entry["note"] = f"{name}: {tail.error} ({path})"
            logs.append(entry)
            continue
        left -= len(tail.data)
        entry["shown_bytes"] = len(tail.data)
        entry["truncated"] = tail.truncated
        entry["text"] = clean_text(_from_line_start(tail.data) if tail.truncated else tail.data)
        if tail.truncated:
            entry["note"] = (
                f"{name}: last {safeio.human_bytes(len(tail.data))} of {safeio.human_bytes(tail.size)} shown; "
                f"full log at {path}"
            )
        logs.append(entry)
    return logs


def _from_line_start(data: bytes) -> bytes:
    # A tail starts mid-line (maybe mid-UTF-8 char); drop the fragment.
    nl = data.find(b"\n")
    return data[nl + 1 :] if 0 <= nl < len(data) - 1 else data


def build_report(
    job: JobInfo,
    contributions: Mapping[str, Mapping[str, Any]],
    *,
    classification: Optional[Mapping[str, Any]] = None,
    logs: Sequence[Mapping[str, Any]] = (),
    generated_by: str = "",
    notes: Sequence[str] = (),
    now: Optional[float] = None,
    run_status: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The versioned report dict (schema in docs/reports.md)."""
    now = time.time() if now is None else now
    node_names = list(job.nodes) or sorted(contributions)
    nodes = []
    for n in node_names:
        c = contributions.get(n)
        nodes.append({"node": n, "contributed": c is not None, "evidence": dict((c or {}).get("evidence") or {})})
    for n in sorted(set(contributions) - set(node_names)):
        nodes.append({"node": n, "contributed": True, "evidence": dict(contributions[n].get("evidence") or {})})
    missing = [x["node"] for x in nodes if not x["contributed"]]
    if classification is None:
        # Any node may have carried the classification; the first one wins.
        for n in node_names:
            cls = ((contributions.get(n) or {}).get("evidence") or {}).get("classification")
            if cls:
                classification = cls
                break
    drains = [{"node": x["node"], **_as_dict(d)} for x in nodes for d in x["evidence"].get("drains") or ()]
    job_failed = job.failed()
    # The epilog sees a timed-out or preempted job as COMPLETING with exit
    # code 0 (facts note); only the classifier (Reason=TimeLimit) knows.
    cls_failed = bool(classification) and str(classification.get("category")) not in NOT_FAILURES
    all_notes = list(notes)
    if missing:
        all_notes.append(f"no evidence from {len(missing)} node(s): {', '.join(missing)} (their epilog did not report in time)")
    report: Dict[str, Any] = {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "generated_at": _iso(now),
        "generated_by": generated_by,
        "job": job.to_dict(),
        "context": context_of(nodes),
        "classification": dict(classification) if classification else None,
        "nodes": nodes,
        "missing_nodes": missing,
        "drains": drains,
        "logs": [dict(x) for x in logs],
        "notes": all_notes,
    }
    if run_status:
        report["run"] = dict(run_status)
    report["outcome"] = outcome_dict(report, job_failed=job_failed, cls_failed=cls_failed)
    return report


def context_of(nodes: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """Run facts the nodes' epilogs saw: report-only mode, a requeue."""
    ev = [n.get("evidence") or {} for n in nodes]
    report_only = any(e.get("report_only") for e in ev) or any(
        d.get("report_only") or str(d.get("action", "")).startswith("report-only")
        for e in ev for d in e.get("drains") or () if isinstance(d, Mapping))
    derived = max((int(e["derived_exit_code"]) for e in ev if str(e.get("derived_exit_code", "")).isdigit()), default=0)
    out = {"report_only": bool(report_only), "requeued": any(bool(e.get("requeued")) for e in ev)}
    if derived:
        out["derived_exit_code"] = derived  # a step failed while the batch script exited 0
    return out


def outcome_dict(report: Mapping[str, Any], *, job_failed: Optional[bool] = None, cls_failed: Optional[bool] = None,
                 state: Optional[str] = None, elapsed: str = "") -> Dict[str, Any]:
    """``report["outcome"]``: the outcome (outcome.py) plus the facts it came from.

    ``failed`` keeps its old meaning for the notification policy: the user
    is told under ``on_failure`` (the outcome is mailed by default).
    """
    from gcm_checks.report.outcome import from_report, our_drains

    o = from_report(report, state=state, elapsed=elapsed)
    job = report.get("job") or {}
    prev = report.get("outcome") or {}
    d = o.to_dict()
    d.update(
        failed=o.mailed,
        job_failed=bool(prev.get("job_failed")) if job_failed is None else job_failed,
        classified_failure=bool(prev.get("classified_failure")) if cls_failed is None else cls_failed,
        state=o.state or job.get("state") or "",
        exit_status=job.get("exit_status") or "",
        nodes_drained=sorted({str(x.get("node")) for x in our_drains(report.get("nodes") or ())}),
    )
    return d


def _as_dict(d: Any) -> Dict[str, Any]:
    return dict(d) if isinstance(d, Mapping) else {"reason": str(d)}


def _iso(t: Optional[float]) -> str:
    if t is None:
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def validate(report: Mapping[str, Any]) -> List[str]:
    """Problems with a report dict against schema version 1 (empty = valid).

    Small on purpose: consumers check ``schema``/``version`` and the keys they
    read; this keeps us honest about what version 1 promises.
    """
    errs = []
    required = {
        "schema": str, "version": int, "generated_at": str, "generated_by": str, "job": dict,
        "outcome": dict, "nodes": list, "missing_nodes": list, "drains": list, "logs": list, "notes": list,
    }
    for k, t in required.items():
        if k not in report:
            errs.append(f"missing {k}")
        elif not isinstance(report[k], t):
            errs.append(f"{k}: expected {t.__name__}")
    if report.get("schema") != SCHEMA:
        errs.append("schema: not a gcm-checks job report")
    if "classification" not in report or not isinstance(report["classification"], (dict, type(None))):
        errs.append("classification: expected object or null")
    for k in ("job_id", "user", "nodes", "exit_status", "key"):
        if k not in (report.get("job") or {}):
            errs.append(f"job.{k} missing")
    for k in ("failed", "exit_status", "state"):
        if k not in (report.get("outcome") or {}):
            errs.append(f"outcome.{k} missing")
    for log in report.get("logs") or ():
        for k in ("name", "path", "size", "shown_bytes", "truncated", "text", "note"):
            if k not in log:
                errs.append(f"logs[].{k} missing")
    return errs
