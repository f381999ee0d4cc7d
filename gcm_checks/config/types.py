"""Typed settings: one ``Settings`` object per run, one section type per area.

``config.load`` (or ``load_or_defaults``) builds it once at the start of a
run; the run passes it down. Each area reads its own section as attributes
(``settings.report.spool_dir``, ``settings.notify.policy.default``); a
default lives only in the schema (``config/schema.py``), never here and never
at a call site. The section types name and type the keys (a test keeps them
equal to the schema) and read the values straight from the resolved dict, so
building them costs next to nothing at start-up: no dataclass machinery, no copying.

Tests build settings with ``gcm_checks.testing.settings(...)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    from gcm_checks.notify.config import Channel


class Section:
    """One section of the resolved configuration, read as attributes.

    The values are the resolved dict's own (schema defaults, then the file,
    then matching ``nodes:`` sections), shared rather than copied, so the
    rare run-time override (an unsafe directory replaced before any work) is
    seen everywhere. Read-only: settings for a test come from
    ``gcm_checks.testing.settings``.
    """

    __slots__ = ("_data", "_cache")
    _nested: ClassVar[Dict[str, type]] = {}

    def __init__(self, data: Dict[str, Any]):
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_cache", {})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            value = self._data[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no setting {name!r}") from None
        sub = self._nested.get(name)
        return sub(value) if sub is not None else value

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("settings are read-only; build others with config.resolve or gcm_checks.testing.settings")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._data!r})"

    def as_dict(self) -> Dict[str, Any]:
        return dict(self._data)


class Checks(Section):
    """Which checks run and how their results count (``checks:``)."""

    __slots__ = ()

    disabled: List[Any]
    severity: Dict[str, Any]


class Gpu(Section):
    """GPU checks over NVML (``gpu:``)."""

    __slots__ = ()

    count: Optional[int]
    nvml_timeout_s: float
    nvml_init_timeout_s: float
    ecc_uncorrected_max: int
    temperature_max_c: int
    leftover_processes: str


class Slurm(Section):
    """Talking to Slurm: scontrol, drains, the mass-drain brake, node Extra (``slurm:``)."""

    __slots__ = ()

    backend: str
    scontrol: Optional[str]
    timeout_s: float
    brake_share: Optional[float]
    brake_count: Optional[int]
    brake_window_s: float
    resume_on_pass: bool
    extra_format: str


class Infiniband(Section):
    """InfiniBand checks over sysfs (``infiniband:``)."""

    __slots__ = ()

    sysfs_root: str
    expected: List[Any]
    expected_hcas: List[Any]
    min_rate_gbps: Optional[float]
    link_layer: str
    unlisted_ports: str
    error_counters_warn: Any


class Dcgm(Section):
    """DCGM diagnostics (``dcgm:``)."""

    __slots__ = ()

    level: int
    timeout_s: Optional[float]
    dcgmi: Optional[str]
    scope: str
    use_pydcgm: Any


class Xid(Section):
    """XIDs in the kernel log (``xid:``)."""

    __slots__ = ()

    source: str
    kernel_log_path: Optional[str]
    journal_timeout_s: float
    health_lookback_s: float
    escalate_after_reset: bool
    escalate_window_days: float


class Report(Section):
    """Job reports: spool, durable copies, log tails (``report:``)."""

    __slots__ = ()

    spool_dir: str
    report_dir: str
    outbox_dir: str
    copy_to_workdir: bool
    workdir_name: str
    log_tail_bytes: int
    log_total_bytes: int
    evidence_max_items: int
    gather_timeout_s: float
    read_timeout_s: float
    retention_s: float


class NotifyPolicy(Section):
    """Who is told about which job (``notify.policy:``)."""

    __slots__ = ()

    default: str
    clusters: Dict[str, Any]
    partitions: Dict[str, Any]
    users: Dict[str, Any]
    allow_job_override: bool


class NotifyEmail(Section):
    """E-mail recipients (``notify.email:``)."""

    __slots__ = ()

    use_mail_user: bool
    addresses: Dict[str, Any]
    domain_template: str


class NotifyAdmin(Section):
    """Admin alerts' routes (``notify.admin:``)."""

    __slots__ = ()

    channels: Any
    to: Any

    def recipients(self) -> Tuple[str, ...]:
        """``to`` as a tuple of addresses (one address may be written bare)."""
        return _names(self.to)


def _names(v: Any) -> Tuple[str, ...]:
    return (v,) if isinstance(v, str) else tuple(str(x) for x in v or ())


