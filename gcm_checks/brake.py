"""The mass-drain brake: a shared cause must not drain the fleet.

A fabric-manager outage, a bad driver rollout or a broken shared filesystem
makes every node fail the same check within minutes, and each node would
drain itself. Before draining (the failure path only: a drain already costs
a Slurm call), a node counts the nodes of its partition(s) that already
carry a gcm drain for the same check, set within ``slurm.brake_window_s``.
If draining this node too would put more than ``slurm.brake_share`` of them
out, or ``slurm.brake_count`` nodes are already out, it does not drain: the
verdict becomes ``unknown`` ("suspected cluster-wide cause"), the admin gets
one loud log line (and the ``gcm_drain_braked`` metric) per node and check
per window, and the job is not requeued.

Limits (docs/slurm.md): nodes that fail at the same instant all read the
census before any of them drained, so the brake can overshoot by the number
of simultaneous failures; a drain whose time Slurm does not show counts as
recent; a node in no partition is judged against the whole cluster.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, List, Optional

from gcm_checks import slurm

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings


def judge(census: List["slurm.CensusEntry"], node: str, check: str, *, share: Optional[float], count: Optional[int],
          window_s: float, now: float) -> Optional[str]:
    """Why the brake holds this drain back, or None to drain. Pure: tested from data."""
    me = next((e for e in census if e.name == node), None)
    mine = set(me.partitions) if me is not None else set()
    peers = [e for e in census if e.name != node and (not mine or not e.partitions or mine & set(e.partitions))]
    same = [e for e in peers if e.drained and slurm.reason_check(e.reason) == check
            and (e.since is None or now - e.since <= window_s)]
    total = len(peers) + 1
    where = f"partition {','.join(sorted(mine))}" if mine else "the cluster"
    if count is not None and len(same) >= count:
        return f"{len(same)} nodes of {where} already drained for {check} in the last {window_s:.0f}s (brake_count {count})"
    if share is not None and (len(same) + 1) / total > share:
        return (f"{len(same)} of {total} nodes of {where} already drained for {check} in the last {window_s:.0f}s; "
                f"one more would exceed brake_share {share:g}")
    return None


def engaged(settings: "Settings", node: str, check: str, *, log: Any = None, backend: Any = None,
            now: Optional[float] = None) -> Optional[str]:
    """Read the census (one Slurm call) and judge. A census that cannot be
    read never brakes: the brake must not stop a real drain."""
    share = settings.slurm.brake_share
    count = settings.slurm.brake_count
    if share is None and count is None:
        return None
    backend = backend or slurm.backend_from_settings(settings, log=log)
    try:
        census = slurm.node_census(backend)
    except slurm.SlurmError as e:
        if log is not None:
            log.warning("brake_census_failed", error=str(e))
        return None
    why = judge(census, node, check, share=share, count=count,
                window_s=settings.slurm.brake_window_s, now=time.time() if now is None else now)
    if why is not None:
        why = f"suspected cluster-wide cause: {why}"
    return why
