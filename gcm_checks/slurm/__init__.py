"""The only module that talks to Slurm (rule 3, STYLE.md practice 6).

Everything Slurm-visible that gcm-checks does - drain, resume, node features,
the node's ``Extra`` summary, a job's comment - goes through one small
``SlurmBackend`` interface. The default backend runs ``scontrol`` by absolute
path (a prolog has no PATH, Slurm 22.05) through ``gcm_checks.proc.run`` with a
timeout: an unreachable slurmctld must cost a bounded wait and a log line,
never a hang and never a drain (peer tools drained whole racks with "Script
timed out" when ``scontrol`` hung).

Ownership rules, enforced by ``apply_drain`` / ``apply_resume``:

* our drain reasons start with ``gcm:``; a reason that does not is someone
  else's (an admin's maintenance, Slurm's own "Prolog error") and is never
  overwritten and never resumed (NHC once resumed nodes drained for
  maintenance);
* every drain we make is recorded under ``state_dir`` so a healthy run can tell
  without any RPC whether a gcm drain may exist - a healthy prolog makes zero
  ``REQUEST_UPDATE_NODE`` calls, a drain exactly one.

Health is published as node features (``gcm_ok`` / ``gcm_degraded`` /
``gcm_qualified``) plus a compact summary in ``Extra``, written only on
transitions. Features set with scontrol are lost on ``scontrol reconfigure``
(``Extra`` survives), so the last applied state is kept locally and health mode
re-applies it.

This module is on the prolog path: it imports nothing heavy at top level.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, TextIO, Tuple

try:  # Python >= 3.8
    from typing import Protocol
except ImportError:  # pragma: no cover
    Protocol = object  # type: ignore

GCM_PREFIX = "gcm:"
# Features gcm-checks owns; every other feature on a node is preserved.
GCM_FEATURES = ("gcm_ok", "gcm_degraded", "gcm_qualified")
HEALTH_FEATURES = {"ok": "gcm_ok", "degraded": "gcm_degraded"}
MAX_REASON = 200
DEFAULT_TIMEOUT_S = 5.0
# Per node: test clusters run several slurmd on one host sharing one state dir.
DRAIN_STATE_FILE = "slurm-drain.{node}.json"
FEATURE_STATE_FILE = "slurm-features.{node}.json"


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


# --------------------------------------------------------------------------
# Reasons
# --------------------------------------------------------------------------

# Anything that could end an argv word, a reason or a shell command, or that
# renders badly in sinfo/HTML. Log text reaches here (rule 5).
_UNSAFE = re.compile(r"[^A-Za-z0-9 _.,:/+%@#()\[\]{}=~^*?!-]")


def sanitize_reason(text: str, limit: int = MAX_REASON) -> str:
    """Single line of safe printable ASCII, at most ``limit`` characters.

    Strips quotes, backticks, ``$ | & < >``, backslashes, control characters
    and newlines; ``;`` becomes ``,`` (it separates advice: "reset the GPU;
    RMA if it recurs" must keep both halves). ``=`` is replaced too:
    scontrol's one-line output is ``Key=value`` pairs and a stray ``=`` makes
    a reason harder to parse back.
    """
    text = str(text).replace("=", " ").replace(";", ",")
    text = re.sub(r"[\r\n\t\x0b\x0c]+", " ", text)
    text = _UNSAFE.sub("", text)
    text = re.sub(r" {2,}", " ", text).strip()
    if len(text) > limit:
        text = text[: limit - 3].rstrip() + "..."
    return text


# What went wrong, in a word or two, per check-id prefix (longest wins).
# sinfo -R shows 20 characters: "gcm: GPU 3 lost (gpu" must say it all.
_PROBLEM_WORD = {
    "gpu.responsive": "hung", "gpu.nvml": "NVML broken", "gpu.count": "GPU missing", "gpu.pci": "GPU missing",
    "gpu.ecc": "ECC errors", "gpu.row_remap": "row remap", "gpu.retired_pages": "retired pages",
    "gpu.pcie": "PCIe degraded", "gpu.temperature": "too hot", "gpu.throttle": "throttled",
    "gpu.persistence_mode": "persistence off", "gpu.processes": "leftover procs", "xid": "XID", "dcgm": "DCGM fail",
    "ib.hca": "HCA missing", "ib.port.state": "down", "ib.port.phys_state": "link down", "ib.port.rate": "slow link",
    "ib.port.link_layer": "wrong link layer", "ib.port.errors": "link errors", "perf": "slow",
}
_GPU_SUBJECT = re.compile(r"^GPU\s*(\d+)")
_PORT_SUBJECT = re.compile(r"^(\S+)\s+port\s+(\d+)$")
_GPU_AT = re.compile(r"^GPU at (?:[0-9A-Fa-f]+:)?([0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})")
_XID_CODE = re.compile(r"\bXID\s*(\d+)", re.I)
_SXID_CODE = re.compile(r"\bSXid\s*(\d+)")


def reason_head(check_id: str, subject: str, message: str) -> str:
    """The part and the problem in a few words: ``GPU 3 lost``, ``mlx5_3/1 down``."""
    word = ""
    best = -1
    for prefix, w in _PROBLEM_WORD.items():
        if check_id.startswith(prefix) and len(prefix) > best:
            word, best = w, len(prefix)
    if check_id.startswith("gpu.responsive") and ("LOST" in message.upper() or "off the bus" in message):
        word = "lost"
    if check_id.startswith("xid"):
        sx = _SXID_CODE.search(message)  # NVSwitch: "SXid 20034" before "XID"
        m = _XID_CODE.search(message)
        word = f"SXid {sx.group(1)}" if sx else f"XID {m.group(1)}" if m else "XID"
    g = _GPU_SUBJECT.match(subject or "")
    p = _PORT_SUBJECT.match(subject or "")
    at = _GPU_AT.match(subject or "")
    if g:
        part = f"GPU {g.group(1)}"
    elif at:
        part = f"GPU {at.group(1)}"  # the kernel log names the bus, not the index
    elif p:
        part = f"{p.group(1)}/{p.group(2)}"
    else:
        part = (subject or "").split(" (")[0].strip()
    if check_id.startswith("xid"):
        return " ".join(x for x in (word, part) if x)  # "XID 79 GPU 3": the code is the news
    return " ".join(x for x in (part, word or check_id) if x)


def make_drain_reason(check_id: str, subject: str, message: str, context: str = "") -> str:
    """``gcm: <part> <problem> (<check id>): <message>``.

    The first 20 characters (all ``sinfo -R`` shows by default) name the part
    and the problem - ``gcm: GPU 3 lost (gpu`` - the check id follows for
    ``gcm-checks why`` and grep. ``context`` tags the run ("qualify").
    Drains written in the old ``gcm: <check id>: ...`` form stay ours (the
    ``gcm:`` prefix) and ``reason_check`` reads both.
    """
    head = sanitize_reason(reason_head(check_id, subject, message), 40)
    cid = sanitize_reason(f"{context} {check_id}" if context else check_id, 60)
    subj = sanitize_reason(subject, 60)
    body = f"{head} ({cid})"
    # What the head shortened away: a GPU's PCI bus id (RMA paperwork needs
    # it), or a subject the head did not name.
    bus = re.search(r"\(([0-9A-Fa-f:.]+)\)", subj) if _GPU_SUBJECT.match(subj) else None
    if bus:
        body += f" {bus.group(1)}"
    elif _GPU_AT.match(subj):
        body += " " + subj[len("GPU at "):].split()[0]
    elif subj and not _PORT_SUBJECT.match(subj) and subj not in head:
        body += f" {subj}"
    msg = sanitize_reason(message)
    return sanitize_reason(f"{GCM_PREFIX} {body}: {msg}" if msg else f"{GCM_PREFIX} {body}")


_NEW_REASON = re.compile(r"^gcm:\s.*?\((?:[a-z]+\s)?([a-z0-9_]+(?:\.[a-z0-9_]+)+)\)")
_OLD_REASON = re.compile(r"^gcm:\s(?:qualify:\s)?([a-z0-9_]+(?:\.[a-z0-9_]+)*):")


def reason_check(reason: Optional[str]) -> Optional[str]:
    """The check id inside a gcm drain reason, new or old format; None if not ours."""
    if not reason or not reason.startswith(GCM_PREFIX):
        return None
    m = _NEW_REASON.match(reason) or _OLD_REASON.match(reason)
    return m.group(1) if m else None


# --------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------


class SlurmBackend(Protocol):
    def node_info(self, node: str) -> NodeInfo: ...

    def drain(self, node: str, reason: str) -> None: ...

    def resume(self, node: str) -> None: ...

    def set_features(self, node: str, available: List[str], active: List[str]) -> None: ...

    def set_extra(self, node: str, extra: str) -> None: ...

    def set_job_comment(self, job_id: str, comment: str) -> None: ...

    def show_job(self, job_id: str) -> Dict[str, str]: ...


def _feature_arg(features: Sequence[str]) -> str:
    # An empty list must still be sent: scontrol reads "Features=" as "none".
    return ",".join(features)


class _ScontrolUpdates:
    """The scontrol update argv for every write, in one place: the real
    backend runs it, the dry-run backend prints it, and they cannot drift."""

    def _update(self, *argv: str) -> Any:
        raise NotImplementedError

    def drain(self, node: str, reason: str) -> None:
        self._update("update", f"nodename={node}", "state=drain", f"reason={reason}")

    def resume(self, node: str) -> None:
        self._update("update", f"nodename={node}", "state=resume")

    def set_features(self, node: str, available: List[str], active: List[str]) -> None:
        self._update("update", f"nodename={node}", f"AvailableFeatures={_feature_arg(available)}", f"ActiveFeatures={_feature_arg(active)}")

    def set_extra(self, node: str, extra: str) -> None:
        self._update("update", f"nodename={node}", f"Extra={extra}")

    def set_features_and_extra(self, node: str, available: List[str], active: List[str], extra: str) -> None:
        # One update RPC instead of two: health transitions stay cheap.
        self._update("update", f"nodename={node}", f"AvailableFeatures={_feature_arg(available)}",
                     f"ActiveFeatures={_feature_arg(active)}", f"Extra={extra}")

    def set_job_comment(self, job_id: str, comment: str) -> None:
        self._update("update", f"jobid={job_id}", f"comment={comment}")


class ScontrolBackend(_ScontrolUpdates):
    """Runs ``scontrol`` by absolute path, every call under ``timeout_s``."""

    def __init__(self, scontrol: Optional[str] = None, timeout_s: float = DEFAULT_TIMEOUT_S, env: Optional[Dict[str, str]] = None):
        from gcm_checks.proc import which

        # which() also vets an explicit path: a configured but absent scontrol
        # means "no Slurm here", not a crash on the first call.
        self.scontrol = which(scontrol or "scontrol")
        self.timeout_s = float(timeout_s)
        self.env = env
        self.calls: List[Tuple[str, ...]] = []  # argv of every call, for tests and logs

    def _run(self, *args: str) -> str:
        if not self.scontrol:
            raise SlurmError("scontrol: not found (set slurm.scontrol)")
        from gcm_checks.proc import run

        argv = (self.scontrol,) + tuple(args)
        self.calls.append(argv)
        res = run(argv, timeout=self.timeout_s, env=self.env)
        if not res.ok:
            raise SlurmError(res.describe())
        return res.stdout

    def node_info(self, node: str) -> NodeInfo:
        return parse_node(self._run("show", "node", "-o", node))

    def nodes(self, expr: Optional[str] = None) -> List[NodeInfo]:
        """All nodes, or those in a hostlist expression, in one RPC."""
        return parse_nodes(self._run("show", "node", "-o", *([expr] if expr else [])))

    def _update(self, *argv: str) -> str:
        return self._run(*argv)

    def show_job(self, job_id: str) -> Dict[str, str]:
        out = self._run("show", "job", "-o", str(job_id))
        line = next((ln for ln in out.splitlines() if ln.strip().startswith("JobId=")), "")
        if not line:
            raise SlurmError(f"no JobId in scontrol output for job {job_id}")
        return parse_key_values(line)


class DryRunBackend(_ScontrolUpdates):
    """Says what it would do and does nothing (``--dry-run``, report-only).

    Reads go to ``reader`` when one is given (report-only mode on a real
    cluster decides from the real node state), else to ``state``.
    """

    def __init__(self, out: Optional[TextIO] = None, state: Optional[NodeInfo] = None, reader: Optional[SlurmBackend] = None, log: Any = None):
        self.out = out if out is not None else sys.stdout
        self.state = state
        self.reader = reader
        self.log = log
        self.actions: List[str] = []

    def _would(self, *argv: str) -> None:
        from shlex import quote

        def word(a: str) -> str:
            k, eq, v = a.partition("=")
            return f"{k}={quote(v)}" if eq and v else quote(a)

        line = "would run: scontrol " + " ".join(word(a) for a in argv)
        self.actions.append(line)
        if self.log is not None:
            self.log.info(line)
        if self.out is not None:
            print(line, file=self.out)

    def node_info(self, node: str) -> NodeInfo:
        if self.reader is not None:
            try:
                return self.reader.node_info(node)
            except SlurmError as e:
                # A dry run must still say what it would do when slurmctld is
                # not reachable (a demo machine, a node being qualified).
                if self.log is not None:
                    self.log.warning(f"slurm: cannot read node {node} ({e}); assuming it is not drained")
        if self.state is not None:
            return self.state
        return NodeInfo(name=node, state="UNKNOWN")

    def _update(self, *argv: str) -> None:
        self._would(*argv)

    def show_job(self, job_id: str) -> Dict[str, str]:
        if self.reader is not None:
            return self.reader.show_job(job_id)
        return {}


def _setting(settings: Any, key: str, default: Any) -> Any:
    if settings is None:
        return default
    try:
        v = settings.get(key)
    except Exception:  # a Settings without the key, or a plain dict
        v = None
    if v is None and isinstance(settings, dict):
        v = settings.get(key)
    return default if v is None else v


def report_only(settings: Any = None) -> bool:
    """``report_only: true`` (or ``slurm.report_only``): log every decision, drain nothing."""
    return bool(_setting(settings, "report_only", False)) or bool(_setting(settings, "slurm.report_only", False))


def backend_from_settings(settings: Any = None, dry_run: bool = False, out: Optional[TextIO] = None, log: Any = None) -> SlurmBackend:
    """The backend to use: scontrol (``slurm.backend: cli``).

    ``pyslurm`` and ``auto`` are accepted, so a config written for an older
    release still loads, and mean scontrol: the pyslurm backend was removed
    (docs/slurm.md, "Why no pyslurm backend").

    ``dry_run`` or ``slurm.report_only`` wraps the real reader in a
    ``DryRunBackend``. With no scontrol on this machine there is no Slurm to
    change, so the dry-run backend is used as well.
    """
    timeout_s = float(_setting(settings, "slurm.timeout_s", DEFAULT_TIMEOUT_S))
    kind = str(_setting(settings, "slurm.backend", "cli")).lower()
    if kind == "pyslurm" and log is not None:
        log.warning("slurm.backend=pyslurm is no longer supported; using scontrol (docs/slurm.md)")
    real: SlurmBackend = ScontrolBackend(scontrol=_setting(settings, "slurm.scontrol", None), timeout_s=timeout_s)
    if real.scontrol is None:  # type: ignore[attr-defined]
        chosen: SlurmBackend = DryRunBackend(out=out if out is not None else sys.stderr, log=log)
    elif dry_run or report_only(settings):
        chosen = DryRunBackend(out=out if out is not None else sys.stderr, reader=real, log=log)
    else:
        chosen = real
    # How Extra is written travels with the backend (apply_features reads it),
    # so no caller has to thread the setting through.
    chosen.extra_format = str(_setting(settings, "slurm.extra_format", "auto") or "auto")  # type: ignore[attr-defined]
    return chosen


# --------------------------------------------------------------------------
# Local state (so a healthy run needs no RPC)
# --------------------------------------------------------------------------


def _read_json(path: str) -> Optional[dict]:
    from gcm_checks.state import read_json  # bounded size and depth, no symlink

    return read_json(path)


def _write_json(path: str, data: dict) -> None:
    # Atomic: a crash mid-write must not leave a half record that makes the
    # next run believe (or forget) that we drained the node.
    from gcm_checks.state import write_json_atomic

    write_json_atomic(path, data, sort_keys=True)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _state_path(state_dir: str, pattern: str, node: str) -> str:
    return os.path.join(state_dir, pattern.format(node=re.sub(r"[^A-Za-z0-9_.-]", "_", node) or "_"))


def drain_record(state_dir: Optional[str], node: str) -> Optional[dict]:
    """Our last drain of ``node`` as recorded locally, or None."""
    if not state_dir:
        return None
    rec = _read_json(_state_path(state_dir, DRAIN_STATE_FILE, node))
    if rec and rec.get("node") == node:
        return rec
    return None


def feature_record(state_dir: Optional[str], node: str) -> Optional[dict]:
    if not state_dir:
        return None
    rec = _read_json(_state_path(state_dir, FEATURE_STATE_FILE, node))
    if rec and rec.get("node") == node:
        return rec
    return None


# --------------------------------------------------------------------------
# Ownership: drain and resume
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class DrainOutcome:
    # drained | already | kept_foreign | error | would_drain
    action: str
    reason: str
    detail: str = ""
    previous_reason: Optional[str] = None


@dataclass(frozen=True)
class ResumeOutcome:
    # resumed | would_resume | not_drained | kept_foreign | error | reason_changed | not_passed
    action: str
    detail: str = ""
    previous_reason: Optional[str] = None


def _log(log: Any, level: str, msg: str) -> None:
    if log is None:
        return
    fn = getattr(log, level, None) or getattr(log, "info", None)
    if fn is not None:
        fn(msg)


def apply_drain(
    backend: SlurmBackend,
    node: str,
    reason: str,
    *,
    state_dir: Optional[str] = None,
    log: Any = None,
    check: str = "",
) -> DrainOutcome:
    """Drain ``node`` with our reason unless someone else already owns it.

    Reads the node first (REQUEST_NODE_INFO), then at most one
    REQUEST_UPDATE_NODE. A foreign drain (reason not starting ``gcm:``) is kept
    as it is and our finding is only logged: an admin's maintenance reason
    is worth more than ours, and it keeps the node out of service anyway.
    Slurm has no compare-and-set for node updates, so an admin drain landing
    between our read and our update (milliseconds) would be replaced; the
    admin's ``scontrol`` wins again if repeated.
    """
    reason = reason if reason.startswith(GCM_PREFIX) else f"{GCM_PREFIX} {reason}"
    reason = sanitize_reason(reason)
    try:
        info = backend.node_info(node)
    except SlurmError as e:
        _log(log, "error", f"slurm: cannot read node {node} before draining ({e}); not draining: {reason}")
        return DrainOutcome("error", reason, str(e))
    if info.drained and not info.gcm_owned:
        _log(log, "warning", f"slurm: {node} already drained by {info.reason_user or '?'} ({info.reason!r}); keeping it; our finding: {reason}")
        return DrainOutcome("kept_foreign", reason, "drained by someone else", info.reason)
    if info.drained and info.reason == reason:
        _record_drain(state_dir, node, reason, check)
        return DrainOutcome("already", reason, "", info.reason)
    if info.drained:
        # Already out of service by an earlier gcm finding (the prolog's, and
        # now the epilog's or health's): keep the first reason. Rewriting it
        # costs an RPC per finding and makes the reason flap in sinfo -R.
        _log(log, "info", f"slurm: {node} already drained by gcm ({info.reason!r}); also found: {reason}")
        return DrainOutcome("already", reason, "drained by an earlier gcm finding", info.reason)
    if not info.drained and info.reason and not info.gcm_owned:
        # e.g. DOWN with "Not responding": not a drain, but not ours to rewrite
        # either. A drain would replace the reason, so log and keep it.
        if "DOWN" in info.state.upper():
            _log(log, "warning", f"slurm: {node} is {info.state} ({info.reason!r}); keeping it; our finding: {reason}")
            return DrainOutcome("kept_foreign", reason, "down with a foreign reason", info.reason)
    try:
        backend.drain(node, reason)
    except SlurmError as e:
        _log(log, "error", f"slurm: drain of {node} failed ({e}): {reason}")
        return DrainOutcome("error", reason, str(e), info.reason)
    if isinstance(backend, DryRunBackend):
        return DrainOutcome("would_drain", reason, "dry run", info.reason)
    _record_drain(state_dir, node, reason, check)
    _log(log, "warning", f"slurm: drained {node}: {reason}")
    return DrainOutcome("drained", reason, "", info.reason)


def _record_drain(state_dir: Optional[str], node: str, reason: str, check: str) -> None:
    if not state_dir:
        return
    try:
        _write_json(_state_path(state_dir, DRAIN_STATE_FILE, node), {"node": node, "reason": reason, "check": check, "time": time.time()})
    except OSError:
        pass  # losing the record only means a later resume needs an admin


def apply_resume(
    backend: SlurmBackend,
    node: str,
    *,
    force: bool = False,
    state_dir: Optional[str] = None,
    log: Any = None,
    expect_reason: Optional[str] = None,
) -> ResumeOutcome:
    """Resume ``node`` only if its drain is ours (``gcm:``), or if ``force``.

    ``expect_reason`` (health mode) narrows "ours" to the very drain we made:
    if the reason changed since, someone - perhaps an admin with
    ``gcm-checks node drain`` - drained it again, and it is not ours to lift.
    """
    try:
        info = backend.node_info(node)
    except SlurmError as e:
        _log(log, "error", f"slurm: cannot read node {node} before resuming ({e})")
        return ResumeOutcome("error", str(e))
    if not info.drained:
        if state_dir:
            _remove(_state_path(state_dir, DRAIN_STATE_FILE, node))
        return ResumeOutcome("not_drained", info.state, info.reason)
    if expect_reason is not None and info.gcm_owned and info.reason != expect_reason and not force:
        _log(log, "info", f"slurm: not resuming {node}: reason changed since our drain ({info.reason!r})")
        if state_dir:
            _remove(_state_path(state_dir, DRAIN_STATE_FILE, node))
        return ResumeOutcome("reason_changed", "drained again since our drain", info.reason)
    if not info.gcm_owned and not force:
        _log(log, "warning", f"slurm: not resuming {node}: drained by {info.reason_user or '?'} ({info.reason!r}), not by gcm")
        return ResumeOutcome("kept_foreign", "drained by someone else", info.reason)
    if not info.gcm_owned and force:
        _log(log, "warning", f"slurm: --force: resuming {node} drained by {info.reason_user or '?'} ({info.reason!r})")
    try:
        backend.resume(node)
    except SlurmError as e:
        _log(log, "error", f"slurm: resume of {node} failed ({e})")
        return ResumeOutcome("error", str(e), info.reason)
    if isinstance(backend, DryRunBackend):
        # Nothing was resumed: never say so (one wording: "would resume").
        _log(log, "info", f"slurm: would resume {node} (drained: {info.reason!r})")
        return ResumeOutcome("would_resume", "dry run", info.reason)
    if state_dir:
        _remove(_state_path(state_dir, DRAIN_STATE_FILE, node))
    _log(log, "info", f"slurm: resumed {node} (was: {info.reason!r})")
    return ResumeOutcome("resumed", "", info.reason)


# Drains by these checks are never lifted automatically. They judge events
# (an XID in the kernel log, a diagnostic run at job end), not a state that a
# later run can re-measure: "no new XID since the last scan" passes right after
# the drain and says nothing about whether the GPU was repaired.
NO_AUTO_RESUME = ("xid.", "dcgm.")


def resume_if_passed(
    backend: SlurmBackend,
    node: str,
    passed_checks: Sequence[str],
    *,
    state_dir: Optional[str],
    log: Any = None,
) -> Optional[ResumeOutcome]:
    """Health mode: resume our own drain once the check that caused it passes.

    Without a local drain record this makes no Slurm call at all, so a healthy
    node costs zero RPCs. The ownership check against slurmctld still happens
    before the resume (the admin may have re-drained the node since).
    """
    rec = drain_record(state_dir, node)
    if rec is None:
        return None
    check = rec.get("check") or ""
    if not check or check.startswith(NO_AUTO_RESUME):
        _log(log, "info", f"slurm: {node} stays drained: {check or 'an unrecorded check'} is not re-measurable; resume by hand")
        return ResumeOutcome("not_passed", check, rec.get("reason"))
    if check not in passed_checks:
        _log(log, "info", f"slurm: {node} stays drained: {check} did not run or did not pass")
        return ResumeOutcome("not_passed", check, rec.get("reason"))
    return apply_resume(backend, node, state_dir=state_dir, log=log, expect_reason=rec.get("reason"))


# --------------------------------------------------------------------------
# Features and Extra, on transitions only
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class FeatureOutcome:
    # unchanged | applied | reapplied | error
    action: str
    features: Tuple[str, ...] = ()
    detail: str = ""


def merge_features(current: Sequence[str], gcm: Sequence[str], manage: Sequence[str] = GCM_FEATURES) -> List[str]:
    """Every feature we do not manage here, in order, then ours."""
    managed = set(manage) | set(gcm)
    keep = [f for f in current if f not in managed]
    return keep + [f for f in gcm if f not in keep]


def summary_extra(status: str, failing: Sequence[str] = (), when: Optional[float] = None) -> str:
    """Compact health summary for the node's ``Extra`` (survives restarts)."""
    ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when if when is not None else time.time()))
    s = f"gcm {status} {ts}"
    if failing:
        s += " " + ",".join(failing[:5])
    return sanitize_reason(s, 200)


