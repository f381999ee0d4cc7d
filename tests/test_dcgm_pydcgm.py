"""DCGM diag through pydcgm: the real child process, fake bindings.

The fakes are real ``.py`` files (pydcgm, DcgmHandle, dcgm_structs,
dcgm_agent, DcgmDiag) in a tmp directory, imported by the real child
interpreter exactly as DCGM's own bindings would be. Their ctypes structs use
the field names, types and nesting of NVIDIA/DCGM testing/python3/
dcgm_structs.py (c_dcgmDiagResponse_v12 and _v10, c_dcgmDiagTestRun_v2,
c_dcgmDiagError_v1, c_dcgmDiagEntityResult_v1, c_dcgmDiagErrorDetail_v2, ...),
the call path of testing/python3/DcgmDiag.py (``Execute`` ->
``dcgm_agent.dcgmActionValidate_v2``) and DcgmHandle.py (``DcgmHandle(
ipAddress=..., opMode=..., timeoutMs=...)``; a refused connection raises
``DCGMError`` with ``DCGM_ST_CONNECTION_NOT_VALID``, mapped to its subclass as
dcgm_structs._extractDCGMErrorsAsClasses does). Fields the converter never
reads (auxData, serials, ``_unused`` padding) are left out.

What each fake run does comes from ``FAKE_DCGM_SPEC`` (JSON) in the child's
environment; what the child asked for is written to ``FAKE_DCGM_RECORD``.
"""

from __future__ import annotations

import json
import stat
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from gcm_checks import testing
from gcm_checks.checks.dcgm import check_dcgm_diag, gather_dcgm
from gcm_checks.gather import dcgm, dcgm_py
from gcm_checks.gather.dcgm_source import pydcgm_mode
from gcm_checks.gather.dcgm import DiagStatus
from gcm_checks.result import Status

FIX = Path(__file__).parent / "fixtures" / "dcgm"

PASS, SKIP, WARN, FAIL, NOT_RUN = 0, 1, 2, 3, 4  # DCGM_DIAG_RESULT_* (dcgm_structs.py)
GPU = 1  # DCGM_FE_GPU (dcgm_fields.h)
ISOLATE, MONITOR, RESET = 2, 1, 6  # dcgmErrorSeverity_t (dcgm_errors.h)

