"""Apply a node decision (gcm_checks.decide) to Slurm and to local state.

The decision core says what to do; this is the one place that does it for
the prolog, the epilog and health: report-only and a broken config change
nothing (a ``would_drain`` log line and a local record for ``node status``),
the mass-drain brake is asked on the failure path only, and the drain goes
through ``slurm.apply_drain`` and its ownership rules. Nothing here runs on
a healthy run but one ``stat``.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

from gcm_checks.logs import slurmd_line  # the one plain stderr line (logs.py says when)


def node_context(args: Any, settings: "Settings", **kw: Any) -> Any:
    """The decision's context from the command line and the settings."""
    from gcm_checks.decide import NodeContext

    # As slurm.report_only(), without importing the slurm package on the healthy path.
    report_only = settings.report_only
    return NodeContext(report_only=report_only, dry_run=bool(getattr(args, "dry_run", False)),
                       config_error=getattr(settings, "config_error", None), **kw)


def decide_and_drain(args: Any, settings: "Settings", node: str, ctx: Any, results: List[Any], mode: str,
                     log: Any) -> Tuple[Any, Optional[str]]:
    """The prolog's and the epilog's one decide/apply step: decide, make the
    drain it asks for, and decide again when the mass-drain brake held the
    drain back - a suspected cluster-wide cause is unknown, no drain, no
    requeue. Returns (decision, action); action is "braked" then.
    """
    from gcm_checks.decide import decide

    decision = decide(results, mode, node_context(args, settings))
    action = apply_decision(args, settings, node, ctx, decision, log)
    if action and action.startswith("braked: "):
        decision = decide(results, mode, node_context(args, settings, brake=action[len("braked: "):]))
        action = "braked"
    return decision, action


def apply_decision(args: Any, settings: "Settings", node: str, ctx: Any, decision: Any, log: Any) -> Optional[str]:
    """Make the drain a decision asks for, under the ownership rules.

    Returns the slurm.DrainOutcome action ("drained", "already", ...), or
    "would drain" when the decision changes nothing (report-only, broken
    config, dry run); None when there is nothing to drain.
    """
    note_would_drain(ctx, decision, log)
    if decision.node_action != "drain":
        return None
    from gcm_checks import slurm

    if decision.report_only:
        log.warning("would_drain", reason=decision.reason, report_only=True, config_error=decision.config_error)
        return "would drain"
    if decision.mode == "prolog" or decision.mode == "epilog":
        brake = brake_for(settings, node, decision, log)
        if brake is not None:
            return brake
    backend = slurm.backend_from_settings(settings, dry_run=decision.dry_run,
                                          out=sys.stderr if args.json else sys.stdout, log=log)
    outcome = slurm.apply_drain(backend, node, decision.reason, state_dir=str(ctx.state_dir), log=log,
                                check=decision.failure.check)
    action = "would drain" if outcome.action == "would_drain" else outcome.action
    log.warning("drain", action=action, reason=decision.reason, detail=outcome.detail)
    return action


def note_would_drain(ctx: Any, decision: Any, log: Any) -> None:
    """Keep what report-only decided for ``node status``; a file write only
    when such a decision is made or cleared, never on a plain healthy run."""
    if decision.dry_run:
        return
    from gcm_checks import state

    try:
        if decision.node_action == "drain" and decision.report_only:
            why = "config error: built-in defaults, report-only" if decision.config_error else "report-only"
            state.record_would_drain(ctx.state_dir, ctx.node, decision.mode, decision.reason, why)
        elif decision.failure is None and os.path.exists(state._would_path(ctx.state_dir, ctx.node)):
            state.clear_would_drain(ctx.state_dir, ctx.node)
    except OSError as e:
        log.warning("would_drain_not_recorded", error=str(e))


def brake_for(settings: "Settings", node: str, decision: Any, log: Any) -> Optional[str]:
    """The mass-drain brake (gcm_checks.brake), when configured; never raises."""
    if settings.slurm.brake_share is None and settings.slurm.brake_count is None:
        return None
    try:
        from gcm_checks import brake

        ep = brake.engaged_episode(settings, node, decision.failure.check, log=log)
    except Exception as e:  # noqa: BLE001 - a broken brake must not stop a real drain
        log.warning("brake_failed", error=f"{type(e).__name__}: {e}")
        return None
    if ep is None:
        return None
    why = ep.why
    if _first_alert(settings, node, decision.failure.check):
        # One log line per node and check per brake window, not one per job.
        log.error("mass_drain_brake", check=decision.failure.check, reason=decision.reason, why=why, episode=ep.key)
        slurmd_line(f"gcm-checks {decision.mode} {node}: NOT DRAINED - {why}; our finding: {decision.reason}")
    else:
        log.info("mass_drain_brake_again", check=decision.failure.check, why=why)
    try:  # one admin notification per episode across all nodes (brake.alert)
        brake.alert(settings, node, ep, mode=decision.mode, reason=decision.reason, log=log,
                    dry_run=bool(getattr(decision, "dry_run", False)))
    except Exception as e:  # noqa: BLE001 - the alert never changes the verdict
        log.warning("brake_alert_failed", error=f"{type(e).__name__}: {e}")
    return "braked: " + why


def _first_alert(settings: "Settings", node: str, check: str) -> bool:
    import time

    from gcm_checks.jsonfile import read_json, write_json

    window = settings.slurm.brake_window_s
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in f"{node}.{check}")
    path = os.path.join(os.path.expanduser(settings.state_dir), f"brake-alert.{safe}.json")
    rec = read_json(path)
    now = time.time()
    if rec and isinstance(rec.get("time"), (int, float)) and now - rec["time"] < window:
        return False
    try:
        write_json(path, {"node": node, "check": check, "time": now}, durable=False)
    except OSError:
        pass  # cannot remember: alert every time rather than never
    return True
