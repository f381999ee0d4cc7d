"""The epilog: after every job, on every node of the job.

Reads the job from Slurm's epilog environment, scans the kernel log for XIDs
inside the job's window (the prolog recorded the start; Slurm 22.05 gives the
epilog none), runs DCGM diagnostics and a fast GPU re-check, and drains on a
hardware ``fail`` with the prolog's reason format and ownership rules.

Exit status: 0 after draining the node itself - a non-zero epilog makes Slurm
drain with "Epilog error", hiding our reason - and 100 (decide.EXIT_DRAIN)
only when the node should be drained but our drain could not be made, so
Slurm drains it anyway.

Then, after the verdict is fixed: this node's evidence goes to the job report
(one report per job, assembled by exactly one node) and notification is handed
off; neither can change the exit status (rule 6).

``gcm-checks epilog`` (commands/epilog.py) parses arguments, calls ``run``
and prints what it returns.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings


@dataclass
class EpilogRun:
    """What one epilog run decided and did, for the command to print."""

    code: int
    results: List[Any]
    verdict: Any
    drain_reason: Optional[str]
    action: Optional[str]
    decision: Any
    extra: Dict[str, Any] = field(default_factory=dict)


def run(args: Any, settings: "Settings", node: str, job_id: Optional[str], log: Any, t0: float) -> EpilogRun:
    """One epilog run: the job's window, the suite, the drain decision, then
    (after the verdict, never changing it) evidence, report and metrics.

    ``args``: the command line (``sim``, ``budget``, ``dry_run``, ``json``,
    ``no_report``)."""
    from gcm_checks import suite
    from gcm_checks.classify import exit_info_from_env
    from gcm_checks.decide import is_would_drain, settle
    from gcm_checks.node_action import decide_and_drain
    from gcm_checks.result import Status
    from gcm_checks.sinks import export_metrics, telemetry_on

    env = os.environ
    budget = args.budget or settings.epilog.budget_s or settings.budget_s
    ctx = suite.build_context(settings, sim=args.sim, budget_s=budget, dry_run=bool(getattr(args, "dry_run", False)))
    # Hardware readings for graphs: a few more NVML calls, after a job, never before one.
    ctx.hw_telemetry = telemetry_on(settings, "epilog")
    ctx.started = t0
    exit_info = exit_info_from_env(env)
    show = show_job(settings, job_id, log, node, env)
    now = time.time()
    ctx.window, window_from = job_window(Path(ctx.state_dir), job_id, node, show, now)
    failed_job = job_failed(exit_info, show)
    if failed_job:
        ctx.dcgm_level = dcgm_level_after_failure(settings, ctx.budget_s, log)
    # DCGM diagnoses only this job's GPUs: others may be running jobs.
    ctx.job = {"job_id": job_id, "gpus": env.get("SLURM_JOB_GPUS"), **exit_info}
    log.info("job", window_from=window_from, failed=failed_job, state=show.get("JobState"), reason=show.get("Reason"), **exit_info)

    results, v, _ = suite.run_checks("epilog", ctx, log)
    decision, action = decide_and_drain(args, settings, node, ctx, results, "epilog", log)
    if action == "braked":
        v = decision.verdict
    drain_reason = decision.reason
    # Our drain made (or kept: someone else's drain is already there): 0.
    # Could not drain at all: EXIT_DRAIN so Slurm drains the node itself.
    decision = settle(decision, action)
    code = decision.exit_code
    counts = {s.value: sum(1 for r in results if r.status is s) for s in Status}
    log.info("done", verdict=v.value, counts=counts, duration_s=round(time.monotonic() - t0, 4), action=action)

    # --- everything below is after the verdict and cannot change it -------
    from gcm_checks.state import job_record

    # The prolog's count names this run: a run ended by a requeue already
    # sees the next count in its epilog environment and in scontrol.
    restarts = job_record(Path(ctx.state_dir), job_id, node).get("restart_count") if job_id else None
    evidence = evidence_of(ctx, results)
    try:
        evidence.update(run_context(settings, env, show, restarts))
        if exit_info.get("derived_exit_code"):
            evidence["derived_exit_code"] = int(exit_info["derived_exit_code"])
        if drain_reason and action:
            d = drain_evidence(ctx.state_dir, node, drain_reason, action)
            # The decision core knows report-only and the would-drain spelling.
            d.update(report_only=decision.report_only, would_drain=is_would_drain(action))
            evidence["drains"] = [d]
    except Exception as e:  # noqa: BLE001 - report context is a bonus; the verdict is decided (rule 6)
        log.warning("report_context_failed", error=f"{type(e).__name__}: {e}")
        if drain_reason and action:
            evidence["drains"] = [{"node": node, "reason": drain_reason, "action": action}]
    write_local_evidence(ctx, job_id, node, evidence, log)
    report = None
    if job_id and settings.epilog.report and not getattr(args, "no_report", False):
        report = report_job(settings, node, job_id, show, exit_info, evidence, log, restarts)
    export_metrics(results, settings, node, job_id, "epilog", action, log, xids=evidence["xids"], t0=t0, ctx=ctx,
                   log_events=report_log_events(report, node, drain_reason, action) if settings.telemetry.otlp_endpoint else ())
    if job_id:
        from gcm_checks.state import forget_job

        forget_job(Path(ctx.state_dir), job_id, node)
    return EpilogRun(code, results, v, drain_reason, action, decision,
                     extra={"job_id": job_id, "window": evidence["xid_window"], "xids": evidence["xids"], "report": report})


def job_window(state_dir: Path, job_id: Optional[str], node: str, show: Mapping[str, str],
               now: float) -> Tuple[Optional[Tuple[float, float]], str]:
    """(start, end) for the XID scan, and where the start came from.

    Prolog record first (exact, local); else the StartTime slurmctld reports;
    else None: the scan falls back to "since the last scan".
    """
    from gcm_checks.state import job_start

    if job_id:
        start = job_start(state_dir, job_id, node)
        if start is not None:
            return (start, now), "prolog"
    st = parse_slurm_time(show.get("StartTime", ""))
    if st is not None:
        return (st, now), "slurmctld"
    return None, "since last scan"


def parse_slurm_time(text: str) -> Optional[float]:
    import datetime as dt

    try:
        return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp()  # slurmctld local time
    except (ValueError, TypeError):
        return None


def first_node(env: Mapping[str, str]) -> Optional[str]:
    """The job's first node (the batch host), from the epilog environment."""
    from gcm_checks.hostlist import first

    expr = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or ""
    try:
        return first(expr) if expr else None  # never expands the rest
    except ValueError:
        return None


