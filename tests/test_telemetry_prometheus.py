"""Prometheus textfile sink: what we write parses with prometheus_client's
own parser, labels survive hostile text, files are per mode and atomic, and
the sink can never break a run."""

from __future__ import annotations

import os
import stat

import pytest

prom_parser = pytest.importorskip("prometheus_client.parser")

from gcm_checks import telemetry  # noqa: E402
from gcm_checks.config import resolve  # noqa: E402
from gcm_checks.result import failed, passed, unknown, warned  # noqa: E402
from gcm_checks.telemetry import model, prometheus  # noqa: E402

RESULTS = [
    passed("gpu.nvml", "NVML ok, driver 550.54.15"),
    failed("gpu.ecc.uncorrectable", "12 uncorrectable ECC errors", "GPU 3 (00000000:5D:00.0)"),
    warned("gpu.processes", "leftover process", "GPU 0 (00000000:18:00.0)"),
    unknown("dcgm.diag", "dcgmi not found"),
    failed("ib.port.state", "port down", "mlx5_2 port 1"),
]
XIDS = [
    {"xid": 79, "gpu_index": 3, "severity": "fail"},
    {"xid": 79, "gpu_index": 3, "severity": "fail"},
    {"xid": 13, "gpu_index": 0, "severity": "info"},
    {"code": 48, "gpu_index": None, "severity": "fail"},
]


def _parse(text):
    out = {}
    for fam in prom_parser.text_string_to_metric_families(text):
        out[fam.name] = fam
    return out


def _samples(fam):
    return [(s.labels, s.value) for s in fam.samples]


def test_render_parses_with_prometheus_client():
    samples, _ = model.build(RESULTS, mode="epilog", node="gpu001", when=1_790_000_000.5, job_id="4242", xids=XIDS,
                             drained=True, duration_s=0.25)
    fams = _parse(prometheus.render(samples))
    assert set(fams) == {"gcm_check_status", "gcm_check_severity", "gcm_node_verdict", "gcm_xid_events",
                         "gcm_node_drained", "gcm_last_run_timestamp_seconds", "gcm_run_duration_seconds"}
    assert all(f.type == "gauge" and f.documentation for f in fams.values())
    status = {(s["check"], s["gpu"], s["status"]): v for s, v in _samples(fams["gcm_check_status"])}
    assert status[("gpu.ecc.uncorrectable", "3", "fail")] == 1.0
    assert status[("gpu.processes", "0", "warn")] == 1.0
    assert status[("ib.port.state", "", "fail")] == 1.0
    sev = {(s["check"], s["subject"]): v for s, v in _samples(fams["gcm_check_severity"])}
    assert sev == {("gpu.nvml", ""): 0, ("gpu.ecc.uncorrectable", "GPU 3 (00000000:5D:00.0)"): 3,
                   ("gpu.processes", "GPU 0 (00000000:18:00.0)"): 1, ("dcgm.diag", ""): 2, ("ib.port.state", "mlx5_2 port 1"): 3}
    # No job label on per-check series: a job id is unbounded cardinality.
    assert all("job" not in s for fam in fams.values() for s, _ in _samples(fam))
    assert all(s["node"] == "gpu001" and s["mode"] == "epilog" for s, _ in _samples(fams["gcm_check_severity"]))
    assert _samples(fams["gcm_run_duration_seconds"]) == [({"node": "gpu001", "mode": "epilog"}, 0.25)]
    assert _samples(fams["gcm_node_verdict"]) == [({"node": "gpu001", "mode": "epilog"}, 3.0)]
    assert all(s["mode"] == "epilog" for s, _ in _samples(fams["gcm_xid_events"]))
    xids = {(s["code"], s["gpu"], s["severity"]): v for s, v in _samples(fams["gcm_xid_events"])}
    assert xids == {("79", "3", "fail"): 2.0, ("13", "0", "info"): 1.0, ("48", "", "fail"): 1.0}
    assert _samples(fams["gcm_node_drained"]) == [({"node": "gpu001"}, 1.0)]
    assert _samples(fams["gcm_last_run_timestamp_seconds"])[0][1] == 1_790_000_000.5


