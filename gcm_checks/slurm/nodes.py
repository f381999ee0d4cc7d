"""Many nodes in one read: ``list_nodes`` for ``node status`` and the
census the mass-drain brake (gcm_checks/brake.py) counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from gcm_checks.slurm.backends import ScontrolBackend, SlurmBackend
from gcm_checks.slurm.parse import _REASON_TAIL_RE, NodeInfo, SlurmError, _node_from_line, _none_if_null, parse_key_values


@dataclass(frozen=True)
class CensusEntry:
    """One node as the mass-drain brake counts it."""

    name: str
    partitions: Tuple[str, ...]
    drained: bool
    reason: Optional[str]
    since: Optional[float]  # when the reason was set (epoch), when Slurm says


def _census_from_line(line: str) -> CensusEntry:
    import datetime as dt

    kv = parse_key_values(line)
    info = _node_from_line(line)
    since = None
    m = _REASON_TAIL_RE.search(kv.get("Reason") or "")
    if m:
        try:
            since = dt.datetime.strptime(m.group(2), "%Y-%m-%dT%H:%M:%S").timestamp()  # slurmctld local time
        except ValueError:
            since = None
    parts = tuple(p for p in (_none_if_null(kv.get("Partitions")) or "").split(",") if p)
    return CensusEntry(info.name, parts, info.drained, info.reason, since)


def node_census(backend: SlurmBackend) -> List[CensusEntry]:
    """Every node's partitions and drain, in one read (REQUEST_NODE_INFO).

    Only the mass-drain brake calls this, and only on the failure path: a
    healthy run never reads the cluster.
    """
    real = getattr(backend, "reader", None) or backend
    if isinstance(real, ScontrolBackend):
        text = real._run("show", "node", "-o")
        return [_census_from_line(ln) for ln in text.splitlines() if ln.strip().startswith("NodeName=")]
    table = getattr(real, "nodes", None)
    infos = list(table.values()) if isinstance(table, dict) else (list(table(None)) if callable(table) else None)
    if infos is None:
        raise SlurmError("this backend cannot list nodes")
    return [CensusEntry(i.name, (), i.drained, i.reason, None) for i in infos]


def list_nodes(backend: SlurmBackend, names: Sequence[str] = ()) -> List[NodeInfo]:
    """NodeInfo for ``names`` (hostlist expressions allowed with scontrol), or all nodes."""
    bulk = getattr(backend, "nodes", None)
    if bulk is not None:
        return list(bulk(",".join(names) if names else None))
    if not names:
        raise SlurmError("listing all nodes needs the scontrol backend; name the nodes")
    return [backend.node_info(n) for n in names]
