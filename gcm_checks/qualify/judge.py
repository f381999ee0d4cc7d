"""Judge performance figures: pure functions, tested from tables.

Two independent comparisons, either of which fails a GPU:

* against the model's baseline: below ``fraction`` x expected is ``fail``,
  with the measured and expected figures in the message;
* against its siblings on the same node: more than ``sibling_threshold``
  below the median of the node's other GPUs is ``fail`` even where no
  baseline is configured (a new model, an odd SKU), because the GPUs of one
  node share a model, a driver and a cooling loop - one far behind the rest
  is the GPU, not the workload.

A figure we could not get is ``unknown`` (rule 2), except a probe that never
returned: a GEMM that hangs is a wedged GPU (rule 1).

Results carry no check id: ``checks/perf.py`` calls this from its registered
checks, and the registry stamps each row's id (``registry.run_check``), as for
every other check.
"""

from __future__ import annotations

import statistics
from typing import Any, Callable, List, Optional

from gcm_checks.qualify.baselines import Baseline
from gcm_checks.qualify.probe import LABELS, UNITS, GpuPerf, PerfFacts
from gcm_checks.result import CheckResult, cannot_tell, fail, ok

# A sibling median needs at least this many other GPUs to mean anything:
# with one sibling we cannot tell which of the two is the slow one.
MIN_SIBLINGS = 2


def baseline_reason(value: float, base: Baseline, metric: str, fraction: float) -> Optional[str]:
    expected = base.expected(metric)
    if not expected or value >= fraction * expected:
        return None
    unit = UNITS[metric]
    return (f"{LABELS[metric]} {value:.0f} {unit} is {value / expected:.0%} of the expected {expected:.0f} {unit} "
            f"for {base.model} (fail below {fraction:.0%})")


def sibling_median(values: List[float]) -> Optional[float]:
    return statistics.median(values) if len(values) >= MIN_SIBLINGS else None


def sibling_reason(value: float, siblings: List[float], metric: str, threshold: float) -> Optional[str]:
    med = sibling_median(siblings)
    if med is None or med <= 0 or value >= (1.0 - threshold) * med:
        return None
    return (f"{1.0 - value / med:.0%} below the median of its {len(siblings)} sibling GPUs "
            f"({med:.0f} {UNITS[metric]}; fail beyond {threshold:.0%})")


def judge_metric(
    metric: str,
    perf: PerfFacts,
    baseline_of: Callable[[str], Baseline],
    fraction: float,
    sibling_threshold: float,
) -> List[CheckResult]:
    """One result per bad or unmeasured GPU, or one ``pass`` line for the node."""
    if perf.problem:
        return [cannot_tell(perf.problem, source=perf.source)]
    if not perf.gpus:
        return [cannot_tell("the probe returned no GPUs", source=perf.source)]
    measured = {g.index: g.value(metric) for g in perf.gpus if g.value(metric) is not None}
    out: List[CheckResult] = []
    for g in perf.gpus:
        r = _judge_gpu(metric, g, measured, baseline_of(g.name), fraction, sibling_threshold, perf.source)
        if r is not None:
            out.append(r)
    if out:
        return out
    vals = sorted(measured.values())
    if vals:
        unit = UNITS[metric]
        msg = (f"all {len(perf.gpus)} GPUs within limits: {LABELS[metric]} min {vals[0]:.0f}, "
               f"median {statistics.median(vals):.0f} {unit}")
    else:
        msg = f"all {len(perf.gpus)} GPUs passed {perf.source}'s {LABELS[metric]} test"
    return [ok(msg, source=perf.source, values={str(k): v for k, v in measured.items()})]


def _judge_gpu(metric: str, g: GpuPerf, measured: dict, base: Baseline, fraction: float,
               sibling_threshold: float, source: str) -> Optional[CheckResult]:
    if metric in g.verdicts:
        status, text = g.verdicts[metric]
        return fail(text, g.subject, source=source) if status == "fail" else None
    value = g.value(metric)
    if value is None:
        why = g.errors.get(metric, "no figure")
        if g.hung:
            return fail(f"{LABELS[metric]} probe: {why}; reboot the node", g.subject, source=source)
        return cannot_tell(f"could not measure {LABELS[metric]}: {why}", g.subject, source=source)
    siblings = [v for i, v in measured.items() if i != g.index]
    reasons = [r for r in (baseline_reason(value, base, metric, fraction),
                           sibling_reason(value, siblings, metric, sibling_threshold)) if r]
    if not reasons:
        return None
    details: Any = {"measured": value, "expected": base.expected(metric), "model": base.model,
                    "baseline_source": base.source, "fraction": fraction,
                    "sibling_median": sibling_median(siblings), "source": source}
    if reasons[0].startswith(LABELS[metric]):
        msg = "; ".join(reasons)
    else:
        msg = f"{LABELS[metric]} {value:.0f} {UNITS[metric]} is " + "; ".join(reasons)
    # A drain reason has 200 characters: say what and how far, nothing else.
    details["short"] = _short(metric, value, base, siblings)
    return fail(msg + "; replace or RMA the GPU if a rerun agrees", g.subject, **details)


def _short(metric: str, value: float, base: Baseline, siblings: List[float]) -> str:
    parts = [f"{LABELS[metric]} {value:.0f} {UNITS[metric]}"]
    expected = base.expected(metric)
    if expected:
        parts.append(f"{value / expected:.0%} of {expected:.0f} expected for {base.model}")
    med = sibling_median(siblings)
    if med:
        parts.append(f"{1.0 - value / med:.0%} below siblings")
    return ", ".join(parts)
