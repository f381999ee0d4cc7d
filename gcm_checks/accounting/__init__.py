"""Slurm accounting in the diagnosis (issue 9, docs/accounting.md).

    from gcm_checks.accounting import refine_pass, hold_notifications, explain, failure_trends
    refine_pass(settings, node=node)              # batched: <= 1 sacct call per accounting.interval_s
    hold_notifications(settings, job.key)         # epilog, right after notify.enqueue_report
    explain("1234", settings)                     # gcm-checks why 1234
    failure_trends(settings, since=t0, until=t1)  # gcm-checks failures --since 7d

Modules: ``records`` (sacct rows -> runs and steps, pure), ``judge``
(classify a run with accounting's facts, pure), ``trends`` (aggregation,
pure), ``refine`` (the pass, its state and the outbox hand-off), ``diagnose``
(gathering for ``why`` and ``failures``). Nothing here is on the prolog path,
and nothing is imported until used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

__all__ = ["refine_pass", "hold_notifications", "release_notifications", "explain", "failure_trends", "maybe_refine"]


def refine_pass(settings: "Settings", **kw: Any) -> Any:
    from gcm_checks.accounting.refine import refine_pass as f

    return f(settings, **kw)


def hold_notifications(settings: "Settings", job_key: str, **kw: Any) -> Any:
    from gcm_checks.accounting.refine import hold_notifications as f

    return f(settings, job_key, **kw)


def release_notifications(settings: "Settings", report: Any, **kw: Any) -> Any:
    from gcm_checks.accounting.refine import release_notifications as f

    return f(settings, report, **kw)


def explain(job_id: str, settings: Optional["Settings"] = None, **kw: Any) -> Any:
    from gcm_checks.accounting.diagnose import explain as f

    return f(job_id, settings, **kw)


def failure_trends(settings: Optional["Settings"] = None, **kw: Any) -> Any:
    from gcm_checks.accounting.diagnose import failure_trends as f

    return f(settings, **kw)


def maybe_refine(settings: "Settings", node: str) -> Any:
    """Health-mode hook: a pass only on ``accounting.designated_node`` (and
    only when due); None elsewhere, at the cost of reading one config key."""
    acc = settings.accounting
    if not acc.designated_node or acc.designated_node != node:
        return None
    return refine_pass(settings, node=node)