# Extra is one free-text field shared with admins (and with other tools):
# gcm writes "gcm <status> ..." segments, one per slot, separated by "; ",
# and keeps everything else in the field as it was. Our segments never hold
# ";" (sanitize_reason strips it).
_EXTRA_SLOTS = {"ok": "health", "degraded": "health", "qualified": "qualify", "qualify-failed": "qualify"}
_EXTRA_SEGMENT = re.compile(r"gcm (\S+)[^;]*")


def _extra_slot(word: str) -> str:
    return _EXTRA_SLOTS.get(word, word)


EXTRA_FORMATS = ("auto", "text", "json")


def _json_extra(current: Optional[str]) -> Optional[Dict[str, Any]]:
    text = (current or "").strip()
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _merge_extra_json(obj: Dict[str, Any], current: Optional[str], ours: str) -> str:
    """Our segment as flat keys of the node's JSON Extra, which
    ``SchedulerParameters=extra_constraints`` requires and jobs can filter on
    (``sbatch --extra "gcm_health=ok"``). Other keys are kept."""
    out = dict(obj)
    if current and not obj and current.strip():
        out["text"] = current.strip()  # an admin's free text survives the switch to JSON
    words = ours.split()
    if len(words) >= 3 and words[0] == "gcm":
        slot = _extra_slot(words[1])
        out[f"gcm_{slot}"] = words[1]
        out[f"gcm_{slot}_at"] = words[2]
        if len(words) > 3:
            out[f"gcm_{slot}_failing"] = words[3]
        else:
            out.pop(f"gcm_{slot}_failing", None)
    return json.dumps(out, separators=(",", ":"))


