"""Drain reasons: the ``gcm:`` format we write and ``reason_check`` reads back.

The prefix is how ownership is told apart (a reason without it is someone
else's, never overwritten or resumed); the first 20 characters are all
``sinfo -R`` shows, so they name the part and the problem.
"""

from __future__ import annotations

import re
from typing import Optional

GCM_PREFIX = "gcm:"
MAX_REASON = 200


# Anything that could end an argv word, a reason or a shell command, or that
# renders badly in sinfo/HTML. Log text reaches here (rule 5).
_UNSAFE = re.compile(r"[^A-Za-z0-9 _.,:/+%@#()\[\]{}=~^*?!-]")


def sanitize_reason(text: str, limit: int = MAX_REASON) -> str:
    """Single line of safe printable ASCII, at most ``limit`` characters.

    Strips quotes, backticks, ``$ | & < >``, backslashes, control characters
    and newlines; ``;`` becomes ``,`` (it separates advice: "reset the GPU;
    RMA if it recurs" must keep both halves). ``=`` is replaced too:
    scontrol's one-line output is ``Key=value`` pairs and a stray ``=`` makes
    a reason harder to parse back.
    """
    text = str(text).replace("=", " ").replace(";", ",")
    text = re.sub(r"[\r\n\t\x0b\x0c]+", " ", text)
    text = _UNSAFE.sub("", text)
    text = re.sub(r" {2,}", " ", text).strip()
    if len(text) > limit:
        text = text[: limit - 3].rstrip() + "..."
    return text


# What went wrong, in a word or two, per check-id prefix (longest wins).
# sinfo -R shows 20 characters: "gcm: GPU 3 lost (gpu" must say it all.
_PROBLEM_WORD = {
    "gpu.responsive": "hung", "gpu.nvml": "NVML broken", "gpu.count": "GPU missing", "gpu.pci": "GPU missing",
    "gpu.ecc": "ECC errors", "gpu.row_remap": "row remap", "gpu.retired_pages": "retired pages",
    "gpu.pcie": "PCIe degraded", "gpu.temperature": "too hot", "gpu.throttle": "throttled",
    "gpu.persistence_mode": "persistence off", "gpu.processes": "leftover procs", "xid": "XID", "dcgm": "DCGM fail",
    "ib.hca": "HCA missing", "ib.port.state": "down", "ib.port.phys_state": "link down", "ib.port.rate": "slow link",
    "ib.port.link_layer": "wrong link layer", "ib.port.errors": "link errors", "perf": "slow",
}
_GPU_SUBJECT = re.compile(r"^GPU\s*(\d+)")
_PORT_SUBJECT = re.compile(r"^(\S+)\s+port\s+(\d+)$")
_GPU_AT = re.compile(r"^GPU at (?:[0-9A-Fa-f]+:)?([0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})")
_XID_CODE = re.compile(r"\bXID\s*(\d+)", re.I)
_SXID_CODE = re.compile(r"\bSXid\s*(\d+)")


def reason_head(check_id: str, subject: str, message: str) -> str:
    """The part and the problem in a few words: ``GPU 3 lost``, ``mlx5_3/1 down``."""
    word = ""
    best = -1
    for prefix, w in _PROBLEM_WORD.items():
        if check_id.startswith(prefix) and len(prefix) > best:
            word, best = w, len(prefix)
    if check_id.startswith("gpu.responsive") and ("LOST" in message.upper() or "off the bus" in message):
        word = "lost"
    if check_id.startswith("xid"):
        sx = _SXID_CODE.search(message)  # NVSwitch: "SXid 20034" before "XID"
        m = _XID_CODE.search(message)
        word = f"SXid {sx.group(1)}" if sx else f"XID {m.group(1)}" if m else "XID"
    g = _GPU_SUBJECT.match(subject or "")
    p = _PORT_SUBJECT.match(subject or "")
    at = _GPU_AT.match(subject or "")
    if g:
        part = f"GPU {g.group(1)}"
    elif at:
        part = f"GPU {at.group(1)}"  # the kernel log names the bus, not the index
    elif p:
        part = f"{p.group(1)}/{p.group(2)}"
    else:
        part = (subject or "").split(" (")[0].strip()
    if check_id.startswith("xid"):
        return " ".join(x for x in (word, part) if x)  # "XID 79 GPU 3": the code is the news
    return " ".join(x for x in (part, word or check_id) if x)


def make_drain_reason(check_id: str, subject: str, message: str, context: str = "") -> str:
    """``gcm: <part> <problem> (<check id>): <message>``.

    The first 20 characters (all ``sinfo -R`` shows by default) name the part
    and the problem - ``gcm: GPU 3 lost (gpu`` - the check id follows for
    ``gcm-checks why`` and grep. ``context`` tags the run ("qualify").
    Drains written in the old ``gcm: <check id>: ...`` form stay ours (the
    ``gcm:`` prefix) and ``reason_check`` reads both.
    """
    head = sanitize_reason(reason_head(check_id, subject, message), 40)
    cid = sanitize_reason(f"{context} {check_id}" if context else check_id, 60)
    subj = sanitize_reason(subject, 60)
    body = f"{head} ({cid})"
    # What the head shortened away: a GPU's PCI bus id (RMA paperwork needs
    # it), or a subject the head did not name.
    bus = re.search(r"\(([0-9A-Fa-f:.]+)\)", subj) if _GPU_SUBJECT.match(subj) else None
    if bus:
        body += f" {bus.group(1)}"
    elif _GPU_AT.match(subj):
        body += " " + subj[len("GPU at "):].split()[0]
    elif subj and not _PORT_SUBJECT.match(subj) and subj not in head:
        body += f" {subj}"
    msg = sanitize_reason(message)
    return sanitize_reason(f"{GCM_PREFIX} {body}: {msg}" if msg else f"{GCM_PREFIX} {body}")


_NEW_REASON = re.compile(r"^gcm:\s.*?\((?:[a-z]+\s)?([a-z0-9_]+(?:\.[a-z0-9_]+)+)\)")
_OLD_REASON = re.compile(r"^gcm:\s(?:qualify:\s)?([a-z0-9_]+(?:\.[a-z0-9_]+)*):")


def reason_check(reason: Optional[str]) -> Optional[str]:
    """The check id inside a gcm drain reason, new or old format; None if not ours."""
    if not reason or not reason.startswith(GCM_PREFIX):
        return None
    m = _NEW_REASON.match(reason) or _OLD_REASON.match(reason)
    return m.group(1) if m else None
