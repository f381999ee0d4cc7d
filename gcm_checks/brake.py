"""The mass-drain brake: a shared cause must not drain the fleet.

A fabric-manager outage, a bad driver rollout or a broken shared filesystem
makes every node fail the same check within minutes, and each node would
drain itself. Before draining (the failure path only: a drain already costs
a Slurm call), a node counts the nodes of its partition(s) that already
carry a gcm drain for the same check, set within ``slurm.brake_window_s``.
If draining this node too would put more than ``slurm.brake_share`` of them
out, or ``slurm.brake_count`` nodes are already out, it does not drain: the
verdict becomes ``unknown`` ("suspected cluster-wide cause"), each braked
node logs one loud line (and sets the ``gcm_drain_braked`` metric) per check
per window, the job is not requeued, and ONE admin alert per episode goes
out through the notification outbox (``alert``).

One alert, not one per braked node: the nodes share no outbox, so
1. every braked node names the episode the same way (``Episode.key``: the
   cluster, the partition(s), the check and the time Slurm shows on the
   earliest drain counted - all read from the same census);
2. the first braked node to alert leaves a marker in its own node ``Extra``
   (``gcm brake <time> <episode id>``, one scontrol update per episode); a
   node that finds a marker for its episode in the node list does not send;
3. nodes braked at the same instant can both miss the marker: they send the
   same item key, so the ``Idempotency-Key`` / ``dedup_key`` / Message-ID are
   the same and a receiver that honours them keeps one.

Limits (docs/slurm.md): nodes that fail at the same instant all read the
census before any of them drained, so the brake can overshoot by the number
of simultaneous failures (and in the same way a plain mail relay can get two
alerts); a drain whose time Slurm does not show counts as recent; a node in
no partition is judged against the whole cluster; an episode whose earliest
drain leaves the window (or is resumed) while nodes still fail is a new
episode, so a long outage alerts at most once per window.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from gcm_checks import slurm

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings


def counted(census: List["slurm.CensusEntry"], node: str, check: str, *, window_s: float,
            now: float) -> Tuple[List["slurm.CensusEntry"], List["slurm.CensusEntry"], Tuple[str, ...]]:
    """(peers, the peers drained by gcm for ``check`` within the window, my partitions)."""
    me = next((e for e in census if e.name == node), None)
    mine = set(me.partitions) if me is not None else set()
    peers = [e for e in census if e.name != node and (not mine or not e.partitions or mine & set(e.partitions))]
    same = [e for e in peers if e.drained and slurm.reason_check(e.reason) == check
            and (e.since is None or now - e.since <= window_s)]
    return peers, same, tuple(sorted(mine))


def judge(census: List["slurm.CensusEntry"], node: str, check: str, *, share: Optional[float], count: Optional[int],
          window_s: float, now: float) -> Optional[str]:
    """Why the brake holds this drain back, or None to drain. Pure: tested from data."""
    peers, same, mine = counted(census, node, check, window_s=window_s, now=now)
    total = len(peers) + 1
    where = f"partition {','.join(mine)}" if mine else "the cluster"
    if count is not None and len(same) >= count:
        return f"{len(same)} nodes of {where} already drained for {check} in the last {window_s:.0f}s (brake_count {count})"
    if share is not None and (len(same) + 1) / total > share:
        return (f"{len(same)} of {total} nodes of {where} already drained for {check} in the last {window_s:.0f}s; "
                f"one more would exceed brake_share {share:g}")
    return None


@dataclass(frozen=True)
class Episode:
    """One braking episode as every braked node of it names it."""

    cluster: str
    check: str
    scope: str  # the partition(s), or "cluster"
    anchor: str  # when Slurm says the earliest counted drain was set (UTC), or the window's bucket
    drained: Tuple[str, ...]  # the nodes counted
    why: str

    @property
    def key(self) -> str:
        return f"{self.cluster or 'cluster'}/mass-drain-brake/{self.scope}/{self.check}/{self.anchor}"

    @property
    def marker_id(self) -> str:
        # Short, and free of characters Extra or a JSON key would mangle.
        return hashlib.sha256(self.key.encode()).hexdigest()[:12]


def episode(census: List["slurm.CensusEntry"], node: str, check: str, *, window_s: float, now: float,
            cluster: str, why: str) -> Episode:
    """The episode this braked node is part of. Pure: tested from data.

    Its anchor is the earliest counted drain's time, which every node reads
    from the same Slurm reason tail ``[root@2026-...]``; without any time
    (Slurm did not show one) the window's bucket of ``now`` stands in."""
    _peers, same, mine = counted(census, node, check, window_s=window_s, now=now)
    times = [e.since for e in same if e.since is not None]
    t = min(times) if times else (now // window_s) * window_s
    anchor = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
    return Episode(cluster, check, ",".join(mine) or "cluster", anchor, tuple(sorted(e.name for e in same)), why)


def cluster_name(env: Optional[Mapping[str, str]] = None) -> str:
    """SLURM_CLUSTER_NAME (prolog, epilog), else ClusterName from slurm.conf
    (health runs without it): every mode must name an episode the same way."""
    env = os.environ if env is None else env
    if env.get("SLURM_CLUSTER_NAME"):
        return env["SLURM_CLUSTER_NAME"]
    try:
        with open(env.get("SLURM_CONF") or "/etc/slurm/slurm.conf", "r", encoding="utf-8", errors="replace") as f:
            for line in f.read(1 << 20).splitlines():
                k, _, v = line.split("#", 1)[0].strip().partition("=")
                if k.strip().lower() == "clustername" and v.strip():
                    return v.strip()
    except OSError:
        pass
    return ""


def engaged_episode(settings: "Settings", node: str, check: str, *, log: Any = None, backend: Any = None,
                    now: Optional[float] = None) -> Optional[Episode]:
    """Read the census (one Slurm call) and judge; the episode when braked.
    A census that cannot be read never brakes: the brake must not stop a
    real drain."""
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
    window_s = settings.slurm.brake_window_s
    now = time.time() if now is None else now
    why = judge(census, node, check, share=share, count=count, window_s=window_s, now=now)
    if why is None:
        return None
    return episode(census, node, check, window_s=window_s, now=now, cluster=cluster_name(),
                   why=f"suspected cluster-wide cause: {why}")


def engaged(settings: "Settings", node: str, check: str, *, log: Any = None, backend: Any = None,
            now: Optional[float] = None) -> Optional[str]:
    """Why the brake holds this drain back (``engaged_episode``), or None."""
    ep = engaged_episode(settings, node, check, log=log, backend=backend, now=now)
    return ep.why if ep is not None else None


# --------------------------------------------------------------------------
# The one admin alert per episode


def _alert_record(settings: "Settings", ep: Episode) -> str:
    return os.path.join(os.path.expanduser(settings.state_dir), f"brake-episode.{ep.marker_id}.json")


def _node_list(backend: Any) -> List[Any]:
    """Every node's NodeInfo (Extra included), one REQUEST_NODE_INFO."""
    real = getattr(backend, "reader", None) or backend
    table = getattr(real, "nodes", None)
    if isinstance(table, dict):
        return list(table.values())
    if callable(table):
        return list(table(None))
    raise slurm.SlurmError("this backend cannot list nodes")


def marker_segment(ep: Episode, now: float) -> str:
    """Our Extra segment saying this node alerted for ``ep`` (slurm.merge_extra's ``gcm <slot> ...`` form)."""
    return f"gcm brake {time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime(now))} {ep.marker_id}"


def alerted_elsewhere(nodes: List[Any], node: str, ep: Episode) -> Optional[str]:
    """The node whose Extra carries this episode's marker, if any. Pure."""
    for info in nodes:
        if info.name != node and ep.marker_id in (info.extra or ""):
            return info.name
    return None


def alert_text(ep: Episode, node: str, mode: str, reason: str) -> Dict[str, Any]:
    where = f"partition {ep.scope}" if ep.scope != "cluster" else "the cluster"
    drained = ", ".join(ep.drained[:20]) + (f" and {len(ep.drained) - 20} more" if len(ep.drained) > 20 else "")
    subject = (f"[gcm] {ep.cluster or 'cluster'}: mass-drain brake on {ep.check} - {len(ep.drained)} nodes of {where} "
               f"drained, further drains held back")
    text = "\n".join([
        f"{len(ep.drained)} nodes of {where} were drained by gcm-checks for {ep.check} since {ep.anchor}: {drained}.",
        f"{node} ({mode}) failed the same check and was NOT drained: {ep.why}.",
        f"Its finding: {reason}",
        "",
        "Nodes that fail this check now run jobs with the verdict 'unknown' instead of draining. Look for a shared",
        "cause (fabric manager, driver rollout, shared filesystem), then resume the drained nodes",
        "(gcm-checks node resume NODE) once it is fixed. Every braked node logs a mass_drain_brake line and sets",
        "gcm_drain_braked=1; this is the one alert of this episode (docs/slurm.md, 'The mass-drain brake').",
    ])
    return {"event": "mass_drain_brake", "subject": subject, "text": text, "cluster": ep.cluster, "check": ep.check,
            "scope": ep.scope, "episode": ep.key, "since": ep.anchor, "drained": list(ep.drained),
            "observed_by": node, "mode": mode, "why": ep.why, "finding": reason}


def alert(settings: "Settings", node: str, ep: Episode, *, mode: str, reason: str, log: Any = None, backend: Any = None,
          dry_run: bool = False, now: Optional[float] = None) -> Dict[str, Any]:
    """Send the episode's one admin alert unless it went out already (from
    this node: a local record; from another: its Extra marker). Never raises."""
    from gcm_checks.jsonfile import read_json

    now = time.time() if now is None else now
    out: Dict[str, Any] = {"episode": ep.key}
    path = _alert_record(settings, ep)
    rec = read_json(path)
    if rec:
        out["sent"] = False
        out["why"] = f"already handled on this node ({rec.get('how')})"
        return out
    if dry_run:
        out.update(sent=False, why="dry run")
        return out
    if not settings.notify.admin_routes():
        # Nobody to tell: no marker either (no Slurm write for nothing).
        out.update(sent=False, why="no admin channel configured (notify.admin)")
        return out
    try:
        backend = backend or slurm.backend_from_settings(settings, log=log)
        nodes = _node_list(backend)
        other = alerted_elsewhere(nodes, node, ep)
        if other is not None:
            out.update(sent=False, why=f"{other} alerted for this episode")
            _remember(path, ep, f"alerted by {other}", now)
            return out
        mine = next((i for i in nodes if i.name == node), None)
        fmt = getattr(backend, "extra_format", None) or "auto"
        backend.set_extra(node, slurm.merge_extra(mine.extra if mine is not None else None, marker_segment(ep, now), fmt))
        out["marker"] = node
    except Exception as e:  # noqa: BLE001 - no marker: send anyway (the receiver can still dedupe by key)
        out["marker_error"] = f"{type(e).__name__}: {e}"
    from gcm_checks.notify.admin import send_alert

    out["notification"] = send_alert(settings, ep.key, alert_text(ep, node, mode, reason), node=node)
    out["sent"] = bool(out["notification"].get("queued")) and "error" not in out["notification"]
    _remember(path, ep, "alerted by this node", now)
    if log is not None:
        log.error("mass_drain_brake_alert", episode=ep.key, queued=sorted(out["notification"].get("queued") or ()),
                  marker=out.get("marker"), marker_error=out.get("marker_error"))
    return out


# Episode records older than this are forgotten (an episode's key names its
# earliest drain, so an old key never comes back once that drain aged out).
RECORD_KEEP_S = 7 * 86400.0


def _remember(path: str, ep: Episode, how: str, now: float) -> None:
    import glob

    from gcm_checks.jsonfile import write_json

    try:
        write_json(path, {"episode": ep.key, "how": how, "time": now}, durable=False)
    except OSError:
        pass  # cannot remember: the Extra marker still stops a second alert
    wall = time.time()  # file ages are wall-clock, whatever ``now`` a test passes
    for old in glob.glob(os.path.join(glob.escape(os.path.dirname(path)), "brake-episode.*.json")):
        try:
            if wall - os.stat(old).st_mtime > RECORD_KEEP_S:
                os.unlink(old)
        except OSError:
            continue
