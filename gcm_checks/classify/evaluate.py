"""Measure the classifier on labelled records: per-class P/R/F1, macro-F1,
the confusion matrix, and an exit-code-only baseline on the same data.

Macro-F1 is averaged over every class that occurs as a label *or* as a
prediction (as scikit-learn does), so predicting a class that is never right
costs score instead of being invisible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from gcm_checks.classify.exitdata import parse_exit_arg
from gcm_checks.classify.taxonomy import CATEGORY_IDS

_BASELINE_STATES = {
    "TIMEOUT": "timeout_walltime",
    "DEADLINE": "timeout_walltime",
    "OUT_OF_MEMORY": "host_oom",
    "NODE_FAIL": "node_failure",
    "BOOT_FAIL": "node_failure",
    "PREEMPTED": "preempted",
    "CANCELLED": "cancelled_user",
    "COMPLETED": "success",
}


def baseline(state: Optional[str], exit_code: object) -> str:
    """What a scheduler mail tells you: the state and the exit code, nothing else."""
    if state:
        s = str(state).strip().upper().split()[0]
        if s in _BASELINE_STATES:
            return _BASELINE_STATES[s]
    code, sig = parse_exit_arg(exit_code)  # type: ignore[arg-type]
    if code is None:
        return "unknown"
    if sig in (4, 6, 7, 8, 11) or code in (132, 134, 135, 136, 139):
        return "segfault_signal"
    if sig == 9 or code == 137:
        return "host_oom"
    if code == 0 and not sig:
        return "success"
    return "software_exception"


@dataclass
class ClassScore:
    label: str
    precision: float
    recall: float
    f1: float
    support: int


@dataclass
class Report:
    n: int
    accuracy: float
    macro_f1: float
    per_class: List[ClassScore]
    labels: List[str]
    confusion: Dict[str, Dict[str, int]]  # gold -> predicted -> count
    baseline_macro_f1: float
    baseline_accuracy: float
    misses: List[Tuple[str, str, str, str]] = field(default_factory=list)  # id, gold, predicted, rule
    baseline_per_class: Dict[str, float] = field(default_factory=dict)  # label -> baseline F1
    # Calibration: of the predictions made at confidence >= CONFIDENT, how many were right.
    confident_n: int = 0
    confident_right: int = 0
    # Calibration table: (low, high, n, right) per confidence band.
    bands: List[Tuple[float, float, int, int]] = field(default_factory=list)

    @property
    def confident_precision(self) -> float:
        return self.confident_right / self.confident_n if self.confident_n else 0.0

    def to_dict(self) -> dict:
        return {
            "n": self.n,
            "accuracy": round(self.accuracy, 4),
            "macro_f1": round(self.macro_f1, 4),
            "baseline_accuracy": round(self.baseline_accuracy, 4),
            "baseline_macro_f1": round(self.baseline_macro_f1, 4),
            "per_class": [
                {"label": c.label, "precision": round(c.precision, 4), "recall": round(c.recall, 4),
                 "f1": round(c.f1, 4), "support": c.support}
                for c in self.per_class
            ],
            "confusion": self.confusion,
            "baseline_per_class": {k: round(v, 4) for k, v in self.baseline_per_class.items()},
            "calibration": {
                "threshold": CONFIDENT, "n": self.confident_n, "right": self.confident_right,
                "precision": round(self.confident_precision, 4),
                "bands": [{"low": lo, "high": hi, "n": n, "right": r} for lo, hi, n, r in self.bands],
            },
            "misses": [{"id": i, "label": g, "predicted": p, "rule": r} for i, g, p, r in self.misses],
        }


def scores(gold: Sequence[str], pred: Sequence[str]) -> Tuple[List[ClassScore], float, float]:
    """(per-class scores, macro-F1, accuracy)."""
    if len(gold) != len(pred):
        raise ValueError("gold and pred differ in length")
    labels = _ordered(set(gold) | set(pred))
    out = []
    for c in labels:
        tp = sum(1 for g, p in zip(gold, pred) if g == c and p == c)
        fp = sum(1 for g, p in zip(gold, pred) if g != c and p == c)
        fn = sum(1 for g, p in zip(gold, pred) if g == c and p != c)
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        out.append(ClassScore(c, prec, rec, f1, tp + fn))
    macro = sum(c.f1 for c in out) / len(out) if out else 0.0
    acc = sum(1 for g, p in zip(gold, pred) if g == p) / len(gold) if gold else 0.0
    return out, macro, acc


def confusion(gold: Sequence[str], pred: Sequence[str]) -> Dict[str, Dict[str, int]]:
    labels = _ordered(set(gold) | set(pred))
    m = {g: {p: 0 for p in labels} for g in labels}
    for g, p in zip(gold, pred):
        m[g][p] += 1
    return m


def _ordered(labels: Iterable[str]) -> List[str]:
    order = {c: i for i, c in enumerate(CATEGORY_IDS)}
    return sorted(labels, key=lambda c: (order.get(c, len(order)), c))


CONFIDENT = 0.8
_BANDS = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01))


def build_report(rows: Sequence[Tuple[Any, ...]]) -> Report:
    """rows: (id, gold, predicted, rule, baseline prediction[, confidence])."""
    gold = [r[1] for r in rows]
    pred = [r[2] for r in rows]
    base = [r[4] for r in rows]
    per, macro, acc = scores(gold, pred)
    bper, bmacro, bacc = scores(gold, base)
    misses = [(r[0], r[1], r[2], r[3]) for r in rows if r[1] != r[2]]
    rep = Report(len(rows), acc, macro, per, _ordered(set(gold) | set(pred)), confusion(gold, pred),
                 bmacro, bacc, misses, {c.label: c.f1 for c in bper})
    scored = [(float(r[5]), r[1] == r[2]) for r in rows if len(r) > 5 and r[5] is not None]
    confident = [ok for c, ok in scored if c >= CONFIDENT]
    rep.confident_n, rep.confident_right = len(confident), sum(confident)
    rep.bands = [(lo, hi, sum(1 for c, _ in scored if lo <= c < hi), sum(1 for c, ok in scored if lo <= c < hi and ok))
                 for lo, hi in _BANDS] if scored else []
    return rep


def render(report: Report) -> str:
    lines = [f"records: {report.n}   accuracy: {report.accuracy:.3f}   macro-F1: {report.macro_f1:.3f}",
             f"exit-code-only baseline: accuracy {report.baseline_accuracy:.3f}   macro-F1 {report.baseline_macro_f1:.3f}"]
    if report.bands:
        lines.append(f"calibration: {report.confident_right}/{report.confident_n} right at confidence >= {CONFIDENT}"
                     f" ({report.confident_precision:.3f}); bands: "
                     + ", ".join(f"[{lo:.1f},{min(hi, 1.0):.1f}) {r}/{n}" for lo, hi, n, r in report.bands))
    lines += ["", f"{'class':<20} {'prec':>6} {'recall':>6} {'F1':>6} {'n':>4} {'base F1':>7}"]
    for c in report.per_class:
        lines.append(f"{c.label:<20} {c.precision:6.3f} {c.recall:6.3f} {c.f1:6.3f} {c.support:4d}"
                     f" {report.baseline_per_class.get(c.label, 0.0):7.3f}")
    labels = report.labels
    abbrev = [l[:6] for l in labels]
    lines += ["", "confusion (rows: label, columns: predicted)",
              f"{'':<20} " + " ".join(f"{a:>6}" for a in abbrev)]
    for g in labels:
        lines.append(f"{g:<20} " + " ".join(f"{report.confusion[g][p] or '.':>6}" for p in labels))
    if report.misses:
        lines += ["", "misclassified:"]
        for i, g, p, r in report.misses:
            lines.append(f"  {i}: {g} -> {p} ({r})")
    return "\n".join(lines)
