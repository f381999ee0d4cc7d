"""``gcm-checks jobs``: running gcm-run jobs with progress, ETA and last loss."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gcm_checks.commands import jobs
from gcm_checks.wrapper import status as st

REPO = Path(__file__).resolve().parents[1]


def run_status(**kw) -> dict:
    base = {
        "state": "running", "host": st.host(), "wrapper_pid": os.getpid(), "name": "train",
        "argv": ["python", "train.py"], "slurm": {"job_id": "42"}, "started_ts": 1.0, "updated_ts": time.time(),
        "progress": {"step": 4000, "total": 10000, "percent": 40.0, "eta_s": 7980, "loss": 0.53},
        "alerts": [],
    }
    base.update(kw)
    return base


@pytest.mark.parametrize("percent,expect", [(0.0, "[" + "." * 10 + "]"), (40.0, "[####......]"),
                                            (100.0, "[##########]"), (None, "[??????????]")])
def test_bar(percent, expect):
    assert jobs.bar(percent, 10) == expect


def test_render_shows_progress_eta_and_loss():
    lines = jobs.render([run_status()], width=10, now=time.time())
    assert lines[0].split()[:4] == ["JOB", "NAME", "STATE", "PROGRESS"]
    row = lines[1]
    for part in ("42", "train", "running", "[####......]", "40.0%", "4000/10000", "2h13m", "0.53"):
        assert part in row, (part, row)


def test_render_flags_alerts_and_exit():
    r = run_status(state="exited", exit={"code": None, "signal": "SIGTERM"},
                   alerts=[{"kind": "stalled"}, {"kind": "resumed"}, {"kind": "diverged"}])
    row = jobs.render([r], now=time.time())[1]
    assert "exited:SIGTERM" in row and "diverged,stalled" in row


def test_render_neutralises_control_characters_in_names():
    row = jobs.render([run_status(name="evil\x1b]0;pwned\x07")], now=time.time())[1]
    assert "\x1b" not in row and "\x07" not in row


def write_run(tmp_path: Path, index: Path, name: str, **kw) -> Path:
    sf = tmp_path / f"{name}.log.status.json"
    st.write_run_json(str(sf), run_status(name=name, **kw))
    st.register_run(str(index), name, str(sf))
    return sf


def test_list_runs_marks_dead_wrappers_lost(tmp_path):
    index = tmp_path / "index"
    write_run(tmp_path, index, "alive")
    dead = subprocess.Popen(["true"])
    dead.wait()
    write_run(tmp_path, index, "gone", wrapper_pid=dead.pid)
    runs = {r["name"]: r["state"] for r in st.list_runs(str(index))}
    assert runs == {"alive": "running", "gone": "lost"}


def test_list_runs_does_not_follow_symlinks(tmp_path):
    index = tmp_path / "index"
    index.mkdir()
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(run_status(name="secret")))
    (tmp_path / "link.status.json").symlink_to(secret)
    (index / "x.json").write_text(json.dumps({"status": str(tmp_path / "link.status.json")}))
    assert st.list_runs(str(index)) == []


def test_jobs_command_lists_a_real_running_wrapper(tmp_path, capsys):
    from gcm_checks.cli import main

    index = tmp_path / "index"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PYTHONPATH=str(REPO), GCM_RUN_INDEX=str(index))
    log = tmp_path / "train.log"
    code = "import time\nprint('step 25/100 loss=0.75', flush=True)\ntime.sleep(60)"
    p = subprocess.Popen([sys.executable, "-m", "gcm_checks.gcm_run_cli", "--log", str(log), "--name", "resnet",
                          "--", sys.executable, "-c", code], cwd=tmp_path, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        runs = []
        while time.monotonic() < deadline:
            assert main(["jobs", "--json", "--index", str(index)]) == 0
            runs = json.loads(capsys.readouterr().out)["runs"]
            if runs and (runs[0].get("progress") or {}).get("step") == 25:
                break
            time.sleep(0.1)
        assert [r["name"] for r in runs] == ["resnet"]
        assert runs[0]["progress"]["loss"] == 0.75
        assert main(["jobs", "--index", str(index)]) == 0
        table = capsys.readouterr().out
        assert "resnet" in table and "25/100" in table and "25.0%" in table
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
    assert main(["jobs", "--index", str(index)]) == 0
    assert "no running gcm-run jobs" in capsys.readouterr().out
    # A finished run is still readable by path, with its exit.
    assert main(["jobs", "--all", "--json", str(tmp_path)]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert runs[0]["state"] == "exited" and runs[0]["exit"]["signal"] == "SIGTERM"


def test_render_shows_a_loss_sparkline_a_stalled_eta_and_slow_nodes():
    hist = {"loss": [[float(i), i, 2.0 / (i + 1)] for i in range(40)]}
    r = run_status(progress={"step": 40, "total": 100, "percent": 40.0, "eta_s": None, "stalled_s": 720, "loss": 0.05,
                             "history": hist},
                   stragglers=[{"node": "gpu-n2", "task": "3", "ratio": 0.77}])
    lines = jobs.render([r], now=time.time())
    assert "LOSS CURVE" in lines[0] and "SLOW" in lines[0]
    row = lines[1]
    assert "stalled 12m" in row and "gpu-n2 -23%" in row
    spark = [w for w in row.split() if set(w) <= set("▁▂▃▄▅▆▇█") and len(w) > 4]
    assert spark and spark[0][0] == "█" and spark[0][-1] == "▁"  # a falling loss


def test_jobs_reads_a_live_wrapper_with_history(tmp_path):
    code = "import time\nfor i in range(1, 30):\n    print(f'step {i}/100 loss={1/i:.3f} lr=0.1', flush=True); time.sleep(0.05)\ntime.sleep(30)"
    env = dict(os.environ, PYTHONPATH=str(REPO), GCM_RUN_INDEX=str(tmp_path / "idx"), GCM_RUN_STATUS_INTERVAL="0.1",
               GCM_RUN_TICK="0.1")
    env.pop("SLURM_JOB_ID", None)
    p = subprocess.Popen([sys.executable, "-m", "gcm_checks.gcm_run_cli", "--log", str(tmp_path / "r.log"), "--notify", "never",
                          "--", sys.executable, "-c", code], env=env, cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        runs = []
        while time.monotonic() < deadline:
            runs = st.list_runs(str(tmp_path / "idx"))
            if runs and (runs[0].get("progress") or {}).get("step") == 29:
                break
            time.sleep(0.2)
        prog = runs[0]["progress"]
        assert len(prog["history"]["loss"]) >= 2 and prog["metrics"]["learning_rate"] == 0.1
        row = jobs.render(runs, now=time.time())[1]
        assert "29/100" in row and any(ch in row for ch in "▁▂▃▄▅▆▇█")
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
