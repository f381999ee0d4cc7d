"""The Grafana dashboard in docs/ is built on series gcm-checks really
writes: every metric its queries name exists, every label they match on or
group by is one that metric carries, and the picture's stand-in renderer
has a query for every panel."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from gcm_checks.config import resolve
from gcm_checks.gather import nvml
from gcm_checks.gather.ib import IbPort, IbSnapshot
from gcm_checks.result import failed, passed
from gcm_checks.sim.fake_nvml import FakeNvml
from gcm_checks.sim.scenario import load as load_scenario
from gcm_checks.telemetry import hardware, model

DOCS = Path(__file__).resolve().parent.parent / "docs" / "grafana"
DASH = json.loads((DOCS / "gcm-checks-dashboard.json").read_text())
PROMQL_WORDS = {"by", "on", "group_left", "group_right", "sum", "count", "max", "min", "rate", "sort_desc", "vector",
                "or", "time", "and", "unless", "ignoring", "without"}


def _labels_by_metric():
    """Label names per metric, from a real build with every kind of input."""
    scenario = load_scenario("healthy")
    scenario["gpus"][0]["nvlink"] = {"links": 2, "errors": {"replay": 1}}
    facts = nvml.gather(lambda: FakeNvml(scenario), 2.0, extended=True)
    port = IbPort("mlx5_0", 1, "ACTIVE", 4, "LinkUp", 5, 400.0, "400", "InfiniBand", {"symbol_error": 1})
    samples, _ = model.build([passed("gpu.nvml", "ok"), failed("gpu.temperature", "hot", "GPU 1")], mode="health",
                             node="n", when=1.0, job_id="7", xids=[{"xid": 79, "gpu_index": 1, "severity": "fail"}],
                             drained=True, duration_s=1.0)
    samples += hardware.gpu_samples(facts, "n")
    samples += hardware.ib_samples(IbSnapshot("/", "/", True, (), (port,)), "n")
    samples += model.build([], mode="prolog", node="n", when=1.0, job_id="7", job_gpu_list=["0"])[0]
    # The decision gauges telemetry.export adds beside the build.
    samples += [model.Sample(name, (("mode", "prolog"), ("node", "n")), 0.0)
                for name in ("gcm_config_error", "gcm_would_drain", "gcm_drain_braked")]
    out = {}
    for s in samples:
        out.setdefault(s.name, set()).update(k for k, _ in s.labels)
    return out


def _exprs():
    for p in DASH["panels"]:
        for t in p["targets"]:
            yield p["title"], t["expr"]
    for v in DASH["templating"]["list"]:
        yield v["name"], v["definition"]


def test_every_metric_the_dashboard_queries_is_written():
    labels = _labels_by_metric()
    assert set(labels) == set(model.METRICS)  # the build above covers every series
    for title, expr in _exprs():
        for name in re.findall(r"\bgcm_[a-z_]+\b", expr):
            assert name in model.METRICS, (title, name)


def test_every_label_the_dashboard_uses_is_carried():
    labels = _labels_by_metric()
    for title, expr in _exprs():
        for name, matchers in re.findall(r"\b(gcm_[a-z_]+)\{([^}]*)\}", expr):
            for label in re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", matchers):
                assert label in labels[name], (title, name, label)
        used = set(re.findall(r"\b(gcm_[a-z_]+)\b", expr))
        for group in re.findall(r"(?:by|on)\s*\(([^)]*)\)|group_left\s*\(([^)]*)\)", expr):
            for label in ",".join(group).replace(" ", "").split(","):
                if label:
                    assert any(label in labels[m] for m in used), (title, label)
    for p in DASH["panels"]:
        for t in p["targets"]:
            used = set(re.findall(r"\b(gcm_[a-z_]+)\b", t["expr"]))
            for legend_label in re.findall(r"\{\{(\w+)\}\}", t.get("legendFormat", "")):
                assert any(legend_label in labels[m] for m in used), (p["title"], legend_label)


def test_the_renderer_has_a_query_for_every_panel_and_the_picture_exists():
    spec = importlib.util.spec_from_file_location("gcm_dash_render", DOCS / "render.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # matplotlib is imported only when drawing
    assert {p["title"] for p in DASH["panels"]} == set(mod.QUERIES)
    assert (DOCS / "dashboard.png").stat().st_size > 50_000
    assert DASH["templating"]["list"][0]["query"]["query"] == "label_values(gcm_node_verdict, node)"


def test_grid_positions_do_not_overlap():
    cells = set()
    for p in DASH["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, p["title"]
                cells.add((x, y))


@pytest.mark.parametrize("node_labels", [{"node"}])
def test_every_series_has_node(node_labels):
    for name, labels in _labels_by_metric().items():
        assert node_labels <= labels, name


@pytest.mark.skipif(__import__("shutil").which("promtool") is None,
                    reason="promtool not installed (Debian package prometheus)")
def test_every_dashboard_query_is_valid_promql(tmp_path):
    import subprocess

    import yaml

    rules = [{"record": f"gcm:dashboard_{i}", "expr": expr.replace("$node", ".*")}
             for i, (_, expr) in enumerate(_exprs()) if "label_values" not in expr]
    f = tmp_path / "rules.yml"
    f.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    p = subprocess.run(["promtool", "check", "rules", str(f)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
