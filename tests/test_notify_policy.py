"""Who is told when: policy tables, job opt-in/out syntax, recipients, outbox."""

from __future__ import annotations

import json
import os

import pytest

from gcm_checks import testing
from gcm_checks.config import ConfigError
from gcm_checks.notify.outbox import Outbox, backoff_s, file_name
from gcm_checks.notify.policy import job_choice, recipients, resolve_policy, should_send
from gcm_checks.report.model import JobInfo


@pytest.mark.parametrize(
    "text,expected",
    [
        ("", None),
        ("gcm:notify=always", "always"),
        ("nightly run gcm:notify=never", "never"),
        ("x,gcm:notify=on-failure;y", "on_failure"),
        ("GCM:NOTIFY=Off", "never"),
        ("gcm:notify=always gcm:notify=never", "never"),  # last wins
        ("gcm:notify=sometimes", None),
        ("xgcm:notify=always", None),  # must be its own token
        ("progress 40%", None),
    ],
)
def test_job_choice(text, expected):
    assert job_choice(text) == expected


POLICY = {
    "policy": {
        "default": "on_failure",
        "clusters": {"c2": "never"},
        "partitions": {"debug": "never", "prod": "always"},
        "users": {"bob": "always"},
    }
}


@pytest.mark.parametrize(
    "job_kw,cfg_extra,expected",
    [
        ({}, {}, "on_failure"),
        ({"cluster": "c2"}, {}, "never"),
        ({"partition": "debug"}, {}, "never"),
        ({"partition": "debug", "user": "bob"}, {}, "always"),  # user beats partition
        ({"partition": "prod", "comment": "gcm:notify=never"}, {}, "never"),  # job beats all
        ({"comment": "gcm:notify=never", "extra": "gcm:notify=always"}, {}, "always"),  # extra beats comment
        ({"comment": "gcm:notify=never"}, {"allow_job_override": False}, "on_failure"),
    ],
)
def test_resolve_policy(job_kw, cfg_extra, expected):
    cfg = json.loads(json.dumps(POLICY))
    cfg["policy"].update(cfg_extra)
    ns = testing.settings(notify=cfg).notify
    job = JobInfo("1", **{"user": "alice", "partition": "gpu", "cluster": "c1", **job_kw})
    assert resolve_policy(ns, job) == expected


@pytest.mark.parametrize(
    "policy,failed,send",
    [("always", False, True), ("always", True, True), ("on_failure", False, False), ("on_failure", True, True), ("never", True, False)],
)
def test_should_send(policy, failed, send):
    assert should_send(policy, failed) is send


EMAIL = {"email": {"addresses": {"alice": "a.smith@uni.example"}, "domain_template": "{user}@example.org"}}


@pytest.mark.parametrize(
    "user,mail_user,cfg,expected",
    [
        ("alice", "", EMAIL, ["a.smith@uni.example"]),
        ("carol", "", EMAIL, ["carol@example.org"]),
        ("carol", "c@lab.example", EMAIL, ["c@lab.example"]),
        ("carol", "carol", EMAIL, ["carol@example.org"]),  # --mail-user without a domain
        ("carol", "x@y.org\nBcc: all@y.org", EMAIL, ["carol@example.org"]),  # header injection refused
        ("carol", "a@y.org,b@y.org", EMAIL, ["carol@example.org"]),
        ("carol", "c@lab.example", {"email": {**EMAIL["email"], "use_mail_user": False}}, ["carol@example.org"]),
        ("dave", "", {}, []),
    ],
)
def test_recipients(user, mail_user, cfg, expected):
    ns = testing.settings(notify=cfg).notify
    assert recipients(ns, JobInfo("1", user=user, mail_user=mail_user)) == expected


@pytest.mark.parametrize(
    "cfg,error",
    [
        ({"policy": {"default": "sometimes"}}, "notify.policy.default"),
        ({"policy": {"users": {"bob": "sometimes"}}}, "notify.policy.users.bob"),
        ({"policy": {"defualt": "always"}}, "notify.policy.defualt"),
        ({"email": {"adresses": {}}}, "notify.email.adresses"),
        ({"handoff": "later"}, "notify.handoff"),
        ({"colour": "red"}, "notify.colour"),
    ],
)
def test_bad_notify_config_is_a_config_error_naming_the_key(cfg, error):
    with pytest.raises(ConfigError, match=error):
        testing.settings(notify=cfg)


