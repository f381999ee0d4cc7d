"""Node features (``gcm_ok`` / ``gcm_degraded`` / ``gcm_qualified``) and
our segment of ``Extra``, written on transitions only; everything else on
the node (an admin's features, text or JSON keys) is kept.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from gcm_checks.logs import NullLog
from gcm_checks.slurm.backends import DryRunBackend, SlurmBackend
from gcm_checks.slurm.local_state import feature_record, record_features
from gcm_checks.slurm.parse import SlurmError
from gcm_checks.slurm.reasons import sanitize_reason

# Features gcm-checks owns; every other feature on a node is preserved.
GCM_FEATURES = ("gcm_ok", "gcm_degraded", "gcm_qualified")


@dataclass(frozen=True)
class FeatureOutcome:
    # unchanged | applied | reapplied | error
    action: str
    features: Tuple[str, ...] = ()
    detail: str = ""


def merge_features(current: Sequence[str], gcm: Sequence[str], manage: Sequence[str] = GCM_FEATURES) -> List[str]:
    """Every feature we do not manage here, in order, then ours."""
    managed = set(manage) | set(gcm)
    keep = [f for f in current if f not in managed]
    return keep + [f for f in gcm if f not in keep]


def summary_extra(status: str, failing: Sequence[str] = (), when: Optional[float] = None) -> str:
    """Compact health summary for the node's ``Extra`` (survives restarts)."""
    ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when if when is not None else time.time()))
    s = f"gcm {status} {ts}"
    if failing:
        s += " " + ",".join(failing[:5])
    return sanitize_reason(s, 200)


# Extra is one free-text field shared with admins (and with other tools):
# gcm writes "gcm <status> ..." segments, one per slot, separated by "; ",
# and keeps everything else in the field as it was. Our segments never hold
# ";" (sanitize_reason strips it).
_EXTRA_SLOTS = {"ok": "health", "degraded": "health", "qualified": "qualify", "qualify-failed": "qualify"}
_EXTRA_SEGMENT = re.compile(r"gcm (\S+)[^;]*")


def _extra_slot(word: str) -> str:
    return _EXTRA_SLOTS.get(word, word)


def _json_extra(current: Optional[str]) -> Optional[Dict[str, Any]]:
    text = (current or "").strip()
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _merge_extra_json(obj: Dict[str, Any], current: Optional[str], ours: str) -> str:
    """Our segment as flat keys of the node's JSON Extra, which
    ``SchedulerParameters=extra_constraints`` requires and jobs can filter on
    (``sbatch --extra "gcm_health=ok"``). Other keys are kept."""
    out = dict(obj)
    if current and not obj and current.strip():
        out["text"] = current.strip()  # an admin's free text survives the switch to JSON
    words = ours.split()
    if len(words) >= 3 and words[0] == "gcm":
        slot = _extra_slot(words[1])
        out[f"gcm_{slot}"] = words[1]
        out[f"gcm_{slot}_at"] = words[2]
        if len(words) > 3:
            out[f"gcm_{slot}_failing"] = words[3]
        else:
            out.pop(f"gcm_{slot}_failing", None)
    return json.dumps(out, separators=(",", ":"))


def gcm_summary(extra: Optional[str]) -> Optional[str]:
    """Our health summary from a node's Extra, text or JSON form, as text."""
    obj = _json_extra(extra)
    if obj is not None:
        if "gcm_health" not in obj:
            return None
        return " ".join(str(x) for x in ("gcm", obj.get("gcm_health"), obj.get("gcm_health_at", ""),
                                            obj.get("gcm_health_failing", "")) if x).strip()
    for piece in (extra or "").split(";"):
        seg = _EXTRA_SEGMENT.fullmatch(piece.strip())
        if seg is not None and _extra_slot(seg.group(1)) == "health":
            return piece.strip()
    return None