def gcm_summary(extra: Optional[str]) -> Optional[str]:
    """Our health summary from a node's Extra, text or JSON form, as text."""
    obj = _json_extra(extra)
    if obj is not None:
        if "gcm_health" not in obj:
            return None
        return " ".join(str(x) for x in ("gcm", obj.get("gcm_health"), obj.get("gcm_health_at", ""),
                                            obj.get("gcm_health_failing", "")) if x).strip()
    for piece in (extra or "").split(";"):
        seg = _EXTRA_SEGMENT.fullmatch(piece.strip())
        if seg is not None and _extra_slot(seg.group(1)) == "health":
            return piece.strip()
    return None


def merge_extra(current: Optional[str], ours: str, fmt: str = "auto") -> str:
    """``current`` Extra with our segment for ``ours``' slot replaced (or
    added); foreign text and our other slots are kept as they are.

    ``fmt``: ``text`` (``rack=12; gcm ok ...``), ``json`` (flat keys in a
    JSON object: ``{"rack":"12","gcm_health":"ok",...}``), or ``auto`` -
    JSON when the node's Extra already is a JSON object, text otherwise.
    """
    current = current or ""
    if not ours:
        return current
    obj = _json_extra(current)
    if fmt == "json" or (fmt == "auto" and obj is not None):
        return _merge_extra_json(obj or {}, current if obj is None else None, ours)
    m = _EXTRA_SEGMENT.fullmatch(ours)
    slot = _extra_slot(m.group(1)) if m else None
    pieces = [p for p in current.split(";")]
    out: List[str] = []
    replaced = False
    for piece in pieces:
        seg = _EXTRA_SEGMENT.fullmatch(piece.strip())
        if seg is not None and slot is not None and _extra_slot(seg.group(1)) == slot:
            if not replaced:
                out.append(ours)
                replaced = True
            continue
        if piece.strip():
            out.append(piece.strip())
    if not replaced:
        out.append(ours)
    return "; ".join(out)


