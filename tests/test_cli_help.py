"""Every subcommand's --help, walked: it prints, exits 0, names the exit
statuses, offers --config PATH and --json, and points only at docs pages
that exist. New commands are covered without touching this test."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
from pathlib import Path

import pytest

from gcm_checks import cli

REPO = Path(__file__).resolve().parent.parent


def _walk(parser, path):
    yield path, parser
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                yield from _walk(sp, path + [name])


def _all_parsers():
    out = []
    for name in cli.COMMANDS:
        top = cli.build_parser([name])
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
        out.extend(_walk(sub, [name]))
    return out


PARSERS = _all_parsers()
LEAVES = [(p, sp) for p, sp in PARSERS
          if not any(isinstance(a, argparse._SubParsersAction) for a in sp._actions)]


def _help(argv):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            code = cli.main(argv + ["--help"])
        except SystemExit as e:  # a main() that lets argparse's exit through
            code = e.code
    return code, buf.getvalue()


def test_top_level_help_lists_every_command_and_the_exit_statuses():
    code, text = _help([])
    assert code == 0
    for name in cli.COMMANDS:
        assert name in text
    assert "exit status" in text.lower()


@pytest.mark.parametrize("path", [p for p, _ in PARSERS], ids=lambda p: " ".join(p))
def test_every_help_prints_and_names_the_exit_statuses(path):
    code, text = _help(path)
    assert code == 0 and text.startswith("usage: gcm-checks " + " ".join(path))
    assert "exit status" in text.lower()
    for page in re.findall(r"docs/[\w./-]+\.md", text):
        assert (REPO / page).is_file(), f"{' '.join(path)} --help points to a missing {page}"


@pytest.mark.parametrize("path, parser", LEAVES, ids=lambda x: " ".join(x) if isinstance(x, list) else "")
def test_every_command_takes_config_path_and_json(path, parser):
    opts = {o: a for a in parser._actions for o in a.option_strings}
    assert "--config" in opts and opts["--config"].metavar == "PATH", path
    assert "--json" in opts, path


# ---------------------------------------------------------------- old spellings and the conventions at work
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402


def _gcm(*args, env=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "gcm_checks", *args], capture_output=True, text=True, timeout=60,
                          cwd=str(REPO), env=e)


def test_config_check_takes_config_path_and_still_the_old_positional(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("budget_s: 9\n")
    new = _gcm("config", "check", "--config", str(cfg), "--json")
    old = _gcm("config", "check", str(cfg), "--json")
    assert new.returncode == old.returncode == 0
    assert json.loads(new.stdout)["file"] == json.loads(old.stdout)["file"] == str(cfg)
    assert "deprecated" in old.stderr and "deprecated" not in new.stderr


def test_notify_config_before_or_after_the_action_and_report_json(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"notify: {{outbox_dir: {tmp_path}/outbox}}\nreport: {{report_dir: {tmp_path}/reports}}\n")
    for argv in (("notify", "--config", str(cfg), "show", "--json"), ("notify", "show", "--config", str(cfg), "--json")):
        p = _gcm(*argv)
        assert p.returncode == 0 and json.loads(p.stdout) == [], p.stderr
    job = tmp_path / "reports" / "77"
    job.mkdir(parents=True)
    (job / "report.json").write_text('{"job": {"job_id": "77"}}')
    p = _gcm("notify", "report", "77", "--json", "--config", str(cfg))
    assert p.returncode == 0 and json.loads(p.stdout)["job"]["job_id"] == "77"


def test_flush_says_when_the_next_retry_is_due():
    from gcm_checks.commands.notify import _next_due

    class Box:
        def __init__(self, due):
            self.due = due

        def items(self, state):
            return [{"next_attempt_at": d} for d in self.due]

    assert _next_due(Box([]), now=1000.0) == "next retry: nothing pending"
    assert "due now" in _next_due(Box([900.0]), now=1000.0)
    msg = _next_due(Box([1000.0 + 600, 1000.0 + 3600]), now=1000.0)
    assert "in 10 min" in msg and "--now" in msg


def test_tables_fit_the_terminal_and_json_keeps_full_values(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"log_path: {tmp_path}/l.jsonl\nstate_dir: {tmp_path}/s\ngpu: {{count: 8}}\n")
    text = _gcm("check", "--tag", "prolog", "--config", str(cfg), "--sim", "gpu-lost", env={"COLUMNS": "72"})
    # The table's lines; the one-line verdict summary is a sentence, not a table, and stays whole.
    lines = [ln for ln in text.stdout.splitlines() if ln.strip() and not ln.startswith("gcm-checks ")]
    assert lines[0].startswith("STATUS") and len(lines) > 10
    assert all(len(ln) <= 72 for ln in lines), [ln for ln in lines if len(ln) > 72]
    assert any(ln.endswith("\u2026") for ln in lines)  # something was cut, with an ellipsis
    full = _gcm("check", "--tag", "prolog", "--config", str(cfg), "--sim", "gpu-lost", "--json", env={"COLUMNS": "72"})
    doc = json.loads(full.stdout)
    assert any(len(r["message"]) > 40 for r in doc["results"])
