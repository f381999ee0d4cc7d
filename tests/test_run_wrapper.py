"""gcm-run end to end, with real child processes, for every exit path.

The wrapper runs as a real process (``python -m gcm_checks.gcm_run_cli``) so that
signals, process groups and exit statuses are the kernel's, not a mock's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable


def env_for(tmp_path: Path, **extra: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["GCM_RUN_INDEX"] = str(tmp_path / "index")
    for k in ("SLURM_JOB_ID", "SLURM_PROCID", "SLURM_STEP_ID", "SLURM_JOB_COMMENT"):
        env.pop(k, None)
    env.update(extra)
    return env


def gcm_run(tmp_path: Path, *args: str, cmd, timeout: float = 60, env=None, **kw) -> subprocess.CompletedProcess:
    argv = [PY, "-m", "gcm_checks.gcm_run_cli", *args, "--", *cmd]
    return subprocess.run(argv, cwd=tmp_path, env=env or env_for(tmp_path), capture_output=True,
                          timeout=timeout, **kw)


def py(code: str) -> list:
    return [PY, "-c", textwrap.dedent(code)]


def report(log: Path) -> dict:
    return json.loads(Path(str(log) + ".report.json").read_text())


def status(log: Path) -> dict:
    return json.loads(Path(str(log) + ".status.json").read_text())


# ---------------------------------------------------------------- exit codes


@pytest.mark.parametrize("code", [0, 1, 3, 42, 255])
def test_exit_code_is_the_childs(tmp_path, code):
    log = tmp_path / "run.log"
    r = gcm_run(tmp_path, "--log", str(log), "--notify", "never", cmd=["sh", "-c", f"echo out; echo err >&2; exit {code}"])
    assert r.returncode == code
    assert r.stdout == b"out\n" and r.stderr == b"err\n"  # terminal output unchanged
    assert sorted(log.read_bytes().splitlines()) == [b"err", b"out"]
    rep = report(log)
    assert rep["exit"]["code"] == code and rep["exit"]["signal"] is None
    assert rep["state"] == "exited"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT])
def test_child_killed_by_signal_gives_128_plus_signal(tmp_path, sig):
    log = tmp_path / "run.log"
    r = gcm_run(tmp_path, "--log", str(log), cmd=py(f"import os, signal; os.kill(os.getpid(), {int(sig)})"))
    assert r.returncode == 128 + sig
    assert report(log)["exit"]["signal"] == signal.Signals(sig).name


def test_missing_command_gives_127_and_the_log_says_why(tmp_path):
    log = tmp_path / "run.log"
    r = gcm_run(tmp_path, "--log", str(log), cmd=["no-such-program-xyz", "--flag"])
    assert r.returncode == 127
    text = log.read_text()
    assert "no-such-program-xyz" in text and "No such file" in text
    rep = report(log)
    assert rep["exit"]["code"] == 127 and rep["exit"]["launch_error"]
    assert "did not start" in rep["summary"]


def test_not_executable_gives_126(tmp_path):
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    log = tmp_path / "run.log"
    r = gcm_run(tmp_path, "--log", str(log), cmd=[str(script)])
    assert r.returncode == 126
    assert "Permission denied" in log.read_text()


@pytest.mark.parametrize("bad_log", ["afile/run.log", "afile"])
def test_unwritable_log_exits_2_and_launches_nothing(tmp_path, bad_log):
    (tmp_path / "afile").write_text("i am a file, not a directory\n")
    if bad_log == "afile":
        (tmp_path / "afile").chmod(0o444)
        if os.geteuid() == 0:
            # root ignores mode bits: make the log path a directory instead.
            (tmp_path / "afile").unlink()
            (tmp_path / "afile").mkdir()
    marker = tmp_path / "launched"
    r = gcm_run(tmp_path, "--log", str(tmp_path / bad_log), cmd=["touch", str(marker)])
    assert r.returncode == 2
    assert not marker.exists()
    assert b"nothing was launched" in r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the no-follow rule applies to root")
def test_as_root_a_planted_symlink_log_is_refused(tmp_path):
    target = tmp_path / "etc-shadow-standin"
    target.write_text("precious\n")
    (tmp_path / "run.log").symlink_to(target)
    r = gcm_run(tmp_path, "--log", str(tmp_path / "run.log"), cmd=["echo", "overwrite"])
    assert r.returncode == 2
    assert target.read_text() == "precious\n"


def test_usage_errors_exit_2(tmp_path):
    assert gcm_run(tmp_path, "--stall-after", "soon", cmd=["true"]).returncode == 2
    assert gcm_run(tmp_path, "--kill-on-stall", cmd=["true"]).returncode == 2
    r = subprocess.run([PY, "-m", "gcm_checks.gcm_run_cli"], cwd=tmp_path, env=env_for(tmp_path), capture_output=True)
    assert r.returncode == 2


# ---------------------------------------------------------------- signals


def start_wrapper(tmp_path: Path, cmd, *args: str):
    log = tmp_path / "run.log"
    argv = [PY, "-m", "gcm_checks.gcm_run_cli", "--log", str(log), "--notify", "never", *args, "--", *cmd]
    p = subprocess.Popen(argv, cwd=tmp_path, env=env_for(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Wait until the child itself says it is ready (its handlers installed).
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if log.exists() and b"ready" in log.read_bytes():
            return p, log
        if p.poll() is not None:
            break
        time.sleep(0.02)
    p.kill()
    raise AssertionError(f"child never became ready: {p.communicate()}")


FORWARDED = [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP]


@pytest.mark.parametrize("sig", FORWARDED)
def test_forwarded_signal_kills_child_and_exit_is_128_plus_signal(tmp_path, sig):
    p, log = start_wrapper(tmp_path, ["sh", "-c", "echo ready; exec sleep 60"])
    p.send_signal(sig)
    p.communicate(timeout=30)
    assert p.returncode == 128 + sig
    rep = report(log)
    assert rep["exit"]["signal"] == signal.Signals(sig).name
    assert [s["signal"] for s in rep["signals_forwarded"]] == [signal.Signals(sig).name]


@pytest.mark.parametrize("sig", FORWARDED)
def test_child_that_handles_the_signal_keeps_its_own_exit_status(tmp_path, sig):
    code = f"""
        import signal, sys, time
        def handler(s, f):
            print("got", signal.Signals(s).name, flush=True)
            sys.exit(7)
        signal.signal({int(sig)}, handler)
        print("ready", flush=True)
        time.sleep(60)
    """
    p, log = start_wrapper(tmp_path, py(code))
    p.send_signal(sig)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 7
    assert f"got {signal.Signals(sig).name}".encode() in out
    assert f"got {signal.Signals(sig).name}" in log.read_text()


def test_signal_reaches_the_whole_process_group(tmp_path):
    marker = tmp_path / "grandchild-got-usr1"
    kid = tmp_path / "kid.py"
    kid.write_text(textwrap.dedent(f"""
        import pathlib, signal, time
        def h(s, f):
            pathlib.Path({str(marker)!r}).write_text("yes")
            raise SystemExit(0)
        signal.signal(signal.SIGUSR1, h)
        print("kid ready", flush=True)
        time.sleep(60)
    """))
    code = f"""
        import signal, subprocess, sys
        signal.signal(signal.SIGUSR1, lambda s, f: None)
        kid = subprocess.Popen([sys.executable, {str(kid)!r}], stdout=subprocess.PIPE)
        kid.stdout.readline()
        print("ready", flush=True)
        kid.wait()
        sys.exit(5)
    """
    p, log = start_wrapper(tmp_path, py(code))
    p.send_signal(signal.SIGUSR1)
    p.communicate(timeout=30)
    assert marker.read_text() == "yes"  # the DataLoader-worker case
    assert p.returncode == 5


def test_sigterm_then_exit_like_slurm_time_limit_records_it(tmp_path):
    # Slurm sends SIGTERM at the time limit; a good trainer checkpoints and exits 0.
    code = """
        import signal, sys, time
        signal.signal(signal.SIGTERM, lambda s, f: (print("checkpoint saved", flush=True), sys.exit(0)))
        print("ready", flush=True)
        for i in range(1, 1000):
            print(f"step {i}/1000 loss=0.5", flush=True)
            time.sleep(0.01)
    """
    p, log = start_wrapper(tmp_path, py(code))
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=30)
    assert p.returncode == 0
    rep = report(log)
    assert rep["signals_forwarded"][0]["signal"] == "SIGTERM"
    assert rep["progress"]["step"] >= 1


# ---------------------------------------------------------------- output


def test_huge_output_is_logged_whole_with_constant_memory(tmp_path):
    log = tmp_path / "run.log"
    # 200 MB: 100 MB of lines, then 100 MB without a single newline.
    code = """
        import sys
        out = sys.stdout.buffer
        line = b"step 1/2 " + b"x" * 90 + b"\\n"
        for _ in range(1_000_000):
            out.write(line)
        chunk = b"y" * 65536
        for _ in range(1600):
            out.write(chunk)
        out.flush()
    """
    argv = [PY, "-m", "gcm_checks.gcm_run_cli", "--log", str(log), "--", *py(code)]
    with open(os.devnull, "wb") as devnull:
        p = subprocess.Popen(argv, cwd=tmp_path, env=env_for(tmp_path), stdout=devnull, stderr=subprocess.PIPE)
        peak_kb = 0
        while p.poll() is None:
            # VmHWM: the wrapper's own peak resident memory so far.
            peak_kb = max(peak_kb, _status_kb(p.pid, "VmHWM"))
            time.sleep(0.02)
        err = p.stderr.read()
    assert p.returncode == 0, err
    assert log.stat().st_size == 100_000_000 + 1600 * 65536
    # 200 MB went through; the wrapper stays at tens of MB (about 18 here).
    assert 0 < peak_kb < 60 * 1024
    assert report(log)["output_bytes"] == 100_000_000 + 1600 * 65536


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def test_bytes_pass_through_unchanged(tmp_path):
    log = tmp_path / "run.log"
    payload = bytes(range(256)) + b"\r50%\r100%\n\x1b[1mbold\x1b[0m\n"
    code = f"import sys; sys.stdout.buffer.write({payload!r})"
    r = gcm_run(tmp_path, "--log", str(log), cmd=py(code))
    assert r.stdout == payload
    assert log.read_bytes() == payload


def test_child_output_is_unbuffered(tmp_path):
    # A Python child would block-buffer a pipe; gcm-run sets PYTHONUNBUFFERED
    # so each line arrives when printed, not at exit.
    code = """
        import time
        print("first", flush=False)
        time.sleep(30)
    """
    log = tmp_path / "run.log"
    argv = [PY, "-m", "gcm_checks.gcm_run_cli", "--log", str(log), "--", *py(code)]
    env = env_for(tmp_path)
    env.pop("PYTHONUNBUFFERED", None)
    p = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = p.stdout.readline()
        assert line == b"first\n"
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM


def test_pty_gives_the_child_a_terminal_and_keeps_bytes_exact(tmp_path):
    import pty

    log = tmp_path / "run.log"
    code = 'import sys; sys.stdout.write(f"tty={sys.stdout.isatty()}\\n 10%|#  | 1/10 [00:01<00:09]\\r 20%|## | 2/10 [00:02<00:08]\\r\\n")'
    argv = [PY, "-m", "gcm_checks.gcm_run_cli", "--log", str(log), "--", *py(code)]
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, cwd=tmp_path, env=env_for(tmp_path), stdout=slave, stderr=slave)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    p.wait(timeout=30)
    os.close(master)
    assert p.returncode == 0
    data = log.read_bytes()
    assert data.startswith(b"tty=True\n")  # exactly what the program wrote: no \r\n translation
    assert b"\r 20%" in data
    assert b"tty=True" in seen and b"20%" in seen
    assert report(log)["progress"]["step"] == 2


# ---------------------------------------------------------------- progress formats end to end

FORMAT_LINES = [
    ("tqdm", " 40%|████      | 400/1000 [05:00<07:30,  1.33it/s, loss=0.53]", 400, 1000, 0.53),
    ("hf", "  40%|████      | 400/1000 [05:00<07:30,  1.33it/s]\n{'loss': 0.53, 'learning_rate': 2e-05, 'epoch': 1.2}", 400, 1000, 0.53),
    ("lightning", "Epoch 0:  40%|████      | 400/1000 [01:00<01:30, 6.60it/s, v_num=0, train_loss=0.530]", 400, 1000, 0.53),
    ("megatron", " iteration      400/    1000 | consumed samples:       409600 | lm loss: 5.300000E-01 |", 400, 1000, 0.53),
    ("step", "step 400/1000 loss=0.53", 400, 1000, 0.53),
    ("gcm", 'GCM_PROGRESS {"step": 400, "total": 1000, "loss": 0.53}', 400, 1000, 0.53),
]


@pytest.mark.parametrize("name,text,step,total,loss", FORMAT_LINES)
def test_each_progress_format_reaches_the_status_and_report(tmp_path, name, text, step, total, loss):
    log = tmp_path / "run.log"
    r = gcm_run(tmp_path, "--log", str(log), cmd=py(f"print({text!r})"))
    assert r.returncode == 0
    p = report(log)["progress"]
    assert (p["step"], p["total"]) == (step, total)
    assert p["loss"] == pytest.approx(loss)
    assert p["percent"] == pytest.approx(40.0)
    assert status(log)["progress"]["step"] == step


def test_status_file_is_updated_while_running_and_capped_below_100(tmp_path):
    code = """
        import time
        print("step 10/10 loss=0.1", flush=True)
        print("ready", flush=True)
        time.sleep(60)
    """
    p, log = start_wrapper(tmp_path, py(code))
    try:
        deadline = time.monotonic() + 30
        st = {}
        while time.monotonic() < deadline:
            try:
                st = status(log)
            except (FileNotFoundError, ValueError):
                st = {}
            if st.get("state") == "running" and st.get("progress", {}).get("step") == 10:
                break
            time.sleep(0.05)
        assert st["state"] == "running"
        assert st["progress"]["percent"] == 99.0  # not 100 until the process exits
        assert st["child_pid"] and st["wrapper_pid"] == p.pid
        idx = list((tmp_path / "index").iterdir())
        assert len(idx) == 1  # `gcm-checks jobs` can find it
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
    assert not list((tmp_path / "index").iterdir())  # unregistered at exit
    assert status(log)["state"] == "exited"


# ---------------------------------------------------------------- stalls and NaN


def test_stall_with_short_timeout_is_reported(tmp_path):
    log = tmp_path / "run.log"
    code = """
        import time
        print("step 4000/10000 loss=0.5", flush=True)
        time.sleep(1.5)
        print("step 4001/10000 loss=0.5", flush=True)
    """
    r = gcm_run(tmp_path, "--log", str(log), "--stall-after", "0.4s", "--silent-after", "100s", cmd=py(code))
    assert r.returncode == 0
    rep = report(log)
    kinds = [a["kind"] for a in rep["alerts"]]
    assert kinds[:2] == ["stalled", "resumed"]
    assert "at step 4,000/10,000" in rep["alerts"][0]["message"]
    assert rep["alerts_fired"] == ["stalled"]


def test_silence_is_reported_separately(tmp_path):
    log = tmp_path / "run.log"
    r = gcm_run(tmp_path, "--log", str(log), "--stall-after", "100s", "--silent-after", "0.3s",
                cmd=py("import time; time.sleep(1.2); print('hello')"))
    assert r.returncode == 0
    assert [a["kind"] for a in report(log)["alerts"]] == ["silent"]


def test_kill_on_stall_ends_the_job_with_a_clear_record(tmp_path):
    log = tmp_path / "run.log"
    code = """
        import time
        print("step 1/10", flush=True)
        time.sleep(120)
    """
    r = gcm_run(tmp_path, "--log", str(log), "--stall-after", "0.5s", "--kill-on-stall", "--kill-grace", "5s",
                cmd=py(code), timeout=60)
    assert r.returncode == 128 + signal.SIGTERM
    rep = report(log)
    assert rep["killed_by"] == "stalled"
    assert "ended by gcm-run: stalled" in rep["summary"]
    assert "[gcm-run] stalled since" in log.read_text()


def test_kill_grace_escalates_to_sigkill(tmp_path):
    log = tmp_path / "run.log"
    code = """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("step 1/10", flush=True)
        time.sleep(120)
    """
    r = gcm_run(tmp_path, "--log", str(log), "--stall-after", "0.3s", "--kill-on-stall", "--kill-grace", "0.5s",
                cmd=py(code), timeout=60)
    assert r.returncode == 128 + signal.SIGKILL


@pytest.mark.parametrize("line", [
    "step 20/100 loss=nan",
    "{'loss': nan, 'learning_rate': 2e-05, 'epoch': 0.4}",
    " iteration       20/     100 | lm loss: inf |",
])
def test_nan_loss_is_reported(tmp_path, line):
    log = tmp_path / "run.log"
    code = f"""
        import time
        for i in range(1, 20):
            print(f"step {{i}}/100 loss=0.5", flush=True)
        print({line!r}, flush=True)
        time.sleep(0.5)
    """
    r = gcm_run(tmp_path, "--log", str(log), cmd=py(code))
    assert r.returncode == 0  # reporting never changes the exit status
    rep = report(log)
    assert "diverged" in [a["kind"] for a in rep["alerts"]]
    assert rep["progress"]["bad_loss"] in ("nan", "inf")


def test_kill_on_nan(tmp_path):
    log = tmp_path / "run.log"
    code = """
        import time
        print("step 3/100 loss=nan", flush=True)
        time.sleep(120)
    """
    r = gcm_run(tmp_path, "--log", str(log), "--kill-on-nan", "--kill-grace", "5s", cmd=py(code), timeout=60)
    assert r.returncode == 128 + signal.SIGTERM
    assert report(log)["killed_by"] == "diverged"
