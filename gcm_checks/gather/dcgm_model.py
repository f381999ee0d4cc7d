"""What a DCGM diagnostic found, as data: the report types, run levels and
their deadlines, and what a failure means (DCGM's own severity and category
per error, the deployment tests that judge a node setting).

Pure: no dcgmi, no bindings, no I/O. Produced by dcgm.py (``dcgmi diag -j``)
and dcgm_py.py (pydcgm), judged by checks/dcgm.py; all these names are
importable from ``gcm_checks.gather.dcgm`` as before.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

LEVELS = (1, 2, 3, 4)

# Default deadlines per run level. NVIDIA's guide gives r1 "seconds", r2 "< 2
# minutes", r3 "< 30 minutes", r4 "1-2 hours"; we allow headroom over each.
DEFAULT_TIMEOUT_S = {1: 120.0, 2: 300.0, 3: 2700.0, 4: 9000.0}
# How long each level usually takes on a healthy 8-GPU node (NVIDIA's DCGM
# guide: r1 quick, seconds; r2 about 2 minutes; r3 about 30; r4 an hour or
# more). Used to avoid starting a diag the run budget cannot hold.
TYPICAL_S = {1: 5.0, 2: 120.0, 3: 1800.0, 4: 5400.0}

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class DiagStatus(str, enum.Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"  # skipped / not run: says nothing about the GPU
    UNRECOGNISED = "unrecognised"  # a status word we do not know: cannot judge


_STATUS_WORDS = {
    "pass": DiagStatus.PASS,
    "passed": DiagStatus.PASS,
    "warn": DiagStatus.WARN,
    "warning": DiagStatus.WARN,
    "fail": DiagStatus.FAIL,
    "failed": DiagStatus.FAIL,
    "skip": DiagStatus.SKIP,
    "skipped": DiagStatus.SKIP,
    "not run": DiagStatus.SKIP,
    "notrun": DiagStatus.SKIP,
    "": DiagStatus.SKIP,
}


def parse_status(word: Any) -> DiagStatus:
    """Case-insensitive: DCGM has printed Pass, PASS and pass over the years."""
    if word is None:
        return DiagStatus.SKIP
    key = " ".join(str(word).strip().lower().replace("_", " ").split())
    return _STATUS_WORDS.get(key, _STATUS_WORDS.get(key.replace(" ", ""), DiagStatus.UNRECOGNISED))


def clean_text(text: Any, limit: int = 500) -> str:
    """One line, no control characters: DCGM text ends up in drain reasons."""
    s = _CONTROL.sub(" ", str(text))
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


@dataclass(frozen=True)
class DiagError:
    text: str
    error_id: Optional[int] = None  # dcgmError_t (dcgm_errors.h), when DCGM gives one
    category: Optional[int] = None
    severity: Optional[int] = None

    def describe(self) -> str:
        return f"error {self.error_id}: {self.text}" if self.error_id is not None else self.text


@dataclass(frozen=True)
class DiagEntry:
    """One test's result for one entity (a GPU, or the node when entity_id is None)."""

    category: str
    test: str
    entity_group: str  # "GPU" for GPUs; 4.x also reports CPU, NvSwitch, ...
    entity_id: Optional[int]
    status: DiagStatus
    raw_status: str
    errors: Tuple[DiagError, ...] = ()
    info: Tuple[str, ...] = ()

    @property
    def subject(self) -> str:
        if self.entity_id is None:
            return ""
        return f"{self.entity_group} {self.entity_id}"

    def to_dict(self) -> dict:
        return {
            "category": self.category,
            "test": self.test,
            "entity_group": self.entity_group,
            "entity_id": self.entity_id,
            "status": self.status.value,
            "raw_status": self.raw_status,
            # For a failed entry, what DCGM's severity says it means
            # (hardware / software / config / monitor / xid); only
            # "hardware" is a hardware verdict. None otherwise.
            "finding": entry_finding(self).value if self.status is DiagStatus.FAIL else None,
            "errors": [
                {"error_id": e.error_id, "text": e.text, "category": e.category, "severity": e.severity}
                for e in self.errors
            ],
            "info": list(self.info),
        }