def show_job(settings: "Settings", job_id: Optional[str], log: Any, node: str = "", env: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """``scontrol show job`` once per job, on its first node only: a 1,000-node
    job must not cost slurmctld 1,000 job reads at its end. The first node
    shares what it learned with the others through the report's evidence."""
    if not job_id or not settings.epilog.query_job:
        return {}
    first = first_node(env if env is not None else os.environ)
    if first is not None and node and first != node:
        return {}
    from gcm_checks import slurm

    try:
        backend = slurm.backend_from_settings(settings, dry_run=False)
        return dict(backend.show_job(job_id) or {})
    except Exception as e:  # noqa: BLE001 - slurmctld down: classify with less
        log.warning("show_job_failed", error=f"{type(e).__name__}: {e}")
        return {}


def job_failed(exit_info: Mapping[str, Any], show: Mapping[str, str]) -> bool:
    state = (show.get("JobState") or "").upper()
    reason = (show.get("Reason") or "").lower()
    return bool(exit_info.get("exit_code") or exit_info.get("signal") or exit_info.get("derived_exit_code")) or \
        state in ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT") or reason in ("nonzeroexitcode", "timelimit")


def drain_worthy(results: List[Any]) -> Optional[Any]:
    """The failure that names the drain: the decision core's one ranking."""
    from gcm_checks.decide import pick_failure

    return pick_failure(results)


def evidence_of(ctx: Any, results: List[Any]) -> Dict[str, Any]:
    """This node's evidence: XIDs in the window, DCGM results, GPU state."""
    from gcm_checks.result import Status

    xid_facts = ctx.facts.get("xid")
    dcgm_facts = ctx.facts.get("dcgm")
    gpu_facts = ctx.facts.get("gpu")
    return {
        "results": [r.to_dict() for r in results],
        "xids": [e.to_dict() for e in getattr(xid_facts, "events", ())],
        "sxids": [e.to_dict() for e in getattr(xid_facts, "sxids", ())],  # NVSwitch (issue 18)
        "xid_window": list(ctx.window) if ctx.window else None,
        "dcgm_diag": dcgm_facts.to_dict() if hasattr(dcgm_facts, "to_dict") else None,
        "gpus": [
            {"index": g.index, "pci_bus_id": g.pci_bus_id, "name": g.name, "responsive": g.responsive, "lost": g.lost,
             "ecc_uncorrected_volatile": g.ecc_uncorrected_volatile, "temperature_c": g.temperature_c}
            for g in getattr(gpu_facts, "gpus", ())
        ],
        "problems": [r.to_dict() for r in results if r.status is not Status.PASS],
    }


def dcgm_failures(evidence: Mapping[str, Any]) -> List[Dict[str, Any]]:
    out = []
    for e in ((evidence.get("dcgm_diag") or {}).get("entries") or []):
        # Only what DCGM itself calls a hardware finding: a persistence-mode
        # or "could not test" failure is not evidence against the GPU.
        if e.get("status") == "fail" and e.get("finding", "hardware") == "hardware":
            err = (e.get("errors") or [{}])[0]
            out.append({"gpu_index": e.get("entity_id"), "test": e.get("test"), "error_id": err.get("error_id"),
                        "message": err.get("text", "")})
    return out


def make_classifier(exit_info: Mapping[str, Any], show: Mapping[str, str]):
    """The report's classifier: runs on the assembling node over every
    node's evidence and the job's log tails."""

    def classifier(job: Any, logs: List[Dict[str, Any]], contribs: Mapping[str, Any]) -> Dict[str, Any]:
        from gcm_checks.classify import ClassifyInput, LogText, classify

        xids: List[Dict[str, Any]] = []
        dcgm: List[Dict[str, Any]] = []
        ib: List[str] = []
        for c in contribs.values():
            ev = c.get("evidence") or {}  # spool entries are {node, at, evidence}
            xids.extend(ev.get("xids") or [])
            dcgm.extend(dcgm_failures(ev))
            ib.extend(f"{p.get('subject')}: {p.get('message')}" for p in ev.get("problems") or []
                      if str(p.get("check", "")).startswith("ib."))
        texts = [LogText(entry["name"], entry.get("text") or "") for entry in logs if entry.get("text")]
        seen = dict(show)
        if not seen:  # not the first node: use what the first node learned
            for c in contribs.values():
                seen = ((c.get("evidence") or {}).get("job_facts") or {}).get("scontrol") or {}
                if seen:
                    break
        state = seen.get("JobState") or job.state or None
        if state == "COMPLETING":  # the epilog runs before the final state
            state = None
        inp = ClassifyInput(logs=texts, state=state, exit_code=exit_info.get("exit_code"),
                            signal=exit_info.get("signal"), derived_exit_code=exit_info.get("derived_exit_code"),
                            reason=seen.get("Reason") or None, xids=xids, dcgm_failures=dcgm, ib_problems=ib)
        return classify(inp).to_dict()

    return classifier


def write_local_evidence(ctx: Any, job_id: Optional[str], node: str, evidence: Dict[str, Any], log: Any) -> None:
    from gcm_checks.jsonfile import write_json

    name = "".join(c for c in f"{job_id or 'nojob'}.{node}" if c.isalnum() or c in "._-")
    try:
        write_json(Path(ctx.state_dir) / "evidence" / f"{name}.json", evidence)
    except OSError as e:
        log.warning("evidence_not_written", error=str(e))


SHARED_SHOW = ("JobState", "Reason", "JobName", "StartTime", "Partition", "Restarts")


# JobState values of a run that ended in a requeue (the epilog of a run whose
# prolog failed on another node, or of an `scontrol requeue`).
_REQUEUED_STATES = ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "REQUEUE")