def apply_features(
    backend: SlurmBackend,
    node: str,
    gcm_features: Sequence[str],
    extra: Optional[str] = None,
    *,
    state_dir: Optional[str] = None,
    log: Any = None,
    verify: bool = False,
    manage: Sequence[str] = GCM_FEATURES,
    stamp: Optional[str] = None,
    extra_format: Optional[str] = None,
) -> FeatureOutcome:
    """Publish ``gcm_features`` (e.g. ["gcm_ok"]) and ``extra`` on transitions.

    If the local record already says these features are applied, no RPC is
    made unless ``verify``: then the node is read and, if a reconfigure wiped
    the features, they are re-applied from the record. Extra's timestamp does
    not make a transition on its own; only the feature set does. Only the
    features in ``manage`` are replaced: health mode manages gcm_ok and
    gcm_degraded and leaves qualification's gcm_qualified alone.
    """
    want = sorted(set(gcm_features))
    managed = set(manage) | set(want)
    rec = feature_record(state_dir, node)
    if rec is not None and stamp is not None and rec.get("stamp") != stamp:
        # slurm.conf changed since we last looked: a reconfigure that wiped
        # scontrol-set features is likely. Detected locally, without an RPC.
        verify = True
    if rec is not None and sorted(rec.get("features") or []) == want and not verify:
        return FeatureOutcome("unchanged", tuple(want))
    try:
        info = backend.node_info(node)
    except SlurmError as e:
        _log(log, "error", f"slurm: cannot read node {node} features ({e})")
        return FeatureOutcome("error", tuple(want), str(e))
    have = sorted(f for f in info.active_features if f in managed)
    have_avail = sorted(f for f in info.available_features if f in managed)
    if have == want and have_avail == want and rec is not None and sorted(rec.get("features") or []) == want:
        if state_dir and not isinstance(backend, DryRunBackend):
            try:  # verified now: restart the verify clock
                _write_json(_state_path(state_dir, FEATURE_STATE_FILE, node), dict(rec, time=time.time(), stamp=stamp))
            except OSError:
                pass
        return FeatureOutcome("unchanged", tuple(want))
    available = merge_features(info.available_features, want, managed)
    active = merge_features(info.active_features, want, managed)
    ours = extra if extra is not None else (rec or {}).get("extra") or ""
    # Only our own segment changes; an admin's text in Extra is kept.
    fmt = extra_format or getattr(backend, "extra_format", None) or "auto"  # slurm.extra_format
    extra_value = merge_extra(info.extra, ours, fmt)
    try:
        if hasattr(backend, "set_features_and_extra"):
            backend.set_features_and_extra(node, available, active, extra_value)  # type: ignore[attr-defined]
        else:
            backend.set_features(node, available, active)
            if extra_value:
                backend.set_extra(node, extra_value)
    except SlurmError as e:
        _log(log, "error", f"slurm: setting features on {node} failed ({e})")
        return FeatureOutcome("error", tuple(want), str(e))
    action = "reapplied" if (rec is not None and sorted(rec.get("features") or []) == want) else "applied"
    if state_dir and not isinstance(backend, DryRunBackend):
        try:
            _write_json(_state_path(state_dir, FEATURE_STATE_FILE, node), {"node": node, "features": want, "extra": ours, "time": time.time(), "stamp": stamp})
        except OSError:
            pass
    _log(log, "info", f"slurm: {action} features {want} on {node}")
    return FeatureOutcome(action, tuple(want))


