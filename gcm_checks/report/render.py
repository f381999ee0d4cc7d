"""Render a report dict: report.json, report.txt, the HTML e-mail body.

Two audiences. The **user** view (report.txt, the mail) is read in ten
seconds: the outcome as a headline with its one action, the cause, rows that
have data (no ``?``), and node evidence only where it concerns the job (a
hardware fault on its GPUs, a drain Slurm holds). The **admin** view
(``notify report --admin``) adds every node's non-passing checks, "could not
test" lines, report-only "would drain" decisions and notes; report.json
keeps everything.

Every string that came from a log or a user (job name, comment, log lines,
evidence text) reaches HTML only through ``html.escape``; the text form has
already been stripped of escape sequences by ``gcm_checks.text.clean_text``, and we
clean again here because evidence text may come from other modules.
"""

from __future__ import annotations

import html
import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from gcm_checks.text import clean_text, one_line

DEFAULT_ADVICE = "We could not tell why the job ended. Send this report to the admins if you need help."


def to_json(report: Mapping[str, Any]) -> bytes:
    return (json.dumps(report, indent=2, sort_keys=False, ensure_ascii=False) + "\n").encode("utf-8")


def _outcome(report: Mapping[str, Any]) -> Mapping[str, Any]:
    out = report.get("outcome") or {}
    if out.get("id"):
        return out
    # A report written before outcomes existed: work it out now.
    from gcm_checks.report.build import outcome_dict

    return outcome_dict(report)


def subject(report: Mapping[str, Any]) -> str:
    from gcm_checks.report.outcome import OUTCOMES, NOT_YOUR_CODE

    job = report.get("job") or {}
    out = _outcome(report)
    cls = report.get("classification") or {}
    name = one_line(job.get("name") or "")
    oid = str(out.get("id") or "completed")
    word = OUTCOMES.get(oid, OUTCOMES["completed"])[2]
    cat = str(cls.get("category") or "")
    if oid == "failed" and cat and cat not in ("unknown", "success"):
        word = f"FAILED: {one_line(cat)}"
    blame = out.get("blame") or ""
    if oid == "suspect":
        blame = f"GPU fault, {NOT_YOUR_CODE}"
    tail = f" ({blame})" if blame and oid not in ("completed", "cancelled", "requeued") else ""
    if (report.get("classification") or {}).get("refined_from") and (report.get("classification") or {}).get("notified_as"):
        tail += " [corrected]"
    return f"[gcm] job {job.get('job_id')}{f' ({name})' if name else ''} {word}{tail}"[:200]


def _duration(s: Any) -> str:
    if s is None:
        return ""
    s = int(s)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m{sec:02d}s" if h else f"{m}m{sec:02d}s"


def _evidence_rows(cls: Mapping[str, Any]) -> List[Tuple[str, str]]:
    rows: List[Tuple[str, str]] = []
    seen = set()
    for ev in cls.get("evidence") or ():
        if isinstance(ev, Mapping):
            src, line_no, text = ev.get("source", ""), ev.get("line_no", ""), ev.get("text", "")
        elif isinstance(ev, (list, tuple)) and len(ev) >= 3:
            src, line_no, text = ev[0], ev[1], ev[2]
        else:
            src, line_no, text = "", "", ev
        where = f"{src}:{line_no}" if line_no not in ("", None, 0) else str(src)
        text = clean_text(str(text))
        if " ".join(text.split()) in seen:
            continue  # the same line found by two rules, or in the log and the kernel log
        seen.add(" ".join(text.split()))
        rows.append((clean_text(str(where)), text))
    return rows


