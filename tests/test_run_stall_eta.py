"""Stall rules on the step rate (with or without a total), an ETA that ages,
and a comment that says "STALLED 12m" instead of a frozen ETA."""

from __future__ import annotations

import pytest

from gcm_checks.wrapper.comment import format_comment, straggler_text
from gcm_checks.wrapper.progress import Tracker, parse_line
from gcm_checks.wrapper.watch import AUTO_MIN_S, AUTO_STEP_FACTOR, Watchdog


def feed(tr, line, t):
    tr.output_seen(t)
    tr.observe(parse_line(line), t, 1000.0 + t)


@pytest.mark.parametrize("fmt", ["step {n}", "[Rank 0] step={n}, skipped=0, lr=[1e-4]", "step: {n}  loss:  2.0"])
def test_heartbeats_without_a_total_still_stall(fmt):
    tr, wd = Tracker(), Watchdog(60.0, None, 0.0)
    for n in range(1, 6):
        feed(tr, fmt.format(n=n), float(n))
    # The job hangs, but keeps printing the same step (a heartbeat thread).
    for t in range(6, 200, 5):
        feed(tr, fmt.format(n=5), float(t))
        alerts = wd.check(tr.snap, float(t), 1000.0 + t)
        if alerts:
            break
    assert [a.kind for a in alerts] == ["stalled"]
    assert "still prints output" in alerts[0].message and "no step for" in alerts[0].message
    assert t < 100


def test_automatic_stall_limit_comes_from_the_step_rate():
    tr, wd = Tracker(), Watchdog(None, None, 0.0, auto=True)
    feed(tr, "step 1", 100.0)
    assert wd.stall_limit(tr.snap) is None  # not armed before the counter has moved a few times
    for n in range(2, 10):
        feed(tr, f"step {n}", n * 100.0)  # 100 s per step
    assert wd.stall_limit(tr.snap) == pytest.approx(max(AUTO_MIN_S, AUTO_STEP_FACTOR * 100.0))
    assert wd.check(tr.snap, 900.0 + 1000, 0) == []
    assert [a.kind for a in wd.check(tr.snap, 900.0 + AUTO_STEP_FACTOR * 100.0 + 1, 0)] == ["stalled"]
    assert Watchdog(None, None, 0.0, auto=False).stall_limit(tr.snap) is None


def test_eta_ages_while_nothing_moves_and_the_comment_says_stalled():
    tr = Tracker()
    for n in range(0, 11):
        feed(tr, f"step {n}/100", float(n))  # 1 step/s: 90 s left at t=10
    assert tr.snap.to_dict(mono=10.0)["eta_s"] == pytest.approx(90.0)
    assert tr.snap.to_dict(mono=40.0)["eta_s"] == pytest.approx(60.0)  # aged, not frozen
    text = format_comment(tr.snap, now_mono=10.0 + 12 * 60, stalled=True)
    assert "STALLED 12m" in text and "eta" not in text
    assert "eta 1m30s" in format_comment(tr.snap, now_mono=10.0)


def test_comment_names_slow_nodes():
    slow = [{"node": "gpu-n2", "task": "1", "ratio": 0.77}, {"node": "gpu-n9", "task": "4", "ratio": 0.6}]
    assert straggler_text(slow) == "slow: gpu-n9 -40%, gpu-n2 -23%"
    tr = Tracker()
    feed(tr, "step 4/10", 1.0)
    assert format_comment(tr.snap, stragglers=slow[:1]).endswith("slow: gpu-n2 -23%")
