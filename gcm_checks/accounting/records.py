"""sacct rows as typed job records: runs, steps, times, exit data. Pure.

Nothing is lost silently (issue 18): rows are grouped by job id whatever
their order (a step printed before its job row still belongs to it), a job
whose job row is missing is synthesised from its steps and marked
``synthesized``, and every row that cannot be used is counted in
``SacctNotes``. ``iter_records`` streams: it holds only the jobs whose rows
may still come, so memory does not grow with the number of rows.

``sacct --duplicates`` prints every run of a requeued job under the same
JobID, each followed by its steps; the n-th row of a JobID is run n, which is
what the epilog sees as SLURM_JOB_RESTART_COUNT and what ``JobInfo.key``
(``"123"``, ``"123.1"``) is built from, so a refined report is the right one.
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import asdict, dataclass
from collections import OrderedDict
from dataclasses import field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

# States after which sacct's fields no longer change (PENDING/RUNNING/
# COMPLETING/SUSPENDED/REQUEUE_HOLD... are not final).
FINAL_STATES = frozenset({
    "COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY",
    "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REQUEUED", "REVOKED",
})
FAILED_STATES = frozenset({"FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE"})


@dataclass(frozen=True)
class StepRecord:
    step_id: str  # "123.batch", "123.0", "123.extern"
    name: str
    state: str
    exit_code: Optional[int]
    signal: Optional[int]
    max_rss_bytes: Optional[int]
    nodes: str

    @property
    def is_job_script(self) -> bool:
        # The batch step is the job script itself (its failure is the job's
        # ExitCode); the extern step is Slurm's own. Neither is "a step failed".
        return self.step_id.endswith((".batch", ".extern"))

    @property
    def failed(self) -> bool:
        # The extern step and a batch step cancelled by the end of the job
        # (0:15 after a time limit) are the job ending, not a step failing.
        if self.state in ("FAILED", "OUT_OF_MEMORY", "NODE_FAIL"):
            return True
        return bool(self.exit_code) and self.state not in ("CANCELLED",)

    def describe(self) -> str:
        ec = f"{self.exit_code if self.exit_code is not None else '?'}:{self.signal or 0}"
        rss = f" MaxRSS={human_bytes(self.max_rss_bytes)}" if self.max_rss_bytes else ""
        return f"step {self.step_id} ({self.name}) {self.state} exit {ec}{rss}"


@dataclass(frozen=True)
class JobRecord:
    job_id: str
    run: int = 0  # 0 = first run; n = after n requeues
    name: str = ""
    user: str = ""
    uid: Optional[int] = None
    partition: str = ""
    state: str = ""  # first word, upper case: CANCELLED
    state_raw: str = ""  # as sacct printed it: "CANCELLED by 0"
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    derived_exit_code: Optional[int] = None
    derived_signal: Optional[int] = None
    reason: str = ""
    elapsed_s: Optional[int] = None
    timelimit_s: Optional[int] = None  # None = UNLIMITED or unknown
    max_rss_bytes: Optional[int] = None  # max over steps
    nodes: str = ""  # Slurm hostlist expression, "None assigned" -> ""
    submit: Optional[float] = None
    start: Optional[float] = None
    end: Optional[float] = None
    work_dir: str = ""
    placeholder: bool = False  # slurmdbd's not-yet-final row (facts #9)
    runs: int = 1  # how many runs of this job sacct knows
    steps: Tuple[StepRecord, ...] = ()
    synthesized: bool = False  # no job row: built from the steps (noted in SacctNotes)

    @property
    def key(self) -> str:
        """Same as ``gcm_checks.report.JobInfo.key``."""
        return f"{self.job_id}.{self.run}" if self.run else str(self.job_id)

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES and self.end is not None and not self.placeholder

    @property
    def requeued(self) -> bool:
        return self.state == "REQUEUED"

    @property
    def failed(self) -> bool:
        if self.state in FAILED_STATES:
            return True
        if self.state in ("CANCELLED", "REQUEUED"):
            return True  # ended by someone else before it finished
        return bool(self.exit_code) or bool(self.signal) or bool(self.derived_exit_code) or bool(self.failed_steps)

    @property
    def failed_steps(self) -> Tuple[StepRecord, ...]:
        return tuple(s for s in self.steps if s.failed and not s.is_job_script)

    @property
    def exit_status(self) -> str:
        if self.exit_code is None:
            return ""
        return f"{self.exit_code}:{self.signal or 0}"

    def summary(self) -> str:
        """One line for evidence: what accounting says about this run."""
        parts = [f"State={self.state_raw or self.state}", f"ExitCode={self.exit_status or '?'}"]
        if self.derived_exit_code is not None:
            parts.append(f"DerivedExitCode={self.derived_exit_code}:{self.derived_signal or 0}")
        if self.reason and self.reason != "None":
            parts.append(f"Reason={self.reason}")
        if self.elapsed_s is not None:
            parts.append(f"Elapsed={fmt_duration(self.elapsed_s)}")
        if self.timelimit_s is not None:
            parts.append(f"Timelimit={fmt_duration(self.timelimit_s)}")
        if self.max_rss_bytes:
            parts.append(f"MaxRSS={human_bytes(self.max_rss_bytes)}")
        if self.runs > 1:
            parts.append(f"run {self.run + 1} of {self.runs}")
        return f"job {self.key}: " + " ".join(parts)

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["key"] = self.key
        d["final"] = self.final
        d["steps"] = [asdict(s) for s in self.steps]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "JobRecord":
        names = set(cls.__dataclass_fields__)
        kw = {k: v for k, v in d.items() if k in names}
        kw["steps"] = tuple(StepRecord(**s) for s in d.get("steps") or ())
        return cls(**kw)


# --------------------------------------------------------------------------
# Field parsers


_EXIT_CACHE: Dict[str, Tuple[Optional[int], Optional[int]]] = {"": (None, None), "0:0": (0, 0)}


def parse_exit(value: str) -> Tuple[Optional[int], Optional[int]]:
    """``"3:0"`` -> (3, 0); ``""`` -> (None, None)."""
    hit = _EXIT_CACHE.get(value)
    if hit is not None:
        return hit
    out = _parse_exit(value)
    if len(_EXIT_CACHE) < 4096:  # a few hundred distinct values in a week: cache them
        _EXIT_CACHE[value] = out
    return out


def _parse_exit(value: str) -> Tuple[Optional[int], Optional[int]]:
    code, _, sig = (value or "").strip().partition(":")
    try:
        return int(code), int(sig or 0)
    except ValueError:
        return None, None


_DURATION = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")


def parse_duration(value: str) -> Optional[int]:
    """sacct's ``[D-][HH:]MM:SS[.mmm]`` -> seconds; UNLIMITED/Partition_Limit/"" -> None."""
    v = (value or "").strip()
    if len(v) == 8 and v[2] == ":" and v[5] == ":" and v[:2].isdigit() and v[3:5].isdigit() and v[6:].isdigit():
        return int(v[:2]) * 3600 + int(v[3:5]) * 60 + int(v[6:])  # HH:MM:SS, the common case
    m = _DURATION.match(v)
    if not m:
        return None
    days, hours, mins, secs = m.groups()
    if hours is None:
        # "MM:SS" or "MM:SS.mmm" (TotalCPU style): minutes and seconds.
        return int(days or 0) * 86400 + int(mins) * 60 + int(float(secs))
    return int(days or 0) * 86400 + int(hours) * 3600 + int(mins) * 60 + int(float(secs))


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


