"""gcm-run side channels: job comment and notification are isolated from the
exit status, and the report is on disk before any notification.

The wrapper runs in-process here (real child processes still) so the Slurm
comment backend and the notifier can be replaced at their boundary.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from gcm_checks.wrapper import finish
from gcm_checks.wrapper.launcher import RunOptions, run_wrapped

PY = sys.executable


@pytest.fixture
def devnull():
    fd = os.open(os.devnull, os.O_WRONLY)
    yield fd
    os.close(fd)


def options(tmp_path: Path, devnull: int, cmd, **kw) -> RunOptions:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(kw.pop("env", {}))
    return RunOptions(argv=cmd, log_path=str(tmp_path / "run.log"), out_fd=devnull, err_fd=devnull, env=env,
                      index_dir=str(tmp_path / "index"), pty="never", tick_s=0.05, status_interval_s=0.05,
                      work_dir=str(tmp_path), **kw)


def report(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "run.log.report.json").read_text())


STEPS = [PY, "-c", "import time\nfor i in range(1, 11):\n print(f'step {i}/10 loss=0.{i}', flush=True); time.sleep(0.03)"]


class Comments:
    def __init__(self, fail: bool = False, hang: bool = False):
        self.sent = []
        self.fail = fail
        self.hang = hang

    def __call__(self, job_id: str, text: str) -> None:
        if self.hang:
            time.sleep(3600)
        if self.fail:
            raise RuntimeError("slurm_update error: Invalid job id specified")
        self.sent.append((job_id, text))


def test_job_comment_shows_progress_and_final_state(tmp_path, devnull):
    rec = Comments()
    code = run_wrapped(options(tmp_path, devnull, STEPS, env={"SLURM_JOB_ID": "77"}, comment_sender=rec,
                               comment_interval_s=0.0))
    assert code == 0
    assert rec.sent, "no comment was set"
    assert all(job == "77" and text.startswith("gcm:") for job, text in rec.sent)
    assert rec.sent[-1] == ("77", "gcm: done 100% step 10/10 loss 0.1")
    assert report(tmp_path)["comment"]["enabled"] is True


def test_job_comment_is_rate_limited(tmp_path, devnull):
    rec = Comments()
    run_wrapped(options(tmp_path, devnull, STEPS, env={"SLURM_JOB_ID": "77"}, comment_sender=rec,
                        comment_interval_s=3600.0))
    # One update while running (the first), one final at exit: not one per tick.
    assert len(rec.sent) <= 2
    assert rec.sent[-1][1].startswith("gcm: done")


@pytest.mark.parametrize("env,why", [
    ({}, "not under Slurm"),
    ({"SLURM_JOB_ID": "77", "SLURM_PROCID": "1"}, "task 1"),
    ({"SLURM_JOB_ID": "77", "SLURM_JOB_COMMENT": "mine"}, "own comment"),
])
def test_no_comment_when_not_ours_to_write(tmp_path, devnull, env, why):
    rec = Comments()
    run_wrapped(options(tmp_path, devnull, STEPS, env=env, comment_sender=rec, comment_interval_s=0.0))
    assert rec.sent == []
    assert why in report(tmp_path)["comment"]["why_not"]


@pytest.mark.parametrize("sender", [Comments(fail=True), Comments(hang=True)])
def test_failing_or_hanging_slurm_never_changes_the_exit_status(tmp_path, devnull, sender, monkeypatch):
    from gcm_checks.wrapper import comment as cm

    orig = cm.CommentPoster.final
    monkeypatch.setattr(cm.CommentPoster, "final", lambda self, text, timeout=10.0: orig(self, text, timeout=0.3))
    cmd = [PY, "-c", "print('step 1/2', flush=True); raise SystemExit(4)"]
    code = run_wrapped(options(tmp_path, devnull, cmd, env={"SLURM_JOB_ID": "77"}, comment_sender=sender,
                               comment_interval_s=0.0))
    assert code == 4
    assert report(tmp_path)["exit"]["code"] == 4


class Notifier:
    def __init__(self, tmp_path: Path, behaviour: str = "ok"):
        self.calls = []
        self.report_on_disk = []
        self.tmp_path = tmp_path
        self.behaviour = behaviour

    def __call__(self, payload: dict, kind: str) -> dict:
        self.calls.append((kind, payload))
        self.report_on_disk.append((self.tmp_path / "run.log.report.json").exists())
        if self.behaviour == "raise":
            raise ConnectionRefusedError("smtp down")
        if self.behaviour == "hang":
            time.sleep(3600)
        return {"sent": True}


@pytest.mark.parametrize("policy,exit_code,called", [
    ("on_failure", 0, False),
    ("on_failure", 3, True),
    ("always", 0, True),
    ("never", 3, False),
])
def test_notify_policy_on_exit(tmp_path, devnull, policy, exit_code, called):
    n = Notifier(tmp_path)
    cmd = [PY, "-c", f"print('step 5/10 loss=0.5'); raise SystemExit({exit_code})"]
    code = run_wrapped(options(tmp_path, devnull, cmd, notify_policy=policy, notifier=n))
    assert code == exit_code
    exits = [c for c in n.calls if c[0] == "exit"]
    assert bool(exits) is called
    if called:
        kind, payload = exits[0]
        assert payload["exit"]["code"] == exit_code
        assert payload["summary"].startswith("python")
        assert "classification" in payload
        assert n.report_on_disk == [True]  # report written before notifying (rule 6)
        assert report(tmp_path)["notifications"][0]["ok"] is True


def test_finish_runs_from_a_run_view_without_a_wrapper(tmp_path):
    """finish needs only a RunView: built here from plain values, it writes
    the exit report, notifies the failure after the report is on disk, and
    records the outcome in both the report and the status file."""
    from gcm_checks.wrapper.options import RunState

    n = Notifier(tmp_path)
    opts = RunOptions(argv=["train.py"], log_path=str(tmp_path / "run.log"), notifier=n)
    (tmp_path / "run.log").write_text("step 3/10\nValueError: bad shape\n")
    state = RunState(run_id="r1", opts=opts, started_wall=time.time(), started_mono=time.monotonic(),
                     exit_code=3, log_lines=2)
    statuses = []
    view = finish.RunView(opts=opts, env={}, state=state, write_status=statuses.append,
                          status_dict=lambda s: {"state": s, "name": "train", "exit": {"code": state.exit_code}})
    finish.finish_run(view)
    rep = report(tmp_path)
    assert rep["kind"] == "gcm-run-report" and rep["state"] == "exited" and rep["exit"]["code"] == 3
    assert rep["summary"].startswith("train: exit 3")
    assert [k for k, _ in n.calls] == ["exit"] and n.report_on_disk == [True]
    assert rep["notifications"] == state.notifications and state.notifications[0]["ok"] is True
    assert statuses == ["exited", "exited"]  # final state, then again with the notification's outcome


@pytest.mark.parametrize("behaviour", ["raise", "hang"])
def test_failing_notifier_never_changes_the_exit_status(tmp_path, devnull, behaviour, monkeypatch):
    monkeypatch.setattr(finish, "NOTIFY_TIMEOUT_S", 0.3)
    n = Notifier(tmp_path, behaviour)
    code = run_wrapped(options(tmp_path, devnull, [PY, "-c", "raise SystemExit(9)"], notifier=n))
    assert code == 9
    rep = report(tmp_path)
    assert rep["notifications"][0]["ok"] is False
    assert rep["exit"]["code"] == 9


def test_stall_is_notified_while_running(tmp_path, devnull):
    n = Notifier(tmp_path)
    cmd = [PY, "-c", "import time\nprint('step 4000/10000', flush=True)\ntime.sleep(1.0)\nprint('step 4001/10000')"]
    code = run_wrapped(options(tmp_path, devnull, cmd, notifier=n, stall_after_s=0.3))
    assert code == 0
    stalls = [p for k, p in n.calls if k == "stalled"]
    assert stalls and "stalled since" in stalls[0]["alert"]["message"]
    assert stalls[0]["state"] == "running"
    assert "step 4,000/10,000" in stalls[0]["summary"]


def test_classification_hook_runs_on_the_log_tail(tmp_path, devnull, monkeypatch):
    seen = {}

    def fake_classify_run(log_path, exit_code, sig, **kw):
        seen["tail"] = Path(log_path).read_text()
        seen["exit"] = (exit_code, sig)
        return {"available": True, "category": "user_code", "sentence": "Your code raised ValueError."}

    monkeypatch.setattr(finish, "classify_run", fake_classify_run)
    cmd = [PY, "-c", "raise ValueError('bad shape')"]
    code = run_wrapped(options(tmp_path, devnull, cmd, notify_policy="never"))
    assert code == 1
    assert "ValueError: bad shape" in seen["tail"]
    assert seen["exit"] == (1, None)
    rep = report(tmp_path)
    assert rep["classification"]["category"] == "user_code"
    assert rep["summary"].endswith("Your code raised ValueError.")


def test_real_classifier_if_present(tmp_path, devnull):
    pytest.importorskip("gcm_checks.classify")
    from gcm_checks import classify

    if not hasattr(classify, "classify"):
        pytest.skip("gcm_checks.classify.classify not there yet")
    cmd = [PY, "-c", "import sys; print('RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB', file=sys.stderr); raise SystemExit(1)"]
    run_wrapped(options(tmp_path, devnull, cmd, notify_policy="never"))
    c = report(tmp_path)["classification"]
    assert c["available"] is True, c
    assert c["category"] in classify.CATEGORY_IDS
    assert "memory" in c["sentence"]


def test_only_task_0_of_a_step_notifies(tmp_path, devnull):
    n = Notifier(tmp_path)
    cmd = [PY, "-c", "raise SystemExit(3)"]
    code = run_wrapped(options(tmp_path, devnull, cmd, notifier=n, comment="off",
                               env={"SLURM_JOB_ID": "5", "SLURM_PROCID": "7"}))
    assert code == 3
    assert n.calls == []
    assert "only task 0" in report_after_exit(tmp_path)["notifications"][0]["skipped"]


def report_after_exit(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "run.log.status.json").read_text())
