"""DCGM diagnostics through NVIDIA's Python bindings (pydcgm), bounded.

``dcgm.use_pydcgm`` (auto by default) runs the diag through the bindings DCGM
ships (``pydcgm``, ``dcgm_structs``, ``dcgm_agent``, ``DcgmDiag`` under
``/usr/share/datacenter-gpu-manager*/bindings/python3`` or
``/usr/local/dcgm/bindings/python3``) instead of parsing ``dcgmi diag -j``.

Why the call runs in a child process, not in a thread of ours: a hung
nv-hostengine blocks ``dcgmActionValidate_v2`` inside libdcgm, where Python
cannot interrupt it. A thread could only be abandoned (and would keep the
connection, and the diag, alive); a child can be killed at the deadline. The
child is a fresh interpreter started through ``gcm_checks.proc.run`` (the one
bounded subprocess helper, rule 5), not ``os.fork``: the suite gathers in
threads (``deadline.run_all``), and a fork taken while another thread holds
the import or logging lock deadlocks the child.

The child converts the response struct into plain JSON (``response_to_plain``)
and prints it on one marked line; the parent turns that into the same
``DiagReport`` ``dcgmi`` produces, so judging (``classify_error``) is shared.
Struct layouts follow NVIDIA/DCGM testing/python3/dcgm_structs.py:

* ``dcgmDiagResponse_v11``/``v12`` (DCGM 4.x): flat ``tests[numTests]``
  (``name``, ``result``, ``categoryIndex``, ``resultIndices[numResults]``,
  ``errorIndices[numErrors]``, ``infoIndices[numInfo]``) indexing
  ``results[]`` (``entity``, ``result``, ``testId``), ``errors[]``
  (``entity``, ``code``, ``category``, ``severity``, ``msg``, ``testId``),
  ``info[]`` and ``categories[]``.
* ``dcgmDiagResponse_v8``..``v10`` (DCGM 2.x/3.x): ``levelOneResults`` (the
  software tests) and ``perGpuResponses[gpuCount].results[test index]``, each
  with ``result`` and an ``error`` (one ``c_dcgmDiagErrorDetail_t`` in v8, an
  array of ``c_dcgmDiagErrorDetail_v2`` with gpuId/category/severity in
  v9/v10), and ``systemError``.

Any other response version is ``unknown`` with a message: a struct read with
the wrong layout is silent garbage.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from gcm_checks import proc
from gcm_checks.gather.dcgm import (
    DiagBackend,
    DiagEntry,
    DiagError,
    DiagReport,
    DiagStatus,
    clean_text,
    could_not_tell,
    only_gpus,
    parse_status,
)

# The child's side (dcgm_child.py) is what the fresh interpreter imports;
# its names stay importable from here.
from gcm_checks.gather.dcgm_child import RESULT_MARK, child_main, response_to_plain  # noqa: F401

SOURCE = "pydcgm"
MODULES = ("pydcgm", "dcgm_structs", "dcgm_agent", "DcgmDiag")

# Where DCGM packages install the bindings (4.x: datacenter-gpu-manager-4;
# 2.x/3.x: /usr/local/dcgm). Searched after sys.path, only when probing.
BINDINGS_GLOBS: Tuple[str, ...] = (
    "/usr/share/datacenter-gpu-manager*/bindings/python3",
    "/usr/local/dcgm/bindings/python3",
    "/usr/local/dcgm/bindings",
)

# dcgmReturn_t values the parent explains (dcgm_structs.py DCGM_ST_*). The
# parent never imports the bindings, so it cannot look them up by name.
_ST_CONNECTION_NOT_VALID = -21
_ST_DIAG_ALREADY_RUNNING = -39

# dcgm_field_entity_group_t (dcgm_fields.h), spelled as dcgmi prints them.
_ENTITY_GROUPS = {1: "GPU", 2: "vGPU", 3: "Switch", 4: "GPU-I", 5: "GPU-CI", 6: "LINK", 7: "CPU", 8: "CPU Core", 9: "CX"}


# --------------------------------------------------------------------------
# Probing (parent): find the bindings without importing them


def find_bindings(globs: Optional[Sequence[str]] = None) -> Optional[str]:
    """The directory holding all of pydcgm, dcgm_structs, dcgm_agent and
    DcgmDiag, or None.

    Looks, never imports: importing runs the bindings' module code in the
    epilog's own process, and whether they load is the child's to find out
    (a failure there falls back to dcgmi in auto mode).
    """
    from importlib.machinery import PathFinder

    # Absolute entries only: "" (the current directory) could be a job's
    # directory, which must not supply modules named like DCGM's.
    dirs: List[str] = [p for p in sys.path if isinstance(p, str) and os.path.isabs(p)]
    home = os.environ.get("DCGM_HOME")
    if home:
        dirs.append(os.path.join(home, "bindings", "python3"))
    for pattern in BINDINGS_GLOBS if globs is None else globs:
        dirs.extend(sorted(glob.glob(pattern), reverse=True))  # newest major first
    for d in dirs:
        spec = PathFinder.find_spec("pydcgm", [d])
        if spec is None or not spec.origin:
            continue
        where = os.path.dirname(os.path.abspath(spec.origin))
        if spec.submodule_search_locations is not None:
            where = os.path.dirname(where)  # a pydcgm package: its siblings sit beside it
        if all(PathFinder.find_spec(m, [where]) is not None for m in MODULES[1:]):
            return where
    return None


# --------------------------------------------------------------------------
# The backend (parent)


_CHILD_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from gcm_checks.gather.dcgm_child import child_main; sys.exit(child_main(sys.argv[2:]))"


@dataclass(frozen=True)
class PydcgmBackend:
    """``DcgmDiag(...).Execute(handle)`` in a child killed at the deadline."""

    bindings_dir: str
    # Only these GPUs (as dcgmi -i): a shared node's other jobs keep theirs.
    gpu_ids: Optional[Tuple[int, ...]] = None
    host: str = "127.0.0.1"  # nv-hostengine's default listen address, as dcgmi uses
    # auto mode: where the bindings will not load (wrong Python, missing
    # libdcgm.so), dcgmi may still work; the fallback gets the time left.
    fallback: Optional[DiagBackend] = None

    def argv(self, level: int, timeout: float) -> List[str]:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        gpus = ",".join(str(g) for g in self.gpu_ids) if self.gpu_ids else ""
        # DCGM's own connect timeout, so a dead hostengine says "connection
        # not valid" before our kill would say "no answer".
        connect_ms = int(max(100.0, min(5000.0, timeout * 250.0)))
        # -B: never write __pycache__ into the system's bindings directory.
        return [sys.executable, "-B", "-c", _CHILD_BOOT, root, self.bindings_dir, self.host, str(level), gpus, str(connect_ms)]

    def run(self, level: int, timeout: float) -> DiagReport:
        start = time.monotonic()
        # cwd=/: the child's sys.path starts with its cwd, and the job's
        # directory must not supply modules named like DCGM's.
        result = proc.run(self.argv(level, timeout), timeout=timeout, cwd="/")
        payload, problem = read_child(result, level)
        if payload is None:
            return could_not_tell(level, SOURCE, problem, result.duration_s)
        if not payload.get("ok") and payload.get("kind") in ("import", "library") and self.fallback is not None:
            left = timeout - (time.monotonic() - start)
            why = f"DCGM Python bindings in {self.bindings_dir} unusable ({clean_text(payload.get('text', ''), 200)}); used dcgmi"
            if left < 1.0:
                return could_not_tell(level, SOURCE, why + " but no time was left to run it", result.duration_s)
            report = self.fallback.run(level, left)
            return dataclasses.replace(report, notes=report.notes + (why,))
        report = from_plain(payload, level, self.bindings_dir)
        report = dataclasses.replace(report, duration_s=result.duration_s)
        return only_gpus(report, self.gpu_ids) if self.gpu_ids and report.ok else report


def read_child(result: proc.ProcResult, level: int) -> Tuple[Optional[dict], str]:
    """(payload, "") from the child's marked line, or (None, why not)."""
    if result.outcome is proc.Outcome.TIMEOUT:
        return None, (
            f"pydcgm diag -r {level} gave no answer within {result.duration_s:.0f}s; its child process was killed. "
            "nv-hostengine may be hung (check 'systemctl status nvidia-dcgm') or raise dcgm.timeout_s"
        )
    if result.outcome is proc.Outcome.MISSING:
        return None, f"could not start the pydcgm child ({clean_text(result.stderr, 200)})"
    for line in reversed((result.stdout or "").splitlines()):
        if line.startswith(RESULT_MARK):
            try:
                payload = json.loads(line[len(RESULT_MARK):])
            except json.JSONDecodeError as e:
                return None, f"pydcgm child answered with invalid JSON: {e.msg}"
            if isinstance(payload, dict):
                return payload, ""
            break
    # No answer at all: the child died inside libdcgm (a signal) or Python.
    return None, f"pydcgm child ended without an answer: {clean_text(result.describe(), 300)}"


