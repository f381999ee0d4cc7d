"""gcm-run's notifications on the path production uses (``wrapper.notice.deliver``,
called by ``wrapper.finish.default_notifier``) against a real HTTP server.

(These tests used to call ``notify.notify_run``, a second implementation that
only tests called; it is gone.)"""

from __future__ import annotations

import pytest

from gcm_checks import testing
from gcm_checks.notify import Outbox
from gcm_checks.wrapper import finish, notice
from http_receiver import WebhookReceiver  # the real HTTP server (tests/http_receiver.py)


@pytest.fixture
def hook():
    with WebhookReceiver() as h:
        yield h


STATUS = {
    "run_id": "r-1", "name": "train", "user": "alice", "argv": ["python", "train.py"], "host": "node7",
    "exit": {"code": 3, "signal_number": None}, "log": "/scratch/alice/run.log", "cwd": "/scratch/alice",
    "progress": {"step": 40, "total": 100, "loss": 2.31},
}


def settings(tmp_path, hook, outbox=None):
    return testing.settings({
        "report": {"outbox_dir": outbox or str(tmp_path / "outbox"), "report_dir": str(tmp_path / "reports")},
        "notify": {"channels": [
            {"name": "user-hook", "type": "webhook", "url": hook.url + "/u", "timeout_s": 5},
            {"name": "ops", "type": "slack", "url": hook.url + "/ops", "when": "always", "timeout_s": 5},
        ]},
    })


def test_run_report_delivered_once_and_not_to_admin_channels(tmp_path, hook):
    s = settings(tmp_path, hook)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}  # outside Slurm: gcm-run mails its own exit
    job = notice.job_for_run(STATUS, env)
    report = notice.exit_report(STATUS, None, env, s)
    out = notice.deliver("exit", "", job, report=report, settings=s, env=env)
    assert out["sent"] is True and out["skipped"] == {"ops": "admin channel"}
    [req] = hook.requests
    assert req["path"] == "/u"
    assert req["body"]["event"] == "job_report"  # the job report's own form, not a status dump
    assert req["body"]["report"]["progress"]["step"] == 40
    assert req["headers"]["idempotency-key"] == "cluster/r-1/user-hook"
    again = notice.deliver("exit", "", job, report=report, settings=s, env=env)
    assert again["delivered"] == [] and len(hook.requests) == 1  # exactly once


def test_one_alert_per_stall_episode(tmp_path, hook):
    s = settings(tmp_path, hook)
    env = {"SLURM_JOB_ID": "900", "SLURM_RESTART_COUNT": "1", "SLURM_CLUSTER_NAME": "c1", "SLURM_JOB_USER": "alice",
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    job = finish.alert_job(STATUS, env)
    alert = {"kind": "stalled", "message": "no progress for 30 min"}
    # The same episode noticed twice (a retry) is one message; a second
    # episode after the run resumed is another.
    for event in ("stall-1", "stall-1", "stall-2"):
        notice.deliver("stalled", event, job, words=notice.alert_text(STATUS, alert), settings=s, env=env)
    assert [r["headers"]["idempotency-key"] for r in hook.requests] == ["c1/900.1/user-hook/stall-1",
                                                                        "c1/900.1/user-hook/stall-2"]
    assert hook.requests[0]["body"]["event"] == "gcm_run_stalled"


def test_stall_mail_is_words_not_json():
    words = notice.alert_text({**STATUS, "slurm": {"job_id": "900"}},
                              {"kind": "stalled", "message": "no progress for 30 min at step 40"})
    assert words["subject"] == "[gcm-run] job 900 (train) stalled"
    assert "no progress for 30 min at step 40" in words["text"] and "40" in words["text"]
    assert "{" not in words["text"] and '"' not in words["text"]


def test_unwritable_system_outbox_falls_back_to_user_cache(tmp_path, hook):
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    hook.status = 503
    s = settings(tmp_path, hook, outbox=str(blocker / "outbox"))
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    job = notice.job_for_run(STATUS, env)
    out = notice.deliver("exit", "", job, report=notice.exit_report(STATUS, None, env, s), settings=s, env=env)
    assert out["sent"] is False and out["failed"]
    assert out["outbox"] == str(tmp_path / "cache" / "gcm-checks" / "outbox")
    assert Outbox(out["outbox"]).counts()["pending"] == 1  # kept for a later flush


def test_run_job_key_reads_the_restart_count_a_job_task_sees():
    from gcm_checks.notify import run_job_key

    # Inside the job Slurm sets SLURM_RESTART_COUNT; the epilog SLURM_JOB_RESTART_COUNT.
    assert run_job_key({"SLURM_JOB_ID": "9", "SLURM_RESTART_COUNT": "1"}) == "9.1"
    assert run_job_key({"SLURM_JOB_ID": "9", "SLURM_JOB_RESTART_COUNT": "2"}) == "9.2"
    assert run_job_key({"SLURM_JOB_ID": "9"}) == "9"
