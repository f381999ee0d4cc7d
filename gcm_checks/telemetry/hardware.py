"""Per-GPU and per-IB-port hardware series, from facts the checks already
gathered (the NVML snapshot, the sysfs IB snapshot): judging and graphing
read the same numbers, and telemetry makes no hardware call of its own.

A reading the hardware did not give (not supported, not read on this path)
is left out, never written as 0: a missing series says "no data", a zero
says "none".
"""

from __future__ import annotations

from typing import Any, List

from gcm_checks.telemetry.model import Sample, labels


def gpu_samples(facts: Any, node: str) -> List[Sample]:
    if facts is None:
        return []
    from gcm_checks.gather.nvml import THROTTLE_BITS

    out: List[Sample] = []

    def add(name: str, value: Any, scale: float = 1.0, **kw: Any) -> None:
        if value is None:
            return
        out.append(Sample(name, labels(node=node, gpu=gpu, **kw), float(value) * scale))

    for g in getattr(facts, "gpus", ()) or ():
        gpu = str(g.index)
        up = bool(g.responsive) and not g.lost
        add("gcm_gpu_up", 1 if up else 0)
        if not up:
            continue
        add("gcm_gpu_temperature_celsius", g.temperature_c)
        add("gcm_gpu_power_watts", g.power_w)
        add("gcm_gpu_sm_clock_hertz", g.sm_clock_mhz, 1e6)
        if "throttle" not in g.errors:
            active = set(g.throttle_reasons or ())
            for reason in THROTTLE_BITS.values():
                add("gcm_gpu_throttle_reason", 1 if reason in active else 0, reason=reason)
        add("gcm_gpu_ecc_errors", g.ecc_uncorrected_volatile, type="uncorrected", counter="volatile")
        add("gcm_gpu_ecc_errors", g.ecc_uncorrected_aggregate, type="uncorrected", counter="aggregate")
        add("gcm_gpu_ecc_errors", g.ecc_corrected_aggregate, type="corrected", counter="aggregate")
        add("gcm_gpu_retired_pages", g.retired_pages_sbe, cause="single_bit")
        add("gcm_gpu_retired_pages", g.retired_pages_dbe, cause="double_bit")
        add("gcm_gpu_remapped_rows", g.remapped_rows_correctable, kind="correctable")
        add("gcm_gpu_remapped_rows", g.remapped_rows_uncorrectable, kind="uncorrectable")
        if g.remap_pending is not None:
            add("gcm_gpu_row_remap_pending", 1 if g.remap_pending else 0)
        for counter, n in sorted((g.nvlink_errors or {}).items()):
            add("gcm_gpu_nvlink_errors", n, counter=counter)
    return out


def ib_samples(snapshot: Any, node: str) -> List[Sample]:
    # IbFacts wraps the sysfs snapshot; accept either.
    snapshot = getattr(snapshot, "snapshot", snapshot)
    if snapshot is None:
        return []
    out: List[Sample] = []
    for p in getattr(snapshot, "ports", ()) or ():
        base = dict(node=node, device=p.device, port=str(p.port))
        if p.state:
            active = p.state == "ACTIVE" and p.phys_state == "LinkUp"
            out.append(Sample("gcm_ib_port_active", labels(**base), 1.0 if active else 0.0))
        if p.rate_gbps is not None:
            out.append(Sample("gcm_ib_port_rate_bits_per_second", labels(**base), float(p.rate_gbps) * 1e9))
        for counter, n in sorted(p.counters.items()):
            out.append(Sample("gcm_ib_port_counter", labels(**base, counter=counter), float(n)))
    return out