# --------------------------------------------------------------------------
# In-memory backend: for unit tests and simulations (gcm_checks.testing may
# re-export it). It models the parts of slurmctld our logic depends on.
# --------------------------------------------------------------------------


class MemoryBackend:
    """A fake slurmctld holding ``NodeInfo`` per node; counts update RPCs.

    ``fail_with`` makes every call raise ``SlurmError`` (slurmctld down).
    """

    def __init__(self, nodes: Optional[Dict[str, NodeInfo]] = None, fail_with: Optional[str] = None):
        self.nodes: Dict[str, NodeInfo] = dict(nodes or {})
        self.jobs: Dict[str, Dict[str, str]] = {}
        self.fail_with = fail_with
        self.updates: List[Tuple[str, ...]] = []  # one entry per REQUEST_UPDATE_NODE/JOB
        self.reads = 0

    def _check(self) -> None:
        if self.fail_with:
            raise SlurmError(self.fail_with)

    def _node(self, node: str) -> NodeInfo:
        if node not in self.nodes:
            self.nodes[node] = NodeInfo(name=node, state="IDLE")
        return self.nodes[node]

    def _set(self, node: str, **kw: Any) -> None:
        from dataclasses import replace

        self.nodes[node] = replace(self._node(node), **kw)

    def node_info(self, node: str) -> NodeInfo:
        self._check()
        self.reads += 1
        return self._node(node)

    def drain(self, node: str, reason: str) -> None:
        self._check()
        self.updates.append(("drain", node, reason))
        st = self._node(node).state.split("+")[0]
        self._set(node, state=f"{st}+DRAIN", reason=reason, reason_user="root")

    def resume(self, node: str) -> None:
        self._check()
        self.updates.append(("resume", node))
        if not self._node(node).drained:
            raise SlurmError("scontrol: exit 1: slurm_update error: Invalid node state specified")
        self._set(node, state=self._node(node).state.split("+")[0], reason=None, reason_user=None)

    def set_features(self, node: str, available: List[str], active: List[str]) -> None:
        self._check()
        self.updates.append(("features", node, ",".join(available), ",".join(active)))
        self._set(node, available_features=tuple(available), active_features=tuple(active))

    def set_extra(self, node: str, extra: str) -> None:
        self._check()
        self.updates.append(("extra", node, extra))
        self._set(node, extra=extra or None)

    def set_features_and_extra(self, node: str, available: List[str], active: List[str], extra: str) -> None:
        self._check()
        self.updates.append(("features+extra", node, ",".join(available), ",".join(active), extra))
        self._set(node, available_features=tuple(available), active_features=tuple(active), extra=extra or None)

    def set_job_comment(self, job_id: str, comment: str) -> None:
        self._check()
        self.updates.append(("comment", str(job_id), comment))
        self.jobs.setdefault(str(job_id), {})["Comment"] = comment

    def show_job(self, job_id: str) -> Dict[str, str]:
        self._check()
        return dict(self.jobs.get(str(job_id), {}))


