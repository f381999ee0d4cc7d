"""OTLP sink against a real OTLP/HTTP receiver on 127.0.0.1 that decodes the
protobuf requests with opentelemetry-proto, as a collector would."""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
pytest.importorskip("opentelemetry.proto.collector.logs.v1.logs_service_pb2")
pytest.importorskip("opentelemetry.proto.collector.metrics.v1.metrics_service_pb2")

from gcm_checks import telemetry  # noqa: E402
from gcm_checks.config import resolve  # noqa: E402
from gcm_checks.result import failed, passed, unknown  # noqa: E402
from http_receiver import OtlpReceiver  # noqa: E402 - tests/http_receiver.py


def _attrs(kvs):
    return {kv.key: (kv.value.string_value or kv.value.int_value or kv.value.double_value) for kv in kvs}


RESULTS = [
    passed("gpu.nvml", "NVML ok"),
    failed("gpu.ecc.uncorrectable", "12 uncorrectable ECC errors", "GPU 3 (00000000:5D:00.0)"),
    unknown("dcgm.diag", "dcgmi not found"),
]


def test_metrics_and_logs_reach_a_real_receiver():
    with OtlpReceiver() as rx:
        settings = resolve({"telemetry": {"otlp_endpoint": rx.url, "otlp_headers": {"x-token": "abc"}}}, "gpu001")
        out = telemetry.export(RESULTS, settings, mode="epilog", node="gpu001", job_id="4242",
                               xids=[{"xid": 79, "gpu_index": 3, "severity": "fail"}], drained=True, when=1_790_000_000.0,
                               duration_s=1.5)
        assert out == {"otlp": "ok"}
    assert len(rx.metrics) == 1
    headers, req = rx.metrics[0]
    assert headers.get("content-type") == "application/x-protobuf" and headers.get("x-token") == "abc"
    (rm,) = req.resource_metrics
    res = _attrs(rm.resource.attributes)
    # A stable instance id (the node), not a random UUID per run.
    assert res["service.name"] == "gcm-checks" and res["host.name"] == "gpu001"
    assert res["service.instance.id"] == "gpu001"
    points, units = {}, {}
    for sm in rm.scope_metrics:
        for m in sm.metrics:
            assert m.WhichOneof("data") == "gauge"
            points[m.name] = [(_attrs(p.attributes), p.as_double) for p in m.gauge.data_points]
            units[m.name] = m.unit
    assert set(points) == {"gcm.check.status", "gcm.check.severity", "gcm.node.verdict", "gcm.xid.events",
                           "gcm.node.drained", "gcm.last_run_timestamp", "gcm.run.duration"}
    assert units == {"gcm.check.status": "{status}", "gcm.check.severity": "{severity}",
                     "gcm.node.verdict": "{severity}", "gcm.xid.events": "{event}", "gcm.node.drained": "{state}",
                     "gcm.last_run_timestamp": "s", "gcm.run.duration": "s"}
    # Attributes are namespaced, the node lives in the resource, no job on metrics.
    for name, pts in points.items():
        for a, _ in pts:
            assert all(k.startswith("gcm.") for k in a), (name, a)
            assert "node" not in a and "gcm.job.id" not in a
    sev = {(a["gcm.check.id"], a.get("gcm.gpu.index", "")): v for a, v in points["gcm.check.severity"]}
    assert sev == {("gpu.nvml", ""): 0.0, ("gpu.ecc.uncorrectable", "3"): 3.0, ("dcgm.diag", ""): 2.0}
    assert all(a["gcm.mode"] == "epilog" for a, _ in points["gcm.check.severity"])
    assert points["gcm.xid.events"] == [({"gcm.mode": "epilog", "gcm.xid.code": "79", "gcm.gpu.index": "3",
                                         "gcm.xid.severity": "fail"}, 1.0)]
    assert points["gcm.node.drained"] == [({}, 1.0)]
    assert points["gcm.run.duration"] == [({"gcm.mode": "epilog"}, 1.5)]
    assert points["gcm.last_run_timestamp"][0][1] == 1_790_000_000.0
    # One log record per non-passing result, severity mapped to OTLP's scale.
    records = [lr for _, r in rx.logs for rl in r.resource_logs for sl in rl.scope_logs for lr in sl.log_records]
    assert {_attrs(rl.resource.attributes)["service.instance.id"] for _, r in rx.logs for rl in r.resource_logs} == {"gpu001"}
    got = sorted((lr.severity_text, lr.severity_number, lr.body.string_value, _attrs(lr.attributes)["gcm.check.id"])
                 for lr in records)
    assert got == [
        ("FAIL", 17, "gpu.ecc.uncorrectable GPU 3 (00000000:5D:00.0): 12 uncorrectable ECC errors", "gpu.ecc.uncorrectable"),
        ("UNKNOWN", 13, "dcgm.diag gpu001: dcgmi not found", "dcgm.diag"),
    ]
    for lr in records:
        a = _attrs(lr.attributes)
        assert a["event.name"] == "gcm.check.result" and a["gcm.job.id"] == "4242" and a["gcm.mode"] == "epilog"
        assert lr.time_unix_nano == 1_790_000_000 * 10**9