@pytest.mark.parametrize(
    "channels,error",
    [
        ([{"name": "a", "type": "fax"}], "type"),
        ([{"type": "smtp"}], "required"),
        ([{"name": "a", "type": "smtp", "when": "maybe"}], "when"),
        ([{"name": "a", "type": "smtp", "colour": "red"}], "colour"),
    ],
)
def test_bad_channel_is_named_when_delivery_reads_the_channels(channels, error):
    s = testing.settings(notify={"channels": channels})  # loads: a bad channel never stops the checks
    with pytest.raises(ValueError, match=error):
        s.notify.channels


def test_channels_are_parsed_once_per_run():
    s = testing.settings(notify={"channels": [{"name": "m", "type": "smtp", "port": 587}]})
    assert s.notify.channels is s.notify.channels
    assert s.notify.channel("m").port == 587 and s.notify.channel("x") is None


@pytest.mark.parametrize("attempts,expected", [(1, 60), (2, 120), (3, 240), (7, 3600), (30, 3600)])
def test_backoff(attempts, expected):
    assert backoff_s(attempts, 60, 3600) == expected


def test_outbox_enqueue_is_idempotent_and_retries_with_backoff(tmp_path):
    box = Outbox(str(tmp_path))
    assert box.enqueue("c/1/mail", "mail", {"x": 1}, now=1000) is True
    assert box.enqueue("c/1/mail", "mail", {"x": 2}, now=1000) is False
    clock = [1000.0]
    calls = []

    def fail(item, left):
        calls.append(item["key"])
        raise RuntimeError("relay down")

    s = box.flush(fail, budget_s=5, now=lambda: clock[0])
    assert [f["key"] for f in s.failed] == ["c/1/mail"]
    item = next(box.items("pending"))
    assert (item["attempts"], item["next_attempt_at"], item["last_error"]) == (1, 1060.0, "relay down")
    clock[0] = 1030.0
    assert box.flush(fail, budget_s=5, now=lambda: clock[0]).skipped == ["c/1/mail"]  # not due yet
    assert len(calls) == 1
    clock[0] = 1061.0
    s = box.flush(lambda item, left: None, budget_s=5, now=lambda: clock[0])
    assert s.sent == ["c/1/mail"]
    assert box.counts() == {"pending": 0, "sent": 1, "dead": 0}
    assert box.enqueue("c/1/mail", "mail", {"x": 3}) is False  # sent blocks re-enqueue
    assert box.flush(lambda item, left: calls.append("again"), budget_s=5).sent == []


def test_outbox_gives_up_into_dead_and_retry_brings_back(tmp_path):
    box = Outbox(str(tmp_path))
    box.enqueue("k", "mail", {}, now=0)

    def fail(item, left):
        raise OSError("no route")

    s = box.flush(fail, budget_s=5, give_up_after_s=100, now=lambda: 200.0)
    assert s.dead == ["k"] and box.counts()["dead"] == 1
    assert box.retry_dead() == 1
    assert box.flush(lambda i, l: None, budget_s=5).sent == ["k"]


def test_outbox_locked_item_is_skipped(tmp_path):
    import fcntl

    box = Outbox(str(tmp_path))
    box.enqueue("k", "mail", {})
    path = os.path.join(str(tmp_path), "pending", file_name("k"))
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        s = box.flush(lambda i, l: pytest.fail("sent while locked"), budget_s=5)
        assert s.skipped == [file_name("k")]
    finally:
        os.close(fd)


def test_outbox_sent_record_wins_over_leftover_pending(tmp_path):
    # Crash between writing sent/ and unlinking pending/: never send again.
    box = Outbox(str(tmp_path))
    box.enqueue("k", "mail", {})
    os.makedirs(os.path.join(str(tmp_path), "sent"))
    with open(os.path.join(str(tmp_path), "sent", file_name("k")), "w") as f:
        json.dump({"key": "k"}, f)
    s = box.flush(lambda i, l: pytest.fail("sent twice"), budget_s=5)
    assert s.sent == [] and box.counts()["pending"] == 0


def test_prune_sent_forgets_only_old_records(tmp_path):
    box = Outbox(str(tmp_path))
    for k in ("old", "new"):
        box.enqueue(k, "mail", {})
    box.flush(lambda i, l: None, budget_s=5)
    old = os.path.join(str(tmp_path), "sent", file_name("old"))
    os.utime(old, (1000, 1000))
    assert box.prune_sent(86400) == 1
    assert [i["key"] for i in box.items("sent")] == ["new"]