def conf_stamp(env: Optional[Dict[str, str]] = None) -> Optional[str]:
    """mtime and size of slurm.conf: changes when an admin edits it before a reconfigure."""
    env = os.environ if env is None else env
    path = env.get("SLURM_CONF") or "/etc/slurm/slurm.conf"
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_mtime_ns}:{st.st_size}"


@dataclass(frozen=True)
class CensusEntry:
    """One node as the mass-drain brake counts it."""

    name: str
    partitions: Tuple[str, ...]
    drained: bool
    reason: Optional[str]
    since: Optional[float]  # when the reason was set (epoch), when Slurm says


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


def node_census(backend: SlurmBackend) -> List[CensusEntry]:
    """Every node's partitions and drain, in one read (REQUEST_NODE_INFO).

    Only the mass-drain brake calls this, and only on the failure path: a
    healthy run never reads the cluster.
    """
    real = getattr(backend, "reader", None) or backend
    if isinstance(real, ScontrolBackend):
        text = real._run("show", "node", "-o")
        return [_census_from_line(ln) for ln in text.splitlines() if ln.strip().startswith("NodeName=")]
    table = getattr(real, "nodes", None)
    infos = list(table.values()) if isinstance(table, dict) else (list(table(None)) if callable(table) else None)
    if infos is None:
        raise SlurmError("this backend cannot list nodes")
    return [CensusEntry(i.name, (), i.drained, i.reason, None) for i in infos]