def test_all_passing_run_sends_metrics_and_no_logs():
    with OtlpReceiver() as rx:
        settings = resolve({"telemetry": {"otlp_endpoint": rx.url + "/"}}, "n")
        assert telemetry.export(RESULTS[:1], settings, mode="prolog", node="n") == {"otlp": "ok"}
    assert len(rx.metrics) == 1 and rx.logs == []


def test_a_collector_that_never_answers_is_an_error_not_a_hang():
    with OtlpReceiver(hang=True) as rx:
        settings = resolve({"telemetry": {"otlp_endpoint": rx.url, "otlp_timeout_s": 0.3}}, "n")
        out = telemetry.export(RESULTS, settings, mode="prolog", node="n")
    assert out["otlp"].startswith("error: ")


def test_a_refused_connection_is_an_error_and_prometheus_still_writes(tmp_path):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    settings = resolve({"telemetry": {"otlp_endpoint": f"http://127.0.0.1:{port}", "otlp_timeout_s": 0.5,
                                      "prometheus_textfile_dir": str(tmp_path)}}, "n")
    out = telemetry.export(RESULTS, settings, mode="epilog", node="n")
    assert out["prometheus"] == "ok" and out["otlp"].startswith("error: ")
    assert (tmp_path / "gcm_checks_epilog.prom").exists()


def test_hardware_series_units_and_a_job_report_record():
    from gcm_checks.gather import nvml
    from gcm_checks.sim.fake_nvml import FakeNvml
    from gcm_checks.sim.scenario import load as load_scenario
    from gcm_checks.telemetry.events import report_event, slurm_action_event

    scenario = load_scenario("healthy")
    facts = nvml.gather(lambda: FakeNvml(scenario), 2.0, extended=True)
    doc = {"generated_at": "2026-11-30T01:00:00+00:00",
           "job": {"job_id": "4242", "key": "4242.0", "user": "alice", "partition": "gpu", "nodes": ["gpu001", "gpu002"],
                   "cluster": "c1"},
           "outcome": {"failed": True, "state": "FAILED", "exit_status": "1:0", "nodes_drained": ["gpu001"]},
           "classification": {"category": "gpu_hardware", "responsibility": "infrastructure", "confidence": 0.9,
                              "rule": "xid-79", "sentence": "GPU 3 on gpu001 fell off the bus (XID 79)."}}
    events = [report_event(doc), slurm_action_event("drain", {"action": "drained", "reason": "gcm: xid 79"}, "gpu001")]
    with OtlpReceiver() as rx:
        settings = resolve({"telemetry": {"otlp_endpoint": rx.url}}, "gpu001")
        out = telemetry.export(RESULTS[:1], settings, mode="health", node="gpu001", gpu_facts=facts, log_events=events)
        assert out == {"otlp": "ok"}
    (rm,) = rx.metrics[0][1].resource_metrics
    metrics = {m.name: m for sm in rm.scope_metrics for m in sm.metrics}
    assert metrics["gcm.gpu.temperature"].unit == "Cel"
    assert metrics["gcm.gpu.power"].unit == "W" and metrics["gcm.gpu.sm_clock"].unit == "Hz"
    temps = {_attrs(p.attributes)["gcm.gpu.index"]: p.as_double for p in metrics["gcm.gpu.temperature"].gauge.data_points}
    assert temps == {str(i): 33.0 for i in range(8)}
    throttle = {tuple(sorted(_attrs(p.attributes))) for p in metrics["gcm.gpu.throttle_reason"].gauge.data_points}
    assert throttle == {("gcm.gpu.index", "gcm.gpu.throttle.reason")}
    records = {(_attrs(lr.attributes)["event.name"]): lr
               for _, r in rx.logs for rl in r.resource_logs for sl in rl.scope_logs for lr in sl.log_records}
    rep = records["gcm.job.report"]
    a = _attrs(rep.attributes)
    assert rep.severity_text == "FAIL" and rep.body.string_value.startswith("job 4242 FAILED: GPU 3 on gpu001")
    assert a["gcm.job.id"] == "4242" and a["gcm.failure.category"] == "gpu_hardware"
    assert a["gcm.failure.responsibility"] == "infrastructure" and a["gcm.job.nodes"] == "gpu001,gpu002"
    assert rep.time_unix_nano == 1_796_000_400 * 10**9  # the report's own time, not the export's
    drain = _attrs(records["gcm.node.drain"].attributes)
    assert drain["gcm.slurm.action"] == "drain:drained" and drain["gcm.drain.reason"] == "gcm: xid 79"


