"""Read training progress out of plain output: no code change, any framework.

Parsers are pure functions from one line of text to a ``ProgressEvent`` (or
None). ``Tracker`` folds events into a snapshot with percent, mean step time
and ETA. ``ChunkScanner`` sits on the output pump: it splits raw bytes into
lines on ``\\n`` *and* ``\\r`` (tqdm redraws a bar with ``\\r``) and keeps its
cost bounded per chunk, because a child may print 10,000 lines a second and the
wrapper must stay under a few percent of one core (issue 7, "Cost").
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from typing import Callable, Dict, Iterable, List, Optional, Tuple

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
# A loss value as printed by Python/NumPy/PyTorch, including the bad ones.
_LOSSVAL = r"(?:" + _NUM + r"|[-+]?(?:nan|inf(?:inity)?))"


@dataclass(frozen=True)
class ProgressEvent:
    source: str  # "tqdm", "lightning", "hf", "megatron", "step", "loss", "gcm"
    step: Optional[float] = None
    total: Optional[float] = None
    percent: Optional[float] = None
    loss: Optional[float] = None
    epoch: Optional[float] = None
    max_epochs: Optional[float] = None
    rate: Optional[float] = None  # steps per second, as the program reported it
    eta_s: Optional[float] = None  # the program's own ETA, if it printed one
    message: str = ""

    @property
    def has_step(self) -> bool:
        return self.step is not None


def to_float(text: str) -> Optional[float]:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _si(text: str) -> Optional[float]:
    # tqdm's unit_scale prints "1.2k/10.0k".
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKMGT]?)", text.strip())
    return float(m.group(1)) * _SI[m.group(2)] if m else None


def _clock(text: str) -> Optional[float]:
    # tqdm elapsed/remaining: "07:30", "1:02:03", "2 days, 1:00:00" is rare; "?" unknown.
    parts = text.strip().split(":")
    if not parts or not all(p.isdigit() for p in parts):
        return None
    secs = 0.0
    for p in parts:
        secs = secs * 60 + int(p)
    return secs


_POSTFIX_LOSS = re.compile(r"(?:^|[\s,])(?:train[_ ])?loss[=:]\s*(" + _LOSSVAL + r")", re.I)

# "40%|████      | 400/1000 [05:00<07:30,  1.33it/s, loss=0.53]"
_TQDM = re.compile(
    r"(?P<pct>\d{1,3})%\|[^|\n]*\|\s*(?P<n>\d+(?:\.\d+)?[kKMGT]?)/(?P<total>\d+(?:\.\d+)?[kKMGT]?)"
    r"\s*\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:?]+)"
    r"(?:,\s*(?P<rate>\?|[\d.]+[kKMGT]?)\s*(?P<unit>[A-Za-z]*/s|s/[A-Za-z]*))?"
    r"(?P<postfix>[^\]\n]*)\]"
)
# tqdm without a total: "400it [05:00, 1.33it/s]"
_TQDM_NOTOTAL = re.compile(
    r"(?P<n>\d+(?:\.\d+)?[kKMGT]?)(?:it|[A-Za-z]+)\s\[(?P<elapsed>[\d:]+),\s*(?P<rate>[\d.]+)(?P<unit>[A-Za-z]*/s|s/[A-Za-z]*)"
)
# Lightning's TQDM bar prefixes "Epoch 3:" (or "Epoch 3/9:"); its Rich bar is
# "Epoch 3/9 ━━━━━╸━━━ 450/1000 0:01:00 • 0:01:13 7.50it/s v_num: 0 loss: 0.53".
_EPOCH = re.compile(r"\bEpoch\s+(?P<epoch>\d+)(?:/(?P<max>\d+))?\s*:?")
_RICH = re.compile(
    r"\bEpoch\s+(?P<epoch>\d+)(?:/(?P<max>\d+))?\s+[━╸╺─\-\s]*?\s(?P<n>\d+)/(?P<total>\d+)\s"
    r"(?:[\d:]+\s*•\s*(?P<remaining>[\d:\-]+)\s*)?(?:(?P<rate>[\d.]+)it/s)?"
)
# Megatron-LM / NeMo: " iteration      400/    1000 | consumed samples: ... | lm loss: 5.1E+00 |"
_MEGATRON = re.compile(r"\biteration\s+(?P<n>\d+)\s*/\s*(?P<total>\d+)\s*\|")
_MEG_LOSS = re.compile(r"\|\s*(?:lm )?loss:\s*(" + _LOSSVAL + r")", re.I)
_MEG_MS = re.compile(r"elapsed time per iteration \(ms\):\s*(" + _NUM + r")")
# Hugging Face Trainer logs a Python dict: {'loss': 0.53, 'learning_rate': 2e-05, 'epoch': 1.2}
_HF_DICT = re.compile(r"\{\s*['\"](?:loss|train_loss|eval_loss|epoch|learning_rate|grad_norm)['\"]\s*:")
_HF_ITEM = re.compile(r"['\"](?P<key>\w+)['\"]\s*:\s*(?P<val>" + _LOSSVAL + r")", re.I)
# Generic "step 40/100", "Step: 40 / 100", "step=40/100"
_STEP = re.compile(r"\bstep\s*[:=]?\s*(?P<n>\d+)\s*/\s*(?P<total>\d+)", re.I)
_LOSS = re.compile(r"(?:^|[^\w.])(?:train[_ ])?loss\s*[=:]\s*(?P<val>" + _LOSSVAL + r")(?![\w.])", re.I)
GCM_MARKER = "GCM_PROGRESS"


def parse_gcm(line: str) -> Optional[ProgressEvent]:
    """``GCM_PROGRESS {"step": 4, "total": 10, "loss": 0.5}``: the direct channel."""
    i = line.find(GCM_MARKER)
    if i < 0:
        return None
    raw = line[i + len(GCM_MARKER):].strip()[:65536]
    try:
        # NaN/Infinity are accepted by Python's json: a program that reports
        # NaN loss must be heard, not dropped as a parse error.
        data = json.loads(raw)
    except (ValueError, RecursionError):  # deep nesting is the child's output, never our crash
        return None
    if not isinstance(data, dict):
        return None

    def num(key: str) -> Optional[float]:
        v = data.get(key)
        if isinstance(v, bool):
            return None
        if isinstance(v, (int, float)):
            try:
                f = float(v)
            except OverflowError:  # a 400-digit int
                return None
        else:
            f = to_float(v) if isinstance(v, str) else None
        if f is None or key == "loss":
            return f  # a NaN/inf loss is news (divergence)
        # Everything else becomes times, counts and percentages: Infinity
        # there (GCM_PROGRESS {"eta_s": Infinity}) crashed gcm-run.
        return f if f == f and abs(f) < 1e15 else None

    return ProgressEvent(
        "gcm",
        step=num("step"),
        total=num("total"),
        percent=num("percent"),
        loss=num("loss"),
        epoch=num("epoch"),
        max_epochs=num("max_epochs"),
        rate=num("rate"),
        eta_s=num("eta_s"),
        message=str(data.get("message", ""))[:200],
    )


def _rate(value: Optional[str], unit: Optional[str]) -> Optional[float]:
    v = _si(value) if value and value != "?" else None
    if v is None or not unit:
        return None
    if unit.startswith("s/"):
        return 1.0 / v if v > 0 else None
    return v


def _byte_unit(unit: Optional[str]) -> bool:
    # Download and copy bars ("4.50G/4.50G [00:30<00:00, 150MB/s]") are not
    # training progress, and their huge totals would hide the real bar.
    return bool(unit) and ("B/" in unit or unit.endswith("/B") or "b/s" in unit)


def parse_tqdm(line: str) -> Optional[ProgressEvent]:
    m = _TQDM.search(line)
    if m and _byte_unit(m.group("unit")):
        return None
    if m:
        postfix = m.group("postfix") or ""
        lm = _POSTFIX_LOSS.search(postfix)
        em = _EPOCH.search(line[: m.start()])
        remaining = _clock(m.group("remaining"))
        return ProgressEvent(
            "lightning" if em else "tqdm",
            step=_si(m.group("n")),
            total=_si(m.group("total")),
            percent=float(m.group("pct")),
            loss=to_float(lm.group(1)) if lm else None,
            epoch=float(em.group("epoch")) if em else None,
            max_epochs=float(em.group("max")) if em and em.group("max") else None,
            rate=_rate(m.group("rate"), m.group("unit")),
            eta_s=remaining,
        )
    m = _TQDM_NOTOTAL.search(line)
    if m:
        return ProgressEvent("tqdm", step=_si(m.group("n")), rate=_rate(m.group("rate"), m.group("unit")))
    return None


def parse_rich(line: str) -> Optional[ProgressEvent]:
    m = _RICH.search(line)
    if not m:
        return None
    lm = _LOSS.search(line[m.end():]) or re.search(r"\bloss:\s*(?P<val>" + _LOSSVAL + r")", line[m.end():], re.I)
    rem = m.group("remaining")
    return ProgressEvent(
        "lightning",
        step=float(m.group("n")),
        total=float(m.group("total")),
        loss=to_float(lm.group("val")) if lm else None,
        epoch=float(m.group("epoch")),
        max_epochs=float(m.group("max")) if m.group("max") else None,
        rate=to_float(m.group("rate")) if m.group("rate") else None,
        eta_s=_clock(rem) if rem and rem != "-:--:--" else None,
    )


def parse_megatron(line: str) -> Optional[ProgressEvent]:
    m = _MEGATRON.search(line)
    if not m:
        return None
    lm = _MEG_LOSS.search(line)
    ms = _MEG_MS.search(line)
    ms_v = to_float(ms.group(1)) if ms else None
    return ProgressEvent(
        "megatron",
        step=float(m.group("n")),
        total=float(m.group("total")),
        loss=to_float(lm.group(1)) if lm else None,
        rate=(1000.0 / ms_v) if ms_v else None,
    )


def parse_hf_dict(line: str) -> Optional[ProgressEvent]:
    # A regex over the items rather than ast.literal_eval: HF prints
    # {'loss': nan} and literal_eval rejects the bare name nan.
    m = _HF_DICT.search(line)
    if not m:
        return None
    items: Dict[str, float] = {}
    for im in _HF_ITEM.finditer(line, m.start()):
        v = to_float(im.group("val"))
        if v is not None:
            items[im.group("key")] = v
    loss = items.get("loss", items.get("train_loss"))
    if loss is None and "epoch" not in items:
        return None
    return ProgressEvent("hf", loss=loss, epoch=items.get("epoch"))


def parse_generic(line: str) -> Optional[ProgressEvent]:
    sm = _STEP.search(line)
    lm = _LOSS.search(line)
    if not sm and not lm:
        return None
    return ProgressEvent(
        "step" if sm else "loss",
        step=float(sm.group("n")) if sm else None,
        total=float(sm.group("total")) if sm else None,
        loss=to_float(lm.group("val")) if lm else None,
    )


# Most specific first: a Megatron line also matches the generic loss pattern.
PARSERS: Tuple[Callable[[str], Optional[ProgressEvent]], ...] = (
    parse_gcm,
    parse_megatron,
    parse_tqdm,
    parse_rich,
    parse_hf_dict,
    parse_generic,
)

# One cheap test on a whole chunk decides whether any line needs parsing.
# Substring tests on the lower-cased bytes, not a case-insensitive regex
# alternation: the regex tries every alternative at every byte and cost
# 0.3 ms per 8 KiB chunk, most of the pump's budget at 10,000 lines/s.
_TOKENS = (b"%|", b"it/s", b"s/it", b"step", b"iteration", b"loss", b"epoch", b"gcm_progress")
# A bad loss near the word loss (not "number of nan iterations" three
# fields later in a Megatron line, not the "inf" in "INFO").
_BAD_LOSS = re.compile(rb"loss[^|\n]{0,24}?[^a-z0-9_](?:nan|inf)")


def _candidate(low: bytes) -> bool:
    for t in _TOKENS:
        if t in low:
            return True
    return False


def parse_line(line: str) -> Optional[ProgressEvent]:
    for parser in PARSERS:
        ev = parser(line)
        if ev is not None:
            return ev
    return None


def loss_is_bad(loss: Optional[float]) -> bool:
    return loss is not None and (math.isnan(loss) or math.isinf(loss))


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
    eta_s: Optional[float] = None
    source: str = ""
    message: str = ""
    last_progress_mono: Optional[float] = None  # when the step last advanced
    last_progress_wall: Optional[float] = None
    last_output_mono: Optional[float] = None
    bad_loss: Optional[float] = None  # the first NaN/inf loss seen
    bad_loss_wall: Optional[float] = None

    def to_dict(self, *, running: bool = True) -> dict:
        pct = self.percent
        if pct is not None and running:
            # Never claim 100% while the process still runs: the last step
            # done is not the run done (checkpoint save, eval, hang at exit).
            pct = min(pct, 99.0)
        return {
            "step": _num(self.step),
            "total": _num(self.total),
            "percent": None if pct is None else round(pct, 1),
            "loss": _jsonable(self.loss),
            "epoch": _num(self.epoch),
            "max_epochs": _num(self.max_epochs),
            "rate_per_s": None if self.rate is None else round(self.rate, 4),
            "step_time_s": None if self.step_time_s is None else round(self.step_time_s, 4),
            "eta_s": None if self.eta_s is None else round(self.eta_s, 1),
            "source": self.source,
            "message": self.message,
            "last_progress_at": self.last_progress_wall,
            "bad_loss": _jsonable(self.bad_loss),
            "bad_loss_at": self.bad_loss_wall,
        }


def _num(v: Optional[float]):
    if v is None:
        return None
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
_RANK = {"gcm": 5, "megatron": 4, "lightning": 3, "step": 2, "tqdm": 1, "hf": 0, "loss": 0}


class Tracker:
    """Fold progress events into a ``Snapshot``; time is passed in (testable)."""

    def __init__(self) -> None:
        self._snap = Snapshot()
        self._last_output: Optional[float] = None
        self._key: Optional[Tuple[str, Optional[float]]] = None
        self._base: Optional[Tuple[float, float]] = None  # (mono, global step) at baseline
        self._prev_done: Optional[float] = None

    @property
    def snap(self) -> Snapshot:
        # Output time is kept apart and folded in on read: it changes on every
        # chunk, and rebuilding a frozen snapshot per chunk showed in profiles.
        if self._last_output != self._snap.last_output_mono:
            self._snap = replace(self._snap, last_output_mono=self._last_output)
        return self._snap

    def output_seen(self, mono: float) -> None:
        self._last_output = mono

    def observe(self, ev: ProgressEvent, mono: float, wall: float) -> None:
        s = self.snap
        changes: dict = {}
        if ev.loss is not None:
            changes["loss"] = ev.loss
            if loss_is_bad(ev.loss) and s.bad_loss is None:
                changes["bad_loss"] = ev.loss
                changes["bad_loss_wall"] = wall
        if ev.epoch is not None and ev.step is None:
            changes["epoch"] = ev.epoch  # HF dict: epoch only
        if ev.message:
            changes["message"] = ev.message
        if ev.has_step and self._accept(ev):
            changes.update(self._advance(ev, mono, wall))
        elif ev.percent is not None and ev.step is None and ev.source == "gcm":
            changes["percent"] = ev.percent
            changes["source"] = "gcm"
        if changes:
            self._snap = replace(s, **changes)

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
        """(done, total) over the whole run; Lightning bars restart per epoch."""
        step, total = float(ev.step or 0), ev.total
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
                     "max_epochs": ev.max_epochs}
        if prev_done is None or done > prev_done:
            out["last_progress_mono"] = mono
            out["last_progress_wall"] = wall
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
        return out


# ---------------------------------------------------------------- chunk scanner


class ChunkScanner:
    """Turn raw output chunks into tracker updates at bounded cost.

    Keeps at most ``max_partial`` bytes of an unterminated line, so endless
    output without newlines cannot grow memory. Per chunk it parses lines
    from the end and stops once it has both a step and a loss (only the latest
    state matters), except when the chunk mentions nan/inf: then every line is
    parsed, so a single NaN loss among thousands of lines is never missed.
    """

    def __init__(self, tracker: Tracker, *, max_partial: int = 8192, max_lines: int = 64) -> None:
        self.tracker = tracker
        self.max_partial = max_partial
        self.max_lines = max_lines
        self.tail_window = 16384
        self._partial = b""

    def feed(self, data: bytes, mono: float, wall: float) -> None:
        self.tracker.output_seen(mono)
        buf = self._partial + data if self._partial else data
        cut = max(buf.rfind(b"\n"), buf.rfind(b"\r"))
        if cut < 0:
            self._partial = buf[-self.max_partial:]
            return
        complete, self._partial = buf[: cut + 1], buf[cut + 1:][-self.max_partial:]
        self._scan(complete, mono, wall)

    def flush(self, mono: float, wall: float) -> None:
        """At EOF, parse a last line that had no newline."""
        if self._partial:
            data, self._partial = self._partial, b""
            self._scan(data, mono, wall)

    def _scan(self, complete: bytes, mono: float, wall: float) -> None:
        low = complete.lower()  # same length: only ASCII letters change
        if not _candidate(low):
            return
        every = (b"nan" in low or b"inf" in low) and _BAD_LOSS.search(low) is not None
        if not every and len(complete) > self.tail_window:
            # Only the latest state matters: split just the end of a big
            # chunk (a flood of output must not cost a split of every line).
            cut = len(complete) - self.tail_window
            nl = complete.find(b"\n", cut)
            if nl > 0:
                complete, low = complete[nl + 1:], low[nl + 1:]
        lines = complete.replace(b"\r", b"\n").split(b"\n")
        lows = low.replace(b"\r", b"\n").split(b"\n")
        found_step = found_loss = False
        picked: List[ProgressEvent] = []
        budget = len(lines) if every else self.max_lines
        for i in range(len(lines) - 1, -1, -1):
            if budget <= 0:
                break
            if not lines[i] or not _candidate(lows[i]):
                continue
            budget -= 1
            ev = parse_line(lines[i].decode("utf-8", "replace"))
            if ev is None:
                continue
            if every:
                picked.append(ev)
                continue
            if (ev.has_step and not found_step) or (ev.loss is not None and not found_loss):
                picked.append(ev)
                found_step = found_step or ev.has_step
                found_loss = found_loss or ev.loss is not None
                if found_step and found_loss:
                    break
                # The other half (a loss for this step, or the step for this
                # loss) is on a nearby line or not in this chunk at all.
                budget = min(budget, 8)
        for ev in reversed(picked):  # oldest first
            self.tracker.observe(ev, mono, wall)


def parse_all(lines: Iterable[str]) -> List[ProgressEvent]:
    """Every event in some text; for tests and ``gcm-run --explain``-style tools."""
    return [ev for ev in (parse_line(l) for l in lines) if ev is not None]