FAKE_STRUCTS = '''
from ctypes import *

DCGM_MAX_STR_LENGTH = 256
DCGM_MAX_NUM_DEVICES = 32
DCGM_GROUP_MAX_ENTITIES_V2 = 1024
DCGM_ST_OK = 0
DCGM_ST_CONNECTION_NOT_VALID = -21
DCGM_ST_LIBRARY_NOT_FOUND = -25
DCGM_ST_DIAG_ALREADY_RUNNING = -39
DCGM_OPERATION_MODE_AUTO = 1
DCGM_DIAG_RESULT_PASS = 0
DCGM_DIAG_RESULT_SKIP = 1
DCGM_DIAG_RESULT_WARN = 2
DCGM_DIAG_RESULT_FAIL = 3
DCGM_DIAG_RESULT_NOT_RUN = 4
# Stand-in value: the real one is dcgmvalue.DCGM_INT8_BLANK; the converter
# reads it by name, never by value.
DCGM_DIAG_RESPONSE_SYSTEM_ERROR = 0x7F


class DCGMError(Exception):
    _valClassMapping = dict()

    def __new__(typ, value):
        if typ == DCGMError:
            typ = DCGMError._valClassMapping.get(value, typ)
        obj = Exception.__new__(typ)
        obj.info = None
        obj.value = value
        return obj

    def __str__(self):
        return {DCGM_ST_CONNECTION_NOT_VALID: "The connection to the host engine is not valid any longer",
                DCGM_ST_LIBRARY_NOT_FOUND: "DCGM library could not be found"}.get(self.value, "DCGM Error with code %d" % self.value)


for _name, _val in (("DCGMError_ConnectionNotValid", DCGM_ST_CONNECTION_NOT_VALID),
                    ("DCGMError_LibraryNotFound", DCGM_ST_LIBRARY_NOT_FOUND)):
    def _gen(val):
        def new(typ):
            return DCGMError.__new__(typ, val)
        return new
    _cls = type(_name, (DCGMError,), {"__new__": _gen(_val)})
    globals()[_name] = _cls
    DCGMError._valClassMapping[_val] = _cls


def make_dcgm_version(struct, ver):
    return sizeof(struct) | (ver << 24)


class c_dcgmGroupEntityPair_t(Structure):
    _fields_ = [("entityGroupId", c_uint32), ("entityId", c_uint32)]


# --- DCGM 4.x: dcgmDiagResponse_v12 -------------------------------------
DCGM_ERR_MSG_LEN = 512
DCGM_DIAG_TEST_RUN_ERROR_INDICES_MAX = 32
DCGM_DIAG_TEST_RUN_INFO_INDICES_MAX_V2 = 128
DCGM_DIAG_TEST_RUN_RESULTS_MAX = DCGM_GROUP_MAX_ENTITIES_V2
DCGM_DIAG_TEST_RUN_NAME_LEN = 32
DCGM_DIAG_RESPONSE_TESTS_MAX = 20
DCGM_DIAG_RESPONSE_ERRORS_MAX = DCGM_DIAG_TEST_RUN_ERROR_INDICES_MAX
DCGM_DIAG_RESPONSE_INFO_MAX_V2 = DCGM_DIAG_TEST_RUN_INFO_INDICES_MAX_V2
DCGM_DIAG_RESPONSE_ENTITIES_MAX = DCGM_GROUP_MAX_ENTITIES_V2
DCGM_DIAG_RESPONSE_RESULTS_MAX = DCGM_DIAG_RESPONSE_TESTS_MAX * DCGM_DIAG_RESPONSE_ENTITIES_MAX
DCGM_DIAG_RESPONSE_CATEGORIES_MAX = 5
DCGM_DIAG_RESPONSE_CATEGORY_LEN = 20
DCGM_VERSION_LEN = 12


class c_dcgmDiagInfo_v1(Structure):
    _fields_ = [("entity", c_dcgmGroupEntityPair_t), ("msg", c_char * DCGM_ERR_MSG_LEN), ("testId", c_uint)]


class c_dcgmDiagError_v1(Structure):
    _fields_ = [("entity", c_dcgmGroupEntityPair_t), ("code", c_uint), ("category", c_uint),
                ("severity", c_uint), ("msg", c_char * DCGM_ERR_MSG_LEN), ("testId", c_uint)]


class c_dcgmDiagEntityResult_v1(Structure):
    _fields_ = [("entity", c_dcgmGroupEntityPair_t), ("result", c_int32), ("testId", c_uint)]


class c_dcgmDiagTestRun_v2(Structure):
    _fields_ = [("name", c_char * DCGM_DIAG_TEST_RUN_NAME_LEN), ("pluginName", c_char * DCGM_DIAG_TEST_RUN_NAME_LEN),
                ("result", c_uint), ("numErrors", c_ubyte), ("numInfo", c_ubyte), ("categoryIndex", c_ubyte),
                ("_unused", c_ubyte), ("numResults", c_ushort),
                ("errorIndices", c_ubyte * DCGM_DIAG_TEST_RUN_ERROR_INDICES_MAX),
                ("infoIndices", c_ubyte * DCGM_DIAG_TEST_RUN_INFO_INDICES_MAX_V2),
                ("resultIndices", c_ushort * DCGM_DIAG_TEST_RUN_RESULTS_MAX)]


class c_dcgmDiagResponse_v12(Structure):
    _fields_ = [("version", c_uint), ("numTests", c_ubyte), ("numErrors", c_ubyte), ("numInfo", c_ubyte),
                ("numCategories", c_ubyte), ("numEntities", c_ushort), ("numResults", c_ushort),
                ("tests", c_dcgmDiagTestRun_v2 * DCGM_DIAG_RESPONSE_TESTS_MAX),
                ("errors", c_dcgmDiagError_v1 * DCGM_DIAG_RESPONSE_ERRORS_MAX),
                ("info", c_dcgmDiagInfo_v1 * DCGM_DIAG_RESPONSE_INFO_MAX_V2),
                ("results", c_dcgmDiagEntityResult_v1 * DCGM_DIAG_RESPONSE_RESULTS_MAX),
                ("categories", (c_char * DCGM_DIAG_RESPONSE_CATEGORY_LEN) * DCGM_DIAG_RESPONSE_CATEGORIES_MAX),
                ("dcgmVersion", c_char * DCGM_VERSION_LEN),
                ("dcgmDriverVersion", c_char * DCGM_MAX_STR_LENGTH)]


dcgmDiagResponse_version12 = make_dcgm_version(c_dcgmDiagResponse_v12, 12)

# --- DCGM 3.x: dcgmDiagResponse_v10 -------------------------------------
DCGM_MAX_ERRORS = 5
DCGM_PER_GPU_TEST_COUNT_V8 = 13
LEVEL_ONE_MAX_RESULTS = 16


class c_dcgmDiagErrorDetail_v2(Structure):
    _fields_ = [("msg", c_char * DCGM_ERR_MSG_LEN), ("gpuId", c_int), ("code", c_uint),
                ("category", c_uint), ("severity", c_uint)]


class c_dcgmDiagTestResult_v3(Structure):
    _fields_ = [("result", c_uint), ("error", c_dcgmDiagErrorDetail_v2 * DCGM_MAX_ERRORS),
                ("info", c_char * DCGM_ERR_MSG_LEN)]


class c_dcgmDiagResponsePerGpu_v5(Structure):
    _fields_ = [("gpuId", c_uint), ("hwDiagnosticReturn", c_uint),
                ("results", c_dcgmDiagTestResult_v3 * DCGM_PER_GPU_TEST_COUNT_V8)]


class c_dcgmDiagResponse_v10(Structure):
    _fields_ = [("version", c_uint), ("gpuCount", c_uint), ("levelOneTestCount", c_uint),
                ("levelOneResults", c_dcgmDiagTestResult_v3 * LEVEL_ONE_MAX_RESULTS),
                ("perGpuResponses", c_dcgmDiagResponsePerGpu_v5 * DCGM_MAX_NUM_DEVICES),
                ("systemError", c_dcgmDiagErrorDetail_v2),
                ("dcgmVersion", c_char * DCGM_VERSION_LEN),
                ("dcgmDriverVersion", c_char * DCGM_MAX_STR_LENGTH)]


dcgmDiagResponse_version10 = make_dcgm_version(c_dcgmDiagResponse_v10, 10)
'''

