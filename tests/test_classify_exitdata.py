"""Slurm exit data as the epilog and sacct present it (shared/notes/slurm-22.05-facts.md)."""

from __future__ import annotations

import pytest

from gcm_checks.classify import decode_wait_status, exit_info_from_env, parse_exit_arg, parse_exit_code2


@pytest.mark.parametrize("value,expected", [
    ("3:0", (3, 0)), ("0:9", (0, 9)), ("0:0", (0, 0)), ("5", (5, 0)), (" 1:15 ", (1, 15)),
    ("", (None, None)), (None, (None, None)), ("x:y", (None, None)),
])
def test_parse_exit_code2(value, expected) -> None:
    assert parse_exit_code2(value) == expected


@pytest.mark.parametrize("status,expected", [
    (768, (3, 0)), ("768", (3, 0)), (9, (0, 9)), (0, (0, 0)), (1280, (5, 0)), (15, (0, 15)),
    (None, (None, None)), ("", (None, None)), ("abc", (None, None)), (-1, (None, None)),
])
def test_decode_wait_status(status, expected) -> None:
    assert decode_wait_status(status) == expected


@pytest.mark.parametrize("value,expected", [
    (3, (3, 0)), ("3", (3, 0)), ("0:9", (0, 9)), (768, (3, 0)), ("139", (139, 0)), (None, (None, None)),
    ("bogus", (None, None)), (True, (None, None)),
])
def test_parse_exit_arg(value, expected) -> None:
    assert parse_exit_arg(value) == expected


@pytest.mark.parametrize("env,expected", [
    ({"SLURM_JOB_EXIT_CODE2": "3:0", "SLURM_JOB_EXIT_CODE": "768", "SLURM_JOB_DERIVED_EC": "0"},
     {"exit_code": 3, "signal": 0, "derived_exit_code": 0}),
    ({"SLURM_JOB_EXIT_CODE": "9"}, {"exit_code": 0, "signal": 9, "derived_exit_code": None}),
    ({"SLURM_JOB_EXIT_CODE2": "0:0", "SLURM_JOB_DERIVED_EC": "1280"},
     {"exit_code": 0, "signal": 0, "derived_exit_code": 5}),
    ({}, {"exit_code": None, "signal": None, "derived_exit_code": None}),
])
def test_exit_info_from_env(env, expected) -> None:
    assert exit_info_from_env(env) == expected


def test_failed_step_under_a_clean_batch_script_is_not_success() -> None:
    from gcm_checks.classify import ClassifyInput, classify

    info = exit_info_from_env({"SLURM_JOB_EXIT_CODE2": "0:0", "SLURM_JOB_DERIVED_EC": "1280"})
    assert classify(ClassifyInput(**info)).category != "success"
