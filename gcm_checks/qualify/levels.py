"""What each qualification level runs.

* quick    - the prolog and epilog suites: minutes at most, for a node back
             from a reboot;
* standard - quick + DCGM diag level 2 + a short performance probe: the gate
             before a node enters production;
* deep     - quick + DCGM diag level 3 + a long performance probe: after a
             repair or an RMA, or for a burn-in (set dcgm_level 4 in config
             where DCGM 3.1+ is installed and hours are acceptable).

``qualify.levels`` in config overrides any field of any level.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional, Tuple

NAMES = ("quick", "standard", "deep")


@dataclass(frozen=True)
class Level:
    name: str
    suites: Tuple[str, ...]  # registry tags, run in order; a check runs once
    dcgm_level: Optional[int]  # None: the config's dcgm.level
    probe_s: float  # performance probe length per GPU (0 = no probe)
    budget_s: float  # hard wall-clock budget for the whole qualification


DEFAULTS = {
    "quick": Level("quick", ("prolog", "epilog"), None, 0.0, 300.0),
    # DCGM level 2 takes ~2-5 minutes on 8 GPUs; the probe 10 s per GPU, in parallel.
    "standard": Level("standard", ("prolog", "epilog", "qualify"), 2, 10.0, 900.0),
    # DCGM level 3 takes ~30-45 minutes (dcgm.DEFAULT_TIMEOUT_S[3] is 2700 s).
    "deep": Level("deep", ("prolog", "epilog", "qualify"), 3, 120.0, 3600.0),
}


class LevelError(ValueError):
    pass


def resolve(name: str, overrides: Optional[Mapping[str, Any]] = None) -> Level:
    """The level ``name`` with config overrides applied (``qualify.levels``)."""
    if name not in DEFAULTS:
        raise LevelError(f"unknown level {name!r}: expected one of {', '.join(NAMES)}")
    level = DEFAULTS[name]
    over = (overrides or {}).get(name) or {}
    if not isinstance(over, Mapping):
        raise LevelError(f"qualify.levels.{name}: expected a mapping")
    changes: dict = {}
    for key, value in over.items():
        if key == "suites":
            if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
                raise LevelError(f"qualify.levels.{name}.suites: expected a list of suite tags")
            changes["suites"] = tuple(value)
        elif key == "dcgm_level":
            if value is not None and value not in (1, 2, 3, 4):
                raise LevelError(f"qualify.levels.{name}.dcgm_level: expected 1-4 or null")
            changes["dcgm_level"] = value
        elif key in ("probe_s", "budget_s"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise LevelError(f"qualify.levels.{name}.{key}: expected a number >= 0")
            changes[key] = float(value)
        else:
            raise LevelError(f"qualify.levels.{name}.{key}: unknown key (suites, dcgm_level, probe_s, budget_s)")
    return replace(level, **changes)
