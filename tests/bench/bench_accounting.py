"""Accounting benchmarks: sacct parsing, one refinement pass over many job
ends, the cost of a pass that is not due (EpilogSlurmctld calls it per job),
failure trends over a large window, and ``failures`` and a ``refine`` pass at
fleet scale: a week of a 4,096-node cluster, 1,000,000 sacct rows (30%
multi-node) printed by a stand-in ``sacct`` (tests/bench/fake_sacct.py),
streamed (issue 17).

Run:  python tests/bench/bench_accounting.py
  or  GCM_BENCH=1 python -m pytest tests/bench/bench_accounting.py -s
Numbers go in docs/benchmarks.md, section "Accounting".
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import pytest

from gcm_checks import slurm, testing
from gcm_checks.accounting import refine
from gcm_checks.accounting.diagnose import failure_trends
from gcm_checks.accounting.records import group_rows

FIELDS = list(slurm.SACCT_FIELDS)
T0 = 1_800_000_000.0
STATES = [("COMPLETED", "0:0", "0:0"), ("FAILED", "3:0", "0:0"), ("TIMEOUT", "0:0", "0:0"),
          ("CANCELLED by 1001", "0:0", "0:0"), ("COMPLETED", "0:0", "5:0"), ("OUT_OF_MEMORY", "0:125", "0:0"),
          ("NODE_FAIL", "0:0", "0:0")]


def sacct_text(n_jobs: int) -> str:
    lines = []
    for i in range(n_jobs):
        st, ec, dec = STATES[i % len(STATES)]
        end = slurm.sacct_time(T0 + i % 3000)
        start = slurm.sacct_time(T0 - 600)
        node = f"gpu{i % 97:03d}"
        lines.append(f"{i}|{i}|train{i}|alice|1001|gpu|{st}|{ec}|{dec}|None|00:10:00|01:00:00||{node}|{start}|{start}|{end}|/home/alice")
        lines.append(f"{i}.batch|{i}.batch|batch||||{st.split()[0]}|{ec}|||00:10:00||1234567K|{node}|{start}|{start}|{end}|")
        lines.append(f"{i}.extern|{i}.extern|extern||||COMPLETED|0:0|||00:10:00||1000K|{node}|{start}|{start}|{end}|")
        lines.append(f"{i}.0|{i}.0|python||||{'FAILED' if dec != '0:0' else 'COMPLETED'}|{dec}|||00:09:00||7654321K|{node}|{start}|{start}|{end}|")
    return "\n".join(lines) + "\n"


def bench_parse(n_jobs: int = 20_000) -> dict:
    text = sacct_text(n_jobs)
    t = time.perf_counter()
    recs = group_rows(slurm.parse_sacct(text, FIELDS))
    dt = time.perf_counter() - t
    assert len(recs) == n_jobs
    return {"rows": n_jobs * 4, "jobs": n_jobs, "seconds": round(dt, 3), "rows_per_s": int(n_jobs * 4 / dt)}


def bench_pass(n_jobs: int = 2_000) -> dict:
    from gcm_checks.report import write_report
    from gcm_checks.report.build import build_report
    from gcm_checks.report.model import JobInfo

    d = tempfile.mkdtemp(prefix="gcm-bench-acct-")
    try:
        s = testing.settings({"state_dir": f"{d}/st", "report": {"report_dir": f"{d}/r", "outbox_dir": f"{d}/o"},
                              "accounting": {"interval_s": 300.0, "settle_s": 0.0, "lookback_s": 86400.0}})
        for i in range(n_jobs):
            job = JobInfo(job_id=str(i), user="alice", uid=1001, nodes=(f"gpu{i % 97:03d}",), exit_status="0:0",
                          state="COMPLETING")
            log = "step 100/1000 loss=2.1\n" * 200
            write_report(build_report(job, {}, classification={"category": "success"},
                                      logs=[{"name": "stdout", "path": "/x", "size": len(log), "shown_bytes": len(log),
                                             "truncated": False, "text": log, "note": ""}], now=T0), s)
        rows = slurm.parse_sacct(sacct_text(n_jobs), FIELDS)
        calls = []

        def fetch(since, until):
            calls.append(1)
            return rows

        t = time.perf_counter()
        summary = refine.refine_pass(s, now=T0 + 4000, fetch=fetch, deliver=False)
        dt = time.perf_counter() - t
        assert summary.ran and len(calls) == 1 and not summary.errors, summary.errors[:3]
        t = time.perf_counter()
        k = 2000
        for j in range(k):
            assert not refine.refine_pass(s, now=T0 + 4001 + j * 0.01, fetch=fetch, deliver=False).ran
        idle = (time.perf_counter() - t) / k
        return {"jobs_ended": n_jobs, "sacct_calls": len(calls), "refined": len(summary.refined),
                "confirmed": len(summary.confirmed), "pass_s": round(dt, 2), "ms_per_job": round(dt / n_jobs * 1000, 2),
                "not_due_call_us": int(idle * 1e6)}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def bench_trends(n_jobs: int = 20_000) -> dict:
    rows = slurm.parse_sacct(sacct_text(n_jobs), FIELDS)
    t = time.perf_counter()
    doc = failure_trends(None, since=T0 - 10, until=T0 + 4000, fetch=lambda **kw: rows)
    dt = time.perf_counter() - t
    return {"jobs": n_jobs, "failed": doc["failed"], "seconds": round(dt, 2), "suspects": len(doc["suspect_nodes"])}


FLEET_CHILD = r"""
import json, os, sys, tempfile, time
from gcm_checks import testing
from gcm_checks.accounting.diagnose import failure_trends
d = tempfile.mkdtemp(prefix="gcm-bench-fleet-")
s = testing.settings({"state_dir": d + "/st", "report": {"report_dir": d + "/r", "outbox_dir": d + "/o"},
                      "accounting": {"sacct": sys.argv[1], "timeout_s": 600.0}})