def drain_line(d: Mapping[str, Any]) -> Optional[str]:
    """What a drain entry means, worded from what Slurm actually holds."""
    node = d.get("node", "")
    action = str(d.get("action", "drained"))
    reason = str(d.get("reason", ""))
    held = str(d.get("held_reason") or "")
    if action == "drained":
        return f"{node} drained: {held or reason}"
    if action == "already":
        return f"{node} is drained: {held}" if held else f"{node} was already drained by gcm-checks"
    if action == "kept_foreign":
        return f"wanted to drain {node} ({reason}), but it is already out of service: {held or 'drained by an admin'}"
    if action == "error":
        return f"wanted to drain {node} ({reason}), but the drain failed; Slurm drains it itself"
    if action.startswith(("report-only", "would")) or d.get("would_drain") or d.get("report_only"):
        return None  # admin view only: report-only changes nothing a user sees
    if action.startswith("braked"):
        return None  # the mass-drain brake kept the node in service: an admin matter
    return f"{node}: {action}: {reason}"


def _admin_node_lines(node: Mapping[str, Any]) -> List[str]:
    """Every non-passing line of one node's evidence (admin view)."""
    ev = node.get("evidence") or {}
    if not node.get("contributed"):
        return ["no evidence (the node's epilog did not report)"]
    out = []
    for x in ev.get("xids") or ():
        if isinstance(x, Mapping):
            code = x.get("code", x.get("xid", "?"))
            gpu = x.get("gpu") or x.get("pci") or x.get("pci_bus_id") or x.get("subject") or ""
            what = x.get("name") or x.get("meaning") or x.get("text") or ""
            out.append(f"XID {code}{f' on {gpu}' if gpu else ''}: {what}")
        else:
            out.append(f"XID {x}")
    for key in ("results", "dcgm"):
        for r in ev.get(key) or ():
            if not isinstance(r, Mapping):
                out.append(str(r))
                continue
            status = str(r.get("status", "")).lower()
            if status in ("pass", ""):
                continue
            subj = f" [{r.get('subject')}]" if r.get("subject") else ""
            out.append(f"{status.upper()} {r.get('check', key)}{subj}: {r.get('message', '')}")
    for d in ev.get("drains") or ():
        dd = dict(d) if isinstance(d, Mapping) else {"reason": str(d)}
        action = str(dd.get("action", "drained"))
        if action.startswith(("report-only", "would")) or dd.get("would_drain") or dd.get("report_only"):
            out.append(f"would drain (report-only): {dd.get('reason', '')}")
        elif action.startswith("braked"):
            out.append(f"not drained (mass-drain brake: suspected cluster-wide cause): {dd.get('reason', '')}")
        else:
            out.append(drain_line(dict(dd, node=node.get("node"))) or "")
    for k, v in (ev.get("_truncated") or {}).items():
        out.append(f"({k}: {v})")
    return [clean_text(x) for x in out if x] or ["nothing wrong found"]


def user_node_lines(report: Mapping[str, Any]) -> List[str]:
    """Node evidence that concerns the job: faults on its GPUs, drains Slurm holds."""
    out = _outcome(report)
    lines = [f"{f.get('text')}" for f in out.get("faults") or ()]
    if out.get("id") not in ("completed",) or lines:
        for d in report.get("drains") or ():
            line = drain_line(d) if isinstance(d, Mapping) else None
            if line:
                lines.append(line)
    return [clean_text(x) for x in lines]


def _job_rows(report: Mapping[str, Any]) -> List[Tuple[str, str]]:
    job = report.get("job") or {}
    out = _outcome(report)
    rows = []
    state = out.get("state") or job.get("state") or ""
    exit_s = out.get("exit_status") or job.get("exit_status") or ""
    if state or exit_s:
        rows.append(("State", " / exit ".join(x for x in (state, exit_s) if x) if state else f"exit {exit_s}"))
    for label, key in (("User", "user"), ("Partition", "partition"), ("Cluster", "cluster")):
        if job.get(key):
            rows.append((label, clean_text(str(job[key]))))
    if job.get("nodes"):
        rows.append(("Nodes", ", ".join(job["nodes"])))
    if job.get("restart_count"):
        rows.append(("Run", f"{int(job['restart_count']) + 1} (requeued {job['restart_count']} time(s))"))
    start, end = _iso(job.get("start")), _iso(job.get("end"))
    if start or end:
        took = _duration(job.get("elapsed_s"))
        rows.append(("Start / end", f"{start or '-'} .. {end or '-'}" + (f" (ran {took})" if took else "")))
    if job.get("work_dir"):
        rows.append(("Work dir", clean_text(job["work_dir"])))
    return rows