FAKE_AGENT = '''
import json, os, time
import dcgm_structs as ds


def _spec():
    return json.loads(os.environ.get("FAKE_DCGM_SPEC", "{}"))


def record(**kw):
    path = os.environ.get("FAKE_DCGM_RECORD")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(kw) + "\\n")


def dcgmActionValidate_v2(dcgm_handle, runDiagInfo, runDiagVersion=None):
    spec = _spec()
    record(call="validate", handle=dcgm_handle, validate=runDiagInfo.validate, entityIds=runDiagInfo.entityIds)
    if spec.get("hang"):
        time.sleep(600)  # a wedged nv-hostengine never answers
    if spec.get("raise") is not None:
        raise ds.DCGMError(spec["raise"])
    if spec.get("layout") == 10:
        return _v10(spec)
    return _v12(spec)


def _v12(spec):
    r = ds.c_dcgmDiagResponse_v12()
    r.version = ds.dcgmDiagResponse_version12 if spec.get("version") is None else (spec["version"] << 24)
    cats = []
    for ti, t in enumerate(spec.get("tests", [])):
        run = r.tests[ti]
        run.name = t["name"].encode()
        cat = t.get("category", "Hardware")
        if cat not in cats:
            cats.append(cat)
            r.categories[len(cats) - 1].value = cat.encode()
        run.categoryIndex = cats.index(cat)
        run.result = t.get("result", 0)
        for g, e, res in t.get("results", []):
            k = r.numResults
            r.results[k].entity.entityGroupId, r.results[k].entity.entityId = g, e
            r.results[k].result, r.results[k].testId = res, ti
            run.resultIndices[run.numResults] = k
            run.numResults += 1
            r.numResults += 1
        for g, e, code, cat_, sev, msg in t.get("errors", []):
            k = r.numErrors
            x = r.errors[k]
            x.entity.entityGroupId, x.entity.entityId = g, e
            x.code, x.category, x.severity, x.msg, x.testId = code, cat_, sev, msg.encode(), ti
            run.errorIndices[run.numErrors] = k
            run.numErrors += 1
            r.numErrors += 1
        for g, e, msg in t.get("info", []):
            k = r.numInfo
            r.info[k].entity.entityGroupId, r.info[k].entity.entityId = g, e
            r.info[k].msg, r.info[k].testId = msg.encode(), ti
            run.infoIndices[run.numInfo] = k
            run.numInfo += 1
            r.numInfo += 1
        r.numTests += 1
    r.numCategories = len(cats)
    for msg in spec.get("system_errors", []):
        x = r.errors[r.numErrors]
        x.msg, x.testId = msg.encode(), ds.DCGM_DIAG_RESPONSE_SYSTEM_ERROR
        r.numErrors += 1
    r.dcgmVersion = b"4.2.3"
    return r


def _v10(spec):
    r = ds.c_dcgmDiagResponse_v10()
    r.version = ds.dcgmDiagResponse_version10
    r.dcgmVersion = b"3.3.9"
    # DCGM fills every slot of a test that did not run with NOT_RUN.
    for pg in r.perGpuResponses:
        for res in pg.results:
            res.result = ds.DCGM_DIAG_RESULT_NOT_RUN
    gpus = spec.get("gpus", {})
    r.gpuCount = len(gpus)
    for slot, (gid, tests) in enumerate(sorted(gpus.items(), key=lambda kv: int(kv[0]))):
        pg = r.perGpuResponses[slot]
        pg.gpuId = int(gid)
        for idx, (result, errors) in tests.items():
            res = pg.results[int(idx)]
            res.result = result
            for n, (msg, code, cat, sev) in enumerate(errors):
                res.error[n].msg, res.error[n].gpuId, res.error[n].code = msg.encode(), int(gid), code
                res.error[n].category, res.error[n].severity = cat, sev
    level_one = spec.get("level_one", [])
    r.levelOneTestCount = len(level_one)
    for i, (result, errors) in enumerate(level_one):
        res = r.levelOneResults[i]
        res.result = result
        for n, (msg, gpu, code, cat, sev) in enumerate(errors):
            res.error[n].msg, res.error[n].gpuId, res.error[n].code = msg.encode(), gpu, code
            res.error[n].category, res.error[n].severity = cat, sev
    return r
'''

