"""DCGM diag: parsing both JSON layouts, judging, and every way dcgmi can fail to answer.

Real processes: fake ``dcgmi`` shell scripts on a tmp path stand in for the
binary (a hung one is killed at the deadline); fixtures come from NVIDIA's real
output and schema (tests/fixtures/dcgm/README.md).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from gcm_checks import testing
from gcm_checks.checks.dcgm import check_dcgm_diag, diag_level, diag_timeout, gather_dcgm
from gcm_checks.gather import dcgm
from gcm_checks.gather.dcgm import DiagStatus
from gcm_checks.result import Status
from gcm_checks.sim.dcgm import CannedBackend

FIX = Path(__file__).parent / "fixtures" / "dcgm"


def _ctx(settings=None, sim=None, remaining=600.0, **extra):
    """The suite's context with ``settings`` (dotted keys), ``remaining``
    seconds of budget; a ``sim`` scenario is injected as its sources, as for a
    simulated node."""
    return testing.context(testing.settings(settings), sim=sim, budget_s=remaining, **extra)


def _fixture(name: str) -> str:
    return (FIX / name).read_text()


def _fake_dcgmi(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "bin" / "dcgmi"
    p.parent.mkdir(exist_ok=True)
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return p


def _judge(text: str, level: int = 1):
    report = CannedBackend(text).run(level, 60)
    return report, check_dcgm_diag(report, testing.settings())


# --------------------------------------------------------------------------
# statuses


@pytest.mark.parametrize(
    "word,expected",
    [
        ("Pass", DiagStatus.PASS),
        ("PASS", DiagStatus.PASS),
        ("pass", DiagStatus.PASS),
        ("Fail", DiagStatus.FAIL),
        ("FAIL", DiagStatus.FAIL),
        ("fail", DiagStatus.FAIL),
        ("Warn", DiagStatus.WARN),
        ("WARNING", DiagStatus.WARN),
        ("Skip", DiagStatus.SKIP),
        ("SKIPPED", DiagStatus.SKIP),
        ("Not Run", DiagStatus.SKIP),
        ("NOT_RUN", DiagStatus.SKIP),
        ("", DiagStatus.SKIP),
        (None, DiagStatus.SKIP),
        ("Exploded", DiagStatus.UNRECOGNISED),
    ],
)
def test_status_words_are_case_insensitive(word, expected):
    assert dcgm.parse_status(word) is expected


# --------------------------------------------------------------------------
# parsing real and derived documents


def test_real_nvidia_allpass_output_parses_every_gpu_and_passes():
    report, results = _judge(_fixture("v3.1.0_allpass_real.txt"))
    assert report.ok, report.problem
    assert report.version == "3.1.0"
    assert report.gpu_ids() == list(range(8))
    # 9 deployment tests x 8 GPUs (expanded from "0,...,7") + "software" x 8
    assert len(report.entries) == 9 * 8 + 8
    assert [r.status for r in results] == [Status.PASS]
    assert "8 GPUs" in results[0].message


@pytest.mark.parametrize("fixture", ["v3_fail_gpu1_gpu7.json", "v4_fail_gpu1_gpu7.json"])
def test_failures_on_second_and_eighth_gpu_are_both_reported(fixture):
    report, results = _judge(_fixture(fixture), level=2)
    failed = {r.subject: r for r in results if r.status is Status.FAIL}
    assert sorted(failed) == ["GPU 1", "GPU 7"]
    # GPU 3 only hit a CUDA API error DCGM rates MONITOR: a warning, no drain
    assert [(r.subject, r.status) for r in results if r.status is not Status.FAIL] == [("GPU 3", Status.WARN)]
    doc = json.loads(_fixture(fixture))
    # expected test name and error ids come from the document itself
    body = doc.get("DCGM Diagnostic") or doc["DCGM GPU Diagnostic"]
    hw = [t for c in body["test_categories"] if c and c["category"] == "Hardware" for t in c["tests"]][0]
    for res in hw["results"]:
        gid = res.get("entity_id", res.get("gpu_ids"))
        if f"GPU {gid}" not in failed:
            continue
        r = failed[f"GPU {gid}"]
        isolate = [w for w in res["warnings"] if w["error_severity"] in (2, 6)]
        assert isolate, "fixture: a failed GPU has a hardware error"
        for w in isolate:
            assert f"error {w['error_id']}" in r.message
            assert w["warning"][:30] in r.message
        finding = r.details["findings"][0]
        assert finding["test"] == hw["name"] and finding["finding"] == "hardware"
        assert {e["error_id"] for e in finding["errors"]} == {w["error_id"] for w in res["warnings"]}
        assert "level 2" in r.message


def test_real_dcgm4_persistence_mode_failure_warns_not_drains():
    report, results = _judge(_fixture("v4.2.3_gb10_persistence_mode_real.json"))
    assert report.version == "4.2.3"
    assert [(r.subject, r.status) for r in results] == [("GPU 0", Status.WARN)]
    assert "node setting persistence mode" in results[0].message and "not hardware" in results[0].message
    assert "Persistence mode for GPU 0 is disabled" in results[0].message
    assert results[0].details["findings"][0]["dcgm_status"] == "Fail"


@pytest.mark.parametrize(
    "error,finding",
    [
        # severity/category as DCGM sends them (3.x/4.x)
        ({"error_id": 52, "severity": 2, "category": 10}, dcgm.Finding.HARDWARE),  # faulty memory, ISOLATE
        ({"error_id": 85, "severity": 6, "category": 10}, dcgm.Finding.HARDWARE),  # row remap pending, RESET
        ({"error_id": 14, "severity": 4, "category": 11}, dcgm.Finding.HARDWARE),  # NVLink down, TRIAGE + hardware
        ({"error_id": 29, "severity": 5, "category": 8}, dcgm.Finding.CONFIG),  # persistence mode
        ({"error_id": 48, "severity": 5, "category": 3}, dcgm.Finding.CONFIG),  # test disabled
        ({"error_id": 46, "severity": 5, "category": 13}, dcgm.Finding.CONFIG),  # PCIe width: DCGM says CONFIG
        ({"error_id": 41, "severity": 1, "category": 9}, dcgm.Finding.MONITOR),  # thermal violations
        ({"error_id": 66, "severity": 4, "category": 6}, dcgm.Finding.SOFTWARE),  # cannot create CUDA context
        ({"error_id": 92, "severity": 4, "category": 7}, dcgm.Finding.SOFTWARE),  # EUD timeout
        ({"error_id": 44, "severity": 4, "category": 16}, dcgm.Finding.SOFTWARE),  # internal
        ({"error_id": 101, "severity": 4, "category": 5}, dcgm.Finding.XID),  # "Detected XID n for GPU m"
        ({"error_id": 81, "severity": 2, "category": 5}, dcgm.Finding.HARDWARE),  # uncontained error, ISOLATE
        # error id only (2.x): DCGM's own table
        ({"error_id": 29}, dcgm.Finding.CONFIG),
        ({"error_id": 41}, dcgm.Finding.MONITOR),
        ({"error_id": 67}, dcgm.Finding.SOFTWARE),
        ({"error_id": 52}, dcgm.Finding.HARDWARE),
        ({"error_id": 999}, dcgm.Finding.HARDWARE),
        # nothing: trust DCGM's Fail
        ({}, dcgm.Finding.HARDWARE),
    ],
)
def test_classify_error_follows_dcgm_severity(error, finding):
    assert dcgm.classify_error(dcgm.DiagError("x", **error)) is finding


@pytest.mark.parametrize(
    "warnings,status",
    [
        ([{"warning": "GPU 0 failed to create a CUDA context: busy", "error_id": 66, "error_category": 6, "error_severity": 4}], Status.UNKNOWN),
        ([{"warning": "Persistence mode for GPU 0 is disabled.", "error_id": 29}], Status.WARN),
        ([{"warning": "Found 3 faulty memory elements on GPU 0", "error_id": 52}], Status.FAIL),
        ("some 2.x text without an id", Status.FAIL),
        (None, Status.FAIL),
        # the worst finding decides: hardware beats config
        ([{"warning": "Persistence mode for GPU 0 is disabled.", "error_id": 29, "error_category": 8, "error_severity": 5},
          {"warning": "Found 3 faulty memory elements on GPU 0", "error_id": 52, "error_category": 10, "error_severity": 2}], Status.FAIL),
    ],
)
def test_failed_result_verdict_table(warnings, status):
    res = {"entity_group": "GPU", "entity_id": 0, "status": "Fail"}
    if warnings is not None:
        res["warnings"] = warnings
    doc = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memory", "results": [res]}]}]}}
    _, results = _judge(json.dumps(doc))
    assert [(r.subject, r.status) for r in results] == [("GPU 0", status)]


def test_statuses_in_any_case_give_the_same_verdict():
    text = _fixture("v3_fail_gpu1_gpu7.json")
    variants = [text.replace('"Fail"', '"FAIL"'), text.replace('"Fail"', '"fail"').replace('"Pass"', '"PASS"')]
    for v in variants:
        _, results = _judge(v)
        assert sorted(r.subject for r in results if r.status is Status.FAIL) == ["GPU 1", "GPU 7"]


def test_node_wide_deployment_failure_is_mapped_to_the_gpu_its_text_names():
    report, results = _judge(_fixture("v3_rowremap_gpu3.json"))
    assert [(r.subject, r.status) for r in results] == [("GPU 3", Status.FAIL)]
    assert "row remappings are pending" in results[0].message
    assert "Page Retirement/Row Remap" in results[0].message


def test_multi_gpu_failure_naming_no_gpu_accuses_every_listed_gpu():
    doc = {"DCGM GPU Diagnostic": {"test_categories": [{"category": "Deployment", "tests": [
        {"name": "Inforom", "results": [{"gpu_ids": "0,1", "status": "Fail", "warnings": "inforom corrupted"}]}]}]}}
    _, results = _judge(json.dumps(doc))
    assert [(r.subject, r.status) for r in results] == [("GPU 0", Status.FAIL), ("GPU 1", Status.FAIL)]


def test_warnings_only_warn():
    doc = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memory", "results": [
        {"entity_group": "GPU", "entity_id": 0, "status": "Pass"},
        {"entity_group": "GPU", "entity_id": 4, "status": "WARN", "warnings": [{"warning": "GPU 4 Thermal violations", "error_id": 28, "error_category": 6, "error_severity": 1}]},
    ]}]}]}}
    _, results = _judge(json.dumps(doc))
    assert [(r.subject, r.status) for r in results] == [("GPU 4", Status.WARN)]


def test_iterations_are_all_read():
    one = json.loads(_fixture("v4_fail_gpu1_gpu7.json"))
    ok = json.loads(_fixture("v4_fail_gpu1_gpu7.json").replace('"Fail"', '"Pass"'))
    doc = {"iterations": [ok, None, one], "Overall Result": "Fail"}
    _, results = _judge(json.dumps(doc))
    assert sorted(r.subject for r in results if r.status is Status.FAIL) == ["GPU 1", "GPU 7"]


def test_unrecognised_status_is_unknown_not_pass():
    doc = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memory", "results": [
        {"entity_group": "GPU", "entity_id": 2, "status": "Exploded"}]}]}]}}
    report, results = _judge(json.dumps(doc))
    assert [(r.subject, r.status) for r in results] == [("GPU 2", Status.UNKNOWN)]
    assert report.notes


@pytest.mark.parametrize(
    "stdout,needle",
    [
        (_fixture("v4_runtime_error.json"), "could not run"),
        ("", "could not parse"),
        ("{ not json", "could not parse"),
        ('{"something": "else"}', "could not parse"),
        ('{"DCGM Diagnostic": {"test_categories": []}}', "no test results"),
    ],
)
def test_output_that_says_nothing_about_gpus_is_unknown(stdout, needle):
    _, results = _judge(stdout)
    assert [r.status for r in results] == [Status.UNKNOWN]
    assert needle in results[0].message


def test_failure_text_is_one_clean_line():
    doc = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memory", "results": [
        {"entity_group": "GPU", "entity_id": 0, "status": "Fail", "warnings": [{"warning": "bad\nline\x1b[31m here", "error_id": 1, "error_category": 1, "error_severity": 2}]}]}]}]}}
    _, results = _judge(json.dumps(doc))
    assert "\n" not in results[0].message and "\x1b" not in results[0].message
    assert "bad line" in results[0].message


# --------------------------------------------------------------------------
# real processes: the dcgmi binary itself


def test_fake_dcgmi_failing_run_is_parsed_despite_nonzero_exit(tmp_path):
    argv_file = tmp_path / "argv"
    fixture = FIX / "v3_fail_gpu1_gpu7.json"
    exe = _fake_dcgmi(tmp_path, f'echo "$@" > "{argv_file}"\ncat "{fixture}"\nexit 226\n')
    report = dcgm.run_diag(2, 10, dcgm.DcgmiBackend(str(exe)))
    assert argv_file.read_text().split() == ["diag", "-r", "2", "-j"]
    assert report.ok, report.problem
    results = check_dcgm_diag(report, testing.settings())
    assert sorted(r.subject for r in results if r.status is Status.FAIL) == ["GPU 1", "GPU 7"]


def test_missing_dcgmi_is_unknown(tmp_path):
    missing = tmp_path / "nowhere" / "dcgmi"
    report = dcgm.run_diag(1, 10, dcgm.DcgmiBackend(str(missing)))
    results = check_dcgm_diag(report, testing.settings())
    assert [r.status for r in results] == [Status.UNKNOWN]
    assert "not found" in results[0].message


def test_non_executable_dcgmi_is_unknown_through_proc_run(tmp_path):
    # which() refuses it; the interpretation of proc's MISSING outcome is
    # exercised directly with a real failed exec as well.
    p = tmp_path / "dcgmi"
    p.write_text("#!/bin/sh\n")
    from gcm_checks import proc

    r = proc.run([str(p), "diag"], timeout=5)
    assert r.outcome is proc.Outcome.MISSING
    report = dcgm.interpret(r, 1)
    assert not report.ok and "not found or not executable" in report.problem


def test_hung_dcgmi_is_killed_at_the_deadline_and_unknown(tmp_path):
    pid_file = tmp_path / "pid"
    exe = _fake_dcgmi(tmp_path, f'echo $$ > "{pid_file}"\nexec sleep 60\n')
    report = dcgm.run_diag(1, 0.5, dcgm.DcgmiBackend(str(exe)))
    assert not report.ok
    assert "killed" in report.problem and "nv-hostengine may be hung" in report.problem
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    results = check_dcgm_diag(report, testing.settings())
    assert [r.status for r in results] == [Status.UNKNOWN]


@pytest.mark.parametrize(
    "stream,text",
    [
        ("2", "Error: unable to establish a connection to the specified host: localhost\nError: Unable to connect to host engine. Host engine connection invalid/disconnected."),
        ("1", "Error: Unable to connect to host engine. Host engine connection invalid/disconnected."),
    ],
)
def test_hostengine_down_is_unknown_with_a_clear_message(tmp_path, stream, text):
    body = "".join(f"echo '{line}' >&{stream}\n" for line in text.splitlines()) + "exit 255\n"
    exe = _fake_dcgmi(tmp_path, body)
    report = dcgm.run_diag(1, 10, dcgm.DcgmiBackend(str(exe)))
    results = check_dcgm_diag(report, testing.settings())
    assert [r.status for r in results] == [Status.UNKNOWN]
    assert "nv-hostengine is not answering" in results[0].message


def test_other_nonzero_exit_without_json_is_unknown(tmp_path):
    exe = _fake_dcgmi(tmp_path, "echo 'Error: Invalid parameter' >&2\nexit 2\n")
    report = dcgm.run_diag(1, 10, dcgm.DcgmiBackend(str(exe)))
    assert not report.ok and "Invalid parameter" in report.problem


# --------------------------------------------------------------------------
# the gatherer: level, deadline, simulation


@pytest.mark.parametrize(
    "settings,override,expected",
    [({}, None, 1), ({"dcgm.level": 3}, None, 3), ({"dcgm.level": 1}, 2, 2)],
)
def test_level_comes_from_settings_unless_the_runner_overrides(settings, override, expected):
    ctx = _ctx(settings, dcgm_level=override)
    assert diag_level(ctx) == expected


@pytest.mark.parametrize(
    "settings,remaining,expected",
    [
        ({}, 1000.0, dcgm.DEFAULT_TIMEOUT_S[1]),
        ({"dcgm.timeout_s": 30}, 1000.0, 30.0),
        ({"dcgm.timeout_s": 30}, 11.5, 10.0),
        ({}, 3.0, 0.0),
    ],
)
def test_timeout_is_bounded_by_the_run_budget(settings, remaining, expected):
    # abs: the budget runs on the clock between building the context and asking
    assert diag_timeout(_ctx(settings, remaining=remaining), 1) == pytest.approx(expected, abs=0.05)


def test_no_time_left_is_unknown():
    report = gather_dcgm(_ctx(sim={"dcgm_diag": _fixture("v4_fail_gpu1_gpu7.json")}, remaining=2.0))
    assert not report.ok and "no time left" in report.problem


def test_invalid_level_is_unknown():
    # A config cannot say 7 (the schema's choices); the runner's override can.
    report = gather_dcgm(_ctx(sim={"dcgm_diag": _fixture("v4_fail_gpu1_gpu7.json")}, dcgm_level=7))
    assert not report.ok and "invalid DCGM diag level" in report.problem


def test_sim_scenario_text_stands_in_for_dcgmi():
    report = gather_dcgm(_ctx(sim={"dcgm_diag": _fixture("v4_fail_gpu1_gpu7.json")}, dcgm_level=2))
    assert report.ok and report.source == "sim" and report.level == 2
    # the report keeps DCGM's own statuses; the check decides what they mean
    assert sorted({e.entity_id for e in report.failures()}) == [1, 3, 7]


def test_sim_scenario_may_give_parsed_json_or_a_run_description():
    parsed = json.loads(_fixture("v3_rowremap_gpu3.json"))
    assert [e.entity_id for e in gather_dcgm(_ctx(sim={"dcgm_diag": parsed})).failures()] == [3]
    down = {"stderr": "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.", "returncode": 255}
    report = gather_dcgm(_ctx(sim={"dcgm_diag": down}))
    assert not report.ok and "nv-hostengine" in report.problem
    hung = gather_dcgm(_ctx(sim={"dcgm_diag": {"timeout": True}}))
    assert not hung.ok and "killed" in hung.problem


def test_sim_scenario_without_dcgm_is_unknown_like_a_node_without_dcgmi():
    report = gather_dcgm(_ctx(sim={"gpus": []}))
    results = check_dcgm_diag(report, testing.settings())
    assert [r.status for r in results] == [Status.UNKNOWN]
    assert "not installed" in results[0].message


def test_production_gatherer_uses_the_configured_dcgmi(tmp_path):
    exe = _fake_dcgmi(tmp_path, f'cat "{FIX / "v3.1.0_allpass_real.txt"}"\n')
    report = gather_dcgm(_ctx({"dcgm.dcgmi": str(exe), "dcgm.timeout_s": 10}))
    assert report.ok and report.source == "dcgmi" and report.gpu_ids() == list(range(8))


def test_report_evidence_is_json_serialisable():
    report, _ = _judge(_fixture("v4_fail_gpu1_gpu7.json"))
    d = json.loads(json.dumps(report.to_dict()))
    assert d["ok"] is True and d["version"] == "4.1.1"
    assert {e["entity_id"] for e in d["entries"] if e["status"] == "fail"} == {1, 3, 7}


@pytest.mark.parametrize("layout", [3, 4])
@pytest.mark.parametrize("fail,warn", [({1: "GPU 1 bad", 7: "GPU 7 bad"}, {}), ({}, {3: "GPU 3 hot"}), ({}, {})])
def test_public_document_builder_round_trips(layout, fail, warn):
    from gcm_checks.testing import dcgm_diag_json

    _, results = _judge(dcgm_diag_json(8, fail, warn, layout=layout, error_id=42))
    assert sorted(r.subject for r in results if r.status is Status.FAIL) == [f"GPU {g}" for g in sorted(fail)]
    assert sorted(r.subject for r in results if r.status is Status.WARN) == [f"GPU {g}" for g in sorted(warn)]
    if not fail and not warn:
        assert [r.status for r in results] == [Status.PASS]


@pytest.mark.parametrize(
    "value,expected",
    [("0,1", (0, 1)), ("3", (3,)), ("0-3,6", (0, 1, 2, 3, 6)), ([7, 1], (1, 7)), ("", None), (None, None)],
)
def test_parse_gpu_list(value, expected):
    assert dcgm.parse_gpu_list(value) == expected


def test_only_the_jobs_gpus_are_diagnosed(tmp_path):
    argv_file = tmp_path / "argv"
    exe = _fake_dcgmi(tmp_path, f'echo "$@" > "{argv_file}"\ncat "{FIX / "v3.1.0_allpass_real.txt"}"\n')
    gather_dcgm(_ctx({"dcgm.dcgmi": str(exe)}, job={"gpus": "1,7"}))
    assert argv_file.read_text().split() == ["diag", "-r", "1", "-i", "1,7", "-j"]
    gather_dcgm(_ctx({"dcgm.dcgmi": str(exe), "dcgm.scope": "node"}, job={"gpus": "1,7"}))
    assert argv_file.read_text().split() == ["diag", "-r", "1", "-j"]


def test_sim_report_is_limited_to_the_jobs_gpus_like_dcgmi_i():
    report = gather_dcgm(_ctx(sim={"dcgm_diag": _fixture("v4_fail_gpu1_gpu7.json")}, job={"gpus": "0,7"}))
    assert report.gpu_ids() == [0, 7]
    results = check_dcgm_diag(report, testing.settings())
    assert [(r.subject, r.status) for r in results] == [("GPU 7", Status.FAIL)]


def test_unreadable_job_gpu_list_is_unknown():
    report = gather_dcgm(_ctx(sim={"dcgm_diag": "{}"}, job={"gpus": "gpu:a100"}))
    assert not report.ok and "GPU list" in report.problem


def test_evidence_says_which_failures_are_hardware():
    report, _ = _judge(_fixture("v4_fail_gpu1_gpu7.json"))
    d = report.to_dict()
    by_gpu = {e["entity_id"]: e["finding"] for e in d["entries"] if e["status"] == "fail"}
    assert by_gpu == {1: "hardware", 3: "monitor", 7: "hardware"}
    assert all(e["finding"] is None for e in d["entries"] if e["status"] != "fail")


# --------------------------------------------------------------------------
# issue 18: a test that judges a node setting warns and names it; only
# hardware tests drain, in every layout.


@pytest.mark.parametrize("name, setting, version", [
    ("v2_persistence_mode_fail_no_text.json", "persistence mode", "2.4.8"),
    ("v3_config_failures.json", "device permissions", "3.3.5"),
])
def test_configuration_failures_warn_and_name_the_setting(name, setting, version):
    report, results = _judge(_fixture(name))
    assert report.version == version
    assert results and all(r.status is Status.WARN for r in results), [(r.subject, r.status) for r in results]
    assert all(f"node setting {setting}" in r.message for r in results)
    assert all(r.details["findings"][0]["setting"].startswith(setting) for r in results)


def test_dcgm3_environment_failure_without_severity_names_the_variable_setting():
    _, results = _judge(_fixture("v3_config_failures.json"))
    envs = [f for r in results for f in r.details["findings"] if f["test"] == "Environmental Variables"]
    assert envs and all(f["verdict"] == "warn" and f["setting"].startswith("environment variables") for f in envs)


def test_dcgm2_hardware_test_fail_without_text_still_drains():
    _, results = _judge(_fixture("v2_inforom_fail_no_text.json"))
    assert results and all(r.status is Status.FAIL for r in results)


def test_dcgm4_software_test_config_prefix_and_textless_software_fail():
    from gcm_checks.gather.dcgm import DiagEntry, DiagError, DiagStatus, Finding, entry_finding

    pm = DiagEntry("Deployment", "software", "GPU", 0, DiagStatus.FAIL, "Fail",
                   (DiagError("Persistence Mode: Persistence mode for GPU 0 is disabled."),))
    assert entry_finding(pm) is Finding.CONFIG
    bare = DiagEntry("Deployment", "software", "GPU", 0, DiagStatus.FAIL, "Fail", ())
    assert entry_finding(bare) is Finding.SOFTWARE  # could be any sub-check: could not tell, never drains
    iso = DiagEntry("Deployment", "Persistence Mode", "GPU", 0, DiagStatus.FAIL, "Fail",
                    (DiagError("GPU 0 fell off the bus", error_id=None, severity=2),))
    assert entry_finding(iso) is Finding.HARDWARE  # DCGM says isolate the GPU: that wins
