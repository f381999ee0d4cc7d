"""gcm-run's notification hook (notify.notify_run) against a real HTTP server."""

from __future__ import annotations

import pytest

from gcm_checks import notify
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
    return {
        "report": {"outbox_dir": outbox or str(tmp_path / "outbox")},
        "notify": {"channels": [
            {"name": "user-hook", "type": "webhook", "url": hook.url + "/u", "timeout_s": 5},
            {"name": "ops", "type": "slack", "url": hook.url + "/ops", "when": "always", "timeout_s": 5},
        ]},
    }


def test_run_report_delivered_once_and_not_to_admin_channels(tmp_path, hook):
    s = settings(tmp_path, hook)
    env = {"SLURM_CLUSTER_NAME": "c1", "SLURM_JOB_USER": "alice"}
    out = notify.notify_run(PAYLOAD, kind="exit", settings=s, env=env)
    assert out["sent"] is True and out["skipped"] == {"ops": "admin channel"}
    [req] = hook.requests
    assert req["path"] == "/u"
    assert req["body"]["event"] == "gcm_run_exit"
    assert req["body"]["summary"] == "train: exit 3 at step 40/100: <!here> loss diverged"
    assert req["headers"]["Idempotency-Key"].startswith("c1/900/run-exit-")
    again = notify.notify_run(PAYLOAD, kind="exit", settings=s, env=env)
    assert again["delivered"] == [] and len(hook.requests) == 1  # exactly once


def test_each_alert_is_its_own_message(tmp_path, hook):
    s = settings(tmp_path, hook)
    for at in (1.0, 2.0):
        notify.notify_run({**PAYLOAD, "alert": {"kind": "stall", "at": at}}, kind="stall", settings=s, env={})
    assert [r["body"]["event"] for r in hook.requests] == ["gcm_run_alert", "gcm_run_alert"]


def test_unwritable_system_outbox_falls_back_to_user_cache(tmp_path, hook):
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    hook.status = 503
    s = settings(tmp_path, hook, outbox=str(blocker / "outbox"))
    out = notify.notify_run(PAYLOAD, settings=s, env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert out["sent"] is False and out["failed"]
    assert out["outbox"] == str(tmp_path / "cache" / "gcm-checks" / "outbox")
    assert notify.Outbox(out["outbox"]).counts()["pending"] == 1  # kept for a later flush
