"""Metrics: per-class P/R/F1, macro-F1, confusion, exit-code baseline."""

from __future__ import annotations

import pytest

from gcm_checks.classify.evaluate import baseline, build_report, confusion, render, scores


def test_scores_by_hand() -> None:
    gold = ["a", "a", "b", "b", "c"]
    pred = ["a", "b", "b", "b", "a"]
    per, macro, acc = scores(gold, pred)
    by = {c.label: c for c in per}
    # a: tp1 fp1 fn1 -> p .5 r .5 f .5; b: tp2 fp1 fn0 -> p 2/3 r 1 f .8; c: tp0 -> 0
    assert by["a"].f1 == pytest.approx(0.5)
    assert by["b"].precision == pytest.approx(2 / 3) and by["b"].recall == 1.0
    assert by["b"].f1 == pytest.approx(0.8)
    assert by["c"].f1 == 0.0 and by["c"].support == 1
    assert macro == pytest.approx((0.5 + 0.8 + 0.0) / 3)
    assert acc == pytest.approx(3 / 5)


def test_a_class_only_ever_predicted_counts_against_macro_f1() -> None:
    _, macro, _ = scores(["a", "a"], ["a", "z"])
    assert macro == pytest.approx((2 / 3 + 0.0) / 2)


def test_confusion_counts_every_pair() -> None:
    m = confusion(["x", "x", "y"], ["x", "y", "y"])
    assert m == {"x": {"x": 1, "y": 1}, "y": {"x": 0, "y": 1}}


@pytest.mark.parametrize("state,exit_code,expected", [
    ("TIMEOUT", "0:0", "timeout_walltime"), ("OUT_OF_MEMORY", "0:125", "host_oom"),
    ("NODE_FAIL", None, "node_failure"), ("PREEMPTED", None, "preempted"),
    ("CANCELLED by 0", "0:15", "cancelled_user"), ("COMPLETED", "0:0", "success"),
    ("FAILED", "1:0", "software_exception"), (None, "0:11", "segfault_signal"), (None, 137, "host_oom"),
    (None, None, "unknown"), ("FAILED", None, "unknown"),
])
def test_baseline_sees_only_state_and_exit_code(state, exit_code, expected) -> None:
    assert baseline(state, exit_code) == expected


def test_report_lists_misses_and_renders() -> None:
    rep = build_report([("1", "gpu_oom", "gpu_oom", "cuda.oom", "unknown"),
                        ("2", "host_oom", "unknown", "fallback.no_match", "host_oom")])
    assert rep.misses == [("2", "host_oom", "unknown", "fallback.no_match")]
    assert rep.baseline_accuracy == 0.5
    text = render(rep)
    assert "macro-F1" in text and "2: host_oom -> unknown" in text
    assert rep.to_dict()["n"] == 2
