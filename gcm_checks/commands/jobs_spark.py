"""Small renderings for ``gcm-checks jobs``: the loss sparkline, slow nodes."""

from __future__ import annotations

from typing import Any, Mapping

SPARK_WIDTH = 16


def loss_sparkline(progress: Mapping[str, Any], width: int = SPARK_WIDTH) -> str:
    """The shape of the loss so far (``█▆▅▄▃▂▂▁``), from the status history."""
    from gcm_checks.report.progress import sparkline

    pts = (progress.get("history") or {}).get("loss") or ()
    vals = [pt[2] for pt in pts if isinstance(pt, (list, tuple)) and len(pt) >= 3 and isinstance(pt[2], (int, float))]
    return sparkline(vals, width) if len(vals) >= 2 else ""


def slow_text(run: Mapping[str, Any]) -> str:
    """``gpu-n2 -23%`` for each straggler task 0 named."""
    from gcm_checks.wrapper.comment import straggler_text

    return straggler_text([s for s in run.get("stragglers") or () if isinstance(s, Mapping)]).replace("slow: ", "")
