"""gcm-run stall/silence/divergence judgement, durations, and the job comment."""

from __future__ import annotations

import threading
import time

import pytest

from gcm_checks.wrapper import comment as cm
from gcm_checks.wrapper.progress import ProgressEvent, Snapshot, Tracker
from gcm_checks.wrapper.watch import Watchdog, fmt_duration, parse_duration

WALL0 = time.mktime((2026, 11, 27, 23, 2, 0, 0, 0, -1))  # Friday 23:02, local time


def tracker_at(step, total, mono=0.0, loss=None):
    tr = Tracker()
    tr.observe(ProgressEvent("step", step=step, total=total, loss=loss), mono=mono, wall=WALL0 + mono)
    return tr


def test_stall_fires_once_with_time_and_step_then_resumes():
    tr = tracker_at(4000, 10000)
    wd = Watchdog(stall_after=60, silent_after=None, start_mono=0.0)
    assert wd.check(tr.snap, 59.0, WALL0 + 59) == []
    alerts = wd.check(tr.snap, 61.0, WALL0 + 61)
    assert [a.kind for a in alerts] == ["stalled"]
    assert "stalled since 23:02 at step 4,000/10,000" in alerts[0].message
    assert wd.check(tr.snap, 120.0, WALL0 + 120) == []  # once per episode
    tr.observe(ProgressEvent("step", step=4001, total=10000), mono=130.0, wall=WALL0 + 130)
    assert [a.kind for a in wd.check(tr.snap, 131.0, WALL0 + 131)] == ["resumed"]
    assert [a.kind for a in wd.check(tr.snap, 200.0, WALL0 + 200)] == ["stalled"]


def test_stall_is_not_armed_before_any_progress():
    wd = Watchdog(stall_after=1, silent_after=None, start_mono=0.0)
    assert wd.check(Snapshot(), 1000.0, WALL0) == []


def test_silence_is_armed_from_the_start_and_separate_from_stall():
    wd = Watchdog(stall_after=None, silent_after=10, start_mono=0.0)
    alerts = wd.check(Snapshot(), 11.0, WALL0 + 11)
    assert [a.kind for a in alerts] == ["silent"]
    tr = Tracker()
    tr.output_seen(20.0)
    assert wd.check(tr.snap, 21.0, WALL0 + 21) == []
    assert not wd.silent


@pytest.mark.parametrize("loss", [float("nan"), float("inf"), float("-inf")])
def test_bad_loss_fires_diverged_once(loss):
    tr = tracker_at(20, 100, loss=loss)
    wd = Watchdog(None, None, 0.0)
    alerts = wd.check(tr.snap, 1.0, WALL0 + 1)
    assert [a.kind for a in alerts] == ["diverged"]
    assert "at step 20/100" in alerts[0].message
    assert wd.check(tr.snap, 2.0, WALL0 + 2) == []


