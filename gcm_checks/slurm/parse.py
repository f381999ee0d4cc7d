"""What Slurm prints, read back: ``scontrol show ... -o`` records and
``sacct --parsable2`` rows. Pure functions, tested from captured text.

``SlurmError`` lives here too: every module of the package raises it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from gcm_checks.slurm.reasons import GCM_PREFIX


class SlurmError(Exception):
    """slurmctld unreachable, scontrol failed, timed out or is missing.

    Callers turn this into a log line and an ``unknown``, never a drain.
    """


# --------------------------------------------------------------------------
# Parsed views
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeInfo:
    name: str
    state: str  # e.g. "IDLE+DRAIN", "MIXED", "DOWN*+DRAIN"
    reason: Optional[str] = None  # without the trailing " [user@time]"
    reason_user: Optional[str] = None
    available_features: Tuple[str, ...] = ()
    active_features: Tuple[str, ...] = ()
    extra: Optional[str] = None
    comment: Optional[str] = None

    @property
    def drained(self) -> bool:
        # DRAIN covers DRAINING and DRAINED; scontrol prints e.g. IDLE+DRAIN.
        return "DRAIN" in self.state.upper()

    @property
    def gcm_owned(self) -> bool:
        return bool(self.reason) and self.reason.startswith(GCM_PREFIX)  # type: ignore[union-attr]


# Keys whose values are free text and may contain spaces and "=". A following
# "Word=" only ends such a value when Word is a key Slurm actually prints.
_FREE_TEXT = {"Reason", "Comment", "Extra", "OS", "JobName", "Command", "WorkDir", "StdOut", "StdErr", "StdIn", "AdminComment", "SystemComment"}
_KNOWN_KEYS = set(
    """NodeName Arch CoresPerSocket CPUAlloc CPUEfctv CPUTot CPULoad AvailableFeatures ActiveFeatures
    Gres GresDrain GresUsed NodeAddr NodeHostName Port Version OS RealMemory AllocMem FreeMem Sockets
    Boards State ThreadsPerCore TmpDisk Weight Owner MCS_label Partitions BootTime SlurmdStartTime
    LastBusyTime ResumeAfterTime CfgTRES AllocTRES CapWatts CurrentWatts AveWatts ExtSensorsJoules
    ExtSensorsWatts ExtSensorsTemp Reason Comment Extra NextState Reboot InstanceId InstanceType
    LowestJoules ConsumedJoules CoreSpecCount CPUSpecList MemSpecLimit
    JobId JobName UserId GroupId MCS_label Priority Nice Account QOS JobState Dependency Requeue
    Restarts BatchFlag ExitCode DerivedExitCode RunTime TimeLimit TimeMin SubmitTime EligibleTime
    AccrueTime StartTime EndTime Deadline PreemptEligibleTime PreemptTime SuspendTime SecsPreSuspend
    LastSchedEval Scheduler Partition AllocNode:Sid ReqNodeList ExcNodeList NodeList BatchHost
    NumNodes NumCPUs NumTasks CPUs/Task ReqB:S:C:T TRES Socks/Node NtasksPerN:B:S:C CoreSpec
    MinCPUsNode MinMemoryNode MinMemoryCPU MinTmpDiskNode Features DelayBoot OverSubscribe Contiguous
    Licenses Network Command WorkDir StdErr StdIn StdOut Power TresPerNode TresPerJob TresPerTask
    CpusPerTres MemPerTres MailUser MailType ArrayJobId ArrayTaskId HetJobId HetJobOffset
    AdminComment SystemComment Container ContainerID Prolog Epilog KillOPRunning""".split()
)
_KEY_RE = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=")
_REASON_TAIL_RE = re.compile(r"\s*\[([^\]@\s]+)@([^\]]*)\]\s*$")


def parse_key_values(line: str) -> Dict[str, str]:
    """Parse one ``scontrol show ... -o`` record into key -> raw value."""
    line = line.strip()
    marks: List[Tuple[str, int, int]] = []  # key, start of match, start of value
    prev_key = None
    for m in _KEY_RE.finditer(line):
        key = m.group(1)
        if prev_key in _FREE_TEXT and key not in _KNOWN_KEYS:
            continue  # "Reason=expected gpus=8" stays one value
        marks.append((key, m.start(), m.end()))
        prev_key = key
    out: Dict[str, str] = {}
    for i, (key, _start, vstart) in enumerate(marks):
        vend = marks[i + 1][1] if i + 1 < len(marks) else len(line)
        out[key] = line[vstart:vend].strip()
    return out


def _none_if_null(v: Optional[str]) -> Optional[str]:
    if v is None or v in ("", "(null)", "None"):
        return None
    return v


def _features(v: Optional[str]) -> Tuple[str, ...]:
    v = _none_if_null(v)
    if not v:
        return ()
    return tuple(f for f in (x.strip() for x in v.split(",")) if f)


def parse_nodes(text: str) -> List[NodeInfo]:
    """Every node in ``scontrol show node -o [EXPR]`` output."""
    return [_node_from_line(ln) for ln in text.splitlines() if ln.strip().startswith("NodeName=")]


def parse_node(text: str) -> NodeInfo:
    """Parse ``scontrol show node -o NODE`` output (one line per node)."""
    line = next((ln for ln in text.splitlines() if ln.strip().startswith("NodeName=")), "")
    if not line:
        raise SlurmError(f"no NodeName in scontrol output: {text.strip()[:200]!r}")
    return _node_from_line(line)


def _node_from_line(line: str) -> NodeInfo:
    kv = parse_key_values(line)
    reason = _none_if_null(kv.get("Reason"))
    reason_user = None
    if reason:
        m = _REASON_TAIL_RE.search(reason)
        if m:
            reason_user = m.group(1)
            reason = reason[: m.start()].strip() or None
    return NodeInfo(
        name=kv.get("NodeName", ""),
        state=kv.get("State", ""),
        reason=reason,
        reason_user=reason_user,
        available_features=_features(kv.get("AvailableFeatures")),
        active_features=_features(kv.get("ActiveFeatures")),
        extra=_none_if_null(kv.get("Extra")),
        comment=_none_if_null(kv.get("Comment")),
    )


@dataclass(frozen=True)
class CensusEntry:
    """One node as the mass-drain brake counts it."""

    name: str
    partitions: Tuple[str, ...]
    drained: bool
    reason: Optional[str]
    since: Optional[float]  # when the reason was set (epoch), when Slurm says


def parse_census(text: str) -> List[CensusEntry]:
    """Every node in ``scontrol show node -o`` output as the brake counts it."""
    return [_census_from_line(ln) for ln in text.splitlines() if ln.strip().startswith("NodeName=")]


def _census_from_line(line: str) -> CensusEntry:
    import datetime as dt

    kv = parse_key_values(line)
    info = _node_from_line(line)
    since = None
    m = _REASON_TAIL_RE.search(kv.get("Reason") or "")
    if m:
        try:
            since = dt.datetime.strptime(m.group(2), "%Y-%m-%dT%H:%M:%S").timestamp()  # slurmctld local time
        except ValueError:
            since = None
    parts = tuple(p for p in (_none_if_null(kv.get("Partitions")) or "").split(",") if p)
    return CensusEntry(info.name, parts, info.drained, info.reason, since)


def parse_sacct(text: str, fields: Sequence[str], notes: Any = None) -> List[Dict[str, str]]:
    """Rows of ``sacct --parsable2 --noheader -o <fields>`` as dicts.

    See ``iter_sacct_rows``; ``notes`` (``accounting.records.SacctNotes``)
    counts what was reassembled or dropped.
    """
    return list(iter_sacct_rows(text.splitlines(), fields, notes))


# A record starts with a job id: 123, 123_4, 123_[1-5], 123+0, then a step
# suffix (.batch, .extern, .0). Anything else at a line start continues the
# previous record: a newline inside JobName or WorkDir (issue 18).
_RECORD_START_RE = r"^\d+(?:_(?:\d+|\[[^\]|]*\]))?(?:\+\d+)?(?:\.[A-Za-z0-9_-]+)?\|"  # compiled on first use:
# this module is on the prolog path (rule 7)


def iter_sacct_rows(lines: Iterable[str], fields: Sequence[str], notes: Any = None) -> Iterator[Dict[str, str]]:
    """Rows of ``sacct --parsable2 --noheader`` output, streaming, losing nothing silently.

    * A header line (someone forgot --noheader) is skipped.
    * A '|' inside a job name gives too many columns: the extra ones are
      joined back into JobName, so the fixed fields stay right.
    * A newline inside a field splits one record over several lines: the
      lines that do not start like a record (a job id and '|') are joined to
      the record before them with "\\n" and it is kept when the columns then
      add up ("reassembled").
    * Anything else that cannot be read is dropped and counted, with its
      reason, in ``notes`` (``notes.drop(reason)``), never silently.
    """
    record_start = re.compile(_RECORD_START_RE).match  # re caches the compiled pattern
    names = list(fields)
    n = len(names)
    jobname = names.index("JobName") if "JobName" in names else -1
    reassemble = bool(names) and names[0] == "JobID"
    pending: Optional[str] = None
    parts = 1

    def finish(rec: str, joined: int) -> Optional[Dict[str, str]]:
        cols = rec.split("|")
        if cols == names:
            return None
        if len(cols) > n and jobname >= 0:
            extra = len(cols) - n
            cols = cols[:jobname] + ["|".join(cols[jobname:jobname + extra + 1])] + cols[jobname + extra + 1:]
        if len(cols) != n:
            if notes is not None:
                notes.drop(f"{len(cols)} columns instead of {n}" + (" after joining lines" if joined > 1 else ""))
            return None
        if joined > 1 and notes is not None:
            notes.reassembled += 1
        return dict(zip(names, cols))

    for ln in lines:
        if notes is not None:
            notes.lines += 1
        if reassemble and pending is not None and not record_start(ln):
            have = pending.count("|") + 1
            if ln == "" and have >= n:
                continue  # a blank line between records
            if have < n or "|" not in ln:
                pending += "\n" + ln
                parts += 1
                continue
        if pending is not None:
            row = finish(pending, parts)
            if row is not None:
                yield row
            pending = None
        if not ln.strip():
            continue
        if reassemble and not record_start(ln) and ln.split("|") != names:
            if notes is not None:
                notes.drop("a line that is not a sacct record")
            continue
        pending, parts = ln, 1
    if pending is not None:
        row = finish(pending, parts)
        if row is not None:
            yield row


def is_placeholder_row(row: Dict[str, str]) -> bool:
    """The row slurmdbd shows for ~1 s after a job ends (facts #9):
    ``JobName=allocation``, ``User=root``, empty WorkDir. Not final yet."""
    if "." in row.get("JobID", ""):
        return False
    if row.get("JobName") != "allocation":
        return False
    if "User" in row and row.get("User") not in ("root", ""):
        return False
    return not row.get("WorkDir", "")
