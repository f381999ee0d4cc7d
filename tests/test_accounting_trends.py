"""failures: aggregation by category, responsibility and suspect node."""

from __future__ import annotations

from pathlib import Path

import pytest

from gcm_checks import slurm, testing
from gcm_checks.accounting import trends
from gcm_checks.accounting.diagnose import failure_trends, parse_since
from gcm_checks.accounting.judge import classify_run
from gcm_checks.accounting.records import group_rows, parse_time

FIX = Path(__file__).parent / "fixtures" / "accounting"
FIELDS = (FIX / "sacct-22.05-mixed.fields").read_text().strip().split(",")
ROWS = slurm.parse_sacct((FIX / "sacct-22.05-mixed.txt").read_text(), FIELDS)


def run(key, cat, resp, nodes, failed=True, source="report"):
    return {"key": key, "category": cat, "responsibility": resp, "nodes": nodes, "failed": failed, "source": source}


def week():
    """11 nccl_comm failures, node gpu07 in 9 of them; noise elsewhere."""
    runs = []
    for i in range(11):
        nodes = ["gpu07", f"gpu{10 + i}"] if i < 9 else [f"gpu{30 + i}", f"gpu{40 + i}"]
        runs.append(run(f"n{i}", "nccl_comm", "infrastructure", nodes))
    runs.append(run("g1", "gpu_hardware", "infrastructure", ["gpu03"]))
    runs.append(run("g2", "gpu_hardware", "infrastructure", ["gpu03"]))
    runs.append(run("u1", "gpu_oom", "user", ["gpu07"]))  # user failures never make a node suspect
    runs.append(run("u2", "gpu_oom", "user", ["gpu07"], source="sacct"))
    runs.append(run("t1", "timeout_walltime", "scheduler", ["gpu09"]))
    runs += [run(f"ok{i}", "success", "unknown", ["gpu07"], failed=False) for i in range(5)]
    return runs


def test_aggregate_counts_and_suspects():
    doc = trends.aggregate(week())
    assert doc["runs"] == 21 and doc["failed"] == 16
    assert doc["by_category"]["nccl_comm"]["count"] == 11
    assert doc["by_category"]["gpu_oom"] == {"count": 2, "responsibility": "user", "from_reports": 1, "from_sacct": 1,
                                            "examples": ["u1", "u2"]}
    assert doc["by_responsibility"] == {"infrastructure": 13, "user": 2, "scheduler": 1}
    assert list(doc["by_category"])[0] == "nccl_comm"
    top = doc["suspect_nodes"][0]
    assert top["node"] == "gpu07" and top["infra_failures"] == 9 and top["of"] == 13
    assert top["by_category"] == {"nccl_comm": {"count": 9, "of": 11}}
    assert doc["suspect_nodes"][1]["node"] == "gpu03"
    assert doc["suspect_nodes"][1]["by_category"] == {"gpu_hardware": {"count": 2, "of": 2}}
    # Nodes seen in only one infrastructure failure are not suspects.
    assert {s["node"] for s in doc["suspect_nodes"]} == {"gpu07", "gpu03"}
    text = "\n".join(trends.render(dict(doc, window={"since": "a", "until": "b"})))
    assert "gpu07" in text and "9/13" in text and "nccl_comm 9/11" in text


@pytest.mark.parametrize("runs,suspects", [
    ([], []),
    ([run("a", "nccl_comm", "infrastructure", ["n1"])], []),
    ([run("a", "nccl_comm", "infrastructure", ["n1", "n1"]), run("b", "nccl_comm", "infrastructure", ["n1"])], ["n1"]),
    ([run("a", "gpu_oom", "user", ["n1"]), run("b", "gpu_oom", "user", ["n1"])], []),
])
def test_suspect_table(runs, suspects):
    assert [s["node"] for s in trends.aggregate(runs)["suspect_nodes"]] == suspects


def test_stored_report_wins_over_sacct_fields():
    rec = {r.key: r for r in group_rows(ROWS)}["2"]
    refined = {"classification": {"category": "nccl_comm", "responsibility": "infrastructure"}, "accounting": {"source": "sacct"}}
    from_report = trends.classify_for_trends(rec, refined)
    assert from_report["source"] == "report" and from_report["category"] == "nccl_comm"
    # Not refined yet: judged again with the report's evidence, which still names NCCL.
    line = "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system error"
    epilog = {"classification": {"category": "nccl_comm", "responsibility": "infrastructure",
                                 "evidence": [{"source": "stderr", "line_no": 4, "text": line}]}}
    again = trends.classify_for_trends(rec, epilog)
    assert again["source"] == "report" and again["category"] == "nccl_comm", again
    alone = trends.classify_for_trends(rec, None)
    assert alone["source"] == "sacct" and alone["category"] == "unknown"


@pytest.mark.parametrize("text,delta", [("7d", 7 * 86400), ("12h", 43200), ("30m", 1800), ("2w", 14 * 86400), ("90s", 90)])
def test_parse_since_relative(text, delta):
    assert parse_since(text, 1_000_000.0) == 1_000_000.0 - delta


