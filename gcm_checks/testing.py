"""Public fakes for tests (ours and yours), in the spirit of structlog.testing.

Nothing here is imported by production code.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional

from gcm_checks.slurm.parse import NodeInfo, SlurmError


# --------------------------------------------------------------------------
# DCGM


def dcgm_diag_json(
    gpus: int = 8,
    fail: Optional[Mapping[int, str]] = None,
    warn: Optional[Mapping[int, str]] = None,
    *,
    test: str = "memory",
    layout: int = 4,
    error_id: int = 0,
) -> str:
    """A ``dcgmi diag -j`` document: every GPU passes ``software`` and
    ``test``, except those in ``fail``/``warn`` (GPU index -> DCGM's text).

    ``layout=4`` follows NVIDIA's published DCGM 4.x schema (``DCGM
    Diagnostic``, ``entity_id``); ``layout=3`` the 2.x/3.x one (``DCGM GPU
    Diagnostic``, ``gpu_ids``, upper-case statuses). Use it as a simulated
    scenario's ``dcgm_diag`` or as a fake dcgmi's stdout.
    """
    fail, warn = dict(fail or {}), dict(warn or {})

    def result(g: int, status: str, text: Optional[str]) -> Dict:
        r: Dict = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": g} if layout >= 4 else {"gpu_ids": g}
        r["status"] = status if layout >= 4 else status.upper()
        if text is not None:
            r["warnings"] = [{"warning": text, "error_id": error_id, "error_category": 0, "error_severity": 2 if status == "Fail" else 1}]
        return r

    def status_of(g: int) -> str:
        return "Fail" if g in fail else "Warn" if g in warn else "Pass"

    software = [result(g, "Pass", None) for g in range(gpus)]
    tested = [result(g, status_of(g), fail.get(g, warn.get(g))) for g in range(gpus)]
    categories = [
        {"category": "Deployment", "tests": [{"name": "software", "results": software}]},
        {"category": "Hardware", "tests": [{"name": test, "results": tested}]},
    ]
    if layout >= 4:
        for c in categories:
            for t in c["tests"]:
                worst = "Fail" if any(r["status"] == "Fail" for r in t["results"]) else "Pass"
                t["test_summary"] = {"status": worst}
        doc: Dict = {
            "DCGM Diagnostic": {"test_categories": categories},
            "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1, "entities": [{"entity_id": g, "device_id": "2330"} for g in range(gpus)]}],
            "metadata": {"version": "4.1.1"},
        }
    else:
        doc = {"DCGM GPU Diagnostic": {"test_categories": categories, "version": "3.3.1"}}
    return json.dumps(doc, indent=2)


# --------------------------------------------------------------------------
# Kernel log / XIDs


def kernel_xid_line(
    xid: int,
    bus: str = "0000:3b:00",
    message: str = "GPU has fallen off the bus.",
    *,
    when: Optional[float] = None,
    fmt: str = "iso",
    boot_time: float = 0.0,
    host: str = "node1",
) -> str:
    """One kernel log line carrying an XID, in a real format.

    ``fmt``: ``iso`` (journalctl short-iso-precise, UTC), ``dmesg_t``
    (``[Mon Nov 30 01:02:03 2026]``, UTC), ``syslog`` (``Nov 30 01:02:03 host
    kernel:``, UTC), ``dmesg`` (``[ 123.456789]`` seconds since ``boot_time``),
    ``bare`` (no stamp). Parse the UTC ones with ``tz=timezone.utc``.
    Example: ``kernel_xid_line(79, when=t)`` for an XID 79 at epoch t.
    """
    from datetime import datetime, timezone

    text = f"NVRM: Xid (PCI:{bus}): {xid}, pid='<unknown>', name=<unknown>, {message}"
    if fmt == "bare" or when is None:
        return text
    dt = datetime.fromtimestamp(when, timezone.utc)
    if fmt == "iso":
        return f"{dt.strftime('%Y-%m-%dT%H:%M:%S')}.{dt.microsecond:06d}+0000 {host} kernel: {text}"
    if fmt == "dmesg_t":
        return f"[{dt.strftime('%a %b')} {dt.day:2d} {dt.strftime('%H:%M:%S %Y')}] {text}"
    if fmt == "syslog":
        return f"{dt.strftime('%b')} {dt.day:2d} {dt.strftime('%H:%M:%S')} {host} kernel: {text}"
    if fmt == "dmesg":
        return f"[{when - boot_time:12.6f}] {text}"
    raise ValueError(f"unknown kernel log format {fmt!r}")


# --------------------------------------------------------------------------
# Slurm: an in-memory slurmctld for the SlurmBackend interface
# (gcm_checks.slurm.backends). It models the parts of slurmctld our logic
# depends on.


class MemoryBackend:
    """A fake slurmctld holding ``NodeInfo`` per node; counts update RPCs.

    ``fail_with`` makes every call raise ``SlurmError`` (slurmctld down).
    """

    def __init__(self, nodes: Optional[Dict[str, NodeInfo]] = None, fail_with: Optional[str] = None):
        self.nodes: Dict[str, NodeInfo] = dict(nodes or {})
        self.jobs: Dict[str, Dict[str, str]] = {}
        self.fail_with = fail_with
        self.updates: list[tuple[str, ...]] = []  # one entry per REQUEST_UPDATE_NODE/JOB
        self.reads = 0

    def _check(self) -> None:
        if self.fail_with:
            raise SlurmError(self.fail_with)

    def _node(self, node: str) -> NodeInfo:
        if node not in self.nodes:
            self.nodes[node] = NodeInfo(name=node, state="IDLE")
        return self.nodes[node]

    def _set(self, node: str, **kw: object) -> None:
        from dataclasses import replace

        self.nodes[node] = replace(self._node(node), **kw)

    def node_info(self, node: str) -> NodeInfo:
        self._check()
        self.reads += 1
        return self._node(node)

    def drain(self, node: str, reason: str) -> None:
        self._check()
        self.updates.append(("drain", node, reason))
        st = self._node(node).state.split("+")[0]
        self._set(node, state=f"{st}+DRAIN", reason=reason, reason_user="root")

    def resume(self, node: str) -> None:
        self._check()
        self.updates.append(("resume", node))
        if not self._node(node).drained:
            raise SlurmError("scontrol: exit 1: slurm_update error: Invalid node state specified")
        self._set(node, state=self._node(node).state.split("+")[0], reason=None, reason_user=None)

    def set_features(self, node: str, available: list[str], active: list[str]) -> None:
        self._check()
        self.updates.append(("features", node, ",".join(available), ",".join(active)))
        self._set(node, available_features=tuple(available), active_features=tuple(active))

    def set_extra(self, node: str, extra: str) -> None:
        self._check()
        self.updates.append(("extra", node, extra))
        self._set(node, extra=extra or None)

    def set_features_and_extra(self, node: str, available: list[str], active: list[str], extra: str) -> None:
        self._check()
        self.updates.append(("features+extra", node, ",".join(available), ",".join(active), extra))
        self._set(node, available_features=tuple(available), active_features=tuple(active), extra=extra or None)

    def set_job_comment(self, job_id: str, comment: str) -> None:
        self._check()
        self.updates.append(("comment", str(job_id), comment))
        self.jobs.setdefault(str(job_id), {})["Comment"] = comment

    def show_job(self, job_id: str) -> Dict[str, str]:
        self._check()
        return dict(self.jobs.get(str(job_id), {}))


# --------------------------------------------------------------------------
# Settings and GPU facts: what a check is called with (issue 16: tests build
# facts here instead of each re-inventing a _Settings or snapshot helper)


def settings(data: Any = None, *, node: str = "n1", **overrides: Any):
    """Settings as the node ``node`` resolves them (``config.resolve``): the
    schema's defaults, then ``data`` (a parsed config file, ``nodes:``
    sections included, or Settings a test built before, to change a few
    keys), then ``overrides`` on top. An override is a whole section
    (``gpu={"count": 4}``, merged into the file's), a top-level key
    (``report_only=True``) or a dotted key (``**{"report.spool_dir": d}``);
    a dotted key in ``data`` names one setting too
    (``{"infiniband.sysfs_root": d}``). Validated like a real file, so a
    misspelt key fails the test."""
    import copy

    from gcm_checks import config

    if isinstance(data, config.Settings):
        data = {k: v for k, v in data.data.items() if k != "nodes"}  # already resolved for its node
    dotted = {k: v for k, v in (data or {}).items() if "." in k}
    merged: Dict = copy.deepcopy({k: v for k, v in (data or {}).items() if "." not in k})
    for name, value in {**dotted, **overrides}.items():
        head, _, rest = name.partition(".")
        if rest:
            cur = merged.setdefault(head, {})
            *mid, last = rest.split(".")
            for part in mid:
                cur = cur.setdefault(part, {})
            cur[last] = value
        elif isinstance(value, Mapping) and isinstance(config.SCHEMA.get(name), dict):
            merged[name] = {**(merged.get(name) or {}), **value}
        else:
            merged[name] = value
    config._validate_section("(test)", merged, config.SCHEMA, "", allow_nodes=True)
    return config.resolve(merged, node, "(test)")


def context(settings_: Any = None, state_dir: Any = None, **kw: Any):
    """The suite's context (``suite.Context``) a gatherer is handed, on real
    (not simulated) hardware paths: ``settings_`` (default: ``settings()``),
    ``state_dir``, and any other field (``sim=``, ``window=``, ``dry_run=``)."""
    from pathlib import Path

    from gcm_checks.suite import Context

    s = settings_ if settings_ is not None else settings()
    return Context(settings=s, node=getattr(s, "node", "") or "n1",
                   state_dir=Path(state_dir) if state_dir is not None else Path("/nonexistent/gcm-state"), **kw)


def run_checks(facts: Any, settings_: Any, *check_ids: str) -> list:
    """The registered checks ``check_ids`` over ``facts``, called as the suite
    calls them (``registry.run_check``): each result carries its check's id."""
    from gcm_checks.checks import load_all
    from gcm_checks.registry import CHECKS, run_check

    load_all()
    return [r for cid in check_ids for r in run_check(CHECKS[cid], facts, settings_)]


def gpu(index: int = 0, **fields):
    """One healthy GPU's NVML snapshot (``gather.nvml.GpuSnapshot``): no ECC
    errors, nothing pending, 35 C, PCIe gen 5 x16 (gen 1 now: idle),
    persistence on, no processes. ``fields`` override any of it."""
    from gcm_checks.gather.nvml import GpuSnapshot

    base = dict(index=index, pci_bus_id=f"00000000:{0x18 + 0x10 * index:02X}:00.0", name="NVIDIA H100 80GB HBM3",
                uuid=f"GPU-{index:08d}-0000-0000-0000-000000000000", ecc_uncorrected_volatile=0,
                retired_pages_pending=False, remap_pending=False, remap_failure=False, temperature_c=35,
                pcie_gen=1, pcie_width=16, pcie_max_gen=5, pcie_max_width=16, throttle_reasons=("gpu_idle",),
                persistence_mode=True)
    base.update(fields)
    return GpuSnapshot(**base)


def gpu_facts(*gpus, **kw):
    """NVML facts of a node with these snapshots (eight healthy GPUs when
    none are given); ``kw`` sets ``GpuFacts`` fields (``init_error=...``)."""
    from gcm_checks.gather.nvml import GpuFacts

    snaps = tuple(gpus) if gpus else tuple(gpu(i) for i in range(8))
    base = dict(count=len(snaps), gpus=snaps, driver_version="550.54.15")
    base.update(kw)
    return GpuFacts(**base)
