"""What happened to one run of a job (the outcome), apart from why (the cause).

The cause is the classifier's category with its evidence and responsibility
(``gcm_checks.classify``). The outcome is what the researcher needs first:
did the run finish, can its results be trusted, must they do anything. The
report headline, the mail subject, whether the user is mailed by default,
``why`` and ``failures`` all come from ``decide`` here, so they cannot
disagree (issue 13). Pure: plain data in, plain data out, no I/O.

The table (docs/reports.md carries it for users)::

    id            mailed  failure  headline (+ the one action)
    completed     no      no       Completed.
    suspect       yes     no       Completed, but GPU 3 on node2 raised XID 79 during the job: check the results.
    failed        yes     yes      Failed: <cause> (your code | not your code). <next step>
    out_of_memory yes     yes      Ran out of GPU/host memory (your code). <next step>
    timeout       yes     yes      Hit its time limit. <next step>
    node_failure  yes     yes      A node of the job failed (not your code). Resubmit.
    preempted     yes     yes      Preempted by the scheduler (not your code). Resubmit.
    cancelled     no      no       Cancelled (by <who>). Nothing to fix if intended.
    requeued      no      no       Moved off a faulty node and requeued; nothing to do.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

# id -> (mailed by default, counts as a failure, subject word)
OUTCOMES: Dict[str, tuple] = {
    "completed": (False, False, "completed"),
    "suspect": (True, False, "completed, results suspect"),
    "failed": (True, True, "FAILED"),
    "out_of_memory": (True, True, "FAILED: out of memory"),
    "timeout": (True, True, "hit its time limit"),
    "node_failure": (True, True, "FAILED: node failure"),
    "preempted": (True, True, "preempted"),
    "cancelled": (False, False, "cancelled"),
    "requeued": (False, False, "requeued"),
}
MAILED_BY_DEFAULT = frozenset(k for k, v in OUTCOMES.items() if v[0])
FAILURES = frozenset(k for k, v in OUTCOMES.items() if v[1])

# Blame words for the headline and subject: "not your code" tells a
# researcher in two words that resubmitting is the fix (issue 17, 5).
NOT_YOUR_CODE = "not your code"
YOUR_CODE = "your code"

_OOM_CATEGORIES = {"gpu_oom": "GPU", "host_oom": "host"}
# Classifier categories that describe no failure of the job.
_NOT_FAILURE_CATEGORIES = frozenset({"success", "unknown", "cancelled_user"})
_DRAINING = ("drained", "already")  # a drain Slurm holds because of our finding


@dataclass(frozen=True)
class Fault:
    """One hardware finding on a node of the job, inside its window."""

    node: str
    what: str  # "GPU 3 (00000000:5D:00.0)" or a check subject
    xid: Optional[int] = None
    name: str = ""  # "GPU has fallen off the bus"
    check: str = ""  # the failing check id when not an XID
    action: str = ""  # NVIDIA's recommended action, when known

    def describe(self) -> str:
        where = f"{self.what} on {self.node}" if self.what else self.node
        if self.xid is not None:
            return f"{where} raised XID {self.xid}{f' ({self.name})' if self.name else ''}"
        if self.check == "drain":
            return f"{where} was drained by gcm-checks{f' ({self.name})' if self.name else ''}"
        return f"{where} failed {self.check}{f': {self.name}' if self.name else ''}"


@dataclass(frozen=True)
class Outcome:
    id: str
    headline: str
    action: str
    mailed: bool  # by default, i.e. under the on_failure policy
    failure: bool  # counted by `gcm-checks failures`
    blame: str = ""  # NOT_YOUR_CODE | YOUR_CODE | ""
    state: str = ""  # the final Slurm state used
    cancelled_by: str = ""
    faults: List[Fault] = field(default_factory=list)

    def subject(self, job_id: Any, name: str = "") -> str:
        word = OUTCOMES[self.id][2]
        blame = f" ({self.blame})" if self.blame and self.id not in ("completed", "cancelled", "requeued") else ""
        return f"[gcm] job {job_id}{f' ({name})' if name else ''} {word}{blame}"

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["faults"] = [asdict(f) | {"text": f.describe()} for f in self.faults]
        return d


def _state_word(state: str) -> str:
    return (state or "").strip().split(" ")[0].upper().rstrip("+")


def final_state(job_state: str, reason: str = "", exit_code: Optional[int] = None, signal: Optional[int] = None) -> str:
    """The job's final Slurm state from what the epilog can see.

    ``scontrol show job`` in the epilog says COMPLETING (facts note); its
    Reason tells a time limit apart. A cancel reads exit 0 and Reason=None
    there, so it looks COMPLETED until the refinement pass reads sacct.
    """
    st = _state_word(job_state)
    if st and st not in ("COMPLETING", "RUNNING", "CONFIGURING"):
        return (job_state or "").strip()
    r = (reason or "").strip().lower()
    if r == "timelimit":
        return "TIMEOUT"
    if exit_code or signal:
        return "FAILED"
    if r in ("nodedown", "node_fail"):
        return "NODE_FAIL"
    return "COMPLETED"


def faults_of(nodes: Iterable[Mapping[str, Any]], job_gpus: Optional[Sequence[int]] = None) -> List[Fault]:
    """Hardware findings on the job's GPUs and nodes in its window, from a
    report's ``nodes[].evidence``: hardware XIDs (severity fail), and failed
    epilog checks. "Could not test" (unknown) is never a fault."""
    out: List[Fault] = []
    for n in nodes:
        ev = n.get("evidence") or {}
        node = str(n.get("node", ""))
        gpus = ev.get("job_gpus")
        gpus = job_gpus if gpus is None else gpus
        mine = {int(g) for g in gpus} if gpus else None
        seen = set()
        had_xid = False
        for x in ev.get("xids") or ():
            # The epilog's XIDs carry NVIDIA's severity; only "fail" (reset,
            # reboot, inspect) is a hardware fault. Older writers gave none.
            if not isinstance(x, Mapping) or str(x.get("severity", "fail")) != "fail":
                continue
            idx = x.get("gpu_index")
            if mine is not None and isinstance(idx, int) and idx not in mine:
                continue  # another job's GPU on a shared node
            what = f"GPU {idx}" if idx is not None else str(x.get("gpu") or "")
            if x.get("pci_bus_id"):
                what = f"{what} ({x['pci_bus_id']})".strip()
            code = _int(x.get("xid", x.get("code")))
            key = (what, code)
            if key in seen:
                continue
            seen.add(key)
            had_xid = True
            out.append(Fault(node, what, xid=code, name=str(x.get("name") or ""), action=str(x.get("action") or "")))
        for r in ev.get("results") or ():
            if not isinstance(r, Mapping) or str(r.get("status", "")).lower() != "fail":
                continue
            if had_xid and str(r.get("check", "")).startswith("xid."):
                continue  # the XID itself is listed; its check result would repeat it
            det = r.get("details") or {}
            idx = det.get("gpu_index") if isinstance(det, Mapping) else None
            if mine is not None and isinstance(idx, int) and idx not in mine:
                continue
            out.append(Fault(node, str(r.get("subject") or ""), check=str(r.get("check") or ""),
                             name=str(r.get("message") or "")[:160]))
        if not any(f.node == node for f in out):
            # A drain Slurm holds for this node is our hardware verdict even
            # when the failing result itself was not kept.
            for d in our_drains([n]):
                out.append(Fault(node, "", check="drain", name=str(d.get("held_reason") or d.get("reason") or "")))
                break
    return out


def _int(v: Any) -> Optional[int]:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def our_drains(nodes: Iterable[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Drains that gcm-checks made or found for this run (not report-only)."""
    out = []
    for n in nodes:
        for d in (n.get("evidence") or {}).get("drains") or ():
            if not isinstance(d, Mapping) or d.get("would_drain") or d.get("report_only"):
                continue
            if d.get("drained") or str(d.get("action", "drained")) in _DRAINING:
                out.append(dict(d, node=d.get("node") or n.get("node")))
    return out


