"""Rules whose match is judged by the XID scanner's catalogs (rule.judge in the table).

Kernel XID and NVSwitch SXid lines are read by gcm_checks.xid's own parsers, so
`classify` and `xid scan` cannot disagree (issue 18); scan.py calls
``JUDGES[rule.judge](line)`` on a line the rule's regex matched.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Tuple


def _judge_xid(line: str) -> Optional[Tuple[str, str, int, float, str]]:
    """A kernel XID line judged by NVIDIA's catalog (rule 4), as a hit."""
    # ---- issue 18 hook: kernel lines are read by the XID scanner's own parser
    # (gcm_checks.xid.parse.parse_xid), so `classify` and `xid scan` cannot disagree.
    parsed = _kernel_reading(line)
    m = None if parsed is not None else re.search(r"NVRM: Xid \([^)]*\):\s*(\d+)", line)
    # A bare "Xid 79" (a person's or a tool's note) counts only for codes in the
    # catalog and only when clear-cut; "xid 1234" may be a database's.
    bare = parsed is None and m is None
    if bare:
        m = re.search(r"\b[Xx][Ii][Dd](?:\s+[Ee]rror)?[\s:=]+(\d{1,3})\b", line)
    if parsed is None and m is None:
        return None
    code = parsed.xid if parsed is not None else int(m.group(1))  # type: ignore[union-attr]
    try:
        from gcm_checks.xid.catalog import CATALOG, assess

        if bare and code not in CATALOG:
            return None
        a = assess(parsed.xid if parsed else code, dict(parsed.decoded) if parsed else None)
        sev, resp, name = a.severity, a.responsibility, a.name
    except ImportError:  # pragma: no cover - the xid package ships with us
        from gcm_checks.classify.rules import APP_XIDS, FALLBACK_HW_XIDS

        resp = "application" if code in APP_XIDS else "hardware"
        sev = "fail" if code in FALLBACK_HW_XIDS else "info"
        name = ""
    what = f"XID {code}" + (f" ({name})" if name else "")
    if resp == "application":
        return ("kernel.xid.application", "cuda_runtime", 65, 0.6,
                f"the driver logged {what}, a fault in the job's own GPU code")
    if sev == "fail":
        return ("kernel.xid.hardware", "gpu_hardware", 94, 0.9, f"the driver logged {what}")
    if sev == "warn" and not bare:
        return ("kernel.xid.warn", "gpu_hardware", 60, 0.5, f"the driver logged {what}")
    return None


def _kernel_reading(line: str) -> Any:
    """The XID scanner's reading of a kernel line (None: not an XID), issue 18."""
    if "NVRM" not in line:
        return None
    try:
        from gcm_checks.xid.parse import parse_xid
    except ImportError:  # pragma: no cover - the xid package ships with us
        return None
    return parse_xid(line)


def _judge_sxid(line: str) -> Optional[Tuple[str, str, int, float, str]]:
    """An NVSwitch SXid line judged by gcm_checks.xid.sxid (item 3: one parser, not two).

    A fatal SXid (the driver's own verdict, or an always-fatal code) stalls NVLink
    traffic until the switch is reset: the CUDA/NCCL errors after it are fallout,
    so it ranks with the hardware XIDs; so does a non-fatal one whose documented
    impact is stalled traffic. Other non-fatal ones (replays, heartbeats) are only
    a hint (they outrank nothing but "could not tell"); ignorable ones and
    register-detail lines are dropped.
    """
    try:
        from gcm_checks.xid.sxid import CATALOG, ParsedSxid, assess, lookup, parse_sxid
    except ImportError:  # pragma: no cover - the xid package ships with us
        return None
    parsed = parse_sxid(line)
    if parsed is None:
        # Not the driver's line: a tool's or a person's "SXid 20034" counts only for
        # a code in the Fabric Manager guide (the driver's register-detail lines,
        # "SXid (PCI:...): 20034, Severity 1 ...", are never events).
        bare = None if "SXid (" in line else re.search(r"\bSXid\b\D{0,20}?(\d{5})\b", line)
        if bare is None or int(bare.group(1)) not in CATALOG:
            return None
        code = int(bare.group(1))
        # No verdict printed: the guide's own grouping of the code (fatal tables D.5/D.6) stands in for it.
        parsed = ParsedSxid(None, "", code, True if lookup(code).kind in ("fatal", "always_fatal") else None, None, "")
    a = assess(parsed)
    what = f"SXid {parsed.code}" + (f" ({a.name})" if a.name else "")
    if a.severity == "fail":
        return ("kernel.nvswitch_sxid", "gpu_hardware", 94, 0.9, f"an NVSwitch reported a fatal {what}")
    if a.severity == "warn" and "stall" in lookup(parsed.code).impact.lower():
        # Non-fatal for the switch, not for the job: the guide says NVLink traffic
        # on that port stalls and CUDA jobs abort (XID 45), e.g. 12028.
        return ("kernel.nvswitch_sxid.stall", "gpu_hardware", 90, 0.8,
                f"an NVSwitch reported {what}, which stalls NVLink traffic and aborts CUDA jobs")
    if a.severity == "warn":
        return ("kernel.nvswitch_sxid.nonfatal", "gpu_hardware", 8, 0.45, f"an NVSwitch reported a non-fatal {what}")
    return None


JUDGES = {"xid": _judge_xid, "sxid": _judge_sxid}


