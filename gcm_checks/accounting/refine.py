"""The batched refinement pass: one sacct call per interval for the cluster.

Why batched (issue 9): the epilog runs before accounting is final - the job is
COMPLETING, a time limit and an scancel both read exit 0, and OUT_OF_MEMORY,
NODE_FAIL, PREEMPTED, the steps and MaxRSS reach slurmdbd only afterwards.
Asking sacct from every epilog would turn every job end on every node into a
slurmdbd RPC. Instead one process per cluster (EpilogSlurmctld, a systemd
timer, or health mode on ``accounting.designated_node``; docs/accounting.md)
runs this pass, which

1. returns at once unless ``interval_s`` passed since the last pass (so it can
   be called from EpilogSlurmctld for every job at no cost), and holds a lock
   so two passes never overlap;
2. makes ONE sacct call for every job and step that ended since the last
   pass (minus ``overlap_s``, because slurmdbd lags slurmctld), and reads
   its output as a stream (``slurm.sacct_stream`` grouped per job by
   ``records.iter_records``, as ``failures`` does): memory does not grow with
   the number of rows, and a run with no report on this machine costs one
   set lookup, not three file opens;
3. defers runs that are not final yet - the placeholder row slurmdbd shows
   right after a job ends, or an End less than ``settle_s`` ago - to the
   next pass, by keeping the window open for them;
4. re-classifies each run that has a stored report with accounting's facts,
   writes the report again (atomically) with ``refined_from``/``refined_at``
   when the category changed, updates a notification still waiting in the
   outbox and releases it; one already sent is not sent again (the change is
   recorded in the report).
"""

from __future__ import annotations

import fcntl
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

if TYPE_CHECKING:
    from gcm_checks.config.types import Accounting, Settings


# fetch(since, until) -> sacct rows (a list or a stream); injectable so tests count calls.
Fetch = Callable[[float, float], Iterable[Dict[str, str]]]

# Run keys kept as examples in PassSummary.no_report; the count is exact.
NO_REPORT_EXAMPLES = 100


@dataclass
class PassSummary:
    ran: bool = False
    skipped: str = ""  # why no sacct call was made
    since: Optional[float] = None
    until: Optional[float] = None
    sacct_calls: int = 0
    runs_seen: int = 0
    refined: List[Dict[str, Any]] = field(default_factory=list)  # category changed
    confirmed: List[str] = field(default_factory=list)  # accounting added evidence, same category
    deferred: List[str] = field(default_factory=list)
    no_report: List[str] = field(default_factory=list)  # ended, no report here (the first NO_REPORT_EXAMPLES)
    no_report_count: int = 0
    released: List[str] = field(default_factory=list)  # outbox items updated and made due
    after_notification: List[str] = field(default_factory=list)  # category changed after a send
    errors: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__)


# --------------------------------------------------------------------------
# Pass state: last window end, runs deferred, runs refined


def read_state(path: str) -> Dict[str, Any]:
    from gcm_checks.jsonfile import read_json

    return read_json(path) or {}


def write_state(path: str, st: Mapping[str, Any]) -> None:
    from gcm_checks.jsonfile import write_json

    write_json(path, st, mode=0o644, sort_keys=True)


def due(st: Mapping[str, Any], acc: "Accounting", now: float) -> bool:
    last = st.get("last_pass_at")
    return last is None or now - float(last) >= acc.interval_s


def window(st: Mapping[str, Any], acc: "Accounting", now: float) -> Tuple[float, float]:
    """[since, until] for this pass: from the last window's end (or the oldest
    deferred run's end, whichever is earlier) minus the overlap, to now."""
    last = st.get("last_until")
    since = float(last) if last is not None else now - acc.lookback_s
    for info in (st.get("deferred") or {}).values():
        t = info.get("end") or info.get("seen")
        if t is not None:
            since = min(since, float(t))
    return since - (acc.overlap_s if last is not None else 0.0), now