def test_health_process_sends_hardware_metrics_to_a_collector(tmp_path):
    """The real `gcm-checks health` process, simulated node, real receiver:
    the hardware series arrive over OTLP with the node as the instance."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    with OtlpReceiver() as rx:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"log_path: {tmp_path}/log.jsonl\nstate_dir: {tmp_path}/state\nbudget_s: 8\ngpu: {{count: 8}}\n"
                       f"telemetry: {{otlp_endpoint: '{rx.url}'}}\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
        env["SLURMD_NODENAME"] = "gpu042"
        p = subprocess.run([sys.executable, "-m", "gcm_checks", "health", "--config", str(cfg), "--sim", "gpu-lost",
                            "--dry-run"], capture_output=True, text=True, env=env, timeout=90, cwd=str(repo))
        assert p.returncode in (0, 1, 100), p.stderr
    (rm,) = rx.metrics[0][1].resource_metrics
    assert _attrs(rm.resource.attributes)["service.instance.id"] == "gpu042"
    metrics = {m.name: m for sm in rm.scope_metrics for m in sm.metrics}
    up = {_attrs(d.attributes)["gcm.gpu.index"]: d.as_double for d in metrics["gcm.gpu.up"].gauge.data_points}
    assert up["3"] == 0.0 and up["0"] == 1.0
    assert {"gcm.gpu.temperature", "gcm.gpu.power", "gcm.gpu.sm_clock", "gcm.ib.port.counter",
            "gcm.run.duration"} <= set(metrics)
    records = [lr for _, r in rx.logs for rl in r.resource_logs for sl in rl.scope_logs for lr in sl.log_records]
    fails = [_attrs(lr.attributes) for lr in records if lr.severity_text == "FAIL"]
    assert any(a.get("gcm.gpu.index") == "3" and a["gcm.mode"] == "health" for a in fails)


def test_epilog_process_exports_its_job_report_as_a_log_record(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    with OtlpReceiver() as rx:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(f"log_path: {tmp_path}/log.jsonl\nstate_dir: {tmp_path}/state\nbudget_s: 8\ngpu: {{count: 8}}\n"
                       f"report: {{spool_dir: {tmp_path}/spool, report_dir: {tmp_path}/reports}}\n"
                       f"notify: {{outbox_dir: {tmp_path}/outbox}}\nepilog: {{query_job: false}}\n"
                       f"telemetry: {{otlp_endpoint: '{rx.url}'}}\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
        env.update({"SLURMD_NODENAME": "node1", "SLURM_JOB_ID": "4711", "SLURM_JOB_USER": "root", "SLURM_JOB_UID": "0",
                    "SLURM_JOB_GID": "0", "SLURM_JOB_NODELIST": "node1", "SLURM_JOB_PARTITION": "gpu",
                    "SLURM_JOB_EXIT_CODE2": "3:0", "SLURM_JOB_EXIT_CODE": "768", "SLURM_JOB_DERIVED_EC": "0"})
        p = subprocess.run([sys.executable, "-m", "gcm_checks", "epilog", "--config", str(cfg), "--sim", "healthy",
                            "--dry-run"], capture_output=True, text=True, env=env, timeout=90, cwd=str(repo))
        assert p.returncode == 0, p.stderr
    records = [lr for _, r in rx.logs for rl in r.resource_logs for sl in rl.scope_logs for lr in sl.log_records]
    reports = [lr for lr in records if _attrs(lr.attributes).get("event.name") == "gcm.job.report"]
    assert len(reports) == 1, [_attrs(lr.attributes) for lr in records]
    a = _attrs(reports[0].attributes)
    assert a["gcm.job.id"] == "4711" and a["gcm.job.partition"] == "gpu" and a["gcm.job.exit_status"] == "3:0"
    assert reports[0].body.string_value.startswith("job 4711 ")
