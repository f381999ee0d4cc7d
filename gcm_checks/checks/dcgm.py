"""DCGM diagnostics after a job (epilog) and during qualification.

The gatherer runs the diag once (bounded); the check only judges the report:
one ``fail`` per GPU that failed any test, naming the test, DCGM's error id and
its text; ``warn`` per GPU that only warned; ``unknown`` when DCGM could not
tell us anything. "dcgmi missing" and "nv-hostengine down" are ``unknown``:
they say nothing about the GPUs (rule 2).

Simulation: a scenario (``ctx.sim``) replaces dcgmi with its ``dcgm_diag`` key
(see ``gcm_checks.dcgm.CannedBackend``). A scenario without that key behaves
like a node without DCGM installed: ``unknown``, never ``fail``.
"""

from __future__ import annotations

from typing import Any, Dict, List

from gcm_checks.registry import gatherer, register
from gcm_checks.result import CheckResult, failed, passed, unknown, warned

CHECK_ID = "dcgm.diag"

# Never start a diag with less time than this left: it would be killed before
# it could say anything, and the kill itself is what wedges some hostengines.
_MIN_START_S = 5.0


def diag_level(ctx: Any) -> int:
    """The runner may raise the level (2 after a job that ended with hardware suspicion)."""
    override = getattr(ctx, "dcgm_level", None)
    if override is not None:
        return int(override)
    return int(ctx.settings.get("dcgm.level", 1) or 1)


def diag_timeout(ctx: Any, level: int) -> float:
    from gcm_checks.dcgm import DEFAULT_TIMEOUT_S

    configured = ctx.settings.get("dcgm.timeout_s", None)
    timeout = float(configured) if configured else DEFAULT_TIMEOUT_S.get(level, 120.0)
    remaining = getattr(ctx, "remaining", None)
    if callable(remaining):
        left = float(remaining()) - 1.0  # leave a second to judge and report
        if left < _MIN_START_S:
            return 0.0
        timeout = min(timeout, left)
    return timeout


@gatherer("dcgm")
def gather_dcgm(ctx: Any):
    # Lazy import: the prolog never runs DCGM and must not pay for it (rule 7).
    from gcm_checks import dcgm

    level = diag_level(ctx)
    timeout = diag_timeout(ctx, level)
    sim = getattr(ctx, "sim", None)
    if sim is not None:
        canned = sim.get("dcgm_diag") if hasattr(sim, "get") else None
        if canned is None:
            return dcgm.could_not_tell(level, "sim", "dcgmi not installed (simulation scenario has no dcgm_diag)")
        backend: Any = dcgm.CannedBackend(canned)
    else:
        backend = dcgm.DcgmiBackend(ctx.settings.get("dcgm.dcgmi", None) or "dcgmi")
    return dcgm.run_diag(level, timeout, backend)


@register(CHECK_ID, tags=["epilog", "qualify"], needs="dcgm")
def check_dcgm_diag(report: Any, settings: Any) -> List[CheckResult]:
    """Every GPU's DCGM diag results: fail per failed GPU, warn per warned GPU."""
    from gcm_checks.dcgm import DiagStatus

    if not report.ok:
        return [unknown(CHECK_ID, f"DCGM diag level {report.level}: {report.problem}", level=report.level, source=report.source)]

    results: List[CheckResult] = []
    by_subject: Dict[str, list] = report.by_subject()
    for subject in sorted(by_subject, key=_subject_order):
        entries = by_subject[subject]
        bad = [e for e in entries if e.status is DiagStatus.FAIL]
        warn = [e for e in entries if e.status is DiagStatus.WARN]
        odd = [e for e in entries if e.status is DiagStatus.UNRECOGNISED]
        where = subject or "node"
        details = {"level": report.level, "version": report.version, "entity": subject}
        if bad:
            results.append(
                failed(
                    CHECK_ID,
                    f"DCGM diag level {report.level} failed on {where}: {_summarise(bad)}",
                    subject,
                    failures=[_entry_detail(e) for e in bad],
                    warnings=[_entry_detail(e) for e in warn],
                    **details,
                )
            )
        elif warn:
            results.append(
                warned(
                    CHECK_ID,
                    f"DCGM diag level {report.level} warned on {where}: {_summarise(warn)}",
                    subject,
                    warnings=[_entry_detail(e) for e in warn],
                    **details,
                )
            )
        elif odd:
            # A status word we do not know (a future DCGM): say so rather
            # than guess in either direction.
            results.append(
                unknown(
                    CHECK_ID,
                    f"DCGM diag level {report.level} on {where}: unrecognised status "
                    + ", ".join(sorted({f"{e.test}={e.raw_status!r}" for e in odd})),
                    subject,
                    **details,
                )
            )
    if not results:
        ran = [e for e in report.entries if e.status is DiagStatus.PASS]
        gpus = report.gpu_ids()
        results.append(
            passed(
                CHECK_ID,
                f"DCGM diag level {report.level}: {len({e.test for e in ran})} tests passed on {len(gpus)} GPUs",
                level=report.level,
                version=report.version,
                gpus=gpus,
            )
        )
    return results


def _subject_order(subject: str):
    group, _, num = subject.rpartition(" ")
    return (group, int(num)) if num.isdigit() else (subject, -1)


def _summarise(entries: list, limit: int = 3) -> str:
    parts = []
    for e in entries[:limit]:
        err = "; ".join(x.describe() for x in e.errors) or "no detail from DCGM"
        parts.append(f"test '{e.test}' ({err})")
    more = len(entries) - limit
    return ", ".join(parts) + (f" and {more} more" if more > 0 else "")


def _entry_detail(e: Any) -> dict:
    return {
        "test": e.test,
        "category": e.category,
        "status": e.raw_status,
        "errors": [{"error_id": x.error_id, "text": x.text} for x in e.errors],
    }