def parse_mem(value: str) -> Optional[int]:
    """``6040K`` -> bytes; ``""``/``0`` -> None."""
    if not value:
        return None
    if value[-1] in _UNITS and value[:-1].isdigit():
        return int(value[:-1]) * _UNITS[value[-1]] or None
    m = re.match(r"^\s*(\d+(?:\.\d+)?)([KMGTP]?)\s*$", value or "")
    if not m:
        return None
    n = int(float(m.group(1)) * _UNITS[m.group(2)])
    return n or None


_HOUR_CACHE: Dict[Tuple[str, bool], float] = {}
_RE_SACCT_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)$")


def parse_time(value: str, *, utc: bool = False) -> Optional[float]:
    """sacct timestamps are local time (``2026-11-29T22:11:54``); Unknown/None -> None.

    A week of a fleet's sacct has a million stamps: the epoch of each hour is
    computed once (mktime, so DST is right at hour boundaries) and the minutes
    and seconds added - strptime per stamp cost more than everything else.
    """
    v = (value or "").strip()
    if len(v) != 19 or v[13] != ":" or v[10] != "T":
        return None
    key = (v[:13], utc)
    base = _HOUR_CACHE.get(key)
    if base is None:
        m = _RE_SACCT_TIME.match(v)
        if not m:
            return None
        try:
            st = time.strptime(v[:13], "%Y-%m-%dT%H")
        except ValueError:
            return None
        base = float(calendar.timegm(st)) if utc else time.mktime(st)
        if len(_HOUR_CACHE) > 100_000:
            _HOUR_CACHE.clear()
        _HOUR_CACHE[key] = base
    mi, se = v[14:16], v[17:19]
    if not (mi.isdigit() and se.isdigit()):
        return None
    return base + int(mi) * 60 + int(se)


