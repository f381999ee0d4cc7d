"""Classify one run of a job from accounting, logs and node evidence. Pure.

The classifier (``gcm_checks.classify``) already knows Slurm's final states
(TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, PREEMPTED, CANCELLED); what accounting adds
here is what the epilog could not see (issue 9): the final state itself (the
epilog sees COMPLETING, and exit 0 for both a time limit and an scancel), the
steps - a step that FAILED while the batch script exited 0 -, MaxRSS, and the
requeues.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from gcm_checks.accounting.records import JobRecord, fmt_duration

# Evidence sources whose text re-matches the classifier's rules (log lines,
# kernel lines, XID lines). "slurm"/"sacct" evidence is structured, not text.
_TEXT_SOURCES_EXCLUDED = ("slurm", "sacct")
MAX_EVIDENCE = 8


def node_inputs(nodes: Iterable[Mapping[str, Any]]) -> Dict[str, List[Any]]:
    """xids / dcgm_failures / ib_problems for ClassifyInput from a report's
    ``nodes[].evidence`` (or spool contributions' evidence)."""
    xids: List[Dict[str, Any]] = []
    dcgm: List[Dict[str, Any]] = []
    ib: List[str] = []
    for n in nodes:
        ev = n.get("evidence") or {}
        name = n.get("node", "")
        for x in ev.get("xids") or ():
            if isinstance(x, Mapping):
                xids.append(dict(x))
        for d in ev.get("dcgm") or ():
            if isinstance(d, Mapping) and str(d.get("status", "fail")).lower() == "fail":
                dcgm.append(dict(d))
        for r in ev.get("results") or ():
            if not isinstance(r, Mapping):
                continue
            if str(r.get("check", "")).startswith("ib.") and r.get("status") == "fail":
                ib.append(f"{name}: {r.get('subject', '')} {r.get('message', '')}".strip())
    return {"xids": xids, "dcgm_failures": dcgm, "ib_problems": ib}


def report_logs(report: Optional[Mapping[str, Any]]) -> List[Any]:
    """LogText objects from a stored report's log tails, plus the text evidence
    of its earlier classification (kernel lines the report does not keep)."""
    from gcm_checks.classify import LogText

    if not report:
        return []
    out = []
    prior = report.get("classification") or {}
    lines = [str(e.get("text", "")) for e in prior.get("evidence") or ()
             if isinstance(e, Mapping) and e.get("source") not in _TEXT_SOURCES_EXCLUDED and e.get("text")]
    if lines:
        # First, so the job's own logs win a tie (the classifier prefers later texts).
        out.append(LogText("earlier evidence", "\n".join(lines)))
    for log in report.get("logs") or ():
        text = log.get("text") or ""
        if text:
            out.append(LogText(str(log.get("name") or log.get("path") or "log"), text))
    return out


def classify_run(
    record: JobRecord,
    logs: Sequence[Any] = (),
    node_evidence: Optional[Mapping[str, List[Any]]] = None,
) -> Any:
    """The classification of one run with accounting's facts as evidence."""
    from gcm_checks.classify import ClassifyInput, Evidence, classify, sanitize
    from gcm_checks.classify.taxonomy import CATEGORIES

    ne = node_evidence or {}
    reason = record.reason if record.reason and record.reason != "None" else None
    # slurmdbd can record a failed step before it updates the job's
    # DerivedExitCode (as diagnose.run_outcome says): a failed step is the
    # derived failure either way, or a job the outcome calls failed would be
    # classified "success" (seen on the test cluster: COMPLETED, 0:0, step 5:0).
    derived = record.derived_exit_code or next((s.exit_code or 1 for s in record.failed_steps), None)
    inp = ClassifyInput(
        logs=list(logs),
        state=record.state_raw or record.state or None,
        exit_code=record.exit_code,
        signal=record.signal,
        derived_exit_code=derived,
        reason=reason,
        xids=list(ne.get("xids") or ()),
        dcgm_failures=list(ne.get("dcgm_failures") or ()),
        ib_problems=list(ne.get("ib_problems") or ()),
    )
    cls = classify(inp)
    extra = [Evidence("sacct", 0, sanitize(record.summary()))]
    for s in record.failed_steps[:3]:
        extra.append(Evidence("sacct", 0, sanitize(s.describe())))
    if record.state == "TIMEOUT" and record.elapsed_s is not None and record.timelimit_s:
        extra.append(Evidence("sacct", 0, f"ran {fmt_duration(record.elapsed_s)} of a {fmt_duration(record.timelimit_s)} limit"))

    if record.requeued and cls.category in ("unknown", "success", "cancelled_user"):
        # 22.05 shows a run that was requeued (scontrol requeue, preemption
        # with PreemptMode=REQUEUE, --requeue after a node failure) as
        # REQUEUED with exit 0:0, and its log ends with "CANCELLED AT ... DUE
        # TO JOB REQUEUE": the scheduler ended it, not the job or a user.
        cat = CATEGORIES["preempted"]
        again = f"; it ran again as run {record.run + 2} of {record.runs}" if record.runs > record.run + 1 else ""
        cls = replace(
            cls, category=cat.id, responsibility=cat.responsibility, confidence=0.6, rule="sacct.requeued",
            evidence=[], sentence=f"The scheduler requeued this run (preemption or scontrol requeue){again} — {cat.verdict}.",
        )
    elif cls.category == "unknown" and record.failed_steps:
        s = record.failed_steps[0]
        cls = replace(cls, confidence=max(cls.confidence, 0.4), rule="sacct.step_failed",
                      sentence=f"Step {s.step_id} ({sanitize(s.name, 60)}) {s.state} with exit code "
                               f"{s.exit_code} while the job went on; the logs do not say why.")
    evidence = list(cls.evidence)
    for e in extra:
        if e not in evidence:
            evidence.append(e)
    return replace(cls, evidence=evidence[:MAX_EVIDENCE])


def judge_report(record: JobRecord, report: Optional[Mapping[str, Any]]) -> Any:
    """A run judged again from its stored report: the report's log tails and
    earlier text evidence, its nodes' evidence, and accounting's record.

    The one place a stored report is re-judged: ``refine`` writes this verdict
    into the report, and ``failures`` (``trends.classify_for_trends``) counts a
    report not refined yet by it, so a trend never counts a run differently
    from what its refined report will say. Without a report, from the record
    alone."""
    if report is None:
        return classify_run(record)
    return classify_run(record, report_logs(report), node_inputs(report.get("nodes") or ()))


__all__ = ["classify_run", "judge_report", "node_inputs", "report_logs"]
