"""Health and prolog know the jobs on the node (issue 12 item 5): a GPU
process of a running Slurm job is not a leftover; a prolog on a shared node
judges only its own job's GPUs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from gcm_checks import suite
from gcm_checks.config import resolve
from gcm_checks.gather import jobs
from gcm_checks.result import Status
from gcm_checks.sim import scenario
from gcm_checks.state import record_job_start

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("text,job", [
    ("12:devices:/slurm/uid_1000/job_123/step_0\n11:memory:/slurm/uid_1000/job_123/step_0\n", "123"),  # v1
    ("4:cpuset:/slurm_node1/uid_0/job_77/step_batch/task_0\n", "77"),  # v1, several slurmd per host
    ("0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n", "4242"),  # v2
    ("0::/system.slice/slurmstepd.scope/job_9/step_extern/slurm_processes\n", "9"),
    ("0::/user.slice/user-1000.slice/session-3.scope\n", None),  # a login shell
    ("0::/system.slice/docker-abc.scope/job_5\n", None),  # not Slurm's hierarchy
    ("0::/slurm/uid_0/job_x/step_0\n", None),
    ("", None),
])
def test_job_of_cgroup(text, job):
    assert jobs.job_of_cgroup(text) == job


@pytest.mark.parametrize("text,gpus", [
    ("0,1,3", {0, 1, 3}), ("0-3,6", {0, 1, 2, 3, 6}), ("", None), (None, None), (" 2 ", {2}),
    ("GPU-4f1c2b8e-0000", None), ("MIG-1", None), ("3-1", None), ("0-999999999", None),
])
def test_parse_gpu_list(text, gpus):
    got = jobs.parse_gpu_list(text)
    assert (set(got) if got is not None else None) == gpus


@pytest.mark.parametrize("env,expected", [
    ({}, (None, None)),
    ({"SLURM_JOB_GPUS": "0"}, (None, None)),  # no job: not a prolog
    ({"SLURM_JOB_ID": "5", "SLURM_JOB_GPUS": "2,3", "CUDA_VISIBLE_DEVICES": "0,1"}, ("5", {2, 3})),
    ({"SLURM_JOB_ID": "5", "CUDA_VISIBLE_DEVICES": "0,1"}, ("5", {0, 1})),
    ({"SLURM_JOBID": "6"}, ("6", None)),  # a job without GPUs: the whole node is judged
])
def test_starting_job(env, expected):
    job, gpus = jobs.starting_job(env)
    assert (job, set(gpus) if gpus is not None else None) == expected


def _sim(tmp_path: Path, procs: Dict[int, Any]) -> Dict[str, Any]:
    p = tmp_path / "procs.yaml"
    p.write_text("extends: healthy\ngpus:\n  overrides:\n" + "".join(
        f"    {i}: {{processes: {json.dumps(v)}}}\n" for i, v in procs.items()))
    return scenario.load(str(p))


def _processes(tmp_path, sim, tag="health", conf=None):
    settings = resolve(conf or {"gpu": {"leftover_processes": "fail"}}, "sim")
    ctx = suite.Context(settings=settings, node="sim", sim=sim, state_dir=tmp_path / "state")
    try:
        return [r for r in suite.run_suite(tag, ctx) if r.check == "gpu.processes"]
    finally:
        ctx.close()


@pytest.fixture
def no_job(monkeypatch):
    for k in ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def test_busy_node_health_passes_with_its_jobs_processes(tmp_path, no_job):
    r = _processes(tmp_path, scenario.load("busy-node"))
    assert [x.status for x in r] == [Status.PASS]
    assert "8 belong to running job(s) 4242" in r[0].message


def test_leftover_without_a_job_fails_when_configured(tmp_path, no_job):
    r = _processes(tmp_path, scenario.load("leftover-processes"))
    assert [(x.status, x.subject.split(" (")[0]) for x in r] == [(Status.FAIL, "GPU 2")]
    assert "2841" in r[0].message and "in no running job" in r[0].message


def test_mixed_gpu_names_only_the_leftover(tmp_path, no_job):
    sim = _sim(tmp_path, {0: [{"pid": 10, "job": 7}, {"pid": 11}]})
    r = _processes(tmp_path, sim)
    assert len(r) == 1 and r[0].status is Status.FAIL and "pid 11," in r[0].message and "10" not in r[0].message.split("pid")[1]


def test_prolog_on_shared_node_judges_only_its_gpus(tmp_path, no_job):
    # Job 900 starts on GPUs 0-1; GPU 5 runs another job's process with no
    # cgroup visible (proctrack/linuxproc): not this prolog's business.
    no_job.setenv("SLURM_JOB_ID", "900")
    no_job.setenv("SLURM_JOB_GPUS", "0,1")
    sim = _sim(tmp_path, {5: [{"pid": 55}]})
    assert [x.status for x in _processes(tmp_path, sim, "prolog")] == [Status.PASS]
    sim = _sim(tmp_path, {1: [{"pid": 11}], 5: [{"pid": 55}]})
    r = _processes(tmp_path, sim, "prolog")
    assert [(x.status, x.subject.split(" (")[0]) for x in r] == [(Status.FAIL, "GPU 1")]


def test_hardware_faults_on_other_gpus_still_fail_the_shared_prolog(tmp_path, no_job):
    no_job.setenv("SLURM_JOB_ID", "900")
    no_job.setenv("SLURM_JOB_GPUS", "0")
    settings = resolve({}, "sim")
    ctx = suite.Context(settings=settings, node="sim", sim=scenario.load("gpu-lost"), state_dir=tmp_path / "s")
    try:
        results = suite.run_suite("prolog", ctx)
    finally:
        ctx.close()
    assert [(r.check, r.subject.split(" (")[0]) for r in results if r.status is Status.FAIL] == [("gpu.responsive", "GPU 3")]


def test_allocation_recorded_at_prolog_owns_processes_without_cgroup(tmp_path, no_job):
    record_job_start(tmp_path / "state", "77", "sim", gpus=[2, 3])
    sim = _sim(tmp_path, {2: [{"pid": 20}], 4: [{"pid": 40}]})
    r = _processes(tmp_path, sim)
    assert [(x.status, x.subject.split(" (")[0]) for x in r] == [(Status.FAIL, "GPU 4")]


def test_the_starting_jobs_own_record_does_not_excuse_leftovers(tmp_path, no_job):
    # A requeued job's prolog: its record (GPU 2) is already there, and so is
    # a process nobody owns on GPU 2.
    record_job_start(tmp_path / "state", "77", "sim", gpus=[2])
    no_job.setenv("SLURM_JOB_ID", "77")
    no_job.setenv("SLURM_JOB_GPUS", "2")
    r = _processes(tmp_path, _sim(tmp_path, {2: [{"pid": 20}]}), "prolog")
    assert [x.status for x in r] == [Status.FAIL]


def test_records_of_other_nodes_and_junk_are_ignored(tmp_path):
    d = tmp_path / "jobs"
    d.mkdir()
    (d / "1.other.json").write_text(json.dumps({"job_id": "1", "node": "other", "gpus": [0]}))
    (d / "2.sim.json").write_text(json.dumps({"job_id": "2", "node": "sim", "gpus": [True, "x", 3]}))
    (d / "3.sim.json").write_text("{not json")
    (d / "4.sim.json").write_text(json.dumps({"job_id": "4", "node": "sim"}))
    assert jobs.read_allocations(str(tmp_path), "sim") == {"2": frozenset({3})}


def test_cgroup_read_is_bounded(tmp_path):
    d = tmp_path / "proc" / "5"
    d.mkdir(parents=True)
    (d / "cgroup").write_text("0::/" + "x" * (jobs.CGROUP_MAX * 4) + "\n0::/slurm/uid_0/job_3/step_0\n")
    assert jobs.read_owner(str(tmp_path), 5) is None
    assert jobs.read_owner(str(tmp_path), 6) is None


def test_real_prolog_records_the_jobs_gpus(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"log_path: {tmp_path}/l.jsonl\nstate_dir: {tmp_path}/s\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(SLURM_JOB_ID="31", SLURM_JOB_GPUS="1,4", SLURMD_NODENAME="n1")
    p = subprocess.run([sys.executable, "-m", "gcm_checks", "prolog", "--config", str(cfg), "--sim", "healthy"],
                       capture_output=True, text=True, env=env, timeout=60, cwd=str(REPO))
    assert p.returncode == 0, p.stderr
    rec = json.loads((tmp_path / "s" / "jobs" / "31.n1.json").read_text())
    assert rec["gpus"] == [1, 4]


def test_real_health_on_a_busy_node_does_not_degrade_or_drain(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"log_path: {tmp_path}/l.jsonl\nstate_dir: {tmp_path}/s\ngpu: {{leftover_processes: fail}}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    p = subprocess.run([sys.executable, "-m", "gcm_checks", "health", "--config", str(cfg), "--sim", "busy-node",
                        "--json", "--dry-run", "--node", "n1"], capture_output=True, text=True, env=env, timeout=60, cwd=str(REPO))
    doc = json.loads(p.stdout)
    assert doc["verdict"] == "pass" and p.returncode == 0, p.stdout + p.stderr
    assert "state=drain" not in p.stderr and "gcm_degraded" not in p.stderr and "gcm_ok" in p.stderr


def test_real_health_drains_for_a_true_leftover(tmp_path):
    # The other side of the test above: the same run with a process in no job.
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"log_path: {tmp_path}/l.jsonl\nstate_dir: {tmp_path}/s\ngpu: {{leftover_processes: fail}}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    p = subprocess.run([sys.executable, "-m", "gcm_checks", "health", "--config", str(cfg), "--sim", "leftover-processes",
                        "--json", "--dry-run", "--node", "n1"], capture_output=True, text=True, env=env, timeout=60, cwd=str(REPO))
    assert json.loads(p.stdout)["verdict"] == "fail"
    drain = [ln for ln in p.stderr.splitlines() if "state=drain" in ln]
    assert drain and "gpu.processes" in drain[0] and "GPU 2" in drain[0]


def test_a_survivor_in_an_ended_jobs_cgroup_is_a_leftover(tmp_path, no_job):
    # Job 12 ran, its epilog ran (forget_job), but one unkillable process is
    # still in its cgroup: exactly the leftover the next job must not get.
    from gcm_checks.state import forget_job, job_ended

    state = tmp_path / "state"
    record_job_start(state, "12", "sim", gpus=[0])
    forget_job(state, "12", "sim")
    assert job_ended(state, "12", "sim") and jobs.read_allocations(str(state), "sim") == {}
    r = _processes(tmp_path, _sim(tmp_path, {0: [{"pid": 77, "job": 12}], 1: [{"pid": 78, "job": 13}]}))
    assert [(x.status, x.subject.split(" (")[0]) for x in r] == [(Status.FAIL, "GPU 0")]
    assert "77 of ended job 12" in r[0].message


def test_a_requeued_job_is_running_again(tmp_path, no_job):
    from gcm_checks.state import forget_job, job_ended

    state = tmp_path / "state"
    forget_job(state, "12", "sim")
    record_job_start(state, "12", "sim", gpus=[0])  # its next run's prolog
    assert not job_ended(state, "12", "sim")
    assert [x.status for x in _processes(tmp_path, _sim(tmp_path, {0: [{"pid": 77, "job": 12}]}))] == [Status.PASS]


def test_ended_markers_are_bounded(tmp_path, monkeypatch):
    from gcm_checks import state as st

    monkeypatch.setattr(st, "ENDED_KEEP", 10)
    for i in range(25):
        st.forget_job(tmp_path, str(i), "n")
    left = len(list((tmp_path / "jobs" / st.ENDED_DIR).iterdir()))
    assert 5 <= left <= 11 and st.job_ended(tmp_path, "24", "n")
