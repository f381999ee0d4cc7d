"""The metrics sinks a node mode writes after its verdict (Prometheus
textfile, OTLP): shared by the prolog, the epilog and health. A sink never
changes the verdict or the exit status (rule 6).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, List, Optional

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings


def _ib_for_telemetry(ctx: Any, log: Any) -> Any:
    """The epilog judges no IB port, but its readings are graphed: one sysfs
    read (no device call), under a deadline, after the verdict."""
    try:
        from gcm_checks.deadline import call_with_deadline
        from gcm_checks.gather import ib

        root = ctx.sysfs_root()
        rebuilt = False
        if not os.path.isdir(root):
            # A temporary tree (simulation's) went with the suite's ctx.close():
            # build it again for this read (the host's root just reads as absent again).
            ctx._sysfs_root = None
            root, rebuilt = ctx.sysfs_root(), True
        try:
            snap = call_with_deadline(lambda: ib.read_sysfs(root), 1.0, "ib sysfs for telemetry")
        finally:
            if rebuilt:
                ctx.close()
        return snap if snap.class_present else None
    except Exception as e:  # noqa: BLE001 - no IB readings is not an error of the run
        log.info("telemetry_ib_skipped", error=f"{type(e).__name__}: {e}")
        return None


def telemetry_on(settings: "Settings", mode: str) -> bool:
    """A sink is configured that this mode writes to."""
    tel = settings.telemetry
    if mode == "prolog":  # the prolog writes no OTLP
        return bool(tel.prometheus_textfile_dir)
    return bool(tel.prometheus_textfile_dir or tel.otlp_endpoint)


def export_metrics(results: List[Any], settings: "Settings", node: str, job_id: Optional[str], mode: str, action: Optional[str],
               log: Any, xids: Any = None, *, t0: Optional[float] = None, ctx: Any = None,
               drained: Optional[bool] = None, log_events: Any = (), job_runs: bool = False) -> None:
    """Metrics sinks (Prometheus textfile, OTLP) when configured; never a verdict.

    The prolog writes only the local textfile: it must not wait on a network
    collector (or import the OpenTelemetry SDK) before every job, and it
    exports no hardware readings (those cost NVML calls; health and the
    epilog gather them). ``drained``: the drain state when the caller knows
    it; by default only "we drained now" is known. ``job_runs``: the prolog
    lets the job start here, so its GPUs are tied to it (gcm_job_info); a
    requeued job gets no epilog here to untie them.
    """
    sinks = ("prometheus",) if mode == "prolog" else ("prometheus", "otlp")
    if not telemetry_on(settings, mode):
        return
    gauges = {"gcm_config_error": 1.0 if getattr(settings, "config_error", None) else 0.0,
              "gcm_would_drain": 1.0 if action == "would drain" else 0.0,
              "gcm_drain_braked": 1.0 if (action or "").startswith("braked") else 0.0}
    if drained is None and action in ("drained", "already"):
        drained = True
    facts = getattr(ctx, "facts", None) or {}
    try:
        from gcm_checks import telemetry

        ib_snapshot = facts.get("ib")
        if ib_snapshot is None and mode == "epilog" and ctx is not None:
            ib_snapshot = _ib_for_telemetry(ctx, log)

        telemetry.export(results, settings, mode=mode, node=node, job_id=job_id, xids=xids, drained=drained, log=log,
                         sinks=sinks, duration_s=None if t0 is None else time.monotonic() - t0,
                         gpu_facts=None if mode == "prolog" else facts.get("gpu"),
                         ib_snapshot=None if mode == "prolog" else ib_snapshot,
                         job_gpus=os.environ.get("SLURM_JOB_GPUS") if mode == "prolog" and job_runs else None,
                         log_events=log_events, gauges=gauges)
    except Exception as e:  # noqa: BLE001 - a sink never changes the verdict (rule 6)
        log.warning("telemetry_failed", error=f"{type(e).__name__}: {e}")

