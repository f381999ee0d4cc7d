"""Performance checks for qualification: GEMM throughput and memory bandwidth.

Only the ``qualify`` suite runs these: a probe takes seconds to minutes of
full GPU load, which no prolog can afford. The gatherer measures once per run
(``gcm_checks.qualify.probe``); the checks only judge
(``gcm_checks.qualify.judge``). Everything is imported lazily: this module is
imported by ``load_all`` on the prolog path too (rule 7).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List

from gcm_checks.registry import gatherer, register
from gcm_checks.result import CheckResult

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

TAGS = ("qualify",)
# Probe length when the run does not say (ctx.perf_probe_s is set by the level).
DEFAULT_PROBE_S = 10.0


@gatherer("perf")
def gather_perf(ctx: Any) -> Any:
    from gcm_checks.qualify.probe import measure

    facts = measure(ctx, float(getattr(ctx, "perf_probe_s", None) or DEFAULT_PROBE_S))
    # Kept on the context so qualify can write the figures into its result
    # file for the fleet report; results carry verdicts, not every figure.
    ctx.perf_facts = facts
    return facts


def _judge(metric: str, perf: Any, settings: "Settings") -> List[CheckResult]:
    from gcm_checks.qualify.baselines import lookup
    from gcm_checks.qualify.judge import judge_metric

    q = settings.qualify
    return judge_metric(metric, perf, lambda name: lookup(name, q.baselines), q.fraction, q.sibling_threshold)


@register("perf.gemm", tags=TAGS, needs="perf")
def check_gemm(perf: Any, settings: "Settings") -> List[CheckResult]:
    """Dense GEMM throughput per GPU against the model baseline and the node's other GPUs."""
    return _judge("gemm_tflops", perf, settings)


@register("perf.mem_bw", tags=TAGS, needs="perf")
def check_mem_bw(perf: Any, settings: "Settings") -> List[CheckResult]:
    """Device memory bandwidth per GPU against the model baseline and the node's other GPUs."""
    return _judge("mem_bw_gbps", perf, settings)
