"""Stall, silence and divergence: judge tracker snapshots, never act.

A converging job and a stalled one are both RUNNING to Slurm; the difference
is only visible in the output. Each alert fires once per episode (a stall
that recovers and stalls again fires twice), so a notification sink is never
flooded. Time is passed in, so tests need no sleeps.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import List, Optional

from gcm_checks.wrapper.progress import Snapshot, loss_is_bad


@dataclass(frozen=True)
class Alert:
    kind: str  # "stalled", "silent", "diverged", "resumed"
    message: str
    at: float  # wall clock
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message, "at": self.at, "details": dict(self.details)}


def clock_hhmm(wall: Optional[float]) -> str:
    return time.strftime("%H:%M", time.localtime(wall)) if wall else "?"


def fmt_count(v: Optional[float]) -> str:
    if v is None:
        return "?"
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.1f}"


def where(snap: Snapshot) -> str:
    if snap.step is None:
        return ""
    if snap.total:
        return f" at step {fmt_count(snap.step)}/{fmt_count(snap.total)}"
    return f" at step {fmt_count(snap.step)}"


# Without --stall-after, a stall is judged from the job's own pace once the
# step counter has moved AUTO_MIN_STEPS times: no advance for AUTO_STEP_FACTOR
# typical steps, and never sooner than AUTO_MIN_S (a checkpoint save or an
# eval pass is a pause, not a hang; NCCL's own timeout is 10-30 minutes).
AUTO_MIN_STEPS = 5
AUTO_STEP_FACTOR = 20.0
AUTO_MIN_S = 1200.0


class Watchdog:
    """``stall_after``: no step advance for that long (armed by the first step),
    whatever else the program prints: a hung job that keeps logging heartbeat
    lines is stalled. ``auto``: with no ``stall_after``, judge from the step
    rate (see AUTO_*). ``silent_after``: no output at all for that long
    (armed from the start). None disables either."""

    def __init__(self, stall_after: Optional[float], silent_after: Optional[float], start_mono: float,
                 auto: bool = False) -> None:
        self.stall_after = stall_after
        self.auto = auto
        self.silent_after = silent_after
        self.start_mono = start_mono
        self.stalled = False
        self.silent = False
        self.diverged = False

    def stall_limit(self, snap: Snapshot) -> Optional[float]:
        if self.stall_after is not None:
            return self.stall_after
        if not self.auto or snap.steps_seen < AUTO_MIN_STEPS:
            return None
        return max(AUTO_MIN_S, AUTO_STEP_FACTOR * (snap.step_time_s or 0.0))

    def check(self, snap: Snapshot, mono: float, wall: float) -> List[Alert]:
        out: List[Alert] = []
        limit = self.stall_limit(snap)
        if limit is not None and snap.last_progress_mono is not None:
            idle = mono - snap.last_progress_mono
            if idle >= limit and not self.stalled:
                self.stalled = True
                talking = snap.last_output_mono is not None and mono - snap.last_output_mono < idle / 2
                rate = f"; it was doing a step every {fmt_duration(snap.step_time_s)}" if snap.step_time_s else ""
                out.append(Alert(
                    "stalled",
                    f"stalled since {clock_hhmm(snap.last_progress_wall)}{where(snap)}:"
                    f" no step for {fmt_duration(idle)}{rate}"
                    + ("; the program still prints output, but the step counter does not move" if talking else ""),
                    wall,
                    {"since": snap.last_progress_wall, "step": snap.step, "total": snap.total, "idle_s": round(idle, 1),
                     "limit_s": round(limit, 1), "still_printing": talking},
                ))
            elif idle < limit and self.stalled:
                self.stalled = False
                out.append(Alert("resumed", f"progress resumed{where(snap)}", wall, {"step": snap.step}))
        if self.silent_after is not None:
            last = snap.last_output_mono if snap.last_output_mono is not None else self.start_mono
            quiet = mono - last
            if quiet >= self.silent_after and not self.silent:
                self.silent = True
                since = wall - quiet
                out.append(Alert(
                    "silent",
                    f"no output since {clock_hhmm(since)}{where(snap)} ({fmt_duration(quiet)})",
                    wall,
                    {"since": since, "quiet_s": round(quiet, 1)},
                ))
            elif quiet < self.silent_after and self.silent:
                self.silent = False
        if loss_is_bad(snap.bad_loss) and not self.diverged:
            self.diverged = True
            out.append(Alert(
                "diverged",
                f"loss is {snap.bad_loss} since {clock_hhmm(snap.bad_loss_wall)}{where(snap)}",
                wall,
                {"loss": str(snap.bad_loss), "since": snap.bad_loss_wall},
            ))
        return out


def parse_duration(text: str) -> float:
    """'90', '90s', '30m', '2h', '1h30m', '1d' -> seconds. ValueError otherwise."""
    s = text.strip().lower()
    if not s:
        raise ValueError("empty duration")
    try:
        return float(s)
    except ValueError:
        pass
    import re

    total, pos = 0.0, 0
    for m in re.finditer(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)", s):
        if m.start() != pos and s[pos:m.start()].strip():
            raise ValueError(f"bad duration {text!r}")
        total += float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
        pos = m.end()
    if pos == 0 or s[pos:].strip():
        raise ValueError(f"bad duration {text!r} (use e.g. 90s, 30m, 2h, 1h30m)")
    return total


def fmt_duration(seconds: Optional[float]) -> str:
    """Short, human: 45s, 7m, 2h13m, 3d4h."""
    if seconds is None:
        return "?"
    s = int(round(max(0.0, seconds)))
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s:02d}s" if m < 10 and s else f"{m}m"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h}h"
