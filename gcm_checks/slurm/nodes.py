"""Many nodes in one read: ``list_nodes`` for ``node status`` and the
census the mass-drain brake (gcm_checks/brake.py) counts.
"""

from __future__ import annotations

from typing import List, Sequence

from gcm_checks.slurm.backends import ScontrolBackend, SlurmBackend
from gcm_checks.slurm.parse import CensusEntry, NodeInfo, SlurmError, parse_census


def node_census(backend: SlurmBackend) -> List[CensusEntry]:
    """Every node's partitions and drain, in one read (REQUEST_NODE_INFO).

    Only the mass-drain brake calls this, and only on the failure path: a
    healthy run never reads the cluster.
    """
    real = getattr(backend, "reader", None) or backend
    if isinstance(real, ScontrolBackend):
        return parse_census(real.show_nodes())
    table = getattr(real, "nodes", None)
    infos = list(table.values()) if isinstance(table, dict) else (list(table(None)) if callable(table) else None)
    if infos is None:
        raise SlurmError("this backend cannot list nodes")
    return [CensusEntry(i.name, (), i.drained, i.reason, None) for i in infos]


def list_nodes(backend: SlurmBackend, names: Sequence[str] = ()) -> List[NodeInfo]:
    """NodeInfo for ``names`` (hostlist expressions allowed with scontrol), or all nodes."""
    bulk = getattr(backend, "nodes", None)
    if callable(bulk):  # not the memory fake's node table
        return list(bulk(",".join(names) if names else None))
    if not names:
        raise SlurmError("listing all nodes needs the scontrol backend; name the nodes")
    return [backend.node_info(n) for n in names]
