"""One neutral set of metrics from a run, rendered by every telemetry sink.

Prometheus and OTLP see the same names, labels and values, so a dashboard can
move from one to the other without relabelling. Pure: results in, samples out.

Metrics (all gauges: each run states the current truth for its node):

* ``gcm_check_status{node,mode,check,subject,gpu,job,status}`` = 1 - one
  series per result, ``status`` one of pass/warn/unknown/fail;
* ``gcm_check_severity{node,mode,check,subject,gpu,job}`` = 0 pass,
  1 warn, 2 unknown, 3 fail - for "max by (node)" alerts;
* ``gcm_node_verdict{node,mode}`` = the same scale for the whole run;
* ``gcm_xid_events{node,code,gpu,severity,job}`` = XIDs in the run's window
  by code and GPU;
* ``gcm_node_drained{node}`` = 1 when a gcm drain is in place (when known);
* ``gcm_last_run_timestamp_seconds{node,mode}`` = when the run finished.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

SEVERITY = {"pass": 0, "warn": 1, "unknown": 2, "fail": 3}

HELP = {
    "gcm_check_status": "gcm-checks result of one check for one subject; the status label holds the result (value is always 1).",
    "gcm_check_severity": "gcm-checks result as a number: 0 pass, 1 warn, 2 unknown (could not tell), 3 fail (hardware bad).",
    "gcm_node_verdict": "Worst result of the node's last run of this mode: 0 pass, 1 warn, 2 unknown, 3 fail.",
    "gcm_xid_events": "NVIDIA XID events seen in the last run's window, by code and GPU.",
    "gcm_node_drained": "1 when the node is drained by gcm-checks, 0 when not.",
    "gcm_last_run_timestamp_seconds": "Unix time the node's last run of this mode finished.",
    "gcm_config_error": "1 when the config could not be used and built-in defaults ran in report-only.",
    "gcm_would_drain": "1 when the last run decided a drain it did not make (report-only, broken config, dry run).",
    "gcm_drain_braked": "1 when the mass-drain brake held back a drain (suspected cluster-wide cause).",
}

_GPU_SUBJECT = re.compile(r"^GPU\s+(\d+)\b")


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Tuple[Tuple[str, str], ...]
    value: float

    @property
    def label_dict(self) -> Dict[str, str]:
        return dict(self.labels)


@dataclass(frozen=True)
class LogEvent:
    """One non-passing result, as an OTLP log record."""

    severity: str  # warn | unknown | fail
    body: str
    attributes: Mapping[str, str] = field(default_factory=dict)


def gpu_label(subject: str) -> str:
    m = _GPU_SUBJECT.match(subject or "")
    return m.group(1) if m else ""


def _labels(**kw: Any) -> Tuple[Tuple[str, str], ...]:
    return tuple((k, "" if v is None else str(v)) for k, v in kw.items())


def _get(x: Any, key: str, default: Any = None) -> Any:
    if isinstance(x, Mapping):
        return x.get(key, default)
    return getattr(x, key, default)


def build(
    results: Iterable[Any],
    *,
    mode: str,
    node: str,
    when: float,
    job_id: Optional[str] = None,
    xids: Optional[Iterable[Any]] = None,
    drained: Optional[bool] = None,
) -> Tuple[List[Sample], List[LogEvent]]:
    samples: List[Sample] = []
    events: List[LogEvent] = []
    job = job_id or ""
    worst = 0
    for r in results:
        status = r.status.value if hasattr(r.status, "value") else str(r.status)
        sev = SEVERITY.get(status, 2)
        worst = max(worst, sev)
        base = dict(node=node, mode=mode, check=r.check, subject=r.subject or "", gpu=gpu_label(r.subject), job=job)
        samples.append(Sample("gcm_check_status", _labels(**base, status=status), 1.0))
        samples.append(Sample("gcm_check_severity", _labels(**base), float(sev)))
        if status != "pass":
            events.append(LogEvent(status, f"{r.check} {r.subject or node}: {r.message}",
                                   {k: v for k, v in base.items() if v} | {"status": status}))
    samples.append(Sample("gcm_node_verdict", _labels(node=node, mode=mode), float(worst)))
    counts: Dict[Tuple[str, str, str], int] = {}
    for x in xids or ():
        code = _get(x, "xid", _get(x, "code"))
        if code is None:
            continue
        gpu = _get(x, "gpu_index")
        key = (str(code), "" if gpu is None else str(gpu), str(_get(x, "severity", "") or ""))
        counts[key] = counts.get(key, 0) + 1
    for (code, gpu, severity), n in sorted(counts.items()):
        samples.append(Sample("gcm_xid_events", _labels(node=node, code=code, gpu=gpu, severity=severity, job=job), float(n)))
    if drained is not None:
        samples.append(Sample("gcm_node_drained", _labels(node=node), 1.0 if drained else 0.0))
    samples.append(Sample("gcm_last_run_timestamp_seconds", _labels(node=node, mode=mode), float(when)))
    return samples, events