FAKE_HANDLE = '''
import os
import dcgm_structs
import dcgm_agent


class DcgmHandle:
    def __init__(self, handle=None, ipAddress=None, opMode=dcgm_structs.DCGM_OPERATION_MODE_AUTO,
                 persistAfterDisconnect=False, unixSocketPath=None, timeoutMs=0):
        dcgm_agent.record(call="connect", ipAddress=ipAddress, opMode=opMode, timeoutMs=timeoutMs)
        if dcgm_agent._spec().get("down"):
            # What dcgm_agent.dcgmConnect_v2 raises through _dcgmCheckReturn
            # when nothing listens on the hostengine's port.
            raise dcgm_structs.DCGMError(dcgm_structs.DCGM_ST_CONNECTION_NOT_VALID)
        if dcgm_agent._spec().get("no_library"):
            # dcgm_structs._LoadDcgmLibrary: no libdcgm.so.4 anywhere.
            raise dcgm_structs.DCGMError(dcgm_structs.DCGM_ST_LIBRARY_NOT_FOUND)
        self.handle = 42
'''

FAKE_PYDCGM = '''
from DcgmHandle import *


class DcgmException(Exception):
    pass
'''

FAKE_DIAG = '''
import dcgm_structs
import dcgm_agent


class _RunDiag:  # the c_dcgmRunDiag_v10 fields DcgmDiag sets
    validate = 0
    entityIds = ""
    version = 0


class DcgmDiag:
    def __init__(self, gpuIds=None, cpuIds=None, testNamesStr="", paramsStr="", ignoreErrorCodesStr="",
                 verbose=True, version=None, timeout=0):
        self.version = version
        self.runDiagInfo = _RunDiag()
        if testNamesStr in ("", "1", "2", "3", "4"):
            self.runDiagInfo.validate = int(testNamesStr or 1)
        self.runDiagInfo.entityIds = ",".join(str(g) for g in gpuIds) if gpuIds else "*,cpu:*"

    def Execute(self, handle):
        return dcgm_agent.dcgmActionValidate_v2(handle, self.runDiagInfo, self.version)
'''


