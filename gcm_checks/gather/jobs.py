"""Which Slurm jobs own the GPU processes on this node (no slurmctld call).

A GPU process belongs to a running job when

* its ``/proc/<pid>/cgroup`` names ``job_<id>`` under Slurm's hierarchy
  (cgroup v1: ``/slurm/uid_1000/job_12/step_0``, ``/slurm_node1/uid_0/job_12``;
  v2: ``/system.slice/slurmstepd.scope/job_12/step_0/user/task_0``) and that
  job's epilog has not run yet (it leaves ``<state_dir>/jobs/ended/<job>.<node>``:
  a process that survived its job's end - unkillable, in D state - stays in
  the job's cgroup and is exactly the leftover to catch), or
* it runs on a GPU that a job's prolog recorded as that job's allocation
  (``<state_dir>/jobs/<job>.<node>.json``, removed by its epilog): the rule for
  proctrack/linuxproc, where jobs have no cgroup.

So health (``HealthCheckNodeState=ANY``) does not call a busy node's training
run "leftover processes", and a prolog on a shared node judges only the GPUs
given to the job that is starting (``SLURM_JOB_GPUS``, else
``CUDA_VISIBLE_DEVICES``; both hold GPU indices in the prolog, facts note).

Only read when a GPU has processes: a healthy idle node pays nothing.
"""

from __future__ import annotations

import os
import re
from typing import Dict, FrozenSet, Iterable, Mapping, NamedTuple, Optional

_JOB_RE = re.compile(r"/job_(\d+)(?:/|$)")
CGROUP_MAX = 16 * 1024  # a cgroup file is a few lines; never read more
RECORDS_MAX = 4096  # job records read at most (a node runs far fewer jobs at once)


class JobView(NamedTuple):
    """A NamedTuple, not a dataclass: every real prolog imports this module
    (it records the job's GPUs), and a frozen dataclass costs ~0.5 ms at import."""

    job_id: Optional[str] = None  # the job whose prolog is running, if any
    job_gpus: Optional[FrozenSet[int]] = None  # the GPUs given to it; None = the whole node
    owners: Mapping[int, str] = {}  # pid -> job id (cgroup); never mutated
    allocations: Mapping[str, FrozenSet[int]] = {}  # other job -> GPU indices; never mutated
    # Jobs named by a cgroup whose epilog has already run: their processes
    # (unkillable survivors) are leftovers.
    ended: FrozenSet[str] = frozenset()

    def in_scope(self, gpu_index: int) -> bool:
        return self.job_gpus is None or gpu_index in self.job_gpus

    def owner(self, pid: int, gpu_index: int) -> Optional[str]:
        """The running job a process on ``gpu_index`` belongs to, or None (a leftover)."""
        job = self.owners.get(pid)
        if job and job not in self.ended:
            return job
        for other, gpus in self.allocations.items():
            # The starting job's own record must not excuse what is already on
            # its GPUs before it ran anything.
            if other != self.job_id and gpu_index in gpus:
                return other
        return None


def parse_gpu_list(text: Optional[str]) -> Optional[FrozenSet[int]]:
    """``"0,1,3"`` / ``"0-3,6"`` -> indices; None when empty or not indices (UUIDs, MIG ids)."""
    if not text or not text.strip():
        return None
    out = set()
    for part in text.strip().split(","):
        part = part.strip()
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        a, b = int(lo), int(hi or lo)
        if b < a or b - a > 4096:
            return None
        out.update(range(a, b + 1))
    return frozenset(out)


def job_of_cgroup(text: str) -> Optional[str]:
    """The Slurm job id in a ``/proc/<pid>/cgroup`` text, or None."""
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        if "slurm" not in path:
            continue
        m = _JOB_RE.search(path)
        if m:
            return m.group(1)
    return None


def read_owner(root: str, pid: int) -> Optional[str]:
    try:
        fd = os.open(os.path.join(root, "proc", str(int(pid)), "cgroup"), os.O_RDONLY)
    except OSError:
        return None  # gone, or not visible: cannot say it is a job's
    try:
        text = os.read(fd, CGROUP_MAX).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)
    return job_of_cgroup(text)


def read_allocations(state_dir: str, node: str) -> Dict[str, FrozenSet[int]]:
    """GPU allocations the prologs of still-running jobs recorded on this node."""
    from gcm_checks.jsonfile import read_json

    jdir = os.path.join(state_dir, "jobs")
    try:
        names = sorted(os.listdir(jdir))[:RECORDS_MAX]
    except OSError:
        return {}
    out: Dict[str, FrozenSet[int]] = {}
    for name in names:
        if not name.endswith(".json"):
            continue
        rec = read_json(os.path.join(jdir, name)) or {}
        gpus = rec.get("gpus")
        if rec.get("node") not in (None, node) or not isinstance(gpus, list):
            continue
        idx = frozenset(g for g in gpus if isinstance(g, int) and not isinstance(g, bool))
        if idx and rec.get("job_id") is not None:
            out[str(rec["job_id"])] = idx
    return out


def starting_job(env: Mapping[str, str]) -> "tuple[Optional[str], Optional[FrozenSet[int]]]":
    """(job id, its GPUs) when running for a job (prolog), else (None, None)."""
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    if not job:
        return None, None
    gpus = parse_gpu_list(env.get("SLURM_JOB_GPUS"))
    if gpus is None:
        gpus = parse_gpu_list(env.get("CUDA_VISIBLE_DEVICES"))
    return job, gpus


def gather(root: str, pids: Iterable[int], state_dir: Optional[str], node: str,
           env: Optional[Mapping[str, str]] = None) -> JobView:
    job, gpus = starting_job(os.environ if env is None else env)
    owners = {}
    for pid in pids:
        j = read_owner(root, pid)
        if j:
            owners[int(pid)] = j
    allocations = read_allocations(state_dir, node) if state_dir else {}
    ended = frozenset()
    if state_dir:
        from gcm_checks.state import job_ended

        ended = frozenset(j for j in set(owners.values()) if j != job and job_ended(state_dir, j, node))
    return JobView(job, gpus, owners, allocations, ended)
