"""Full path on the real Slurm 22.05 test cluster: a failing two-node job
produces exactly one report and exactly one delivered e-mail with the right
category, sent by a detached process after the epilog has already exited.

The epilog is the real one: Epilog=<repo>/epilog.d/* running `gcm-checks
epilog` on both nodes, configured through gcm-checks.yaml beside slurm.conf.
"""

from __future__ import annotations

import email
import json
import os
import time

from email import policy as email_policy

import pytest

from test_notify_delivery import free_port

pytestmark = pytest.mark.slurm

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def world(gcm_scripts_cluster):
    from aiosmtpd.controller import Controller

    class Sink:
        def __init__(self):
            self.messages = []

        async def handle_DATA(self, server, session, envelope):
            self.messages.append(envelope.content)
            return "250 OK"

    sink = Sink()
    smtp = Controller(sink, hostname="127.0.0.1", port=free_port())
    smtp.start()
    cluster = gcm_scripts_cluster
    root = cluster.root
    settings = {
        "gpu": {"count": 8},
        "report": {"spool_dir": f"{root}/rs-spool", "report_dir": f"{root}/rs-reports", "outbox_dir": f"{root}/rs-outbox"},
        "notify": {"channels": [{"name": "email", "type": "smtp", "host": "127.0.0.1", "port": smtp.port, "timeout_s": 5}],
                   "email": {"domain_template": "{user}@uni.example"}, "handoff": "detach", "budget_s": 10},
    }
    cluster.write_gcm_config(settings)
    try:
        yield cluster, sink, settings
    finally:
        smtp.stop()


def _wait(pred, timeout: float):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    return pred()


def test_failing_two_node_job_gives_one_report_and_one_mail(world):
    cluster, sink, settings = world
    job_id = cluster.sbatch(
        "#!/bin/bash\necho 'epoch 1 loss 2.3'\n"
        "echo 'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2\nexit 1\n",
        nodes=2, job_name="oomer",
    )
    cluster.wait_job(job_id, {"FAILED"}, timeout=60)
    spool = os.path.join(settings["report"]["spool_dir"], job_id)
    # both nodes' epilogs contributed evidence; exactly one assembled
    assert _wait(lambda: len(os.listdir(os.path.join(spool, "nodes"))) == 2 if os.path.isdir(os.path.join(spool, "nodes")) else False, 30)
    report_json = os.path.join(settings["report"]["report_dir"], job_id, "report.json")
    assert _wait(lambda: os.path.exists(report_json), 30)
    reports = os.listdir(settings["report"]["report_dir"])
    assert reports == [job_id]
    doc = json.load(open(os.path.join(settings["report"]["report_dir"], job_id, "report.json")))
    assert doc["classification"]["category"] == "gpu_oom"
    assert sorted(n["node"] for n in doc["nodes"]) == ["node1", "node2"] and doc["missing_nodes"] == []
    assert doc["job"]["exit_status"] == "1:0" and doc["outcome"]["failed"]
    # The mail comes from the detached sender, after the epilog returned.
    assert _wait(lambda: len(sink.messages) >= 1, 30)
    time.sleep(1.0)  # a second mail, if any were coming, would be here by now
    assert len(sink.messages) == 1
    msg = email.message_from_bytes(sink.messages[0], policy=email_policy.default)
    # The slurmd epilog env has no job name (facts note): the real epilog
    # reads it once from `scontrol show job`.
    assert msg["Subject"] == f"[gcm] job {job_id} (oomer) FAILED: out of memory (your code)"
    body = msg.get_body(("plain",)).get_content()
    assert "gpu_oom" in body and "CUDA out of memory" in body
    assert cluster.sinfo_reasons() == {}  # reporting drained nothing
