"""Real accounting: the real Slurm 22.05 test cluster with slurmdbd.

Six kinds of job end concurrently (the time-limited one takes 62-83 s); the
real ``gcm-checks epilog`` writes each run's report at job end, knowing only
what an epilog knows; then ONE refinement pass with the real ``sacct`` (every
call counted through an injectable runner) gives each its final category, and
``gcm-checks why`` answers for each from the command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from gcm_checks import slurm, testing
from gcm_checks.proc import run as proc_run

pytestmark = pytest.mark.slurm

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPTS = {
    "completed": "#!/bin/bash\necho 'step 10/10 loss=0.1'\necho 'Training completed'\nexit 0\n",
    "failed3": "#!/bin/bash\necho 'loading config' \necho 'ValueError: learning rate must be positive' >&2\nexit 3\n",
    "timeout": "#!/bin/bash\necho started\nsleep 300\n",
    "cancelled": "#!/bin/bash\necho started\nsleep 300\n",
    "multistep": ("#!/bin/bash\nsrun -n1 true\n"
                  "srun -n1 bash -c 'echo \"RuntimeError: shard 3 is corrupt\" >&2; exit 5'\n"
                  "echo 'batch script carries on'\nexit 0\n"),
    "requeued": ("#!/bin/bash\nif [ \"${SLURM_RESTART_COUNT:-0}\" = 0 ]; then echo first run; sleep 300; fi\n"
                 "echo 'Training completed'\nexit 0\n"),
}
# key suffix (run) -> expected category after refinement
EXPECTED = {
    "completed": "success",
    "failed3": "software_exception",
    "timeout": "timeout_walltime",
    "cancelled": "cancelled_user",
    "multistep": "software_exception",
    "requeued": "preempted",  # run 0: the scheduler requeued it
    "requeued.1": "success",  # run 1 finished
}


# What happened to each run (report/outcome.py): only failures are mailed and counted.
OUTCOME = {
    "completed": "completed",
    "failed3": "failed",
    "timeout": "timeout",
    "cancelled": "cancelled",
    "multistep": "failed",  # a step failed while the script went on
    "requeued": "requeued",
    "requeued.1": "completed",
}


def _wait(predicate, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = predicate()
        if v:
            return v
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def ended(slurm_cluster):
    """Run the six jobs once; return (cluster, {name: job id}, settings dict)."""
    from slurm_cluster import repo_script_glob

    c = slurm_cluster
    c.reset_nodes()
    c.use_scripts(repo_script_glob("prolog"), repo_script_glob("epilog"))
    root = c.root
    cfg = {
        "report": {"spool_dir": f"{root}/acct-spool", "report_dir": f"{root}/acct-reports"},
        "notify": {"outbox_dir": f"{root}/acct-outbox"},
        "accounting": {"interval_s": 600.0, "settle_s": 2.0, "lookback_s": 3600.0,
                       "state_file": f"{root}/acct-state/pass.json"},
    }
    c.write_gcm_config(cfg)
    jobs = {}
    jobs["timeout"] = c.sbatch(SCRIPTS["timeout"], time=1, job_name="acct-timeout")
    jobs["cancelled"] = c.sbatch(SCRIPTS["cancelled"], job_name="acct-cancel")
    jobs["requeued"] = c.sbatch(SCRIPTS["requeued"], requeue=True, job_name="acct-requeue")
    c.wait_job(jobs["cancelled"], {"RUNNING"}, timeout=30)
    c.wait_job(jobs["requeued"], {"RUNNING"}, timeout=30)
    time.sleep(1.0)
    c._cmd("scancel", jobs["cancelled"])
    c.scontrol("requeue", jobs["requeued"])
    for name in ("completed", "failed3", "multistep"):
        jobs[name] = c.sbatch(SCRIPTS[name], job_name=f"acct-{name}")
    finals = {"completed": {"COMPLETED"}, "failed3": {"FAILED"}, "timeout": {"TIMEOUT"}, "cancelled": {"CANCELLED"},
              "multistep": {"COMPLETED"}, "requeued": {"COMPLETED"}}
    for name, states in finals.items():
        c.wait_job(jobs[name], states, timeout=150)
    settings = dict(c.base_gcm_config(), **cfg)
    return c, jobs, settings


def _keys(jobs):
    out = {}
    for name, expected in EXPECTED.items():
        base, _, run = name.partition(".")
        out[name] = jobs[base] + (f".{run}" if run else "")
    return out


def _report(settings, key):
    path = os.path.join(settings["report"]["report_dir"], key, "report.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _dbd_job_queries(c):
    """slurmdbd's own count of job queries (DBD_GET_JOBS_COND, `sacctmgr show stats`)."""
    import re

    res = proc_run(["/usr/bin/sacctmgr", "show", "stats"], timeout=30, env=c.env)
    assert res.ok, res.describe()
    m = re.search(r"DBD_GET_JOBS_COND\s+\(\s*\d+\)\s+count:(\d+)", res.stdout)
    return int(m.group(1)) if m else 0