def list_nodes(backend: SlurmBackend, names: Sequence[str] = ()) -> List[NodeInfo]:
    """NodeInfo for ``names`` (hostlist expressions allowed with scontrol), or all nodes."""
    bulk = getattr(backend, "nodes", None)
    if bulk is not None:
        return list(bulk(",".join(names) if names else None))
    if not names:
        raise SlurmError("listing all nodes needs the scontrol backend; name the nodes")
    return [backend.node_info(n) for n in names]


# --------------------------------------------------------------------------
# Accounting: sacct (issue 9, gcm_checks/accounting)
#
# Added by the accounting area. Only the batched refinement pass, ``why`` and
# ``failures`` call these - never the prolog or a per-node epilog: one sacct
# per job end on every node is exactly the slurmdbd load Slurm's docs warn
# prolog/epilog authors about. Parsing is pure and tested from text.
# --------------------------------------------------------------------------

# Slurm 22.05 sacct has no Restarts, StdOut or StdErr field (facts #9): a
# requeued job's runs are told apart with --duplicates, the logs come from
# ``scontrol show job`` while the job is still known.
SACCT_FIELDS: Tuple[str, ...] = (
    "JobID", "JobIDRaw", "JobName", "User", "UID", "Partition", "State", "ExitCode",
    "DerivedExitCode", "Reason", "Elapsed", "Timelimit", "MaxRSS", "NodeList",
    "Submit", "Start", "End", "WorkDir",
)
SACCT_TIMEOUT_S = 30.0


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