def write_bindings(root: Path, broken: bool = False) -> Path:
    d = root / "bindings" / "python3"
    d.mkdir(parents=True, exist_ok=True)
    files = {
        "dcgm_structs.py": FAKE_STRUCTS,
        "dcgm_agent.py": FAKE_AGENT,
        "DcgmHandle.py": FAKE_HANDLE,
        # Broken: the real pydcgm imports sibling modules; one missing (a
        # partial install) fails the import.
        "pydcgm.py": "import dcgmvalue_missing\n" + FAKE_PYDCGM if broken else FAKE_PYDCGM,
        "DcgmDiag.py": FAKE_DIAG,
    }
    for name, text in files.items():
        (d / name).write_text(textwrap.dedent(text))
    return d


@pytest.fixture
def bindings(tmp_path, monkeypatch):
    d = write_bindings(tmp_path)
    monkeypatch.setenv("FAKE_DCGM_RECORD", str(tmp_path / "record.jsonl"))
    monkeypatch.delenv("FAKE_DCGM_SPEC", raising=False)
    monkeypatch.setattr(dcgm_py, "BINDINGS_GLOBS", ())
    return d


def spec(monkeypatch, **kw) -> None:
    monkeypatch.setenv("FAKE_DCGM_SPEC", json.dumps(kw))


def records(tmp_path: Path) -> list:
    p = tmp_path / "record.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def run(bindings_dir: Path, level: int = 1, timeout: float = 20.0, gpus=None, fallback=None):
    return dcgm.run_diag(level, timeout, dcgm_py.PydcgmBackend(str(bindings_dir), gpus, fallback=fallback))


def _ctx(settings=None, **extra):
    return testing.context(testing.settings(settings), budget_s=600.0, **extra)


