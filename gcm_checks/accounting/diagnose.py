"""``why JOBID`` and ``failures``: gather (sacct, scontrol, logs, stored
evidence), then judge with the pure modules (judge.py, trends.py).

Both work for jobs gcm-checks never saw at epilog time: sacct is the floor,
everything else adds evidence when it is there. Every source that could not be
read is named in ``sources`` / ``notes`` - "could not tell" is said, not hidden.
"""

from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from gcm_checks.accounting.records import JobRecord, fmt_duration, group_rows, parse_exit, parse_time
# render_why moved to accounting/render.py; importable here as before.
from gcm_checks.accounting.render import render_why  # noqa: F401

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

_JOB_ID = re.compile(r"^\d+(?:_\d+)?(?:\+\d+)?$")

# Injectable edges (tests use fakes; defaults call gcm_checks.slurm).
SacctJob = Callable[[str], List[Dict[str, str]]]
ShowJob = Callable[[str], Dict[str, str]]


def _default_sacct_job(settings: Optional["Settings"]) -> SacctJob:
    from gcm_checks import slurm

    acc = _or_builtin(settings).accounting
    return lambda job_id: slurm.sacct_job(job_id, sacct=acc.sacct, timeout=acc.timeout_s)


def _default_show_job(settings: Optional["Settings"]) -> ShowJob:
    from gcm_checks import slurm

    sl = _or_builtin(settings).slurm
    backend = slurm.ScontrolBackend(scontrol=sl.scontrol, timeout_s=sl.timeout_s)
    return backend.show_job


def _or_builtin(settings: Optional["Settings"]) -> "Settings":
    """``why``/``failures`` called as a library without settings (tests) use
    the built-in defaults for the sacct/scontrol calls and look for no report."""
    if settings is not None:
        return settings
    from gcm_checks import config

    return config.builtin()


# --------------------------------------------------------------------------
# scontrol show job -> a JobRecord (while slurmctld still knows the job)


def record_from_scontrol(d: Mapping[str, str]) -> JobRecord:
    code, sig = parse_exit(d.get("ExitCode", ""))
    dcode, dsig = parse_exit(d.get("DerivedExitCode", ""))
    uid_m = re.search(r"\((\d+)\)", d.get("UserId", ""))
    from gcm_checks.accounting.records import parse_duration

    state = (d.get("JobState", "") or "").upper()
    end = parse_time(d.get("EndTime", ""))
    return JobRecord(
        job_id=str(d.get("JobId", "")),
        run=int(d.get("Restarts", "0") or 0) if str(d.get("Restarts", "0")).isdigit() else 0,
        name=d.get("JobName", ""),
        user=d.get("UserId", "").split("(")[0],
        uid=int(uid_m.group(1)) if uid_m else None,
        partition=d.get("Partition", ""),
        state=state,
        state_raw=state,
        exit_code=code,
        signal=sig,
        derived_exit_code=dcode,
        derived_signal=dsig,
        reason=d.get("Reason", ""),
        elapsed_s=parse_duration(d.get("RunTime", "")),
        timelimit_s=parse_duration(d.get("TimeLimit", "")),
        nodes="" if d.get("NodeList", "(null)") in ("(null)", "") else d.get("NodeList", ""),
        submit=parse_time(d.get("SubmitTime", "")),
        start=parse_time(d.get("StartTime", "")),
        end=end,
        work_dir=d.get("WorkDir", ""),
    )


def pick_run(records: Sequence[JobRecord], run: Optional[int]) -> Optional[JobRecord]:
    if not records:
        return None
    if run is None:
        return records[-1]
    for r in records:
        if r.run == run:
            return r
    return None


# --------------------------------------------------------------------------
# Logs, read root-safely