class Notify(Section):
    """Notifications: channels, who is told, delivery (``notify:``)."""

    __slots__ = ()
    _nested = {"policy": NotifyPolicy, "email": NotifyEmail, "admin": NotifyAdmin}

    policy: NotifyPolicy
    email: NotifyEmail
    handoff: str
    budget_s: float
    backoff_base_s: float
    backoff_max_s: float
    give_up_after_s: float
    outbox_dir: str
    admin: NotifyAdmin

    @property
    def channels(self) -> "Tuple[Channel, ...]":
        """The sinks, parsed once per run (a bad entry raises ValueError here,
        where delivery starts, as before: it never breaks the checks)."""
        got = self._cache.get("channels")
        if got is None:
            from gcm_checks.notify.config import parse_channels

            got = self._cache["channels"] = parse_channels(self._data.get("channels") or ())
        return got

    def channel(self, name: str) -> "Optional[Channel]":
        return next((c for c in self.channels if c.name == name), None)

    def admin_routes(self) -> "Tuple[Channel, ...]":
        """Where admin alerts go: ``notify.admin.channels`` when set, else
        every admin channel (one with ``when:``). A name that is no channel
        raises ValueError, like a bad channel."""
        names = _names(self.admin.channels)
        known = {c.name for c in self.channels}
        for name in names:
            if name not in known:
                raise ValueError(f"notify.admin.channels: {name!r} is not a channel in notify.channels")
        if names:
            return tuple(c for c in self.channels if c.name in names)
        return tuple(c for c in self.channels if c.when)


class Accounting(Section):
    """Batched sacct refinement (``accounting:``)."""

    __slots__ = ()

    interval_s: float
    notify_wait_s: float
    sacct: Optional[str]
    timeout_s: float
    designated_node: Optional[str]
    lookback_s: float
    settle_s: float
    overlap_s: float
    report_wait_s: float
    keep_s: float
    state_file: Optional[str]


class Qualify(Section):
    """Node qualification (``qualify:``)."""

    __slots__ = ()

    results_dir: str
    level: str
    levels: Dict[str, Any]
    probe: str
    fraction: float
    sibling_threshold: float
    baselines: Dict[str, Any]


class Telemetry(Section):
    """Prometheus textfiles and OTLP (``telemetry:``)."""

    __slots__ = ()

    prometheus_textfile_dir: Optional[str]
    otlp_endpoint: Optional[str]
    otlp_timeout_s: float
    otlp_headers: Dict[str, Any]


class Epilog(Section):
    """The epilog's own budget and steps (``epilog:``)."""

    __slots__ = ()

    budget_s: Optional[float]
    query_job: bool
    dcgm_level_after_failure: int
    report: bool
    report_budget_s: float


class _SectionOf:
    """``Settings.<name>``: the typed view of that section, made on first use."""

    def __init__(self, cls: type):
        self.cls = cls

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        data = obj.data[self.name]
        sec = obj._sections.get(self.name)
        if sec is None or sec._data is not data:
            sec = obj._sections[self.name] = self.cls(data)
        return sec


@dataclass
class Settings:
    """Resolved configuration for one node, built once per run."""

    data: Dict[str, Any]
    source: str = "(defaults)"
    node: str = ""
    matched_sections: List[int] = field(default_factory=list)
    config_error: Optional[str] = None  # set when the config was broken and defaults run
    _sections: Dict[str, Section] = field(default_factory=dict, init=False, repr=False, compare=False)

    # One typed view per section (ClassVar: not constructor fields).

    checks: ClassVar[Checks] = _SectionOf(Checks)  # type: ignore[assignment]
    gpu: ClassVar[Gpu] = _SectionOf(Gpu)  # type: ignore[assignment]
    slurm: ClassVar[Slurm] = _SectionOf(Slurm)  # type: ignore[assignment]
    infiniband: ClassVar[Infiniband] = _SectionOf(Infiniband)  # type: ignore[assignment]
    dcgm: ClassVar[Dcgm] = _SectionOf(Dcgm)  # type: ignore[assignment]
    xid: ClassVar[Xid] = _SectionOf(Xid)  # type: ignore[assignment]
    report: ClassVar[Report] = _SectionOf(Report)  # type: ignore[assignment]
    notify: ClassVar[Notify] = _SectionOf(Notify)  # type: ignore[assignment]
    accounting: ClassVar[Accounting] = _SectionOf(Accounting)  # type: ignore[assignment]
    qualify: ClassVar[Qualify] = _SectionOf(Qualify)  # type: ignore[assignment]
    telemetry: ClassVar[Telemetry] = _SectionOf(Telemetry)  # type: ignore[assignment]
    epilog: ClassVar[Epilog] = _SectionOf(Epilog)  # type: ignore[assignment]

    # The top-level keys.
    @property
    def budget_s(self) -> float:
        return self.data["budget_s"]

    @property
    def log_path(self) -> str:
        return self.data["log_path"]

    @property
    def state_dir(self) -> str:
        return self.data["state_dir"]

    @property
    def simulate(self) -> Optional[str]:
        return self.data["simulate"]

    @property
    def report_only(self) -> bool:
        return self.data["report_only"]

    @property
    def nodes(self) -> List[Dict[str, Any]]:
        return self.data["nodes"]

    # Values derived from more than one key, named once here.
    @property
    def outbox_dir(self) -> str:
        """Where notifications wait: notify.outbox_dir when set, else report.outbox_dir."""
        return self.notify.outbox_dir or self.report.outbox_dir

    @property
    def accounting_state_file(self) -> str:
        """The refinement pass's state: accounting.state_file, else <state_dir>/accounting-pass.json."""
        import os

        return self.accounting.state_file or os.path.join(self.state_dir, "accounting-pass.json")
