"""Health mode carries the chores: it retries undelivered notifications in a
detached process (a real HTTP server receives them), and never lets them
change its verdict."""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from gcm_checks import report, testing
from http_receiver import WebhookReceiver  # tests/http_receiver.py
from test_notify_delivery import CLS, EVIDENCE, make_job

REPO = Path(__file__).resolve().parent.parent


def test_health_delivers_queued_notifications(tmp_path):
    with WebhookReceiver() as hook:
        base = str(tmp_path)
        settings = {
            "log_path": f"{base}/log.jsonl", "state_dir": f"{base}/state", "gpu": {"count": 8},
            "slurm": {"scontrol": f"{base}/no-scontrol"},
            "report": {"spool_dir": f"{base}/spool", "report_dir": f"{base}/reports", "outbox_dir": f"{base}/outbox"},
            "notify": {"channels": [{"name": "hook", "type": "webhook", "url": f"{hook.url}/gcm", "timeout_s": 5}],
                       "handoff": "queue", "budget_s": 10.0, "policy": {"default": "always"}},
        }
        out = report.assemble_and_notify(make_job(base), testing.settings(settings), node="node1", budget_s=5,
                                         evidence=EVIDENCE, classification=CLS)
        assert out["delivery"] == "queued" and not hook.requests  # the epilog queued it and moved on
        cfg = tmp_path / "gcm.yaml"
        cfg.write_text(yaml.safe_dump(settings))
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
        p = subprocess.run([sys.executable, "-m", "gcm_checks", "health", "--config", str(cfg), "--sim", "healthy",
                            "--node", "node1"], capture_output=True, text=True, env=env, timeout=60, cwd=str(REPO))
        assert p.returncode == 0, p.stderr
        # The detached sender posts after health has exited; wait for it, then
        # a moment more so a duplicate delivery would be seen too.
        hook.wait_for(1, timeout_s=20)
        hook.wait_for(2, timeout_s=0.5)
    assert len(hook.requests) == 1
    assert "gpu_hardware" in json.dumps(hook.bodies[0])