@pytest.mark.parametrize("drained, expect", [(None, None), (False, 0.0), (True, 1.0)])
def test_drain_state_only_when_known(drained, expect):
    samples, _ = model.build(RESULTS[:1], mode="health", node="n", when=1.0, drained=drained)
    fams = _parse(prometheus.render(samples))
    if expect is None:
        assert "gcm_node_drained" not in fams
    else:
        assert _samples(fams["gcm_node_drained"])[0][1] == expect


@pytest.mark.parametrize("hostile", [
    'GPU 1 "quoted" \\ backslash',
    "GPU 2\nnewline # HELP injected 1",
    "GPU 3 \x00\x1b[31m control",
    "GPU 4 } { = , label-ish",
])
def test_hostile_label_text_stays_one_sample(hostile):
    samples, _ = model.build([failed("gpu.x", "m", hostile)], mode="prolog", node="n", when=1.0)
    text = prometheus.render(samples)
    fams = _parse(text)
    subjects = [s["subject"] for s, _ in _samples(fams["gcm_check_severity"])]
    assert len(subjects) == 1
    # Controls and whole escape sequences go (gcm_checks.text); the rest survives escaping.
    assert subjects[0] == hostile.replace("\x00", "").replace("\x1b[31m", "")
    assert len([ln for ln in text.splitlines() if ln.startswith("gcm_check_severity{")]) == 1


@pytest.mark.parametrize("subject, gpu", [("GPU 3 (00000000:5D:00.0)", "3"), ("GPU 12", "12"), ("mlx5_0 port 1", ""), ("", "")])
def test_gpu_label(subject, gpu):
    assert model.gpu_label(subject) == gpu


def test_export_writes_one_file_per_mode_atomically(tmp_path):
    d = tmp_path / "textfile"
    settings = resolve({"telemetry": {"prometheus_textfile_dir": str(d)}}, "gpu001")
    assert telemetry.export(RESULTS, settings, mode="prolog", node="gpu001", job_id="7") == {"prometheus": "ok"}
    assert telemetry.export(RESULTS[:1], settings, mode="health", node="gpu001") == {"prometheus": "ok"}
    assert sorted(os.listdir(d)) == ["gcm_checks_health.prom", "gcm_checks_prolog.prom"]  # no temp file left
    # The drain state is not known here: no drain file, not a guessed 0.
    assert "gcm_node_drained" not in (d / "gcm_checks_prolog.prom").read_text()
    prolog = _parse((d / "gcm_checks_prolog.prom").read_text())
    health = _parse((d / "gcm_checks_health.prom").read_text())
    assert _samples(prolog["gcm_node_verdict"])[0][1] == 3.0
    assert _samples(health["gcm_node_verdict"])[0][1] == 0.0
    assert stat.S_IMODE(os.stat(d / "gcm_checks_prolog.prom").st_mode) == 0o644


def test_export_is_off_without_config():
    assert telemetry.export(RESULTS, resolve({}, "n"), mode="prolog", node="n") == {}


class _Log:
    def __init__(self):
        self.events = []

    def warning(self, event, **kw):
        self.events.append((event, kw))


def test_export_never_raises(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    settings = resolve({"telemetry": {"prometheus_textfile_dir": str(blocker / "sub")}}, "n")
    log = _Log()
    out = telemetry.export(RESULTS, settings, mode="prolog", node="n", log=log)
    assert out["prometheus"].startswith("error: ")
    assert log.events and log.events[0][1]["sink"] == "prometheus"
    # Garbage in (a result without a status) is still not an exception.
    out = telemetry.export([object()], settings, mode="prolog", node="n")
    assert out["telemetry"].startswith("error: ")


def test_an_undeclared_gauge_still_lands_in_the_run_file(tmp_path):
    # A caller may add a decision gauge without declaring it in model.METRICS:
    # it goes to the mode's file, never breaks the write.
    samples, _ = model.build(RESULTS[:1], mode="health", node="n", when=1.0)
    samples.append(model.Sample("gcm_some_new_gauge", (("mode", "health"), ("node", "n")), 1.0))
    prometheus.write(str(tmp_path), "health", samples)
    fams = _parse((tmp_path / "gcm_checks_health.prom").read_text())
    assert _samples(fams["gcm_some_new_gauge"]) == [({"mode": "health", "node": "n"}, 1.0)]