def test_parse_since_absolute_and_bad():
    assert parse_since("2026-11-30T01:55:38", 0) == parse_time("2026-11-30T01:55:38")
    with pytest.raises(ValueError):
        parse_since("last tuesday", 0)


def test_failure_trends_is_one_sacct_call_and_marks_sources(tmp_path):
    calls = []

    def fetch(**kw):
        calls.append(kw)
        return ROWS

    s = testing.settings(state_dir=str(tmp_path), report={"report_dir": str(tmp_path / "r")})
    since, until = parse_time("2026-11-30T00:00:00"), parse_time("2026-11-30T03:00:00")
    doc = failure_trends(s, since=since, until=until, partition="debug", fetch=fetch)
    assert len(calls) == 1 and calls[0]["partition"] == "debug"
    # Failures only: the FAILED job, the failed step, the time limit. The
    # scancel, the requeued run and the successes are not failures.
    assert doc["runs"] == 7 and doc["failed"] == 3
    assert doc["by_category"]["timeout_walltime"]["from_sacct"] == 1
    assert not {"success", "cancelled_user", "preempted"} & set(doc["by_category"])
    assert doc["window"]["partition"] == "debug" and doc["sacct_calls"] == 1


def test_a_failed_step_the_job_row_does_not_show_yet_is_never_counted_as_success():
    """slurmdbd can record a step's failure before the job's DerivedExitCode
    (seen on the test cluster: COMPLETED, 0:0, step 5:0). The outcome calls
    it failed; the category must not say success."""
    t0 = 1_800_000_000.0
    t = slurm.sacct_time(t0)
    job = {"JobID": "6", "JobIDRaw": "6", "JobName": "x", "User": "u", "UID": "1", "Partition": "debug",
           "State": "COMPLETED", "ExitCode": "0:0", "DerivedExitCode": "0:0", "Reason": "None", "Elapsed": "00:00:01",
           "Timelimit": "01:00:00", "MaxRSS": "", "NodeList": "node1", "Submit": t, "Start": t, "End": t, "WorkDir": "/tmp"}
    step = dict(job, JobID="6.0", JobIDRaw="6.0", JobName="bash", State="FAILED", ExitCode="5:0", DerivedExitCode="")
    [rec] = group_rows([job, step])
    assert classify_run(rec).rule == "sacct.step_failed"
    doc = failure_trends(None, since=t0 - 10, until=t0 + 10, fetch=lambda **kw: [job, step])
    assert set(doc["by_category"]) == {"unknown"} and doc["failed"] == 1


def test_an_unrefined_report_saying_success_does_not_name_a_failed_run(tmp_path):
    """The epilog saw the batch script exit 0 with nothing wrong in its log and
    wrote "success"; accounting then shows a step that failed (srun's stderr
    went elsewhere). Until the refinement pass rewrites that report, failures
    must judge the run as `why` does - the record with the report's logs -
    and not count a "success" failure (the outcome says failed)."""
    from gcm_checks.classify import ClassifyInput, LogText, classify
    from gcm_checks.report import write_report
    from gcm_checks.report.build import build_report
    from gcm_checks.report.model import JobInfo

    t0 = 1_800_000_000.0
    t = slurm.sacct_time(t0)
    job = {"JobID": "6", "JobIDRaw": "6", "JobName": "x", "User": "root", "UID": "0", "Partition": "debug",
           "State": "COMPLETED", "ExitCode": "0:0", "DerivedExitCode": "5:0", "Reason": "None", "Elapsed": "00:00:01",
           "Timelimit": "01:00:00", "MaxRSS": "", "NodeList": "node1", "Submit": t, "Start": t, "End": t, "WorkDir": "/tmp"}
    step = dict(job, JobID="6.1", JobIDRaw="6.1", JobName="bash", State="FAILED", ExitCode="5:0", DerivedExitCode="")
    s = testing.settings(state_dir=str(tmp_path), report={"report_dir": str(tmp_path / "r"), "spool_dir": str(tmp_path / "s")})
    log = "loading shards\nbatch script carries on\n"
    epilog_cls = classify(ClassifyInput(logs=[LogText("stdout", log)], exit_code=0, signal=0)).to_dict()
    assert epilog_cls["category"] == "success"  # all the epilog could know
    info = JobInfo(job_id="6", user="root", uid=0, gid=0, name="x", nodes=("node1",), exit_status="0:0",
                   state="COMPLETING", restart_count=0)
    logs = [{"name": "stdout", "path": "/scratch/6.out", "size": len(log), "shown_bytes": len(log),
             "truncated": False, "text": log, "note": ""}]
    write_report(build_report(info, {"node1": {"node": "node1", "evidence": {}}}, classification=epilog_cls,
                              logs=logs, generated_by="node1", now=t0 + 1), s)
    doc = failure_trends(s, since=t0 - 10, until=t0 + 10, fetch=lambda **kw: [job, step])
    assert doc["failed"] == 1 and set(doc["by_category"]) == {"unknown"}, doc["by_category"]
    assert doc["by_category"]["unknown"]["from_reports"] == 1  # judged with the report's logs, not sacct alone
