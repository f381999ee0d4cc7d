"""Unknown ids in checks.disabled: `config check` rejects them, naming file and
key; at run time they only warn (never break a run, never drain)."""

import json

import pytest

from gcm_checks import cli
from gcm_checks.registry import unmatched

IDS = ["gpu.ecc.uncorrectable", "gpu.count", "xid.hardware", "ib.port.state"]


@pytest.mark.parametrize("disabled,unknown", [
    ([], []),
    (["gpu.count"], []),
    (["gpu.*", "xid.*"], []),
    (["gpu.ecc.uncorectable"], ["gpu.ecc.uncorectable"]),  # the typo that leaves a check running
    (["gpu"], ["gpu"]),                                    # a family needs its '*'
    (["nvlink.*", "gpu.count"], ["nvlink.*"]),
    ([42, "gpu.count"], [42]),                             # not a string: names nothing
])
def test_unmatched(disabled, unknown):
    assert unmatched(disabled, IDS) == unknown


def _config(tmp_path, body):
    p = tmp_path / "gcm.yaml"
    p.write_text(f"log_path: {tmp_path}/log/gcm.jsonl\nstate_dir: {tmp_path}/state\n" + body)
    return p


def test_config_check_rejects_an_unknown_id_naming_file_and_key(tmp_path, capsys):
    p = _config(tmp_path, "checks: {disabled: ['gpu.count', 'gpu.ecc.uncorectable']}\n")
    assert cli.main(["config", "check", str(p), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert (doc["ok"], doc["file"], doc["key"]) == (False, str(p), "checks.disabled")
    assert "gpu.ecc.uncorectable" in doc["error"] and "'gpu.count'" not in doc["error"]
    assert "still runs" in doc["on_nodes"]  # not the report-only text of a broken config


def test_config_check_rejects_an_unknown_id_in_a_node_section(tmp_path, capsys):
    p = _config(tmp_path, "nodes:\n  - match: 'gpu[001-004]'\n    set: {checks: {disabled: ['xid.*', 'ib.prot.*']}}\n")
    assert cli.main(["config", "check", str(p)]) == 1
    err = capsys.readouterr().err
    assert str(p) in err and "nodes[0].set.checks.disabled" in err and "ib.prot.*" in err


def test_config_check_accepts_every_suites_ids(tmp_path, capsys):
    # Ids of epilog/qualify-only checks are known too, though the prolog
    # never imports their modules.
    p = _config(tmp_path, "checks: {disabled: ['dcgm.diag', 'perf.*', 'xid.software', 'ib.ipoib.state']}\n")
    assert cli.main(["config", "check", str(p)]) == 0


def test_config_show_does_not_reject(tmp_path, capsys):
    p = _config(tmp_path, "checks: {disabled: ['no.such.check']}\n")
    assert cli.main(["config", "show", str(p), "--json"]) == 0


def _log_lines(tmp_path):
    return [json.loads(x) for x in (tmp_path / "log" / "gcm.jsonl").read_text().splitlines()]


def test_prolog_warns_once_and_still_runs_and_judges(tmp_path, capsys):
    p = _config(tmp_path, "gpu: {count: 8}\nchecks: {disabled: ['gpu.ecc.uncorectable', 'xid.*']}\n")
    code = cli.main(["prolog", "--config", str(p), "--sim", "ecc-uncorrectable", "--json", "--dry-run"])
    doc = json.loads(capsys.readouterr().out)
    # The misspelt id disabled nothing: the bad GPU is still found.
    assert doc["verdict"] == "fail" and code != 0
    assert any(r["check"] == "gpu.ecc.uncorrectable" and r["status"] == "fail" for r in doc["results"])
    warnings = [x for x in _log_lines(tmp_path) if x.get("event") == "config_warning"]
    assert len(warnings) == 1 and "gpu.ecc.uncorectable" in warnings[0]["detail"]
    assert "xid.*" not in warnings[0]["detail"]  # an epilog check's id is known


def test_unknown_id_never_drains_a_healthy_node(tmp_path, capsys):
    p = _config(tmp_path, "gpu: {count: 8}\nchecks: {disabled: ['nonsense']}\n")
    assert cli.main(["prolog", "--config", str(p), "--sim", "healthy", "--json", "--dry-run"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "pass"
    assert any(x.get("event") == "config_warning" for x in _log_lines(tmp_path))
