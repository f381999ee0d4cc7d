"""``gcm-checks inventory [--yaml|--json]``: what this node has, as the
zero-config rules see it (PCI bus, NVML, InfiniBand sysfs), printed so an
admin can pin it in the config (``--yaml``: a snippet for gcm-checks.yaml).

Read-only: no Slurm call, no state written (docs/slurm.md, "Zero-config").
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="PATH", help="config file (default: discovered)")
    parser.add_argument("--sim", metavar="SCENARIO", help="simulated node: built-in name or YAML path")
    parser.add_argument("--node", help="node name (default: $SLURMD_NODENAME or the short hostname)")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--yaml", action="store_true", help="print a config snippet that pins what was found")
    out.add_argument("--json", action="store_true", help="print a JSON document")


def gather(settings: Any, sim: Any = None) -> Dict[str, Any]:
    from gcm_checks import suite
    from gcm_checks.gather import ib

    ctx = suite.build_context(settings, sim=sim, dry_run=True)
    try:
        pci = ctx.pci_facts()
        gpu = ctx.gpu_facts()
        snap = ib.read_sysfs(ctx.sysfs_root())
        models = ib.read_models(ctx.sysfs_root(), snap.devices)
    finally:
        ctx.close()
    nvml_error = None
    if gpu.import_error:
        nvml_error = f"pynvml not importable: {gpu.import_error}"
    elif gpu.init_hang:
        nvml_error = "nvmlInit did not answer"
    elif gpu.init_error is not None:
        from gcm_checks.gather.nvml import error_name

        nvml_error = error_name(gpu.init_error)
    return {
        "node": settings.node,
        "pci": pci.to_dict(),
        "nvml": {"error": nvml_error, "count": gpu.count, "driver": gpu.driver_version,
                 "gpus": [{"index": g.index, "pci_bus_id": g.pci_bus_id, "name": g.name} for g in gpu.gpus]},
        "infiniband": [dict(p.to_dict(), model=models.get(p.device, "")) for p in snap.ports],
    }


def snippet(inv: Dict[str, Any]) -> str:
    """A gcm-checks.yaml fragment pinning the GPU count and the ACTIVE ports."""
    pci_gpus = len(inv["pci"]["gpus"]) if inv["pci"]["readable"] else None
    nvml_count = inv["nvml"]["count"]
    count = max(c for c in (pci_gpus, nvml_count, 0) if c is not None)
    lines = [f"# gcm-checks inventory of node {inv['node']}: what it has now. Pin it for every node of",
             "# this kind (top level, or under nodes: - match: 'gpu[001-128]' / set:); an explicit",
             "# value always wins over what the zero-config rules find on the PCI bus.",
             "gpu:", f"  count: {count}"]
    ib_ports = [p for p in inv["infiniband"] if p["link_layer"].lower() == "infiniband"]
    active = [p for p in ib_ports if p["state"] == "ACTIVE"]
    if ib_ports:
        lines += ["infiniband:", "  expected:"]
        for p in active:
            rate = f", rate_gbps: {p['rate_gbps']:g}" if p["rate_gbps"] else ""
            lines.append(f"    - {{device: {p['device']}, ports: [{p['port']}]{rate}, link_layer: InfiniBand}}")
        if not active:
            lines.append("    []")
        for p in ib_ports:
            if p["state"] != "ACTIVE":
                lines.append(f"    # not listed: {p['device']} port {p['port']} is {p['state'] or '?'} / {p['phys_state'] or '?'} now")
    return "\n".join(lines) + "\n"


def _text(inv: Dict[str, Any]) -> str:
    pci, nvml = inv["pci"], inv["nvml"]
    out: List[str] = [f"node {inv['node']}"]
    if not pci["readable"]:
        out.append(f"  PCI bus: not readable ({pci['error']})")
    else:
        ids: Dict[str, int] = {}
        for d in pci["gpus"]:
            ids[d["device"]] = ids.get(d["device"], 0) + 1
        models = ", ".join(f"{n}x {k}" for k, n in sorted(ids.items())) or "none"
        module = "loaded" if pci["nvidia_module"] else "NOT loaded"
        out.append(f"  PCI bus: {len(pci['gpus'])} NVIDIA GPUs ({models}), nvidia module {module}; "
                   f"{len(pci['hcas'])} InfiniBand HCAs")
        for d in pci["other_gpus"]:
            out.append(f"    GPU {d['address']} bound to {d['driver']}: not expected in NVML")
        for d in pci["hcas"]:
            out.append(f"    HCA {d['address']} ({d['device']}): {', '.join(d['ib_devices']) or 'no InfiniBand device'}")
    if nvml["error"]:
        out.append(f"  NVML: {nvml['error']}")
    else:
        names = sorted({g["name"] for g in nvml["gpus"] if g["name"]})
        out.append(f"  NVML: {nvml['count']} GPUs, driver {nvml['driver']} ({', '.join(names) or '?'})")
    for p in inv["infiniband"]:
        out.append(f"  {p['device']} port {p['port']}: {p['state'] or '?'} / {p['phys_state'] or '?'}, "
                   f"{p['rate_text'] or '?'}, {p['link_layer'] or '?'}{' [' + p['model'] + ']' if p['model'] else ''}")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    from gcm_checks import config

    try:
        settings = config.load(args.config, args.node)
    except config.ConfigError as e:
        print(f"gcm-checks inventory: configuration error: {e}", file=sys.stderr)
        return 2
    inv = gather(settings, args.sim)
    if args.json:
        print(json.dumps(inv, indent=2))
    elif args.yaml:
        sys.stdout.write(snippet(inv))
    else:
        print(_text(inv))
    return 0