def from_plain(payload: Mapping[str, Any], level: int, where: str = "") -> DiagReport:
    """The report for the child's plain answer (pure: data in, report out)."""
    if not payload.get("ok"):
        return could_not_tell(level, SOURCE, _explain_failure(payload, where))
    version = str(payload.get("dcgm_version") or "")
    system_errors = [clean_text(x) for x in payload.get("system_errors") or [] if str(x).strip()]
    tests = payload.get("tests") or []
    if not tests:
        if system_errors:
            # The diag itself could not run (NVVS missing, GPU busy): nothing
            # about the hardware was measured.
            return could_not_tell(level, SOURCE, "DCGM diag could not run: " + "; ".join(system_errors))
        return could_not_tell(level, SOURCE, "DCGM diag response has no test results")
    entries: List[DiagEntry] = []
    notes: List[str] = [f"DCGM system error: {e}" for e in system_errors]
    for test in tests:
        entries.extend(_test_entries(test, notes))
    if not entries:
        return could_not_tell(level, SOURCE, "DCGM diag response has no test results")
    return DiagReport(True, level, SOURCE, tuple(entries), version, notes=tuple(notes))


def _test_entries(test: Mapping[str, Any], notes: List[str]) -> List[DiagEntry]:
    name = clean_text(test.get("name") or "?")
    category = clean_text(test.get("category") or "")
    errors = test.get("errors") or []
    info = test.get("info") or []
    results = test.get("results") or []
    out: List[DiagEntry] = []
    keys = set()
    for r in results:
        key = (r.get("group"), r.get("id"))
        keys.add(key)
        group, eid = _entity(*key)
        word = str(r.get("result", ""))
        status = parse_status(word)
        if status is DiagStatus.UNRECOGNISED:
            notes.append(f"{name}: unrecognised result {clean_text(word, 40)!r}")
        mine = tuple(_error(e) for e in errors if (e.get("group"), e.get("id")) == key)
        said = tuple(clean_text(i.get("msg", "")) for i in info if (i.get("group"), i.get("id")) == key and str(i.get("msg", "")).strip())
        out.append(DiagEntry(category, name, group, eid, status, word, mine, said))
    orphans = [e for e in errors if (e.get("group"), e.get("id")) not in keys]
    word = str(test.get("result", ""))
    overall = parse_status(word)
    if not results or (orphans and overall not in (DiagStatus.PASS, DiagStatus.SKIP)):
        # A test that reports only its overall result (it failed before
        # touching any GPU), or whose failure DCGM tied to no entity, is a
        # node-level result, like dcgmi's test_summary: dropping it could
        # turn "DCGM could not test" into a pass.
        said = tuple(clean_text(i.get("msg", "")) for i in info if not results and str(i.get("msg", "")).strip())
        out.append(DiagEntry(category, name, "", None, overall, word, tuple(_error(e) for e in orphans), said))
    elif orphans:
        # A passing test's stray messages accuse nothing: keep them visible.
        notes.extend(f"{name}: {_error(e).describe()}" for e in orphans)
    return out


