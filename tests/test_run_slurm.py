"""gcm-run under the real Slurm 22.05 test cluster: progress in ``squeue``.

Every assertion reads Slurm's own view (``squeue -o %k``, ``scontrol show
job``), never gcm-run's files alone.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from test_report_slurm import world  # noqa: F401 - the real epilog, an SMTP sink

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[1]


def _script(log: str, steps: int, per_step_s: float, extra: str = "") -> str:
    child = log + ".train.py"
    Path(child).write_text(
        "import time\n"
        f"for i in range(1, {steps + 1}):\n"
        f"    print(f'step {{i}}/{steps} loss={{1.0 / i:.3f}}', flush=True)\n"
        f"    time.sleep({per_step_s})\n"
    )
    return (
        "#!/bin/bash\n"
        f"export PYTHONPATH={REPO}\n"
        "export GCM_RUN_COMMENT_INTERVAL=1\n"
        f"export GCM_RUN_INDEX={os.path.dirname(log)}/index\n"
        f"exec {sys.executable} -m gcm_checks.gcm_run_cli --log {log} {extra} -- {sys.executable} {child}\n"
    )


def _squeue_comment(cluster, job_id: str) -> str:
    out = cluster._cmd("squeue", "-h", "-j", str(job_id), "-o", "%.10i %.9T %.60k", check=False).stdout
    parts = out.split(None, 2)
    return parts[2].strip() if len(parts) == 3 else ""


def test_job_comment_shows_progress_in_squeue(clean_cluster, tmp_path):
    c = clean_cluster
    log = os.path.join(c.jobdir, f"gcm-run-{time.monotonic_ns()}.log")
    job = c.sbatch(_script(log, steps=40, per_step_s=0.25), job_name="gcmrun")
    c.wait_job(job, {"RUNNING"}, timeout=60)
    seen = []
    end = time.monotonic() + 60
    while time.monotonic() < end:
        text = _squeue_comment(c, job)
        if text and (not seen or seen[-1] != text):
            seen.append(text)
        if len([s for s in seen if s.startswith("gcm: ") and "step" in s]) >= 2:
            break
        if c.job_state(job) not in ("RUNNING", "PENDING", "CONFIGURING"):
            break
        time.sleep(0.3)
    progress = [s for s in seen if s.startswith("gcm: ") and "/40" in s]
    assert len(progress) >= 2, f"squeue comments seen: {seen}"  # it moves while the job runs
    assert "%" in progress[0] and "loss" in progress[0]
    info = c.wait_job(job, {"COMPLETED", "FAILED"}, timeout=90)
    assert info["JobState"] == "COMPLETED"
    # The final comment says how it ended, and Slurm keeps it.
    assert c.job(job).get("Comment", "").startswith("gcm: done 100% step 40/40")
    rep = json.loads(Path(log + ".report.json").read_text())
    assert rep["exit"]["code"] == 0 and rep["comment"]["enabled"] is True
    final = json.loads(Path(log + ".status.json").read_text())
    assert final["comment"]["sent"] >= 3 and final["comment"]["last_error"] is None


def test_scancel_is_forwarded_and_exit_is_143(clean_cluster, tmp_path):
    c = clean_cluster
    log = os.path.join(c.jobdir, f"gcm-run-{time.monotonic_ns()}.log")
    job = c.sbatch(_script(log, steps=1000, per_step_s=0.1), job_name="gcmcancel")
    c.wait_job(job, {"RUNNING"}, timeout=60)
    end = time.monotonic() + 30
    while time.monotonic() < end and not (os.path.exists(log) and "step 3/" in Path(log).read_text()):
        time.sleep(0.2)
    c._cmd("scancel", "--signal=TERM", "--batch", str(job))
    end = time.monotonic() + 60
    while time.monotonic() < end and not os.path.exists(log + ".report.json"):
        time.sleep(0.2)
    rep = json.loads(Path(log + ".report.json").read_text())
    assert rep["exit"]["signal"] == "SIGTERM"
    assert rep["exit"]["code"] == 143
    assert [s["signal"] for s in rep["signals_forwarded"]] == ["SIGTERM"]


def test_two_node_job_shows_the_straggler_in_squeue(clean_cluster, tmp_path):
    """Two tasks on node1 and node2 (srun, real SLURM_* task variables); the
    task on node2 runs ~40% slower; task 0's comment names it while the job
    runs, so ``squeue`` shows ``slow: node2 -NN%``."""
    c = clean_cluster
    tag = time.monotonic_ns()
    child = os.path.join(c.jobdir, f"strag-{tag}.py")
    Path(child).write_text(
        "import os, time\n"
        "per = 0.05 if os.environ.get('SLURMD_NODENAME') != 'node2' else 0.085\n"
        "for i in range(1, 100000):\n"
        "    print(f'step {i} loss={1.0 / i:.4f}', flush=True)\n"
        "    time.sleep(per)\n"
        "    if time.monotonic() > START + 40: break\n".replace("START", repr(time.monotonic()))
    )
    script = (
        "#!/bin/bash\n"
        f"export PYTHONPATH={REPO}\n"
        "export GCM_RUN_COMMENT_INTERVAL=1 GCM_RUN_STRAGGLER_INTERVAL=0.5 GCM_RUN_TICK=0.2\n"
        f"export GCM_RUN_INDEX={c.jobdir}/index\n"
        f"srun --ntasks-per-node=1 bash -c 'exec {sys.executable} -m gcm_checks.gcm_run_cli"
        f" --log {c.jobdir}/strag-{tag}-$SLURM_PROCID.log --notify never --straggler-window 4s"
        f" -- {sys.executable} {child}'\n"
    )
    job = c.sbatch(script, job_name="straggle", nodes=2)
    c.wait_job(job, {"RUNNING"}, timeout=60)
    seen = []
    end = time.monotonic() + 60
    while time.monotonic() < end:
        text = _squeue_comment(c, job)
        if text and (not seen or seen[-1] != text):
            seen.append(text)
        if "slow: node2" in text:
            break
        if c.job_state(job) not in ("RUNNING", "PENDING", "CONFIGURING"):
            break
        time.sleep(0.3)
    named = [s for s in seen if "slow: node2" in s]
    assert named, f"squeue comments seen: {seen}"
    pct = int(named[0].split("slow: node2 ")[1].split("%")[0])
    assert -60 <= pct <= -20
    assert "node1" not in named[0].split("slow:")[1]
    c._cmd("scancel", str(job), check=False)
    c.wait_job(job, {"CANCELLED", "COMPLETED", "FAILED"}, timeout=90)


def test_gcm_run_job_gets_one_mail_the_job_report_with_its_progress(world):  # noqa: F811 - fixture
    """Inside Slurm gcm-run sends no mail of its own: the epilog's one report
    carries its progress, loss curve and stall (issue 13: one message per run)."""
    import email
    from email import policy as email_policy

    from test_report_slurm import _wait

    cluster, sink, settings = world
    child = os.path.join(cluster.jobdir, f"fail-{time.monotonic_ns()}.py")
    Path(child).write_text(
        "import sys, time\n"
        "for i in range(1, 16):\n"
        "    print(f'step {i}/100 loss={2.0 / i:.4f}', flush=True)\n"
        "    time.sleep(0.1)\n"
        "print('torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB', file=sys.stderr)\n"
        "sys.exit(1)\n"
    )
    cfg = os.path.join(cluster.root, "user-gcm.yaml")
    Path(cfg).write_text(json.dumps({"notify": settings["notify"], "report": {"outbox_dir": f"{cluster.root}/user-outbox"}}))
    script = (
        "#!/bin/bash\n"
        f"export PYTHONPATH={REPO} GCM_CHECKS_CONFIG={cfg} GCM_RUN_STRAGGLER_INTERVAL=0.3\n"
        f"export GCM_RUN_INDEX={cluster.jobdir}/index\n"
        f"exec {sys.executable} -m gcm_checks.gcm_run_cli --log {cluster.jobdir}/run-$SLURM_JOB_ID.log --notify always"
        f" -- {sys.executable} {child}\n"
    )
    job_id = cluster.sbatch(script, job_name="gcmrunfail")
    cluster.wait_job(job_id, {"FAILED"}, timeout=90)
    report_json = os.path.join(settings["report"]["report_dir"], job_id, "report.json")
    assert _wait(lambda: os.path.exists(report_json), 30)
    doc = json.load(open(report_json))
    assert doc["progress"]["step"] == 15 and len(doc["progress"]["history"]["loss"]) >= 3
    assert _wait(lambda: len(sink.messages) >= 1, 30)
    time.sleep(2.0)  # gcm-run's own mail, if it sent one, would be here by now
    assert len(sink.messages) == 1
    msg = email.message_from_bytes(sink.messages[0], policy=email_policy.default)
    assert job_id in msg["Subject"]
    html = msg.get_body(("html",)).get_content()
    text = msg.get_body(("plain",)).get_content()
    assert "<svg" in html and "loss" in text
    rep = json.loads(Path(f"{cluster.jobdir}/run-{job_id}.log.report.json").read_text())
    assert "job's one report" in rep["notifications"][0]["skipped"]
