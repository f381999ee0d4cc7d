"""The one decision core: results + mode + context -> one node decision.

Prolog, epilog, health and qualify all come here, so there is one drain
policy, one ranking of failures, one report-only path and one dry-run
wording. The commands only apply the decision (``gcm_checks.slurm``) and
render it; nothing here talks to Slurm, prints or exits.

Ranking (severity, then certainty): a GPU that is gone or wedged names the
drain before a hardware XID (NVIDIA's verdict with its remedy), a GPU missing
from the count, a DCGM finding, memory faults, a dead rail, a PCIe width, and
last the soft signals (temperature, throttling). Among equals the suite's order wins,
so the reason is stable from run to run.

Exit statuses (the contract with slurmd, docs/slurm.md):

====  =======================================================================
 0    anything but a drain decision: healthy, warn, unknown, report-only,
      a broken config, our own crash (the entry scripts enforce it too)
100   EXIT_DRAIN - a drain decision: the prolog found bad hardware (Slurm
      requeues the job), health drained (slurmd only logs it), or the epilog
      could not make the drain it decided (Slurm drains with "Epilog error")
====  =======================================================================

Who owns a drain already on the node is not an input here: learning it costs
a Slurm read, which a healthy run must not make. The decision says "drain"
or "resume-if-passed"; ``slurm.apply_drain`` / ``slurm.apply_resume`` then
read the node once and keep someone else's drain (their outcome - drained,
already, kept_foreign, error - goes back through ``settle``).

This module is on the prolog path: it imports nothing beyond result.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from gcm_checks.result import CheckResult, Status, verdict

EXIT_OK = 0
# Not 1 (a Python traceback), 2 (usage), 126/127 (not executable / missing
# interpreter), 128+N (killed by a signal, 137 = the OOM killer): the entry
# scripts pass exactly this status through and turn every other into 0.
EXIT_DRAIN = 100

MODES = ("prolog", "epilog", "health", "qualify")

# Check-id prefixes, most severe/certain first. An id matches its longest
# listed prefix; an unlisted id ranks after every listed one.
RANKING: Tuple[str, ...] = (
    # A lost or wedged GPU first: no job can use it, and it is a state a later
    # run re-measures, so health lifts the drain once the GPU answers again
    # after a reset. The XID that often comes with it is an event ("no new
    # XID" proves no repair) and names the drain only when the GPU answers.
    "gpu.responsive",
    "xid.",  # NVIDIA's catalog says reset / reboot / RMA
    "gpu.nvml",  # driver and library disagree, NVML cannot start
    "gpu.gather",
    "gpu.count",  # a GPU missing from the bus
    "gpu.pci",
    "dcgm.",  # a diagnostic's hardware finding
    "gpu.ecc",
    "gpu.row_remap",
    "gpu.retired_pages",
    "ib.hca",  # an HCA gone
    "ib.port.state",  # a dead rail
    "ib.port.phys_state",
    "ib.port.link_layer",
    "ib.port.rate",
    "ib.",
    "gpu.pcie",  # a degraded link still works, slower
    "perf.",
    "gpu.temperature",
    "gpu.throttle",
    "gpu.persistence_mode",
    "gpu.processes",
)

# Every spelling of "report-only / dry run: would drain" ever written to
# evidence or state; old records must still read as "did not drain".
WOULD_DRAIN = ("would drain", "would_drain", "report-only: would drain")


def rank(check_id: str) -> int:
    best, best_len = len(RANKING), -1
    for i, prefix in enumerate(RANKING):
        if check_id.startswith(prefix) and len(prefix) > best_len:
            best, best_len = i, len(prefix)
    return best


def pick_failure(results: Iterable[CheckResult]) -> Optional[CheckResult]:
    """The failure that names the drain: most severe, then first reported."""
    fails = [(rank(r.check), i, r) for i, r in enumerate(results) if r.status is Status.FAIL]
    return min(fails, key=lambda t: (t[0], t[1]))[2] if fails else None


def is_would_drain(action: Optional[str]) -> bool:
    return bool(action) and (action in WOULD_DRAIN or str(action).startswith("would drain"))


@dataclass(frozen=True)
class NodeContext:
    """What the decision depends on besides the results."""

    report_only: bool = False  # config report_only (or forced by a broken config)
    dry_run: bool = False  # --dry-run: say, do not do
    config_error: Optional[str] = None  # the config could not be used; built-in defaults ran
    resume_on_pass: bool = True  # health: lift our own drain when its check passes again
    brake: Optional[str] = None  # mass-drain brake engaged: why (gcm_checks.brake)

    @property
    def would_only(self) -> bool:
        return self.report_only or self.dry_run or self.config_error is not None


@dataclass(frozen=True)
class Decision:
    mode: str
    verdict: Status
    # "drain" | "resume-if-passed" (health) | "none"
    node_action: str
    failure: Optional[CheckResult] = None
    reason: Optional[str] = None
    features: Optional[List[str]] = None  # health features to publish; None = change nothing
    report_only: bool = False
    dry_run: bool = False
    config_error: Optional[str] = None
    brake: Optional[str] = None
    exit_code: int = EXIT_OK
    admin: str = ""  # one line for the admin's log / stderr
    user: str = ""  # one line for the job's user (report side)
    notes: Tuple[str, ...] = field(default_factory=tuple)

    @property
    def would_only(self) -> bool:
        return self.report_only or self.dry_run or self.config_error is not None

    @property
    def would_drain(self) -> bool:
        """A drain was decided but will not be made (report-only, dry run, broken config)."""
        return self.node_action == "drain" and self.would_only

    def to_dict(self) -> Dict[str, Any]:
        return {
            "mode": self.mode, "verdict": self.verdict.value, "node_action": self.node_action,
            "failure": self.failure.to_dict() if self.failure else None, "reason": self.reason,
            "features": self.features, "report_only": self.report_only, "dry_run": self.dry_run,
            "would_drain": self.would_drain, "config_error": self.config_error, "brake": self.brake,
            "exit_code": self.exit_code, "admin": self.admin, "user": self.user,
        }


def _drain_reason(fail: CheckResult) -> str:
    from gcm_checks.slurm.reasons import make_drain_reason

    return make_drain_reason(fail.check, fail.subject, fail.message)


def health_features(results: Sequence[CheckResult]) -> Optional[List[str]]:
    """gcm features for a verdict; None when we could not tell (change nothing)."""
    v = verdict(results)
    if v is Status.PASS:
        return ["gcm_ok"]
    if v in (Status.WARN, Status.FAIL):
        return ["gcm_degraded"]
    return None  # UNKNOWN: "we could not tell" is not a transition


def decide(results: Sequence[CheckResult], mode: str, ctx: Optional[NodeContext] = None) -> Decision:
    """The node decision for ``results`` of a ``mode`` run."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    ctx = ctx or NodeContext()
    results = list(results)
    v = verdict(results)
    fail = pick_failure(results)
    common = dict(mode=mode, report_only=ctx.report_only or ctx.config_error is not None, dry_run=ctx.dry_run,
                  config_error=ctx.config_error)
    # Report-only (or a broken config) changes nothing on the node: no drain,
    # no feature, no resume. A dry run goes through the dry-run backend,
    # which prints every "would run: scontrol ..." line instead.
    hands_off = ctx.report_only or ctx.config_error is not None
    features = health_features(results) if mode == "health" and not hands_off else None
    if fail is None:
        action = "resume-if-passed" if (mode == "health" and ctx.resume_on_pass and not hands_off) else "none"
        return Decision(verdict=v, node_action=action, features=features, exit_code=EXIT_OK,
                        admin=_admin_line(mode, v, None, None, ctx), user=_user_line(v, None, False), **common)
    if ctx.brake:
        # Many nodes failing the same check at once: suspect a shared cause
        # (fabric manager, driver rollout, shared filesystem), not N bad GPUs.
        return Decision(verdict=Status.UNKNOWN, node_action="none", failure=fail, reason=None, features=None,
                        brake=ctx.brake, exit_code=EXIT_OK,
                        admin=f"{mode}: {fail.check} failed but not draining: suspected cluster-wide cause ({ctx.brake})",
                        user=_user_line(Status.UNKNOWN, None, False), **common)
    reason = _drain_reason(fail)
    would = ctx.would_only
    # prolog: non-zero makes Slurm requeue the job elsewhere; report-only and
    # a broken config never requeue. A dry run exits as the real run would.
    code = EXIT_DRAIN if (mode in ("prolog", "health") and not hands_off) else EXIT_OK
    return Decision(verdict=v, node_action="drain", failure=fail, reason=reason, features=features, exit_code=code,
                    admin=_admin_line(mode, v, fail, reason, ctx), user=_user_line(v, fail, would), **common)