@dataclass(frozen=True)
class DiagReport:
    """Everything one diag run told us, or why it told us nothing (ok=False)."""

    ok: bool
    level: int
    source: str  # "dcgmi", "pydcgm", "sim"
    entries: Tuple[DiagEntry, ...] = ()
    version: str = ""
    problem: str = ""  # set when ok is False: why we could not tell
    duration_s: float = 0.0
    notes: Tuple[str, ...] = ()  # parse oddities worth showing an admin

    def with_status(self, *statuses: DiagStatus) -> List[DiagEntry]:
        return [e for e in self.entries if e.status in statuses]

    def failures(self) -> List[DiagEntry]:
        return self.with_status(DiagStatus.FAIL)

    def by_subject(self) -> Dict[str, List[DiagEntry]]:
        out: Dict[str, List[DiagEntry]] = {}
        for e in self.entries:
            out.setdefault(e.subject, []).append(e)
        return out

    def gpu_ids(self) -> List[int]:
        return sorted({e.entity_id for e in self.entries if e.entity_group == "GPU" and e.entity_id is not None})

    def to_dict(self) -> dict:
        """The evidence the epilog writes into the job report."""
        return {
            "ok": self.ok,
            "level": self.level,
            "source": self.source,
            "version": self.version,
            "problem": self.problem,
            "duration_s": round(self.duration_s, 3),
            "notes": list(self.notes),
            "entries": [e.to_dict() for e in self.entries],
        }


def could_not_tell(level: int, source: str, problem: str, duration_s: float = 0.0) -> DiagReport:
    return DiagReport(ok=False, level=level, source=source, problem=problem, duration_s=duration_s)


# --------------------------------------------------------------------------
# What a failure means: DCGM's own severity and category for each error


class Finding(str, enum.Enum):
    HARDWARE = "hardware"  # the GPU is bad: fail (drains)
    SOFTWARE = "software"  # DCGM/CUDA/the harness could not test: unknown
    CONFIG = "config"  # a node setting (persistence mode, env, ECC off): warn
    MONITOR = "monitor"  # DCGM says "can still perform workload": warn
    XID = "xid"  # DCGM saw an XID; the XID checks judge it by NVIDIA's catalog: warn


# dcgmErrorSeverity_t / dcgmErrorCategory_t (DCGM dcgmlib/dcgm_errors.h).
_SEV_MONITOR, _SEV_ISOLATE, _SEV_TRIAGE, _SEV_CONFIG, _SEV_RESET = 1, 2, 4, 5, 6
_CAT_SOFTWARE = {3, 4, 5, 6, 7, 8, 16}  # config, library, xid, cuda, eud, other, internal
_CAT_SOFTWARE_CONFIG = 3
_CAT_SOFTWARE_XID = 5

# For outputs that carry an error_id but no severity (DCGM 2.x), the
# severity/category DCGM itself assigns (dcgmlib/src/dcgm_errors.c,
# dcgmErrorMeta). Ids absent here fail, trusting DCGM's "Fail".
_CONFIG_IDS = {18, 20, 23, 28, 29, 46, 47, 48, 55, 60, 68, 72, 78, 82, 96}
_MONITOR_IDS = {5, 10, 11, 12, 16, 17, 19, 26, 27, 32, 34, 40, 41, 42, 43, 51, 53, 61, 69, 74, 75, 76, 108}
_SOFTWARE_IDS = {1, 2, 21, 22, 44, 49, 54, 56, 59, 64, 65, 66, 67, 73, 77, 89, 90, 91, 92, 93, 94, 97}