@pytest.mark.parametrize("text,seconds", [
    ("90", 90), ("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400), ("1d", 86400), ("0.5s", 0.5), ("250ms", 0.25),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "soon", "5x", "m5", "1h 2q"])
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("seconds,text", [(45, "45s"), (420, "7m"), (7980, "2h13m"), (273600, "3d4h"), (None, "?")])
def test_fmt_duration(seconds, text):
    assert fmt_duration(seconds) == text


# ---------------------------------------------------------------- comment text


def test_comment_matches_the_issue_example():
    tr = Tracker()
    tr.observe(ProgressEvent("step", step=3000, total=10000), mono=0.0, wall=0.0)
    tr.observe(ProgressEvent("step", step=4000, total=10000, loss=0.53), mono=1000.0, wall=1000.0)
    # 1 s/step, 6000 steps left = 1h40m
    assert cm.format_comment(tr.snap) == "gcm: 40% step 4000/10000 eta 1h40m loss 0.53"


def test_comment_states():
    tr = tracker_at(10, 10, loss=float("nan"))
    assert cm.format_comment(tr.snap, alert="nan loss") == "gcm: NAN LOSS 99% step 10/10 loss nan"
    assert cm.format_comment(tr.snap, state="exit 1") == "gcm: exit 1 100% step 10/10 loss nan"
    assert cm.format_comment(Snapshot()) == "gcm: running, no progress seen yet"


@pytest.mark.parametrize("raw,clean", [
    ("gcm: ok\x1b[31mred\x07", "gcm: okred"),  # the whole escape goes (gcm_checks.text rule 1)
    ("a\nb\tc\r d", "a b c d"),
    ("ümlaut 50%", "?mlaut 50%"),
    ("x" * 500, "x" * (cm.MAX_LEN - 3) + "..."),
])
def test_sanitize(raw, clean):
    assert cm.sanitize(raw) == clean


@pytest.mark.parametrize("env,ok", [
    ({}, False),
    ({"SLURM_JOB_ID": "7"}, True),
    ({"SLURM_JOB_ID": "7", "SLURM_PROCID": "0"}, True),
    ({"SLURM_JOB_ID": "7", "SLURM_PROCID": "3"}, False),
    ({"SLURM_JOB_ID": "7", "SLURM_JOB_COMMENT": "my own words"}, False),
    ({"SLURM_JOB_ID": "7", "SLURM_JOB_COMMENT": "gcm: 10% step 1/10"}, True),
])
def test_should_comment(env, ok):
    assert cm.should_comment(env)[0] is ok


def test_interval_from_env():
    assert cm.interval_from_env({cm.ENV_INTERVAL: "2"}) == 2.0
    assert cm.interval_from_env({cm.ENV_INTERVAL: "bogus"}) == cm.DEFAULT_INTERVAL_S
    assert cm.interval_from_env({}) == cm.DEFAULT_INTERVAL_S


# ---------------------------------------------------------------- comment poster


class Recorder:
    def __init__(self, fail=False):
        self.sent = []
        self.fail = fail
        self.event = threading.Event()

    def __call__(self, job_id, text):
        self.event.set()
        if self.fail:
            raise RuntimeError("slurmctld down")
        self.sent.append((job_id, text))


def wait_for(pred, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.01)
    return pred()


def test_poster_rate_limits_and_final_bypasses_it():
    rec = Recorder()
    p = cm.CommentPoster("42", rec, interval_s=3600)
    p.offer("gcm: 1%")
    assert wait_for(lambda: len(rec.sent) == 1)
    for i in range(2, 50):
        p.offer(f"gcm: {i}%")
    time.sleep(0.1)
    assert rec.sent == [("42", "gcm: 1%")]  # the rest waits for the interval
    p.final("gcm: done 100%")
    assert rec.sent[-1] == ("42", "gcm: done 100%")
    assert len(rec.sent) == 2


def test_poster_with_zero_interval_sends_latest():
    rec = Recorder()
    p = cm.CommentPoster("42", rec, interval_s=0)
    p.offer("gcm: a")
    assert wait_for(lambda: rec.sent[-1:] == [("42", "gcm: a")])
    p.offer("gcm: b")
    assert wait_for(lambda: rec.sent[-1:] == [("42", "gcm: b")])
    p.final("gcm: done")


def test_poster_survives_a_failing_backend():
    rec = Recorder(fail=True)
    p = cm.CommentPoster("42", rec, interval_s=0)
    p.offer("gcm: 5%")
    assert wait_for(lambda: p.last_error is not None)
    assert "slurmctld down" in p.last_error
    p.final("gcm: done")  # must not raise


def test_slurm_sender_refuses_when_there_is_no_scontrol(monkeypatch):
    from gcm_checks import slurm

    monkeypatch.setattr(slurm.ScontrolBackend, "__init__", lambda self, *a, **k: setattr(self, "scontrol", None))
    with pytest.raises(RuntimeError, match="no scontrol"):
        cm.slurm_sender()


def test_slurm_sender_uses_the_slurm_module(monkeypatch):
    from gcm_checks import slurm

    calls = []

    class Fake:
        def set_job_comment(self, job_id, comment):
            calls.append((job_id, comment))

    monkeypatch.setattr(slurm, "backend_from_settings", lambda settings=None, dry_run=False, **kw: Fake())
    cm.slurm_sender()("9", "gcm: 5%")
    assert calls == [("9", "gcm: 5%")]