def _reports_of(settings, job_id):
    """key -> report for every stored report of this job (any run)."""
    rdir = settings["report"]["report_dir"]
    out = {}
    for name in os.listdir(rdir) if os.path.isdir(rdir) else ():
        if name == job_id or name.startswith(job_id + "."):
            rep = _report(settings, name)
            if rep:
                out[name] = rep
    return out


def _by_run(settings, job_id):
    """run key -> report, by what accounting says the report describes."""
    return {rep["accounting"]["run"]["key"]: rep for rep in _reports_of(settings, job_id).values() if rep.get("accounting")}


def test_one_pass_refines_every_kind_of_job_end(ended):
    from gcm_checks.accounting.refine import refine_pass

    c, jobs, settings = ended
    keys = _keys(jobs)
    simple = {n: k for n, k in keys.items() if not n.startswith("requeued")}
    rdir = settings["report"]["report_dir"]
    # The real epilog wrote a report for each run (the requeued job's first run too).
    _wait(lambda: all(_report(settings, k) for k in simple.values()) and _reports_of(settings, jobs["requeued"]), 60,
          f"epilog reports {keys} in {rdir}: {sorted(os.listdir(rdir)) if os.path.isdir(rdir) else 'none'}")
    at_epilog = {name: _report(settings, k)["classification"]["category"] for name, k in simple.items()}

    calls = []

    def counting_run(argv, *, timeout, env=None, **kw):
        calls.append(tuple(argv))
        return proc_run(argv, timeout=timeout, env=env, **kw)

    def fetch(since, until):
        return slurm.sacct_rows(since=since, until=until, timeout=30, env=c.env, runner=counting_run)

    # slurmdbd shows a placeholder row for ~1 s after a job ends; settle_s is 2 s.
    time.sleep(3.0)
    dbd_before = _dbd_job_queries(c)
    summary = refine_pass(testing.settings(settings), fetch=fetch, deliver=False)
    # slurmdbd saw exactly one job query for the whole pass.
    assert _dbd_job_queries(c) == dbd_before + 1
    assert summary.ran and summary.errors == [], summary.to_dict()
    assert len(calls) == 1, calls  # one sacct call for all seven runs
    argv = calls[0]
    assert "--duplicates" in argv and "--allusers" in argv and "-j" not in argv
    assert summary.runs_seen >= 7 and not summary.deferred, summary.to_dict()
    refined_keys = {ch["key"] for ch in summary.refined} | set(summary.confirmed)
    assert set(simple.values()) | {keys["requeued"]} <= refined_keys, (summary.to_dict(), keys)
    for name, key in simple.items():
        rep = _report(settings, key)
        cls = rep["classification"]
        assert cls["category"] == EXPECTED[name], (name, at_epilog[name], cls)
        assert rep["accounting"]["run"]["key"] == key
        if at_epilog[name] != EXPECTED[name]:
            assert cls["refined_from"] == at_epilog[name] and cls["refined_at"]
    runs = _by_run(settings, jobs["requeued"])
    first = runs[keys["requeued"]]
    assert first["accounting"]["run"]["state"] == "REQUEUED"
    assert first["classification"]["category"] == "preempted"
    if keys["requeued.1"] in runs:  # present once the epilog keys a requeued run's report right
        assert runs[keys["requeued.1"]]["classification"]["category"] == "success"
    got = {name: _report(settings, k) for name, k in simple.items()}
    assert got["timeout"]["accounting"]["run"]["state"] == "TIMEOUT"
    assert got["cancelled"]["accounting"]["run"]["state"] == "CANCELLED"
    assert got["failed3"]["accounting"]["run"]["exit_code"] == 3
    steps = got["multistep"]["accounting"]["run"]["steps"]
    assert any(s["state"] == "FAILED" and s["exit_code"] == 5 for s in steps), steps
    ev = " ".join(e["text"] for e in got["multistep"]["classification"]["evidence"])
    assert "FAILED exit 5:0" in ev
    # Called again at once (EpilogSlurmctld per job end): no second sacct call.
    for _ in range(5):
        again = refine_pass(testing.settings(settings), fetch=fetch, deliver=False)
        assert not again.ran and len(calls) == 1
    assert _dbd_job_queries(c) == dbd_before + 1


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_why_answers_for_each(ended, name):
    c, jobs, settings = ended
    base, _, run = name.partition(".")
    argv = [sys.executable, "-m", "gcm_checks", "why", jobs[base], "--json"]
    if base == "requeued":
        argv += ["--run", run or "0"]
    env = dict(c.env, PYTHONPATH=REPO)
    res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["found"] and doc["classification"]["category"] == EXPECTED[name], doc
    assert not doc["sources"]["sacct"].startswith("unavailable")
    if name != "requeued.1":
        assert doc["sources"]["report"].endswith("report.json")  # node evidence gcm recorded was used
    text = subprocess.run(argv[:-1] if base != "requeued" else [a for a in argv if a != "--json"], env=env,
                          capture_output=True, text=True, timeout=60, cwd=REPO).stdout
    # The outcome leads; the cause is named for failures only (issue 13).
    assert doc["outcome"]["id"] == OUTCOME[name], doc["outcome"]
    assert doc["outcome"]["headline"] in text and "Next step:" in text
    assert (EXPECTED[name] in text) is doc["outcome"]["failure"]