def log_paths(sc: Mapping[str, str], record: Optional[JobRecord], report: Optional[Mapping[str, Any]]) -> List[Tuple[str, str]]:
    """(name, path) of the job's logs: scontrol's expanded StdOut/StdErr while
    the job is known; else the paths the stored report names; else sbatch's
    default ``slurm-<id>.out`` in the work dir (sacct 22.05 has no StdOut)."""
    out: List[Tuple[str, str]] = []
    so, se = sc.get("StdOut", ""), sc.get("StdErr", "")
    if so:
        out.append(("stdout", so))
    if se and se != so:
        out.append(("stderr", se))
    if out:
        return out
    for log in (report or {}).get("logs") or ():
        if log.get("path"):
            out.append((str(log.get("name") or "log"), str(log["path"])))
    if out:
        return out
    if record is not None and record.work_dir:
        jid = record.job_id.split("_")[0]
        out.append(("stdout", os.path.join(record.work_dir, f"slurm-{jid}.out")))
    return out


def read_logs(
    paths: Sequence[Tuple[str, str]],
    *,
    job_uid: Optional[int],
    job_gid: Optional[int],
    max_bytes: int,
    timeout: float,
) -> Tuple[List[Any], List[Dict[str, Any]]]:
    """LogTexts plus what happened to each path.

    As root we read as the job's user and insist the file is theirs
    (``safeio.read_tail``: no symlink followed, privileges dropped). As anyone
    else the kernel's own permission checks are the rule: a user reads the
    logs they can read, nothing more.
    """
    from gcm_checks import safeio
    from gcm_checks.text import clean_text
    from gcm_checks.classify import LogText

    texts: List[Any] = []
    info: List[Dict[str, Any]] = []
    as_root = os.geteuid() == 0
    for name, path in paths:
        uid = job_uid if as_root else None
        if as_root and job_uid is None:
            info.append({"name": name, "path": path, "read": False, "note": "job owner unknown; not read as root"})
            continue
        tail = safeio.read_tail(path, uid=uid, gid=job_gid if as_root else None, max_bytes=max_bytes, timeout=timeout)
        if tail.error:
            info.append({"name": name, "path": path, "read": False, "note": tail.error})
            continue
        data = tail.data
        if tail.truncated:
            nl = data.find(b"\n")
            data = data[nl + 1:] if 0 <= nl < len(data) - 1 else data
        texts.append(LogText(name, clean_text(data)))
        info.append({"name": name, "path": path, "read": True, "bytes": len(tail.data), "size": tail.size,
                     "truncated": tail.truncated})
    return texts, info


# --------------------------------------------------------------------------
# why