class _Lock:
    """Non-blocking flock: a second pass while one runs returns at once."""

    def __init__(self, path: str):
        self.path = path
        self.fd: Optional[int] = None

    def acquire(self) -> bool:
        os.makedirs(os.path.dirname(self.path) or ".", mode=0o755, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self.fd = fd
        return True

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


# --------------------------------------------------------------------------
# Refining one report (pure)


def refine_report(
    report: Mapping[str, Any],
    record: Any,
    classification: Mapping[str, Any],
    *,
    now: float,
    notified: bool = False,
) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]]]:
    """The report with accounting's facts and the new classification.

    Returns (new report, change) where change is None when the category did
    not change. The earlier category is kept as ``refined_from`` (and the
    earlier classification under ``classification_at_epilog``), never lost.
    """
    import copy

    new = copy.deepcopy(dict(report))
    old = dict(report.get("classification") or {})
    cls = dict(classification)
    new["accounting"] = {"source": "sacct", "checked_at": _iso(now), "run": record.to_dict()}
    job = dict(new.get("job") or {})
    # Accounting's final word replaces the epilog's provisional state, and
    # fills what the epilog could not see.
    job["state"] = record.state_raw or record.state
    for k, v in (("partition", record.partition), ("start", record.start)):
        if v and not job.get(k):
            job[k] = v
    new["job"] = job
    ctx = dict(new.get("context") or {})
    if record.requeued:
        ctx["requeued"] = True
    new["context"] = ctx
    new["classification"] = cls
    from gcm_checks.accounting.records import fmt_duration
    from gcm_checks.report.build import outcome_dict

    before = dict(new.get("outcome") or {})
    outcome = outcome_dict(new, job_failed=bool(before.get("job_failed")) or record.failed,
                           elapsed=fmt_duration(record.elapsed_s) if record.elapsed_s is not None else "")
    if before.get("id") and before.get("id") != outcome.get("id"):
        outcome["refined_from"] = before.get("id")
    new["outcome"] = outcome
    change = None
    if old.get("category") != cls.get("category"):
        cls["refined_from"] = old.get("category")
        cls["refined_at"] = _iso(now)
        cls["refined_by"] = "accounting"
        if old:
            new["classification_at_epilog"] = {k: v for k, v in old.items() if not k.startswith("refined")}
        change = {"key": record.key, "from": old.get("category"), "to": cls.get("category")}
        if notified:
            # The mail went out with the earlier answer; notify_refined sends
            # at most one correction, and only for a changed failure cause.
            cls["notified_as"] = old.get("category")
            notes = list(new.get("notes") or [])
            notes.append(f"cause refined from {old.get('category')} to {cls.get('category')} after the "
                         f"notification was sent; a correction is sent only when the cause of a failure changed")
            new["notes"] = notes
            change["after_notification"] = True
    else:
        for k in ("refined_from", "refined_at", "refined_by", "notified_as"):
            if k in old:
                cls[k] = old[k]
    new["classification"] = cls
    return new, change


# The outbox hand-off lives in handoff.py; these names stay importable here.
from gcm_checks.accounting.handoff import (  # noqa: E402,F401
    cause_changed, hold_notifications, job_items, notify_refined, release_notifications,
)


# --------------------------------------------------------------------------
# The pass


def default_fetch(settings: "Settings", notes: Any = None) -> Fetch:
    from gcm_checks import slurm

    acc = settings.accounting

    def fetch(since: float, until: float) -> Iterable[Dict[str, str]]:
        # A stream: it raises SlurmError after the last row when sacct
        # failed or ran past its deadline (never a cut-off list taken as whole).
        return slurm.sacct_stream(since=since, until=until, sacct=acc.sacct, timeout=acc.timeout_s, notes=notes)

    return fetch


def stored_report_keys(settings: "Settings") -> Set[str]:
    """Names of the report directories on this machine, read once per pass:
    a run whose keys are not among them has no report, without three opens."""
    try:
        with os.scandir(settings.report.report_dir) as it:
            return {e.name for e in it}
    except OSError:
        return set()


def may_have_report(rec: Any, stored: Set[str]) -> bool:
    from gcm_checks.report.spool import safe_name

    keys = [rec.key, rec.job_id] + [f"{rec.job_id}.{i}" for i in range(1, max(rec.runs, rec.run + 1) + 1)]
    return any(safe_name(k) in stored for k in keys)


def load_report(settings: "Settings", key: str) -> Tuple[Optional[Dict[str, Any]], str]:
    from gcm_checks.report.assembly import report_paths

    from gcm_checks.jsonfile import read_json

    path = report_paths(settings, key)["report.json"]
    # A many-node job's report can outgrow the 4 MiB state bound; it is our own file.
    return read_json(path, max_bytes=64 << 20), path


# A report is written by the epilog, after the run ended and after the
# epilog's own checks (DCGM can take minutes): it belongs to the last run of
# the job that ended before it was written, within this lag.
EPILOG_LAG_S = 900.0


