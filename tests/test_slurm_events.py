"""gcm_checks.slurm logs its decisions as structured events (an event name
plus fields, the format of gcm_checks/logs.py), never as sentences and never
with print."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pytest

from gcm_checks import slurm
from gcm_checks.logs import JsonLinesLog
from gcm_checks.slurm.parse import NodeInfo
from gcm_checks.testing import MemoryBackend

PKG = Path(slurm.__file__).parent


def _events(stream: io.StringIO):
    return [json.loads(ln) for ln in stream.getvalue().splitlines()]


def _strip(ev):
    return {k: v for k, v in ev.items() if k not in ("timestamp", "pid")}


@pytest.mark.parametrize("node, call, expect", [
    (NodeInfo("n1", "IDLE"), lambda be, log, sd: slurm.apply_drain(be, "n1", "gcm: x", state_dir=sd, log=log),
     [{"event": "slurm_drained", "level": "warning", "node": "n1", "reason": "gcm: x"}]),
    (NodeInfo("n1", "IDLE+DRAIN", "RMA 1234", "alice"),
     lambda be, log, sd: slurm.apply_drain(be, "n1", "gcm: x", state_dir=sd, log=log),
     [{"event": "slurm_drain_kept", "level": "warning", "node": "n1", "owner": "alice", "held": "RMA 1234",
       "finding": "gcm: x"}]),
    (NodeInfo("n1", "DOWN*", "Not responding", "slurm"),
     lambda be, log, sd: slurm.apply_drain(be, "n1", "gcm: x", state_dir=sd, log=log),
     [{"event": "slurm_drain_kept", "level": "warning", "node": "n1", "state": "DOWN*", "held": "Not responding",
       "finding": "gcm: x"}]),
    (NodeInfo("n1", "IDLE+DRAIN", "gcm: y"), lambda be, log, sd: slurm.apply_drain(be, "n1", "gcm: x", log=log),
     [{"event": "slurm_already_drained", "level": "info", "node": "n1", "held": "gcm: y", "finding": "gcm: x"}]),
    (NodeInfo("n1", "IDLE+DRAIN", "gcm: y"), lambda be, log, sd: slurm.apply_resume(be, "n1", log=log),
     [{"event": "slurm_resumed", "level": "info", "node": "n1", "was": "gcm: y"}]),
    (NodeInfo("n1", "IDLE+DRAIN", "RMA 1234", "alice"), lambda be, log, sd: slurm.apply_resume(be, "n1", log=log),
     [{"event": "slurm_resume_refused", "level": "warning", "node": "n1", "why": "not drained by gcm",
       "owner": "alice", "held": "RMA 1234"}]),
    (NodeInfo("n1", "IDLE+DRAIN", "RMA 1234", "alice"),
     lambda be, log, sd: slurm.apply_resume(be, "n1", force=True, log=log),
     [{"event": "slurm_resume_forced", "level": "warning", "node": "n1", "owner": "alice", "held": "RMA 1234"},
      {"event": "slurm_resumed", "level": "info", "node": "n1", "was": "RMA 1234"}]),
    (NodeInfo("n1", "IDLE+DRAIN", "gcm: z"),
     lambda be, log, sd: slurm.apply_resume(be, "n1", log=log, expect_reason="gcm: y"),
     [{"event": "slurm_resume_refused", "level": "info", "node": "n1", "why": "drained again since our drain",
       "held": "gcm: z"}]),
    (NodeInfo("n1", "IDLE"), lambda be, log, sd: slurm.apply_features(be, "n1", ["gcm_ok"], "gcm ok", log=log),
     [{"event": "slurm_features", "level": "info", "node": "n1", "action": "applied", "features": ["gcm_ok"]}]),
])
def test_decisions_are_events_with_fields(tmp_path, node, call, expect):
    out = io.StringIO()
    call(MemoryBackend({"n1": node}), JsonLinesLog(out), str(tmp_path))
    assert [_strip(e) for e in _events(out)] == expect


@pytest.mark.parametrize("call, skipped", [
    (lambda be, log: slurm.apply_drain(be, "n1", "gcm: x", log=log), "drain"),
    (lambda be, log: slurm.apply_resume(be, "n1", log=log), "resume"),
    (lambda be, log: slurm.apply_features(be, "n1", ["gcm_ok"], None, log=log), "features"),
])
def test_slurmctld_down_is_one_error_event(call, skipped):
    out = io.StringIO()
    call(MemoryBackend(fail_with="Unable to contact slurm controller"), JsonLinesLog(out))
    (ev,) = _events(out)
    assert (ev["event"], ev["level"], ev["node"], ev["skipped"]) == ("slurm_unreadable", "error", "n1", skipped)
    assert ev["error"] == "Unable to contact slurm controller"


def test_resume_if_passed_says_why_it_stays_drained(tmp_path):
    out = io.StringIO()
    be = MemoryBackend({"n1": NodeInfo("n1", "IDLE")})
    slurm.apply_drain(be, "n1", "gcm: xid", state_dir=str(tmp_path), check="xid.hardware")
    slurm.resume_if_passed(be, "n1", ["xid.hardware"], state_dir=str(tmp_path), log=JsonLinesLog(out))
    assert [_strip(e) for e in _events(out)] == [
        {"event": "slurm_stays_drained", "level": "info", "node": "n1", "check": "xid.hardware",
         "why": "not re-measurable: resume by hand"}]


def test_dry_run_writes_its_line_and_logs_the_command():
    out, log = io.StringIO(), io.StringIO()
    be = slurm.DryRunBackend(out=out, state=NodeInfo("n1", "IDLE"), log=JsonLinesLog(log))
    assert slurm.apply_drain(be, "n1", "gcm: x").action == "would_drain"
    assert out.getvalue() == "would run: scontrol update nodename=n1 state=drain reason='gcm: x'\n"
    assert [_strip(e) for e in _events(log)] == [
        {"event": "slurm_would_run", "level": "info", "command": "scontrol update nodename=n1 state=drain reason='gcm: x'"}]


def _log_calls(tree):
    levels = {"debug", "info", "warning", "error", "critical", "exception"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in levels:
            owner = node.func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if name == "log":
                yield node


@pytest.mark.parametrize("path", sorted(PKG.glob("*.py")), ids=lambda p: p.name)
def test_no_print_and_no_sentence_events(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prints = [n.lineno for n in ast.walk(tree)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"]
    assert not prints, f"print() in library code at lines {prints}"
    for call in _log_calls(tree):
        first = call.args[0] if call.args else None
        assert isinstance(first, ast.Constant) and isinstance(first.value, str), \
            f"line {call.lineno}: the event must be a constant name, the details go in fields"
        assert first.value.startswith("slurm_") and first.value.replace("_", "").isalnum(), (call.lineno, first.value)
        assert len(call.args) == 1, f"line {call.lineno}: details go in keyword fields"


def test_node_command_shows_an_event_as_one_line(capsys):
    from gcm_checks.commands.node import _StderrLog

    _StderrLog().warning("slurm_drain_kept", node="n1", owner="alice", held="RMA 1234", finding="gcm: x")
    assert capsys.readouterr().err == "slurm_drain_kept node=n1 owner=alice held='RMA 1234' finding='gcm: x'\n"
