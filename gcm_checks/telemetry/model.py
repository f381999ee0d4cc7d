"""One neutral set of metrics from a run, rendered by every telemetry sink.

Pure: results and gathered facts in, samples out. Every series is declared
once in ``METRICS`` with its Prometheus name, its OTLP name, its unit (UCUM,
as OTLP wants it) and the one textfile it lives in.

Rules that keep the series graphable (issue 17):

* **each series lives in exactly one textfile.** node_exporter's textfile
  collector rejects a series collected twice, so a file holds only what one
  writer knows in full: ``gcm_checks_<mode>.prom`` the run's results
  (``mode`` label), ``gcm_checks_drain.prom`` the drain state,
  ``gcm_checks_gpu.prom`` / ``gcm_checks_ib.prom`` the hardware readings
  (health and epilog each write a full snapshot; the newest wins) and
  ``gcm_checks_job_<id>.prom`` which GPUs a running job holds;
* **no job label on per-check series** - a job id is unbounded cardinality.
  ``gcm_job_info{node,job,gpu} 1`` ties GPUs to the job while it runs, and a
  PromQL join (``* on(node,gpu) group_left(job) gcm_job_info``) brings the
  job to any per-GPU series;
* base units in Prometheus names (``_celsius``, ``_watts``, ``_hertz``,
  ``_seconds``); in OTLP the unit travels as a field, chosen so that an
  OpenTelemetry Collector's Prometheus exporter (dots to underscores, the
  unit's suffix added, ``{annotation}`` units adding none) arrives at the
  same metric names as the textfile (tests/test_telemetry_series.py).

Metric families (all gauges: each run states the current truth):

====================================  ======================================
gcm_check_status{mode,check,subject,gpu,status}  1 per result
gcm_check_severity{mode,check,subject,gpu}  0 pass 1 warn 2 unknown 3 fail
gcm_node_verdict{mode}                 worst of the run, same scale
gcm_xid_events{mode,code,gpu,severity}  XIDs in the run's window
gcm_run_duration_seconds{mode}         wall time of the run
gcm_last_run_timestamp_seconds{mode}   when the run finished
gcm_node_drained{}                     1 while gcm holds a drain of the node
gcm_job_info{job,gpu}                  1 while the job runs on that GPU
gcm_gpu_* / gcm_ib_port_*               hardware (gcm_checks.telemetry.hardware)
====================================  ======================================

(every series also has ``node``.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

SEVERITY = {"pass": 0, "warn": 1, "unknown": 2, "fail": 3}


@dataclass(frozen=True)
class Metric:
    name: str  # Prometheus name (base unit suffix)
    otlp: str  # OTLP name (dotted; the unit is a field)
    unit: str  # UCUM: "s", "Cel", "W", "Hz", "bit/s", or an annotation "{error}" for counts and states
    help: str
    file: str  # run | drain | job | gpu | ib


def _m(name: str, otlp: str, unit: str, file: str, help: str) -> Metric:
    return Metric(name, otlp, unit, help, file)


METRICS: Dict[str, Metric] = {m.name: m for m in (
    _m("gcm_check_status", "gcm.check.status", "{status}", "run",
       "gcm-checks result of one check for one subject; the status label holds the result (value is always 1)."),
    _m("gcm_check_severity", "gcm.check.severity", "{severity}", "run",
       "gcm-checks result as a number: 0 pass, 1 warn, 2 unknown (could not tell), 3 fail (hardware bad)."),
    _m("gcm_node_verdict", "gcm.node.verdict", "{severity}", "run",
       "Worst result of the node's last run of this mode: 0 pass, 1 warn, 2 unknown, 3 fail."),
    _m("gcm_xid_events", "gcm.xid.events", "{event}", "run",
       "NVIDIA XID events seen in the last run's window, by code and GPU."),
    _m("gcm_run_duration_seconds", "gcm.run.duration", "s", "run",
       "Wall time of the node's last run of this mode, from start to verdict."),
    _m("gcm_last_run_timestamp_seconds", "gcm.last_run_timestamp", "s", "run",
       "Unix time the node's last run of this mode finished."),
    _m("gcm_node_drained", "gcm.node.drained", "{state}", "drain",
       "1 while gcm-checks holds a drain of this node (its own record), 0 when it holds none."),
    _m("gcm_job_info", "gcm.job.info", "{info}", "job",
       "1 while the Slurm job runs on this GPU; join per-GPU series on (node, gpu) to get the job."),
    # Decision gauges (mode label; the prolog, epilog and health set them).
    _m("gcm_config_error", "gcm.config_error", "{state}", "run",
       "1 when the config could not be used and built-in defaults ran in report-only."),
    _m("gcm_would_drain", "gcm.would_drain", "{state}", "run",
       "1 when the last run decided a drain it did not make (report-only, broken config, dry run)."),
    _m("gcm_drain_braked", "gcm.drain_braked", "{state}", "run",
       "1 when the mass-drain brake held back a drain (suspected cluster-wide cause)."),
    # Hardware: filled by gcm_checks.telemetry.hardware.
    _m("gcm_gpu_up", "gcm.gpu.up", "{state}", "gpu", "1 when the GPU answered NVML, 0 when it is lost or hung."),
    _m("gcm_gpu_temperature_celsius", "gcm.gpu.temperature", "Cel", "gpu", "GPU core temperature."),
    _m("gcm_gpu_power_watts", "gcm.gpu.power", "W", "gpu", "GPU power draw."),
    _m("gcm_gpu_sm_clock_hertz", "gcm.gpu.sm_clock", "Hz", "gpu", "Current SM clock."),
    _m("gcm_gpu_throttle_reason", "gcm.gpu.throttle_reason", "{state}", "gpu",
       "1 while this clock throttle (event) reason is active, 0 when not."),
    _m("gcm_gpu_ecc_errors", "gcm.gpu.ecc.errors", "{error}", "gpu",
       "ECC errors as counted by the GPU (volatile: since driver load; aggregate: lifetime)."),
    _m("gcm_gpu_retired_pages", "gcm.gpu.retired_pages", "{page}", "gpu",
       "Pages retired by the GPU, by cause (pre-Ampere GPUs)."),
    _m("gcm_gpu_remapped_rows", "gcm.gpu.remapped_rows", "{row}", "gpu",
       "Rows remapped by the GPU, by kind (Ampere and later)."),
    _m("gcm_gpu_row_remap_pending", "gcm.gpu.row_remap.pending", "{state}", "gpu",
       "1 when a row remap waits for a GPU reset."),
    _m("gcm_gpu_nvlink_errors", "gcm.gpu.nvlink.errors", "{error}", "gpu",
       "NVLink error counters of the GPU, summed over its active links."),
    _m("gcm_ib_port_counter", "gcm.ib.port.counter", "{count}", "ib",
       "InfiniBand port counter as read from sysfs (ports/N/counters)."),
    _m("gcm_ib_port_active", "gcm.ib.port.active", "{state}", "ib", "1 when the port is ACTIVE and LinkUp."),
    _m("gcm_ib_port_rate_bits_per_second", "gcm.ib.port.rate", "bit/s", "ib", "Negotiated port rate."),
)}
HELP = {name: m.help for name, m in METRICS.items()}


def spec(name: str) -> Metric:
    """The declared metric, or - for a gauge some caller adds without
    declaring it here - a run-file gauge named the same in OTLP."""
    m = METRICS.get(name)
    return m if m is not None else Metric(name, name, "{state}", HELP.get(name, name), "run")

# Prometheus label -> OTLP attribute: namespaced (OpenTelemetry attribute
# naming), ``node`` goes to the resource (host.name, service.instance.id).
ATTRIBUTE = {
    "mode": "gcm.mode",
    "check": "gcm.check.id",
    "subject": "gcm.check.subject",
    "status": "gcm.check.status",
    "gpu": "gcm.gpu.index",
    "job": "gcm.job.id",
    "code": "gcm.xid.code",
    "severity": "gcm.xid.severity",
    "reason": "gcm.gpu.throttle.reason",
    "type": "gcm.gpu.ecc.type",
    "counter": "gcm.counter",
    "cause": "gcm.gpu.retired_page.cause",
    "kind": "gcm.gpu.remapped_row.kind",
    "device": "gcm.ib.device",
    "port": "gcm.ib.port",
}

_GPU_SUBJECT = re.compile(r"^GPU\s+(\d+)\b")


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Tuple[Tuple[str, str], ...]
    value: float

    @property
    def metric(self) -> Metric:
        return spec(self.name)


@dataclass(frozen=True)
class LogEvent:
    """One OTLP log record: a non-passing result, a drain, a job report."""

    severity: str  # info | warn | unknown | fail
    body: str
    attributes: Mapping[str, Any] = field(default_factory=dict)
    event: str = "gcm.check.result"  # event.name
    time: Optional[float] = None  # epoch seconds; None = now


def gpu_label(subject: str) -> str:
    m = _GPU_SUBJECT.match(subject or "")
    return m.group(1) if m else ""


def labels(**kw: Any) -> Tuple[Tuple[str, str], ...]:
    return tuple((k, "" if v is None else str(v)) for k, v in kw.items())


def attributes(sample_labels: Iterable[Tuple[str, str]]) -> Dict[str, str]:
    """OTLP attributes of a sample: namespaced, without node, without empties."""
    return {ATTRIBUTE.get(k, f"gcm.{k}"): v for k, v in sample_labels if k != "node" and v != ""}


def _get(x: Any, key: str, default: Any = None) -> Any:
    if isinstance(x, Mapping):
        return x.get(key, default)
    return getattr(x, key, default)


def job_gpus(value: Optional[str]) -> List[str]:
    """SLURM_JOB_GPUS ("0,1,3") -> ["0", "1", "3"]; junk dropped."""
    return [g.strip() for g in (value or "").split(",") if g.strip().isdigit()][:64]


def build(
    results: Iterable[Any],
    *,
    mode: str,
    node: str,
    when: float,
    job_id: Optional[str] = None,
    xids: Optional[Iterable[Any]] = None,
    drained: Optional[bool] = None,
    duration_s: Optional[float] = None,
    job_gpu_list: Sequence[str] = (),
) -> Tuple[List[Sample], List[LogEvent]]:
    samples: List[Sample] = []
    events: List[LogEvent] = []
    worst = 0
    # One series per (check, subject): two results of one check on one
    # subject would be a duplicate series; the worst of them stands.
    per_key: Dict[Tuple[str, str], Tuple[int, str]] = {}
    for r in results:
        status = r.status.value if hasattr(r.status, "value") else str(r.status)
        sev = SEVERITY.get(status, 2)
        worst = max(worst, sev)
        key = (str(r.check), str(r.subject or ""))
        if key not in per_key or sev > per_key[key][0]:
            per_key[key] = (sev, status)
        if status != "pass":
            attrs = {"gcm.check.id": r.check, "gcm.check.status": status, "gcm.mode": mode}
            if r.subject:
                attrs["gcm.check.subject"] = r.subject
            if gpu_label(r.subject):
                attrs["gcm.gpu.index"] = gpu_label(r.subject)
            if job_id:  # a log record may carry the job: logs have no cardinality cost
                attrs["gcm.job.id"] = str(job_id)
            events.append(LogEvent(status, f"{r.check} {r.subject or node}: {r.message}", attrs, "gcm.check.result",
                                   when))
    for (check, subject), (sev, status) in per_key.items():
        base = dict(node=node, mode=mode, check=check, subject=subject, gpu=gpu_label(subject))
        samples.append(Sample("gcm_check_status", labels(**base, status=status), 1.0))
        samples.append(Sample("gcm_check_severity", labels(**base), float(sev)))
    samples.append(Sample("gcm_node_verdict", labels(node=node, mode=mode), float(worst)))
    counts: Dict[Tuple[str, str, str], int] = {}
    for x in xids or ():
        code = _get(x, "xid", _get(x, "code"))
        if code is None:
            continue
        gpu = _get(x, "gpu_index")
        key3 = (str(code), "" if gpu is None else str(gpu), str(_get(x, "severity", "") or ""))
        counts[key3] = counts.get(key3, 0) + 1
    for (code, gpu, severity), n in sorted(counts.items()):
        samples.append(Sample("gcm_xid_events", labels(node=node, mode=mode, code=code, gpu=gpu, severity=severity),
                              float(n)))
    if duration_s is not None:
        samples.append(Sample("gcm_run_duration_seconds", labels(node=node, mode=mode), float(duration_s)))
    samples.append(Sample("gcm_last_run_timestamp_seconds", labels(node=node, mode=mode), float(when)))
    if drained is not None:
        samples.append(Sample("gcm_node_drained", labels(node=node), 1.0 if drained else 0.0))
    if job_id and mode == "prolog":
        for gpu in job_gpu_list:
            samples.append(Sample("gcm_job_info", labels(node=node, job=job_id, gpu=gpu), 1.0))
    # The hardware series (gcm_gpu_*, gcm_ib_port_*) are added by the caller
    # (telemetry.export) from telemetry.hardware, which builds on this module:
    # one direction, no import circle.
    return samples, events
