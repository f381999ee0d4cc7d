"""DCGM diagnostics: run ``dcgmi diag -r LEVEL -j`` and read every result.

Two things peers get wrong, and why this module is shaped the way it is:

* Meta's GCM reads only the first GPU of the JSON and compares ``"Fail"``
  case-sensitively, so a failure on GPU 5 reads as healthy. We walk every
  category, every test and every result, expand ``gpu_ids`` lists, and compare
  statuses case-insensitively (DCGM has printed ``PASS``, ``Pass`` and ``pass``
  across versions).
* "dcgmi is missing" or "nv-hostengine is down" says nothing about the GPUs.
  Those (and timeouts, and output we cannot parse) come back as a report with
  ``ok=False`` and a reason; the check turns that into ``unknown``, which never
  drains (rule 2).

Two JSON layouts exist (NVIDIA's own schema: DCGM testing/python3/
dcgm_diag_schema.json):

* DCGM 2.x/3.x: ``{"DCGM GPU Diagnostic": {"test_categories": [{"category",
  "tests": [{"name", "results": [{"gpu_ids": "0,1" | 3, "status",
  "warnings": [...], "info": ...}]}]}], "version"}}``
* DCGM 4.x: ``{"DCGM Diagnostic": {"test_categories": [... "results":
  [{"entity_group": "GPU", "entity_id": 3, "status", "warnings": [{"warning",
  "error_id", "error_category", "error_severity"}]}], "test_summary"}]},
  "entity_groups": [...], "metadata": {"version"}}``; with ``--iterations`` the
  documents are wrapped in ``{"iterations": [doc, ...]}``; a diag that could
  not start says ``{"DCGM Diagnostic": {"runtime_error": "..."}}``.

The backend is a small seam (``DiagBackend``): ``dcgmi`` or DCGM's Python
bindings (``gcm_checks.dcgm_py.PydcgmBackend``, ``dcgm.use_pydcgm``) in
production, a scenario's canned text in simulation. The pydcgm backend reads
only the response struct versions it knows (dcgmDiagResponse_v8..v12) and
says ``unknown`` for any other: its structs change with every DCGM major
version, and a wrong struct is silent garbage, whereas the CLI's JSON is
versioned by NVIDIA's published schema.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Protocol, Sequence, Tuple

from gcm_checks import proc

LEVELS = (1, 2, 3, 4)

# Default deadlines per run level. NVIDIA's guide gives r1 "seconds", r2 "< 2
# minutes", r3 "< 30 minutes", r4 "1-2 hours"; we allow headroom over each.
DEFAULT_TIMEOUT_S = {1: 120.0, 2: 300.0, 3: 2700.0, 4: 9000.0}
# How long each level usually takes on a healthy 8-GPU node (NVIDIA's DCGM
# guide: r1 quick, seconds; r2 about 2 minutes; r3 about 30; r4 an hour or
# more). Used to avoid starting a diag the run budget cannot hold.
TYPICAL_S = {1: 5.0, 2: 120.0, 3: 1800.0, 4: 5400.0}

# What dcgmi prints when nv-hostengine is not running or not answering
# (dcgmi/CommandLineParser + DcgmiOutput; seen on DCGM 2.x-4.x).
_HOSTENGINE_DOWN = re.compile(
    r"unable to establish a connection to the specified host"
    r"|unable to connect to host engine"
    r"|host engine connection invalid"
    r"|connection to the host engine (?:was )?(?:lost|refused)"
    r"|DCGM_ST_CONNECTION_NOT_VALID",
    re.IGNORECASE,
)

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


# --------------------------------------------------------------------------
# Parsing (pure: text in, report out)


class DiagParseError(ValueError):
    pass


def extract_json(text: str) -> Any:
    """The JSON document inside dcgmi's stdout.

    dcgmi can print warnings before the document (NVIDIA's own test fixture
    starts with "WARNING: THIS SHOULD NOT HAPPEN"), so parse from the first
    '{' to the last '}'.
    """
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise DiagParseError("no JSON object in dcgmi output")
    try:
        return json.loads(text[start : end + 1])
    except json.JSONDecodeError as e:
        raise DiagParseError(f"dcgmi output is not valid JSON: {e.msg} at char {e.pos}") from None


def parse_document(doc: Any, level: int, source: str = "dcgmi") -> DiagReport:
    """Every result of every test for every entity, from either layout."""
    if not isinstance(doc, Mapping):
        raise DiagParseError(f"expected a JSON object, got {type(doc).__name__}")
    if "iterations" in doc:
        entries: List[DiagEntry] = []
        notes: List[str] = []
        version = ""
        for i, it in enumerate(doc.get("iterations") or []):
            if it is None:
                continue
            sub = parse_document(it, level, source)
            if not sub.ok:
                return sub
            entries.extend(sub.entries)
            notes.extend(f"iteration {i}: {n}" for n in sub.notes)
            version = version or sub.version
        return DiagReport(True, level, source, tuple(entries), version, notes=tuple(notes))

    body = None
    for key in ("DCGM Diagnostic", "DCGM GPU Diagnostic"):
        if isinstance(doc.get(key), Mapping):
            body = doc[key]
            break
    if body is None:
        raise DiagParseError("neither 'DCGM Diagnostic' nor 'DCGM GPU Diagnostic' in dcgmi JSON")
    version = str(body.get("version") or (doc.get("metadata") or {}).get("version") or "")
    if body.get("runtime_error"):
        # The diag itself could not run (NVVS missing, GPU busy, bad config):
        # nothing about the hardware was measured.
        return could_not_tell(level, source, f"dcgmi diag could not run: {clean_text(body['runtime_error'])}")
    categories = body.get("test_categories")
    if not isinstance(categories, list):
        raise DiagParseError("'test_categories' missing or not a list")

    entries = []
    notes = []
    for cat in categories:
        if not isinstance(cat, Mapping):
            continue  # DCGM 3.1 emits nulls between entries
        cat_name = clean_text(cat.get("category", ""))
        for test in cat.get("tests") or []:
            if not isinstance(test, Mapping):
                continue
            entries.extend(_parse_test(cat_name, test, notes))
    if not entries:
        raise DiagParseError("dcgmi JSON has no test results")
    return DiagReport(True, level, source, tuple(entries), version, notes=tuple(notes))


def _parse_test(category: str, test: Mapping, notes: List[str]) -> List[DiagEntry]:
    name = clean_text(test.get("name", "?"))
    out: List[DiagEntry] = []
    results = test.get("results")
    if isinstance(results, list):
        for res in results:
            if not isinstance(res, Mapping):
                continue
            raw = str(res.get("status", ""))
            status = parse_status(raw)
            if status is DiagStatus.UNRECOGNISED:
                notes.append(f"{name}: unrecognised status {clean_text(raw, 40)!r}")
            errors = tuple(_parse_warnings(res.get("warnings")))
            # Some 2.x builds put the failure text under "error"/"errors".
            errors += tuple(_parse_warnings(res.get("errors")))
            if res.get("error") and isinstance(res.get("error"), (str, Mapping)):
                errors += tuple(_parse_warnings([res["error"]]))
            info = tuple(_parse_info(res.get("info")))
            group, ids = _entities(res)
            named = _named_gpus(errors, ids) if status in (DiagStatus.FAIL, DiagStatus.WARN) else set()
            for eid in ids:
                if named and eid not in named:
                    # 2.x/3.x report node-wide tests once for "0,1,...,7"; when
                    # the text names the GPU ("GPU 3 has uncorrectable memory
                    # errors..."), the others were not accused.
                    out.append(DiagEntry(category, name, group, eid, DiagStatus.SKIP, raw, (), info))
                    continue
                mine = tuple(x for x in errors if eid in _gpus_in(x.text)) if named else errors
                out.append(DiagEntry(category, name, group, eid, status, raw, mine or errors, info))
    summary = test.get("test_summary")
    if not out and isinstance(summary, Mapping):
        # A test that reports only a summary (e.g. it failed before touching
        # any GPU) is a node-level result.
        raw = str(summary.get("status", ""))
        errors = tuple(_parse_warnings(summary.get("warnings")))
        out.append(DiagEntry(category, name, "", None, parse_status(raw), raw, errors, tuple(_parse_info(summary.get("info")))))
    return out


_GPU_REF = re.compile(r"\bGPU\s*(?:ID\s*)?:?\s*(\d+)\b", re.IGNORECASE)


def _gpus_in(text: str) -> set:
    return {int(m) for m in _GPU_REF.findall(text)}


def _named_gpus(errors: Sequence[DiagError], ids: List[Optional[int]]) -> set:
    """GPUs of a multi-GPU result that its error texts name explicitly."""
    if len(ids) < 2:
        return set()
    named: set = set()
    for e in errors:
        named |= _gpus_in(e.text)
    return named & {i for i in ids if i is not None}


def _entities(res: Mapping) -> Tuple[str, List[Optional[int]]]:
    """(entity group, ids) for one result: 4.x entity_id, or 2.x/3.x gpu_ids."""
    if "entity_id" in res:
        group = str(res.get("entity_group") or "GPU")
        return _group_name(group), [_to_int(res.get("entity_id"))]
    ids = res.get("gpu_ids", res.get("gpu_id"))
    if ids is None:
        return "GPU", [None]
    if isinstance(ids, (int, float)) and not isinstance(ids, bool):
        return "GPU", [int(ids)]
    if isinstance(ids, list):
        vals = [_to_int(x) for x in ids]
    else:
        vals = [_to_int(x) for x in str(ids).replace(" ", "").split(",") if x != ""]
    vals = [v for v in vals if v is not None]
    return "GPU", (vals or [None])


def _group_name(group: str) -> str:
    g = group.strip()
    return "GPU" if g.lower() in ("gpu", "gpus") else g


def _to_int(v: Any) -> Optional[int]:
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def _parse_warnings(w: Any) -> Iterable[DiagError]:
    """warnings: a string (2.x), a list of strings, or a list of objects (3.x/4.x)."""
    if w is None or w == "":
        return []
    items = w if isinstance(w, list) else [w]
    out = []
    for item in items:
        if isinstance(item, Mapping):
            text = item.get("warning", item.get("error", item.get("message", "")))
            out.append(
                DiagError(
                    clean_text(text),
                    _to_int(item.get("error_id")),
                    _to_int(item.get("error_category")),
                    _to_int(item.get("error_severity")),
                )
            )
        elif item is not None and str(item).strip():
            out.append(DiagError(clean_text(item)))
    return out


def _parse_info(i: Any) -> Iterable[str]:
    if i is None or i == "":
        return []
    items = i if isinstance(i, list) else [i]
    return [clean_text(x) for x in items if x is not None and str(x).strip()]


# --------------------------------------------------------------------------
# Running dcgmi (bounded) and judging how it ended


def interpret(result: proc.ProcResult, level: int, source: str = "dcgmi") -> DiagReport:
    """Turn a finished (or killed) dcgmi run into a report.

    dcgmi exits non-zero when a test fails, so the exit status alone decides
    nothing: parse stdout first, and only when that yields no document ask
    why.
    """
    dur = result.duration_s
    if result.outcome is proc.Outcome.MISSING:
        return could_not_tell(level, source, f"dcgmi not found or not executable ({clean_text(result.stderr, 200)}); install datacenter-gpu-manager or set dcgm.dcgmi", dur)
    if result.outcome is proc.Outcome.TIMEOUT:
        return could_not_tell(
            level,
            source,
            f"dcgmi diag -r {level} gave no answer within {dur:.0f}s and was killed; "
            "nv-hostengine may be hung (check 'systemctl status nvidia-dcgm') or raise dcgm.timeout_s",
            dur,
        )
    text = result.stdout or ""
    try:
        doc = extract_json(text)
    except DiagParseError as e:
        both = f"{result.stderr}\n{text}"
        if _HOSTENGINE_DOWN.search(both):
            return could_not_tell(
                level,
                source,
                "nv-hostengine is not answering (dcgmi: " + clean_text(_first_match_line(both), 200) + "); "
                "start it with 'systemctl start nvidia-dcgm' or 'nv-hostengine'",
                dur,
            )
        if result.outcome is proc.Outcome.NONZERO:
            return could_not_tell(level, source, f"dcgmi diag failed to run: {clean_text(result.describe(), 300)}", dur)
        return could_not_tell(level, source, f"could not parse dcgmi diag output: {e}", dur)
    try:
        report = parse_document(doc, level, source)
    except DiagParseError as e:
        return could_not_tell(level, source, f"could not parse dcgmi diag output: {e}", dur)
    return DiagReport(report.ok, report.level, report.source, report.entries, report.version, report.problem, dur, report.notes)


def _first_match_line(text: str) -> str:
    for line in text.splitlines():
        if _HOSTENGINE_DOWN.search(line):
            return line.strip()
    return text.strip()


class DiagBackend(Protocol):
    """Runs one diag at ``level`` within ``timeout`` seconds; never raises."""

    def run(self, level: int, timeout: float) -> DiagReport: ...


@dataclass(frozen=True)
class DcgmiBackend:
    """Production: ``dcgmi diag -r LEVEL -j`` through the bounded proc helper."""

    dcgmi: str = "dcgmi"
    extra_args: Sequence[str] = field(default_factory=tuple)
    # Only these GPUs (dcgmi -i): on a shared node the epilog must not run a
    # diag on GPUs another job is using. None = DCGM's default, all GPUs.
    gpu_ids: Optional[Tuple[int, ...]] = None

    def argv(self, path: str, level: int) -> List[str]:
        select = ["-i", ",".join(str(g) for g in self.gpu_ids)] if self.gpu_ids else []
        return [path, "diag", "-r", str(level), *select, "-j", *self.extra_args]

    def run(self, level: int, timeout: float) -> DiagReport:
        # A prolog/epilog has no PATH (slurm-22.05-facts.md, gotcha 7): look
        # in the standard places rather than trusting the environment.
        path = proc.which(self.dcgmi)
        if path is None:
            return could_not_tell(level, "dcgmi", f"dcgmi not found ({self.dcgmi!r} is not an executable in the standard locations); install datacenter-gpu-manager or set dcgm.dcgmi")
        return interpret(proc.run(self.argv(path, level), timeout=timeout), level, "dcgmi")


@dataclass(frozen=True)
class CannedBackend:
    """Simulation: a scenario's ``dcgm_diag`` stands in for dcgmi.

    ``canned`` is either the JSON text (or an already-parsed mapping) that
    dcgmi would print on stdout, or a mapping ``{stdout, stderr, returncode,
    timeout, missing}`` describing how the run ended, so a scenario can also
    simulate nv-hostengine being down or dcgmi hanging.
    """

    canned: Any
    gpu_ids: Optional[Tuple[int, ...]] = None  # as dcgmi -i: report only these GPUs

    def run(self, level: int, timeout: float) -> DiagReport:
        report = self._run(level, timeout)
        return only_gpus(report, self.gpu_ids) if self.gpu_ids else report

    def _run(self, level: int, timeout: float) -> DiagReport:
        c = self.canned
        if isinstance(c, Mapping) and _is_run_description(c):
            if c.get("missing"):
                outcome = proc.Outcome.MISSING
            elif c.get("timeout"):
                outcome = proc.Outcome.TIMEOUT
            else:
                outcome = proc.Outcome.OK if int(c.get("returncode", 0)) == 0 else proc.Outcome.NONZERO
            stdout = c.get("stdout", "")
            if isinstance(stdout, Mapping):
                stdout = json.dumps(stdout)
            r = proc.ProcResult(
                ("dcgmi", "diag", "-r", str(level), "-j"),
                outcome,
                None if outcome in (proc.Outcome.MISSING, proc.Outcome.TIMEOUT) else int(c.get("returncode", 0)),
                str(stdout or ""),
                str(c.get("stderr", "")),
                float(timeout) if outcome is proc.Outcome.TIMEOUT else 0.0,
            )
            return interpret(r, level, "sim")
        if isinstance(c, Mapping):
            try:
                return parse_document(c, level, "sim")
            except DiagParseError as e:
                return could_not_tell(level, "sim", f"could not parse dcgmi diag output: {e}")
        r = proc.ProcResult(("dcgmi",), proc.Outcome.OK, 0, str(c), "", 0.0)
        return interpret(r, level, "sim")


def only_gpus(report: DiagReport, gpu_ids: Iterable[int]) -> DiagReport:
    """The report as ``dcgmi -i`` would give it: other GPUs' entries dropped."""
    keep = set(gpu_ids)
    entries = tuple(e for e in report.entries if e.entity_group != "GPU" or e.entity_id is None or e.entity_id in keep)
    return DiagReport(report.ok, report.level, report.source, entries, report.version, report.problem, report.duration_s, report.notes)


