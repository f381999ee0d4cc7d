"""The training-progress section of a job report, from gcm-run's status.

Inside a Slurm job, gcm-run's task 0 leaves its status (step, loss,
metrics, history, stragglers, alerts) as ``<work dir>/.gcm-run/<key>.status.json``
(the path of ``report.runlink``); ``attach`` reads it (as the job's user,
bounded, never through a symlink: ``safeio``) into ``report["progress"]``.
Outside Slurm gcm-run builds the same section itself (``from_status``).
``text_lines`` and ``html_parts`` render it; the HTML draws the loss and the
step-rate curves as inline SVG (no script, every label escaped).
"""

from __future__ import annotations

import html
import os
from typing import Any, Dict, List, Mapping, Sequence, Tuple

MAX_BYTES = 256 * 1024
SVG_POINTS = 200  # a curve in a mail needs no more
SPARK = "▁▂▃▄▅▆▇█"


def summary_path(work_dir: str, key: str) -> str:
    from gcm_checks.report.spool import safe_name

    return os.path.join(work_dir, ".gcm-run", f"{safe_name(key)}.status.json")


def from_status(status: Mapping[str, Any]) -> Dict[str, Any]:
    """The report section from a gcm-run status dict (bounded, plain JSON)."""
    p = dict(status.get("progress") or {})
    return {
        "source": "gcm-run",
        "state": status.get("state"),
        "updated_at": status.get("updated_at"),
        "step": p.get("step"), "total": p.get("total"), "percent": p.get("percent"),
        "loss": p.get("loss"), "epoch": p.get("epoch"), "eta_s": p.get("eta_s"),
        "stalled_s": p.get("stalled_s"), "rate_per_s": p.get("rate_per_s"),
        "metrics": dict(p.get("metrics") or {}),
        "history": {k: v for k, v in (p.get("history") or {}).items() if isinstance(v, list)},
        # Who was slow at any time during the run, not only at its end.
        "stragglers": list(status.get("stragglers_seen") or status.get("stragglers") or []),
        "alerts": [a for a in status.get("alerts") or [] if isinstance(a, Mapping) and a.get("kind") != "resumed"],
        "log": status.get("log"),
    }


def attach(report: Dict[str, Any], job: Any, read_timeout_s: float = 5.0) -> None:
    """Add gcm-run's progress to an epilog report, when the job ran under it.

    Never raises: no gcm-run, an unreadable or oversized file, or bad JSON
    only leaves the section out (with a note when the file was there).
    """
    work_dir, key = getattr(job, "work_dir", ""), getattr(job, "key", "")
    if not work_dir or not key:
        return
    path = summary_path(work_dir, key)
    try:
        from gcm_checks import safeio

        if job.uid is None and os.geteuid() == 0:
            return  # without the owner, reading as root could leak a root-only file
        tail = safeio.read_tail(path, uid=job.uid, gid=job.gid, max_bytes=MAX_BYTES, timeout=read_timeout_s, user=job.user)
        if tail.error:
            return  # most jobs do not run under gcm-run: no note
        if tail.truncated:
            report.setdefault("notes", []).append(f"gcm-run progress not shown: {path} is over {MAX_BYTES} bytes")
            return
        from gcm_checks.jsonfile import parse_json

        status = parse_json(tail.data)  # bounded depth: the user writes this file
        if isinstance(status, dict):
            report["progress"] = from_status(status)
    except Exception as e:  # noqa: BLE001 - rule 6: the report goes out without this section
        report.setdefault("notes", []).append(f"gcm-run progress not read: {type(e).__name__}: {e}"[:300])


# ---------------------------------------------------------------- curves


def _series(history: Mapping[str, Any], name: str) -> List[Tuple[float, float]]:
    """(x, y) points of a history series: x = step when known, else time."""
    out = []
    for pt in history.get(name) or ():
        if not isinstance(pt, (list, tuple)) or len(pt) < 3:
            continue
        t, step, v = pt[0], pt[1], pt[2]
        if isinstance(v, (int, float)) and isinstance(t, (int, float)) and v == v and abs(v) != float("inf"):
            out.append((float(step) if isinstance(step, (int, float)) else float(t), float(v)))
    return out


def rate_series(history: Mapping[str, Any]) -> List[Tuple[float, float]]:
    """Steps per second between consecutive points of the step history."""
    pts = []
    for pt in history.get("step") or ():
        if isinstance(pt, (list, tuple)) and len(pt) >= 3 and all(isinstance(x, (int, float)) for x in (pt[0], pt[2])):
            pts.append((float(pt[0]), float(pt[2])))
    out = []
    for (t0, s0), (t1, s1) in zip(pts, pts[1:]):
        if t1 > t0 and s1 >= s0:
            out.append((s1, (s1 - s0) / (t1 - t0)))
    return out


def _thin(points: Sequence[Tuple[float, float]], n: int = SVG_POINTS) -> List[Tuple[float, float]]:
    if len(points) <= n:
        return list(points)
    step = len(points) / n
    return [points[int(i * step)] for i in range(n)] + [points[-1]]


