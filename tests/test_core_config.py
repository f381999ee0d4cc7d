"""Config: schema, defaults documented, errors that name file/key/expected,
per-node sections, discovery order."""

import textwrap
from pathlib import Path

import pytest
import yaml

from gcm_checks import config

REPO = Path(__file__).resolve().parent.parent


def write(tmp_path, text, name="c.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def _flatten_by_schema(data, schema, prefix=""):
    """dotted key -> value, descending only where SCHEMA has a section."""
    flat = {}
    for k, v in data.items():
        spec = schema.get(k)
        if isinstance(spec, dict) and isinstance(v, dict):
            flat.update(_flatten_by_schema(v, spec, f"{prefix}{k}."))
        else:
            flat[f"{prefix}{k}"] = v
    return flat


def test_default_yaml_documents_every_key_with_its_default():
    data = yaml.safe_load((REPO / "configs" / "default.yaml").read_text())
    config._validate_section("default.yaml", data, config.SCHEMA, "", allow_nodes=True)
    flat = _flatten_by_schema(data, config.SCHEMA)
    for dotted, key in config.iter_keys():
        assert dotted in flat, f"configs/default.yaml does not document {dotted}"
        assert flat[dotted] == key.default, f"{dotted}: default.yaml says {flat[dotted]!r}, code says {key.default!r}"
    assert set(flat) <= {d for d, _ in config.iter_keys()}


@pytest.mark.parametrize(
    "text, key, expected",
    [
        ("gpu: {count: eight}", "gpu.count", "an integer"),
        ("gpu: {count: -1}", "gpu.count", ">= 0"),
        ("budget_s: fast", "budget_s", "a finite number"),
        ("gpu: {leftover_processes: explode}", "gpu.leftover_processes", "one of warn, fail"),
        ("gpux: {}", "gpux", "a known key"),
        ("checks: {severity: {gpu.count: fatal}}", "checks.severity.gpu.count", "one of pass"),
        ("nodes: [{set: {}}]", "nodes[0]", "'match'"),
        ("nodes: [{match: 'n1', set: {gpu: {count: x}}}]", "nodes[0].set.gpu.count", "an integer"),
        ("report_only: 1", "report_only", "true or false"),
    ],
)
def test_errors_name_file_key_and_expectation(tmp_path, text, key, expected):
    path = write(tmp_path, text)
    with pytest.raises(config.ConfigError) as ei:
        config.parse_file(path)
    msg = str(ei.value)
    assert msg.startswith(path + ": " + key + ": expected"), msg
    assert expected in msg


def test_yaml_syntax_error_names_line(tmp_path):
    path = write(tmp_path, "gpu:\n  count: [1,\n")
    with pytest.raises(config.ConfigError) as ei:
        config.parse_file(path)
    assert path in str(ei.value) and "line" in str(ei.value)


@pytest.mark.parametrize(
    "node, count",
    [("gpu001", 4), ("gpu128", 4), ("gpu129", 8), ("dgx-a100-7", 2), ("login1", 0)],
)
def test_node_sections_hostlist_glob_regex_later_wins(tmp_path, node, count):
    path = write(tmp_path, """
        gpu: {count: 8}
        nodes:
          - match: "gpu[001-128]"
            set: {gpu: {count: 4}}
          - match: "re:dgx-a100-\\\\d+"
            set: {gpu: {count: 2}}
          - match: ["login*", "cpu[1-4]"]
            set: {gpu: {count: 0}}
    """)
    s = config.load(path, node)
    assert s.gpu.count == count
    assert s.gpu.nvml_timeout_s == 2.0  # untouched defaults survive the merge


def test_discovery_order(tmp_path, monkeypatch):
    a = write(tmp_path, "budget_s: 3", "a.yaml")
    slurm_dir = tmp_path / "etc"
    slurm_dir.mkdir()
    (slurm_dir / "gcm-checks.yaml").write_text("budget_s: 4")
    env = {"SLURM_CONF": str(slurm_dir / "slurm.conf")}
    assert config.find_config(None, env) == str(slurm_dir / "gcm-checks.yaml")
    env["GCM_CHECKS_CONFIG"] = a
    assert config.find_config(None, env) == a
    assert config.find_config("/explicit.yaml", env) == "/explicit.yaml"
    assert config.find_config(None, {}) in (None, "/etc/gcm-checks/config.yaml")


def test_node_name_prefers_slurmd_nodename():
    assert config.node_name({"SLURMD_NODENAME": "node2"}) == "node2"


def test_severity_override_applies_only_to_non_pass():
    from gcm_checks.result import Status, failed, passed, unknown
    from gcm_checks.suite import _apply_severity

    over = {"gpu.throttle": "pass", "gpu.count": "warn"}
    assert _apply_severity(failed("gpu.count", "x"), over).status is Status.WARN
    assert _apply_severity(passed("gpu.count", "x"), over).status is Status.PASS
    # an override can never turn "we could not tell" into a pass
    assert _apply_severity(unknown("gpu.throttle", "x"), over).status is Status.UNKNOWN