t0 = 1_800_000_000.0
t = time.perf_counter()
doc = failure_trends(s, since=t0 - 3600, until=t0 + 700000)
dt = round(time.perf_counter() - t, 2)
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across execve, so it would
# report the forking parent's size.
hwm = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
print(json.dumps({"runs": doc["runs"], "failed": doc["failed"], "seconds": dt, "peak_rss_mb": hwm // 1024,
                  "suspects": len(doc["suspect_nodes"]), "notes": doc.get("notes")}))
"""


def bench_fleet_failures(rows: int = 1_000_000) -> dict:
    """``failures --since 7d`` over ``rows`` sacct rows, in a fresh process so
    its peak RSS is the command's own (the stand-in sacct is another process)."""
    import json
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, GCM_FAKE_SACCT_ROWS=str(rows))
    out = subprocess.run([sys.executable, "-c", FLEET_CHILD, os.path.join(here, "fake_sacct.py")], env=env,
                         capture_output=True, text=True, timeout=900, check=True).stdout
    doc = json.loads(out.strip().splitlines()[-1])
    doc["rows"] = rows
    return doc


REFINE_CHILD = r"""
import json, os, sys, tempfile, time
from gcm_checks import testing
from gcm_checks.accounting import refine
from gcm_checks.report import write_report
from gcm_checks.report.build import build_report
from gcm_checks.report.model import JobInfo
d = tempfile.mkdtemp(prefix="gcm-bench-refine-")
t0 = 1_800_000_000.0
s = testing.settings({"state_dir": d + "/st", "report": {"report_dir": d + "/r", "outbox_dir": d + "/o", "spool_dir": d + "/sp"},
                      "accounting": {"sacct": sys.argv[1], "timeout_s": 600.0, "lookback_s": 8 * 86400.0, "settle_s": 0.0}})
# Reports for every 250th job (this node's share), so the pass also refines.
n_reports = int(sys.argv[2])
for i in range(0, n_reports * 250, 250):
    write_report(build_report(JobInfo(job_id=str(i), user="alice", uid=1001, nodes=("gpu0000",), exit_status="0:0",
                                      state="COMPLETING"), {}, classification={"category": "success"}, now=t0), s)
t = time.perf_counter()
p = refine.refine_pass(s, now=t0 + 8 * 86400.0, deliver=False)
dt = round(time.perf_counter() - t, 2)
hwm = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
st = os.path.getsize(s.accounting_state_file)
print(json.dumps({"runs": p.runs_seen, "refined": len(p.refined), "confirmed": len(p.confirmed),
                  "no_report": p.no_report_count, "errors": p.errors[:3], "seconds": dt, "peak_rss_mb": hwm // 1024,
                  "state_bytes": st, "reports": n_reports}))
"""


def bench_fleet_refine(rows: int = 1_000_000, reports: int = 1000) -> dict:
    """One refinement pass over ``rows`` sacct rows (a week's window), in a
    fresh process, with ``reports`` stored reports to refine."""
    import json
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, GCM_FAKE_SACCT_ROWS=str(rows))
    out = subprocess.run([sys.executable, "-c", REFINE_CHILD, os.path.join(here, "fake_sacct.py"), str(reports)],
                         env=env, capture_output=True, text=True, timeout=900, check=True).stdout
    doc = json.loads(out.strip().splitlines()[-1])
    doc["rows"] = rows
    return doc


@pytest.mark.bench
@pytest.mark.skipif(os.environ.get("GCM_BENCH") != "1", reason="benchmarks run with GCM_BENCH=1")
def test_bench_accounting():
    p = bench_parse()
    r = bench_pass()
    f = bench_trends()
    fleet = bench_fleet_failures()
    fleet_refine = bench_fleet_refine()
    print(p, r, f, fleet, fleet_refine)
    assert r["sacct_calls"] == 1
    assert fleet["runs"] == 250_000 and fleet["peak_rss_mb"] <= 300
    assert fleet_refine["runs"] == 250_000 and not fleet_refine["errors"] and fleet_refine["peak_rss_mb"] <= 300


if __name__ == "__main__":
    print("parse+group:", bench_parse())
    print("refine pass:", bench_pass())
    print("failure trends:", bench_trends())
    print("failures at fleet scale:", bench_fleet_failures())
    print("refine pass at fleet scale:", bench_fleet_refine())
