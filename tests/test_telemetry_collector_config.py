"""The OpenTelemetry Collector config documented in docs/telemetry.md.

No collector can be installed here (no pip or Debian package ships otelcol;
building it needs Go >= 1.22, Debian 12 has 1.19), so this does what can be
done without one, and docs/telemetry.md says so:

1. the YAML block is parsed and checked as the collector would check it:
   every component a pipeline names is defined, every defined one is used,
   each type exists in otelcol-contrib and supports the pipeline's signal,
   memory_limiter runs first and batch last (the collector's own advice), and
   the receiver listens where our documented ``telemetry.otlp_endpoint`` sends;
2. the config's logs path is emulated with real HTTP servers built from the
   parsed YAML: an OTLP/HTTP receiver on the configured path, the ``resource``
   processor's actions, and the ``otlphttp`` exporter's URL rule (endpoint +
   ``/v1/logs``) into a Loki stand-in that decodes with opentelemetry-proto.
   gcm-checks' real exporter sends into it. This proves our side of the wire
   and the config's wiring, not otelcol's own behaviour.
"""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "telemetry.md"

# Components of otelcol-contrib this config may name, with the signals each
# supports (from each component's README in opentelemetry-collector(-contrib)).
KNOWN = {
    "receivers": {"otlp": {"metrics", "logs", "traces"}},
    "processors": {"batch": {"metrics", "logs", "traces"}, "memory_limiter": {"metrics", "logs", "traces"},
                   "resource": {"metrics", "logs", "traces"}},
    "exporters": {"prometheusremotewrite": {"metrics"}, "prometheus": {"metrics"},
                  "otlphttp": {"metrics", "logs", "traces"}, "elasticsearch": {"metrics", "logs", "traces"},
                  "clickhouse": {"metrics", "logs", "traces"}, "debug": {"metrics", "logs", "traces"}},
}


def documented_config() -> dict:
    text = DOC.read_text()
    section = text[text.index("### An OpenTelemetry Collector that keeps the history"):]
    block = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    return yaml.safe_load(block)


def documented_endpoint() -> str:
    block = re.search(r"```yaml\n(telemetry:.*?)```", DOC.read_text(), re.S).group(1)
    return yaml.safe_load(block)["telemetry"]["otlp_endpoint"]


def test_every_pipeline_component_is_defined_used_known_and_fits_its_signal():
    cfg = documented_config()
    pipelines = cfg["service"]["pipelines"]
    assert set(pipelines) == {"metrics", "logs"}  # what gcm-checks sends
    used = {"receivers": set(), "processors": set(), "exporters": set()}
    for name, p in pipelines.items():
        signal = name.split("/")[0]
        assert p.get("receivers") and p.get("exporters"), name
        for kind in used:
            for comp in p.get(kind) or ():
                assert comp in (cfg.get(kind) or {}), f"pipeline {name} names undefined {kind[:-1]} {comp}"
                ctype = comp.split("/")[0]
                assert ctype in KNOWN[kind], f"{comp}: not an otelcol-contrib {kind[:-1]}"
                assert signal in KNOWN[kind][ctype], f"{comp} does not support {signal}"
                used[kind].add(comp)
        procs = p.get("processors") or []
        assert procs[0] == "memory_limiter" and procs[-1] == "batch", f"{name}: {procs}"
    for kind in used:
        assert set(cfg.get(kind) or {}) == used[kind], f"{kind} defined but unused: {set(cfg[kind]) - used[kind]}"


def test_the_receiver_listens_where_gcm_checks_sends():
    cfg = documented_config()
    http_cfg = cfg["receivers"]["otlp"]["protocols"]["http"]
    ours = urlparse(documented_endpoint())
    assert ours.scheme == "http" and ours.path in ("", "/")  # we append /v1/metrics and /v1/logs
    assert int(http_cfg["endpoint"].rsplit(":", 1)[1]) == ours.port == 4318
    # The settings' own example must stay a valid config.
    from gcm_checks.config import resolve

    assert resolve({"telemetry": {"otlp_endpoint": documented_endpoint()}}, "n1").telemetry.otlp_endpoint


def test_resource_actions_and_exporter_settings_are_well_formed():
    cfg = documented_config()
    for act in cfg["processors"]["resource"]["attributes"]:
        assert act["action"] in ("insert", "update", "upsert", "delete", "hash", "extract", "convert")
        assert act["key"].startswith("gcm.")  # namespaced like every attribute we send
    ml = cfg["processors"]["memory_limiter"]
    assert ml["check_interval"] and 0 < ml["spike_limit_percentage"] < ml["limit_percentage"] <= 100
    assert urlparse(cfg["exporters"]["otlphttp/loki"]["endpoint"]).path == "/otlp"  # Loki 3.x's OTLP route
    assert cfg["exporters"]["prometheusremotewrite"]["endpoint"].endswith("/api/v1/write")


