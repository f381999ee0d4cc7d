"""Drain and resume with ownership: never overwrite or resume a drain
that is not ours (``gcm:``), at most one update RPC, recorded locally.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from gcm_checks.logs import NullLog
from gcm_checks.slurm.backends import DryRunBackend, SlurmBackend
from gcm_checks.slurm.local_state import drain_record, forget_drain, record_drain
from gcm_checks.slurm.parse import SlurmError
from gcm_checks.slurm.reasons import GCM_PREFIX, sanitize_reason


@dataclass(frozen=True)
class DrainOutcome:
    # drained | already | kept_foreign | error | would_drain
    action: str
    reason: str
    detail: str = ""
    previous_reason: Optional[str] = None


@dataclass(frozen=True)
class ResumeOutcome:
    # resumed | would_resume | not_drained | kept_foreign | error | reason_changed | not_passed
    action: str
    detail: str = ""
    previous_reason: Optional[str] = None


def apply_drain(
    backend: SlurmBackend,
    node: str,
    reason: str,
    *,
    state_dir: Optional[str] = None,
    log: Any = None,
    check: str = "",
) -> DrainOutcome:
    """Drain ``node`` with our reason unless someone else already owns it.

    Reads the node first (REQUEST_NODE_INFO), then at most one
    REQUEST_UPDATE_NODE. A foreign drain (reason not starting ``gcm:``) is kept
    as it is and our finding is only logged: an admin's maintenance reason
    is worth more than ours, and it keeps the node out of service anyway.
    Slurm has no compare-and-set for node updates, so an admin drain landing
    between our read and our update (milliseconds) would be replaced; the
    admin's ``scontrol`` wins again if repeated.
    """
    log = log if log is not None else NullLog()
    reason = reason if reason.startswith(GCM_PREFIX) else f"{GCM_PREFIX} {reason}"
    reason = sanitize_reason(reason)
    try:
        info = backend.node_info(node)
    except SlurmError as e:
        log.error("slurm_unreadable", node=node, error=str(e), skipped="drain", reason=reason)
        return DrainOutcome("error", reason, str(e))
    if info.drained and not info.gcm_owned:
        log.warning("slurm_drain_kept", node=node, owner=info.reason_user or "?", held=info.reason, finding=reason)
        return DrainOutcome("kept_foreign", reason, "drained by someone else", info.reason)
    if info.drained and info.reason == reason:
        record_drain(state_dir, node, reason, check)
        return DrainOutcome("already", reason, "", info.reason)
    if info.drained:
        # Already out of service by an earlier gcm finding (the prolog's, and
        # now the epilog's or health's): keep the first reason. Rewriting it
        # costs an RPC per finding and makes the reason flap in sinfo -R.
        log.info("slurm_already_drained", node=node, held=info.reason, finding=reason)
        return DrainOutcome("already", reason, "drained by an earlier gcm finding", info.reason)
    if not info.drained and info.reason and not info.gcm_owned:
        # e.g. DOWN with "Not responding": not a drain, but not ours to rewrite
        # either. A drain would replace the reason, so log and keep it.
        if "DOWN" in info.state.upper():
            log.warning("slurm_drain_kept", node=node, state=info.state, held=info.reason, finding=reason)
            return DrainOutcome("kept_foreign", reason, "down with a foreign reason", info.reason)
    try:
        backend.drain(node, reason)
    except SlurmError as e:
        log.error("slurm_update_failed", node=node, update="drain", error=str(e), reason=reason)
        return DrainOutcome("error", reason, str(e), info.reason)
    if isinstance(backend, DryRunBackend):
        return DrainOutcome("would_drain", reason, "dry run", info.reason)
    record_drain(state_dir, node, reason, check)
    log.warning("slurm_drained", node=node, reason=reason)
    return DrainOutcome("drained", reason, "", info.reason)


def apply_resume(
    backend: SlurmBackend,
    node: str,
    *,
    force: bool = False,
    state_dir: Optional[str] = None,
    log: Any = None,
    expect_reason: Optional[str] = None,
) -> ResumeOutcome:
    """Resume ``node`` only if its drain is ours (``gcm:``), or if ``force``.

    ``expect_reason`` (health mode) narrows "ours" to the very drain we made:
    if the reason changed since, someone - perhaps an admin with
    ``gcm-checks node drain`` - drained it again, and it is not ours to lift.
    """
    log = log if log is not None else NullLog()
    try:
        info = backend.node_info(node)
    except SlurmError as e:
        log.error("slurm_unreadable", node=node, error=str(e), skipped="resume")
        return ResumeOutcome("error", str(e))
    if not info.drained:
        forget_drain(state_dir, node)
        return ResumeOutcome("not_drained", info.state, info.reason)
    if expect_reason is not None and info.gcm_owned and info.reason != expect_reason and not force:
        log.info("slurm_resume_refused", node=node, why="drained again since our drain", held=info.reason)
        forget_drain(state_dir, node)
        return ResumeOutcome("reason_changed", "drained again since our drain", info.reason)
    if not info.gcm_owned and not force:
        log.warning("slurm_resume_refused", node=node, why="not drained by gcm", owner=info.reason_user or "?",
                    held=info.reason)
        return ResumeOutcome("kept_foreign", "drained by someone else", info.reason)
    if not info.gcm_owned and force:
        log.warning("slurm_resume_forced", node=node, owner=info.reason_user or "?", held=info.reason)
    try:
        backend.resume(node)
    except SlurmError as e:
        log.error("slurm_update_failed", node=node, update="resume", error=str(e))
        return ResumeOutcome("error", str(e), info.reason)
    if isinstance(backend, DryRunBackend):
        # Nothing was resumed: never say so (one wording: "would resume").
        log.info("slurm_would_resume", node=node, held=info.reason)
        return ResumeOutcome("would_resume", "dry run", info.reason)
    forget_drain(state_dir, node)
    log.info("slurm_resumed", node=node, was=info.reason)
    return ResumeOutcome("resumed", "", info.reason)


# Drains by these checks are never lifted automatically. They judge events
# (an XID in the kernel log, a diagnostic run at job end), not a state that a
# later run can re-measure: "no new XID since the last scan" passes right after
# the drain and says nothing about whether the GPU was repaired.
NO_AUTO_RESUME = ("xid.", "dcgm.")


def resume_if_passed(
    backend: SlurmBackend,
    node: str,
    passed_checks: Sequence[str],
    *,
    state_dir: Optional[str],
    log: Any = None,
) -> Optional[ResumeOutcome]:
    """Health mode: resume our own drain once the check that caused it passes.

    Without a local drain record this makes no Slurm call at all, so a healthy
    node costs zero RPCs. The ownership check against slurmctld still happens
    before the resume (the admin may have re-drained the node since).
    """
    rec = drain_record(state_dir, node)
    if rec is None:
        return None
    log = log if log is not None else NullLog()
    check = rec.get("check") or ""
    if not check or check.startswith(NO_AUTO_RESUME):
        log.info("slurm_stays_drained", node=node, check=check or None, why="not re-measurable: resume by hand")
        return ResumeOutcome("not_passed", check, rec.get("reason"))
    if check not in passed_checks:
        log.info("slurm_stays_drained", node=node, check=check, why="did not run or did not pass")
        return ResumeOutcome("not_passed", check, rec.get("reason"))
    return apply_resume(backend, node, state_dir=state_dir, log=log, expect_reason=rec.get("reason"))
