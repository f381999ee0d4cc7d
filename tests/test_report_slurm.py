"""Full path on the real Slurm 22.05 test cluster: a failing two-node job
produces exactly one report and exactly one delivered e-mail with the right
category, sent by a detached process after the epilog has already exited.

The epilog here is a stand-in that calls the public API the way the real
``gcm-checks epilog`` does (docs/reports.md); it boots its own cluster so
that its Epilog= does not disturb the session cluster.
"""

from __future__ import annotations

import email
import json
import os
import sys
import tempfile
import time

from email import policy as email_policy

import pytest

from test_notify_delivery import free_port

pytestmark = pytest.mark.slurm

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EPILOG = """#!{python}
# Stand-in epilog: verdict first (here: always pass), then the report.
import json, os, sys, time
sys.path.insert(0, {repo!r})
from gcm_checks.report import JobInfo, assemble_and_notify
from gcm_checks.classify import ClassifyInput, LogText, classify
from gcm_checks.result import passed

settings = json.load(open({cfg!r}))
node = os.environ["SLURMD_NODENAME"]
job = JobInfo.from_env(os.environ, end=time.time())

def classifier(job, logs, contributions):
    texts = [LogText(l["name"], l["text"]) for l in logs if l.get("text")]
    return classify(ClassifyInput(logs=texts, exit_code=job.exit_code, signal=job.exit_signal or None)).to_dict()

out = assemble_and_notify(job, settings, node=node, budget_s=5,
                          evidence={{"results": [passed("gpu.count", "0 GPUs (simulated)")]}},
                          classifier=classifier)
with open(os.path.join({outdir!r}, "epilog-%s-%s.json" % (job.key, node)), "w") as f:
    json.dump(out, f, default=str)
sys.exit(0)
"""


@pytest.fixture(scope="module")
def world():
    from slurm_cluster import SLURM_MISSING, SlurmCluster, remove_tree

    if SLURM_MISSING:
        pytest.skip(SLURM_MISSING)
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
    root = tempfile.mkdtemp(prefix="gcm-rs-", dir="/tmp")
    os.chmod(root, 0o755)
    epilog_d, outdir = os.path.join(root, "epilog.d"), os.path.join(root, "out")
    os.makedirs(epilog_d)
    os.makedirs(outdir)
    cfg = os.path.join(root, "report.json")
    settings = {
        "report": {"spool_dir": f"{root}/spool", "report_dir": f"{root}/reports", "outbox_dir": f"{root}/outbox"},
        "notify": {"channels": [{"name": "email", "type": "smtp", "host": "127.0.0.1", "port": smtp.port, "timeout_s": 5}],
                   "email": {"domain_template": "{user}@uni.example"}, "handoff": "detach", "budget_s": 10},
    }
    with open(cfg, "w") as f:
        json.dump(settings, f)
    script = os.path.join(epilog_d, "50-report")
    with open(script, "w") as f:
        f.write(EPILOG.format(python=sys.executable, repo=REPO, cfg=cfg, outdir=outdir))
    os.chmod(script, 0o755)
    cluster = SlurmCluster(os.path.join(root, "c"), epilog=os.path.join(epilog_d, "*"))
    cluster.start()
    try:
        yield cluster, sink, settings, outdir
    finally:
        cluster.stop()
        smtp.stop()
        remove_tree(root)


def _wait(pred, timeout: float):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    return pred()


def test_failing_two_node_job_gives_one_report_and_one_mail(world):
    cluster, sink, settings, outdir = world
    job_id = cluster.sbatch(
        "#!/bin/bash\necho 'epoch 1 loss 2.3'\n"
        "echo 'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2\nexit 1\n",
        nodes=2, job_name="oomer",
    )
    cluster.wait_job(job_id, {"FAILED"}, timeout=60)
    outs = _wait(lambda: [f for f in os.listdir(outdir) if f.startswith(f"epilog-{job_id}-")] if len(
        [f for f in os.listdir(outdir) if f.startswith(f"epilog-{job_id}-")]) == 2 else None, 30)
    assert outs and len(outs) == 2, os.listdir(outdir)
    results = [json.load(open(os.path.join(outdir, f))) for f in outs]
    assert all("error" not in r for r in results), results
    assert sum(r["assembled"] for r in results) == 1  # exactly one node assembled
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
    # The slurmd epilog env has no job name (facts note); the real epilog
    # adds it from `scontrol show job`, this stand-in does not.
    assert msg["Subject"] == f"[gcm] job {job_id} FAILED: gpu_oom"
    body = msg.get_body(("plain",)).get_content()
    assert "gpu_oom" in body and "CUDA out of memory" in body
    assert cluster.sinfo_reasons() == {}  # reporting drained nothing