def settle(decision: Decision, outcome_action: Optional[str]) -> Decision:
    """Fold the result of applying the decision into its exit status.

    The epilog exits EXIT_DRAIN only when a real drain was decided and could
    not be made: Slurm's own "Epilog error" drain then keeps jobs off the node.
    """
    from dataclasses import replace

    if decision.mode == "epilog" and decision.node_action == "drain" and not decision.would_only and outcome_action == "error":
        return replace(decision, exit_code=EXIT_DRAIN)
    return decision


# ---------------------------------------------------------------- wording


def action_words(action: Optional[str], would: bool = False) -> Optional[str]:
    """One wording for what was (or would be) done, for every command.

    ``would`` marks a run that changes nothing (dry run, report-only): its
    words always start with "would", never "drained" or "resumed".
    """
    if not action:
        return None
    if is_would_drain(action):
        return "would drain"
    table = {
        "drained": ("drained", "would drain"),
        "already": ("already drained by gcm", "already drained by gcm"),
        "kept_foreign": ("kept someone else's drain", "would keep someone else's drain"),
        "error": ("drain failed (Slurm did not answer)", "could not read the node"),
        "resumed": ("resumed", "would resume"),
        "would_resume": ("would resume", "would resume"),
        "not_drained": ("not drained", "not drained"),
        "reason_changed": ("not resumed: drained again since", "would not resume: drained again since"),
        "not_passed": ("stays drained", "stays drained"),
    }
    pair = table.get(action)
    if pair is None:
        return action
    return pair[1] if would else pair[0]


def _admin_line(mode: str, v: Status, fail: Optional[CheckResult], reason: Optional[str], ctx: NodeContext) -> str:
    tags = []
    if ctx.config_error:
        tags.append("config error: built-in defaults in report-only")
    elif ctx.report_only:
        tags.append("report-only")
    if ctx.dry_run:
        tags.append("dry run")
    tag = f" [{', '.join(tags)}]" if tags else ""
    if fail is None:
        return f"{mode}: {v.value}{tag}"
    verb = "would drain" if ctx.would_only else "drain"
    return f"{mode}: {verb}: {reason}{tag}"


def _user_line(v: Status, fail: Optional[CheckResult], would: bool) -> str:
    if fail is None:
        return "" if v is Status.PASS else "the node checks could not tell everything; nothing was changed"
    if would:
        # Report-only: the node is NOT being drained; never tell a user it is.
        return f"a node check failed ({fail.check}); the node stays in service (report-only rollout)"
    return f"a node check failed ({fail.check}): the node is being drained; resubmit the job"
