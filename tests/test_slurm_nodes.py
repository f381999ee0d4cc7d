"""Many nodes in one read: the mass-drain brake's census and node listing."""

from __future__ import annotations

import datetime as dt
import io

import pytest

from gcm_checks import slurm
from gcm_checks.slurm.parse import CensusEntry, NodeInfo, SlurmError, parse_census
from gcm_checks.testing import MemoryBackend

# Two records as 22.05 prints them (trimmed), one drained by gcm, one idle.
SHOW_NODES = (
    "NodeName=node1 Arch=x86_64 State=IDLE+DRAIN Partitions=gpu,debug "
    "Reason=gcm: GPU 3 lost (gpu.responsive): off the bus [root@2026-11-30T01:02:03]\n"
    "NodeName=node2 Arch=x86_64 State=IDLE Partitions=gpu\n"
    "slurm_load_node: some noise that is not a record\n"
)


def test_parse_census_reads_partitions_and_drain_time():
    first, second = parse_census(SHOW_NODES)
    when = dt.datetime(2026, 11, 30, 1, 2, 3).timestamp()  # slurmctld's local time
    assert first == CensusEntry("node1", ("gpu", "debug"), True, "gcm: GPU 3 lost (gpu.responsive): off the bus", when)
    assert second == CensusEntry("node2", ("gpu",), False, None, None)


def _scontrol(tmp_path, text):
    calls = tmp_path / "calls"
    script = tmp_path / "scontrol"
    script.write_text(f"#!/bin/sh\necho \"$*\" >> {calls}\ncat <<'EOF'\n{text}EOF\n")
    script.chmod(0o755)
    return str(script), calls


def test_census_is_one_scontrol_call_also_through_a_dry_run(tmp_path):
    sc, calls = _scontrol(tmp_path, SHOW_NODES)
    real = slurm.ScontrolBackend(scontrol=sc, timeout_s=5)
    for backend in (real, slurm.DryRunBackend(out=io.StringIO(), reader=real)):
        assert [e.name for e in slurm.node_census(backend)] == ["node1", "node2"]
    assert calls.read_text().splitlines() == ["show node -o", "show node -o"]


def test_census_of_the_memory_fake_and_of_a_backend_that_cannot_list():
    be = MemoryBackend({"a": NodeInfo("a", "IDLE+DRAIN", "gcm: x"), "b": NodeInfo("b", "IDLE")})
    assert slurm.node_census(be) == [CensusEntry("a", (), True, "gcm: x", None), CensusEntry("b", (), False, None, None)]

    class NoList:
        def node_info(self, node):
            return NodeInfo(node, "IDLE")

    with pytest.raises(SlurmError, match="cannot list"):
        slurm.node_census(NoList())


def test_list_nodes(tmp_path):
    sc, calls = _scontrol(tmp_path, SHOW_NODES)
    assert [n.name for n in slurm.list_nodes(slurm.ScontrolBackend(scontrol=sc), ["node[1-2]"])] == ["node1", "node2"]
    assert calls.read_text().splitlines() == ["show node -o node[1-2]"]
    be = MemoryBackend({"a": NodeInfo("a", "IDLE")})
    assert slurm.list_nodes(be, ["a"]) == [NodeInfo("a", "IDLE")]
    with pytest.raises(SlurmError, match="name the nodes"):
        slurm.list_nodes(be)
