"""`gcm-checks notify report JOB --admin` reads report.json through the one
bounded reader (issue 16 item 5): a planted or corrupt file is refused with
exit 1 and a reason, never a RecursionError or an unbounded read."""

from __future__ import annotations

import argparse
import os

import pytest

from gcm_checks import testing
from gcm_checks.commands.notify import _report
from gcm_checks.report import report_paths, write_report
from gcm_checks.report.build import build_report
from gcm_checks.report.model import JobInfo


def _settings(tmp_path):
    return testing.settings({"state_dir": str(tmp_path / "state"),
                             "report": {"report_dir": str(tmp_path / "reports"), "spool_dir": str(tmp_path / "spool")}})


def _args(job):
    return argparse.Namespace(job=job, format="txt", json=False, admin=True)


def test_admin_view_of_a_written_report(tmp_path, capsys):
    s = _settings(tmp_path)
    job = JobInfo(job_id="7", user="root", uid=0, gid=0, name="wrap", nodes=("node1",), exit_status="0:0",
                  state="COMPLETING")
    report = build_report(job, {"node1": {"node": "node1", "evidence": {}}}, generated_by="node1")
    write_report(report, s)
    assert _report(_args(report["job"]["key"]), s) == 0
    assert "7" in capsys.readouterr().out


@pytest.mark.parametrize("content", ["[" * 100000 + "]" * 100000, "{not json", None])
def test_planted_or_corrupt_report_json_is_refused(tmp_path, capsys, content):
    s = _settings(tmp_path)
    path = report_paths(s, "9")["report.json"]
    os.makedirs(os.path.dirname(path))
    if content is None:  # a symlink at the last component is never followed
        (tmp_path / "elsewhere.json").write_text('{"job": {}}')
        os.symlink(tmp_path / "elsewhere.json", path)
    else:
        with open(path, "w") as f:
            f.write(content)
    assert _report(_args("9"), s) == 1
    assert "no readable report for job 9" in capsys.readouterr().err
