"""What this node remembers of its own drains and features, under
``state_dir``: a healthy run reads it instead of asking slurmctld.
"""

from __future__ import annotations

import os
import re
from typing import Dict, Optional

# Per node: test clusters run several slurmd on one host sharing one state dir.
DRAIN_STATE_FILE = "slurm-drain.{node}.json"
FEATURE_STATE_FILE = "slurm-features.{node}.json"


def _read_json(path: str) -> Optional[dict]:
    from gcm_checks.state import read_json  # bounded size and depth, no symlink

    return read_json(path)


def _write_json(path: str, data: dict) -> None:
    # Atomic: a crash mid-write must not leave a half record that makes the
    # next run believe (or forget) that we drained the node.
    from gcm_checks.state import write_json_atomic

    write_json_atomic(path, data, sort_keys=True)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _state_path(state_dir: str, pattern: str, node: str) -> str:
    return os.path.join(state_dir, pattern.format(node=re.sub(r"[^A-Za-z0-9_.-]", "_", node) or "_"))


def drain_record(state_dir: Optional[str], node: str) -> Optional[dict]:
    """Our last drain of ``node`` as recorded locally, or None."""
    if not state_dir:
        return None
    rec = _read_json(_state_path(state_dir, DRAIN_STATE_FILE, node))
    if rec and rec.get("node") == node:
        return rec
    return None


def feature_record(state_dir: Optional[str], node: str) -> Optional[dict]:
    if not state_dir:
        return None
    rec = _read_json(_state_path(state_dir, FEATURE_STATE_FILE, node))
    if rec and rec.get("node") == node:
        return rec
    return None

def conf_stamp(env: Optional[Dict[str, str]] = None) -> Optional[str]:
    """mtime and size of slurm.conf: changes when an admin edits it before a reconfigure."""
    env = os.environ if env is None else env
    path = env.get("SLURM_CONF") or "/etc/slurm/slurm.conf"
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_mtime_ns}:{st.st_size}"
