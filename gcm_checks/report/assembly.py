"""Build and write one job's report: this node's contribution, the
assembly of every node's evidence, the files on disk.

No notification here (rule 6: the report is on disk before anyone is told):
``gcm_checks.report.assemble_and_notify`` and ``sweep`` build with these
functions and then hand the report to ``gcm_checks.notify``. The refinement
pass (accounting/) rewrites reports through ``write_report`` too, so this
module imports neither notify nor accounting.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional

from gcm_checks.report.model import JobInfo

if TYPE_CHECKING:
    from gcm_checks.config.types import Report, Settings

# classifier(job, logs, contributions) -> classification dict; runs on the
# assembling node, which is the one holding the log tails.
Classifier = Callable[[JobInfo, List[Dict[str, Any]], Mapping[str, Any]], Optional[Mapping[str, Any]]]


@dataclass
class Assembled:
    key: str
    report: Dict[str, Any]
    paths: Dict[str, str]
    user_copy: str = ""
    user_copy_error: str = ""
    notes: List[str] = field(default_factory=list)


def contribute(job: JobInfo, node: str, evidence: Mapping[str, Any], settings: "Settings") -> str:
    """Write this node's evidence to the job's spool dir; returns its path.

    ``evidence`` keys the renderers know: ``results`` (CheckResult or dicts),
    ``xids`` (dicts with code, gpu, name), ``dcgm`` (result dicts), ``drains``
    (dicts with reason), ``classification`` (dict). Anything else is kept in
    report.json as is.
    """
    from gcm_checks.report import spool
    from gcm_checks.report.model import node_evidence

    rs = settings.report
    return spool.write_contribution(rs.spool_dir, job, node, node_evidence(evidence, rs.evidence_max_items))


def report_paths(settings: "Settings", key: str) -> Dict[str, str]:
    from gcm_checks.report.spool import safe_name

    d = os.path.join(settings.report.report_dir, safe_name(key))
    return {name: os.path.join(d, name) for name in ("report.json", "report.txt", "report.html")}


def write_report(report: Mapping[str, Any], settings: "Settings") -> Dict[str, str]:
    """All three formats, each atomically, json last: its presence means done."""
    from gcm_checks.report.render import render_all
    from gcm_checks.jsonfile import write_atomic

    paths = report_paths(settings, report["job"]["key"])
    files = render_all(report)
    for name in ("report.txt", "report.html", "report.json"):
        write_atomic(paths[name], files[name], mode=0o640)
    return paths


def assemble(
    job: Optional[JobInfo],
    settings: "Settings",
    *,
    node: str,
    key: Optional[str] = None,
    classification: Optional[Mapping[str, Any]] = None,
    classifier: Optional[Classifier] = None,
    force: bool = False,
    now: Optional[float] = None,
) -> Optional[Assembled]:
    """Assemble and write the job's report if this node is the one to do it.

    Returns None when evidence is still missing (another node will finish)
    or another node already claimed the job.
    """
    from gcm_checks.report import build, spool
    from gcm_checks.report.render import to_text

    rs = settings.report
    key = key or (job.key if job else "")
    if job is None:
        job = spool.read_job(rs.spool_dir, key)
        if job is None:
            return None
    contribs = spool.read_contributions(rs.spool_dir, key)
    if not force and not spool.ready(job, contribs, rs.gather_timeout_s, now):
        return None
    job = with_job_facts(job, contribs)
    if not spool.claim(rs.spool_dir, key, node):
        # Already claimed: only a sweep may retry a claim whose assembler died.
        if not (force and spool.stuck(rs.spool_dir, key, stuck_after(rs), now) and spool.claim(rs.spool_dir, key, node, "claimed.retry")):
            return None
    notes: List[str] = []
    logs = build.collect_logs(job, rs)
    if classification is None and classifier is not None:
        try:
            classification = classifier(job, logs, contribs)
        except Exception as e:  # noqa: BLE001 - a classifier bug must not lose the report
            notes.append(f"classifier failed: {type(e).__name__}: {e}")
    run_status = None
    try:
        from gcm_checks.report.runlink import read_run_status

        run_status = read_run_status(job, settings)
    except Exception as e:  # noqa: BLE001 - gcm-run's status is a bonus, never the report's end
        notes.append(f"gcm-run status not read: {type(e).__name__}: {e}")
    report = build.build_report(job, contribs, classification=classification, logs=logs, generated_by=node, notes=notes,
                                now=now, run_status=run_status)
    # gcm-run's curves, stragglers and metrics (report/progress.py).
    from gcm_checks.report.progress import attach

    attach(report, job, rs.read_timeout_s)
    paths = write_report(report, settings)
    spool.mark_assembled(rs.spool_dir, key, node, paths["report.json"])
    done = Assembled(key, report, paths, notes=notes)
    if rs.copy_to_workdir and job.work_dir and job.uid is not None:
        from gcm_checks.safeio import write_user_file

        name = rs.workdir_name.format(job=spool.safe_name(key), ext="txt")
        try:
            done.user_copy = write_user_file(
                job.work_dir, name, to_text(report).encode("utf-8"),
                uid=job.uid, gid=job.gid if job.gid is not None else job.uid, timeout=rs.read_timeout_s,
                user=job.user,
            )
        except OSError as e:
            done.user_copy_error = f"{name} not written to {job.work_dir}: {e.strerror or e}"
    return done


# JobInfo fields one node may have learned from slurmctld for everyone: only
# the job's first node asks (one RPC per job, not per node), and shares the
# answer as evidence["job_facts"].
_SHARED_JOB_FACTS = ("name", "state", "start", "mail_user", "stdout", "stderr", "nodes", "partition")


def with_job_facts(job: JobInfo, contribs: Mapping[str, Any]) -> JobInfo:
    """``job`` with its empty fields filled from any node's ``job_facts``."""
    from dataclasses import replace

    fill: Dict[str, Any] = {}
    for c in contribs.values():
        facts = ((c or {}).get("evidence") or {}).get("job_facts") or {}
        for k in _SHARED_JOB_FACTS:
            v = facts.get(k)
            if v and not getattr(job, k, None) and k not in fill:
                fill[k] = tuple(v) if k == "nodes" else v
    return replace(job, **fill) if fill else job


def stuck_after(rs: "Report") -> float:
    # Long enough that a live assembler (log reads are bounded by
    # read_timeout_s) has certainly finished.
    return max(900.0, 10 * rs.read_timeout_s)
