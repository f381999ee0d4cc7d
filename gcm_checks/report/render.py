"""Render a report dict: report.json, report.txt, the HTML e-mail body.

Every string that came from a log or a user (job name, comment, log lines,
evidence text) reaches HTML only through ``html.escape``; the text form has
already been stripped of escape sequences by ``safeio.clean_text``, and we
clean again here because evidence text may come from other modules.
"""

from __future__ import annotations

import html
import json
from typing import Any, Dict, List, Mapping, Tuple

from gcm_checks.safeio import clean_text

# What a user should do, by whose fault it was, when the classifier's taxonomy
# has no next step for the category (keys: gcm_checks.classify.taxonomy).
ADVICE = {
    "infrastructure": "Not your code: the cluster was at fault. Resubmit; the node is being checked.",
    "scheduler": "The scheduler ended the job (time limit or preemption). Resubmit, with more --time if needed.",
    "user": "The job itself stopped. The evidence and log lines below show where.",
}
DEFAULT_ADVICE = "We could not tell why the job ended. Send this report to the admins if you need help."


def to_json(report: Mapping[str, Any]) -> bytes:
    return (json.dumps(report, indent=2, sort_keys=False, ensure_ascii=False) + "\n").encode("utf-8")


def subject(report: Mapping[str, Any]) -> str:
    job = report.get("job") or {}
    cls = report.get("classification") or {}
    verdict = "FAILED" if (report.get("outcome") or {}).get("failed") else "finished"
    name = _one_line(job.get("name") or "")
    cat = f": {_one_line(str(cls.get('category')))}" if cls.get("category") else ""
    return f"[gcm] job {job.get('job_id')}{f' ({name})' if name else ''} {verdict}{cat}"[:200]


def _one_line(s: str) -> str:
    # Header injection: a job name with a newline must not add mail headers.
    return " ".join(clean_text(s).split())


def _duration(s: Any) -> str:
    if s is None:
        return "?"
    s = int(s)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m{sec:02d}s" if h else f"{m}m{sec:02d}s"


def _evidence_rows(cls: Mapping[str, Any]) -> List[Tuple[str, str]]:
    rows = []
    for ev in cls.get("evidence") or ():
        if isinstance(ev, Mapping):
            src, line_no, text = ev.get("source", ""), ev.get("line_no", ""), ev.get("text", "")
        elif isinstance(ev, (list, tuple)) and len(ev) >= 3:
            src, line_no, text = ev[0], ev[1], ev[2]
        else:
            src, line_no, text = "", "", ev
        where = f"{src}:{line_no}" if line_no not in ("", None) else str(src)
        rows.append((clean_text(str(where)), clean_text(str(text))))
    return rows


def _node_lines(node: Mapping[str, Any]) -> List[str]:
    """Human lines for one node's evidence; passing checks are left out."""
    ev = node.get("evidence") or {}
    if not node.get("contributed"):
        return ["no evidence (the node's epilog did not report)"]
    out = []
    for x in ev.get("xids") or ():
        if isinstance(x, Mapping):
            code = x.get("code", x.get("xid", "?"))
            gpu = x.get("gpu") or x.get("pci") or x.get("subject") or ""
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
        reason = d.get("reason", d) if isinstance(d, Mapping) else d
        out.append(f"drained: {reason}")
    for k, v in (ev.get("_truncated") or {}).items():
        out.append(f"({k}: {v})")
    return [clean_text(x) for x in out] or ["nothing wrong found"]


def to_text(report: Mapping[str, Any]) -> str:
    job = report.get("job") or {}
    out = report.get("outcome") or {}
    cls = report.get("classification") or {}
    lines = [
        f"gcm-checks job report: job {job.get('job_id')} \"{_one_line(job.get('name') or '')}\" ({job.get('user')})",
        "",
        f"Result:      {'FAILED' if out.get('failed') else 'ok'}   state={out.get('state') or '?'}  exit={out.get('exit_status') or '?'}",
    ]
    if cls:
        if cls.get("sentence"):
            lines.append(f"What happened: {clean_text(str(cls['sentence']))}")
        lines.append(
            f"Category:    {cls.get('category')} (responsibility: {cls.get('responsibility')}, "
            f"confidence: {cls.get('confidence')}, rule: {cls.get('rule')})"
        )
    else:
        lines.append("Category:    not classified")
    lines.append(f"What to do:  {advice(report)}")
    lines += [
        f"Partition:   {job.get('partition') or '?'}   Cluster: {job.get('cluster') or '?'}",
        f"Nodes:       {', '.join(job.get('nodes') or []) or '?'}",
        f"Start/End:   {_iso(job.get('start'))} .. {_iso(job.get('end'))}  (elapsed {_duration(job.get('elapsed_s'))})",
        f"Work dir:    {clean_text(job.get('work_dir') or '?')}",
    ]
    rows = _evidence_rows(cls)
    if rows:
        lines += ["", "Evidence:"]
        lines += [f"  {w}: {t}" for w, t in rows]
    lines += ["", "Node evidence:"]
    for n in report.get("nodes") or ():
        nl = _node_lines(n)
        lines.append(f"  {n.get('node')}: {nl[0]}")
        lines += [f"    {x}" for x in nl[1:]]
    from gcm_checks.report.progress import text_lines

    lines += text_lines(report)
    for log in report.get("logs") or ():
        lines += ["", f"--- {log.get('name')} ({log.get('path')}) ---"]
        if log.get("note"):
            lines.append(f"[{log['note']}]")
        if log.get("text"):
            lines.append(clean_text(log["text"]).rstrip("\n"))
    if report.get("notes"):
        lines += ["", "Notes:"] + [f"  - {clean_text(str(n))}" for n in report["notes"]]
    lines += ["", f"Report {report.get('schema')} v{report.get('version')}, {report.get('generated_at')} by {report.get('generated_by')}"]
    return "\n".join(lines) + "\n"


