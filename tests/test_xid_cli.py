"""``gcm-checks xid explain|scan`` as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gcm_checks.testing import kernel_xid_line

REPO = Path(__file__).resolve().parent.parent
T0 = 1_796_000_000.0


def cli(*args: str, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(REPO), TZ="UTC", **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "gcm_checks", "xid", *args], capture_output=True, text=True,
                          env=env, timeout=60, cwd=str(REPO))


@pytest.mark.parametrize(
    "code, severity, action",
    [(79, "fail", "reboot"), (13, "info", "restart_app"), (48, "fail", "reset_gpu"), (43, "info", "none")],
)
def test_explain_json(code, severity, action):
    r = cli("explain", str(code), "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert (d["code"], d["severity"], d["action"]) == (code, severity, action)


def test_explain_text_says_whether_it_drains():
    r = cli("explain", "79")
    assert r.returncode == 0
    assert "GPU has fallen off the bus" in r.stdout and "drains the node" in r.stdout
    r = cli("explain", "13")
    assert "never drains" in r.stdout


def test_explain_unknown_code_exits_1():
    r = cli("explain", "9999", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["severity"] == "warn"


@pytest.fixture
def log(tmp_path):
    p = tmp_path / "kern.log"
    p.write_text("\n".join([
        "Nov 30 00:00:00 n1 kernel: eth0: link up",
        kernel_xid_line(48, "0000:18:00", "DBE", when=T0 - 1, fmt="syslog"),
        kernel_xid_line(13, "0000:2a:00", "Graphics Exception", when=T0 + 10, fmt="syslog"),
        kernel_xid_line(79, "0000:5d:00", when=T0 + 20, fmt="syslog"),
    ]) + "\n")
    return p


def iso(t: float) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(t, timezone.utc).isoformat()


def test_scan_json_window(log):
    r = cli("scan", "--kernel-log", str(log), "--since", iso(T0), "--until", iso(T0 + 60), "--json", "--no-gpu-map")
    assert r.returncode == 1, r.stderr  # a drain-worthy XID was found
    doc = json.loads(r.stdout)
    assert [e["xid"] for e in doc["events"]] == [13, 79]
    assert set(doc["events"][0]) == {"time", "xid", "pci_bus_id", "gpu_index", "severity", "action", "line",
                                     "responsibility", "name"}
    assert doc["events"][1]["pci_bus_id"] == "00000000:5D:00.0"


def test_scan_clean_window_exits_0(log):
    r = cli("scan", "--kernel-log", str(log), "--since", iso(T0 + 5), "--until", iso(T0 + 15), "--no-gpu-map")
    assert r.returncode == 0, r.stderr
    assert "13" in r.stdout and "1 XID event(s), 0 drain-worthy" in r.stdout


def test_scan_unreadable_exits_2(tmp_path):
    r = cli("scan", "--kernel-log", str(tmp_path / "nope"), "--json", "--no-gpu-map")
    assert r.returncode == 2 and json.loads(r.stdout)["ok"] is False


@pytest.mark.parametrize("bad", [["--since", "yesterday"], ["--source", "file"]])
def test_scan_bad_arguments_exit_2(bad):
    assert cli("scan", *bad, "--no-gpu-map").returncode == 2


@pytest.mark.skipif(not os.access("/dev/kmsg", os.R_OK), reason="/dev/kmsg not readable here")
def test_scan_live_kmsg_json():
    r = cli("scan", "--source", "kmsg", "--json", "--no-gpu-map")
    assert r.returncode in (0, 1), r.stderr
    assert json.loads(r.stdout)["source"] == "kmsg"


def test_usage_without_action_exits_2():
    assert cli().returncode == 2
