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
bindings (``gcm_checks.gather.dcgm_py.PydcgmBackend``, ``dcgm.use_pydcgm``) in
production, a scenario's canned text in simulation
(``gcm_checks.sim.dcgm.CannedBackend``). The pydcgm backend reads
only the response struct versions it knows (dcgmDiagResponse_v8..v12) and
says ``unknown`` for any other: its structs change with every DCGM major
version, and a wrong struct is silent garbage, whereas the CLI's JSON is
versioned by NVIDIA's published schema.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Mapping, Optional, Protocol, Sequence, Tuple

from gcm_checks import proc
from gcm_checks.gather.dcgm_model import (  # noqa: F401 - the model, importable from here as before
    CONFIG_TESTS,
    DEFAULT_TIMEOUT_S,
    DiagEntry,
    DiagError,
    DiagReport,
    DiagStatus,
    Finding,
    LEVELS,
    TYPICAL_S,
    classify_error,
    clean_text,
    config_setting,
    could_not_tell,
    entry_finding,
    parse_status,
)

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


@dataclass(frozen=True)
class MissingBackend:
    """No diag can run here (dcgmi or the bindings absent): every run says
    why, as a report that is never a hardware verdict (rule 2)."""

    source: str
    problem: str

    def run(self, level: int, timeout: float) -> DiagReport:
        return could_not_tell(level, self.source, self.problem)


def run_diag(level: int, timeout: float, backend: Optional[DiagBackend] = None) -> DiagReport:
    """Validate the level, then run it; every way this can go wrong is a report."""
    if isinstance(backend, MissingBackend):
        # Nothing to start: its reason comes first, whatever the level or time left.
        return backend.run(level, timeout)
    if level not in LEVELS:
        return could_not_tell(level, "dcgmi", f"invalid DCGM diag level {level!r}: expected one of {LEVELS}")
    if timeout <= 0:
        return could_not_tell(level, "dcgmi", "no time left in the run budget to start dcgmi diag")
    return (backend or DcgmiBackend()).run(level, timeout)