def _int(v: str) -> Optional[int]:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _state(raw: str) -> str:
    return (raw or "").strip().split(" ")[0].upper().rstrip("+")


# --------------------------------------------------------------------------
# Rows -> records


def _step(row: Mapping[str, str]) -> StepRecord:
    code, sig = parse_exit(row.get("ExitCode", ""))
    return StepRecord(
        step_id=row.get("JobID", ""),
        name=row.get("JobName", ""),
        state=_state(row.get("State", "")),
        exit_code=code,
        signal=sig,
        max_rss_bytes=parse_mem(row.get("MaxRSS", "")),
        nodes=row.get("NodeList", ""),
    )


def _job(row: Mapping[str, str], run: int, utc: bool, is_placeholder_row: Any) -> Dict[str, Any]:
    code, sig = parse_exit(row.get("ExitCode", ""))
    dcode, dsig = parse_exit(row.get("DerivedExitCode", ""))
    nodes = row.get("NodeList", "")
    return dict(
        job_id=row.get("JobID", ""),
        run=run,
        name=row.get("JobName", ""),
        user=row.get("User", ""),
        uid=_int(row.get("UID", "")),
        partition=row.get("Partition", ""),
        state=_state(row.get("State", "")),
        state_raw=(row.get("State", "") or "").strip(),
        exit_code=code,
        signal=sig,
        derived_exit_code=dcode,
        derived_signal=dsig,
        reason=row.get("Reason", ""),
        elapsed_s=parse_duration(row.get("Elapsed", "")),
        timelimit_s=parse_duration(row.get("Timelimit", "")),
        max_rss_bytes=parse_mem(row.get("MaxRSS", "")),
        nodes="" if nodes.startswith("None") else nodes,
        submit=parse_time(row.get("Submit", ""), utc=utc),
        start=parse_time(row.get("Start", ""), utc=utc),
        end=parse_time(row.get("End", ""), utc=utc),
        work_dir=row.get("WorkDir", ""),
        placeholder=is_placeholder_row(row),
        steps=[],
    )


@dataclass
class SacctNotes:
    """What a sacct read could not use as printed: shown in the output's notes."""

    lines: int = 0
    rows: int = 0
    reassembled: int = 0  # records split by a newline inside a field, joined back
    dropped: Dict[str, int] = field(default_factory=dict)  # reason -> rows
    synthesized: int = 0  # jobs with steps but no job row
    synthesized_examples: List[str] = field(default_factory=list)

    def drop(self, reason: str, n: int = 1) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + n

    @property
    def dropped_rows(self) -> int:
        return sum(self.dropped.values())

    def to_list(self) -> List[str]:
        out = []
        if self.reassembled:
            out.append(f"{self.reassembled} sacct record(s) split by a newline inside a field were joined back")
        for reason, k in sorted(self.dropped.items()):
            out.append(f"{k} sacct line(s) dropped: {reason}")
        if self.synthesized:
            ex = ", ".join(self.synthesized_examples)
            out.append(f"{self.synthesized} job(s) had steps but no job row; their job record was built from the "
                       f"steps (e.g. {ex})")
        return out

    def to_dict(self) -> Dict[str, Any]:
        return {"lines": self.lines, "rows": self.rows, "reassembled": self.reassembled,
                "dropped": dict(self.dropped), "dropped_rows": self.dropped_rows, "synthesized": self.synthesized}


def _base_id(jid: str) -> str:
    dot = jid.find(".")
    return jid if dot < 0 else jid[:dot]


# Worst first: the state a synthesised job takes from its steps.
_STEP_STATE_ORDER = ("NODE_FAIL", "OUT_OF_MEMORY", "FAILED", "TIMEOUT", "CANCELLED", "COMPLETED")


def _synthesize(jid: str, steps: List[StepRecord], rows: List[Mapping[str, str]], utc: bool) -> Dict[str, Any]:
    """A job record from its steps alone (the job row is missing)."""
    batch = next((s for s in steps if s.step_id.endswith(".batch")), None)
    states = {s.state for s in steps}
    state = next((st for st in _STEP_STATE_ORDER if st in states), steps[0].state if steps else "")
    code, sig = (batch.exit_code, batch.signal) if batch is not None else (None, None)
    starts = [t for t in (parse_time(r.get("Start", ""), utc=utc) for r in rows) if t is not None]
    ends = [t for t in (parse_time(r.get("End", ""), utc=utc) for r in rows) if t is not None]
    nodes = (batch.nodes if batch is not None else "") or next((s.nodes for s in steps if s.nodes), "")
    return dict(job_id=jid, run=0, state=state, state_raw=state, exit_code=code, signal=sig,
                nodes="" if nodes.startswith("None") else nodes, start=min(starts) if starts else None,
                end=max(ends) if ends else None, synthesized=True, steps=[])


