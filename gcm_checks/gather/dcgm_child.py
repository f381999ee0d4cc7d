"""The child side of the pydcgm backend (dcgm_py.py): runs in a fresh
interpreter started by ``PydcgmBackend`` under ``proc.run``'s deadline, imports
NVIDIA's bindings, runs the diag and prints the response as plain JSON on one
marked line. It imports nothing of gcm_checks, so the child starts fast and a
broken bindings install can only break the child (see dcgm_py.py for why a
child and not a thread).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Sequence, Tuple

# The child prints its answer on one line with this prefix: the bindings
# themselves may print to stdout, so "the whole stdout is JSON" cannot hold.
RESULT_MARK = "GCM-PYDCGM-RESULT "

# dcgmReturn_t the child recognises when the bindings lack its name.
_ST_LIBRARY_NOT_FOUND = -25

_FE_GPU = 1

# Pre-4.x responses index tests by position (dcgm_structs.py DCGM_*_INDEX and
# DCGM_SWTEST_*); names and categories as dcgmi's JSON gives them.
_PER_GPU_TESTS = (
    ("Memory", "Hardware"),
    ("Diagnostic", "Hardware"),
    ("PCIe", "Integration"),
    ("SM Stress", "Stress"),
    ("Targeted Stress", "Stress"),
    ("Targeted Power", "Stress"),
    ("Memory Bandwidth", "Stress"),
    ("Memtest", "Hardware"),
    ("Pulse Test", "Stress"),
    ("EUD", "Hardware"),
)
_SOFTWARE_TESTS = (
    "Denylist",
    "NVML Library",
    "CUDA Main Library",
    "CUDA Toolkit Libraries",
    "Permissions and OS-related Blocks",
    "Persistence Mode",
    "Environmental Variables",
    "Page Retirement/Row Remap",
    "Graphics Processes",
    "Inforom",
    "Fabric Manager",
)
_ENTITY_LAYOUT = (11, 12)
_LEGACY_LAYOUT = (8, 9, 10)


# --------------------------------------------------------------------------
# The child: imports the bindings, runs the diag, prints plain data


class UnsupportedResponse(Exception):
    pass


def child_main(args: Sequence[str]) -> int:
    """``bindings_dir host level gpus connect_ms`` -> one marked JSON line."""
    bindings_dir, host, level, gpus, connect_ms = args

    def emit(obj: dict) -> None:
        sys.stdout.write(RESULT_MARK + json.dumps(obj) + "\n")
        sys.stdout.flush()

    sys.path.insert(0, bindings_dir)
    try:
        import dcgm_structs  # noqa: F401 - the bindings, from bindings_dir
        import DcgmDiag
        import pydcgm
    except Exception as e:  # noqa: BLE001 - any failure to load is "bindings unusable"
        emit({"ok": False, "kind": "import", "text": f"{type(e).__name__}: {e}"})
        return 0
    try:
        handle = _connect(pydcgm, dcgm_structs, host, int(connect_ms))
        gpu_ids = [int(g) for g in gpus.split(",") if g.strip()] or None
        response = DcgmDiag.DcgmDiag(gpuIds=gpu_ids, testNamesStr=str(int(level))).Execute(handle.handle)
        emit(response_to_plain(response, dcgm_structs))
    except dcgm_structs.DCGMError as e:
        code = getattr(e, "value", None)
        kind = "library" if code == getattr(dcgm_structs, "DCGM_ST_LIBRARY_NOT_FOUND", _ST_LIBRARY_NOT_FOUND) else "dcgm"
        emit({"ok": False, "kind": kind, "code": code, "name": type(e).__name__, "text": _safe_str(e)})
    except UnsupportedResponse as e:
        emit({"ok": False, "kind": "version", "text": str(e)})
    except Exception as e:  # noqa: BLE001 - reported, never raised to a traceback nobody reads
        emit({"ok": False, "kind": "exception", "text": f"{type(e).__name__}: {_safe_str(e)}"})
    # Exit without disconnecting: the answer is out, and a disconnect from a
    # wedged hostengine could hang until the parent's kill, losing nothing
    # but time. The hostengine drops our state when the socket closes.
    os._exit(0)


def _connect(pydcgm: Any, dcgm_structs: Any, host: str, connect_ms: int) -> Any:
    mode = getattr(dcgm_structs, "DCGM_OPERATION_MODE_AUTO", 1)
    try:
        return pydcgm.DcgmHandle(ipAddress=host, opMode=mode, timeoutMs=connect_ms)
    except TypeError:
        # Bindings older than timeoutMs: DCGM's default connect timeout (5 s).
        return pydcgm.DcgmHandle(ipAddress=host, opMode=mode)


def _safe_str(e: BaseException) -> str:
    try:
        return str(e)
    except Exception:  # noqa: BLE001 - DCGMError.__str__ calls into libdcgm
        return repr(getattr(e, "value", e))


def _text(v: Any) -> str:
    v = getattr(v, "value", v)  # a c_char array element, not auto-decoded
    if isinstance(v, bytes):
        v = v.split(b"\0", 1)[0].decode("utf-8", "replace")
    return str(v)


def _result_words(ds: Any) -> Dict[int, str]:
    return {
        getattr(ds, "DCGM_DIAG_RESULT_PASS", 0): "pass",
        getattr(ds, "DCGM_DIAG_RESULT_SKIP", 1): "skip",
        getattr(ds, "DCGM_DIAG_RESULT_WARN", 2): "warn",
        getattr(ds, "DCGM_DIAG_RESULT_FAIL", 3): "fail",
        getattr(ds, "DCGM_DIAG_RESULT_NOT_RUN", 4): "not run",
    }


def response_to_plain(response: Any, ds: Any) -> dict:
    """A dcgmDiagResponse_v8..v12 as plain JSON-able data (runs in the child)."""
    # make_dcgm_version(struct, ver) = sizeof(struct) | ver << 24.
    ver = int(response.version) >> 24
    words = _result_words(ds)
    if ver in _ENTITY_LAYOUT:
        tests, system_errors = _entity_layout(response, ds, words)
    elif ver in _LEGACY_LAYOUT:
        tests, system_errors = _legacy_layout(response, words)
    else:
        raise UnsupportedResponse(
            f"dcgmDiagResponse version {ver} is not one gcm-checks understands "
            f"(knows {_LEGACY_LAYOUT[0]}-{_ENTITY_LAYOUT[-1]})"
        )
    return {
        "ok": True,
        "response_version": ver,
        "dcgm_version": _text(getattr(response, "dcgmVersion", "")),
        "tests": tests,
        "system_errors": system_errors,
    }


def _word(words: Dict[int, str], v: Any) -> str:
    return words.get(int(v), f"result {int(v)}")


def _entity_layout(r: Any, ds: Any, words: Dict[int, str]) -> Tuple[list, list]:
    def take(arr: Any, n: Any) -> list:
        return list(arr[: min(int(n), len(arr))])

    categories = [_text(c) for c in take(r.categories, r.numCategories)]
    errors = take(r.errors, r.numErrors)
    info = take(r.info, r.numInfo)
    results = take(r.results, r.numResults)
    system_id = getattr(ds, "DCGM_DIAG_RESPONSE_SYSTEM_ERROR", None)

    def ent(x: Any) -> Tuple[int, int]:
        return int(x.entity.entityGroupId), int(x.entity.entityId)

    tests = []
    for t in take(r.tests, r.numTests):
        res, errs, infos = [], [], []
        for i in take(t.resultIndices, t.numResults):
            if i < len(results):
                g, e = ent(results[i])
                res.append({"group": g, "id": e, "result": _word(words, results[i].result)})
        for i in take(t.errorIndices, t.numErrors):
            if i < len(errors):
                x = errors[i]
                g, e = ent(x)
                errs.append({"group": g, "id": e, "code": int(x.code), "category": int(x.category), "severity": int(x.severity), "msg": _text(x.msg)})
        for i in take(t.infoIndices, t.numInfo):
            if i < len(info):
                g, e = ent(info[i])
                infos.append({"group": g, "id": e, "msg": _text(info[i].msg)})
        ci = int(t.categoryIndex)
        tests.append({
            "name": _text(t.name),
            "category": categories[ci] if ci < len(categories) else "",
            "result": _word(words, t.result),
            "results": res,
            "errors": errs,
            "info": infos,
        })
    # Errors of the diag as a whole (NVVS could not start, ...) carry the
    # system-error test id (dcgm_agent.helperDiagCheckReturn_v2).
    system_errors = [_text(x.msg) for x in errors if system_id is not None and int(x.testId) == int(system_id)]
    return tests, system_errors


def _legacy_errors(err: Any) -> list:
    """v8: one c_dcgmDiagErrorDetail_t; v9/v10: an array of _v2 with gpuId."""
    items = [err] if hasattr(err, "msg") else list(err)
    out = []
    for x in items:
        msg, code = _text(x.msg), int(x.code)
        if not msg.strip() and code == 0:
            continue  # an unused slot
        gpu = getattr(x, "gpuId", None)
        out.append({
            "gpu": int(gpu) if gpu is not None and 0 <= int(gpu) < 1024 else None,
            "code": code,
            "category": getattr(x, "category", None),
            "severity": getattr(x, "severity", None),
            "msg": msg,
        })
    return out


def _legacy_layout(r: Any, words: Dict[int, str]) -> Tuple[list, list]:
    tests: List[dict] = []
    level_one = list(r.levelOneResults[: min(int(r.levelOneTestCount), len(r.levelOneResults))])
    for i, res in enumerate(level_one):
        word = _word(words, res.result)
        if word == "not run":
            continue
        errs = _legacy_errors(res.error)
        named = sorted({e["gpu"] for e in errs if e["gpu"] is not None})
        # Software tests are node-wide; an error naming a GPU accuses that GPU.
        targets = [(_FE_GPU, g) for g in named] or [(0, None)]
        tests.append({
            "name": _SOFTWARE_TESTS[i] if i < len(_SOFTWARE_TESTS) else f"Software test {i}",
            "category": "Deployment",
            "result": word,
            "results": [{"group": g, "id": e, "result": word} for g, e in targets],
            "errors": [dict(x, group=_FE_GPU if x["gpu"] is not None else 0, id=x["gpu"]) for x in errs],
            "info": [{"group": g, "id": e, "msg": _text(res.info)} for g, e in targets if _text(res.info).strip()],
        })
    by_index: Dict[int, dict] = {}
    for pg in r.perGpuResponses[: min(int(r.gpuCount), len(r.perGpuResponses))]:
        gid = int(pg.gpuId)
        for idx, res in enumerate(pg.results):
            word = _word(words, res.result)
            if word == "not run":
                continue  # fixed slots for every test: only those run count
            name, cat = _PER_GPU_TESTS[idx] if idx < len(_PER_GPU_TESTS) else (f"Test {idx}", "")
            t = by_index.setdefault(idx, {"name": name, "category": cat, "result": word, "results": [], "errors": [], "info": []})
            t["results"].append({"group": _FE_GPU, "id": gid, "result": word})
            t["errors"].extend(dict(x, group=_FE_GPU, id=gid) for x in _legacy_errors(res.error))
            if _text(res.info).strip():
                t["info"].append({"group": _FE_GPU, "id": gid, "msg": _text(res.info)})
    tests.extend(by_index[i] for i in sorted(by_index))
    system = _legacy_errors(r.systemError)
    return tests, [x["msg"] for x in system if x["msg"].strip()]