def classify_error(err: "DiagError") -> Finding:
    """What one DCGM error says about the hardware.

    DCGM attaches a severity to every error: ISOLATE/RESET mean "take the GPU
    out", MONITOR means "can still run work", CONFIG means "fix the setting"
    (a real DCGM 4.2.3 level-1 run fails ``software`` for persistence mode
    being off: draining for that would be wrong, rule 2). TRIAGE is hardware
    only in a hardware category; in a software one (CUDA context, EUD
    harness, internal) DCGM could not test, which is ``unknown``.
    """
    sev, cat = err.severity, err.category
    if sev is None and err.error_id is not None:
        eid = err.error_id
        if eid in _CONFIG_IDS:
            return Finding.CONFIG
        if eid in _MONITOR_IDS:
            return Finding.MONITOR
        if eid in _SOFTWARE_IDS:
            return Finding.SOFTWARE
        return Finding.HARDWARE
    if sev in (_SEV_ISOLATE, _SEV_RESET):
        return Finding.HARDWARE
    if sev == _SEV_CONFIG or cat == _CAT_SOFTWARE_CONFIG:
        return Finding.CONFIG
    if sev == _SEV_MONITOR:
        return Finding.MONITOR
    if cat == _CAT_SOFTWARE_XID:
        # "Detected XID n for GPU m" (TRIAGE): whether an XID is the
        # hardware's fault is the XID catalog's call (rule 4), not ours here.
        return Finding.XID
    if cat in _CAT_SOFTWARE:
        return Finding.SOFTWARE
    return Finding.HARDWARE


# Deployment tests that judge a node SETTING, not the GPU (issue 18): a
# failure warns and names the setting, whatever DCGM's severity (2.x prints
# "Fail" with no error text at all). DCGM 2.x/3.x name them as tests; 4.x
# folds them into its "software" test and starts the text with the name
# ("Persistence Mode: Persistence mode for GPU 0 is disabled ...").
CONFIG_TESTS = {
    "persistence mode": "persistence mode (nvidia-smi -pm 1, or nvidia-persistenced)",
    "environmental variables": "environment variables (CUDA_*/NVVS_* set in DCGM's environment)",
    "environment variables": "environment variables (CUDA_*/NVVS_* set in DCGM's environment)",
    "permissions and os-related blocks": "device permissions / OS blocks (/dev/nvidia* access, cgroups)",
    "permissions and os blocks": "device permissions / OS blocks (/dev/nvidia* access, cgroups)",
    "permissions": "device permissions / OS blocks (/dev/nvidia* access, cgroups)",  # 1.x/2.x name
    "environment": "environment variables (CUDA_*/NVVS_* set in DCGM's environment)",  # 1.x/2.x name
    "denylist": "denylisted driver loaded (e.g. nouveau)",
    "blacklist": "denylisted driver loaded (e.g. nouveau)",
    "graphics processes": "graphics processes running on the GPUs",
}
# Deployment tests of DCGM's own prerequisites: a failure without text says
# DCGM could not test, not that the GPU is bad. 4.x's "software" test holds
# every deployment sub-check, so a text-less failure there could be any.
_SOFTWARE_TESTS = frozenset({"software", "nvml library", "cuda main library", "cuda toolkit libraries",
                             "cuda toolkit library", "fabric manager"})


def config_setting(entry: "DiagEntry") -> Optional[str]:
    """The node setting a failed entry judges, or None for a hardware test."""
    name = (entry.test or "").strip().lower()
    if name in CONFIG_TESTS:
        return CONFIG_TESTS[name]
    for e in entry.errors:
        head = e.text.split(":", 1)[0].strip().lower() if ":" in e.text else ""
        if head in CONFIG_TESTS:
            return CONFIG_TESTS[head]
    return None


def entry_finding(entry: "DiagEntry") -> Finding:
    """The worst finding among a failed entry's errors (no errors: hardware
    for a hardware test, trusting DCGM's own Fail; config for a test of a
    setting; software for DCGM's own prerequisites)."""
    if config_setting(entry) is not None and not any(e.severity in (_SEV_ISOLATE, _SEV_RESET) for e in entry.errors):
        return Finding.CONFIG
    if not entry.errors:
        if (entry.test or "").strip().lower() in _SOFTWARE_TESTS:
            return Finding.SOFTWARE
        return Finding.HARDWARE
    found = {classify_error(e) for e in entry.errors}
    for f in (Finding.HARDWARE, Finding.SOFTWARE, Finding.CONFIG, Finding.XID, Finding.MONITOR):
        if f in found:
            return f
    return Finding.HARDWARE