def report_belongs_to(report: Mapping[str, Any], rec: Any, sibling_ends: Sequence[float] = ()) -> bool:
    """Does this report describe this run? Keys alone are not enough: in
    Slurm 22.05 the epilog of a run ended by ``scontrol requeue`` already sees
    SLURM_JOB_RESTART_COUNT incremented, so run 0's report is keyed like run 1.
    Reports without an end time are trusted by key (older writers)."""
    end = (report.get("job") or {}).get("end")
    if end is None or rec.end is None:
        return True
    end = float(end)
    if not (rec.end - 5.0 <= end <= rec.end + EPILOG_LAG_S):
        return False
    # A later run that also ended before the report was written owns it.
    return not any(rec.end < e <= end + 5.0 for e in sibling_ends)


def find_report(settings: "Settings", rec: Any, sibling_ends: Sequence[float] = ()) -> Tuple[Optional[Dict[str, Any]], str]:
    """The stored report of this run: by its key, else by time among the
    job's other run keys (see report_belongs_to)."""
    keys = [rec.key] + [k for k in [rec.job_id] + [f"{rec.job_id}.{i}" for i in range(1, max(rec.runs, rec.run + 1) + 1)]
                        if k != rec.key]
    for i, key in enumerate(keys):
        report, path = load_report(settings, key)
        if report is None:
            continue
        if (report.get("job") or {}).get("end") is None:
            if i == 0:
                return report, path  # no time to check: trust the key, and only the key
            continue
        if i == 0 and _names_run(report, rec) and report_belongs_to(report, rec):
            # Its key and the run count the prolog recorded agree: the next
            # run ending seconds later (a requeue off a bad node) is no rival.
            return report, path
        if report_belongs_to(report, rec, sibling_ends):
            return report, path
    return None, ""


def _names_run(report: Mapping[str, Any], rec: Any) -> bool:
    job = report.get("job") or {}
    try:
        return int(job.get("restart_count") or 0) == int(rec.run) and "context" in report
    except (TypeError, ValueError):
        return False


def refine_pass(
    settings: "Settings",
    *,
    node: str = "",
    now: Optional[float] = None,
    fetch: Optional[Fetch] = None,
    force: bool = False,
    deliver: bool = True,
    deliver_budget_s: float = 10.0,
) -> PassSummary:
    """One pass; never raises (errors are in ``summary.errors``)."""
    acc = settings.accounting
    summary = PassSummary()
    if acc.designated_node and node and node != acc.designated_node and not force:
        summary.skipped = f"not the designated node ({acc.designated_node})"
        return summary
    now = time.time() if now is None else now
    path = settings.accounting_state_file
    lock = _Lock(path + ".lock")
    try:
        if not lock.acquire():
            summary.skipped = "another refinement pass is running"
            return summary
    except OSError as e:
        summary.skipped = f"cannot lock {path}.lock: {e}"
        summary.errors.append(summary.skipped)
        return summary
    try:
        st = read_state(path)
        if not force and not due(st, acc, now):
            summary.skipped = f"last pass {now - float(st['last_pass_at']):.0f}s ago (interval {acc.interval_s:.0f}s)"
            return summary
        since, until = window(st, acc, now)
        summary.since, summary.until = since, until
        fetch = fetch or default_fetch(settings)
        summary.sacct_calls += 1
        summary.ran = True
        try:
            # Streamed: sacct's failure may surface after some runs were
            # refined; those are remembered (st["refined"]), the window is not
            # advanced, and the next pass reads it again.
            _refine_rows(settings, acc, st, fetch(since, until), since, until, now, summary)
        except Exception as e:  # noqa: BLE001 - sacct down is "could not tell": keep the window for next time
            summary.errors.append(f"sacct: {e}")
            st["last_pass_at"] = now
            st["last_error"] = str(e)[:300]
            write_state(path, st)
            return summary
        st.update(last_pass_at=now, last_until=until, last_error="")
        write_state(path, st)
    finally:
        lock.release()
    if deliver and summary.released:
        try:
            from gcm_checks import notify

            notify.flush(settings, budget_s=deliver_budget_s, only_keys=summary.released, node=node)
        except Exception as e:  # noqa: BLE001 - delivery problems never fail the pass (rule 6)
            summary.errors.append(f"notify: {e}")
    return summary