def explain(
    job_id: str,
    settings: Optional["Settings"] = None,
    *,
    run: Optional[int] = None,
    sacct_job: Optional[SacctJob] = None,
    show_job: Optional[ShowJob] = None,
    max_log_bytes: int = 256 * 1024,
) -> Dict[str, Any]:
    """Everything ``gcm-checks why`` prints. Never raises for a missing source."""
    from gcm_checks.accounting.judge import classify_run, node_inputs, report_logs
    from gcm_checks.accounting.refine import find_report
    from gcm_checks.classify.taxonomy import CATEGORIES

    job_id = str(job_id).strip()
    if not _JOB_ID.match(job_id):
        # It ends up in sacct's and scontrol's argv: ids only, never options.
        return {"job_id": job_id[:40], "found": False, "sources": {},
                "notes": ["not a Slurm job id (expected 1234, 1234_5 or 1234+1)"]}
    sources: Dict[str, Any] = {}
    notes: List[str] = []
    records: List[JobRecord] = []
    try:
        rows = (sacct_job or _default_sacct_job(settings))(job_id)
        records = [r for r in group_rows(rows) if r.job_id == job_id or r.job_id.split("_")[0] == job_id]
        placeholder = any(r.placeholder for r in records)
        sources["sacct"] = f"{len(records)} run(s)" + (" (accounting not final yet)" if placeholder else "")
    except Exception as e:  # noqa: BLE001 - sacct missing/down: we can still answer from scontrol
        sources["sacct"] = f"unavailable: {e}"
    sc: Dict[str, str] = {}
    try:
        sc = dict((show_job or _default_show_job(settings))(job_id))
        sources["scontrol"] = f"JobState={sc.get('JobState', '?')}"
    except Exception as e:  # noqa: BLE001 - past MinJobAge the job is gone from slurmctld
        sources["scontrol"] = f"unavailable: {str(e).splitlines()[0][:200] if str(e) else type(e).__name__}"
    record = pick_run(records, run)
    if record is None or (record.placeholder and sc):
        if sc:
            record = record_from_scontrol(sc)
        elif run is not None and records:
            return {"job_id": job_id, "found": False, "sources": sources,
                    "notes": [f"no run {run} of job {job_id}; runs 0..{len(records) - 1} are known"]}
        else:
            return {"job_id": job_id, "found": False, "sources": sources,
                    "notes": [f"job {job_id} is not known to sacct or scontrol"]}
    if sc and not sc.get("JobState", "").upper() in ("PENDING", "RUNNING", "CONFIGURING", "SUSPENDED") and record.state in ("", "RUNNING", "PENDING"):
        # slurmdbd lags: trust slurmctld's final word when accounting is behind.
        record = record_from_scontrol(sc)
    if sc.get("Reason") and (not record.reason or record.reason == "None"):
        from dataclasses import replace

        record = replace(record, reason=sc["Reason"])

    siblings = [r.end for r in records if r.end is not None and r.end != record.end and not r.placeholder]
    report, report_path = find_report(settings, record, siblings) if settings is not None else (None, "")
    if report is None and settings is not None:
        report = _spool_report(settings, record.key)
    sources["report"] = report_path if report is not None and report_path else "none"

    uid = record.uid
    if uid is None and sc.get("UserId"):
        m = re.search(r"\((\d+)\)", sc["UserId"])
        uid = int(m.group(1)) if m else None
    gid = None
    m = re.search(r"\((\d+)\)", sc.get("GroupId", ""))
    if m:
        gid = int(m.group(1))
    paths = log_paths(sc, record, report)
    logs, log_info = read_logs(paths, job_uid=uid, job_gid=gid, max_bytes=max_log_bytes,
                               timeout=_or_builtin(settings).report.read_timeout_s)
    sources["logs"] = log_info
    if not logs and report is not None:
        logs = report_logs(report)
        if logs:
            notes.append("logs not readable now; used the tails stored in the report")
    elif report is not None:
        # The report's earlier evidence (kernel lines, XIDs) still counts.
        logs = [l for l in report_logs(report) if l.source == "earlier evidence"] + logs
    ev = node_inputs((report or {}).get("nodes") or ())
    cls_d = classify_run(record, logs, ev).to_dict()
    if report is not None and report.get("accounting") and (report.get("classification") or {}).get("category"):
        # The refined report already weighed the same facts: say what it says.
        cls_d = dict(report["classification"])
    cat = CATEGORIES.get(str(cls_d.get("category")), CATEGORIES["unknown"])
    outcome = run_outcome(record, report, cls_d)
    if record.state in ("RUNNING", "PENDING", "COMPLETING", "CONFIGURING", "SUSPENDED"):
        notes.append(f"job is {record.state}: this is a provisional answer")
    return {
        "job_id": job_id,
        "found": True,
        "key": record.key,
        "job": {
            "id": record.job_id, "run": record.run, "runs": record.runs, "name": record.name, "user": record.user,
            "partition": record.partition, "state": record.state_raw or record.state, "exit_status": record.exit_status,
            "derived_exit_code": record.derived_exit_code, "reason": record.reason, "nodes": record.nodes,
            "elapsed": fmt_duration(record.elapsed_s) if record.elapsed_s is not None else None,
            "timelimit": fmt_duration(record.timelimit_s) if record.timelimit_s is not None else None,
            "max_rss_bytes": record.max_rss_bytes, "work_dir": record.work_dir,
        },
        "steps": [s.__dict__ for s in record.steps],
        "outcome": outcome,
        "classification": cls_d,
        "next_step": outcome.get("action") or cat.next_step,
        "runs": other_runs(settings, records, record),
        "node_evidence": {k: len(v) for k, v in ev.items()},
        "sources": sources,
        "notes": notes,
    }


