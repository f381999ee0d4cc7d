"""OTLP sink: the same metrics as Prometheus, plus one log record per
non-passing result, over OTLP/HTTP (protobuf) with opentelemetry-sdk.

opentelemetry-sdk and the OTLP/HTTP exporter are an optional extra
(``pip install gcm-checks[otlp]``) imported only here, only when an endpoint
is configured. The whole export runs under a deadline: a collector that
accepts the connection and never answers must not hold a prolog (rule 1).
"""

from __future__ import annotations

import time
from typing import Any, Dict, Iterable, List, Mapping, Optional

from gcm_checks.telemetry.model import HELP, LogEvent, Sample

SEVERITY_NUMBER = {"warn": 13, "unknown": 13, "fail": 17}  # OTLP WARN, ERROR


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
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExportResult, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    from gcm_checks import __version__

    resource = Resource.create({"service.name": "gcm-checks", "service.version": __version__,
                                "host.name": node, "gcm.mode": mode})
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
    from opentelemetry.metrics import Observation

    for name, group in by_name.items():
        obs = [Observation(s.value, {k: v for k, v in s.labels if v != ""}) for s in group]
        meter.create_observable_gauge(name, callbacks=[lambda _opts, obs=obs: obs], description=HELP.get(name, ""))
    # shutdown() collects and exports once more; force_flush() first would
    # send every point twice.
    provider.shutdown(timeout_millis=int(timeout * 1000))
    if not outcomes or any(r is not MetricExportResult.SUCCESS for r in outcomes):
        raise RuntimeError(f"OTLP metrics export to {_url(endpoint, 'metrics')} failed")
    if not events:
        return
    log_exporter = OTLPLogExporter(endpoint=_url(endpoint, "logs"), headers=headers, timeout=timeout)
    log_provider = LoggerProvider(resource=resource)
    log_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    logger = log_provider.get_logger("gcm_checks")
    now = time.time_ns()
    for e in events:
        _emit(logger, now, SEVERITY_NUMBER.get(e.severity, 9), e.severity.upper(), e.body, dict(e.attributes))
    log_provider.shutdown()


def _emit(logger: Any, ts: int, number: int, text: str, body: str, attributes: Dict[str, str]) -> None:
    from opentelemetry._logs import SeverityNumber

    sev = SeverityNumber(number)
    try:
        logger.emit(timestamp=ts, observed_timestamp=ts, severity_number=sev, severity_text=text, body=body,
                    attributes=attributes)
    except TypeError:  # SDKs before keyword emit() (< 1.35) take a LogRecord
        from opentelemetry.sdk._logs import LogRecord

        logger.emit(LogRecord(timestamp=ts, observed_timestamp=ts, severity_number=sev, severity_text=text,
                              body=body, attributes=attributes))