def parse_gpu_list(value: Any) -> Optional[Tuple[int, ...]]:
    """``SLURM_JOB_GPUS``-style ``"0,1,4-5"`` or a list of ints -> (0, 1, 4, 5)."""
    if value is None or value == "" or value == []:
        return None
    items = value if isinstance(value, (list, tuple)) else str(value).split(",")
    out: List[int] = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        if "-" in text:
            lo, hi = text.split("-", 1)
            out.extend(range(int(lo), int(hi) + 1))
        else:
            out.append(int(text))
    return tuple(sorted(set(out))) or None


def _is_run_description(c: Mapping) -> bool:
    return bool({"stdout", "stderr", "returncode", "timeout", "missing"} & set(c)) and not (
        {"DCGM Diagnostic", "DCGM GPU Diagnostic", "iterations"} & set(c)
    )


def run_diag(level: int, timeout: float, backend: Optional[DiagBackend] = None) -> DiagReport:
    """Validate the level, then run it; every way this can go wrong is a report."""
    if level not in LEVELS:
        return could_not_tell(level, "dcgmi", f"invalid DCGM diag level {level!r}: expected one of {LEVELS}")
    if timeout <= 0:
        return could_not_tell(level, "dcgmi", "no time left in the run budget to start dcgmi diag")
    return (backend or DcgmiBackend()).run(level, timeout)
