"""One judge for a stored report: the refinement pass (what it writes into the
report) and ``failures`` (how it counts a report not refined yet) give the same
verdict for the same report and the same sacct record."""

from __future__ import annotations

import pytest

from gcm_checks.accounting import refine, trends
from gcm_checks.accounting.judge import judge_report
from gcm_checks.accounting.records import group_rows
from gcm_checks.classify import ClassifyInput, LogText, classify
from gcm_checks.report import write_report
from gcm_checks.report.build import build_report
from gcm_checks.report.model import JobInfo
from test_accounting_refine import LOGS, ROWS, T_END, CountingFetch, settings_for, stored

# An in-window XID event as the epilog stores it (gcm_checks.classify's ``xids``).
XID79 = {"xid": 79, "gpu_index": 3, "pci_bus_id": "0000:3b:00.0", "severity": "fail", "responsibility": "hardware",
         "name": "GPU has fallen off the bus", "line": "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."}
NCCL = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error\n"
# key -> (epilog's exit status, job log, node1's evidence): each job of the
# sacct fixture with what an epilog could have stored for it.
JOBS = {
    "1": ("0:0", "", {}),
    "2": ("3:0", NCCL, {}),
    "3": ("0:0", LOGS["3"], {"xids": [XID79]}),  # a failed step, and an XID only the node evidence has
    "4": ("0:0", LOGS["4"], {}),
    "5": ("0:0", LOGS["5"], {}),
    "6": ("0:0", "", {}),
}


def write_epilog_report(settings, key):
    exit_status, log, evidence = JOBS[key]
    code, _, sig = exit_status.partition(":")
    cls = classify(ClassifyInput(logs=[LogText("stdout", log)] if log else [], exit_code=int(code), signal=int(sig)))
    logs = [{"name": "stdout", "path": f"/scratch/{key}.out", "size": len(log), "shown_bytes": len(log),
             "truncated": False, "text": log, "note": ""}] if log else []
    job = JobInfo(job_id=key, user="root", uid=0, gid=0, name="wrap", nodes=("node1",), exit_status=exit_status,
                  state="COMPLETING")
    write_report(build_report(job, {"node1": {"node": "node1", "evidence": evidence}}, classification=cls.to_dict(),
                              logs=logs, generated_by="node1", now=T_END), settings)


def verdict(c):
    return (c["category"], c["responsibility"], c["rule"])


def test_refine_and_failures_judge_the_same_report_alike(tmp_path):
    s = settings_for(tmp_path)
    for key in JOBS:
        write_epilog_report(s, key)
    # What `failures` reads for a run whose report is not refined yet.
    unrefined = {key: stored(s, key) for key in JOBS}
    records = {r.key: r for r in group_rows(ROWS)}
    counted = {key: trends.classify_for_trends(records[key], unrefined[key]) for key in JOBS}

    refine.refine_pass(s, now=T_END + 60, fetch=CountingFetch(ROWS), deliver=False)
    written = {key: stored(s, key)["classification"] for key in JOBS}

    for key in JOBS:
        assert counted[key]["source"] == "report"
        assert verdict(counted[key]) == verdict(written[key]), key
        assert verdict(judge_report(records[key], unrefined[key]).to_dict()) == verdict(written[key]), key
    # Not vacuous: the runs are judged differently from each other and from
    # what the epilog wrote, and the node evidence is read (job 3's XID).
    assert len({verdict(c) for c in written.values()}) >= 4
    assert any(unrefined[k]["classification"]["category"] != written[k]["category"] for k in JOBS)
    assert written["3"]["category"] == "gpu_hardware", written["3"]


@pytest.mark.parametrize("key", sorted(JOBS))
def test_a_refined_report_is_counted_as_it_says(tmp_path, key):
    s = settings_for(tmp_path)
    write_epilog_report(s, key)
    refine.refine_pass(s, now=T_END + 60, fetch=CountingFetch(ROWS), deliver=False)
    refined = stored(s, key)
    record = {r.key: r for r in group_rows(ROWS)}[key]
    assert verdict(trends.classify_for_trends(record, refined)) == verdict(refined["classification"])
