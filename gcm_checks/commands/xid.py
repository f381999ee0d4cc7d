"""``gcm-checks xid explain N [--json]`` and ``gcm-checks xid scan [...]``.

``scan`` exits 0 when no drain-worthy XID was found, 1 when at least one
was, 2 when the kernel log could not be read or the arguments are wrong -
so ``gcm-checks xid scan --since ... && echo clean`` works in scripts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Dict, List, Optional

_LIVE_LOOKBACK_S = 86400.0  # live sources default to the last day: never the whole history


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="xid_cmd", metavar="ACTION")
    e = sub.add_parser("explain", help="what an XID (or NVSwitch SXid, 10000 and up) code means and what to do")
    e.add_argument("code", type=int, help="XID number, e.g. 79, or SXid number, e.g. 20034")
    from gcm_checks.commands._conventions import add_config

    add_config(e, used=False)
    e.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    s = sub.add_parser("scan", help="list XIDs in a window of the kernel log")
    s.add_argument("--kernel-log", metavar="PATH", help="read this file (dmesg, dmesg -T, syslog, ISO, saved "
                   "/dev/kmsg records; .gz ok)")
    s.add_argument("--source", choices=("auto", "kmsg", "journal", "file"), default="auto",
                   help="where to read (default: the file if given, else /dev/kmsg, else the journal)")
    s.add_argument("--since", metavar="ISO", help="window start, ISO 8601 or @epoch (inclusive)")
    s.add_argument("--until", metavar="ISO", help="window end, ISO 8601 or @epoch (inclusive)")
    s.add_argument("--boot-time", metavar="ISO", help="boot time for [seconds-since-boot] stamps and kmsg records "
                   "in a file (default: the capture's own '# boot_time:' line, else this node's current boot)")
    s.add_argument("--timeout", type=float, default=10.0, help="deadline for journalctl (seconds)")
    s.add_argument("--no-gpu-map", action="store_true", help="do not ask NVML for PCI bus id -> GPU index")
    s.add_argument("--json", action="store_true", help="one JSON document: {events: [...], ...}")
    s.add_argument("--config", metavar="PATH", help="config file: its xid.kernel_log_path and xid.source are the "
                   "defaults for --kernel-log and --source")


def run(args: argparse.Namespace) -> int:
    cmd = getattr(args, "xid_cmd", None)
    if cmd == "explain":
        return _explain(args)
    if cmd == "scan":
        return _scan(args)
    print("usage: gcm-checks xid {explain N | scan [--kernel-log PATH] [--since ISO] [--until ISO]} [--json]",
          file=sys.stderr)
    return 2


def _explain_sxid(args: argparse.Namespace) -> int:
    from gcm_checks.xid import sxid

    info = sxid.lookup(args.code)
    known = args.code in sxid.CATALOG
    if args.json:
        print(json.dumps(dict(info.to_dict(), drains=_sxid_drains(info)), indent=2))
        return 0 if known else 1
    print("\n".join([
        f"NVSwitch SXid {info.code}: {info.name}",
        f"  kind:            {info.kind.replace('_', ' ')} (NVIDIA Fabric Manager user guide)",
        f"  impact:          {info.impact}",
        f"  recovery:        {info.recovery}",
        f"  gcm-checks:      {_sxid_drains(info)}",
    ]))
    return 0 if known else 1


def _sxid_drains(info: Any) -> str:
    if info.kind == "always_fatal":
        return "drains the node (always fatal to the fabric)"
    return ("drains the node when the line says Fatal; Non-fatal is reported, never drains"
            + (" (and this one is ignored: corrected or harmless)" if info.recovery == "None needed." else ""))


def _explain(args: argparse.Namespace) -> int:
    from gcm_checks.xid import catalog

    if args.code >= 10000:  # XIDs stop well below; SXids start at 10001
        return _explain_sxid(args)
    info = catalog.lookup(args.code)
    known = args.code in catalog.CATALOG
    if args.json:
        print(json.dumps(info.to_dict(), indent=2))
        return 0 if known else 1
    judged = {"info": "never drains", "warn": "reported, never drains", "fail": "drains the node"}[info.severity]
    lines = [
        f"XID {info.code}: {info.name}" + ("" if info.in_use or not known else "  [not used on Ampere or newer]"),
        f"  mnemonic:        {info.mnemonic}",
        f"  likely cause:    {info.cause}",
        f"  responsible:     {info.responsibility}",
        f"  action:          {catalog.ACTION_TEXT[info.action]} ({info.action})",
        f"  gcm-checks:      {info.severity} - {judged}",
    ]
    if info.nvidia_immediate:
        lines.append(f"  NVIDIA immediate:     {info.nvidia_immediate}"
                     + (f" - {catalog.NVIDIA_BUCKETS[info.nvidia_immediate]}"
                        if info.nvidia_immediate in catalog.NVIDIA_BUCKETS else ""))
    if info.nvidia_investigate:
        lines.append(f"  NVIDIA investigatory: {info.nvidia_investigate}")
    if info.code == 94:
        lines.append("  note: drains when the driver says a reset is required (\"RST: Yes\" or \"D-RST: Yes\").")
    if 144 <= info.code <= 150:
        lines.append("  note: judged per message: Fatal/Link Fatal sub-codes reset the GPU (drain); Nonfatal warn; "
                     "injected (i1) errors are ignored.")
    if info.code == 154:
        lines.append("  note: judged by the action in the message: Node Reboot Required -> reboot; "
                     "GPU Reset Required / Drain and Reset / Drain P2P -> reset GPU; None -> nothing.")
    print("\n".join(lines))
    return 0 if known else 1


def _bus_map(enabled: bool, timeout: float) -> Dict[str, int]:
    if not enabled:
        return {}
    try:
        from gcm_checks.gather import nvml

        return dict(nvml.gather(nvml.load_pynvml, min(timeout, 5.0)).bus_ids())
    except Exception:  # noqa: BLE001 - no NVML (no driver, no GPU): indices stay null
        return {}


def _scan(args: argparse.Namespace) -> int:
    from gcm_checks.gather import kernel_log
    from gcm_checks.xid import scan as xscan

    try:
        since = kernel_log.parse_iso(args.since) if args.since else None
        until = kernel_log.parse_iso(args.until) if args.until else None
        boot = kernel_log.parse_iso(args.boot_time) if args.boot_time else None
    except ValueError as e:
        print(f"gcm-checks xid scan: {e}", file=sys.stderr)
        return 2
    if getattr(args, "config", None):
        from gcm_checks import config

        try:
            settings = config.load(args.config)
        except config.ConfigError as e:
            print(f"gcm-checks xid scan: configuration: {e}", file=sys.stderr)
            return 2
        args.kernel_log = args.kernel_log or settings.xid.kernel_log_path
        if args.source == "auto":
            args.source = settings.xid.source
    source = args.source
    if args.kernel_log and source == "auto":
        source = "file"
    if source == "file" and not args.kernel_log:
        print("gcm-checks xid scan: --source file needs --kernel-log PATH", file=sys.stderr)
        return 2
    if source != "file" and since is None:
        since = (until or time.time()) - _LIVE_LOOKBACK_S
    if source != "file" and until is None:
        until = time.time()
    cov = kernel_log.Coverage()
    bus_map = _bus_map(not args.no_gpu_map, args.timeout)
    try:
        lines = kernel_log.read_window(source, path=args.kernel_log, since=since, until=until,
                                       timeout=args.timeout, boot=boot, coverage=cov)
        both = list(xscan.scan_all(lines, bus_map))
    except kernel_log.KernelLogUnavailable as e:
        if args.json:
            print(json.dumps({"ok": False, "error": str(e), "source": cov.source or source}))
        else:
            print(f"gcm-checks xid scan: kernel log not readable: {e}", file=sys.stderr)
        return 2
    events = [e for e in both if isinstance(e, xscan.XidEvent)]
    sxids = [e for e in both if not isinstance(e, xscan.XidEvent)]
    drain = any(e.severity == "fail" for e in both)
    if args.json:
        doc = {
            "ok": True,
            "source": cov.source,
            "since": kernel_log.iso(since) if since is not None else None,
            "until": kernel_log.iso(until) if until is not None else None,
            "undated_lines_skipped": cov.undated,
            "notes": cov.notes,
            "events": [e.to_dict() for e in events],
            "sxids": [e.to_dict() for e in sxids],  # NVSwitch, their own kind of event
        }
        print(json.dumps(doc, indent=2))
    else:
        _print_table(events, cov, since, until)
        _print_sxids(sxids)
    return 1 if drain else 0


def _print_table(events: List[Any], cov: Any, since: Optional[float], until: Optional[float]) -> None:
    from gcm_checks.gather.kernel_log import iso

    win = f"{iso(since) if since else 'start'} .. {iso(until) if until else 'end'}"
    print(f"# {cov.source}: {win}")
    for n in cov.notes:
        print(f"# note: {n}")
    if cov.undated:
        print(f"# {cov.undated} NVRM line(s) without a time stamp skipped (cannot be placed in the window)")
    if not events:
        print("no XIDs")
        return
    rows = [("TIME", "XID", "GPU", "PCI BUS ID", "SEVERITY", "ACTION", "NAME")]
    for e in events:
        rows.append((e.time or "-", str(e.xid), "-" if e.gpu_index is None else str(e.gpu_index),
                     e.pci_bus_id or "-", e.severity, e.action, e.name))
    from gcm_checks.commands._table import render

    render(rows[0], rows[1:], flexible=(6,), gap=2)
    fails = sum(1 for e in events if e.severity == "fail")
    print(f"{len(events)} XID event(s), {fails} drain-worthy")


def _print_sxids(sxids: List[Any]) -> None:
    if not sxids:
        return
    rows = [("TIME", "SXID", "SWITCH", "PCI BUS ID", "LINK", "VERDICT", "SEVERITY", "NAME")]
    for e in sxids:
        verdict = {True: "Fatal", False: "Non-fatal", None: "-"}[e.fatal]
        rows.append((e.time or "-", str(e.sxid), e.switch or "-", e.pci_bus_id or "-",
                     "-" if e.link is None else str(e.link), verdict, e.severity, e.name))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    print()
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
    print(f"{len(sxids)} NVSwitch SXid event(s), {sum(1 for e in sxids if e.severity == 'fail')} drain-worthy")