def sacct_time(t: float) -> str:
    """sacct's -S/-E take local time without a zone."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def sacct_argv(
    sacct: str,
    *,
    since: Optional[float] = None,
    until: Optional[float] = None,
    job_ids: Sequence[str] = (),
    partition: Optional[str] = None,
    fields: Sequence[str] = SACCT_FIELDS,
    duplicates: bool = True,
) -> List[str]:
    argv = [sacct, "--parsable2", "--noheader", "-o", ",".join(fields)]
    if duplicates:
        argv.append("--duplicates")  # every run of a requeued job, not just the last
    if job_ids:
        argv += ["-j", ",".join(str(j) for j in job_ids)]
    else:
        argv.append("--allusers")
    if since is not None:
        argv += ["-S", sacct_time(since)]
    elif job_ids:
        # -j alone only looks at today's jobs on some versions; look back far.
        argv += ["-S", "1970-01-02T00:00:00"]
    if until is not None:
        argv += ["-E", sacct_time(until)]
    if partition:
        argv += ["-r", partition]
    return argv


def sacct_rows(
    *,
    since: Optional[float] = None,
    until: Optional[float] = None,
    job_ids: Sequence[str] = (),
    partition: Optional[str] = None,
    fields: Sequence[str] = SACCT_FIELDS,
    duplicates: bool = True,
    sacct: Optional[str] = None,
    timeout: float = SACCT_TIMEOUT_S,
    env: Optional[Dict[str, str]] = None,
    runner: Any = None,
) -> List[Dict[str, str]]:
    """One ``sacct`` call: every job and step in the window (or the given ids).

    Raises ``SlurmError`` when sacct is missing, fails (no slurmdbd:
    "accounting storage is disabled") or times out; callers report that as
    unknown. ``runner`` (default ``gcm_checks.proc.run``) is injectable so
    tests can count calls.
    """
    from gcm_checks.proc import run, which

    path = which(sacct or "sacct")
    if not path:
        raise SlurmError("sacct: not found (set accounting.sacct)")
    argv = sacct_argv(path, since=since, until=until, job_ids=job_ids, partition=partition, fields=fields, duplicates=duplicates)
    res = (runner or run)(argv, timeout=timeout, env=env)
    if not res.ok:
        raise SlurmError(res.describe())
    return parse_sacct(res.stdout, fields)


def sacct_stream(
    *,
    since: Optional[float] = None,
    until: Optional[float] = None,
    job_ids: Sequence[str] = (),
    partition: Optional[str] = None,
    fields: Sequence[str] = SACCT_FIELDS,
    duplicates: bool = True,
    sacct: Optional[str] = None,
    timeout: float = SACCT_TIMEOUT_S,
    env: Optional[Dict[str, str]] = None,
    notes: Any = None,
) -> Iterator[Dict[str, str]]:
    """``sacct_rows`` streamed: rows as sacct prints them, memory independent
    of their number (``failures --since 7d`` over a fleet: a million rows).

    Raises ``SlurmError`` when sacct is missing (at the first row) or, after
    the last row, when it failed or ran past ``timeout`` - so a caller never
    mistakes a cut-off listing for a complete one.
    """
    from gcm_checks.proc import LineStream, which

    path = which(sacct or "sacct")
    if not path:
        raise SlurmError("sacct: not found (set accounting.sacct)")
    argv = sacct_argv(path, since=since, until=until, job_ids=job_ids, partition=partition, fields=fields,
                      duplicates=duplicates)
    stream = LineStream(argv, timeout=timeout, env=env)
    yield from iter_sacct_rows(stream, fields, notes)
    res = stream.result
    if res is None or not res.ok:
        raise SlurmError(res.describe() if res is not None else "sacct: no result")


def sacct_job(job_id: str, **kw: Any) -> List[Dict[str, str]]:
    """All runs and steps of one job (``--duplicates``)."""
    return sacct_rows(job_ids=[str(job_id)], **kw)