def run_context(settings: "Settings", env: Mapping[str, str], show: Mapping[str, str],
                this_run: Optional[int] = None) -> Dict[str, Any]:
    """Facts about this run the report's outcome needs (report/outcome.py):
    report-only mode, the job's GPUs on this node, whether Slurm requeued it.

    Slurm 22.05, measured: the epilog of a run whose prolog failed sees
    JobState=COMPLETING, Reason=None and exit 0 - like a success - but
    ``Restarts`` is already one more than the count the prolog recorded for
    this run. That is the requeue."""
    from gcm_checks import slurm

    out: Dict[str, Any] = {"report_only": bool(slurm.report_only(settings))}
    gpus = [int(g) for g in (env.get("SLURM_JOB_GPUS") or "").split(",") if g.strip().isdigit()]
    if gpus:
        out["job_gpus"] = gpus
    state = (show.get("JobState") or "").upper()
    reason = (show.get("Reason") or "").lower()
    later = show.get("Restarts", "")
    if state in _REQUEUED_STATES or "requeue" in reason or (
            this_run is not None and later.isdigit() and int(later) > int(this_run)):
        out["requeued"] = True
    return out


def drain_evidence(state_dir: Any, node: str, reason: str, action: str) -> Dict[str, Any]:
    """The drain as Slurm holds it: "already" means an earlier gcm drain (the
    prolog's) kept its reason, which our local drain record names - no RPC."""
    from gcm_checks import slurm

    would = action.startswith(("report-only", "would"))
    d: Dict[str, Any] = {"node": node, "reason": reason, "action": action, "would_drain": would,
                         "report_only": action.startswith("report-only"), "drained": action in ("drained", "already")}
    if action == "drained":
        d["held_reason"] = reason
    elif action == "already":
        rec = slurm.drain_record(str(state_dir), node) or {}
        if rec.get("reason"):
            d["held_reason"] = rec["reason"]
    return d


