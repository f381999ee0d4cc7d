"""OTLP sink: the same metrics as Prometheus, plus log records (one per
non-passing result, per drain, per job report), over OTLP/HTTP (protobuf)
with opentelemetry-sdk.

The resource says which node: ``service.instance.id`` and ``host.name`` are
the Slurm node name, stable across runs, so a backend sees one target per
node rather than a new one per run. Metric names are dotted with a UCUM unit
(``gcm.gpu.temperature`` in ``Cel``); attributes are namespaced
(``gcm.check.id``, ``gcm.gpu.index``: model.ATTRIBUTE). A collector's
Prometheus exporter turns them back into the textfile's names.

opentelemetry-sdk and the OTLP/HTTP exporter are an optional extra
(``pip install gcm-checks[otlp]``) imported only here, only when an endpoint
is configured. The whole export runs under a deadline: a collector that
accepts the connection and never answers must not hold a prolog (rule 1).
"""

from __future__ import annotations

import time
from typing import Any, Dict, Iterable, List, Mapping, Optional

from gcm_checks.telemetry.model import LogEvent, Sample, attributes, spec

SEVERITY_NUMBER = {"info": 9, "warn": 13, "unknown": 13, "fail": 17}  # OTLP INFO, WARN, ERROR


def resource_attributes(node: str) -> Dict[str, str]:
    from gcm_checks import __version__

    return {"service.name": "gcm-checks", "service.namespace": "slurm", "service.version": __version__,
            "service.instance.id": node, "host.name": node}


def _url(endpoint: str, signal: str) -> str:
    # Like OTEL_EXPORTER_OTLP_ENDPOINT: a base URL gets /v1/<signal> appended.
    return endpoint.rstrip("/") + f"/v1/{signal}"


def export(samples: Iterable[Sample], events: Iterable[LogEvent], *, endpoint: str, node: str, mode: str,
           timeout: float = 2.0, headers: Optional[Mapping[str, str]] = None) -> None:
    """Send metrics and logs; raises on failure (the caller never lets it out)."""
    from gcm_checks.deadline import call_with_deadline

    samples = list(samples)
    events = list(events)
    call_with_deadline(lambda: _export(samples, events, endpoint, node, mode, timeout, dict(headers or {})),
                       timeout * 2 + 1.0, "otlp export")


def _export(samples: List[Sample], events: List[LogEvent], endpoint: str, node: str, mode: str,
            timeout: float, headers: Dict[str, str]) -> None:
    from opentelemetry.sdk.resources import Resource

    resource = Resource.create(resource_attributes(node))
    if samples:
        _export_metrics(samples, resource, endpoint, timeout, headers)
    if not events:
        return
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

    log_exporter = OTLPLogExporter(endpoint=_url(endpoint, "logs"), headers=headers, timeout=timeout)
    log_provider = LoggerProvider(resource=resource)
    log_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    logger = log_provider.get_logger("gcm_checks")
    now = time.time_ns()
    for e in events:
        ts = int(e.time * 1e9) if e.time else now
        attrs = {"event.name": e.event, **{k: v for k, v in e.attributes.items() if v is not None}}
        _emit(logger, ts, now, SEVERITY_NUMBER.get(e.severity, 9), e.severity.upper(), e.body, attrs)
    log_provider.shutdown()


def _export_metrics(samples: List[Sample], resource: Any, endpoint: str, timeout: float,
                    headers: Dict[str, str]) -> None:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.metrics import Observation
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExportResult, PeriodicExportingMetricReader

    # Metrics: observable gauges whose callbacks report this run's samples.
    metric_exporter = OTLPMetricExporter(endpoint=_url(endpoint, "metrics"), headers=headers, timeout=timeout)
    outcomes: List[Any] = []
    original = metric_exporter.export

    def recording_export(*a: Any, **kw: Any) -> Any:
        r = original(*a, **kw)
        outcomes.append(r)
        return r

    metric_exporter.export = recording_export  # type: ignore[method-assign]
    reader = PeriodicExportingMetricReader(metric_exporter, export_interval_millis=3_600_000)
    provider = MeterProvider(resource=resource, metric_readers=[reader])
    meter = provider.get_meter("gcm_checks")
    by_name: Dict[str, List[Sample]] = {}
    for s in samples:
        by_name.setdefault(s.name, []).append(s)
    for name, group in by_name.items():
        m = spec(name)
        obs = [Observation(s.value, attributes(s.labels)) for s in group]
        meter.create_observable_gauge(m.otlp, callbacks=[lambda _opts, obs=obs: obs], unit=m.unit,
                                      description=m.help)
    # shutdown() collects and exports once more; force_flush() first would
    # send every point twice.
    provider.shutdown(timeout_millis=int(timeout * 1000))
    if not outcomes or any(r is not MetricExportResult.SUCCESS for r in outcomes):
        raise RuntimeError(f"OTLP metrics export to {_url(endpoint, 'metrics')} failed")


def _emit(logger: Any, ts: int, observed: int, number: int, text: str, body: str, attrs: Dict[str, Any]) -> None:
    from opentelemetry._logs import SeverityNumber

    sev = SeverityNumber(number)
    try:
        logger.emit(timestamp=ts, observed_timestamp=observed, severity_number=sev, severity_text=text, body=body,
                    attributes=attrs)
    except TypeError:  # SDKs before keyword emit() (< 1.35) take a LogRecord
        from opentelemetry.sdk._logs import LogRecord

        logger.emit(LogRecord(timestamp=ts, observed_timestamp=observed, severity_number=sev, severity_text=text,
                              body=body, attributes=attrs))