# ---------------------------------------------------------------- the logs path, emulated

pytest.importorskip("opentelemetry.proto.collector.logs.v1.logs_service_pb2")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
pytest.importorskip("opentelemetry.proto.collector.metrics.v1.metrics_service_pb2")

from http_receiver import OtlpReceiver  # noqa: E402 - tests/http_receiver.py


def _upsert(resource, actions):
    """The ``resource`` processor's insert/update/upsert on string values."""
    have = {kv.key: kv for kv in resource.attributes}
    for a in actions:
        kv = have.get(a["key"])
        if a["action"] in ("upsert", "update") and kv is not None:
            kv.value.string_value = str(a["value"])
        elif a["action"] in ("upsert", "insert") and kv is None:
            new = resource.attributes.add()
            new.key, new.value.string_value = a["key"], str(a["value"])


def test_gcm_checks_logs_flow_through_the_documented_pipeline_into_loki(tmp_path):
    from gcm_checks import telemetry
    from gcm_checks.config import resolve
    from gcm_checks.result import failed
    from gcm_checks.telemetry.events import report_event

    cfg = documented_config()
    loki_base = urlparse(cfg["exporters"]["otlphttp/loki"]["endpoint"]).path  # "/otlp"
    # Loki's OTLP endpoint takes OTLP/HTTP protobuf, at the exporter's base path.
    loki_srv = OtlpReceiver(prefix=loki_base)
    actions = cfg["processors"]["resource"]["attributes"]
    pipeline = cfg["service"]["pipelines"]["logs"]
    assert "otlphttp/loki" in pipeline["exporters"] and "resource" in pipeline["processors"]

    def resource_then_loki(req):
        for rl in req.resource_logs:
            _upsert(rl.resource, actions)
        # otlphttp: "<endpoint>/v1/logs"
        fwd = urllib.request.Request(loki_srv.url + loki_base + "/v1/logs", data=req.SerializeToString(),
                                     headers={"Content-Type": "application/x-protobuf"}, method="POST")
        with urllib.request.urlopen(fwd, timeout=5) as resp:
            assert resp.status == 200

    # The otlp receiver's default paths. The metrics pipeline ends in
    # Prometheus remote write (snappy protobuf), which is not emulated:
    # metrics are decoded and counted only.
    col = OtlpReceiver(on_logs=resource_then_loki)
    try:
        doc = {"generated_at": "2026-11-30T01:00:00+00:00",
               "job": {"job_id": "77", "key": "77", "user": "alice", "partition": "gpu", "nodes": ["gpu001"]},
               "outcome": {"failed": True, "state": "FAILED", "exit_status": "1:0", "nodes_drained": []},
               "classification": {"category": "gpu_hardware", "responsibility": "infrastructure", "confidence": 0.9,
                                  "rule": "xid-79", "sentence": "GPU 3 on gpu001 fell off the bus (XID 79)."}}
        settings = resolve({"telemetry": {"otlp_endpoint": col.url}}, "gpu001")
        out = telemetry.export([failed("gpu.responsive", "GPU has fallen off the bus", "GPU 3")], settings,
                               mode="epilog", node="gpu001", job_id="77", log_events=[report_event(doc)])
        assert out.get("otlp") == "ok", out
    finally:
        col.close()
        loki_srv.close()
    assert len(col.metrics) == 1
    assert loki_srv.logs and set(loki_srv.paths) == {"/otlp/v1/logs"}
    records = []
    for _, req in loki_srv.logs:
        for rl in req.resource_logs:
            res = {kv.key: kv.value.string_value for kv in rl.resource.attributes}
            assert res["gcm.cluster"] == "cluster-a"  # added by the resource processor
            assert res["service.instance.id"] == "gpu001" and res["service.name"] == "gcm-checks"
            for sl in rl.scope_logs:
                records += [{kv.key: kv.value.string_value for kv in lr.attributes} for lr in sl.log_records]
    # The two labels docs/telemetry.md tells Loki to index are on every record.
    assert {r["event.name"] for r in records} == {"gcm.check.result", "gcm.job.report"}
    assert all(k.startswith(("gcm.", "event.")) for r in records for k in r)