def advice(report: Mapping[str, Any]) -> str:
    cls = report.get("classification") or {}
    if cls.get("advice"):
        return clean_text(str(cls["advice"]))
    if not (report.get("outcome") or {}).get("failed"):
        return "Nothing: the job finished normally."
    try:  # the taxonomy's own next step, when the classifier is installed
        from gcm_checks.classify.taxonomy import CATEGORIES

        cat = CATEGORIES.get(str(cls.get("category")))
        if cat is not None and cat.next_step:
            return cat.next_step
    except ImportError:
        pass
    return ADVICE.get(str(cls.get("responsibility", "")).lower(), DEFAULT_ADVICE)


def _iso(t: Any) -> str:
    if t in (None, ""):
        return "?"
    if isinstance(t, (int, float)):
        import time

        return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))
    return str(t)


def to_html(report: Mapping[str, Any]) -> str:
    """A self-contained HTML body: inline styles, no scripts, all text escaped."""
    e = lambda s: html.escape(clean_text(str(s)), quote=True)  # noqa: E731
    job = report.get("job") or {}
    out = report.get("outcome") or {}
    cls = report.get("classification") or {}
    failed = bool(out.get("failed"))
    colour = "#b00020" if failed else "#1b5e20"
    parts = [
        "<!DOCTYPE html><html><body style=\"font-family:sans-serif\">",
        f"<h2 style=\"color:{colour}\">Job {e(job.get('job_id'))} {e(job.get('name') or '')}: {'FAILED' if failed else 'finished'}</h2>",
        "<table cellpadding=\"3\">",
    ]

    def row(k: str, v: Any) -> None:
        parts.append(f"<tr><th align=\"left\">{e(k)}</th><td>{e(v)}</td></tr>")

    if cls.get("sentence"):
        row("What happened", cls["sentence"])
    row("Category", f"{cls.get('category')} ({cls.get('responsibility')})" if cls else "not classified")
    if cls:
        row("Confidence / rule", f"{cls.get('confidence')} / {cls.get('rule')}")
    row("What to do", advice(report))
    row("State / exit", f"{out.get('state') or '?'} / {out.get('exit_status') or '?'}")
    row("User", job.get("user"))
    row("Partition", job.get("partition") or "?")
    row("Nodes", ", ".join(job.get("nodes") or []))
    row("Start / end", f"{_iso(job.get('start'))} / {_iso(job.get('end'))} ({_duration(job.get('elapsed_s'))})")
    parts.append("</table>")
    rows = _evidence_rows(cls)
    if rows:
        parts.append("<h3>Evidence</h3><ul>")
        parts += [f"<li><code>{e(w)}</code> {e(t)}</li>" for w, t in rows]
        parts.append("</ul>")
    parts.append("<h3>Node evidence</h3><ul>")
    for n in report.get("nodes") or ():
        nl = _node_lines(n)
        inner = "".join(f"<li>{e(x)}</li>" for x in nl[1:])
        parts.append(f"<li><b>{e(n.get('node'))}</b>: {e(nl[0])}{f'<ul>{inner}</ul>' if inner else ''}</li>")
    parts.append("</ul>")
    from gcm_checks.report.progress import html_parts

    parts += html_parts(report)
    for log in report.get("logs") or ():
        parts.append(f"<h3>{e(log.get('name'))}</h3>")
        if log.get("note"):
            parts.append(f"<p><i>{e(log['note'])}</i></p>")
        if log.get("text"):
            parts.append(f"<pre style=\"background:#f4f4f4;padding:6px\">{e(log['text'])}</pre>")
    for note in report.get("notes") or ():
        parts.append(f"<p><i>{e(note)}</i></p>")
    parts.append(f"<p style=\"color:#777\">{e(report.get('schema'))} v{e(report.get('version'))}, {e(report.get('generated_at'))}</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def short_text(report: Mapping[str, Any], limit: int = 3000) -> str:
    """A few lines for chat webhooks: verdict, category, evidence, drains."""
    cls = report.get("classification") or {}
    lines = [subject(report)]
    if cls.get("sentence"):
        lines.append(clean_text(str(cls["sentence"])))
    if cls:
        lines.append(f"category={cls.get('category')} responsibility={cls.get('responsibility')} rule={cls.get('rule')}")
    lines += [f"{w}: {t}" for w, t in _evidence_rows(cls)[:5]]
    for d in report.get("drains") or ():
        lines.append(f"drained {d.get('node')}: {clean_text(str(d.get('reason', '')))}")
    text = "\n".join(lines)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_all(report: Mapping[str, Any]) -> Dict[str, bytes]:
    return {
        "report.json": to_json(report),
        "report.txt": to_text(report).encode("utf-8"),
        "report.html": to_html(report).encode("utf-8"),
    }
