"""One report per job: spool, claim, assembly, formats, budgets, root safety."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import tempfile

import pytest

from gcm_checks import report, testing
from gcm_checks.report import build, render, spool
from gcm_checks.report.model import JobInfo
from gcm_checks.result import failed, passed

UID = GID = 4242
CLS = {
    "category": "gpu_hardware",
    "responsibility": "infrastructure",
    "confidence": 0.95,
    "rule": "xid.79",
    "evidence": [{"source": "kernel", "line_no": 12, "text": "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."}],
    "sentence": "GPU 3 on node2 fell off the bus; not your code.",
}


@pytest.fixture
def base():
    d = tempfile.mkdtemp(prefix="gcm-report-", dir="/tmp")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def settings_for(base: str, **report_kw):
    r = {"spool_dir": f"{base}/spool", "report_dir": f"{base}/reports", "outbox_dir": f"{base}/outbox"}
    r.update(report_kw)
    return testing.settings(report=r, notify={"channels": []})


def user_dir(base: str) -> str:
    d = os.path.join(base, "home")
    os.makedirs(d, exist_ok=True)
    if os.geteuid() == 0:
        os.chown(d, UID, GID)
    return d


def user_file(path: str, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    if os.geteuid() == 0:
        os.chown(path, UID, GID)
    return path


def make_job(base: str, nodes=("node1",), **kw) -> JobInfo:
    wd = user_dir(base)
    uid = UID if os.geteuid() == 0 else os.geteuid()
    d = dict(job_id="77", user="alice", uid=uid, gid=uid, name="train", partition="gpu", cluster="c1",
             nodes=tuple(nodes), start=1000.0, end=4723.0, exit_status="1:0", state="FAILED", work_dir=wd,
             stdout=os.path.join(wd, "slurm-77.out"))
    d.update(kw)
    return JobInfo(**d)


BAD_NODE = {
    "results": [passed("gpu.count", "8 GPUs"), failed("gpu.ecc.uncorrectable", "2 uncorrectable ECC errors", "GPU 3 (0000:3b:00.0)")],
    "xids": [{"code": 79, "gpu": "GPU 3", "name": "GPU has fallen off the bus"}],
    "drains": [{"reason": "gcm: xid 79 on GPU 3"}],
}


def test_single_node_report_written_in_three_formats(base):
    s = settings_for(base)
    job = make_job(base)
    user_file(job.stdout, b"step 1\nstep 2\nRuntimeError: CUDA error: unspecified launch failure\n")
    report.contribute(job, "node1", BAD_NODE, s)
    done = report.assemble(job, s, node="node1", classification=CLS)
    assert done is not None
    doc = json.load(open(done.paths["report.json"]))
    assert build.validate(doc) == []
    assert (doc["version"], doc["job"]["job_id"], doc["classification"]["category"]) == (1, "77", "gpu_hardware")
    assert doc["outcome"]["failed"] and doc["outcome"]["nodes_drained"] == ["node1"]
    txt = open(done.paths["report.txt"]).read()
    for needle in ("gpu_hardware", "fell off the bus", "GPU 3 on node1 raised XID 79", "failed gpu.ecc.uncorrectable",
                   "node1 drained: gcm: xid 79", "CUDA error", "1h02m03s", "Failed: GPU hardware fault (not your code)"):
        assert needle in txt
    assert "PASS" not in txt  # passing checks are noise in a report
    assert "?" not in txt.split("\n--- ")[0]  # no empty rows
    admin = render.to_text(doc, audience="admin")
    assert "FAIL gpu.ecc.uncorrectable" in admin and "XID 79 on GPU 3" in admin
    assert "gpu_hardware" in open(done.paths["report.html"]).read()
    # Assembling again is refused: exactly one report per job.
    assert report.assemble(job, s, node="node1", classification=CLS) is None


def test_multi_node_last_contributor_assembles(base):
    s = settings_for(base)
    job = make_job(base, nodes=("node1", "node2"))
    report.contribute(job, "node1", {"results": [passed("gpu.count", "ok")]}, s)
    assert report.assemble(job, s, node="node1") is None  # node2 still missing
    report.contribute(job, "node2", BAD_NODE, s)
    done = report.assemble(job, s, node="node2", classification=CLS)
    assert done is not None and done.report["missing_nodes"] == []
    by_node = {n["node"]: n for n in done.report["nodes"]}
    assert by_node["node2"]["evidence"]["xids"][0]["code"] == 79
    assert by_node["node1"]["contributed"] is True


def _race(args):
    s, job_d, node = args
    job = JobInfo.from_dict(job_d)
    report.contribute(job, node, {"results": []}, s)
    return report.assemble(job, s, node=node) is not None


@pytest.mark.parametrize("n_nodes", [2, 8])
def test_exactly_one_node_assembles_under_a_race(base, n_nodes):
    s = settings_for(base)
    nodes = tuple(f"n{i}" for i in range(n_nodes))
    for trial in range(3):
        job = make_job(base, nodes=nodes, job_id=f"9{trial}")
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(n_nodes) as pool:
            won = pool.map(_race, [(s, job.to_dict(), n) for n in nodes])
        assert sum(won) == 1, won
        assert len(os.listdir(os.path.join(base, "reports"))) == trial + 1


def test_missing_node_is_assembled_by_sweep_after_timeout(base):
    s = settings_for(base, gather_timeout_s=60)
    job = make_job(base, nodes=("node1", "node2"))
    report.contribute(job, "node1", BAD_NODE, s)
    t0 = json.load(open(os.path.join(base, "spool", "77", "nodes", "node1.json")))["at"]
    assert report.sweep(s, node="admin", now=t0 + 30) == []
    assert report.sweep(s, node="admin", now=t0 + 61) == ["77"]
    doc = json.load(open(report.report_paths(s, "77")["report.json"]))
    assert doc["missing_nodes"] == ["node2"]
    assert any("node2" in n for n in doc["notes"])
    assert doc["generated_by"] == "admin"
    assert report.sweep(s, node="admin", now=t0 + 120) == []  # never twice


def test_requeued_job_gets_its_own_report(base):
    s = settings_for(base)
    for restart in (0, 1):
        job = make_job(base, restart_count=restart)
        report.contribute(job, "node1", {}, s)
        assert report.assemble(job, s, node="node1") is not None
    assert sorted(os.listdir(os.path.join(base, "reports"))) == ["77", "77.1"]


@pytest.mark.parametrize(
    "size,per_file,total,expect_note",
    [
        (100, 1024, 4096, ""),
        (200 * 1024, 1024, 4096, "stdout: last 1 KiB of 200 KiB shown; full log at "),
        (3 * 2**20, 64 * 1024, 256 * 1024, "stdout: last 64 KiB of 3 MiB shown; full log at "),
    ],
)
def test_log_budget_is_said_out_loud(base, size, per_file, total, expect_note):
    s = settings_for(base, log_tail_bytes=per_file, log_total_bytes=total)
    job = make_job(base)
    user_file(job.stdout, ((b"x" * 99 + b"\n") * (size // 100 + 1))[:size])
    logs = build.collect_logs(job, s.report)
    assert logs[0]["size"] == size
    assert logs[0]["shown_bytes"] <= per_file
    assert logs[0]["truncated"] is bool(expect_note)
    if expect_note:
        assert logs[0]["note"] == expect_note + job.stdout
        assert expect_note in render.to_text(build.build_report(job, {}, logs=logs))


def test_total_budget_spent_names_the_file(base):
    s = settings_for(base, log_tail_bytes=1000, log_total_bytes=1000)
    job = make_job(base, stderr=os.path.join(user_dir(base), "err.log"))
    user_file(job.stdout, b"o" * 5000)
    user_file(job.stderr, b"e" * 5000)
    logs = build.collect_logs(job, s.report)
    assert logs[0]["shown_bytes"] == 1000
    assert logs[1]["shown_bytes"] == 0
    assert "budget spent" in logs[1]["note"] and job.stderr in logs[1]["note"]


HOSTILE = b"\x1b[2J\x1b]52;c;cm0gLXJm\x07<script>alert('x')</script><img src=x onerror=alert(1)> & $(rm -rf /) `id`\n"


def test_hostile_log_line_is_escaped_everywhere(base):
    s = settings_for(base)
    job = make_job(base, name="<b>evil</b>\nBcc: victim@x.org")
    user_file(job.stdout, HOSTILE)
    report.contribute(job, "node1", {"xids": [{"code": 13, "text": "<script>xid</script>"}]}, s)
    done = report.assemble(job, s, node="node1", classification={**CLS, "evidence": [{"source": "stdout", "line_no": 1, "text": HOSTILE.decode()}]})
    html_body = open(done.paths["report.html"]).read()
    assert "<script>" not in html_body and "<img" not in html_body
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html_body
    for name in ("report.html", "report.txt", "report.json"):
        body = open(done.paths[name], "rb").read()
        assert b"\x1b" not in body and b"\x07" not in body, name
    subj = render.subject(done.report)
    assert "\n" not in subj and "Bcc: victim" in subj  # kept as text, not as a header


def test_classifier_hook_runs_on_assembler_and_its_failure_is_noted(base):
    s = settings_for(base)
    job = make_job(base)
    user_file(job.stdout, b"Traceback...\nValueError: bad input\n")
    seen = {}

    def classifier(j, logs, contribs):
        seen["text"] = logs[0]["text"]
        return {"category": "software_exception", "responsibility": "user", "confidence": 0.8, "rule": "py.traceback", "evidence": [], "sentence": "Your program raised ValueError."}

    report.contribute(job, "node1", {}, s)
    done = report.assemble(job, s, node="node1", classifier=classifier)
    assert "ValueError" in seen["text"]
    assert done.report["classification"]["category"] == "software_exception"

    job2 = make_job(base, job_id="78")
    report.contribute(job2, "node1", {}, s)
    done2 = report.assemble(job2, s, node="node1", classifier=lambda *a: 1 / 0)
    assert done2.report["classification"] is None
    assert any("classifier failed: ZeroDivisionError" in n for n in done2.report["notes"])


root_only = pytest.mark.skipif(os.geteuid() != 0, reason="root-safety tests need root")


@root_only
def test_stdout_symlink_to_root_only_file_never_reaches_report(base):
    s = settings_for(base, copy_to_workdir=True)
    secret = os.path.join(base, "shadow")
    with open(secret, "wb") as f:
        f.write(b"root:$6$topsecrethash:19000::::::\n")
    os.chmod(secret, 0o600)
    job = make_job(base)
    os.symlink(secret, job.stdout)
    os.lchown(job.stdout, UID, GID)
    report.contribute(job, "node1", BAD_NODE, s)
    done = report.assemble(job, s, node="node1", classification=CLS)
    for p in list(done.paths.values()) + [done.user_copy]:
        assert b"topsecrethash" not in open(p, "rb").read()
    assert "not read" in done.report["logs"][0]["note"]
    assert os.stat(done.user_copy).st_uid == UID


@root_only
def test_workdir_symlinked_to_etc_gets_nothing(base):
    s = settings_for(base, copy_to_workdir=True)
    link = os.path.join(user_dir(base), "work")
    os.symlink("/etc", link)
    os.lchown(link, UID, GID)
    before = set(os.listdir("/etc"))
    job = make_job(base, work_dir=link)
    report.contribute(job, "node1", {}, s)
    done = report.assemble(job, s, node="node1")
    assert done.user_copy == "" and "not written" in done.user_copy_error
    assert set(os.listdir("/etc")) == before
    assert os.path.exists(done.paths["report.json"])  # the admin copy is still there


def test_assemble_and_notify_never_raises(base):
    s = testing.settings(report=settings_for(base).report.as_dict(),
                         notify={"channels": [{"name": "x", "type": "smtp", "bogus": 1}]})  # broken channel
    job = make_job(base)
    out = report.assemble_and_notify(job, s, node="node1", budget_s=1.0, evidence={})
    assert "error" in out and "bogus" in out["error"]
    # The report itself was written before notification was even considered.
    assert out["assembled"] is True and os.path.exists(out["paths"]["report.json"])


def test_spool_names_cannot_escape(base):
    assert spool.safe_name("../../etc") == "_.._etc"
    assert spool.safe_name("") == "_"
    assert "/" not in spool.safe_name("a/b")


def test_assembler_that_died_after_claiming_is_retried_once(base):
    import time

    s = settings_for(base)
    job = make_job(base)
    report.contribute(job, "node1", BAD_NODE, s)
    assert spool.claim(os.path.join(base, "spool"), job.key, "node1")  # ...and then the node died
    assert report.sweep(s, node="admin", now=time.time() + 60) == []  # maybe still working
    assert report.sweep(s, node="admin", now=time.time() + 1000) == ["77"]
    assert os.path.exists(report.report_paths(s, "77")["report.json"])
    assert report.sweep(s, node="admin", now=time.time() + 5000) == []  # assembled: never again


@root_only
def test_unknown_job_uid_means_logs_are_not_read_as_root(base):
    s = settings_for(base)
    job = make_job(base, uid=None, gid=None)
    user_file(job.stdout, b"anything\n")
    logs = build.collect_logs(job, s.report)
    assert logs[0]["text"] == "" and "job uid unknown" in logs[0]["note"]



def test_prune_removes_only_assembled_old_job_dirs(base):
    s = settings_for(base)
    sp = os.path.join(base, "spool")
    done_job, open_job = make_job(base, job_id="1"), make_job(base, job_id="2", nodes=("a", "b"))
    report.contribute(done_job, "node1", {}, s)
    report.assemble(done_job, s, node="node1")
    report.contribute(open_job, "a", {}, s)
    assert spool.prune(sp, 3600) == 0  # too recent
    os.utime(os.path.join(sp, "1", "assembled"), (1000, 1000))
    assert spool.prune(sp, 3600) == 1
    assert sorted(os.listdir(sp)) == ["2"]  # never a job still gathering evidence


@pytest.mark.parametrize(
    "exit_status,category,drains,failed",
    [
        ("0:0", None, [], False),
        ("0:0", "success", [], False),
        ("0:0", "timeout_walltime", [], True),  # COMPLETING + exit 0 in the epilog
        ("0:0", "cancelled_user", [], False),
        ("0:0", "unknown", [{"reason": "gcm: xid 79"}], True),
        ("2:0", "unknown", [], True),
    ],
)
def test_outcome_failed(base, exit_status, category, drains, failed):
    job = make_job(base, exit_status=exit_status, state="COMPLETING")
    cls = {"category": category} if category else None
    doc = build.build_report(job, {"node1": {"evidence": {"drains": drains}}}, classification=cls)
    assert doc["outcome"]["failed"] is failed