def merge_extra(current: Optional[str], ours: str, fmt: str = "auto") -> str:
    """``current`` Extra with our segment for ``ours``' slot replaced (or
    added); foreign text and our other slots are kept as they are.

    ``fmt``: ``text`` (``rack=12; gcm ok ...``), ``json`` (flat keys in a
    JSON object: ``{"rack":"12","gcm_health":"ok",...}``), or ``auto`` -
    JSON when the node's Extra already is a JSON object, text otherwise.
    """
    current = current or ""
    if not ours:
        return current
    obj = _json_extra(current)
    if fmt == "json" or (fmt == "auto" and obj is not None):
        return _merge_extra_json(obj or {}, current if obj is None else None, ours)
    m = _EXTRA_SEGMENT.fullmatch(ours)
    slot = _extra_slot(m.group(1)) if m else None
    pieces = [p for p in current.split(";")]
    out: List[str] = []
    replaced = False
    for piece in pieces:
        seg = _EXTRA_SEGMENT.fullmatch(piece.strip())
        if seg is not None and slot is not None and _extra_slot(seg.group(1)) == slot:
            if not replaced:
                out.append(ours)
                replaced = True
            continue
        if piece.strip():
            out.append(piece.strip())
    if not replaced:
        out.append(ours)
    return "; ".join(out)


def apply_features(
    backend: SlurmBackend,
    node: str,
    gcm_features: Sequence[str],
    extra: Optional[str] = None,
    *,
    state_dir: Optional[str] = None,
    log: Any = None,
    verify: bool = False,
    manage: Sequence[str] = GCM_FEATURES,
    stamp: Optional[str] = None,
    extra_format: Optional[str] = None,
) -> FeatureOutcome:
    """Publish ``gcm_features`` (e.g. ["gcm_ok"]) and ``extra`` on transitions.

    If the local record already says these features are applied, no RPC is
    made unless ``verify``: then the node is read and, if a reconfigure wiped
    the features, they are re-applied from the record. Extra's timestamp does
    not make a transition on its own; only the feature set does. Only the
    features in ``manage`` are replaced: health mode manages gcm_ok and
    gcm_degraded and leaves qualification's gcm_qualified alone.
    """
    want = sorted(set(gcm_features))
    managed = set(manage) | set(want)
    rec = feature_record(state_dir, node)
    if rec is not None and stamp is not None and rec.get("stamp") != stamp:
        # slurm.conf changed since we last looked: a reconfigure that wiped
        # scontrol-set features is likely. Detected locally, without an RPC.
        verify = True
    if rec is not None and sorted(rec.get("features") or []) == want and not verify:
        return FeatureOutcome("unchanged", tuple(want))
    log = log if log is not None else NullLog()
    try:
        info = backend.node_info(node)
    except SlurmError as e:
        log.error("slurm_unreadable", node=node, error=str(e), skipped="features")
        return FeatureOutcome("error", tuple(want), str(e))
    have = sorted(f for f in info.active_features if f in managed)
    have_avail = sorted(f for f in info.available_features if f in managed)
    if have == want and have_avail == want and rec is not None and sorted(rec.get("features") or []) == want:
        if not isinstance(backend, DryRunBackend):  # verified now: restart the verify clock
            record_features(state_dir, node, dict(rec, time=time.time(), stamp=stamp))
        return FeatureOutcome("unchanged", tuple(want))
    available = merge_features(info.available_features, want, managed)
    active = merge_features(info.active_features, want, managed)
    ours = extra if extra is not None else (rec or {}).get("extra") or ""
    # Only our own segment changes; an admin's text in Extra is kept.
    fmt = extra_format or getattr(backend, "extra_format", None) or "auto"  # slurm.extra_format
    extra_value = merge_extra(info.extra, ours, fmt)
    try:
        if hasattr(backend, "set_features_and_extra"):
            backend.set_features_and_extra(node, available, active, extra_value)  # type: ignore[attr-defined]
        else:
            backend.set_features(node, available, active)
            if extra_value:
                backend.set_extra(node, extra_value)
    except SlurmError as e:
        log.error("slurm_update_failed", node=node, update="features", error=str(e))
        return FeatureOutcome("error", tuple(want), str(e))
    action = "reapplied" if (rec is not None and sorted(rec.get("features") or []) == want) else "applied"
    if not isinstance(backend, DryRunBackend):
        record_features(state_dir, node, {"node": node, "features": want, "extra": ours, "time": time.time(), "stamp": stamp})
    log.info("slurm_features", node=node, action=action, features=want)
    return FeatureOutcome(action, tuple(want))