def _cause_line(report: Mapping[str, Any]) -> str:
    cls = report.get("classification") or {}
    out = _outcome(report)
    if not cls or out.get("id") in ("completed", "requeued") or cls.get("category") in ("success",):
        return ""
    cat = cls.get("category")
    if cat == "unknown":
        return "not found in the logs (unknown)" if out.get("id") == "failed" else ""
    return f"{cat} ({cls.get('responsibility')}, confidence {cls.get('confidence')}, rule {cls.get('rule')})"


def _run_lines(report: Mapping[str, Any]) -> List[str]:
    """gcm-run's progress section (report["run"]), when the job used it."""
    run = report.get("run") or {}
    lines = []
    if run.get("progress"):
        lines.append(f"Progress:    {clean_text(str(run['progress']))}")
    if run.get("loss") not in (None, ""):
        lines.append(f"Last loss:   {clean_text(str(run['loss']))}")
    for s in run.get("stalls") or ():
        lines.append(f"Stalled:     {clean_text(str(s))}")
    return lines


def _progress_section(report: Mapping[str, Any], name: str) -> List[str]:
    """gcm-run's training-progress section (report/progress.py, helper i15's
    side of the gcm-run hook) when that renderer is installed."""
    if not report.get("progress"):
        return []
    try:
        from gcm_checks.report import progress
    except ImportError:
        return []
    fn = getattr(progress, name, None)
    return list(fn(report)) if fn is not None else []


def to_text(report: Mapping[str, Any], audience: str = "user") -> str:
    job = report.get("job") or {}
    out = _outcome(report)
    cls = report.get("classification") or {}
    name = one_line(job.get("name") or "")
    lines = [
        f"Job {job.get('job_id')}{f' ({name})' if name else ''}: {clean_text(str(out.get('headline') or ''))}",
        f"What to do:  {advice(report)}",
        "",
    ]
    if cls.get("sentence") and _cause_line(report):
        lines.append(f"What happened: {clean_text(str(cls['sentence']))}")
    if _cause_line(report):
        lines.append(f"Cause:       {_cause_line(report)}")
    if cls.get("refined_from"):
        lines.append(f"Corrected:   cause was first reported as {cls.get('notified_as') or cls['refined_from']}; "
                     f"Slurm's accounting says {cls.get('category')}")
    lines += _run_lines(report)
    lines += [f"{k + ':':<12} {v}" for k, v in _job_rows(report)]
    rows = _evidence_rows(cls) if _cause_line(report) else []
    if rows:
        lines += ["", "Evidence:"]
        lines += [f"  {w}: {t}" for w, t in rows]
    if audience == "admin":
        lines += ["", "Node evidence (admin view):"]
        for n in report.get("nodes") or ():
            nl = _admin_node_lines(n)
            lines.append(f"  {n.get('node')}: {nl[0]}")
            lines += [f"    {x}" for x in nl[1:]]
    else:
        nl = user_node_lines(report)
        if nl:
            lines += ["", "On your job's nodes:"] + [f"  {x}" for x in nl]
    lines += _progress_section(report, "text_lines")
    if out.get("failure") or out.get("id") == "suspect" or audience == "admin":
        for log in report.get("logs") or ():
            lines += ["", f"--- {log.get('name')} ({log.get('path')}) ---"]
            if log.get("note"):
                lines.append(f"[{log['note']}]")
            if log.get("text"):
                lines.append(clean_text(log["text"]).rstrip("\n"))
    if audience == "admin" and report.get("notes"):
        lines += ["", "Notes:"] + [f"  - {clean_text(str(n))}" for n in report["notes"]]
    by = f" by {report.get('generated_by')}" if report.get("generated_by") else ""
    lines += ["", f"Report {report.get('schema')} v{report.get('version')}, {report.get('generated_at')}{by}"]
    return "\n".join(lines) + "\n"