def run_outcome(record: JobRecord, report: Optional[Mapping[str, Any]], cls: Mapping[str, Any]) -> Dict[str, Any]:
    """The run's outcome as the report states it, with accounting's final
    state: ``why``, ``failures`` and the refined report use this same path."""
    from gcm_checks.report.build import outcome_dict
    from gcm_checks.report.outcome import decide

    elapsed = fmt_duration(record.elapsed_s) if record.elapsed_s is not None else ""
    final = record.state_raw or record.state
    # slurmdbd can record a failed step before it updates the job's
    # DerivedExitCode: a failed step is the derived failure either way.
    derived = record.derived_exit_code or next((s.exit_code or 1 for s in record.failed_steps), None)
    if report is not None and report.get("job"):
        doc = dict(report, classification=dict(cls), job=dict(report.get("job") or {}, state=final or
                                                                (report.get("job") or {}).get("state", "")))
        ctx = dict(report.get("context") or {})
        if record.requeued:
            ctx["requeued"] = True
        if derived:
            ctx["derived_exit_code"] = derived
        doc["context"] = ctx
        doc.pop("accounting", None)  # this record is the accounting that counts here
        return outcome_dict(doc, elapsed=elapsed)
    o = decide(state=final, exit_code=record.exit_code, signal=record.signal, classification=cls,
               derived_exit_code=derived, requeued=record.requeued, elapsed=elapsed)
    return dict(o.to_dict(), failed=o.mailed)


def other_runs(settings: "Settings", records: Sequence[JobRecord], record: JobRecord) -> List[Dict[str, Any]]:
    """Every run of a requeued job, each with what happened to it, so ``why``
    can say "moved off node2 (faulty), then completed on node1"."""
    from gcm_checks.accounting.refine import find_report

    if len(records) < 2:
        return []
    ends = [r.end for r in records if r.end is not None and not r.placeholder]
    out = []
    for r in records:
        rep = find_report(settings, r, [e for e in ends if e != r.end])[0] if settings is not None else None
        o = run_outcome(r, rep, (rep or {}).get("classification") or {})
        out.append({"run": r.run, "key": r.key, "state": r.state_raw or r.state, "nodes": r.nodes,
                    "outcome": o.get("id"), "headline": o.get("headline"),
                    "drains": [d.get("held_reason") or d.get("reason") for d in (rep or {}).get("drains") or ()
                               if isinstance(d, Mapping) and d.get("action", "drained") in ("drained", "already")],
                    "this": r.key == record.key})
    return out


def _spool_report(settings: "Settings", key: str) -> Optional[Dict[str, Any]]:
    """Node evidence from the report spool when no report was assembled yet."""
    try:
        from gcm_checks.report.spool import read_contributions

        contribs = read_contributions(settings.report.spool_dir, key)
    except Exception:  # noqa: BLE001
        return None
    if not contribs:
        return None
    return {"nodes": [{"node": n, "evidence": c.get("evidence") or {}} for n, c in contribs.items()]}


# --------------------------------------------------------------------------
# failures


_REL = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: float) -> float:
    """``7d``, ``12h``, ``30m``, ``2w`` or an ISO date/time (local) -> epoch."""
    t = text.strip()
    m = _REL.match(t)
    if m:
        return now - float(m.group(1)) * _UNIT_S[m.group(2)]
    for fmt in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d"):
        try:
            return time.mktime(time.strptime(t, fmt))
        except ValueError:
            continue
    raise ValueError(f"cannot read {text!r}: use 7d, 12h, 30m, 2w or YYYY-MM-DD[THH:MM[:SS]]")


