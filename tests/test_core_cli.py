"""The thin CLI: lazy subcommands, exit codes, and in-process safety."""

import subprocess
import sys
import threading

from gcm_checks import cli
from gcm_checks.deadline import DeadlineExceeded, abandoned_calls, call_with_deadline


def test_main_returns_in_process_even_after_an_abandoned_call(tmp_path):
    # A hung call makes the console entry point leave with os._exit; main()
    # itself must never do that, or it would end a test run (or any caller).
    try:
        call_with_deadline(threading.Event().wait, 0.05, "hung-for-test")
    except DeadlineExceeded:
        pass
    assert abandoned_calls()
    cfg = tmp_path / "c.yaml"
    cfg.write_text("budget_s: 5\n")
    assert cli.main(["config", "check", str(cfg)]) == 0
    assert cli.main([]) == 2


def test_unknown_command_is_a_usage_error():
    p = subprocess.run([sys.executable, "-m", "gcm_checks", "no-such-command"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "invalid choice" in p.stderr


def test_help_lists_every_command_without_importing_them():
    code = ("import sys; from gcm_checks import cli; "
            "cli.build_parser(['--help']); "
            "print(sorted(m for m in sys.modules if m.startswith('gcm_checks.commands.')))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "[]", p.stdout  # help imports no subcommand module
    p = subprocess.run([sys.executable, "-m", "gcm_checks", "--help"], capture_output=True, text=True, timeout=60)
    for name in cli.COMMANDS:
        assert name in p.stdout


def test_prolog_does_not_import_what_it_does_not_run(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"log_path: {tmp_path}/l.jsonl\nstate_dir: {tmp_path}/s\ngpu: {{count: 8}}\n")
    code = ("import sys; from gcm_checks import cli; sys.argv=['gcm-checks']; "
            f"rc = cli.main(['prolog', '--config', '{cfg}', '--sim', 'healthy']); "
            "heavy = [m for m in ('gcm_checks.classify', 'gcm_checks.report', 'gcm_checks.notify', 'gcm_checks.xid', "
            "'gcm_checks.gather.dcgm', 'gcm_checks.gather.kernel_log', 'gcm_checks.qualify', 'gcm_checks.telemetry', 'gcm_checks.slurm', 'gcm_checks.brake', 'structlog', 'socket') if m in sys.modules]; "
            "print(rc, heavy)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "0 []", p.stdout + p.stderr
