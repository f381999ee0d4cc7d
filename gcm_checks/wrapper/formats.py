"""Pure parsers: one line of a trainer's output -> a ``ProgressEvent`` or None.

One function per family of output people actually run (docs/gcm-run.md,
"Formats"). Each is a regex over one line, tried most specific first
(``PARSERS``); none reads state, so each is tested from a table of lines and
from output captured from the real library (tests/fixtures/run/).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

from gcm_checks.text import strip_escapes

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
# A loss value as printed by Python/NumPy/PyTorch, including the bad ones.
_LOSSVAL = r"(?:" + _NUM + r"|[-+]?(?:nan|inf(?:inity)?))"
MAX_METRICS = 12  # per line: a crafted line must not grow the history without bound


@dataclass(frozen=True)
class ProgressEvent:
    source: str  # "tqdm", "lightning", "keras", "hf", "megatron", "deepspeed", "torchtitan", "jax", "step", "loss", "gcm"
    step: Optional[float] = None
    total: Optional[float] = None
    percent: Optional[float] = None
    loss: Optional[float] = None
    epoch: Optional[float] = None
    max_epochs: Optional[float] = None
    rate: Optional[float] = None  # steps per second, as the program reported it
    eta_s: Optional[float] = None  # the program's own ETA, if it printed one
    message: str = ""
    # Other named values on the line (learning_rate, grad_norm, eval_loss...).
    metrics: Tuple[Tuple[str, float], ...] = ()

    @property
    def has_step(self) -> bool:
        return self.step is not None


def to_float(text: object) -> Optional[float]:
    try:
        return float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def finite(v: Optional[float]) -> Optional[float]:
    """A step, total, rate or ETA must be a finite number: ``Infinity`` from a
    program's own JSON must not reach arithmetic or ``int()`` (issue 12, 9)."""
    return v if v is not None and math.isfinite(v) else None


_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _si(text: str) -> Optional[float]:
    # tqdm's unit_scale prints "1.2k/10.0k".
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKMGT]?)", text.strip())
    return float(m.group(1)) * _SI[m.group(2)] if m else None


def _clock(text: str) -> Optional[float]:
    # tqdm/keras elapsed/remaining: "07:30", "1:02:03"; "?" unknown.
    parts = text.strip().split(":")
    if not parts or not all(p.isdigit() for p in parts):
        return None
    secs = 0.0
    for p in parts:
        secs = secs * 60 + int(p)
    return secs