def decide(
    *,
    state: str,
    exit_code: Optional[int] = None,
    signal: Optional[int] = None,
    derived_exit_code: Optional[int] = None,
    classification: Optional[Mapping[str, Any]] = None,
    faults: Sequence[Fault] = (),
    requeued: bool = False,
    by_us: bool = False,
    report_only: bool = False,
    elapsed: str = "",
) -> Outcome:
    """The outcome of one run. ``state`` is the final Slurm state (sacct's, or
    ``final_state`` at epilog time); ``requeued`` says the run ended in a
    requeue; ``by_us`` that gcm-checks failed one of its nodes; ``faults``
    the hardware findings in its window. In report-only mode our findings
    reach no user: no suspect completion, no "moved off a faulty node"."""
    cls = dict(classification or {})
    cat = str(cls.get("category") or "")
    resp = str(cls.get("responsibility") or "")
    st = _state_word(state)
    raw = (state or "").strip()
    faults = [] if report_only else list(faults)
    by_us = by_us and not report_only
    step = _next_step(cat)

    def mk(oid: str, headline: str, action: str, blame: str = "", **kw: Any) -> Outcome:
        mailed, failure, _ = OUTCOMES[oid]
        return Outcome(oid, headline, action, mailed, failure, blame, raw, faults=faults, **kw)

    if requeued or st in ("REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "REQUEUE"):
        if by_us or faults:
            return mk("requeued", "Your job was moved off a faulty node and requeued; nothing to do.",
                      "Nothing to do: Slurm runs it again on another node.", NOT_YOUR_CODE)
        return mk("requeued", "Slurm requeued this run (preemption or scontrol requeue); it runs again.",
                  "Nothing to do.", NOT_YOUR_CODE)
    if st in ("NODE_FAIL", "BOOT_FAIL"):
        return mk("node_failure", f"A node of the job failed ({NOT_YOUR_CODE}); resubmit.",
                  "Resubmit (with --requeue for long runs).", NOT_YOUR_CODE)
    if st == "PREEMPTED":
        return mk("preempted", f"Preempted by the scheduler ({NOT_YOUR_CODE}).", step or "Resubmit.", NOT_YOUR_CODE)
    if st in ("TIMEOUT", "DEADLINE"):
        took = f" after {elapsed}" if elapsed else ""
        return mk("timeout", f"Hit its time limit{took}.", step or "Checkpoint more often or ask for a longer --time.")
    # An OOM line in a log the job recovered from (exit 0) is not the outcome.
    if st == "OUT_OF_MEMORY" or (cat in _OOM_CATEGORIES and (exit_code or signal or st == "FAILED")):
        kind = _OOM_CATEGORIES.get(cat, "host")
        return mk("out_of_memory", f"Ran out of {kind} memory ({YOUR_CODE}).", step or "Ask for more memory.", YOUR_CODE)
    # The epilog of an scancel'ed job can read a SIGTERM exit (0:15) before
    # sacct says CANCELLED; slurmstepd's "CANCELLED AT" line tells the classifier.
    if st == "CANCELLED" or cat == "cancelled_user":
        who = raw.split(" by ", 1)[1].strip() if " by " in raw else ""
        by = f" by {_who(who)}" if who else ""
        return mk("cancelled", f"Cancelled{by}; nothing to fix if that was intended.", "Nothing to fix if intended.",
                  cancelled_by=who)
    # A step that failed while the batch script exited 0 (srun exit 1 in a
    # script that went on) failed the job's work: DerivedExitCode says so.
    failed = bool(exit_code) or bool(signal) or bool(derived_exit_code) or st == "FAILED" or (
        cat and cat not in _NOT_FAILURE_CATEGORIES and st != "COMPLETED")
    if failed:
        blame = NOT_YOUR_CODE if resp in ("infrastructure", "scheduler") else (YOUR_CODE if resp == "user" else "")
        title = _title(cat) if cat and cat not in _NOT_FAILURE_CATEGORIES else "exit status " + (
            f"{exit_code}" if exit_code is not None else "non-zero")
        head = f"Failed: {title}" + (f" ({blame})" if blame else "") + "."
        return mk("failed", head, step or "Look at the end of the job's stderr.", blame)
    if faults:
        f = faults[0]
        more = f" (and {len(faults) - 1} more finding{'s' if len(faults) > 2 else ''})" if len(faults) > 1 else ""
        return mk("suspect", f"Completed, but {f.describe()} during the job{more}: check the results before using them.",
                  f"Check the results computed on {f.what or f.node}; rerun the last part if they look wrong. "
                  "The node is being checked.", NOT_YOUR_CODE)
    return mk("completed", "Completed.", "Nothing to do.")


def _who(uid: str) -> str:
    return "root (an admin)" if uid == "0" else f"uid {uid}"


def _title(cat: str) -> str:
    try:
        from gcm_checks.classify.taxonomy import CATEGORIES

        c = CATEGORIES.get(cat)
        return c.title if c is not None else cat
    except ImportError:
        return cat


def _next_step(cat: str) -> str:
    if not cat or cat in _NOT_FAILURE_CATEGORIES:
        return ""
    try:
        from gcm_checks.classify.taxonomy import CATEGORIES

        c = CATEGORIES.get(cat)
        return c.next_step if c is not None else ""
    except ImportError:
        return ""


def from_report(report: Mapping[str, Any], *, state: Optional[str] = None, requeued: Optional[bool] = None,
                elapsed: str = "") -> Outcome:
    """The outcome of a report dict (optionally with accounting's final state)."""
    job = report.get("job") or {}
    ctx = report.get("context") or {}
    nodes = report.get("nodes") or ()
    st = state if state is not None else (job.get("state") or "")
    code, sig = _split_exit(job.get("exit_status") or "")
    if requeued is None:
        requeued = bool(ctx.get("requeued"))
    acct = (report.get("accounting") or {}).get("run") or {}
    derived = acct.get("derived_exit_code") if acct else ctx.get("derived_exit_code")
    return decide(state=st, exit_code=code, signal=sig, derived_exit_code=_int(derived),
                  classification=report.get("classification"),
                  faults=faults_of(nodes), requeued=requeued, by_us=bool(our_drains(nodes)),
                  report_only=bool(ctx.get("report_only")), elapsed=elapsed)


def _split_exit(s: str) -> tuple:
    code, _, sig = str(s).partition(":")
    return _int(code), _int(sig)


__all__ = ["OUTCOMES", "MAILED_BY_DEFAULT", "FAILURES", "Fault", "Outcome", "decide", "faults_of", "final_state",
           "from_report", "our_drains", "NOT_YOUR_CODE", "YOUR_CODE"]
