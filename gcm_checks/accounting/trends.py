"""Failure trends: by category and responsibility, and the suspect nodes. Pure.

A node that appears in 9 of the week's 11 ``nccl_comm`` failures is a suspect
even if every check on it passes (issue 9): infrastructure-caused failures are
counted per node and per category, and each node is ranked by the share of
those failures it took part in.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional

from gcm_checks.accounting.records import JobRecord

# Categories whose failures say something about the nodes they ran on.
INFRA = "infrastructure"


def classify_for_trends(record: JobRecord, report: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """category/responsibility/source for one run, judged as ``why`` judges it.

    A report the refinement pass rewrote (``accounting`` in it) already
    weighed accounting's final facts with the logs and node evidence: its
    answer stands. A report not refined yet holds only what the epilog could
    see - the batch script's exit, not a step that failed after it - so the
    run is judged again as refinement will judge it (``judge.judge_report``)
    (else a failed run was counted as a "success" failure). Without a report,
    from sacct fields alone, marked ``source: sacct``."""
    from gcm_checks.accounting.judge import judge_report

    cls = (report or {}).get("classification") or None
    if report is not None and report.get("accounting") and cls and cls.get("category"):
        return {"category": cls["category"], "responsibility": cls.get("responsibility", "unknown"),
                "rule": cls.get("rule", ""), "source": "report"}
    c = judge_report(record, report)
    return {"category": c.category, "responsibility": c.responsibility, "rule": c.rule,
            "source": "sacct" if report is None else "report"}


def aggregate(
    runs: Iterable[Mapping[str, Any]],
    *,
    top: int = 10,
    min_failures: int = 2,
) -> Dict[str, Any]:
    """``runs``: dicts with key, category, responsibility, source, nodes (list)
    or nodes_expr (a Slurm hostlist, expanded only when the run is an
    infrastructure failure: most runs never need their node list), failed
    (bool), partition. Streams: ``runs`` may be a generator. Returns the
    trend document (``failures --json``)."""
    from gcm_checks.classify.taxonomy import CATEGORIES

    by_cat: Dict[str, Dict[str, Any]] = {}
    by_resp: Dict[str, int] = {}
    infra_by_cat: Dict[str, int] = {}
    node_cat: Dict[str, Dict[str, int]] = {}
    total = failed = infra_total = 0
    examples: Dict[str, List[str]] = {}
    for r in runs:
        total += 1
        if not r.get("failed"):
            continue
        failed += 1
        cat = str(r.get("category") or "unknown")
        resp = str(r.get("responsibility") or CATEGORIES.get(cat, CATEGORIES["unknown"]).responsibility)
        row = by_cat.setdefault(cat, {"count": 0, "responsibility": resp, "from_reports": 0, "from_sacct": 0})
        row["count"] += 1
        row["from_reports" if r.get("source") == "report" else "from_sacct"] += 1
        by_resp[resp] = by_resp.get(resp, 0) + 1
        ex = examples.setdefault(cat, [])
        if len(ex) < 5:
            ex.append(str(r.get("key")))
        if resp == INFRA:
            infra_total += 1
            infra_by_cat[cat] = infra_by_cat.get(cat, 0) + 1
            for n in set(_nodes(r)):
                d = node_cat.setdefault(n, {})
                d[cat] = d.get(cat, 0) + 1
    suspects = []
    for node, cats in node_cat.items():
        n = sum(cats.values())
        if n < min_failures:
            continue
        worst = max(cats, key=lambda c: (cats[c] / infra_by_cat[c], cats[c]))
        suspects.append({
            "node": node,
            "infra_failures": n,
            "of": infra_total,
            "share": round(n / infra_total, 3) if infra_total else 0.0,
            "by_category": {c: {"count": k, "of": infra_by_cat[c]} for c, k in sorted(cats.items())},
            "worst_category": worst,
        })
    suspects.sort(key=lambda s: (-s["share"], -s["infra_failures"], s["node"]))
    for cat, row in by_cat.items():
        row["examples"] = examples.get(cat, [])
    return {
        "runs": total,
        "failed": failed,
        "by_category": dict(sorted(by_cat.items(), key=lambda kv: (-kv[1]["count"], kv[0]))),
        "by_responsibility": dict(sorted(by_resp.items(), key=lambda kv: (-kv[1], kv[0]))),
        "infrastructure_failures": infra_total,
        "suspect_nodes": suspects[:top],
    }


def _nodes(r: Mapping[str, Any]) -> List[str]:
    if r.get("nodes") is not None:
        return list(r.get("nodes") or ())
    expr = r.get("nodes_expr") or ""
    if not expr:
        return []
    from gcm_checks.hostlist import expand

    try:
        return expand(expr)
    except Exception:  # noqa: BLE001 - an odd hostlist must not lose the run
        return [expr]


def render(doc: Mapping[str, Any]) -> List[str]:
    lines = []
    w = doc.get("window") or {}
    head = f"{doc['failed']} failed of {doc['runs']} job runs"
    if w:
        head += f" from {w.get('since', '?')} to {w.get('until', '?')}"
    if w.get("partition"):
        head += f" in partition {w['partition']}"
    lines.append(head)
    if doc.get("by_category"):
        lines.append("")
        lines.append(f"{'CATEGORY':<22} {'WHO':<15} {'COUNT':>5}  SOURCE")
        for cat, row in doc["by_category"].items():
            src = f"{row['from_reports']} report, {row['from_sacct']} sacct only"
            lines.append(f"{cat:<22} {row['responsibility']:<15} {row['count']:>5}  {src}")
        lines.append("")
        lines.append("by responsibility: " + ", ".join(f"{k} {v}" for k, v in doc["by_responsibility"].items()))
    if doc.get("suspect_nodes"):
        lines.append("")
        lines.append(f"Nodes most often in the {doc['infrastructure_failures']} infrastructure-caused failures:")
        for s in doc["suspect_nodes"]:
            cats = ", ".join(f"{c} {v['count']}/{v['of']}" for c, v in s["by_category"].items())
            lines.append(f"  {s['node']:<16} {s['infra_failures']}/{s['of']} ({s['share'] * 100:.0f}%)  {cats}")
    elif doc.get("infrastructure_failures"):
        lines.append("")
        lines.append("No node appears in more than one infrastructure-caused failure.")
    for n in doc.get("notes") or ():
        lines.append(f"note: {n}")
    if any(row["from_sacct"] for row in (doc.get("by_category") or {}).values()):
        lines.append("")
        lines.append("'sacct only': no gcm-checks report on this machine; classified from accounting fields alone.")
    return lines


__all__ = ["aggregate", "classify_for_trends", "render"]
