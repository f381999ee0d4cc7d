"""One report: outside Slurm gcm-run mails the job report the epilog would
(headline, cause, budgeted log tail, progress curves) to the uid's passwd
name; inside Slurm the epilog's report carries gcm-run's progress section."""

from __future__ import annotations

import email
import json
import os
import pwd
import subprocess
import sys
from email import policy as email_policy
from pathlib import Path

import pytest

from gcm_checks.report import progress as rp
from gcm_checks.report import render
from gcm_checks.report.model import JobInfo

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable


def status_with_history():
    hist = {"loss": [[1000.0 + i, i, 2.0 / (i + 1)] for i in range(50)],
            "step": [[1000.0 + i, i, float(i)] for i in range(50)]}
    return {"state": "exited", "log": "/x/run.log", "argv": ["train"],
            "progress": {"step": 49, "total": 100, "percent": 49.0, "loss": 0.04, "history": hist,
                         "metrics": {"learning_rate": 1e-4}},
            "stragglers_seen": [{"node": "gpu-n2", "task": "3", "ratio": 0.77, "why": "thermal slowdown on GPU 3 (91 C)"}],
            "alerts": [{"kind": "stalled", "message": "stalled since 12:00 at step 49/100: no step for 20m"}]}


def test_html_draws_loss_and_rate_curves_as_inline_svg_without_script():
    report = {"job": {"job_id": "1"}, "outcome": {"failed": True}, "progress": rp.from_status(status_with_history())}
    out = render.to_html(report)
    assert out.count("<svg") == 2 and "<polyline" in out and "<script" not in out.lower()
    assert "gpu-n2" in out and "-23%" in out and "thermal slowdown on GPU 3" in out
    text = render.to_text(report)
    assert "Training progress (gcm-run):" in text and "Slow node gpu-n2 (task 3): -23%" in text
    assert "loss " in text and any(ch in text for ch in rp.SPARK)


def test_svg_escapes_labels_and_needs_two_points():
    assert rp.svg_curve([(1.0, 2.0)], "x") == ""
    svg = rp.svg_curve([(0, 1), (1, 2)], "<script>alert(1)</script>")
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_sparkline_shape():
    assert rp.sparkline([3, 2, 1]) == "█▅▁" and rp.sparkline([1, 1]) == "▄▄"
    assert rp.sparkline([]) == "" and len(rp.sparkline(list(range(1000)), 20)) == 20


def test_epilog_report_reads_gcm_runs_summary_from_the_work_dir(tmp_path):
    d = tmp_path / ".gcm-run"
    d.mkdir(parents=True)
    (d / "55.1.status.json").write_text(json.dumps(status_with_history()))
    job = JobInfo(job_id="55", restart_count=1, uid=os.geteuid(), gid=os.getegid(), work_dir=str(tmp_path))
    report = {"notes": []}
    rp.attach(report, job)
    assert report["progress"]["step"] == 49 and report["progress"]["stragglers"][0]["node"] == "gpu-n2"
    other = {"notes": []}
    rp.attach(other, JobInfo(job_id="56", uid=os.geteuid(), gid=os.getegid(), work_dir=str(tmp_path)), 1.0)
    assert "progress" not in other and other["notes"] == []  # not a gcm-run job: nothing, no noise
    (d / "55.1.status.json").write_text("{" * 100)
    broken = {"notes": []}
    rp.attach(broken, job)
    assert "progress" not in broken and broken["notes"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to plant a link owned by another user")
def test_epilog_report_ignores_a_symlinked_summary(tmp_path):
    """As root (the epilog), a user's link to a file they cannot read is refused."""
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(status_with_history()))
    d = tmp_path / ".gcm-run"
    d.mkdir(parents=True)
    os.symlink(secret, d / "57.status.json")
    os.lchown(d / "57.status.json", 4242, 4242)
    report = {"notes": []}
    rp.attach(report, JobInfo(job_id="57", uid=os.geteuid(), gid=os.getegid(), work_dir=str(tmp_path)))
    assert "progress" not in report


aiosmtpd = pytest.importorskip("aiosmtpd")


class Inbox:
    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append((list(envelope.rcpt_tos),
                              email.message_from_bytes(envelope.original_content or envelope.content, policy=email_policy.default)))
        return "250 OK"


@pytest.fixture
def inbox():
    from aiosmtpd.controller import Controller

    import socket

    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    box = Inbox()
    ctl = Controller(box, hostname="127.0.0.1", port=port)
    ctl.start()
    box.port = port
    yield box
    ctl.stop()


def test_outside_slurm_the_mail_is_the_job_report_to_the_passwd_user(tmp_path, inbox):
    cfg = tmp_path / "gcm.yaml"
    cfg.write_text(
        f"report:\n  outbox_dir: {tmp_path / 'outbox'}\n  log_tail_bytes: 2000\n"
        "notify:\n  policy: {default: on_failure}\n  email: {domain_template: '{user}@uni.example'}\n"
        f"  channels:\n    - {{name: mail, type: smtp, host: 127.0.0.1, port: {inbox.port}, starttls: false,"
        " from: gcm@cluster.example, timeout_s: 5}\n"
    )
    noise = "".join(f"noise line {i}\\n" for i in range(400))
    code = (f"import sys, time\nsys.stdout.write('{noise}')\n"
            "for i in range(1, 8): print(f'step {i}/10 loss={1/i:.3f}', flush=True); time.sleep(0.06)\n"
            "print('RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB', file=sys.stderr)\nsys.exit(1)")
    # No USER, LOGNAME or HOME: cron, containers, env -i.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(REPO), "GCM_CHECKS_CONFIG": str(cfg),
           "GCM_RUN_INDEX": str(tmp_path / "index"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    r = subprocess.run([PY, "-m", "gcm_checks.gcm_run_cli", "--log", str(tmp_path / "run.log"), "--name", "train",
                        "--", PY, "-c", code], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert r.returncode == 1, r.stderr[-2000:]
    [(rcpt, msg)] = inbox.messages
    assert rcpt == [f"{pwd.getpwuid(os.getuid()).pw_name}@uni.example"]
    assert "FAILED" in msg["Subject"] and "train" in msg["Subject"]
    text = msg.get_body(("plain",)).get_content()
    html = msg.get_body(("html",)).get_content()
    assert "out of memory" in text.lower()
    assert "Training progress (gcm-run):" in text and "step 7/10" in text
    assert "CUDA out of memory" in text  # the log tail is there...
    assert "full log at" in text  # ...and its cut is said out loud
    assert "<svg" in html and "<script" not in html.lower()
    assert not text.lstrip().startswith("{")