def _metric_items(pairs) -> Tuple[Tuple[str, float], ...]:
    out = []
    for k, v in pairs:
        f = to_float(v)
        if f is not None and len(out) < MAX_METRICS:
            out.append((k.lower()[:40], f))
    return tuple(out)


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
# A plain rich.progress bar: "train ━━━━━━╺━━━━━━ 120/300 0:00:01" (MofNCompleteColumn).
_RICH_PLAIN = re.compile(r"[━╸╺╾]+\s+(?P<n>\d+)/(?P<total>\d+)(?:\s+(?P<remaining>[\d:]+|-:--:--))?")
# Keras 2: "400/1000 [=====>........] - ETA: 1:23 - loss: 0.5312 - accuracy: 0.81"
# Keras 3: "400/1000 ━━━━━━━━━━━━━━━━━━━━ 1:23 84ms/step - accuracy: 0.81 - loss: 0.53"
_KERAS = re.compile(r"^\s*(?P<n>\d+)/(?P<total>\d+)\s+(?:\[[=>.]*\]|[━─]+)")
_KERAS_ETA = re.compile(r"ETA:\s*(?P<eta>[\d:]+)|[━─]+\s+(?P<eta3>[\d:]+)\s+\d")
_KERAS_ITEM = re.compile(r"-\s+(?P<key>[A-Za-z_]\w*):\s+(?P<val>" + _LOSSVAL + r")", re.I)
_KERAS_EPOCH = re.compile(r"^\s*Epoch\s+(?P<epoch>\d+)/(?P<max>\d+)\s*$")
# Megatron-LM / NeMo: " iteration      400/    1000 | consumed samples: ... | lm loss: 5.1E+00 |"
_MEGATRON = re.compile(r"\biteration\s+(?P<n>\d+)\s*/\s*(?P<total>\d+)\s*\|")
_MEG_LOSS = re.compile(r"\|\s*(?:lm )?loss:\s*(" + _LOSSVAL + r")", re.I)
_MEG_MS = re.compile(r"elapsed time per iteration \(ms\):\s*(" + _NUM + r")")
_MEG_LR = re.compile(r"\|\s*learning rate:\s*(" + _NUM + r")", re.I)
_MEG_GN = re.compile(r"\|\s*grad norm:\s*(" + _NUM + r")", re.I)
# Hugging Face Trainer logs a Python dict: {'loss': 0.53, 'grad_norm': 1.2, 'learning_rate': 2e-05, 'epoch': 1.2}
_HF_DICT = re.compile(r"\{\s*['\"](?:loss|train_loss|eval_\w+|epoch|learning_rate|grad_norm|train_runtime)['\"]\s*:")
_HF_ITEM = re.compile(r"['\"](?P<key>\w+)['\"]\s*:\s*(?P<val>" + _LOSSVAL + r")", re.I)
# DeepSpeed engine: "[Rank 0] step=400, skipped=0, lr=[9.9e-05], mom=[(0.9, 0.999)]" and
# its throughput timer "steps: 400 loss: 0.5123 iter time (s): 0.512 samples/sec: 62.5".
_DEEPSPEED = re.compile(r"\bstep=(?P<n>\d+),\s*skipped=\d+|\bsteps:\s*(?P<n2>\d+)\s+loss:")
_DS_LR = re.compile(r"\blr=\[(" + _NUM + r")")
_DS_ITER = re.compile(r"iter time \(s\):\s*(" + _NUM + r")")
# torchtitan (colours stripped before we see it):
# "step: 400  loss:  5.1234  memory: 30.12GiB(38.12%)  tps: 7,123  tflops: 312.45  mfu: 31.59%"
_TITAN = re.compile(r"\bstep:\s*(?P<n>\d+)\s+loss:\s*(?P<loss>" + _LOSSVAL + r")")
_TITAN_ITEM = re.compile(r"\b(?P<key>grad_norm|tps|tflops|mfu|lr):\s*(?P<val>[\d,.]+(?:[eE][-+]?\d+)?)")
# JAX/Flax loggers: CLU's LoggingWriter "[400] learning_rate=0.001, loss=0.5123";
# MaxText "completed step: 400, seconds: 0.512, ..., loss: 5.123"; Flax examples
# "train epoch: 3, loss: 0.2917, accuracy: 91.27".
_CLU = re.compile(r"(?:^|\]\s|\s)\[(?P<n>\d+)\]\s+(?P<items>[A-Za-z_][\w/.]*=\S.*)$")
_CLU_ITEM = re.compile(r"(?P<key>[A-Za-z_][\w/.]*)=(?P<val>" + _LOSSVAL + r")", re.I)
_MAXTEXT = re.compile(r"\bcompleted step:\s*(?P<n>\d+),\s*seconds:\s*(?P<secs>" + _NUM + r")")
_FLAX_EPOCH = re.compile(r"\btrain epoch:\s*(?P<epoch>\d+),")
_KV_COLON = re.compile(r"\b(?P<key>[A-Za-z_][\w/]*):\s*(?P<val>" + _LOSSVAL + r")(?![\w.])", re.I)
# Generic "step 40/100", "Step: 40 / 100", "step=40/100", "Step 400", "step 400:".
_STEP = re.compile(r"\bstep\s*[:=]?\s*(?P<n>\d+)(?:\s*/\s*(?P<total>\d+))?(?![\d.%/])", re.I)
_LOSS = re.compile(r"(?:^|[^\w.])(?:train[_ ])?loss\s*[=:]\s*(?P<val>" + _LOSSVAL + r")(?![\w.])", re.I)
_LR = re.compile(r"\b(?:lr|learning[_ ]rate)\s*[=:]?\s*(?P<val>" + _NUM + r")(?![\w.])", re.I)
_GN = re.compile(r"\bgrad[_ ]norm\s*[=:]?\s*(?P<val>" + _LOSSVAL + r")(?![\w.])", re.I)
GCM_MARKER = "GCM_PROGRESS"


