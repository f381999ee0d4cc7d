"""JobInfo from the Slurm 22.05 epilog environment, settings coercion."""

from __future__ import annotations

import pytest

from gcm_checks.report.model import JobInfo, expand_stdio

BASE = {
    "SLURM_JOB_ID": "42",
    "SLURM_JOB_USER": "alice",
    "SLURM_JOB_UID": "4242",
    "SLURM_JOB_GID": "4243",
    "SLURM_JOB_PARTITION": "gpu",
    "SLURM_CLUSTER_NAME": "c1",
    "SLURM_NODELIST": "node[1-2]",
    "SLURMD_NODENAME": "node1",
    "SLURM_JOB_WORK_DIR": "/home/alice/run",
}


@pytest.mark.parametrize(
    "extra_env,field,expected",
    [
        ({}, "nodes", ("node1", "node2")),
        ({"SLURM_JOB_NODELIST": "gpu[01-03,7],cpu5"}, "nodes", ("gpu01", "gpu02", "gpu03", "gpu7", "cpu5")),
        ({"SLURM_JOB_EXIT_CODE2": "3:0"}, "exit_status", "3:0"),
        ({"SLURM_JOB_EXIT_CODE": "768"}, "exit_status", "3:0"),  # wait status, facts note
        ({"SLURM_JOB_EXIT_CODE": "9"}, "exit_status", "0:9"),
        ({}, "exit_status", ""),
        ({"SLURM_JOB_STDOUT": "/x/%x-%j.out", "SLURM_JOB_NAME": "train"}, "stdout", "/x/train-42.out"),
        ({"SLURM_JOB_STDOUT": "/x/o-%5j-%u-%N.log"}, "stdout", "/x/o-00042-alice-node1.log"),
        ({"SLURM_JOB_STDOUT": "/x/a.out", "SLURM_JOB_STDERR": "/x/a.out"}, "stderr", ""),
        ({"SLURM_JOB_STDOUT": "/x/a.out", "SLURM_JOB_STDERR": "/x/a.err"}, "stderr", "/x/a.err"),
        ({"SLURM_JOB_RESTART_COUNT": "2"}, "key", "42.2"),
        ({"SLURM_JOB_RESTART_COUNT": "0"}, "key", "42"),
        ({"SLURM_JOB_COMMENT": "gcm:notify=always"}, "comment", "gcm:notify=always"),
        ({}, "uid", 4242),
        ({}, "gid", 4243),
    ],
)
def test_from_env(extra_env, field, expected):
    job = JobInfo.from_env({**BASE, **extra_env})
    assert getattr(job, field) == expected


def test_overrides_win():
    job = JobInfo.from_env(BASE, state="TIMEOUT", start=100.0, end=160.5, mail_user="a@x.org")
    assert (job.state, job.elapsed_s, job.mail_user) == ("TIMEOUT", 60.5, "a@x.org")


@pytest.mark.parametrize(
    "exit_status,state,failed",
    [
        ("0:0", "COMPLETED", False),
        ("3:0", "", True),
        ("0:9", "", True),
        ("0:0", "TIMEOUT", True),
        ("0:0", "CANCELLED by 0", False),
        ("0:0", "NODE_FAIL", True),
        ("", "", False),
    ],
)
def test_job_failed(exit_status, state, failed):
    assert JobInfo("1", exit_status=exit_status, state=state).failed() is failed


def test_round_trip():
    job = JobInfo.from_env({**BASE, "SLURM_JOB_EXIT_CODE2": "1:0"}, start=1.0, end=2.0)
    assert JobInfo.from_dict(job.to_dict()) == job


@pytest.mark.parametrize("pattern,expected", [("", ""), ("/plain", "/plain"), ("/p/%%j-%j", "/p/%j-7"), ("/p/%A_%a", "/p/7_"), ("/p/%q", "/p/%q")])
def test_expand_stdio(pattern, expected):
    assert expand_stdio(pattern, job_id="7", user="u", name="n", node="h") == expected


def test_report_section_from_a_config_file(tmp_path):
    from gcm_checks import config

    p = tmp_path / "c.yaml"
    p.write_text("report: {spool_dir: /shared/spool, log_tail_bytes: 10}\n")
    rs = config.load(str(p), node="n1").report
    assert (rs.spool_dir, rs.log_tail_bytes, rs.log_total_bytes) == ("/shared/spool", 10, 262144)


def test_unknown_key_is_an_error():
    from gcm_checks import testing
    from gcm_checks.config import ConfigError

    with pytest.raises(ConfigError, match="report.spool_dirr"):
        testing.settings(report={"spool_dirr": "/x"})