def advice(report: Mapping[str, Any]) -> str:
    out = _outcome(report)
    if out.get("action"):
        return clean_text(str(out["action"]))
    cls = report.get("classification") or {}
    if cls.get("advice"):
        return clean_text(str(cls["advice"]))
    return DEFAULT_ADVICE


def _iso(t: Any) -> str:
    if t in (None, ""):
        return ""
    if isinstance(t, (int, float)):
        import time

        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))
    return str(t)


# Banner colours: the job's own fault (red), not its code (amber: resubmit,
# nobody's bug of theirs), fine (green). One red banner for both made a
# hardware fault read like the user's bug (issue 17, 5).
_COLOURS = {"your code": "#b00020", "not your code": "#b26a00", "": "#b00020"}


def to_html(report: Mapping[str, Any]) -> str:
    """A self-contained HTML body: charset, inline styles, no scripts, all text escaped."""
    e = lambda s: html.escape(clean_text(str(s)), quote=True)  # noqa: E731
    job = report.get("job") or {}
    out = _outcome(report)
    cls = report.get("classification") or {}
    bad = bool(out.get("failure")) or out.get("id") == "suspect"
    colour = _COLOURS.get(str(out.get("blame") or ""), "#b00020") if bad else "#1b5e20"
    name = job.get("name") or ""
    parts = [
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>gcm-checks job report</title></head>",
        "<body style=\"font-family:sans-serif\">",
        f"<h2 style=\"color:{colour}\">Job {e(job.get('job_id'))}{f' ({e(name)})' if name else ''}: {e(out.get('headline') or '')}</h2>",
        f"<p><b>What to do:</b> {e(advice(report))}</p>",
        "<table cellpadding=\"3\">",
    ]

    def row(k: str, v: Any) -> None:
        parts.append(f"<tr><th align=\"left\">{e(k)}</th><td>{e(v)}</td></tr>")

    if cls.get("sentence") and _cause_line(report):
        row("What happened", cls["sentence"])
    if _cause_line(report):
        row("Cause", _cause_line(report))
    for k, v in _job_rows(report):
        row(k, v)
    parts.append("</table>")
    rows = _evidence_rows(cls) if _cause_line(report) else []
    if rows:
        parts.append("<h3>Evidence</h3><ul>")
        parts += [f"<li><code>{e(w)}</code> {e(t)}</li>" for w, t in rows]
        parts.append("</ul>")
    nl = user_node_lines(report)
    if nl:
        parts.append("<h3>On your job's nodes</h3><ul>")
        parts += [f"<li>{e(x)}</li>" for x in nl]
        parts.append("</ul>")
    parts += _progress_section(report, "html_parts")
    if out.get("failure") or out.get("id") == "suspect":
        for log in report.get("logs") or ():
            parts.append(f"<h3>{e(log.get('name'))}</h3>")
            if log.get("note"):
                parts.append(f"<p><i>{e(log['note'])}</i></p>")
            if log.get("text"):
                parts.append(f"<pre style=\"background:#f4f4f4;padding:6px\">{e(log['text'])}</pre>")
    parts.append(f"<p style=\"color:#777\">{e(report.get('schema'))} v{e(report.get('version'))}, {e(report.get('generated_at'))}</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def short_text(report: Mapping[str, Any], limit: int = 3000) -> str:
    """A few lines for chat webhooks: subject, headline, cause, evidence, drains."""
    cls = report.get("classification") or {}
    lines = [subject(report), clean_text(str(_outcome(report).get("headline") or ""))]
    if _cause_line(report):
        lines.append(f"cause: {_cause_line(report)}")
        lines += [f"{w}: {t}" for w, t in _evidence_rows(cls)[:5]]
    lines += user_node_lines(report)
    text = "\n".join(x for x in lines if x)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_all(report: Mapping[str, Any]) -> Dict[str, bytes]:
    return {
        "report.json": to_json(report),
        "report.txt": to_text(report).encode("utf-8"),
        "report.html": to_html(report).encode("utf-8"),
    }
