"""The text of ``gcm-checks why``: one explained run as lines for a human.

Pure (a document in, lines out), apart from the diagnosis in diagnose.py
that builds the document, so the command and its tests share one wording.
"""

from __future__ import annotations

from typing import Any, List, Mapping


def render_why(doc: Mapping[str, Any]) -> List[str]:
    if not doc.get("found"):
        lines = [f"job {doc.get('job_id')}: not found"]
        lines += [f"  {k}: {v}" for k, v in (doc.get("sources") or {}).items()]
        lines += [f"  {n}" for n in doc.get("notes") or ()]
        return lines
    j = doc["job"]
    c = doc["classification"]
    o = doc.get("outcome") or {}
    run = f" (run {j['run'] + 1} of {j['runs']})" if j.get("runs", 1) > 1 else ""
    head = f"Job {doc['key']}{run} {j.get('name') or ''} [{j.get('user') or '?'}]: {j['state']}"
    if j.get("exit_status"):
        head += f", exit {j['exit_status']}"
    if j.get("elapsed"):
        head += f", ran {j['elapsed']}" + (f" of {j['timelimit']}" if j.get("timelimit") else "")
    if j.get("nodes"):
        head += f" on {j['nodes']}"
    lines = [head, "", o.get("headline") or c["sentence"]]
    for r in doc.get("runs") or ():
        if r.get("this"):
            continue
        why = f" (moved off a faulty node: {r['drains'][0]})" if r.get("drains") else ""
        lines.append(f"  run {r['run'] + 1}: {r['state']} on {r.get('nodes') or '?'}{why} - {r.get('headline')}")
    for f in (o.get("faults") or [])[1:]:  # the first is in the headline
        lines.append(f"  also: {f.get('text')}")
    cause = o.get("id") not in ("completed", "cancelled", "requeued") and c.get("category") not in ("success",)
    if cause:
        lines += ["", f"Cause: {c['category']} ({c['responsibility']}), confidence {float(c['confidence']):.2f}, "
                      f"rule {c['rule']}"]
        if c.get("sentence") and c["sentence"] != o.get("headline"):
            lines.append(c["sentence"])
    if c.get("evidence") and cause:
        lines.append("Evidence:")
        seen = set()
        for e in c["evidence"]:
            text = " ".join(str(e.get("text", "")).split())
            if text in seen:
                continue  # the same line matched twice (log and kernel log, two rules)
            seen.add(text)
            where = f"{e['source']} line {e['line_no']}" if e.get("line_no") else e["source"]
            lines.append(f"  [{where}] {e['text']}")
    lines += ["", f"Next step: {doc.get('next_step', '')}", "", "Sources:"]
    for k, v in (doc.get("sources") or {}).items():
        if k == "logs":
            for log in v or [{"name": "logs", "path": "", "note": "no log path known"}]:
                state = f"read {log.get('bytes', 0)} bytes" if log.get("read") else f"not read: {log.get('note', '')}"
                lines.append(f"  {log['name']}: {log.get('path', '')} ({state})")
        else:
            lines.append(f"  {k}: {v}")
    for n in doc.get("notes") or ():
        lines.append(f"Note: {n}")
    return lines
