"""gcm-run's notification hook (notify.notify_run) against a real HTTP server."""

from __future__ import annotations

import pytest

from gcm_checks import notify, testing
from test_notify_delivery import Hook  # noqa: F401 - the real HTTP server


@pytest.fixture
def hook():
    h = Hook()
    yield h
    h.close()


PAYLOAD = {
    "kind": "gcm-run-report", "run_id": "r-1", "name": "train", "user": "alice",
    "slurm": {"job_id": "900", "step_id": "0"}, "exit": {"code": 3, "signal": None},
    "summary": "train: exit 3 at step 40/100: <!here> loss diverged\n\x1b[31m",
}


def settings(tmp_path, hook, outbox=None):
    return testing.settings({
        "report": {"outbox_dir": outbox or str(tmp_path / "outbox")},
        "notify": {"channels": [
            {"name": "user-hook", "type": "webhook", "url": hook.url + "/u", "timeout_s": 5},
            {"name": "ops", "type": "slack", "url": hook.url + "/ops", "when": "always", "timeout_s": 5},
        ]},
    })


def test_run_report_delivered_once_and_not_to_admin_channels(tmp_path, hook):
    s = settings(tmp_path, hook)
    env = {"SLURM_CLUSTER_NAME": "c1", "SLURM_JOB_USER": "alice"}
    payload = dict(PAYLOAD, slurm={})  # gcm-run outside Slurm mails its own exit
    out = notify.notify_run(payload, kind="exit", settings=s, env=env)
    assert out["sent"] is True and out["skipped"] == {"ops": "admin channel"}
    [req] = hook.requests
    assert req["path"] == "/u"
    assert req["body"]["event"] == "gcm_run_exit"
    assert req["body"]["summary"] == "train: exit 3 at step 40/100: <!here> loss diverged"
    assert req["headers"]["Idempotency-Key"].startswith("c1/nojob/user-hook/run-exit-")
    again = notify.notify_run(payload, kind="exit", settings=s, env=env)
    assert again["delivered"] == [] and len(hook.requests) == 1  # exactly once


def test_inside_a_slurm_job_the_exit_goes_in_the_job_report_not_a_mail(tmp_path, hook):
    s = settings(tmp_path, hook)
    env = {"SLURM_JOB_ID": "900", "SLURM_JOB_RESTART_COUNT": "1", "SLURM_JOB_WORK_DIR": "/scratch/alice"}
    out = notify.notify_run(PAYLOAD, kind="exit", settings=s, env=env)
    assert out["sent"] is False and "job's report" in out["why"]
    assert out["report_hook"] == "/scratch/alice/.gcm-run/900.1.status.json"
    assert hook.requests == []


def test_one_alert_per_stall_episode(tmp_path, hook):
    s = settings(tmp_path, hook)
    # The same episode noticed twice (two ranks, a retry) is one message;
    # a second episode after the run resumed is another.
    for at in (1.0, 1.0, 2.0):
        notify.notify_run({**PAYLOAD, "alert": {"kind": "stalled", "at": at, "message": "no progress for 30 min"}},
                          kind="stall", settings=s, env={"SLURM_CLUSTER_NAME": "c1"})
    assert [r["body"]["event"] for r in hook.requests] == ["gcm_run_alert", "gcm_run_alert"]
    assert hook.requests[0]["headers"]["Idempotency-Key"].startswith("c1/900/user-hook/stall-")


def test_stall_mail_is_words_not_json():
    from gcm_checks.notify.config import Channel
    from gcm_checks.notify.runs import render_run

    ch = Channel(name="email", type="smtp")
    p = render_run(ch, {**PAYLOAD, "alert": {"kind": "stalled", "message": "no progress for 30 min at step 40"},
                        "progress": {"step": 40, "total": 100, "loss": 2.31}}, "stall", ["a@b.example"])
    assert "no progress for 30 min at step 40" in p["text"] and "Last step: 40 of 100" in p["text"]
    assert "{" not in p["text"] and '"' not in p["text"]
    assert '<meta charset="utf-8">' in p["html"]


def test_unwritable_system_outbox_falls_back_to_user_cache(tmp_path, hook):
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    hook.status = 503
    s = settings(tmp_path, hook, outbox=str(blocker / "outbox"))
    out = notify.notify_run(dict(PAYLOAD, slurm={}), settings=s, env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert out["sent"] is False and out["failed"]
    assert out["outbox"] == str(tmp_path / "cache" / "gcm-checks" / "outbox")
    assert notify.Outbox(out["outbox"]).counts()["pending"] == 1  # kept for a later flush


def test_run_job_key_reads_the_restart_count_a_job_task_sees():
    from gcm_checks.notify import run_job_key

    # Inside the job Slurm sets SLURM_RESTART_COUNT; the epilog SLURM_JOB_RESTART_COUNT.
    assert run_job_key({"SLURM_JOB_ID": "9", "SLURM_RESTART_COUNT": "1"}) == "9.1"
    assert run_job_key({"SLURM_JOB_ID": "9", "SLURM_JOB_RESTART_COUNT": "2"}) == "9.2"
    assert run_job_key({"SLURM_JOB_ID": "9"}) == "9"
