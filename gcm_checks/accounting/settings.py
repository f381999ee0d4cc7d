"""The ``accounting:`` config section as typed, frozen data."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any, Mapping, Optional


@dataclass(frozen=True)
class AccountingSettings:
    interval_s: float = 300.0  # at most one sacct call per interval, however many jobs ended
    notify_wait_s: float = 0.0  # hold a job's notification this long for refinement (only where a pass runs)
    sacct: Optional[str] = None  # absolute path; None = search standard places (no PATH in Slurm scripts)
    timeout_s: float = 30.0  # deadline of the one sacct call
    designated_node: Optional[str] = None  # health mode refines only on this node; None = wherever run
    lookback_s: float = 3600.0  # first pass ever: how far back
    settle_s: float = 10.0  # a job that ended less than this ago waits for the next pass
    overlap_s: float = 120.0  # re-read this much before the last window (slurmdbd lags slurmctld)
    report_wait_s: float = 900.0  # a run whose report is not written yet is retried this long (no new sacct call)
    keep_s: float = 7 * 86400.0  # remember refined job keys this long
    state_file: Optional[str] = None  # None = <state_dir>/accounting-pass.json

    @classmethod
    def from_mapping(cls, m: Optional[Mapping[str, Any]]) -> "AccountingSettings":
        names = {f.name for f in fields(cls)}
        kw = {}
        for k, v in (m or {}).items():
            if k not in names:
                raise ValueError(f"accounting: unknown key {k!r}")
            kw[k] = v
        return cls(**kw)

    @classmethod
    def coerce(cls, settings: Any) -> "AccountingSettings":
        """Our dataclass, an ``accounting:`` mapping, a whole config mapping or
        the lead's ``Settings`` (which has ``section()``)."""
        if isinstance(settings, cls):
            return settings
        if settings is None:
            return cls()
        if hasattr(settings, "section"):
            return cls.from_mapping(settings.section("accounting"))
        if isinstance(settings, Mapping):
            sub = settings.get("accounting")
            if isinstance(sub, cls):
                return sub
            return cls.from_mapping(sub if isinstance(sub, Mapping) else {})
        return cls()


def state_dir_of(settings: Any) -> str:
    if hasattr(settings, "get") and not isinstance(settings, Mapping):
        v = settings.get("state_dir")
    elif isinstance(settings, Mapping):
        v = settings.get("state_dir")
    else:
        v = None
    return str(v or "/var/lib/gcm-checks")


def state_file_of(settings: Any) -> str:
    acc = AccountingSettings.coerce(settings)
    return acc.state_file or os.path.join(state_dir_of(settings), "accounting-pass.json")
