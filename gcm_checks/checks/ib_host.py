"""InfiniBand host checks (issue 18): IPoIB against its port, HCA firmware.

* ``ib.ipoib.state``: an IPoIB interface an admin brought up (IFF_UP) that is
  not up while its IB port is ACTIVE fails: the port works, but the job's
  IPoIB traffic (NCCL/MPI bootstrap, storage over IPoIB) has nowhere to go -
  typically a partition key or multicast (broadcast group) join the subnet
  manager refused. An interface nobody brought up is not IPoIB in use and is
  not judged; a port that is not ACTIVE is ``ib.port.state``'s to report.
* ``ib.hca.firmware``: HCAs of the same model (``hca_type``) should run the
  same firmware; a mismatch (half-done firmware update, a replaced card)
  warns, naming both versions. Never drains: the node still works.

Health and qualification only: the prolog stays on its fast path (rule 7),
and health mode (HealthCheckProgram) catches a dead IPoIB within its interval.
"""

from __future__ import annotations

from typing import Any, Dict, List

from gcm_checks.registry import gatherer, register
from gcm_checks.result import CheckResult, fail, ok, warn

TAGS = ["health", "qualify"]
IPOIB = "ib.ipoib.state"
FIRMWARE = "ib.hca.firmware"


@gatherer("ib_host")
def gather_ib_host(ctx: Any) -> Any:
    from gcm_checks.checks.ib import _sysfs_root
    from gcm_checks.gather import ib_host

    return ib_host.read_host(_sysfs_root(ctx))


@register(IPOIB, tags=TAGS, needs="ib_host")
def check_ipoib_state(facts: Any, settings: Any) -> List[CheckResult]:
    """IPoIB interfaces that are configured up work while their port is ACTIVE."""
    out: List[CheckResult] = []
    judged = 0
    for i in facts.ipoib:
        if i.port_state != "ACTIVE" or i.admin_up is False:
            continue  # port not active: ib.port.state; admin down: IPoIB not configured here
        judged += 1
        if i.operstate != "up":
            out.append(fail(f"IPoIB {i.name} is {i.operstate} while {i.device} port {i.port} is ACTIVE: "
                              "IPoIB traffic on this rail fails (check the partition key and the subnet "
                              "manager's multicast group, then ip link set up)", i.subject,
                              interface=i.name, operstate=i.operstate, device=i.device, port=i.port))
    if not out:
        msg = (f"{judged} IPoIB interface(s) up on ACTIVE ports" if judged
               else "no configured IPoIB interface on an ACTIVE port")
        out.append(ok(msg, interfaces=[i.name for i in facts.ipoib]))
    return out


@register(FIRMWARE, tags=TAGS, needs="ib_host")
def check_hca_firmware(facts: Any, settings: Any) -> List[CheckResult]:
    """HCAs of the same model run the same firmware."""
    by_model: Dict[str, Dict[str, List[str]]] = {}
    for h in facts.hcas:
        if not h.fw_ver or not h.hca_type:
            continue  # unreadable or a virtual device: nothing to compare
        by_model.setdefault(h.hca_type, {}).setdefault(h.fw_ver, []).append(h.device)
    out: List[CheckResult] = []
    for model, versions in sorted(by_model.items()):
        if len(versions) < 2:
            continue
        # The most common version is the node's; name every other one.
        ranked = sorted(versions.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        main_ver, main_devs = ranked[0]
        for ver, devs in ranked[1:]:
            out.append(warn(f"{model} firmware differs: {', '.join(devs)} run {ver}, "
                              f"{', '.join(main_devs)} run {main_ver}; update to one version",
                              ", ".join(devs), model=model, versions={v: d for v, d in versions.items()}))
    if not out:
        n = sum(len(d) for v in by_model.values() for d in v.values())
        out.append(ok(f"{n} HCA(s): one firmware per model" if n else "no HCA firmware to compare",
                          models={m: sorted(v) for m, v in by_model.items()}))
    return out
