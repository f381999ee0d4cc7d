"""The typed settings: one section type per schema section, every key named
and typed there, every default only in the schema."""

from __future__ import annotations

import pytest

from gcm_checks import config, testing
from gcm_checks.config import types

PY = {"int": "int", "float": "float", "bool": "bool", "str": "str", "list": "List[Any]", "dict": "Dict[str, Any]",
      "any": "Any"}


def _sections(schema=None, owner=None, prefix=""):
    """(dotted section name, section type, schema dict) for every section, nested ones too."""
    schema = config.SCHEMA if schema is None else schema
    for name, spec in schema.items():
        if not isinstance(spec, dict):
            continue
        cls = getattr(config.Settings, name).cls if owner is None else owner._nested[name]
        yield prefix + name, cls, spec
        yield from _sections(spec, cls, f"{prefix}{name}.")


def _annotations(cls):
    out = {}
    for k in reversed(cls.__mro__):
        out.update(getattr(k, "__annotations__", {}))
    return {k: v for k, v in out.items() if not k.startswith("_")}


@pytest.mark.parametrize("dotted,cls,spec", list(_sections()), ids=lambda x: x if isinstance(x, str) else "")
def test_section_type_names_and_types_every_key_of_its_schema_section(dotted, cls, spec):
    ann = _annotations(cls)
    props = {k for k in vars(cls) if isinstance(vars(cls)[k], property)}
    assert set(ann) | props == set(spec), f"{cls.__name__} and the schema's {dotted} disagree"
    for key, k in spec.items():
        if isinstance(k, dict):
            assert ann[key] == cls._nested[key].__name__
        elif key in ann:
            want = PY[k.kind] if not k.nullable or k.kind == "any" else f"Optional[{PY[k.kind]}]"
            assert ann[key] == want, f"{dotted}.{key}"
    # No defaults in the types: a class attribute would shadow the resolved value.
    assert not set(spec) & {k for k in vars(cls) if not k.startswith("_") and k not in props}


def test_every_section_of_the_schema_is_a_settings_attribute_and_nothing_else():
    sections = {n for n, v in config.SCHEMA.items() if isinstance(v, dict)}
    attrs = {n for n, v in vars(config.Settings).items() if isinstance(v, types._SectionOf)}
    assert attrs == sections
    top = {n for n, v in config.SCHEMA.items() if not isinstance(v, dict)}
    assert top <= {n for n, v in vars(config.Settings).items() if isinstance(v, property)}


def test_values_are_the_resolved_ones_defaults_from_the_schema():
    s = config.resolve({"report": {"spool_dir": "/shared"}, "nodes": [{"match": "gpu[1-4]", "set": {"gpu": {"count": 4}}}]},
                       "gpu3")
    assert s.report.spool_dir == "/shared"
    assert s.report.report_dir == config.SCHEMA["report"]["report_dir"].default
    assert s.gpu.count == 4 and s.notify.budget_s == 10.0 and s.budget_s == 10.0
    assert s.notify.policy.default == "on_failure" and s.notify.email.use_mail_user is True
    assert config.resolve({}, "other").gpu.count is None


def test_derived_values_are_named_once():
    s = testing.settings(state_dir="/st", report={"outbox_dir": "/r/out"})
    assert s.outbox_dir == "/r/out" and s.accounting_state_file == "/st/accounting-pass.json"
    s = testing.settings(s, **{"notify.outbox_dir": "/n/out", "accounting.state_file": "/x.json"})
    assert s.outbox_dir == "/n/out" and s.accounting_state_file == "/x.json"


def test_sections_are_read_only_and_see_a_run_time_override():
    s = testing.settings()
    with pytest.raises(AttributeError, match="read-only"):
        s.report.spool_dir = "/x"
    with pytest.raises(AttributeError, match="no setting 'spool_dri'"):
        s.report.spool_dri
    # The one run-time override (an unsafe directory replaced before any work)
    # edits the resolved dict; every reader sees it.
    s.data["epilog"]["report"] = False
    assert s.epilog.report is False


def test_testing_settings_takes_sections_dotted_keys_and_top_level_keys():
    s = testing.settings({"gpu": {"count": 2}}, gpu={"temperature_max_c": 80}, report_only=True,
                         **{"notify.policy.users": {"bob": "always"}})
    assert (s.gpu.count, s.gpu.temperature_max_c, s.report_only) == (2, 80, True)
    assert s.notify.policy.users == {"bob": "always"}
    with pytest.raises(config.ConfigError, match="notify.policy.users.bob"):
        testing.settings(**{"notify.policy.users": {"bob": "sometimes"}})


def test_broken_config_still_gives_typed_defaults_in_report_only(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("report: {spool_dir: 3}\nlog_path: /tmp/x.log\n")
    s, err = config.load_or_defaults(str(p), "n1")
    assert err is not None and err.key == "report.spool_dir" and err.source == str(p)
    assert s.report_only is True and s.log_path == "/tmp/x.log"
    assert s.report.spool_dir == config.SCHEMA["report"]["spool_dir"].default


def test_one_report_run_parses_the_channel_table_once(tmp_path, monkeypatch):
    """Issue 16: ReportSettings.coerce ran 8 times and NotifySettings.coerce 5
    times in one assemble_and_notify; the typed settings are built once and
    the channel table is parsed once per run, however many steps read it."""
    from gcm_checks import report
    from gcm_checks.notify import config as notify_config
    from gcm_checks.report.model import JobInfo

    calls = []
    real = notify_config.Channel.from_mapping.__func__
    monkeypatch.setattr(notify_config.Channel, "from_mapping",
                        classmethod(lambda cls, m: calls.append(m["name"]) or real(cls, m)))
    s = testing.settings(report={"spool_dir": str(tmp_path / "sp"), "report_dir": str(tmp_path / "rp"),
                                 "outbox_dir": str(tmp_path / "ob")},
                         notify={"handoff": "queue", "policy": {"default": "always"},
                                 "channels": [{"name": "a", "type": "webhook", "url": "http://127.0.0.1:9/a"},
                                              {"name": "b", "type": "webhook", "url": "http://127.0.0.1:9/b"}]})
    for job_id in ("1", "2"):
        out = report.assemble_and_notify(JobInfo(job_id, nodes=("n1",), exit_status="1:0"), s, node="n1", budget_s=5,
                                         evidence={})
        assert out["assembled"] and set(out["queued"].values()) == {"queued"}, out
    assert calls == ["a", "b"]


def test_production_code_reads_typed_sections_never_a_dotted_get_with_a_default():
    """Issue 16: settings were read five ways, with inline defaults that
    drifted from the schema. One way now: settings.<section>.<key>."""
    import re
    from pathlib import Path

    root = Path(config.__file__).resolve().parent.parent
    offenders = []
    for p in sorted(root.rglob("*.py")):
        text = p.read_text()
        for n, line in enumerate(text.splitlines(), 1):
            if re.search(r"settings\.get\(|\.coerce\(settings|settings\.section\(", line):
                offenders.append(f"{p.relative_to(root.parent)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
    assert not hasattr(config.Settings, "get") and not hasattr(config.Settings, "section")
