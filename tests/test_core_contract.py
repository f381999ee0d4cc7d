"""The exit-status contract with slurmd, through the real entry scripts.

Only the CLI's drain status (100) and 0 may reach slurmd. A broken config, a
broken install, a missing interpreter, the OOM killer, a full log disk and
CPU contention are all "we could not tell": 0 plus one stderr line.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = {
    "prolog": REPO / "prolog.d" / "50-gcm-checks",
    "epilog": REPO / "epilog.d" / "50-gcm-checks",
    "health": REPO / "bin" / "gcm-checks-health",
}


def _wrapper(tmp_path, body: str) -> Path:
    w = tmp_path / "gcm-checks-wrapper"
    w.write_text(body)
    w.chmod(0o755)
    return w


def _cfg(tmp_path, extra: str = "") -> Path:
    c = tmp_path / "gcm.yaml"
    c.write_text(f"log_path: {tmp_path}/log/gcm.jsonl\nstate_dir: {tmp_path}/state\nbudget_s: 6\n"
                 f"report: {{spool_dir: {tmp_path}/spool, report_dir: {tmp_path}/reports, outbox_dir: {tmp_path}/outbox}}\n"
                 f"{extra}")
    return c


def run_script(mode: str, wrapper: Path, env=None, timeout=90):
    e = {"GCM_CHECKS_BIN": str(wrapper), "PYTHONPATH": str(REPO), "SLURMD_NODENAME": "node2", "SLURM_JOB_ID": "77"}
    e.update(env or {})
    return subprocess.run(["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in e.items()), str(SCRIPTS[mode])],
                          capture_output=True, text=True, timeout=timeout, cwd="/")


def gcm_wrapper(tmp_path, config: Path, sim: str = "gpu-lost", extra: str = "--dry-run") -> Path:
    return _wrapper(tmp_path, f"#!/bin/sh\nexec {sys.executable} -m gcm_checks \"$@\" --config {config} --sim {sim} {extra}\n")


# ---------------------------------------------------------------- the scripts


@pytest.mark.parametrize("mode", sorted(SCRIPTS))
def test_bad_hardware_passes_the_drain_status_through(tmp_path, mode):
    w = gcm_wrapper(tmp_path, _cfg(tmp_path, "gpu: {count: 8}\n"))
    p = run_script(mode, w)
    # prolog and health decide a drain: 100; the epilog drained (dry run) itself: 0.
    assert p.returncode == (0 if mode == "epilog" else 100), p.stderr


@pytest.mark.parametrize("mode", sorted(SCRIPTS))
def test_broken_install_importerror_is_not_a_drain(tmp_path, mode):
    stub = tmp_path / "broken" / "gcm_checks"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('half-upgraded venv')\n")
    w = _wrapper(tmp_path, f"#!/bin/sh\nPYTHONPATH={stub.parent} exec {sys.executable} -m gcm_checks \"$@\"\n")
    p = run_script(mode, w)
    assert p.returncode == 0, p.stderr
    assert "ImportError" in p.stderr  # Python's own traceback, for slurmd's log
    assert f"gcm-checks {mode}: UNKNOWN" in p.stderr and "nothing changed" in p.stderr


@pytest.mark.parametrize("mode", sorted(SCRIPTS))
def test_missing_interpreter_is_not_a_drain(tmp_path, mode):
    w = _wrapper(tmp_path, "#!/nonexistent/venv/bin/python3\nprint('never')\n")
    p = run_script(mode, w)
    assert p.returncode == 0 and "UNKNOWN" in p.stderr, p.stderr


@pytest.mark.parametrize("mode", sorted(SCRIPTS))
def test_oom_killed_is_not_a_drain(tmp_path, mode):
    w = _wrapper(tmp_path, "#!/bin/sh\nkill -KILL $$\n")  # what the OOM killer does
    p = run_script(mode, w)
    assert p.returncode == 0 and "exited 137" in p.stderr, p.stderr


def test_any_other_status_from_gcm_checks_becomes_zero(tmp_path):
    for rc in (1, 2, 3, 99, 101, 120):
        w = _wrapper(tmp_path, f"#!/bin/sh\nexit {rc}\n")
        assert run_script("prolog", w).returncode == 0


@pytest.mark.parametrize("hazard", ["directory", "invalid-utf8", "bad-regex", "nan-budget", "huge-hostlist"])
@pytest.mark.parametrize("mode", ["prolog", "health"])
def test_broken_config_never_drains_through_the_entry_script(tmp_path, mode, hazard):
    if hazard == "directory":
        cfg = tmp_path / "gcm.yaml"
        cfg.mkdir()
    elif hazard == "invalid-utf8":
        cfg = tmp_path / "gcm.yaml"
        cfg.write_bytes(b"budget_s: 5\n# caf\xe9 \xff\xfe\n")
    elif hazard == "bad-regex":
        cfg = _cfg(tmp_path, "nodes:\n  - match: 're:gpu[0-9'\n    set: {gpu: {count: 8}}\n")
    elif hazard == "nan-budget":
        cfg = _cfg(tmp_path, "budget_s: .nan\n")
        cfg.write_text(cfg.read_text().replace("budget_s: 6\n", ""))
    else:
        # valid, but must be matched by range arithmetic (was 32 s and 4 GB)
        cfg = _cfg(tmp_path, "gpu: {count: 7}\nnodes:\n  - match: 'gpu[0-30000000]'\n    set: {gpu: {count: 8}}\n")
    w = gcm_wrapper(tmp_path, cfg, sim="gpu-lost", extra="")  # no --dry-run: a real run
    p = run_script(mode, w, env={"SLURMD_NODENAME": "gpu29999999"}, timeout=60)
    assert p.returncode == 0 or hazard == "huge-hostlist", p.stderr
    if hazard == "huge-hostlist":
        # a valid config: the node matched the section (count 8), the GPU is lost
        assert p.returncode == 100, p.stderr
        return
    assert "CONFIG ERROR" in p.stderr and str(cfg) in p.stderr
    # the hardware was still checked, in report-only: it says what it would do
    assert "would drain" in p.stderr and "[config error" in p.stderr
    assert "would run: scontrol" not in p.stderr  # report-only: not even a dry-run scontrol line


def test_config_error_sets_the_metric_and_keeps_the_log_where_the_admin_looks(tmp_path):
    prom = tmp_path / "prom"
    cfg = _cfg(tmp_path, f"telemetry: {{prometheus_textfile_dir: {prom}}}\ngpu: {{count: eight}}\n")
    p = subprocess.run([sys.executable, "-m", "gcm_checks", "prolog", "--config", str(cfg), "--sim", "healthy"],
                       capture_output=True, text=True, cwd=str(REPO), timeout=60)
    assert p.returncode == 0
    text = (prom / "gcm_checks_prolog.prom").read_text()
    assert 'gcm_config_error{mode="prolog",node=' in text and text.split("gcm_config_error{")[1].split("}")[1].strip().startswith("1")
    events = [json.loads(x) for x in (tmp_path / "log" / "gcm.jsonl").read_text().splitlines()]
    err = [e for e in events if e["event"] == "config_error"]
    assert err and err[0]["level"] == "error" and err[0]["key"] == "gpu.count"


@pytest.mark.parametrize("mode", ["epilog", "health"])
def test_full_log_disk_is_not_an_error_exit(tmp_path, mode):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    cfg = _cfg(tmp_path, "gpu: {count: 8}\n")
    cfg.write_text(cfg.read_text().replace(f"log_path: {tmp_path}/log/gcm.jsonl", "log_path: /dev/full"))
    w = gcm_wrapper(tmp_path, cfg, sim="healthy")
    p = run_script(mode, w)
    assert p.returncode == 0, p.stderr
    assert "log write failed" in p.stderr and "No space left" in p.stderr


def test_exit_table_is_in_help():
    for args in (["--help"], ["prolog", "--help"], ["health", "--help"]):
        p = subprocess.run([sys.executable, "-m", "gcm_checks", *args], capture_output=True, text=True, cwd=str(REPO))
        assert p.returncode == 0 and "exit status:" in p.stdout and "100" in p.stdout, args


def test_cli_usage_error_in_a_node_mode_exits_zero():
    p = subprocess.run([sys.executable, "-m", "gcm_checks", "prolog", "--no-such-flag"], capture_output=True, text=True,
                       cwd=str(REPO))
    assert p.returncode == 0 and "UNKNOWN - usage error" in p.stderr


def test_cli_main_turns_any_exception_into_zero_in_node_modes(monkeypatch, capsys):
    from gcm_checks import cli
    from gcm_checks.commands import prolog

    def boom(args):
        raise MemoryError("simulated")

    monkeypatch.setattr(prolog, "run", boom)
    assert cli.main(["prolog"]) == 0
    assert "UNKNOWN - internal error: MemoryError" in capsys.readouterr().err
    monkeypatch.setattr(prolog, "run", lambda a: 1)  # a stray non-drain status
    assert cli.main(["prolog"]) == 0


# ---------------------------------------------------------------- budgets


def test_fifty_healthy_prologs_at_once_with_a_1s_budget_never_drain(tmp_path):
    # 2 cores, 50 interpreters starting together: start-up and contention eat
    # the budget. That is our time running out, never a hung GPU.
    cfg = _cfg(tmp_path, "gpu: {count: 8}\n")
    cfg.write_text(cfg.read_text().replace("budget_s: 6", "budget_s: 1.0"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    procs = [subprocess.Popen([sys.executable, "-m", "gcm_checks", "prolog", "--config", str(cfg), "--sim", "healthy",
                               "--json", "--node", f"n{i}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=str(REPO), env=env) for i in range(50)]
    outs = [(p.wait(timeout=300), *p.communicate()) for p in procs]
    codes = [rc for rc, _, _ in outs]
    assert codes == [0] * 50, [err for rc, _, err in outs if rc][:2]
    docs = [json.loads(out) for _, out, _ in outs]
    assert all(d["verdict"] in ("pass", "unknown") and d["drain_reason"] is None for d in docs)
    assert not any(r["status"] == "fail" for d in docs for r in d["results"])


def test_admin_commands_report_an_internal_error_as_3_in_one_line(monkeypatch, capsys):
    from gcm_checks import cli
    from gcm_checks.commands import why

    def boom(args):
        raise RuntimeError("simulated")

    monkeypatch.setattr(why, "run", boom)
    assert cli.main(["why", "1"]) == 3
    err = capsys.readouterr().err
    assert err.strip() == "gcm-checks why: UNKNOWN - internal error: RuntimeError: simulated"
