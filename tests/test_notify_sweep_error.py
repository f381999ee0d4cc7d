"""notify.flush prints nothing (issue 16 item 5, no print from library code):
a failed sweep is handed back in the summary and the CLI says it."""

from __future__ import annotations

from gcm_checks import notify, testing


def _settings(tmp_path):
    return testing.settings({"state_dir": str(tmp_path / "state"),
                             "report": {"report_dir": str(tmp_path / "reports"), "spool_dir": str(tmp_path / "spool"),
                                        "outbox_dir": str(tmp_path / "outbox")},
                             "notify": {"channels": [{"name": "hook", "type": "webhook", "url": "http://127.0.0.1:9/x"}]}})


def test_a_failed_sweep_is_in_the_summary_not_on_stderr(tmp_path, capsys):
    def sweep(settings, node=""):
        raise RuntimeError("spool unreadable")

    summary = notify.flush(_settings(tmp_path), budget_s=1, sweep=sweep)
    assert summary.sweep_error == "RuntimeError: spool unreadable"
    assert summary.to_dict()["sweep_error"] == summary.sweep_error
    assert capsys.readouterr() == ("", "")


def test_no_sweep_error_key_when_the_sweep_worked(tmp_path):
    summary = notify.flush(_settings(tmp_path), budget_s=1, sweep=lambda settings, node="": ["k"])
    assert summary.assembled == ["k"] and summary.sweep_error == ""
    assert "sweep_error" not in summary.to_dict()
