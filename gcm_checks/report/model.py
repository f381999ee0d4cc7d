"""What a job report is made of: the job, the settings, the report dict.

The epilog builds a ``JobInfo`` (``JobInfo.from_env`` reads Slurm's epilog
environment) and hands it to ``gcm_checks.report``. Everything here is plain
data, cheap to import.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, fields
from typing import Any, Dict, List, Mapping, Optional, Tuple

SCHEMA = "gcm-checks/job-report"
SCHEMA_VERSION = 1

# Slurm job states that mean "this did not go as the user wanted".
FAILED_STATES = frozenset(
    {"FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED"}
)


@dataclass(frozen=True)
class JobInfo:
    job_id: str
    user: str = ""
    uid: Optional[int] = None
    gid: Optional[int] = None
    name: str = ""
    partition: str = ""
    cluster: str = ""
    nodes: Tuple[str, ...] = ()
    start: Optional[float] = None  # epoch seconds
    end: Optional[float] = None
    exit_status: str = ""  # Slurm's "exit:signal", e.g. "3:0", "0:9"
    state: str = ""  # e.g. FAILED, TIMEOUT, CANCELLED, COMPLETED (from scontrol)
    work_dir: str = ""
    stdout: str = ""  # expanded path
    stderr: str = ""  # expanded path; "" when it is stdout
    mail_user: str = ""  # the job's --mail-user, when Slurm exposes it
    comment: str = ""
    extra: str = ""  # --extra (22.05+)
    restart_count: int = 0  # a requeued job keeps its id; reports must not collide

    @property
    def key(self) -> str:
        """Unique per run of a job: the id plus the requeue count."""
        return f"{self.job_id}.{self.restart_count}" if self.restart_count else str(self.job_id)

    @property
    def elapsed_s(self) -> Optional[float]:
        if self.start is None or self.end is None:
            return None
        return max(0.0, self.end - self.start)

    @property
    def exit_code(self) -> Optional[int]:
        code, _, _ = self.exit_status.partition(":")
        return int(code) if code.strip().isdigit() else None

    @property
    def exit_signal(self) -> Optional[int]:
        _, _, sig = self.exit_status.partition(":")
        return int(sig) if sig.strip().isdigit() else None

    def failed(self) -> bool:
        """Did the job end badly, by its own account (exit status or state)?"""
        if self.state.split(" ")[0].upper() in FAILED_STATES:
            return True
        return bool(self.exit_code) or bool(self.exit_signal)

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["nodes"] = list(self.nodes)
        d["key"] = self.key
        d["elapsed_s"] = self.elapsed_s
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "JobInfo":
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        kw["nodes"] = tuple(kw.get("nodes") or ())
        return cls(**kw)

    @classmethod
    def from_env(cls, env: Optional[Mapping[str, str]] = None, **overrides: Any) -> "JobInfo":
        """Read the epilog environment of Slurm 22.05 (notes/slurm-22.05-facts.md).

        Things the slurmd epilog environment lacks (job name, state, start
        time, --mail-user) come from ``scontrol show job`` in the caller
        (JobName, JobState/Reason, StartTime, MailUser) and go in ``overrides``.
        """
        e = os.environ if env is None else env
        job_id = e.get("SLURM_JOB_ID") or e.get("SLURM_JOBID") or ""
        user = e.get("SLURM_JOB_USER", "")
        name = e.get("SLURM_JOB_NAME", "")
        nodes = tuple(expand_hostlist(e.get("SLURM_JOB_NODELIST") or e.get("SLURM_NODELIST") or ""))
        first = nodes[0] if nodes else e.get("SLURMD_NODENAME", "")
        stdout = expand_stdio(e.get("SLURM_JOB_STDOUT", ""), job_id=job_id, user=user, name=name, node=first)
        stderr = expand_stdio(e.get("SLURM_JOB_STDERR", ""), job_id=job_id, user=user, name=name, node=first)
        kw: Dict[str, Any] = dict(
            job_id=job_id,
            user=user,
            uid=_int(e.get("SLURM_JOB_UID")),
            gid=_int(e.get("SLURM_JOB_GID")),
            name=name,
            partition=e.get("SLURM_JOB_PARTITION", ""),
            cluster=e.get("SLURM_CLUSTER_NAME", ""),
            nodes=nodes,
            exit_status=_exit_status(e),
            work_dir=e.get("SLURM_JOB_WORK_DIR", ""),
            stdout=stdout,
            stderr="" if stderr == stdout else stderr,
            mail_user=e.get("SLURM_JOB_MAIL_USER", ""),
            comment=e.get("SLURM_JOB_COMMENT", ""),
            extra=e.get("SLURM_JOB_EXTRA", ""),
            restart_count=_int(e.get("SLURM_JOB_RESTART_COUNT")) or 0,
        )
        kw.update(overrides)
        if "nodes" in overrides:
            kw["nodes"] = tuple(overrides["nodes"])
        return cls(**kw)


def _int(v: Optional[str]) -> Optional[int]:
    try:
        return int(v) if v not in (None, "") else None
    except ValueError:
        return None


def _exit_status(e: Mapping[str, str]) -> str:
    # EXIT_CODE2 is already "exit:signal"; EXIT_CODE is a raw wait status.
    if e.get("SLURM_JOB_EXIT_CODE2"):
        return e["SLURM_JOB_EXIT_CODE2"]
    raw = _int(e.get("SLURM_JOB_EXIT_CODE"))
    if raw is None:
        return ""
    return f"{(raw >> 8) & 0xFF}:{raw & 0x7F}"


def expand_hostlist(expr: str) -> List[str]:
    """``node[01-03,7],gpu5`` -> node01 node02 node03 node7 gpu5 (Slurm syntax).

    In Python so the epilog need not call ``scontrol show hostnames``.
    """
    from gcm_checks.hostlist import expand

    return expand(expr) if expr else []


def expand_stdio(pattern: str, *, job_id: str, user: str, name: str, node: str) -> str:
    """Expand the filename patterns Slurm leaves in SLURM_JOB_STDOUT.

    Slurm hands the epilog the pattern unexpanded (``/x/%x-%j.out``). We
    expand the common ones; an array job's %A/%a fall back to the job id.
    """
    if not pattern or "%" not in pattern:
        return pattern
    table = {"j": job_id, "J": job_id, "A": job_id, "a": "", "u": user, "x": name, "N": node, "n": "0", "t": "0", "s": "batch", "%": "%"}

    def sub(m: "re.Match[str]") -> str:
        width, letter = m.group(1), m.group(2)
        val = table.get(letter)
        if val is None:
            return m.group(0)
        # Slurm pads to a single-digit width; a user's "%999999999j" once
        # made the root epilog allocate 24 GB before the OOM killer came.
        return val.zfill(min(int(width[-3:]), MAX_PAD)) if width and val.isdigit() else val

    return re.sub(r"%(\d*)([A-Za-z%])", sub, pattern[:MAX_PATH])[:MAX_PATH]


MAX_PAD = 10  # digits of zero padding in a stdio pattern
MAX_PATH = 4096  # PATH_MAX


def node_evidence(evidence: Mapping[str, Any], max_items: int) -> Dict[str, Any]:
    """Normalise one node's evidence into JSON-able, bounded form.

    Accepts CheckResult objects (anything with ``to_dict``) in any list, so the
    epilog can pass what its suite run (gcm_checks.suite) returned.
    """
    out: Dict[str, Any] = {}
    cut: Dict[str, int] = {}
    for k, v in evidence.items():
        v = _jsonable(v)
        if isinstance(v, list) and len(v) > max_items:
            cut[k] = len(v)
            v = v[:max_items]
        out[k] = v
    if cut:
        out["_truncated"] = {k: f"first {max_items} of {n} shown" for k, n in cut.items()}
    return out


def _jsonable(v: Any) -> Any:
    if hasattr(v, "to_dict"):
        return _jsonable(v.to_dict())
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if hasattr(v, "value") and isinstance(getattr(v, "value"), (str, int)):
        return v.value  # enums
    return str(v)


def report_failed(report: Mapping[str, Any]) -> bool:
    """The notification policy's notion of failure (``on_failure``): the
    run's outcome is one the user is told about by default."""
    outcome = report.get("outcome") or {}
    if "mailed" in outcome:
        return bool(outcome["mailed"])  # the outcome's "mailed by default" (report/outcome.py)
    return bool(outcome.get("failed"))


__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "JobInfo",
    "expand_hostlist",
    "expand_stdio",
    "node_evidence",
    "report_failed",
]
