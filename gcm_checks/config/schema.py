"""The configuration schema: every key, its type, bounds, documentation and
its default - the one place a default lives (``configs/default.yaml`` shows
them; the typed sections in ``gcm_checks.config.types`` read them) - and the
validation that names the file and the key.

Every area adds its own section to SCHEMA below.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

class ConfigError(Exception):
    def __init__(self, source: str, key: str, expected: str, got: Any = None):
        got_s = "" if got is None else f", got {got!r}"
        super().__init__(f"{source}: {key}: expected {expected}{got_s}")
        self.source, self.key, self.expected = source, key, expected


@dataclass(frozen=True)
class Key:
    kind: str  # int | float | bool | str | list | dict | any
    default: Any
    doc: str
    choices: Tuple[Any, ...] = ()
    nullable: bool = False
    minimum: Optional[float] = None
    maximum: Optional[float] = None


STATUS_CHOICES = ("pass", "warn", "fail", "unknown")
POLICIES = ("on_failure", "always", "never")  # notify.policy values

# Sections are plain dicts of Key; a nested dict is a nested section.
SCHEMA: Dict[str, Any] = {
    "budget_s": Key("float", 10.0, "Hard wall-clock budget for one run; keep below Slurm's PrologEpilogTimeout.", minimum=0.5, maximum=86400),
    "log_path": Key("str", "/var/log/gcm-checks/gcm-checks.log", "JSON-lines log, one file per node, opened before any check runs."),
    "state_dir": Key("str", "/var/lib/gcm-checks", "Node-local state: job start times, last scan, our drains, counters."),
    "simulate": Key("str", None, "Simulated scenario (name or path) replacing hardware only; for tests and demos.", nullable=True),
    "report_only": Key("bool", False, "Log every decision, take no Slurm action (safe rollout)."),
    "checks": {
        "disabled": Key("list", [], "Check ids to skip; 'gpu.*' disables a family. Unknown ids: config check rejects them, runs warn."),
        "severity": Key("dict", {}, "Per-check status override for non-pass results: {check id: pass|warn|fail|unknown}."),
    },
    "gpu": {
        "count": Key("int", None, "Expected GPUs on this node; null = do not check the count (0 = no GPUs expected).", nullable=True, minimum=0),
        "nvml_timeout_s": Key("float", 2.0, "Deadline for each GPU's NVML calls; a GPU that does not answer within it is failed "
                              "(one cut short by the run budget is unknown).", minimum=0.05, maximum=600),
        "nvml_init_timeout_s": Key("float", 6.0, "Deadline for nvmlInit, which initialises every GPU when persistence mode is off.", minimum=0.05, maximum=600),
        "ecc_uncorrected_max": Key("int", 0, "Volatile uncorrectable ECC errors tolerated before failing.", minimum=0),
        "temperature_max_c": Key("int", 90, "GPU temperature (C) at or above which the GPU fails.", minimum=0),
        "leftover_processes": Key("str", "warn", "Status when compute processes from a previous job remain.", choices=("warn", "fail")),
    },
    "slurm": {
        "backend": Key("str", "cli", "cli (scontrol). pyslurm and auto are accepted for old configs and mean cli: the pyslurm backend was removed.", choices=("cli", "pyslurm", "auto")),
        "scontrol": Key("str", None, "Absolute path to scontrol; null = search standard locations (a prolog has no PATH).", nullable=True),
        "timeout_s": Key("float", 5.0, "Deadline for each scontrol call.", minimum=0.1, maximum=600),
        "brake_share": Key("float", None, "Mass-drain brake: do not drain when this share (0-1) of the node's partition already carries a gcm drain "
                           "for the same check from the last slurm.brake_window_s; null = off (docs/slurm.md).", nullable=True, minimum=0, maximum=1),
        "brake_count": Key("int", None, "Mass-drain brake: do not drain when this many nodes already carry such a drain; null = off.", nullable=True, minimum=1),
        "brake_window_s": Key("float", 900.0, "How recent a gcm drain must be to count for the brake.", minimum=1, maximum=604800),
        "resume_on_pass": Key("bool", True, "Health mode resumes a node drained by gcm once the same checks pass."),
        "extra_format": Key("str", "auto", "Node Extra: text ('gcm ok <time>' segments), json (flat gcm_* keys, for SchedulerParameters=extra_constraints), or auto (json when the node's Extra already is a JSON object).", choices=("auto", "text", "json")),
    },
    # InfiniBand checks over sysfs (gcm_checks.checks.ib).
    "infiniband": {
        "sysfs_root": Key("str", "/", "Prefix under which sys/class/infiniband is read ('/' in production; a tree for tests)."),
        "expected": Key("list", [], "Ports that must be up: [mlx5_0 | {device, ports: [1], rate_gbps, link_layer}]."),
        "expected_hcas": Key("list", [], "Shorthand: HCA names whose port 1 must be up, judged with min_rate_gbps and link_layer."),
        "min_rate_gbps": Key("float", None, "Lowest acceptable rate (Gb/s) for expected ports without their own rate_gbps; null = not checked.", nullable=True, minimum=0),
        "link_layer": Key("str", "InfiniBand", "Link layer of expected ports without their own link_layer.", choices=("InfiniBand", "Ethernet")),
        "unlisted_ports": Key("str", "warn", "Status for present InfiniBand ports not in expected that are not ACTIVE/LinkUp (fail drains for a dead rail without a per-node list).", choices=("fail", "warn", "ignore")),
        "error_counters_warn": Key("any", None, "Error counters whose growth between runs warns: a list, or {counter: min growth}; null = built-in set.", nullable=True),
    },
    # DCGM diagnostics (gcm_checks.gather.dcgm, gcm_checks.checks.dcgm).
    "dcgm": {
        "level": Key("int", 1, "dcgmi diag run level in the epilog (the runner raises it to 2 after hardware suspicion).", choices=(1, 2, 3, 4)),
        "timeout_s": Key("float", None, "Deadline for one dcgmi diag run; null = per level (120/300/2700/9000 s). Capped by the run budget.", nullable=True, minimum=1),
        "dcgmi": Key("str", None, "Path to dcgmi; null = search standard locations (a prolog/epilog has no PATH).", nullable=True),
        "scope": Key("str", "job", "job: diagnose only the job's GPUs (dcgmi -i, safe on shared nodes); node: every GPU.", choices=("job", "node")),
        "use_pydcgm": Key("any", "auto", "auto: DCGM's Python bindings (pydcgm) when installed, else dcgmi; yes/true: pydcgm only; no/false: dcgmi only. "
                          "pydcgm runs in a child process killed at the deadline.", choices=("auto", "yes", "no", True, False)),
    },
    # XIDs in the kernel log (gcm_checks.checks.xid, docs/xid.md).
    "xid": {
        "source": Key("str", "auto", "Kernel log source: auto (/dev/kmsg, journal when the ring buffer no longer reaches the window start), kmsg, journal, or file.", choices=("auto", "kmsg", "journal", "file")),
        "kernel_log_path": Key("str", None, "Kernel log file for source file (or auto): dmesg, dmesg -T, syslog or ISO stamps; .gz ok.", nullable=True),
        "journal_timeout_s": Key("float", 5.0, "Deadline for journalctl; capped by the run budget.", minimum=0.1),
        "health_lookback_s": Key("float", 3600.0, "Health mode scans since the last scan, but never further back than this.", minimum=1),
        "escalate_after_reset": Key("bool", True, "The same drain-worthy XID on the same GPU in a later scan (after the remedy) escalates to drain_inspect."),
        "escalate_window_days": Key("float", 30.0, "How long an XID is remembered for escalation.", minimum=0),
    },
    # Job reports and notifications (gcm_checks.report / gcm_checks.notify, docs/reports.md).
    "report": {
        "spool_dir": Key("str", "/var/spool/gcm-checks/contrib", "Where each node's epilog leaves its evidence; a cluster filesystem for multi-node jobs."),
        "report_dir": Key("str", "/var/spool/gcm-checks/reports", "Node-local durable copy of every assembled report, for admins."),
        "outbox_dir": Key("str", "/var/spool/gcm-checks/outbox", "Undelivered/sent notifications (node-local)."),
        "copy_to_workdir": Key("bool", False, "Also write gcm-report-<job>.txt into the job's work dir, as the job user."),
        "workdir_name": Key("str", "gcm-report-{job}.{ext}", "File name of the user's copy."),
        "log_tail_bytes": Key("int", 65536, "Bytes of each log's tail in a report.", minimum=0),
        "log_total_bytes": Key("int", 262144, "Bytes of log tails in a report, all files together.", minimum=0),
        "evidence_max_items": Key("int", 200, "Per node and kind (xids, results, ...) items kept in a report.", minimum=1),
        "gather_timeout_s": Key("float", 300.0, "Assemble a multi-node report without the missing nodes after this long.", minimum=0),
        "read_timeout_s": Key("float", 5.0, "Deadline for reading a user's log or writing the user's copy.", minimum=0.1),
        "retention_s": Key("float", 2592000.0, "Keep assembled spool dirs and sent-outbox records this long (reports in report_dir are kept).", minimum=0),
    },
    "notify": {
        "channels": Key("list", [], "Sinks: [{name, type: smtp|webhook|slack, ...}] (docs/reports.md)."),
        # Who is told about which job: the most specific of users, partitions, clusters, then default.
        "policy": {
            "default": Key("str", "on_failure", "Whether a job's report is sent: on_failure, always or never.", choices=POLICIES),
            "clusters": Key("dict", {}, "Policy per cluster name: {cluster: on_failure|always|never}."),
            "partitions": Key("dict", {}, "Policy per partition: {partition: on_failure|always|never}."),
            "users": Key("dict", {}, "Policy per user: {user: on_failure|always|never}."),
            "allow_job_override": Key("bool", True, "A job's --extra=gcm:notify=<policy> (or its comment) overrides the policy for that job."),
        },
        # E-mail recipients: the job's --mail-user, then addresses, then domain_template.
        "email": {
            "use_mail_user": Key("bool", True, "Send to the job's --mail-user when Slurm gives one."),
            "addresses": Key("dict", {}, "Address per user: {user: addr}."),
            "domain_template": Key("str", "", "Address for other users, e.g. '{user}@example.org'; '' = none."),
        },
        "handoff": Key("str", "detach", "How the epilog delivers: inline (within its budget), detach (background process), queue (next flush).", choices=("inline", "detach", "queue")),
        "budget_s": Key("float", 10.0, "Most seconds one delivery run spends sending.", minimum=0.1),
        "backoff_base_s": Key("float", 60.0, "First retry delay; doubles per failure.", minimum=0),
        "backoff_max_s": Key("float", 3600.0, "Longest retry delay.", minimum=0),
        "give_up_after_s": Key("float", 604800.0, "Move a message to outbox/dead (kept) after this long.", minimum=0),
        "outbox_dir": Key("str", "", "Overrides report.outbox_dir when set."),
        # Admin alerts (the mass-drain brake; gcm_checks.notify.admin, docs/slurm.md).
        "admin": {
            "channels": Key("any", [], "Channel name(s) in notify.channels that get admin alerts; [] = every channel with when:."),
            "to": Key("any", [], "Operators' e-mail address(es) for admin alerts; an alert never goes to a job user."),
        },
    },
    # Batched sacct refinement, why, failures (gcm_checks.accounting, docs/accounting.md).
    "accounting": {
        "interval_s": Key("float", 300.0, "At most one sacct call per this many seconds for the whole cluster, however many jobs ended.", minimum=1),
        "notify_wait_s": Key("float", 0.0, "Hold a job's notification this long for refinement; 0 = send at once. Set it (e.g. 120) only where a refinement pass runs.", minimum=0),
        "sacct": Key("str", None, "Absolute path to sacct; null = search standard locations (Slurm scripts have no PATH).", nullable=True),
        "timeout_s": Key("float", 30.0, "Deadline for one sacct call.", minimum=0.1),
        "designated_node": Key("str", None, "Health mode refines only on this node; null = health mode never refines (use EpilogSlurmctld or a timer).", nullable=True),
        "lookback_s": Key("float", 3600.0, "First pass ever: refine jobs that ended this long ago.", minimum=0),
        "settle_s": Key("float", 10.0, "A job that ended less than this ago waits for the next pass (slurmdbd's placeholder rows).", minimum=0),
        "overlap_s": Key("float", 120.0, "Each window starts this long before the last one ended (slurmdbd lags slurmctld).", minimum=0),
        "report_wait_s": Key("float", 900.0, "Keep retrying a run whose report is not written yet this long (no extra sacct call).", minimum=0),
        "keep_s": Key("float", 604800.0, "Remember refined jobs this long.", minimum=0),
        "state_file": Key("str", None, "Pass state; null = <state_dir>/accounting-pass.json.", nullable=True),
    },
    "qualify": {
        "results_dir": Key("str", "/var/lib/gcm-checks/qualify", "Where qualify writes its versioned JSON result files; a cluster filesystem in production, so fleet report can read every node's."),
        "level": Key("str", "standard", "Default level for 'gcm-checks qualify'.", choices=("quick", "standard", "deep")),
        "levels": Key("dict", {}, "Per-level overrides: {quick|standard|deep: {suites, dcgm_level, probe_s, budget_s}}."),
        "probe": Key("str", "auto", "Performance probe: auto (torch, then cupy, then dcgm), torch, cupy, dcgm or none.", choices=("auto", "torch", "cupy", "dcgm", "none")),
        "fraction": Key("float", 0.85, "A GPU below this fraction of its model's baseline fails.", minimum=0.0),
        "sibling_threshold": Key("float", 0.10, "A GPU this fraction below the median of the node's other GPUs fails, baseline or not.", minimum=0.0),
        "baselines": Key("dict", {}, "Baseline overrides by model key or exact NVML name: {H100-SXM: {gemm_tflops, mem_bw_gbps}}."),
    },
    "telemetry": {
        "prometheus_textfile_dir": Key("str", None, "node_exporter --collector.textfile.directory: gcm_checks_<mode>.prom, _drain, _gpu, _ib and _job_<id>.prom are written there atomically (docs/telemetry.md); null = off.", nullable=True),
        "otlp_endpoint": Key("str", None, "OTLP/HTTP endpoint base URL (http://collector:4318); null = off. Needs gcm-checks[otlp].", nullable=True),
        "otlp_timeout_s": Key("float", 2.0, "Deadline for one OTLP export.", minimum=0.1),
        "otlp_headers": Key("dict", {}, "Extra HTTP headers for the OTLP exporter (auth tokens)."),
    },
    "epilog": {
        "budget_s": Key("float", None, "Budget for the epilog; null = budget_s. DCGM needs more than the prolog.", nullable=True, minimum=0.5),
        "query_job": Key("bool", True, "Ask slurmctld once (scontrol show job) for the job's state, reason, name and start: "
                         "Slurm 22.05 gives the epilog no state, and a time limit and scancel both exit 0."),
        "dcgm_level_after_failure": Key("int", 2, "DCGM diag level after a job that failed (1 after a success).", minimum=1),
        "report": Key("bool", True, "Contribute evidence to the job report and notify per policy."),
        "report_budget_s": Key("float", 3.0, "Time the epilog gives the report/notification step (delivery is handed off).", minimum=0.1),
    },
    "nodes": Key("list", [], "Per-node overrides: [{match: 'gpu[001-128]' | [patterns], set: {section: {key: value}}}]."),
}


def _describe(k: Key) -> str:
    base = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string",
            "list": "a list", "dict": "a mapping", "any": "a value"}[k.kind]
    if k.choices:
        base = "one of " + ", ".join(map(str, k.choices))
    if k.kind in ("int", "float"):
        base = "a finite " + base[2:] if k.kind == "float" else base
    if k.minimum is not None and k.maximum is not None:
        base += f" in [{k.minimum:g}, {k.maximum:g}]"
    elif k.minimum is not None:
        base += f" >= {k.minimum:g}"
    elif k.maximum is not None:
        base += f" <= {k.maximum:g}"
    if k.nullable:
        base += " or null"
    return base


def _check_value(source: str, dotted: str, k: Key, v: Any) -> Any:
    if v is None:
        if k.nullable:
            return None
        raise ConfigError(source, dotted, _describe(k), v)
    ok = {
        "int": isinstance(v, int) and not isinstance(v, bool),
        "float": isinstance(v, (int, float)) and not isinstance(v, bool),
        "bool": isinstance(v, bool),
        "str": isinstance(v, str),
        "list": isinstance(v, list),
        "dict": isinstance(v, dict),
        "any": True,
    }[k.kind]
    if ok and k.kind in ("int", "float") and not math.isfinite(v):
        ok = False  # .nan compares false with every bound; .inf is no deadline
    if not ok or (k.choices and v not in k.choices) or (k.minimum is not None and v < k.minimum) \
            or (k.maximum is not None and v > k.maximum):
        raise ConfigError(source, dotted, _describe(k), v)
    return float(v) if k.kind == "float" else v


def _validate_section(source: str, data: Any, schema: Dict[str, Any], prefix: str, allow_nodes: bool) -> None:
    if not isinstance(data, dict):
        raise ConfigError(source, prefix or "(top level)", "a mapping", data)
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        spec = schema.get(key)
        if spec is None:
            known = ", ".join(sorted(schema))
            raise ConfigError(source, dotted, f"a known key (one of: {known})", None)
        if isinstance(spec, dict):
            _validate_section(source, value, spec, dotted + ".", allow_nodes)
        elif key == "nodes" and not prefix:
            if not allow_nodes:
                raise ConfigError(source, dotted, "no nested nodes sections")
            _validate_nodes(source, value)
        else:
            _check_value(source, dotted, spec, value)
            if dotted == "checks.severity":
                for cid, st in value.items():
                    if st not in STATUS_CHOICES:
                        raise ConfigError(source, f"checks.severity.{cid}", "one of " + ", ".join(STATUS_CHOICES), st)
            if dotted.endswith(("notify.admin.channels", "notify.admin.to")) and not (
                    isinstance(value, str) or (isinstance(value, list) and all(isinstance(x, str) for x in value))):
                raise ConfigError(source, dotted, "a string or a list of strings", value)
            if dotted.endswith(("notify.policy.clusters", "notify.policy.partitions", "notify.policy.users")):
                for who, pol in value.items():
                    if pol not in POLICIES:
                        raise ConfigError(source, f"{dotted}.{who}", "one of " + ", ".join(POLICIES), pol)


def _validate_nodes(source: str, nodes: Any) -> None:
    if not isinstance(nodes, list):
        raise ConfigError(source, "nodes", "a list of {match, set}", nodes)
    for i, sec in enumerate(nodes):
        where = f"nodes[{i}]"
        if not isinstance(sec, dict) or "match" not in sec:
            raise ConfigError(source, where, "a mapping with 'match' and 'set'", sec)
        extra = set(sec) - {"match", "set"}
        if extra:
            raise ConfigError(source, f"{where}.{sorted(extra)[0]}", "only 'match' and 'set'")
        m = sec["match"]
        if not (isinstance(m, str) or (isinstance(m, list) and all(isinstance(x, str) for x in m))):
            raise ConfigError(source, f"{where}.match", "a hostlist/glob/re: pattern or a list of them", m)
        from gcm_checks.hostlist import validate

        for pat in ([m] if isinstance(m, str) else m):
            try:
                validate(pat)
            except ValueError as e:
                raise ConfigError(source, f"{where}.match", f"a valid pattern ({e})", pat) from None
        _validate_section(source, sec.get("set") or {}, SCHEMA, f"{where}.set.", allow_nodes=False)


def check_ids_known(data: Mapping[str, Any], source: str) -> None:
    """Raise ConfigError for an id in ``checks.disabled`` (top level or any
    node section) that names no registered check. Only ``config check`` calls
    this: it imports every check module, which the prolog must not pay for
    (at run time an unknown id is a warning, gcm_checks.suite)."""
    from gcm_checks.checks import load_all
    from gcm_checks.registry import CHECKS, unmatched

    load_all()
    lists = [("checks.disabled", (data.get("checks") or {}).get("disabled"))]
    for i, sec in enumerate(data.get("nodes") or []):
        lists.append((f"nodes[{i}].set.checks.disabled", (((sec or {}).get("set") or {}).get("checks") or {}).get("disabled")))
    for key, ids in lists:
        bad = unmatched(ids or [], CHECKS)
        if bad:
            raise ConfigError(source, key, "registered check ids or prefixes ending in '*' (gcm-checks check --list)",
                              bad)


def defaults(schema: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    schema = SCHEMA if schema is None else schema
    return {k: defaults(v) if isinstance(v, dict) else copy.deepcopy(v.default) for k, v in schema.items()}


def iter_keys(schema: Optional[Dict[str, Any]] = None, prefix: str = "") -> List[Tuple[str, Key]]:
    schema = SCHEMA if schema is None else schema
    out: List[Tuple[str, Key]] = []
    for k, v in schema.items():
        if isinstance(v, dict):
            out.extend(iter_keys(v, f"{prefix}{k}."))
        else:
            out.append((f"{prefix}{k}", v))
    return out