def _refine_rows(settings: "Settings", acc: "Accounting", st: Dict[str, Any], rows: Iterable[Dict[str, str]],
                 since: float, until: float, now: float, summary: PassSummary) -> None:
    """Fold sacct's rows, one job's group at a time, into the pass. What
    was done is stored in ``st`` even when the stream fails half-way."""
    from gcm_checks.accounting.records import JobRecord, ended_between, iter_records

    waiting: Dict[str, Any] = dict(st.get("waiting") or {})
    deferred: Dict[str, Any] = dict(st.get("deferred") or {})
    refined: Dict[str, float] = {k: float(v) for k, v in (st.get("refined") or {}).items()}
    stored = stored_report_keys(settings)
    looked: Set[str] = set()  # runs found without a report this pass (only those that may still get one)
    try:
        for group in iter_records(rows):
            # A job's runs come together, so its sibling ends are in its group.
            ends = [r.end for r in group if r.end is not None and not r.placeholder]
            for rec in ended_between(group, since, until):
                summary.runs_seen += 1
                key = rec.key
                if rec.placeholder or (rec.end is not None and until - rec.end < acc.settle_s):
                    # Not final yet (facts #9): next pass, window kept open for it.
                    deferred.setdefault(key, {"seen": now, "end": rec.end if rec.end is not None else now})
                    summary.deferred.append(key)
                    continue
                deferred.pop(key, None)
                if key in refined:
                    continue
                siblings = [e for e in ends if e != rec.end]
                if stored and may_have_report(rec, stored) and _refine_one(settings, rec, now, summary, siblings=siblings):
                    refined[key] = now
                    waiting.pop(key, None)
                    continue
                _no_report(summary, key)
                # Only a run that ended less than report_wait_s ago can still
                # get its report (a multi-node one is assembled up to
                # report.gather_timeout_s later); an older one never will, and
                # remembering it would grow the state with the window.
                if key not in waiting and rec.end is not None and until - rec.end < acc.report_wait_s:
                    waiting[key] = {"seen": now, "record": rec.to_dict(), "siblings": siblings}
                    looked.add(key)
        # Runs whose report was not there yet: retried from the stored record,
        # no new sacct call, for report_wait_s.
        for key, info in list(waiting.items()):
            if key in looked:
                continue  # looked for a moment ago
            if _refine_one(settings, JobRecord.from_dict(info["record"]), now, summary, retry=True,
                           siblings=info.get("siblings") or ()):
                refined[key] = now
                waiting.pop(key)
            elif now - float(info.get("seen", now)) >= acc.report_wait_s:
                waiting.pop(key)
    finally:
        # Deferred runs that never became final (a lost job) are dropped after keep_s.
        st["deferred"] = {k: v for k, v in deferred.items() if now - float(v.get("seen", now)) < acc.keep_s}
        st["refined"] = {k: t for k, t in refined.items() if now - t < acc.keep_s}
        st["waiting"] = waiting


def _no_report(summary: PassSummary, key: str) -> None:
    summary.no_report_count += 1
    if len(summary.no_report) < NO_REPORT_EXAMPLES:
        summary.no_report.append(key)


def _refine_one(settings: "Settings", rec: Any, now: float, summary: PassSummary, retry: bool = False,
                siblings: Sequence[float] = ()) -> bool:
    """Refine one run's stored report. False when there is no report (yet)."""
    from gcm_checks.accounting.judge import judge_report
    from gcm_checks.report.assembly import write_report

    key = rec.key
    report, _path = find_report(settings, rec, siblings)
    if report is None:
        return False
    try:
        cls = judge_report(rec, report)
        notified = bool(job_items(settings, (report.get("job") or {}).get("key", key), "sent"))
        new, change = refine_report(report, rec, cls.to_dict(), now=now, notified=notified)
        write_report(new, settings)
    except Exception as e:  # noqa: BLE001 - one bad report must not stop the pass
        summary.errors.append(f"{key}: {type(e).__name__}: {e}")
        return True  # do not retry a report we cannot refine every pass
    if change:
        summary.refined.append(change)
        if change.get("after_notification"):
            summary.after_notification.append(key)
    else:
        summary.confirmed.append(key)
    try:
        summary.released.extend(notify_refined(settings, new, now=now, change=change))
    except Exception as e:  # noqa: BLE001 - rule 6: the report is on disk; delivery is best effort
        summary.errors.append(f"{key}: outbox: {e}")
    return True


__all__ = [
    "PassSummary", "refine_pass", "refine_report", "hold_notifications", "release_notifications",
    "read_state", "window", "due", "stored_report_keys", "may_have_report",
]
