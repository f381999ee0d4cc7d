"""Training progress out of plain output: no code change, any framework.

The parsers (one line -> ``ProgressEvent``) live in ``formats``. ``Tracker``
folds events into a snapshot with percent, mean step time and ETA, and keeps
a bounded, decimated history of the step counter and of every metric.
``ChunkScanner`` sits on the output pump, one per stream (stdout, stderr and
a pty each keep their own partial line, so a loss dict on stdout is never
glued to a half-drawn bar on stderr): it splits raw bytes into lines on
``\\n`` *and* ``\\r`` (tqdm redraws a bar with ``\\r``) and keeps its cost
bounded per chunk, because a child may print 10,000 lines a second and the
wrapper must stay under a few percent of one core.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple

from gcm_checks.wrapper.formats import (PARSERS, ProgressEvent, finite, loss_is_bad, parse_gcm, parse_generic,
                                    parse_hf_dict, parse_line, parse_megatron, parse_rich, parse_tqdm, to_float)

# Re-exported: tests and tools import the parsers from here (they lived here).
__all__ = ["PARSERS", "ProgressEvent", "finite", "loss_is_bad", "parse_gcm", "parse_generic", "parse_hf_dict",
           "parse_line", "parse_megatron", "parse_rich", "parse_tqdm", "to_float", "Series", "Snapshot",
           "Tracker", "ChunkScanner", "HISTORY_POINTS"]

# ---------------------------------------------------------------- history

HISTORY_POINTS = 1000  # per series; the status file stays well under 1 MiB
MAX_SERIES = 16  # metric names kept; a program printing a new name per line must not grow us


class Series:
    """A bounded, decimated series of (wall, step, value) points.

    Points are appended in time order; when full, every other point is
    dropped and from then on only every ``stride``-th offer is kept, so the
    series always spans the whole run at an even density, in O(1) memory.
    """

    __slots__ = ("cap", "points", "stride", "_offers")

    def __init__(self, cap: int = HISTORY_POINTS) -> None:
        self.cap = max(4, cap)
        self.points: List[Tuple[float, Optional[float], float]] = []
        self.stride = 1
        self._offers = 0

    def add(self, wall: float, step: Optional[float], value: float) -> None:
        self._offers += 1
        if self._offers % self.stride:
            return
        self.points.append((wall, step, value))
        if len(self.points) > self.cap:
            self.points = self.points[::2]
            self.stride *= 2

    def to_list(self) -> list:
        return [[round(w, 2), _num(s), _jsonable(v)] for w, s, v in self.points]


# ---------------------------------------------------------------- tracker


@dataclass(frozen=True)
class Snapshot:
    """What we know about the run now; every field may be unknown."""

    step: Optional[float] = None
    total: Optional[float] = None
    percent: Optional[float] = None
    loss: Optional[float] = None
    epoch: Optional[float] = None
    max_epochs: Optional[float] = None
    rate: Optional[float] = None  # steps per second
    step_time_s: Optional[float] = None  # mean seconds per step
    eta_s: Optional[float] = None  # as of last_event_mono
    source: str = ""
    message: str = ""
    last_progress_mono: Optional[float] = None  # when the step last advanced
    last_progress_wall: Optional[float] = None
    last_output_mono: Optional[float] = None
    bad_loss: Optional[float] = None  # the first NaN/inf loss seen
    bad_loss_wall: Optional[float] = None
    steps_seen: int = 0  # how many times the step advanced (arms the automatic stall rule)

    def eta_now(self, mono: Optional[float]) -> Optional[float]:
        """The ETA aged by the time since the step last moved: a frozen ETA
        on a hung job is a lie (during a stall the caller says "stalled")."""
        if self.eta_s is None:
            return None
        if mono is None or self.last_progress_mono is None:
            return self.eta_s
        return max(0.0, self.eta_s - max(0.0, mono - self.last_progress_mono))

    def to_dict(self, *, running: bool = True, mono: Optional[float] = None) -> dict:
        pct = self.percent
        if pct is not None and running:
            # Never claim 100% while the process still runs: the last step
            # done is not the run done (checkpoint save, eval, hang at exit).
            pct = min(pct, 99.0)
        eta = self.eta_now(mono) if running else self.eta_s
        return {
            "step": _num(self.step),
            "total": _num(self.total),
            "percent": None if pct is None else round(pct, 1),
            "loss": _jsonable(self.loss),
            "epoch": _num(self.epoch),
            "max_epochs": _num(self.max_epochs),
            "rate_per_s": None if self.rate is None else round(self.rate, 4),
            "step_time_s": None if self.step_time_s is None else round(self.step_time_s, 4),
            "eta_s": None if eta is None else round(eta, 1),
            "source": self.source,
            "message": self.message,
            "last_progress_at": self.last_progress_wall,
            "bad_loss": _jsonable(self.bad_loss),
            "bad_loss_at": self.bad_loss_wall,
        }


def _num(v: Optional[float]):
    if v is None:
        return None
    if not math.isfinite(v):
        return str(v)
    return int(v) if float(v).is_integer() else round(v, 4)


def _jsonable(v: Optional[float]):
    # Strict JSON has no NaN: say it as a string so every reader can parse it.
    if v is None:
        return None
    if math.isnan(v) or math.isinf(v):
        return str(v)
    return v


# Which parsers may move the step counter, best first. A trainer usually
# prints one main bar plus short eval/dataloader bars; we follow the source
# with the highest rank, and among bars of one source the largest total.
_RANK = {"gcm": 5, "megatron": 4, "deepspeed": 4, "torchtitan": 4, "jax": 4, "lightning": 3, "keras": 3,
         "step": 2, "rich": 1, "tqdm": 1, "hf": 0, "loss": 0}


class Tracker:
    """Fold progress events into a ``Snapshot``; time is passed in (testable)."""

    def __init__(self, history_points: int = HISTORY_POINTS) -> None:
        self._snap = Snapshot()
        self._last_output: Optional[float] = None
        self._key: Optional[Tuple[str, Optional[float]]] = None
        self._base: Optional[Tuple[float, float]] = None  # (mono, global step) at baseline
        self._prev_done: Optional[float] = None
        self._points = history_points
        self.history: Dict[str, Series] = {}
        self.metrics: Dict[str, float] = {}  # latest value of each named metric

    @property
    def done(self) -> Optional[float]:
        """Steps done over the whole run (epoch bars folded in)."""
        return self._prev_done

    @property
    def snap(self) -> Snapshot:
        # Output time is kept apart and folded in on read: it changes on every
        # chunk, and rebuilding a frozen snapshot per chunk showed in profiles.
        if self._last_output != self._snap.last_output_mono:
            self._snap = replace(self._snap, last_output_mono=self._last_output)
        return self._snap

    def output_seen(self, mono: float) -> None:
        self._last_output = mono

    def _record(self, name: str, wall: float, value: float) -> None:
        s = self.history.get(name)
        if s is None:
            if len(self.history) >= MAX_SERIES:
                return
            s = self.history[name] = Series(self._points)
        s.add(wall, self._snap.step, value)

    def history_dict(self) -> dict:
        return {k: v.to_list() for k, v in self.history.items()}

    def observe(self, ev: ProgressEvent, mono: float, wall: float) -> None:
        s = self.snap
        changes: dict = {}
        if ev.epoch is not None and ev.step is None:
            changes["epoch"] = ev.epoch  # HF dict, Keras "Epoch 3/10": epoch only
            if ev.max_epochs is not None:
                changes["max_epochs"] = ev.max_epochs
        if ev.message:
            changes["message"] = ev.message
        if ev.has_step and self._accept(ev):
            adv = self._advance(ev, mono, wall)
            changes.update(adv)
        elif ev.percent is not None and ev.step is None and ev.source == "gcm":
            changes["percent"] = ev.percent
            changes["source"] = "gcm"
        if changes:
            self._snap = s = replace(s, **changes)
        if ev.loss is not None:
            bad = loss_is_bad(ev.loss)
            loss_changes: dict = {"loss": ev.loss}
            if bad and s.bad_loss is None:
                loss_changes["bad_loss"] = ev.loss
                loss_changes["bad_loss_wall"] = wall
            self._snap = replace(self._snap, **loss_changes)
            if not bad:
                self._record("loss", wall, ev.loss)
        for name, value in ev.metrics:
            self.metrics[name] = value
            if math.isfinite(value):
                self._record(name, wall, value)
        if len(self.metrics) > 4 * MAX_SERIES:  # bounded: keep the newest names
            for k in list(self.metrics)[: len(self.metrics) - 4 * MAX_SERIES]:
                del self.metrics[k]

    def _accept(self, ev: ProgressEvent) -> bool:
        if self._key is None:
            return True
        cur_src, cur_total = self._key
        if ev.source == cur_src:
            if cur_total and self._prev_done is not None and self._prev_done >= cur_total:
                # The bar we followed has finished (a preprocessing pass, a
                # previous epoch's bar): the next one is the news.
                return True
            # Same kind of bar with a smaller total is an eval bar: ignore it.
            return ev.total is None or cur_total is None or ev.total >= cur_total
        return _RANK.get(ev.source, 0) > _RANK.get(cur_src, 0)

    def _global(self, ev: ProgressEvent) -> Tuple[float, Optional[float]]:
        """(done, total) over the whole run; Lightning and Keras bars restart per epoch."""
        step, total = float(ev.step or 0), ev.total
        if ev.source == "keras" and total and self._snap.epoch:
            # Keras prints "Epoch 3/10" (1-based) on its own line before the bar.
            epoch = self._snap.epoch
            done = (epoch - 1) * total + step
            return done, (self._snap.max_epochs * total if self._snap.max_epochs else None)
        if ev.source == "lightning" and ev.epoch is not None and total:
            done = ev.epoch * total + step
            if ev.max_epochs:
                # Rich prints "Epoch 3/9": the last epoch index, not a count.
                epochs = ev.max_epochs + 1 if ev.max_epochs >= ev.epoch else ev.max_epochs
                return done, epochs * total
            # Epoch count unknown: the ETA covers this epoch only (see _advance).
            return done, None
        return step, total

    def _advance(self, ev: ProgressEvent, mono: float, wall: float) -> dict:
        s = self.snap
        key = (ev.source, ev.total)
        done, total = self._global(ev)
        prev_done = None
        if self._key is not None and self._key[0] == ev.source and self._base is not None:
            prev_done = self._prev_done
        if key != self._key or self._base is None or (prev_done is not None and done < prev_done):
            # New source or the counter went back (a restart): new baseline.
            self._key = key
            self._base = (mono, done)
            prev_done = None
        out: dict = {"step": ev.step, "total": ev.total, "source": ev.source,
                     "epoch": ev.epoch if ev.epoch is not None else s.epoch,
                     "max_epochs": ev.max_epochs if ev.max_epochs is not None else s.max_epochs}
        advanced = prev_done is None or done > prev_done
        if advanced:
            # A heartbeat line repeating the same step is output, not
            # progress: only a moving counter resets the stall clock.
            out["last_progress_mono"] = mono
            out["last_progress_wall"] = wall
            out["steps_seen"] = s.steps_seen + 1
        self._prev_done = done
        base_mono, base_done = self._base
        step_time = None
        if done > base_done and mono > base_mono:
            step_time = (mono - base_mono) / (done - base_done)
        elif ev.rate:
            step_time = 1.0 / ev.rate
        out["step_time_s"] = step_time
        out["rate"] = (1.0 / step_time) if step_time else ev.rate
        if total:
            out["percent"] = max(0.0, min(100.0, 100.0 * done / total))
        elif ev.total:
            out["percent"] = max(0.0, min(100.0, 100.0 * float(ev.step or 0) / ev.total))
        elif ev.percent is not None:
            out["percent"] = ev.percent
        else:
            out["percent"] = None
        if total and step_time is not None:
            out["eta_s"] = max(0.0, (total - done) * step_time)
        elif ev.total and step_time is not None:
            out["eta_s"] = max(0.0, (ev.total - float(ev.step or 0)) * step_time)
        else:
            out["eta_s"] = ev.eta_s
        if advanced:
            self._snap = replace(s, step=ev.step)
            self._record("step", wall, done)
        return out


# ---------------------------------------------------------------- chunk scanner

# One cheap test on a whole chunk decides whether any line needs parsing.
# Substring tests on the lower-cased bytes, not a case-insensitive regex
# alternation: the regex tries every alternative at every byte and cost
# 0.3 ms per 8 KiB chunk, most of the pump's budget at 10,000 lines/s.
_TOKENS = (b"%|", b"it/s", b"s/it", b"step", b"iteration", b"loss", b"epoch", b"gcm_progress",
           b"\xe2\x94\x81", b"/step", b"learning_rate")
# Lines that carry metrics (not only a step): all of the latest ones in a
# chunk are parsed, however many bar redraws follow them.
_METRIC_TOKENS = (b"loss", b"{'", b'{"', b"rate", b"norm", b"gcm_progress")
# A bad loss near the word loss (not "number of nan iterations" three
# fields later in a Megatron line, not the "inf" in "INFO").
_BAD_LOSS = re.compile(rb"loss[^|\n]{0,24}?[^a-z0-9_](?:nan|inf)")


def _candidate(low: bytes) -> bool:
    for t in _TOKENS:
        if t in low:
            return True
    return False


def _metric_line(low: bytes) -> bool:
    for t in _METRIC_TOKENS:
        if t in low:
            return True
    return _epoch_line(low)


def _epoch_line(low: bytes) -> bool:
    # Keras prints "Epoch 3/10" on a line of its own before the epoch's bar.
    return len(low) < 40 and low.lstrip().startswith(b"epoch")


class ChunkScanner:
    """Turn raw output chunks of ONE stream into tracker updates at bounded cost.

    Keeps at most ``max_partial`` bytes of an unterminated line, so endless
    output without newlines cannot grow memory. Chunks are scanned at most
    every ``min_interval_s``; in between they wait in a list bounded to
    ``pending_cap`` bytes (the oldest dropped first). A scan looks at the
    newest ``tail_window`` bytes: it parses the newest step line and the
    newest metric lines until it has both a step and a loss (so a loss dict
    followed by a hundred bar redraws in one read is kept). When the scanned
    data mentions a NaN/inf loss, every line of it is parsed, so a single
    NaN loss among thousands of lines is never missed.

    A flood (more than ``pending_cap`` bytes per interval, or reads bigger
    than the watcher's SCAN_BYTES) is sampled: only its newest bytes are
    parsed. A loss that went NaN stays NaN in every later line, so the
    sample still sees it; docs/gcm-run.md says so.
    """

    def __init__(self, tracker: Tracker, *, max_partial: int = 8192, max_lines: int = 64,
                 max_metric_lines: int = 32, min_interval_s: float = 0.02, pending_cap: int = 1 << 18) -> None:
        self.tracker = tracker
        self.max_partial = max_partial
        self.max_lines = max_lines
        self.max_metric_lines = max_metric_lines
        self.min_interval_s = min_interval_s
        self.pending_cap = pending_cap
        self.tail_window = 16384
        self._partial = b""
        self._pending: List[bytes] = []
        self._pending_bytes = 0
        self._cut = False  # the oldest pending bytes start mid-line
        self._last_scan: Optional[float] = None

    def feed(self, data: bytes, mono: float, wall: float, head_cut: bool = False) -> None:
        self.tracker.output_seen(mono)
        if head_cut:
            # The caller skipped the head of this read: what we held is no
            # longer followed by its own continuation.
            self._pending.clear()
            self._pending_bytes = 0
            self._partial = b""
            self._cut = True
        self._pending.append(data)
        self._pending_bytes += len(data)
        while self._pending_bytes > self.pending_cap and len(self._pending) > 1:
            self._pending_bytes -= len(self._pending.pop(0))
            self._partial = b""
            self._cut = True
        if self._last_scan is None or mono - self._last_scan >= self.min_interval_s:
            self._process(mono, wall)

    def poll(self, mono: float, wall: float) -> None:
        """Scan what waited for the interval (the pump calls this each tick)."""
        if self._pending:
            self._process(mono, wall)

    def flush(self, mono: float, wall: float) -> None:
        """At EOF, scan what waited and a last line that had no newline."""
        self.poll(mono, wall)
        if self._partial:
            data, self._partial = self._partial, b""
            self._scan(data, mono, wall)

    def _process(self, mono: float, wall: float) -> None:
        self._last_scan = mono
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        if self._cut:
            nl = max(data.find(b"\n"), -1)
            data = data[nl + 1:] if nl >= 0 else b""
            self._cut = False
            if not data:
                return
        buf = self._partial + data if self._partial else data
        cut = max(buf.rfind(b"\n"), buf.rfind(b"\r"))
        if cut < 0:
            self._partial = buf[-self.max_partial:]
            return
        complete, self._partial = buf[: cut + 1], buf[cut + 1:][-self.max_partial:]
        self._scan(complete, mono, wall)

    def _scan(self, complete: bytes, mono: float, wall: float) -> None:
        every = False
        if len(complete) > self.tail_window:
            # Much output at once: only the latest state matters, except a
            # bad loss, which one regex pass over the raw bytes finds.
            if _BAD_LOSS_I.search(complete) is not None:
                every = True
            else:
                nl = complete.find(b"\n", len(complete) - self.tail_window)
                if nl > 0:
                    complete = complete[nl + 1:]
        low = complete.lower()  # same length: only ASCII letters change
        if not _candidate(low):
            return
        if not every:
            every = (b"nan" in low or b"inf" in low) and _BAD_LOSS.search(low) is not None
        lines = complete.replace(b"\r", b"\n").split(b"\n")
        lows = low.replace(b"\r", b"\n").split(b"\n")
        found_step = found_loss = False
        picked: List[ProgressEvent] = []
        bars = self.max_lines
        metric_budget = len(lines) if every else self.max_metric_lines
        epoch_lookback = 64
        for i in range(len(lines) - 1, -1, -1):
            lw = lows[i]
            if not every and found_step and found_loss:
                # The newest step and loss are the news; only a Keras
                # "Epoch 3/10" line just above them still matters.
                epoch_lookback -= 1
                if epoch_lookback < 0:
                    break
                if _epoch_line(lw):
                    ev = parse_line(lines[i].decode("utf-8", "replace"))
                    if ev is not None and ev.step is None and ev.epoch is not None:
                        picked.append(ev)
                        break
                continue
            if (found_step or bars <= 0) and metric_budget <= 0:
                break
            if not lw or not _candidate(lw):
                continue
            is_metric = _metric_line(lw)
            if is_metric:
                if metric_budget <= 0:
                    continue
                metric_budget -= 1
            elif found_step or bars <= 0:
                continue  # an older bar redraw: the newest one has the news
            else:
                bars -= 1
            ev = parse_line(lines[i].decode("utf-8", "replace"))
            if ev is None:
                continue
            if not every:
                if ev.has_step and found_step and ev.loss is None and not ev.metrics:
                    continue
                if found_loss and not ev.has_step and ev.loss is not None:
                    continue  # an older loss: the newest is already in hand
            found_step = found_step or ev.has_step
            found_loss = found_loss or ev.loss is not None
            picked.append(ev)
        for ev in reversed(picked):  # oldest first
            self.tracker.observe(ev, mono, wall)


_BAD_LOSS_I = re.compile(rb"(?i:loss)[^|\n]{0,24}?[^A-Za-z0-9_](?i:nan|inf)")