def job_facts(show: Mapping[str, str], exit_info: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """JobInfo fields from ``scontrol show job`` (empty when not asked)."""
    facts: Dict[str, Any] = {}
    if show.get("JobName"):
        facts["name"] = show["JobName"]
    if show.get("JobState"):
        from gcm_checks.report.outcome import final_state

        # COMPLETING in the epilog; the Reason and exit status say more.
        code, sig = _exit_of(show.get("ExitCode", ""))
        if exit_info:  # the epilog environment's exit status is the job's own
            code, sig = exit_info.get("exit_code") or code, exit_info.get("signal") or sig
        facts["state"] = final_state(show["JobState"], show.get("Reason", ""), code, sig)
    if show.get("Partition"):
        facts["partition"] = show["Partition"]
    st = parse_slurm_time(show.get("StartTime", ""))
    if st is not None:
        facts["start"] = st
    if show.get("MailUser") and show.get("MailUser") not in ("(null)", ""):
        facts["mail_user"] = show["MailUser"]
    for key, attr in (("StdOut", "stdout"), ("StdErr", "stderr")):
        if show.get(key) and "%" not in show[key]:
            facts[attr] = show[key]  # slurmctld's expanded path
    if show.get("NodeList"):
        from gcm_checks.hostlist import expand

        try:
            facts["nodes"] = expand(show["NodeList"])
        except ValueError:
            pass
    return facts


def _exit_of(text: str) -> Tuple[Optional[int], Optional[int]]:
    code, _, sig = (text or "").partition(":")
    return (int(code) if code.isdigit() else None), (int(sig) if sig.isdigit() else None)


def dcgm_level_after_failure(settings: "Settings", budget_s: float, log: Any) -> int:
    """The configured deeper level after a failed job, unless the epilog's
    budget cannot hold it: a diag killed half way says nothing (and killing
    dcgmi mid-diag is what wedges some hostengines), so run level 1 instead
    and say how to get the deeper one."""
    from gcm_checks.gather.dcgm import TYPICAL_S

    want = settings.epilog.dcgm_level_after_failure
    if TYPICAL_S.get(want, 0.0) + 5.0 > budget_s:
        log.warning("dcgm_level_capped", wanted=want, used=1, budget_s=budget_s,
                    hint=f"level {want} takes about {TYPICAL_S.get(want, 0):.0f} s: raise epilog.budget_s and PrologEpilogTimeout")
        return 1
    return want


def report_log_events(report: Optional[Mapping[str, Any]], node: str, drain_reason: Optional[str],
                action: Optional[str]) -> List[Any]:
    """The job report this node assembled and its drain, as OTLP log records."""
    try:
        from gcm_checks.telemetry.events import report_event_from_file, slurm_action_event

        out = []
        path = ((report or {}).get("paths") or {}).get("report.json")
        ev = report_event_from_file(path) if path else None
        if ev is not None:
            out.append(ev)
        if drain_reason and action:
            ev = slurm_action_event("drain", {"action": action, "reason": drain_reason}, node)
            if ev is not None:
                out.append(ev)
        return out
    except Exception:  # noqa: BLE001 - telemetry never changes a run
        return []


def report_job(settings: "Settings", node: str, job_id: str, show: Mapping[str, str], exit_info: Mapping[str, Any],
            evidence: Dict[str, Any], log: Any, restart_count: Optional[int] = None) -> Optional[Dict[str, Any]]:
    try:
        from gcm_checks.report import JobInfo, assemble_and_notify

        facts = job_facts(show, exit_info)
        if evidence.get("requeued") and facts.get("state"):
            facts["state"] = "REQUEUED"  # what sacct will say of this run (COMPLETING here)
        overrides: Dict[str, Any] = {"end": time.time(), **facts}
        if restart_count is not None:
            # The prolog's count names this run: a run ended by a requeue
            # already sees the next count in its epilog environment.
            overrides["restart_count"] = int(restart_count)
        if show:
            # Shared with the other nodes: only this one asked slurmctld.
            evidence["job_facts"] = dict(facts, scontrol={k: show[k] for k in SHARED_SHOW if k in show})
        job = JobInfo.from_env(os.environ, **overrides)
        out = assemble_and_notify(job, settings, node=node, budget_s=settings.epilog.report_budget_s,
                                  evidence=evidence, classifier=make_classifier(exit_info, show))
        log.info("report", **{k: v for k, v in out.items() if k in ("key", "assembled", "waiting", "error", "paths")})
        return out
    except Exception as e:  # noqa: BLE001 - rule 6: never changes the verdict
        log.warning("report_failed", error=f"{type(e).__name__}: {e}")
        return {"error": f"{type(e).__name__}: {e}"}

