"""The bounded-call helpers: one for processes, one for Python calls."""

import os
import threading
import time

import pytest

from gcm_checks import proc
from gcm_checks.deadline import DeadlineExceeded, abandoned_calls, call_with_deadline, run_all


def test_ok_and_nonzero():
    r = proc.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 0"], timeout=10)
    assert r.outcome is proc.Outcome.OK and r.stdout == "out\n" and r.stderr == "err\n"
    r = proc.run(["/bin/sh", "-c", "echo boom >&2; exit 3"], timeout=10)
    assert r.outcome is proc.Outcome.NONZERO and r.returncode == 3 and "exit 3: boom" in r.describe()


def test_missing_binary_is_missing_not_an_exception(tmp_path):
    r = proc.run([str(tmp_path / "dcgmi")], timeout=5)
    assert r.outcome is proc.Outcome.MISSING and not r.ok


def test_timeout_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    # the child starts a grandchild that would outlive a plain kill of the child
    script = f"sleep 300 & echo $! > {pidfile}; wait"
    r = proc.run(["/bin/sh", "-c", script], timeout=0.5)
    assert r.outcome is proc.Outcome.TIMEOUT
    gpid = int(pidfile.read_text())
    for _ in range(50):
        try:
            os.kill(gpid, 0)
        except ProcessLookupError:
            break
        # a zombie until reaped by init counts as dead
        try:
            with open(f"/proc/{gpid}/stat") as f:
                if f.read().split()[2] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("grandchild survived the timeout")


def test_timeout_is_required():
    with pytest.raises(TypeError):
        proc.run(["/bin/true"])  # type: ignore[call-arg]


def test_which_finds_without_path(monkeypatch):
    monkeypatch.setenv("PATH", "")
    assert proc.which("sh") in ("/usr/bin/sh", "/bin/sh")
    assert proc.which("definitely-not-a-binary-gcm") is None


def test_call_with_deadline_returns_raises_and_abandons():
    assert call_with_deadline(lambda: 42, 1.0) == 42
    with pytest.raises(ZeroDivisionError):
        call_with_deadline(lambda: 1 / 0, 1.0)
    never = threading.Event()
    t0 = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        call_with_deadline(never.wait, 0.2, "wedged-call")
    assert time.monotonic() - t0 < 5
    assert "wedged-call" in abandoned_calls()


def test_run_all_reports_each_job():
    never = threading.Event()
    out = run_all({"fast": lambda: "ok", "bad": lambda: 1 / 0, "hung": never.wait}, 0.3)
    assert out["fast"] == (True, "ok")
    assert out["bad"][0] is False and isinstance(out["bad"][1], ZeroDivisionError)
    assert out["hung"][0] is False and isinstance(out["hung"][1], DeadlineExceeded)