def failure_trends(
    settings: Optional["Settings"] = None,
    *,
    since: float,
    until: float,
    partition: Optional[str] = None,
    fetch: Optional[Callable[..., Iterable[Dict[str, str]]]] = None,
    top: int = 10,
) -> Dict[str, Any]:
    """One sacct call for the whole range, streamed; stored reports where present.

    Memory does not grow with the number of rows (issue 17): sacct's output
    is read line by line (``slurm.sacct_stream``), grouped per job as it
    comes (``records.iter_records``), and each run is folded into the
    aggregate at once. Node lists are expanded only for the failures that
    count against nodes (``trends.aggregate``).
    """
    from gcm_checks import slurm
    from gcm_checks.accounting import trends
    from gcm_checks.accounting.records import SacctNotes, iter_records
    from gcm_checks.accounting.refine import find_report, may_have_report, stored_report_keys

    acc = _or_builtin(settings).accounting
    notes = SacctNotes()
    if fetch is None:
        def fetch(**kw: Any) -> Iterable[Dict[str, str]]:
            return slurm.sacct_stream(sacct=acc.sacct, timeout=acc.timeout_s, notes=notes, **kw)
    rows = fetch(since=since, until=until, partition=partition)
    stored = stored_report_keys(settings) if settings is not None else set()
    by_fields: Dict[Tuple[Any, ...], Tuple[Dict[str, Any], Dict[str, Any]]] = {}
    suspect: List[str] = []

    def judged(rec: Any, report: Optional[Mapping[str, Any]]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """(classification, outcome): the same outcome the report and `why` give."""
        if report is not None:
            c = trends.classify_for_trends(rec, report)
            return c, run_outcome(rec, report, c)
        # Without a report the verdict depends on these fields alone (judge.judge_report):
        # a week has a few hundred distinct combinations, not a million.
        k = (rec.state_raw or rec.state, rec.exit_code, rec.signal, rec.derived_exit_code, rec.reason,
             rec.requeued, bool(rec.failed_steps))
        hit = by_fields.get(k)
        if hit is None:
            c = trends.classify_for_trends(rec, None)
            hit = (c, run_outcome(rec, None, c))
            if len(by_fields) < 10_000:
                by_fields[k] = hit
        return hit

    def runs() -> Iterable[Dict[str, Any]]:
        for group in iter_records(rows, notes=notes):
            ends = [r.end for r in group if r.end is not None and not r.placeholder]
            for rec in group:
                # ended_between, less the placeholders (not final: the next pass counts them)
                if rec.placeholder or not rec.final or rec.end is None or not since <= rec.end <= until:
                    continue
                siblings = [e for e in ends if e != rec.end]
                report = None
                if stored and may_have_report(rec, stored):
                    report = find_report(settings, rec, siblings)[0]
                c, o = judged(rec, report)
                if o.get("id") == "suspect" and len(suspect) < 1000:
                    suspect.append(rec.key)
                # A completed, cancelled or requeued run is not a failure,
                # whatever its category says (aggregate counts it as a run).
                if not o.get("failure"):
                    yield {"key": rec.key, "failed": False, "partition": rec.partition}
                    continue
                c = dict(c)
                if c.get("category") in ("success", "unknown", "cancelled_user") and o.get("id") != "failed":
                    # e.g. a TIMEOUT sacct alone could not name: the outcome is the cause's best name
                    c["category"] = {"timeout": "timeout_walltime", "node_failure": "node_failure",
                                     "preempted": "preempted", "out_of_memory": "host_oom"}.get(o["id"], c["category"])
                yield dict(c, key=rec.key, nodes_expr=rec.nodes, failed=True, partition=rec.partition,
                           outcome=o.get("id"))

    doc = trends.aggregate(runs(), top=top)
    doc["suspect_completions"] = suspect
    doc["window"] = {"since": _iso_local(since), "until": _iso_local(until), "partition": partition or ""}
    doc["sacct_calls"] = 1
    doc["notes"] = notes.to_list()
    doc["sacct"] = notes.to_dict()
    return doc


def _iso_local(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))