def _entity(group: Any, eid: Any) -> Tuple[str, Optional[int]]:
    """(group name, id); DCGM_FE_NONE (0) or no id is the node itself."""
    try:
        g = int(group)
    except (TypeError, ValueError):
        return "", None
    if g == 0 or eid is None:
        return "", None
    return _ENTITY_GROUPS.get(g, f"entity group {g}"), int(eid)


def _error(e: Mapping[str, Any]) -> DiagError:
    def num(v: Any) -> Optional[int]:
        try:
            return int(v)
        except (TypeError, ValueError):
            return None

    severity, category = num(e.get("severity")), num(e.get("category"))
    if not severity:
        # DCGM_ERROR_NONE (0) means "no severity given" (zeroed struct, DCGM
        # 2.x): let the error id decide, as for dcgmi 2.x JSON.
        severity = None
        category = category or None
    return DiagError(clean_text(e.get("msg", "")), num(e.get("code")), category, severity)


def _explain_failure(payload: Mapping[str, Any], where: str) -> str:
    kind = payload.get("kind")
    text = clean_text(payload.get("text", ""), 300)
    if kind in ("import", "library"):
        return f"DCGM Python bindings in {where or '?'} could not be loaded ({text}); set dcgm.use_pydcgm: no to use dcgmi"
    if kind == "version":
        return f"{text}; set dcgm.use_pydcgm: no to use dcgmi, whose JSON gcm-checks reads"
    if kind == "dcgm":
        code = payload.get("code")
        if code == _ST_CONNECTION_NOT_VALID:
            return (
                f"nv-hostengine is not answering (pydcgm: {payload.get('name') or 'DCGMError'}: {text}); "
                "start it with 'systemctl start nvidia-dcgm' or 'nv-hostengine'"
            )
        if code == _ST_DIAG_ALREADY_RUNNING:
            return f"another DCGM diag is already running on this node ({text})"
        return f"DCGM diag failed to run: {payload.get('name') or 'DCGMError'} ({code}): {text}"
    return f"pydcgm diag failed: {text}"
