"""gcm-run notifications through the real ``gcm_checks.notify`` pipeline:
a real HTTP server as the webhook (tests/http_receiver.py), the real outbox, a real wrapper process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("gcm_checks.notify")
from gcm_checks import notify  # noqa: E402
from http_receiver import WebhookReceiver  # noqa: E402 - tests/http_receiver.py


REPO = Path(__file__).resolve().parents[1]
PY = sys.executable


@pytest.fixture
def hook():
    with WebhookReceiver() as h:
        h.url += "/hook"
        yield h


def closed_port_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/nobody"


def write_config(tmp_path: Path, url: str, policy: str = "on_failure", outbox: str = "") -> Path:
    cfg = tmp_path / "gcm.yaml"
    cfg.write_text(
        f"report:\n  outbox_dir: {outbox or tmp_path / 'outbox'}\n"
        f"notify:\n  policy: {{default: {policy}}}\n"
        f"  channels:\n    - {{name: hook, type: webhook, url: '{url}', timeout_s: 2}}\n"
    )
    return cfg


def gcm_run(tmp_path: Path, cfg: Path, *args: str, cmd, extra_env=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PYTHONPATH=str(REPO), GCM_RUN_INDEX=str(tmp_path / "index"), GCM_CHECKS_CONFIG=str(cfg),
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.update(extra_env or {})
    argv = [PY, "-m", "gcm_checks.gcm_run_cli", "--log", str(tmp_path / "run.log"), *args, "--", *cmd]
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, timeout=120)


def report(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "run.log.report.json").read_text())


def test_failed_run_is_delivered_to_the_webhook(tmp_path, hook):
    cfg = write_config(tmp_path, hook.url)
    cmd = [PY, "-c", "import sys; print('step 7/10 loss=0.5'); print('RuntimeError: CUDA out of memory.', file=sys.stderr); sys.exit(1)"]
    r = gcm_run(tmp_path, cfg, cmd=cmd)
    assert r.returncode == 1
    assert len(hook.bodies) == 1
    body = hook.bodies[0]
    # The same job report the epilog sends (issue 15, 5), not a status dump.
    assert body["event"] == "job_report"
    assert "FAILED" in body["summary"]
    assert "out of memory" in body["summary"].lower()  # the classifier's sentence
    rep_sent = body["report"]
    assert rep_sent["schema"] == "gcm-checks/job-report" or rep_sent["schema"]
    assert rep_sent["progress"]["step"] == 7 and rep_sent["progress"]["loss"] == 0.5
    assert rep_sent["logs"][0]["path"].endswith("run.log")
    rep = report(tmp_path)
    assert rep["notifications"][0]["ok"] is True
    assert rep["notifications"][0]["result"]["sent"] is True


def test_success_is_not_sent_on_failure_policy_but_is_with_always(tmp_path, hook):
    cfg = write_config(tmp_path, hook.url)
    assert gcm_run(tmp_path, cfg, cmd=["true"]).returncode == 0
    assert hook.bodies == []
    assert gcm_run(tmp_path, cfg, "--notify", "always", cmd=["true"]).returncode == 0
    assert len(hook.bodies) == 1


def test_relay_down_keeps_the_message_in_the_outbox_and_the_exit_status(tmp_path):
    cfg = write_config(tmp_path, closed_port_url())
    r = gcm_run(tmp_path, cfg, cmd=["sh", "-c", "exit 6"])
    assert r.returncode == 6
    pending = list((tmp_path / "outbox" / "pending").glob("*.json"))
    assert len(pending) == 1
    item = json.loads(pending[0].read_text())
    assert item["key"].endswith("/hook") and item["attempts"] >= 1  # the job report's own key


def test_stall_alert_is_delivered_while_running(tmp_path, hook):
    cfg = write_config(tmp_path, hook.url)
    code = "import time\nprint('step 40/100', flush=True)\ntime.sleep(2.0)\nprint('step 41/100')"
    r = gcm_run(tmp_path, cfg, "--stall-after", "0.5s", "--silent-after", "1h", cmd=[PY, "-c", code])
    assert r.returncode == 0
    alerts = [b for b in hook.bodies if b.get("event", "").startswith("gcm_run_")]
    # One episode, one message, in words (issue 13): not JSON, not twice.
    assert len(alerts) == 1, alerts
    assert alerts[0]["event"] == "gcm_run_stalled"
    assert "stalled since" in alerts[0]["summary"] + alerts[0]["text"] and "40/100" in alerts[0]["text"]
    assert not alerts[0]["text"].lstrip().startswith("{")


def test_stall_and_silence_of_one_hang_are_one_message(tmp_path, hook):
    cfg = write_config(tmp_path, hook.url)
    code = "import time\nprint('step 40/100', flush=True)\ntime.sleep(2.5)\nprint('step 41/100')"
    r = gcm_run(tmp_path, cfg, "--stall-after", "0.5s", "--silent-after", "0.6s", cmd=[PY, "-c", code])
    assert r.returncode == 0
    rep = report(tmp_path)
    assert {"stalled", "silent"} <= set(rep["alerts_fired"])
    alerts = [b for b in hook.bodies if b.get("event", "").startswith("gcm_run_")]
    assert len(alerts) == 1, alerts


def test_inside_a_slurm_job_the_exit_goes_to_the_jobs_report_not_a_mail(tmp_path, hook):
    cfg = write_config(tmp_path, hook.url, policy="always")
    env = {"SLURM_JOB_ID": "77", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"}
    r = gcm_run(tmp_path, cfg, "--notify", "always", "--no-comment", cmd=["sh", "-c", "echo step 3/9; exit 4"], extra_env=env)
    assert r.returncode == 4
    assert hook.bodies == []
    assert "job's one report" in report(tmp_path)["notifications"][0]["skipped"]
    # ...where the epilog's report builder finds it (report.progress.attach).
    summary = json.loads((tmp_path / ".gcm-run" / "77.status.json").read_text())
    assert summary["progress"]["step"] == 3 and summary["exit"]["code"] == 4


def test_unwritable_site_outbox_falls_back_to_a_per_user_outbox(tmp_path):
    (tmp_path / "afile").write_text("not a directory")
    cfg = write_config(tmp_path, closed_port_url(), outbox=str(tmp_path / "afile" / "outbox"))
    r = gcm_run(tmp_path, cfg, cmd=["sh", "-c", "exit 2"])
    assert r.returncode == 2
    # The user's own outbox ($XDG_CACHE_HOME/gcm-checks/outbox) keeps it.
    assert len(list((tmp_path / "cache" / "gcm-checks" / "outbox" / "pending").glob("*.json"))) == 1
