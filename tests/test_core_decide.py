"""The one decision core (gcm_checks.decide) and the config that cannot hurt."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gcm_checks import config
from gcm_checks.decide import EXIT_DRAIN, NodeContext, action_words, decide, is_would_drain, pick_failure, rank
from gcm_checks.result import failed, passed, unknown, warned

REPO = Path(__file__).resolve().parent.parent

LOST = failed("gpu.responsive", "GPU has fallen off the bus (NVML_ERROR_GPU_IS_LOST)", "GPU 3 (00000000:3B:00.0)")
PCIE = failed("gpu.pcie.width", "PCIe link x8 of x16", "GPU 1 (00000000:2A:00.0)")
HOT = failed("gpu.temperature", "95 C", "GPU 0 (00000000:1A:00.0)")
IB = failed("ib.port.state", "DOWN", "mlx5_3 port 1")
XID = failed("xid.hardware", "XID 79", "GPU 3 (00000000:3B:00.0)")


# ---------------------------------------------------------------- ranking


@pytest.mark.parametrize("results, want", [
    ([HOT, PCIE, LOST], LOST),  # a lost GPU before a PCIe width before a temperature
    ([HOT, PCIE], PCIE),
    ([PCIE, IB], IB),  # a dead rail before a slow PCIe link
    ([XID, LOST], LOST),  # the same event: the re-measurable state names it (health can lift it)
    ([passed("gpu.count", "ok"), warned("gpu.temperature", "warm"), unknown("ib.gather", "?")], None),
])
def test_one_ranking_names_the_drain(results, want):
    assert pick_failure(results) is want


def test_ranking_is_not_alphabetical():
    # The prolog used to drain for the alphabetically first failing check id.
    assert rank("gpu.responsive") < rank("gpu.pcie.width") < rank("gpu.temperature")
    assert rank("gpu.ecc.uncorrectable") < rank("gpu.pcie.width")
    assert rank("totally.new.check") > rank("gpu.processes")


@pytest.mark.parametrize("mode", ["prolog", "epilog", "health", "qualify"])
def test_every_mode_picks_the_same_failure(mode):
    d = decide([HOT, PCIE, LOST], mode)
    assert d.failure is LOST and d.node_action == "drain"
    assert d.reason.startswith("gcm: GPU 3 lost (gpu.responsive)")


# ---------------------------------------------------------------- exit statuses


@pytest.mark.parametrize("mode, ctx, code", [
    ("prolog", NodeContext(), EXIT_DRAIN),
    ("prolog", NodeContext(dry_run=True), EXIT_DRAIN),  # a dry run exits as the real run would
    ("prolog", NodeContext(report_only=True), 0),
    ("prolog", NodeContext(config_error="x: y"), 0),
    ("health", NodeContext(), EXIT_DRAIN),
    ("health", NodeContext(report_only=True), 0),
    ("epilog", NodeContext(), 0),  # the epilog drains itself
])
def test_exit_status_of_a_drain_decision(mode, ctx, code):
    assert decide([LOST], mode, ctx).exit_code == code


@pytest.mark.parametrize("mode", ["prolog", "epilog", "health"])
def test_no_failure_never_exits_nonzero(mode):
    for results in ([], [passed("a", "ok")], [unknown("gpu.gather", "budget")], [warned("gpu.temperature", "warm")]):
        assert decide(results, mode).exit_code == 0


def test_epilog_exits_drain_only_when_its_drain_could_not_be_made():
    from gcm_checks.decide import settle

    d = decide([LOST], "epilog")
    assert settle(d, "drained").exit_code == 0 and settle(d, "error").exit_code == EXIT_DRAIN
    assert settle(decide([LOST], "epilog", NodeContext(report_only=True)), "error").exit_code == 0


# ---------------------------------------------------------------- report-only


def test_report_only_changes_nothing_on_the_node():
    d = decide([LOST], "health", NodeContext(report_only=True))
    assert d.node_action == "drain" and d.would_drain and d.report_only
    assert d.features is None  # no gcm_degraded either
    assert "would drain" in d.admin and "being drained" not in d.user and "stays in service" in d.user
    healthy = decide([passed("a", "ok")], "health", NodeContext(report_only=True))
    assert healthy.features is None and healthy.node_action == "none"  # no resume, no gcm_ok


def test_broken_config_is_report_only():
    d = decide([LOST], "prolog", NodeContext(config_error="f: k: expected x"))
    assert d.report_only and d.would_drain and d.exit_code == 0 and "config error" in d.admin


def test_one_dry_run_wording():
    assert action_words("drained", would=True) == "would drain"
    assert action_words("resumed", would=True) == "would resume"
    assert action_words("would_resume") == "would resume"
    for legacy in ("would_drain", "report-only: would drain", "would drain"):
        assert is_would_drain(legacy) and action_words(legacy) == "would drain"
    assert not is_would_drain("drained")


def test_brake_turns_a_drain_into_unknown():
    d = decide([LOST], "prolog", NodeContext(brake="12 of 40 nodes"))
    assert d.node_action == "none" and d.exit_code == 0 and d.verdict.value == "unknown"
    assert "suspected cluster-wide cause" in d.admin


# ---------------------------------------------------------------- CLI: report-only, node status, resume --dry-run


def _cfg(tmp_path, extra=""):
    c = tmp_path / "gcm.yaml"
    c.write_text(f"log_path: {tmp_path}/log/gcm.jsonl\nstate_dir: {tmp_path}/state\nbudget_s: 6\ngpu: {{count: 8}}\n{extra}")
    return c


def gcm(*args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "gcm_checks", *args], capture_output=True, text=True, env=e,
                          timeout=90, cwd=str(REPO))


def _fake_scontrol(tmp_path, state="IDLE+DRAIN", reason="gcm: GPU 3 lost (gpu.responsive): gone"):
    calls = tmp_path / "scontrol.calls"
    s = tmp_path / "scontrol"
    s.write_text("#!/bin/sh\n"
                 f"echo \"$@\" >> {calls}\n"
                 "case \"$1\" in show) "
                 f"echo 'NodeName=node1 Arch=x86_64 State={state} Reason={reason} [root@2026-11-30T10:00:00]';; "
                 "*) exit 0;; esac\n")
    s.chmod(0o755)
    return s, calls


def test_node_resume_dry_run_never_says_resumed(tmp_path):
    s, calls = _fake_scontrol(tmp_path)
    c = _cfg(tmp_path, f"slurm: {{scontrol: {s}}}\n")
    p = gcm("node", "resume", "node1", "--dry-run", "--config", str(c))
    assert p.returncode == 0, p.stderr
    assert "resumed" not in p.stdout and "would resume" in p.stdout
    assert "update" not in calls.read_text()  # only the read
    j = json.loads(gcm("node", "resume", "node1", "--dry-run", "--json", "--config", str(c)).stdout)
    assert j["action"] == "would_resume"


def test_report_only_health_changes_nothing_and_node_status_says_what_would_have_happened(tmp_path):
    s, calls = _fake_scontrol(tmp_path, state="IDLE", reason="")
    c = _cfg(tmp_path, f"report_only: true\nslurm: {{scontrol: {s}}}\n")
    p = gcm("health", "--config", str(c), "--sim", "gpu-lost", "--json", "--node", "node1")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["would_drain"] is True and doc["report_only"] is True
    assert doc["actions"]["drain"]["action"] == "would drain"
    assert "update" not in (calls.read_text() if calls.exists() else "")  # no drain, no feature, no Extra
    st = gcm("node", "status", "node1", "--config", str(c), env={"SLURMD_NODENAME": "node1"})
    assert "would drain (report-only, health at" in st.stdout and "GPU 3 lost" in st.stdout, st.stdout + st.stderr
    js = json.loads(gcm("node", "status", "node1", "--json", "--config", str(c), env={"SLURMD_NODENAME": "node1"}).stdout)
    assert js["nodes"][0]["would_drain"]["reason"].startswith("gcm: GPU 3 lost")
    # healthy again: the record goes
    gcm("health", "--config", str(c), "--sim", "healthy", "--node", "node1")
    st = gcm("node", "status", "node1", "--config", str(c), env={"SLURMD_NODENAME": "node1"})
    assert "would drain" not in st.stdout


# ---------------------------------------------------------------- config that cannot hurt


@pytest.mark.parametrize("text, key", [
    ("budget_s: .nan\n", "budget_s"),
    ("budget_s: .inf\n", "budget_s"),
    ("gpu: {nvml_timeout_s: -.inf}\n", "gpu.nvml_timeout_s"),
    ("gpu: {temperature_max_c: .inf}\n", "gpu.temperature_max_c"),
    ("budget_s: 1e9\n", "budget_s"),
    ("slurm: {brake_share: 1.5}\n", "slurm.brake_share"),
    ("nodes:\n  - match: 're:gpu[0-9'\n    set: {}\n", "nodes[0].match"),
    ("nodes:\n  - match: 're:(a+)+$'\n    set: {}\n", "nodes[0].match"),
    ("nodes:\n  - match: 'gpu[1-'\n    set: {}\n", "nodes[0].match"),
    ("nodes:\n  - match: 'gpu[9-1]'\n    set: {}\n", "nodes[0].match"),
])
def test_config_check_rejects(tmp_path, text, key):
    c = tmp_path / "c.yaml"
    c.write_text(text)
    p = gcm("config", "check", str(c), "--json")
    doc = json.loads(p.stdout)
    assert p.returncode == 1 and doc["ok"] is False and doc["key"] == key and doc["file"] == str(c)
    assert "report-only" in doc["on_nodes"]
    with pytest.raises(config.ConfigError):
        config.parse_file(str(c))


@pytest.mark.parametrize("kind", ["directory", "utf8", "unreadable", "deep-yaml"])
def test_every_read_problem_is_a_config_error_naming_the_file(tmp_path, kind):
    c = tmp_path / "c.yaml"
    if kind == "directory":
        c.mkdir()
    elif kind == "utf8":
        c.write_bytes(b"budget_s: 5\n\xff\xfe\n")
    elif kind == "unreadable":
        c.write_text("budget_s: 5\n")
        os.chmod(c, 0)
        if os.geteuid() == 0:
            pytest.skip("root reads anything")
    else:
        c.write_text("a: " + "[" * 50000 + "]" * 50000 + "\n")
    with pytest.raises(config.ConfigError) as e:
        config.parse_file(str(c))
    assert str(c) in str(e.value)
    s, err = config.load_or_defaults(str(c), "node1")
    assert err is not None and s.report_only is True and s.config_error


def test_discovered_config_that_is_a_directory_is_an_error_not_defaults(tmp_path):
    (tmp_path / "gcm-checks.yaml").mkdir()
    found = config.find_config(None, {"SLURM_CONF": str(tmp_path / "slurm.conf")})
    assert found == str(tmp_path / "gcm-checks.yaml")


def test_broken_config_keeps_the_admins_log_and_metrics_locations(tmp_path):
    c = tmp_path / "c.yaml"
    c.write_text(f"log_path: {tmp_path}/my.log\nstate_dir: {tmp_path}/st\ntelemetry: {{prometheus_textfile_dir: {tmp_path}/p}}\n"
                 "gpu: {count: eight}\n")
    s, err = config.load_or_defaults(str(c), "node1")
    assert err.key == "gpu.count"
    assert s.log_path == f"{tmp_path}/my.log" and s.state_dir == f"{tmp_path}/st"
    assert s.telemetry.prometheus_textfile_dir == f"{tmp_path}/p"
    assert s.gpu.count is None and s.report_only is True


def test_config_check_warns_when_the_budget_cannot_hold_a_gpu_deadline(tmp_path):
    c = tmp_path / "c.yaml"
    c.write_text("budget_s: 2\ngpu: {nvml_timeout_s: 60}\n")
    p = gcm("config", "check", str(c))
    assert p.returncode == 0 and "gpu.nvml_timeout_s (60s) leaves no room" in p.stderr


def test_huge_hostlist_pattern_is_matched_without_expansion():
    from gcm_checks.hostlist import matches

    t0 = time.process_time()
    for _ in range(1000):
        assert matches("gpu29999999", "gpu[0-30000000]")
        assert not matches("gpu30000001", "gpu[0-30000000]")
        assert matches("gpu0007", "gpu[0001-9999],cpu[1-2]") and not matches("gpu7", "gpu[0001-9999]")
    # bound, not a benchmark: expanding once took 32 s and 4 GB
    assert time.process_time() - t0 < 5
