"""What this node remembers of its own drains and features, under
``state_dir``: a healthy run reads it instead of asking slurmctld.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any, Dict, Optional

from gcm_checks.state import read_json, write_json_atomic  # bounded size and depth, no symlink; atomic

# Per node: test clusters run several slurmd on one host sharing one state dir.
DRAIN_STATE_FILE = "slurm-drain.{node}.json"
FEATURE_STATE_FILE = "slurm-features.{node}.json"


def _state_path(state_dir: str, pattern: str, node: str) -> str:
    return os.path.join(state_dir, pattern.format(node=re.sub(r"[^A-Za-z0-9_.-]", "_", node) or "_"))


def _write(state_dir: str, pattern: str, node: str, record: Dict[str, Any]) -> None:
    # Atomic: a crash mid-write must not leave a half record that makes the
    # next run believe (or forget) that we drained the node.
    write_json_atomic(_state_path(state_dir, pattern, node), record, sort_keys=True)


def drain_record(state_dir: Optional[str], node: str) -> Optional[dict]:
    """Our last drain of ``node`` as recorded locally, or None."""
    if not state_dir:
        return None
    rec = read_json(_state_path(state_dir, DRAIN_STATE_FILE, node))
    if rec and rec.get("node") == node:
        return rec
    return None


def record_drain(state_dir: Optional[str], node: str, reason: str, check: str) -> None:
    """Remember that the drain ``reason`` on ``node`` is ours, made for ``check``."""
    if not state_dir:
        return
    try:
        _write(state_dir, DRAIN_STATE_FILE, node, {"node": node, "reason": reason, "check": check, "time": time.time()})
    except OSError:
        pass  # losing the record only means a later resume needs an admin


def forget_drain(state_dir: Optional[str], node: str) -> None:
    """The node is no longer drained by us (resumed, or drained again by someone)."""
    if not state_dir:
        return
    try:
        os.unlink(_state_path(state_dir, DRAIN_STATE_FILE, node))
    except FileNotFoundError:
        pass


def feature_record(state_dir: Optional[str], node: str) -> Optional[dict]:
    if not state_dir:
        return None
    rec = read_json(_state_path(state_dir, FEATURE_STATE_FILE, node))
    if rec and rec.get("node") == node:
        return rec
    return None


def record_features(state_dir: Optional[str], node: str, record: Dict[str, Any]) -> None:
    """Remember the features (and our Extra) last applied to ``node``."""
    if not state_dir:
        return
    try:
        _write(state_dir, FEATURE_STATE_FILE, node, record)
    except OSError:
        pass  # the next run re-reads the node and re-applies


def conf_stamp(env: Optional[Dict[str, str]] = None) -> Optional[str]:
    """mtime and size of slurm.conf: changes when an admin edits it before a reconfigure."""
    env = os.environ if env is None else env
    path = env.get("SLURM_CONF") or "/etc/slurm/slurm.conf"
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_mtime_ns}:{st.st_size}"
