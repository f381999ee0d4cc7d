"""A SIGKILLed wrapper leaves no process of the job behind; the child's own
output can never change gcm-run's exit status or kill it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable

# The job: a worker in its process group, and a daemon that escapes the group
# with setsid and whose parent exits (it is re-parented to the subreaper).
JOB = """
import os, subprocess, sys, time
pids = sys.argv[1]
w = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
r, wfd = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(wfd, b"%d\\n" % os.getpid())
        time.sleep(300)
    os._exit(0)
daemon = int(os.read(r, 32))
with open(pids, "w") as f:
    f.write(f"{os.getpid()} {w.pid} {daemon}\\n")
print("step 1/10", flush=True)
time.sleep(300)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_sigkilled_wrapper_leaves_no_process_of_the_job(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(JOB)
    pids_file = tmp_path / "pids"
    env = dict(os.environ, PYTHONPATH=str(REPO), GCM_RUN_INDEX=str(tmp_path / "index"), GCM_RUN_TICK="0.1")
    env.pop("SLURM_JOB_ID", None)
    w = subprocess.Popen([PY, "-m", "gcm_checks.gcm_run_cli", "--log", str(tmp_path / "run.log"), "--notify", "never",
                          "--", PY, str(job), str(pids_file)], cwd=tmp_path, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not pids_file.exists() or not pids_file.read_text().endswith("\n"):
        assert time.monotonic() < deadline and w.poll() is None
        time.sleep(0.05)
    pids = [int(x) for x in pids_file.read_text().split()]
    time.sleep(0.5)  # a tick: the wrapper tells its sentinel about the adopted daemon
    assert all(alive(p) for p in pids)
    w.send_signal(signal.SIGKILL)
    w.wait(timeout=10)
    deadline = time.monotonic() + 20
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in pids if alive(p)]
    for p in left:  # never leave them to the next test
        os.kill(p, signal.SIGKILL)
    assert left == []


def test_normal_exit_leaves_no_sentinel(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), GCM_RUN_INDEX=str(tmp_path / "index"))
    r = subprocess.run([PY, "-m", "gcm_checks.gcm_run_cli", "--log", str(tmp_path / "run.log"), "--notify", "never",
                        "--", "sh", "-c", "echo step 1/1; exit 3"], cwd=tmp_path, env=env, capture_output=True, timeout=60)
    # capture_output waits for EOF on both pipes: a sentinel holding them would hang this call.
    assert r.returncode == 3


@pytest.mark.parametrize("line", [
    'GCM_PROGRESS {"eta_s": Infinity}',
    'GCM_PROGRESS {"step": Infinity, "total": 1e400, "loss": -Infinity, "rate": NaN}',
    'GCM_PROGRESS {"percent": 1e999, "metrics": {"lr": Infinity}}',
    "step 99999999999999999999999999999999999/1 loss=1e99999",
    "\x1b[31m" * 10000 + "step 3",
])
def test_the_childs_output_never_changes_the_exit_status(tmp_path, line):
    env = dict(os.environ, PYTHONPATH=str(REPO), GCM_RUN_INDEX=str(tmp_path / "index"), GCM_RUN_TICK="0.05",
               GCM_RUN_STATUS_INTERVAL="0.05")
    code = f"import sys, time\nprint({line!r}, flush=True)\ntime.sleep(0.5)\nsys.exit(7)"
    r = subprocess.run([PY, "-m", "gcm_checks.gcm_run_cli", "--log", str(tmp_path / "run.log"), "--notify", "never",
                        "--", PY, "-c", code], cwd=tmp_path, env=env, capture_output=True, timeout=60)
    assert r.returncode == 7, r.stderr[-2000:]
    assert b"internal error" not in r.stderr and b"Traceback" not in r.stderr
    rep = json.loads((tmp_path / "run.log.report.json").read_text())
    assert rep["exit"]["code"] == 7


def test_an_in_process_run_gives_the_subreaper_flag_back(tmp_path):
    import ctypes

    from gcm_checks.wrapper import guard
    from gcm_checks.wrapper.launcher import RunOptions, run_wrapped

    def flag() -> int:
        v = ctypes.c_int(-1)
        guard._prctl()(guard.PR_GET_CHILD_SUBREAPER, ctypes.byref(v), 0, 0, 0)
        return v.value

    before = flag()
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        code = run_wrapped(RunOptions(argv=["true"], log_path=str(tmp_path / "r.log"), out_fd=null, err_fd=null,
                                      env={"PATH": os.environ.get("PATH", "/bin")}, index_dir=str(tmp_path / "i"),
                                      pty="never", notify_policy="never", work_dir=str(tmp_path)))
    finally:
        os.close(null)
    assert code == 0 and flag() == before  # else every later orphan would be our zombie
