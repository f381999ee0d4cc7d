"""Log records for a site's log backend: job reports and failure events.

A node exports, besides the non-passing results of each run (model.build),
one record per job report it assembled and one per drain or resume it made.
Through an OpenTelemetry Collector they land in Loki, Elasticsearch or
ClickHouse (docs/telemetry.md), so the fleet's history across clusters lives
where the site already keeps its logs. Attributes are flat and namespaced
(``gcm.job.id``, ``gcm.failure.category``): backends index them as fields.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from gcm_checks.telemetry.model import LogEvent

# A report.json read back for its summary; reports are bounded when written,
# this only guards against a path that is not one.
MAX_REPORT_BYTES = 8 * 1024 * 1024


def report_event(doc: Mapping[str, Any]) -> LogEvent:
    """The job report as one record: its outcome and classification, not
    its evidence (that stays in the report file the record points to)."""
    job = doc.get("job") or {}
    outcome = doc.get("outcome") or {}
    cls = doc.get("classification") or {}
    failed = bool(outcome.get("failed"))
    attrs: Dict[str, Any] = {
        "gcm.job.id": str(job.get("job_id") or ""),
        "gcm.job.key": str(job.get("key") or ""),
        "gcm.job.user": str(job.get("user") or ""),
        "gcm.job.partition": str(job.get("partition") or ""),
        "gcm.job.state": str(outcome.get("state") or job.get("state") or ""),
        "gcm.job.exit_status": str(outcome.get("exit_status") or ""),
        "gcm.job.nodes": ",".join(job.get("nodes") or ())[:4096],
        "gcm.job.failed": failed,
        "gcm.cluster": str(job.get("cluster") or ""),
        "gcm.nodes_drained": ",".join(outcome.get("nodes_drained") or ())[:4096],
    }
    if cls:
        attrs.update({"gcm.failure.category": str(cls.get("category") or ""),
                      "gcm.failure.responsibility": str(cls.get("responsibility") or ""),
                      "gcm.failure.rule": str(cls.get("rule") or ""),
                      "gcm.failure.confidence": float(cls.get("confidence") or 0.0)})
    sentence = str(cls.get("sentence") or "") if cls else ""
    body = f"job {attrs['gcm.job.id']} {attrs['gcm.job.state'] or ('failed' if failed else 'ended')}"
    if sentence:
        body += f": {sentence}"
    return LogEvent("fail" if failed else "info", body, {k: v for k, v in attrs.items() if v != ""},
                    "gcm.job.report", _epoch(doc.get("generated_at")))


def report_event_from_file(path: str) -> Optional[LogEvent]:
    from gcm_checks.jsonfile import read_json

    doc = read_json(path, max_bytes=MAX_REPORT_BYTES)  # None: missing, too big, too deep, corrupt
    return None if doc is None else report_event(doc)


def slurm_action_event(kind: str, action: Mapping[str, Any], node: str) -> Optional[LogEvent]:
    """A drain or resume gcm made (or kept from someone else) on ``node``."""
    what = str(action.get("action") or "")
    if kind not in ("drain", "resume") or what in ("", "unchanged", "none", "not_ours"):
        return None
    attrs = {"gcm.slurm.action": f"{kind}:{what}", "gcm.drain.reason": str(action.get("reason") or ""),
             "gcm.drain.previous_reason": str(action.get("previous_reason") or "")}
    body = f"{kind} {what} on {node}" + (f": {action['reason']}" if action.get("reason") else "")
    if action.get("why"):  # the mass-drain brake says why it held back
        attrs["gcm.drain.brake"] = str(action["why"])
        body += f" ({action['why']})"
    # ERROR for a drain in place; a held-back, would-be or refused one is a WARN.
    severity = "fail" if kind == "drain" and what in ("drained", "already") else ("info" if kind == "resume" else "warn")
    return LogEvent(severity, body, {k: v for k, v in attrs.items() if v}, f"gcm.node.{kind}")


def _epoch(iso: Any) -> Optional[float]:
    if not iso:
        return None
    try:
        from datetime import datetime

        return datetime.fromisoformat(str(iso).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
