"""Telemetry sinks: Prometheus textfile collector and OTLP.

Both are sinks in the same pipeline as notifications (STYLE.md practice 8):
they run after the verdict is decided and the report is on disk, each on its
own, and neither can change a verdict or an exit code - ``export`` never
raises. Nothing is imported until a sink is configured (rule 7).

Wiring (prolog, epilog, health, qualify)::

    from gcm_checks import telemetry
    telemetry.export(results, settings, mode="epilog", node=node, job_id=job_id,
                     xids=xid_events, drained=drain_outcome_is_ours, duration_s=...,
                     gpu_facts=ctx.facts.get("gpu"), ib_snapshot=...)

``gpu_facts`` / ``ib_snapshot`` add the hardware series (health and epilog);
``job_gpus`` (SLURM_JOB_GPUS) makes the prolog write ``gcm_job_info`` and the
epilog remove it. ``log_events`` adds OTLP log records (job reports, drains)
to the non-passing results.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Dict, Iterable, Optional

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings


def export(
    results: Iterable[Any],
    settings: "Settings",
    *,
    mode: str,
    node: str,
    job_id: Optional[str] = None,
    xids: Optional[Iterable[Any]] = None,
    drained: Optional[bool] = None,
    when: Optional[float] = None,
    log: Any = None,
    sinks: Optional[Iterable[str]] = None,
    duration_s: Optional[float] = None,
    gpu_facts: Any = None,
    ib_snapshot: Any = None,
    job_gpus: Optional[str] = None,
    log_events: Iterable[Any] = (),
    gauges: Optional[Dict[str, float]] = None,
) -> Dict[str, str]:
    """Send one run to every configured sink (or only those named in
    ``sinks``: "prometheus", "otlp"). Returns {sink: "ok" | error}; never raises."""
    outcome: Dict[str, str] = {}
    try:
        allowed = set(sinks) if sinks is not None else {"prometheus", "otlp"}
        tel = settings.telemetry
        textfile_dir = tel.prometheus_textfile_dir if "prometheus" in allowed else None
        endpoint = tel.otlp_endpoint if "otlp" in allowed else None
        if not textfile_dir and not endpoint:
            return outcome
        from gcm_checks.telemetry.model import build, job_gpus as parse_gpus

        samples, events = build(list(results), mode=mode, node=node, when=when if when is not None else time.time(),
                                job_id=job_id, xids=xids, drained=drained, duration_s=duration_s,
                                job_gpu_list=parse_gpus(job_gpus))
        if gpu_facts is not None or ib_snapshot is not None:
            from gcm_checks.telemetry import hardware

            samples.extend(hardware.gpu_samples(gpu_facts, node))
            samples.extend(hardware.ib_samples(ib_snapshot, node))
        events = list(events) + list(log_events)
        groups = ["run"] + (["gpu"] if gpu_facts is not None else []) + (["ib"] if ib_snapshot is not None else [])
        from gcm_checks.telemetry.model import Sample

        # Decision gauges (gcm_config_error, gcm_would_drain): what the admin
        # must see even when nothing was changed on the node.
        samples.extend(Sample(name, (("mode", mode), ("node", node)), float(v)) for name, v in sorted((gauges or {}).items()))
    except Exception as e:  # noqa: BLE001 - telemetry never breaks a run
        outcome["telemetry"] = f"error: {type(e).__name__}: {e}"
        _log(log, "telemetry", outcome["telemetry"])
        return outcome
    if textfile_dir:
        try:
            from gcm_checks.telemetry import prometheus

            prometheus.write(str(textfile_dir), mode, samples, groups=groups, job_id=job_id)
            if mode == "epilog" and job_id:
                prometheus.remove_job(str(textfile_dir), job_id)
            outcome["prometheus"] = "ok"
        except Exception as e:  # noqa: BLE001
            outcome["prometheus"] = f"error: {type(e).__name__}: {e}"
    if endpoint:
        try:
            from gcm_checks.telemetry import otlp

            otlp.export(samples, events, endpoint=str(endpoint), node=node, mode=mode,
                        timeout=tel.otlp_timeout_s, headers=tel.otlp_headers)
            outcome["otlp"] = "ok"
        except ImportError as e:
            outcome["otlp"] = f"error: opentelemetry-sdk not installed ({e}); pip install gcm-checks[otlp]"
        except Exception as e:  # noqa: BLE001
            outcome["otlp"] = f"error: {type(e).__name__}: {e}"
    for sink, what in outcome.items():
        if what != "ok":
            _log(log, sink, what)
    return outcome


def _log(log: Any, sink: str, what: str) -> None:
    if log is None:
        return
    try:
        log.warning("telemetry_failed", sink=sink, error=what)
    except Exception:  # noqa: BLE001
        pass
