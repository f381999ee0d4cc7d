"""The refinement pass and failures as real processes, with a stand-in sacct
binary that logs every invocation (calls counted by the OS, not by a mock)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures" / "accounting"


def fake_sacct(tmp_path: Path) -> Path:
    log = tmp_path / "sacct-calls.log"
    exe = tmp_path / "sacct"
    exe.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\ncat {FIX / 'sacct-22.05-mixed.txt'}\n")
    exe.chmod(0o755)
    return exe


def config(tmp_path: Path, sacct: Path, **acc) -> Path:
    data = {
        "state_dir": str(tmp_path / "state"),
        "log_path": str(tmp_path / "gcm.log"),
        "report": {"report_dir": str(tmp_path / "reports"), "spool_dir": str(tmp_path / "spool"),
                   "outbox_dir": str(tmp_path / "outbox")},
        "accounting": dict({"sacct": str(sacct), "interval_s": 600.0, "lookback_s": 10 * 365 * 86400.0}, **acc),
    }
    p = tmp_path / "gcm.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("SLURM_CONF", None)
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=60, cwd=str(REPO))


def test_refine_processes_make_one_sacct_call_per_interval(tmp_path):
    cfg = config(tmp_path, fake_sacct(tmp_path))
    outs = [run("-m", "gcm_checks.accounting", "--config", str(cfg), "--json") for _ in range(4)]
    assert all(o.returncode == 0 for o in outs), [o.stderr for o in outs]
    docs = [json.loads(o.stdout) for o in outs]
    assert docs[0]["ran"] and docs[0]["runs_seen"] == 7 and docs[0]["sacct_calls"] == 1
    assert all(not d["ran"] and "interval" in d["skipped"] for d in docs[1:])
    calls = (tmp_path / "sacct-calls.log").read_text().splitlines()
    assert len(calls) == 1 and "--duplicates" in calls[0] and "--allusers" in calls[0]
    forced = run("-m", "gcm_checks.accounting", "--config", str(cfg), "--force", "--quiet")
    assert forced.returncode == 0 and forced.stdout == ""
    assert len((tmp_path / "sacct-calls.log").read_text().splitlines()) == 2


def test_refine_never_fails_when_sacct_does(tmp_path):
    bad = tmp_path / "sacct"
    bad.write_text("#!/bin/sh\necho 'sacct: error: Slurm accounting storage is disabled' >&2\nexit 1\n")
    bad.chmod(0o755)
    cfg = config(tmp_path, bad)
    o = run("-m", "gcm_checks.accounting", "--config", str(cfg))
    assert o.returncode == 0 and "accounting storage is disabled" in o.stderr


def test_failures_cli_text_and_json(tmp_path):
    cfg = config(tmp_path, fake_sacct(tmp_path))
    o = run("-m", "gcm_checks", "failures", "--config", str(cfg), "--since", "2026-11-30", "--until", "2026-12-01", "--json")
    assert o.returncode == 0, o.stderr
    doc = json.loads(o.stdout)
    assert doc["runs"] == 7 and doc["by_category"]["timeout_walltime"]["from_sacct"] == 1
    t = run("-m", "gcm_checks", "failures", "--config", str(cfg), "--since", "2026-11-30", "--until", "2026-12-01")
    assert "timeout_walltime" in t.stdout and "sacct only" in t.stdout
    bad = run("-m", "gcm_checks", "failures", "--config", str(cfg), "--since", "yesterday-ish")
    assert bad.returncode == 1 and "cannot read" in bad.stderr


def test_failures_says_when_accounting_is_unavailable(tmp_path):
    cfg = config(tmp_path, tmp_path / "no-such-sacct")
    o = run("-m", "gcm_checks", "failures", "--config", str(cfg))
    assert o.returncode == 3 and "accounting unavailable" in o.stderr
