"""sacct rows as typed job records: runs, steps, times, exit data. Pure.

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
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

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


def parse_exit(value: str) -> Tuple[Optional[int], Optional[int]]:
    """``"3:0"`` -> (3, 0); ``""`` -> (None, None)."""
    code, _, sig = (value or "").strip().partition(":")
    try:
        return int(code), int(sig or 0)
    except ValueError:
        return None, None


_DURATION = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")


def parse_duration(value: str) -> Optional[int]:
    """sacct's ``[D-][HH:]MM:SS[.mmm]`` -> seconds; UNLIMITED/Partition_Limit/"" -> None."""
    v = (value or "").strip()
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
    m = re.match(r"^\s*(\d+(?:\.\d+)?)([KMGTP]?)\s*$", value or "")
    if not m:
        return None
    n = int(float(m.group(1)) * _UNITS[m.group(2)])
    return n or None


def parse_time(value: str, *, utc: bool = False) -> Optional[float]:
    """sacct timestamps are local time (``2026-11-29T22:11:54``); Unknown/None -> None."""
    v = (value or "").strip()
    try:
        st = time.strptime(v, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None
    return float(calendar.timegm(st)) if utc else time.mktime(st)


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
        placeholder=is_placeholder_row(dict(row)),
        steps=[],
    )


def group_rows(rows: Iterable[Mapping[str, str]], *, utc: bool = False) -> List[JobRecord]:
    """Job rows and their step rows -> one JobRecord per run, in sacct's order."""
    from gcm_checks.slurm import is_placeholder_row

    building: List[Dict[str, Any]] = []
    latest: Dict[str, Dict[str, Any]] = {}  # job id -> its latest run, for steps
    seen_runs: Dict[str, int] = {}
    for row in rows:
        jid = row.get("JobID", "")
        if not jid:
            continue
        if "." in jid:
            parent = latest.get(jid.split(".", 1)[0])
            if parent is not None:
                parent["steps"].append(_step(row))
            continue
        run = seen_runs.get(jid, 0)
        seen_runs[jid] = run + 1
        rec = _job(row, run, utc, is_placeholder_row)
        building.append(rec)
        latest[jid] = rec
    out = []
    for rec in building:
        steps = tuple(rec.pop("steps"))
        rss = max((s.max_rss_bytes or 0 for s in steps), default=0) or rec["max_rss_bytes"]
        rec.update(steps=steps, max_rss_bytes=rss or None, runs=seen_runs[rec["job_id"]])
        out.append(JobRecord(**rec))
    return out


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
    "FINAL_STATES", "JobRecord", "StepRecord", "group_rows", "ended_between",
    "parse_duration", "parse_exit", "parse_mem", "parse_time", "fmt_duration", "human_bytes",
]