def _fake_dcgmi(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "bin" / "dcgmi"
    p.parent.mkdir(exist_ok=True)
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return p


def _eight(result=PASS):
    return [[GPU, g, result] for g in range(8)]


def _software_and_memory(memory_results=None, memory_errors=()):
    return [
        {"name": "software", "category": "Deployment", "results": _eight()},
        {"name": "memory", "category": "Hardware", "result": FAIL if memory_errors else PASS,
         "results": memory_results or _eight(), "errors": list(memory_errors)},
    ]


# --------------------------------------------------------------------------
# results


def test_all_pass_on_eight_gpus(bindings, monkeypatch, tmp_path):
    spec(monkeypatch, tests=_software_and_memory())
    report = run(bindings)
    assert report.ok and report.source == "pydcgm" and report.version == "4.2.3"
    assert report.gpu_ids() == list(range(8))
    assert {e.category for e in report.entries} == {"Deployment", "Hardware"}
    results = check_dcgm_diag(report, testing.settings())
    assert [r.status for r in results] == [Status.PASS]
    assert "2 tests passed on 8 GPUs" in results[0].message
    calls = records(tmp_path)
    assert calls[0] == {"call": "connect", "ipAddress": "127.0.0.1", "opMode": 1, "timeoutMs": 5000}
    assert calls[1]["validate"] == 1 and calls[1]["entityIds"] == "*,cpu:*" and calls[1]["handle"] == 42


def test_failures_on_second_and_eighth_gpu_are_both_reported(bindings, monkeypatch):
    memory = _eight()
    memory[1][2] = FAIL
    tests = _software_and_memory(memory, [[GPU, 1, 9, 11, ISOLATE, "GPU 1 has uncorrectable memory errors"]])
    tests.append({
        "name": "pcie", "category": "Integration", "result": FAIL,
        "results": [[GPU, g, FAIL if g == 7 else PASS] for g in range(8)],
        "errors": [[GPU, 7, 35, 6, RESET, "GPU 7: PCIe replay rate exceeded"]],
    })
    spec(monkeypatch, tests=tests)
    report = run(bindings, level=2)
    assert sorted(e.entity_id for e in report.failures()) == [1, 7]
    results = {r.subject: r for r in check_dcgm_diag(report, testing.settings())}
    assert set(results) == {"GPU 1", "GPU 7"}
    assert results["GPU 1"].status is Status.FAIL and "error 9: GPU 1 has uncorrectable memory errors" in results["GPU 1"].message
    assert results["GPU 7"].status is Status.FAIL and "test 'pcie'" in results["GPU 7"].message
    assert results["GPU 1"].details["findings"][0]["errors"][0] == {
        "error_id": 9, "severity": ISOLATE, "category": 11, "text": "GPU 1 has uncorrectable memory errors"}


def test_warning_warns(bindings, monkeypatch):
    memory = _eight()
    memory[3][2] = WARN
    tests = _software_and_memory(memory)
    tests[1]["errors"] = [[GPU, 3, 26, 1, MONITOR, "GPU 3: clocks throttled"]]
    spec(monkeypatch, tests=tests)
    results = check_dcgm_diag(run(bindings), testing.settings())
    assert [(r.subject, r.status) for r in results] == [("GPU 3", Status.WARN)]


def test_skipped_and_not_run_say_nothing_about_the_gpu(bindings, monkeypatch):
    spec(monkeypatch, tests=[
        {"name": "software", "category": "Deployment", "results": _eight()},
        {"name": "targeted_power", "category": "Stress", "result": SKIP, "results": _eight(SKIP)},
        {"name": "pulse_test", "category": "Stress", "result": NOT_RUN, "results": _eight(NOT_RUN)},
    ])
    report = run(bindings)
    assert {e.status for e in report.entries if e.test != "software"} == {DiagStatus.SKIP}
    assert [r.status for r in check_dcgm_diag(report, testing.settings())] == [Status.PASS]


def test_unknown_result_value_is_unknown_not_pass(bindings, monkeypatch):
    spec(monkeypatch, tests=[{"name": "memory", "results": [[GPU, 0, 9]]}])
    report = run(bindings)
    assert report.entries[0].status is DiagStatus.UNRECOGNISED
    assert [r.status for r in check_dcgm_diag(report, testing.settings())] == [Status.UNKNOWN]


def test_only_the_requested_gpus_are_diagnosed_and_reported(bindings, monkeypatch, tmp_path):
    spec(monkeypatch, tests=_software_and_memory())
    report = run(bindings, gpus=(1, 7))
    assert report.gpu_ids() == [1, 7]
    assert records(tmp_path)[1]["entityIds"] == "1,7"


def test_diag_that_could_not_start_is_unknown(bindings, monkeypatch):
    spec(monkeypatch, system_errors=["The NVVS binary was not found in the specified location"])
    report = run(bindings)
    assert not report.ok and "could not run" in report.problem and "NVVS binary" in report.problem


def test_failure_tied_to_no_entity_is_a_node_result_not_a_pass(bindings, monkeypatch):
    # DCGM_FE_NONE (0): e.g. the CUDA context could not be created at all.
    spec(monkeypatch, tests=[
        {"name": "software", "category": "Deployment", "results": _eight()},
        {"name": "targeted_stress", "category": "Stress", "result": FAIL, "results": _eight(SKIP),
         "errors": [[0, 0, 24, 6, 4, "Unable to create a CUDA context"]]},
    ])
    report = run(bindings)
    node = [e for e in report.entries if e.entity_id is None]
    assert [(e.test, e.status) for e in node] == [("targeted_stress", DiagStatus.FAIL)]
    results = check_dcgm_diag(report, testing.settings())
    # CUDA category (6) at TRIAGE severity: DCGM could not test, not a hardware verdict.
    assert [(r.subject, r.status) for r in results] == [("", Status.UNKNOWN)]


def test_dcgm2_single_error_layout_is_read():
    # dcgmDiagResponse_v8: one c_dcgmDiagErrorDetail_t (msg, code) per result.
    ns = SimpleNamespace
    slots = [ns(result=NOT_RUN, error=ns(msg=b"", code=0), info=b"") for _ in range(13)]
    slots[0] = ns(result=FAIL, error=ns(msg=b"GPU 2 has uncorrectable memory errors", code=9), info=b"")
    response = ns(
        version=8 << 24, gpuCount=1, levelOneTestCount=0, levelOneResults=[],
        perGpuResponses=[ns(gpuId=2, results=slots)], systemError=ns(msg=b"", code=0),
    )
    plain = dcgm_py.response_to_plain(response, ns())
    report = dcgm_py.from_plain(json.loads(json.dumps(plain)), 1)
    assert [(e.test, e.entity_id, e.status) for e in report.entries] == [("Memory", 2, DiagStatus.FAIL)]
    # No severity in 2.x: DCGM's own catalog for the id decides (9 = hardware).
    assert [r.status for r in check_dcgm_diag(report, testing.settings())] == [Status.FAIL]


def test_dcgm3_response_layout_is_read_too(bindings, monkeypatch):
    # dcgmDiagResponse_v10: level-one (software) results plus per-GPU slots
    # by test index (DCGM_MEMORY_INDEX = 0, DCGM_PCI_INDEX = 2).
    gpus = {str(g): {"0": [PASS, []]} for g in range(8)}
    gpus["1"] = {"0": [FAIL, [["GPU 1 has uncorrectable memory errors", 9, 11, ISOLATE]]]}
    gpus["7"] = {"0": [PASS, []], "2": [FAIL, [["PCIe replay rate exceeded", 35, 6, RESET]]]}
    spec(monkeypatch, layout=10, gpus=gpus, level_one=[[PASS, []], [PASS, []]])
    report = run(bindings)
    assert report.ok and report.version == "3.3.9"
    assert sorted((e.entity_id, e.test) for e in report.failures()) == [(1, "Memory"), (7, "PCIe")]
    assert {e.test for e in report.entries if e.entity_id is None} == {"Denylist", "NVML Library"}
    assert [r.subject for r in check_dcgm_diag(report, testing.settings()) if r.status is Status.FAIL] == ["GPU 1", "GPU 7"]


def test_response_version_we_do_not_understand_is_unknown(bindings, monkeypatch):
    spec(monkeypatch, version=13, tests=_software_and_memory())
    report = run(bindings)
    assert not report.ok and "dcgmDiagResponse version 13" in report.problem and "use_pydcgm: no" in report.problem


# --------------------------------------------------------------------------
# every way pydcgm can fail to answer


def test_hung_execute_child_is_killed_at_the_deadline_and_unknown(bindings, monkeypatch, tmp_path):
    spec(monkeypatch, hang=True)
    report = run(bindings, timeout=1.5)
    assert not report.ok and report.source == "pydcgm"
    assert "killed" in report.problem and "nv-hostengine may be hung" in report.problem
    assert report.duration_s < 5
    assert records(tmp_path)[-1]["call"] == "validate"  # it did hang inside Execute
    assert [r.status for r in check_dcgm_diag(report, testing.settings())] == [Status.UNKNOWN]


def test_hostengine_not_answering_is_unknown_with_a_clear_message(bindings, monkeypatch):
    spec(monkeypatch, down=True)
    report = run(bindings)
    results = check_dcgm_diag(report, testing.settings())
    assert [r.status for r in results] == [Status.UNKNOWN]
    assert "nv-hostengine is not answering" in results[0].message
    assert "DCGMError_ConnectionNotValid" in results[0].message


def test_other_dcgm_error_is_unknown_with_its_name(bindings, monkeypatch):
    spec(monkeypatch, **{"raise": -39})
    report = run(bindings)
    assert not report.ok and "already running" in report.problem


def test_import_failure_falls_back_to_dcgmi(tmp_path, monkeypatch):
    broken = write_bindings(tmp_path, broken=True)
    exe = _fake_dcgmi(tmp_path, f'cat "{FIX / "v4_fail_gpu1_gpu7.json"}"\n')
    report = run(broken, fallback=dcgm.DcgmiBackend(str(exe)))
    assert report.ok and report.source == "dcgmi"
    assert {1, 7} <= {e.entity_id for e in report.failures()}  # dcgmi's own report, read as usual
    assert any("dcgmvalue_missing" in n and "used dcgmi" in n for n in report.notes)


def test_import_failure_without_fallback_is_unknown(tmp_path):
    report = run(write_bindings(tmp_path, broken=True))
    assert not report.ok and "could not be loaded" in report.problem and "dcgmvalue_missing" in report.problem


def test_missing_libdcgm_falls_back_to_dcgmi(bindings, monkeypatch, tmp_path):
    spec(monkeypatch, no_library=True)
    exe = _fake_dcgmi(tmp_path, f'cat "{FIX / "v3.1.0_allpass_real.txt"}"\n')
    report = run(bindings, fallback=dcgm.DcgmiBackend(str(exe)))
    assert report.ok and report.source == "dcgmi"


def test_child_that_dies_without_an_answer_is_unknown(bindings, tmp_path):
    (bindings / "DcgmDiag.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    report = run(bindings)
    assert not report.ok and "without an answer" in report.problem


# --------------------------------------------------------------------------
# choosing the backend


def test_find_bindings_looks_on_sys_path_and_in_the_standard_places(bindings, monkeypatch, tmp_path):
    assert dcgm_py.find_bindings() is None
    monkeypatch.syspath_prepend(str(bindings))
    assert dcgm_py.find_bindings() == str(bindings)
    monkeypatch.syspath_prepend(str(tmp_path))  # harmless entries first
    assert dcgm_py.find_bindings() == str(bindings)


def test_find_bindings_globs_the_dcgm_install_dirs(bindings, tmp_path):
    pattern = str(tmp_path / "bindin*" / "python3")
    assert dcgm_py.find_bindings([pattern]) == str(bindings)
    (bindings / "DcgmDiag.py").unlink()  # all four modules, or none
    assert dcgm_py.find_bindings([pattern]) is None


def test_probing_imports_nothing(bindings, monkeypatch):
    import sys

    monkeypatch.syspath_prepend(str(bindings))
    dcgm_py.find_bindings()
    assert not set(dcgm_py.MODULES) & set(sys.modules)


@pytest.mark.parametrize(
    "value,mode",
    [("auto", "auto"), (None, "auto"), ("yes", "yes"), (True, "yes"), ("true", "yes"), ("no", "no"), (False, "no"), ("False", "no")],
)
def test_use_pydcgm_values(value, mode):
    assert pydcgm_mode(value) == mode


def test_gatherer_uses_pydcgm_in_auto_mode_when_importable_and_dcgmi_otherwise(bindings, monkeypatch, tmp_path):
    spec(monkeypatch, tests=_software_and_memory())
    exe = _fake_dcgmi(tmp_path, f'cat "{FIX / "v3.1.0_allpass_real.txt"}"\n')
    settings = {"dcgm.dcgmi": str(exe), "dcgm.timeout_s": 20}
    assert gather_dcgm(_ctx(settings)).source == "dcgmi"  # bindings not on sys.path
    monkeypatch.syspath_prepend(str(bindings))
    assert gather_dcgm(_ctx(settings)).source == "pydcgm"  # default: auto
    assert gather_dcgm(_ctx({**settings, "dcgm.use_pydcgm": "auto"}, job={"gpus": "0,7"})).gpu_ids() == [0, 7]
    assert gather_dcgm(_ctx({**settings, "dcgm.use_pydcgm": False})).source == "dcgmi"
    assert gather_dcgm(_ctx({**settings, "dcgm.use_pydcgm": "no"})).source == "dcgmi"


def test_gatherer_requires_pydcgm_when_told_yes(bindings, monkeypatch, tmp_path):
    exe = _fake_dcgmi(tmp_path, f'cat "{FIX / "v3.1.0_allpass_real.txt"}"\n')
    report = gather_dcgm(_ctx({"dcgm.dcgmi": str(exe), "dcgm.use_pydcgm": "yes"}))
    assert not report.ok and report.source == "pydcgm" and "not found" in report.problem
    monkeypatch.syspath_prepend(str(write_bindings(tmp_path / "b", broken=True)))
    report = gather_dcgm(_ctx({"dcgm.dcgmi": str(exe), "dcgm.use_pydcgm": True, "dcgm.timeout_s": 20}))
    assert not report.ok and "could not be loaded" in report.problem  # no silent dcgmi when told yes


def test_report_evidence_is_json_serialisable(bindings, monkeypatch):
    spec(monkeypatch, tests=_software_and_memory())
    json.dumps(run(bindings).to_dict())


def test_config_accepts_the_old_bool_and_the_new_words():
    from gcm_checks import config

    key = config.SCHEMA["dcgm"]["use_pydcgm"]
    for v in ("auto", "yes", "no", True, False):
        config._check_value("t", "dcgm.use_pydcgm", key, v)
    with pytest.raises(config.ConfigError):
        config._check_value("t", "dcgm.use_pydcgm", key, "sometimes")
