"""DCGM diagnostics after a job (epilog) and during qualification.

The gatherer runs the diag once (bounded); the check only judges the report:
one result per GPU that did not pass, naming the test, DCGM's error id and its
text. A GPU fails only when DCGM's own severity for the error says the
hardware is bad; a node setting (persistence mode off) or "can still perform
workload" warns. "dcgmi missing", "nv-hostengine down" and DCGM's own
machinery failing are ``unknown``: they say nothing about the GPUs (rule 2).

The diag runs through a source (``gcm_checks.gather.sources``). The host's
(``gcm_checks.gather.dcgm_source``) uses DCGM's Python bindings when
``dcgm.use_pydcgm`` allows and they are installed (``gcm_checks.gather.dcgm_py``:
a child process killed at the deadline), else ``dcgmi``; both give the same
report. Simulation injects the scenario's ``dcgm_diag`` in dcgmi's place (see
``gcm_checks.sim.dcgm.CannedBackend``); a scenario without that key behaves
like a node without DCGM installed: ``unknown``, never ``fail``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from gcm_checks.registry import gatherer, register
from gcm_checks.result import CheckResult, Status, cannot_tell, ok

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

CHECK_ID = "dcgm.diag"

# Never start a diag with less time than this left: it would be killed before
# it could say anything, and the kill itself is what wedges some hostengines.
_MIN_START_S = 5.0


def diag_level(ctx: Any) -> int:
    """The suite may raise the level (2 after a job that ended with hardware suspicion)."""
    override = getattr(ctx, "dcgm_level", None)
    if override is not None:
        return int(override)
    return ctx.settings.dcgm.level


def diag_timeout(ctx: Any, level: int) -> float:
    from gcm_checks.gather.dcgm_model import DEFAULT_TIMEOUT_S

    configured = ctx.settings.dcgm.timeout_s
    timeout = float(configured) if configured else DEFAULT_TIMEOUT_S.get(level, 120.0)
    remaining = getattr(ctx, "remaining", None)
    if callable(remaining):
        # Leave room for the kill (proc waits up to 1 s for a killed child)
        # plus judging, inside the suite's own gather deadline.
        left = float(remaining()) - 1.5
        if left < _MIN_START_S:
            return 0.0
        timeout = min(timeout, left)
    return timeout


def diag_gpus(ctx: Any):
    """The job's GPUs (``ctx.job["gpus"]``, from SLURM_JOB_GPUS) unless
    ``dcgm.scope`` is ``node``; None = every GPU."""
    from gcm_checks.gather.dcgm import parse_gpu_list

    if ctx.settings.dcgm.scope == "node":
        return None
    job = getattr(ctx, "job", None) or {}
    return parse_gpu_list(job.get("gpus")) if hasattr(job, "get") else None


@gatherer("dcgm")
def gather_dcgm(ctx: Any):
    # Lazy import: the prolog never runs DCGM and must not pay for it (rule 7).
    from gcm_checks.gather import dcgm
    from gcm_checks.gather.sources import dcgm_source

    level = diag_level(ctx)
    timeout = diag_timeout(ctx, level)
    try:
        gpus = diag_gpus(ctx)
    except ValueError as e:
        return dcgm.could_not_tell(level, "dcgmi", f"cannot read the job's GPU list: {e}")
    # The host's dcgmi or pydcgm, or what simulation injected.
    return dcgm.run_diag(level, timeout, dcgm_source(ctx).backend(ctx, gpus))


@register(CHECK_ID, tags=["epilog", "qualify"], needs="dcgm")
def check_dcgm_diag(report: Any, settings: "Settings") -> List[CheckResult]:
    """Every GPU's DCGM diag results, one result per GPU that did not pass.

    A failed test fails the GPU only when DCGM's own severity says the
    hardware is bad; configuration findings and "can still perform workload"
    warn, and failures of DCGM's own machinery (CUDA context, EUD harness,
    internal errors) are unknown (gcm_checks.gather.dcgm_model.classify_error).
    """
    from gcm_checks.gather.dcgm_model import DiagStatus

    if not report.ok:
        return [cannot_tell(f"DCGM diag level {report.level}: {report.problem}", level=report.level, source=report.source)]

    results: List[CheckResult] = []
    by_subject: Dict[str, list] = report.by_subject()
    for subject in sorted(by_subject, key=_subject_order):
        judged = [(e, *_judge(e)) for e in by_subject[subject] if e.status not in (DiagStatus.PASS, DiagStatus.SKIP)]
        if not judged:
            continue
        worst = max((st for _, st, _ in judged), key=lambda st: st.rank)
        lead = [(e, kind) for e, st, kind in judged if st is worst]
        where = subject or "node"
        text = _summarise(lead)
        if worst is Status.FAIL:
            message = f"DCGM diag level {report.level} failed on {where}: {text}"
        elif worst is Status.UNKNOWN:
            message = f"DCGM diag level {report.level} could not test {where}: {text}"
        else:
            message = f"DCGM diag level {report.level} warned on {where}: {text}"
        others = len(judged) - len(lead)
        if others:
            message += f" (+{others} lesser finding{'s' if others > 1 else ''})"
        results.append(
            CheckResult(
                "",
                worst,
                message,
                subject,
                details={
                    "level": report.level,
                    "version": report.version,
                    "entity": subject,
                    "findings": [_entry_detail(e, st, kind) for e, st, kind in judged],
                },
            )
        )
    if not results:
        ran = [e for e in report.entries if e.status is DiagStatus.PASS]
        gpus = report.gpu_ids()
        results.append(
            ok(f"DCGM diag level {report.level}: {len({e.test for e in ran})} tests passed on {len(gpus)} GPUs",
               level=report.level, version=report.version, gpus=gpus)
        )
    return results


# What each finding kind means for the verdict, and how to say it.
_FINDING_STATUS = {"hardware": Status.FAIL, "software": Status.UNKNOWN, "config": Status.WARN, "monitor": Status.WARN, "xid": Status.WARN}
_FINDING_WORDS = {
    "hardware": "",
    "software": "DCGM could not run it, not a hardware verdict: ",
    "config": "node configuration, not hardware: ",
    "monitor": "DCGM: can still run work, monitor: ",
    "xid": "XID seen by DCGM, judged by the xid checks: ",
}


def _judge(entry: Any):
    """(status, finding kind) for one non-passing entry."""
    from gcm_checks.gather.dcgm_model import DiagStatus, entry_finding

    if entry.status is DiagStatus.UNRECOGNISED:
        # A status word we do not know (a future DCGM): say so rather than
        # guess in either direction.
        return Status.UNKNOWN, "unrecognised"
    if entry.status is DiagStatus.WARN:
        return Status.WARN, "warning"
    kind = entry_finding(entry).value
    return _FINDING_STATUS[kind], kind


def _subject_order(subject: str):
    group, _, num = subject.rpartition(" ")
    return (group, int(num)) if num.isdigit() else (subject, -1)


def _summarise(entries: list, limit: int = 3) -> str:
    parts = []
    for e, kind in entries[:limit]:
        if kind == "unrecognised":
            parts.append(f"test '{e.test}' reported unrecognised status {e.raw_status!r}")
            continue
        err = "; ".join(x.describe() for x in e.errors) or "no detail from DCGM"
        words = _FINDING_WORDS.get(kind, "")
        if kind == "config":
            from gcm_checks.gather.dcgm_model import config_setting

            setting = config_setting(e)
            if setting:
                words = f"node setting {setting}, not hardware: "
        parts.append(f"test '{e.test}' ({words}{err})")
    more = len(entries) - limit
    return ", ".join(parts) + (f" and {more} more" if more > 0 else "")


def _entry_detail(e: Any, status: Status, kind: str) -> dict:
    return {
        "test": e.test,
        "category": e.category,
        "dcgm_status": e.raw_status,
        "verdict": status.value,
        "finding": kind,
        "setting": _setting(e) if kind == "config" else None,
        "errors": [
            {"error_id": x.error_id, "severity": x.severity, "category": x.category, "text": x.text} for x in e.errors
        ],
    }


def _setting(e: Any) -> Optional[str]:
    from gcm_checks.gather.dcgm_model import config_setting

    return config_setting(e)
