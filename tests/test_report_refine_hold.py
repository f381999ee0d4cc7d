"""Where a refinement pass runs (accounting.notify_wait_s > 0), the epilog's
report call holds the first delivery instead of sending it; with the default
(0) nothing waits on a pass that may not exist."""

import time

from gcm_checks import report, testing
from gcm_checks.accounting.refine import job_items
from test_notify_delivery import CLS, EVIDENCE, make_job


def settings(base, wait):
    return testing.settings({
        "report": {"spool_dir": f"{base}/spool", "report_dir": f"{base}/reports", "outbox_dir": f"{base}/outbox"},
        # a webhook nobody listens on: an attempt would fail and count
        "notify": {"channels": [{"name": "hook", "type": "webhook", "url": "http://127.0.0.1:9/x", "timeout_s": 1}],
                   "handoff": "inline", "budget_s": 5.0, "policy": {"default": "always"}},
        "accounting": {"notify_wait_s": wait},
    })


def test_held_for_refinement(tmp_path):
    s = settings(str(tmp_path), 120.0)
    t0 = time.time()
    out = report.assemble_and_notify(make_job(str(tmp_path)), s, node="node1", budget_s=5, evidence=EVIDENCE, classification=CLS)
    assert out.get("held_for_refinement"), out
    [item] = job_items(s, "501", "pending")
    assert item["attempts"] == 0 and item["not_before"] >= t0 + 119


def test_default_sends_at_once(tmp_path):
    s = settings(str(tmp_path), 0.0)
    out = report.assemble_and_notify(make_job(str(tmp_path)), s, node="node1", budget_s=5, evidence=EVIDENCE, classification=CLS)
    assert not out.get("held_for_refinement")
    [item] = job_items(s, "501", "pending")
    assert item["attempts"] == 1  # tried now (and failed: nobody listens), will retry with backoff


def test_flush_says_when_a_held_item_is_due(tmp_path, capsys):
    import argparse

    from gcm_checks.commands import notify as notify_cmd
    from gcm_checks.notify.delivery import outbox_for

    s = settings(str(tmp_path), 600.0)
    t0 = time.time()
    report.assemble_and_notify(make_job(str(tmp_path)), s, node="node1", budget_s=5, evidence=EVIDENCE, classification=CLS)
    box = outbox_for(s)
    assert box.next_due() >= t0 + 599
    line = notify_cmd._next_due(box, now=t0)
    assert "in 10 min" in line and "1 held" in line and "--now does not override" in line
    # --now skips backoff, never a hold: nothing tried, the hold is shown.
    summary = __import__("gcm_checks.notify", fromlist=["flush"]).flush(s, force=True, budget_s=5)
    assert summary.sent == [] and summary.failed == [] and [h["why"] for h in summary.held] == ["accounting"]
    [item] = job_items(s, "501", "pending")
    assert item["attempts"] == 0