def test_why_for_a_job_gcm_never_saw_and_unknown_jobs(ended):
    c, jobs, settings = ended
    env = dict(c.env, PYTHONPATH=REPO)
    res = subprocess.run([sys.executable, "-m", "gcm_checks", "why", "99999"], env=env, capture_output=True, text=True,
                         timeout=60, cwd=REPO)
    assert res.returncode == 1 and "not found" in res.stdout
    # A job without a report (the report dir moved away): sacct and the log still answer.
    other = dict(settings, report=dict(settings["report"], report_dir=f"{c.root}/empty-reports"))
    from gcm_checks.accounting.diagnose import explain

    doc = explain(jobs["timeout"], testing.settings(other), sacct_job=lambda j: slurm.sacct_job(j, env=c.env),
                  show_job=lambda j: c.job(j))
    assert doc["classification"]["category"] == "timeout_walltime" and doc["sources"]["report"] == "none"


def test_failures_over_the_cluster(ended):
    c, jobs, settings = ended
    env = dict(c.env, PYTHONPATH=REPO)
    res = subprocess.run([sys.executable, "-m", "gcm_checks", "failures", "--since", "1h", "--json"], env=env,
                         capture_output=True, text=True, timeout=60, cwd=REPO)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    cats = doc["by_category"]
    for cat in ("timeout_walltime", "software_exception"):
        assert cats.get(cat, {}).get("count", 0) >= 1, cats
    # failures only: a scancel, a requeue and a success are not failures
    assert not {"cancelled_user", "preempted", "success"} & set(cats), cats
    assert doc["sacct_calls"] == 1
    res = subprocess.run([sys.executable, "-m", "gcm_checks", "failures", "--since", "1h", "--partition", "nosuch"],
                         env=env, capture_output=True, text=True, timeout=60, cwd=REPO)
    assert res.returncode == 0 and "0 failed of 0" in res.stdout