def _build_group(jid: str, rows: List[Mapping[str, str]], utc: bool, notes: Optional[SacctNotes],
                 is_placeholder_row: Any) -> List[JobRecord]:
    """One job id's rows, in the order sacct printed them -> one record per run."""
    runs: List[Dict[str, Any]] = []
    early: List[StepRecord] = []  # steps printed before any job row of theirs
    step_rows: List[Mapping[str, str]] = []
    for row in rows:
        if "." in row.get("JobID", ""):
            st = _step(row)
            if runs:
                runs[-1]["steps"].append(st)
            else:
                early.append(st)
                step_rows.append(row)
            continue
        rec = _job(row, len(runs), utc, is_placeholder_row)
        if early and not runs:
            rec["steps"].extend(early)  # a step row printed before its job row
            early = []
        runs.append(rec)
    if early:
        rec = _synthesize(jid, early, step_rows, utc)
        rec["steps"] = early
        runs.append(rec)
        if notes is not None:
            notes.synthesized += 1
            if len(notes.synthesized_examples) < 5:
                notes.synthesized_examples.append(jid)
    out = []
    for rec in runs:
        steps = tuple(rec.pop("steps"))
        rss = max((s.max_rss_bytes or 0 for s in steps), default=0) or rec.get("max_rss_bytes")
        rec.update(steps=steps, max_rss_bytes=rss or None, runs=len(runs))
        out.append(JobRecord(**rec))
    return out


def iter_records(
    rows: Iterable[Mapping[str, str]],
    *,
    utc: bool = False,
    notes: Optional[SacctNotes] = None,
    open_jobs: Optional[int] = 4096,
) -> Iterator[List[JobRecord]]:
    """Job rows and their step rows -> the runs of each job (a list per job
    id), streaming.

    Rows are grouped by job id whatever their order. A job's group is closed
    when ``open_jobs`` other job ids have been seen since its last row (sacct
    prints a job's rows together, so this only waits out local disorder);
    ``None`` keeps every group open to the end (any order at all, memory
    grows with the jobs). Groups come out in the order their job was first
    seen.
    """
    from gcm_checks.slurm.parse import is_placeholder_row

    groups: "OrderedDict[str, List[Mapping[str, str]]]" = OrderedDict()
    for row in rows:
        if notes is not None:
            notes.rows += 1
        jid = row.get("JobID", "")
        if not jid:
            if notes is not None:
                notes.drop("a row without a JobID")
            continue
        base = _base_id(jid)
        g = groups.get(base)
        if g is None:
            groups[base] = [row]
            if open_jobs is not None and len(groups) > open_jobs:
                old, grows = groups.popitem(last=False)
                yield _build_group(old, grows, utc, notes, is_placeholder_row)
        else:
            g.append(row)
            if open_jobs is not None:
                groups.move_to_end(base)
    for base, grows in groups.items():
        yield _build_group(base, grows, utc, notes, is_placeholder_row)


def group_rows(rows: Iterable[Mapping[str, str]], *, utc: bool = False,
               notes: Optional[SacctNotes] = None) -> List[JobRecord]:
    """Job rows and their step rows -> one JobRecord per run, whatever the
    rows' order (see ``iter_records``), in the order jobs were first seen."""
    return [rec for runs in iter_records(rows, utc=utc, notes=notes, open_jobs=None) for rec in runs]


def ended_between(records: Iterable[JobRecord], since: float, until: float) -> List[JobRecord]:
    """Runs that ended in [since, until]; a placeholder (End not final) is kept
    so the caller can defer it."""
    out = []
    for r in records:
        if r.placeholder:
            out.append(r)
        elif r.final and r.end is not None and since <= r.end <= until:
            out.append(r)
    return out


# --------------------------------------------------------------------------
# Formatting


def fmt_duration(s: Optional[float]) -> str:
    if s is None:
        return "?"
    s = int(s)
    d, rem = divmod(s, 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    hms = f"{h:02d}:{m:02d}:{sec:02d}"
    return f"{d}-{hms}" if d else hms


def human_bytes(n: Optional[int]) -> str:
    if not n:
        return "0"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n = n / 1024  # type: ignore[assignment]
    return str(n)


__all__ = [
    "FINAL_STATES", "JobRecord", "SacctNotes", "StepRecord", "group_rows", "iter_records", "ended_between",
    "parse_duration", "parse_exit", "parse_mem", "parse_time", "fmt_duration", "human_bytes",
]
