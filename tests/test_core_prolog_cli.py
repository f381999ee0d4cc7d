"""End to end: the real `gcm-checks prolog` process over every built-in
scenario, the hang scenario, config errors and the prolog.d entry script."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCENARIOS = sorted(p.stem for p in (REPO / "configs" / "sim").glob("*.yaml"))

# scenario -> (verdict, failing check id, subject fragment)
EXPECTED = {
    "healthy": ("pass", None, None),
    "gpu-lost": ("fail", "gpu.responsive", "GPU 3"),
    "ecc-uncorrectable": ("fail", "gpu.ecc.uncorrectable", "GPU 5"),
    "row-remap-pending": ("fail", "gpu.row_remap", "GPU 2"),
    "gpu-hang": ("fail", "gpu.responsive", "GPU 6"),
    "ib-port-down": ("fail", "ib.port.", "mlx5_3 port 1"),  # state or phys_state
    "pcie-degraded": ("fail", "gpu.pcie.width", "GPU 1"),
    "nvml-mismatch": ("fail", "gpu.nvml", ""),
    # gpu.count: 8 is configured here, so the count speaks (NVML lists 7)
    "gpu-missing": ("fail", "gpu.count", ""),
    "hca-missing": ("fail", "ib.hca.present", "mlx5_7"),
    "busy-node": ("pass", None, None),  # its GPU processes belong to running job 4242
    "leftover-processes": ("warn", None, None),  # gpu.leftover_processes: warn by default
    # epilog / qualification scenarios: the prolog sees nothing wrong
    "xid-during-job": ("pass", None, None),
    "fallen-off-bus-no-xid": ("pass", None, None),
    "nvswitch-fatal": ("pass", None, None),
    "healthy-dcgm": ("pass", None, None),
    "slow-gpu": ("pass", None, None),
}


@pytest.fixture
def cfg(tmp_path):
    p = tmp_path / "gcm.yaml"
    p.write_text(
        f"log_path: {tmp_path}/log/gcm.jsonl\nstate_dir: {tmp_path}/state\nbudget_s: 6\n"
        "gpu: {count: 8, nvml_timeout_s: 1.0}\n"
        "infiniband: {expected_hcas: [mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7], min_rate_gbps: 400}\n"
    )
    return p


def gcm(*args, env=None, timeout=60):
    e = dict(os.environ)
    e.pop("SLURM_JOB_ID", None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "gcm_checks", *args], capture_output=True, text=True, env=e,
                          timeout=timeout, cwd=str(REPO))


def test_every_builtin_scenario_has_an_expectation():
    assert set(SCENARIOS) == set(EXPECTED), "a built-in scenario is missing here, or an expected one is gone"
    missing = [s for s in ("healthy", "gpu-lost", "ecc-uncorrectable", "row-remap-pending", "gpu-hang",
                           "ib-port-down", "pcie-degraded", "nvml-mismatch") if s not in SCENARIOS]
    assert not missing


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_prolog_verdict_per_scenario(cfg, scenario):
    verdict, check, subject = EXPECTED[scenario]
    p = gcm("prolog", "--config", str(cfg), "--sim", scenario, "--json", "--dry-run", "--node", "node2")
    doc = json.loads(p.stdout)
    assert doc["verdict"] == verdict, p.stdout + p.stderr
    assert doc["node"] == "node2"
    assert set(doc) >= {"verdict", "drain_reason", "node", "results"}
    for r in doc["results"]:
        assert set(r) >= {"check", "status", "subject", "message", "duration_s"}
    if verdict in ("pass", "warn"):
        assert p.returncode == 0 and doc["drain_reason"] is None
        assert "would run" not in p.stderr  # healthy: no Slurm action at all
        return
    assert p.returncode == 100  # decide.EXIT_DRAIN: the only non-zero status
    reason = doc["drain_reason"]
    # sinfo -R shows 20 characters: they name the part; the check id follows.
    assert reason.startswith("gcm: ") and f"({check}" in reason, reason
    if subject:
        short = subject.split(" port ")[0]
        assert short in reason[:20], reason
    assert len(reason) <= 200 and "\n" not in reason
    assert "would run: scontrol update nodename=node2 state=drain reason=" in p.stderr


def test_hang_scenario_ends_on_time_even_when_nvml_deadline_exceeds_budget(tmp_path):
    # nvml_timeout_s (60) larger than the budget (2): only the global budget
    # can stop it, and the hung call must be abandoned, not awaited.
    c = tmp_path / "c.yaml"
    c.write_text(f"log_path: {tmp_path}/l.jsonl\nstate_dir: {tmp_path}/s\nbudget_s: 2\ngpu: {{count: 8, nvml_timeout_s: 60}}\n")
    t0 = time.monotonic()
    p = gcm("prolog", "--config", str(c), "--sim", "gpu-hang", "--json", "--dry-run", timeout=30)
    elapsed = time.monotonic() - t0
    doc = json.loads(p.stdout)
    # The budget (2 s) cut GPU 6's deadline (60 s) short: its own deadline
    # never elapsed, so this says nothing about the GPU - unknown, no drain.
    assert p.returncode == 0 and doc["verdict"] == "unknown", p.stdout
    assert any(r["check"] == "gpu.responsive" and r["status"] == "unknown" and "GPU 6" in r["subject"] for r in doc["results"])
    assert doc["drain_reason"] is None
    assert elapsed < 30  # bound, not a benchmark: it would otherwise never end


def test_config_error_never_fails_the_prolog(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("gpu: {count: eight}\n")
    p = gcm("prolog", "--config", str(bad), "--sim", "gpu-lost")
    assert p.returncode == 0
    assert "gpu.count: expected an integer" in p.stderr and "CONFIG ERROR" in p.stderr
    # The hardware was still checked, with defaults in report-only.
    assert "would drain [config error" in p.stderr


def test_report_only_logs_the_decision_and_exits_zero(cfg, tmp_path):
    cfg.write_text(cfg.read_text() + "report_only: true\n")
    p = gcm("prolog", "--config", str(cfg), "--sim", "gpu-lost", "--json")
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["verdict"] == "fail" and doc["action"] == "would drain"
    assert doc["report_only"] is True and doc["would_drain"] is True
    log = (tmp_path / "log" / "gcm.jsonl").read_text().splitlines()
    events = [json.loads(line)["event"] for line in log]
    assert "would_drain" in events and events[0] == "start"


def test_log_is_json_lines_and_records_job_start(cfg, tmp_path):
    p = gcm("prolog", "--config", str(cfg), "--sim", "healthy",
            env={"SLURM_JOB_ID": "4242", "SLURMD_NODENAME": "node1", "SLURM_JOB_RESTART_COUNT": "2"})
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in (tmp_path / "log" / "gcm.jsonl").read_text().splitlines()]
    assert lines[-1]["event"] == "done" and lines[-1]["verdict"] == "pass" and lines[-1]["job_id"] == "4242"
    start = json.loads((tmp_path / "state" / "jobs" / "4242.node1.json").read_text())
    assert abs(start["start"] - time.time()) < 120
    assert start["restart_count"] == 2  # names this run's report in the epilog
    assert p.stderr.startswith("gcm-checks prolog node1: PASS")


def test_prolog_d_script_runs_without_path(cfg, tmp_path):
    # slurmd gives the prolog no PATH; the entry script must still find us.
    script = REPO / "prolog.d" / "50-gcm-checks"
    assert os.access(script, os.X_OK)
    wrapper = tmp_path / "gcm-checks"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} -m gcm_checks \"$@\" --config {cfg} --sim gpu-lost --dry-run\n")
    wrapper.chmod(0o755)
    p = subprocess.run(["/usr/bin/env", "-i", f"GCM_CHECKS_BIN={wrapper}", f"PYTHONPATH={REPO}", "SLURMD_NODENAME=node2",
                        str(script)], capture_output=True, text=True, timeout=60, cwd="/")
    assert p.returncode == 100, p.stderr
    assert "gcm-checks prolog node2: FAIL" in p.stderr


def test_unknown_scenario_is_a_usage_error_not_a_drain(cfg):
    p = gcm("prolog", "--config", str(cfg), "--sim", "no-such-scenario")
    assert p.returncode == 0 and "unknown scenario" in p.stderr


def test_prolog_writes_prometheus_textfile_but_never_waits_on_otlp(cfg, tmp_path):
    prom = tmp_path / "prom"
    # an OTLP endpoint nobody listens on: the prolog must not even try it
    cfg.write_text(cfg.read_text() + f"telemetry: {{prometheus_textfile_dir: {prom}, otlp_endpoint: 'http://127.0.0.1:9'}}\n")
    p = gcm("prolog", "--config", str(cfg), "--sim", "gpu-lost", "--dry-run")
    assert p.returncode == 100
    text = "".join(f.read_text() for f in prom.glob("*.prom"))
    assert "gcm_check_status" in text and 'check="gpu.responsive"' in text
    log = (tmp_path / "log" / "gcm.jsonl").read_text()
    assert "otlp" not in log
