"""Health mode carries the chores: it retries undelivered notifications in a
detached process (a real HTTP server receives them), and never lets them
change its verdict."""

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from gcm_checks import report, testing
from test_notify_delivery import CLS, EVIDENCE, make_job

REPO = Path(__file__).resolve().parent.parent


class Hook(http.server.BaseHTTPRequestHandler):
    got = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Hook.got.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *a):
        pass


def test_health_delivers_queued_notifications(tmp_path):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = str(tmp_path)
    settings = {
        "log_path": f"{base}/log.jsonl", "state_dir": f"{base}/state", "gpu": {"count": 8},
        "slurm": {"scontrol": f"{base}/no-scontrol"},
        "report": {"spool_dir": f"{base}/spool", "report_dir": f"{base}/reports", "outbox_dir": f"{base}/outbox"},
        "notify": {"channels": [{"name": "hook", "type": "webhook", "url": f"http://127.0.0.1:{srv.server_port}/gcm",
                                 "timeout_s": 5}],
                   "handoff": "queue", "budget_s": 10.0, "policy": {"default": "always"}},
    }
    out = report.assemble_and_notify(make_job(base), testing.settings(settings), node="node1", budget_s=5,
                                     evidence=EVIDENCE, classification=CLS)
    assert out["delivery"] == "queued" and not Hook.got  # the epilog queued it and moved on
    cfg = tmp_path / "gcm.yaml"
    cfg.write_text(yaml.safe_dump(settings))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    p = subprocess.run([sys.executable, "-m", "gcm_checks", "health", "--config", str(cfg), "--sim", "healthy", "--node", "node1"],
                       capture_output=True, text=True, env=env, timeout=60, cwd=str(REPO))
    assert p.returncode == 0, p.stderr
    end = time.monotonic() + 20
    while not Hook.got and time.monotonic() < end:
        time.sleep(0.1)
    srv.shutdown()
    assert len(Hook.got) == 1
    assert "gpu_hardware" in json.dumps(Hook.got[0])
