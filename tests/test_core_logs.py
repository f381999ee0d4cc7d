"""The prolog's fast JSON-lines writer and the structlog configuration write
the same line format (the same keys, in the same order, same values)."""

import json

import pytest

from gcm_checks import logs


@pytest.mark.parametrize("method", ["info", "warning", "error"])
def test_fast_writer_matches_structlog(tmp_path, method):
    lines = {}
    for fast in (False, True):
        path = tmp_path / f"{fast}.jsonl"
        log = logs.open_log(str(path), fast=fast, mode="prolog", node="n1")
        getattr(log, method)("drain", reason="gcm: x", counts={"pass": 3}, obj=object)
        logs.close_log()
        [line] = path.read_text().splitlines()
        lines[fast] = json.loads(line)
    slow, quick = lines[False], lines[True]
    assert list(slow) == list(quick)
    for k in slow:
        if k not in ("timestamp",):
            assert slow[k] == quick[k], k
    assert quick["level"] == method and quick["event"] == "drain" and quick["counts"] == {"pass": 3}
    assert quick["timestamp"][:10] == slow["timestamp"][:10]


def test_exception_carries_the_traceback(tmp_path):
    path = tmp_path / "l.jsonl"
    log = logs.open_log(str(path), fast=True)
    try:
        1 / 0
    except ZeroDivisionError:
        log.exception("internal_error")
    logs.close_log()
    doc = json.loads(path.read_text())
    assert doc["level"] == "error" and "ZeroDivisionError" in doc["exception"]


def test_unwritable_log_falls_back_to_stderr_and_says_so(tmp_path, capsys):
    log = logs.open_log("/proc/no/such/dir/log.jsonl", fast=True)
    log.info("x")
    err = capsys.readouterr().err
    assert "log_unavailable" in err and '"event": "x"' in err