def parse_gcm(line: str) -> Optional[ProgressEvent]:
    """``GCM_PROGRESS {"step": 4, "total": 10, "loss": 0.5}``: the direct channel."""
    i = line.find(GCM_MARKER)
    if i < 0:
        return None
    raw = line[i + len(GCM_MARKER):].strip()
    if len(raw) > 4096:
        return None
    try:
        # NaN/Infinity are accepted by Python's json: a program that reports
        # NaN loss must be heard, not dropped as a parse error.
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None

    def num(key: str) -> Optional[float]:
        v = data.get(key)
        if isinstance(v, bool):
            return None
        if isinstance(v, (int, float)):
            try:
                f: Optional[float] = float(v)
            except OverflowError:  # a 400-digit int
                return None
        else:
            f = to_float(v) if isinstance(v, str) else None
        if f is None or key == "loss":
            return f  # a NaN/inf loss is news (divergence)
        # Everything else becomes times, counts and percentages (issue 12, 9).
        return f if f == f and abs(f) < 1e15 else None

    extra = data.get("metrics")
    metrics = _metric_items(
        (k, v) for k, v in (extra.items() if isinstance(extra, dict) else ())
        if isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e300
    )
    step = finite(num("step"))
    return ProgressEvent(
        "gcm",
        step=step if step is None or step >= 0 else None,
        total=finite(num("total")),
        percent=finite(num("percent")),
        loss=num("loss"),  # NaN and inf kept: they are the news
        epoch=finite(num("epoch")),
        max_epochs=finite(num("max_epochs")),
        rate=finite(num("rate")),
        eta_s=finite(num("eta_s")),
        message=str(data.get("message", ""))[:200],
        metrics=metrics,
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
        return ProgressEvent(
            "lightning" if em else "tqdm",
            step=_si(m.group("n")),
            total=_si(m.group("total")),
            percent=float(m.group("pct")),
            loss=to_float(lm.group(1)) if lm else None,
            epoch=float(em.group("epoch")) if em else None,
            max_epochs=float(em.group("max")) if em and em.group("max") else None,
            rate=_rate(m.group("rate"), m.group("unit")),
            eta_s=_clock(m.group("remaining")),
        )
    m = _TQDM_NOTOTAL.search(line)
    if m and not _byte_unit(m.group("unit")):
        return ProgressEvent("tqdm", step=_si(m.group("n")), rate=_rate(m.group("rate"), m.group("unit")))
    return None


def parse_rich(line: str) -> Optional[ProgressEvent]:
    m = _RICH.search(line)
    if not m:
        p = _RICH_PLAIN.search(line)
        if not p:
            return None
        rem = p.group("remaining")
        return ProgressEvent("rich", step=float(p.group("n")), total=float(p.group("total")),
                             eta_s=_clock(rem) if rem and rem != "-:--:--" else None)
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


def parse_keras(line: str) -> Optional[ProgressEvent]:
    em = _KERAS_EPOCH.match(line)
    if em:  # "Epoch 3/10" on its own line, before the epoch's bar
        return ProgressEvent("keras", epoch=float(em.group("epoch")), max_epochs=float(em.group("max")))
    m = _KERAS.match(line)
    if not m:
        return None
    items = {k.lower(): v for k, v in ((i.group("key"), i.group("val")) for i in _KERAS_ITEM.finditer(line, m.end()))}
    eta = _KERAS_ETA.search(line, m.start())
    eta_s = _clock(eta.group("eta") or eta.group("eta3")) if eta else None
    return ProgressEvent(
        "keras",
        step=float(m.group("n")),
        total=float(m.group("total")),
        loss=to_float(items.pop("loss")) if "loss" in items else None,
        eta_s=eta_s,
        metrics=_metric_items(items.items()),
    )


def parse_megatron(line: str) -> Optional[ProgressEvent]:
    m = _MEGATRON.search(line)
    if not m:
        return None
    lm = _MEG_LOSS.search(line)
    ms = _MEG_MS.search(line)
    ms_v = to_float(ms.group(1)) if ms else None
    metrics = [("learning_rate", r.group(1)) for r in (_MEG_LR.search(line),) if r]
    metrics += [("grad_norm", r.group(1)) for r in (_MEG_GN.search(line),) if r]
    return ProgressEvent(
        "megatron",
        step=float(m.group("n")),
        total=float(m.group("total")),
        loss=to_float(lm.group(1)) if lm else None,
        rate=(1000.0 / ms_v) if ms_v else None,
        metrics=_metric_items(metrics),
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
    loss = items.pop("loss", None)
    if loss is None and "train_loss" in items and "train_runtime" not in items:
        loss = items.pop("train_loss")  # the end-of-training summary is a mean, not a point
    epoch = items.pop("epoch", None)
    if loss is None and epoch is None and not items:
        return None
    keep = [(k, v) for k, v in items.items() if not k.endswith(("_runtime", "_per_second"))]
    return ProgressEvent("hf", loss=loss, epoch=epoch, metrics=_metric_items(keep))


def parse_deepspeed(line: str) -> Optional[ProgressEvent]:
    m = _DEEPSPEED.search(line)
    if not m:
        return None
    lm = _LOSS.search(line)
    lr = _DS_LR.search(line)
    it = _DS_ITER.search(line)
    it_s = to_float(it.group(1)) if it else None
    return ProgressEvent(
        "deepspeed",
        step=float(m.group("n") or m.group("n2")),
        loss=to_float(lm.group("val")) if lm else None,
        rate=(1.0 / it_s) if it_s else None,
        metrics=_metric_items([("learning_rate", lr.group(1))] if lr else []),
    )


def parse_torchtitan(line: str) -> Optional[ProgressEvent]:
    m = _TITAN.search(line)
    if not m:
        return None
    items = [(i.group("key"), i.group("val").replace(",", "")) for i in _TITAN_ITEM.finditer(line, m.end())]
    return ProgressEvent("torchtitan", step=float(m.group("n")), loss=to_float(m.group("loss")),
                         metrics=_metric_items(items))


def parse_jax(line: str) -> Optional[ProgressEvent]:
    m = _MAXTEXT.search(line)
    if m:
        items = {k.lower(): v for k, v in ((i.group("key"), i.group("val")) for i in _KV_COLON.finditer(line, m.end()))}
        secs = to_float(m.group("secs"))
        loss = items.pop("loss", None)
        return ProgressEvent("jax", step=float(m.group("n")), loss=to_float(loss),
                             rate=(1.0 / secs) if secs else None, metrics=_metric_items(items.items()))
    m = _CLU.search(line)
    if m:
        items = {k.lower(): v for k, v in ((i.group("key"), i.group("val")) for i in _CLU_ITEM.finditer(m.group("items")))}
        if not items:
            return None
        loss = items.pop("loss", items.pop("train_loss", None))
        return ProgressEvent("jax", step=float(m.group("n")), loss=to_float(loss), metrics=_metric_items(items.items()))
    m = _FLAX_EPOCH.search(line)
    if m:
        items = {k.lower(): v for k, v in ((i.group("key"), i.group("val")) for i in _KV_COLON.finditer(line, m.end()))}
        loss = items.pop("loss", None)
        return ProgressEvent("jax", epoch=float(m.group("epoch")), loss=to_float(loss), metrics=_metric_items(items.items()))
    return None


def parse_generic(line: str) -> Optional[ProgressEvent]:
    sm = _STEP.search(line)
    lm = _LOSS.search(line)
    if not sm and not lm:
        return None
    metrics = [("learning_rate", r.group("val")) for r in (_LR.search(line),) if r]
    metrics += [("grad_norm", r.group("val")) for r in (_GN.search(line),) if r]
    return ProgressEvent(
        "step" if sm else "loss",
        step=float(sm.group("n")) if sm else None,
        total=float(sm.group("total")) if sm and sm.group("total") else None,
        loss=to_float(lm.group("val")) if lm else None,
        metrics=_metric_items(metrics) if sm or lm else (),
    )


# Most specific first: a Megatron line also matches the generic loss pattern,
# a DeepSpeed "step=400, skipped=0" the generic step pattern.
PARSERS: Tuple[Callable[[str], Optional[ProgressEvent]], ...] = (
    parse_gcm,
    parse_megatron,
    parse_tqdm,
    parse_rich,
    parse_keras,
    parse_hf_dict,
    parse_deepspeed,
    parse_torchtitan,
    parse_jax,
    parse_generic,
)

def parse_line(line: str) -> Optional[ProgressEvent]:
    # rich and torchtitan colour their output on a terminal.
    line = strip_escapes(line)
    for parser in PARSERS:
        ev = parser(line)
        if ev is not None:
            return ev
    return None


def loss_is_bad(loss: Optional[float]) -> bool:
    return loss is not None and (math.isnan(loss) or math.isinf(loss))