def svg_curve(points: Sequence[Tuple[float, float]], title: str, *, width: int = 360, height: int = 120,
              colour: str = "#1565c0") -> str:
    """An inline SVG line chart; '' when fewer than two points."""
    pts = _thin(points)
    if len(pts) < 2:
        return ""
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    if x1 == x0:
        x1 = x0 + 1
    if y1 == y0:
        y1 = y0 + (abs(y0) or 1) * 0.1
    pad = 24
    w, h = width - 2 * pad, height - 2 * pad

    def sx(x: float) -> float:
        return pad + (x - x0) / (x1 - x0) * w

    def sy(y: float) -> float:
        return pad + h - (y - y0) / (y1 - y0) * h

    path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
    e = html.escape
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="{e(title)}">'
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fafafa" stroke="#ddd"/>'
        f'<text x="{pad}" y="14" font-size="11" font-family="sans-serif">{e(title)}</text>'
        f'<text x="{width - pad}" y="14" font-size="10" font-family="sans-serif" text-anchor="end">'
        f'{e(_fmt(y0))} .. {e(_fmt(y1))}</text>'
        f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{path}"/>'
        f'<text x="{pad}" y="{height - 6}" font-size="10" font-family="sans-serif">{e(_fmt(x0))}</text>'
        f'<text x="{width - pad}" y="{height - 6}" font-size="10" font-family="sans-serif" text-anchor="end">{e(_fmt(x1))}</text>'
        "</svg>"
    )


def sparkline(values: Sequence[float], width: int = 20) -> str:
    """``▇▆▅▄▃▂▂▁``: the shape of a series in a terminal column."""
    vals = [v for v in values if isinstance(v, (int, float)) and v == v and abs(v) != float("inf")]
    if not vals:
        return ""
    if len(vals) > width:
        step = len(vals) / width
        vals = [vals[int(i * step)] for i in range(width - 1)] + [vals[-1]]
    lo, hi = min(vals), max(vals)
    if hi == lo:
        return SPARK[3] * len(vals)
    return "".join(SPARK[min(len(SPARK) - 1, int((v - lo) / (hi - lo) * (len(SPARK) - 1) + 0.5))] for v in vals)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


# ---------------------------------------------------------------- text / html


def _where(p: Mapping[str, Any]) -> str:
    if p.get("step") is None:
        return "no step counter seen"
    s = f"step {p['step']}" + (f"/{p['total']}" if p.get("total") else "")
    if p.get("percent") is not None:
        s += f" ({p['percent']}%)"
    return s


def _dur(s: Any) -> str:
    from gcm_checks.wrapper.watch import fmt_duration

    return fmt_duration(float(s)) if isinstance(s, (int, float)) else "?"


def summary_lines(report: Mapping[str, Any]) -> List[str]:
    """Plain sentences; shared by the text and HTML forms."""
    p = report.get("progress") or {}
    if not p:
        return []
    from gcm_checks.text import clean_text

    # The report's own gcm-run lines (report["run"], report.runlink) already
    # say where it got to, the loss and the stalls: do not say it twice.
    said = bool(report.get("run"))
    lines = [] if said else [f"Reached {_where(p)}" + (f", last loss {p['loss']}" if p.get("loss") is not None else "") + "."]
    if p.get("stalled_s") and not said:
        lines.append(f"Stalled: no step for {_dur(p['stalled_s'])}.")
    for s in p.get("stragglers") or ():
        if not isinstance(s, Mapping):
            continue
        try:
            pct = round(100 * (float(s.get("ratio", 1)) - 1))
        except (TypeError, ValueError):
            continue
        why = f": {s['why']}" if s.get("why") else ""
        lines.append(clean_text(f"Slow node {s.get('node')} (task {s.get('task')}): {pct:+d}% step rate against the other nodes{why}."))
    for a in () if said else (p.get("alerts") or ())[:5]:
        lines.append(clean_text(f"Alert: {a.get('message')}"))
    keys = [k for k in ("learning_rate", "grad_norm", "eval_loss") if k in (p.get("metrics") or {})]
    if keys:
        lines.append("Last " + ", ".join(f"{k} {p['metrics'][k]}" for k in keys) + ".")
    return lines


def text_lines(report: Mapping[str, Any]) -> List[str]:
    lines = summary_lines(report)
    hist = (report.get("progress") or {}).get("history") or {}
    loss = [v for _, v in _series(hist, "loss")]
    if not lines and len(loss) < 2:
        return []
    out = ["", "Training progress (gcm-run):"] + [f"  {x}" for x in lines]
    if len(loss) >= 2:
        out.append(f"  loss {sparkline(loss, 40)}")
    rate = [v for _, v in rate_series(hist)]
    if len(rate) >= 2:
        out.append(f"  steps/s {sparkline(rate, 40)}")
    return out


def html_parts(report: Mapping[str, Any]) -> List[str]:
    lines = summary_lines(report)
    hist = (report.get("progress") or {}).get("history") or {}
    curves = [svg_curve(_series(hist, "loss"), "loss by step", colour="#b00020"),
              svg_curve(rate_series(hist), "steps per second by step")]
    curves = [c for c in curves if c]
    if not lines and not curves:
        return []
    parts = ["<h3>Training progress</h3>"]
    if lines:
        parts += ["<ul>"] + [f"<li>{html.escape(x)}</li>" for x in lines] + ["</ul>"]
    if curves:
        parts.append("<p>" + " ".join(curves) + "</p>")
    return parts
