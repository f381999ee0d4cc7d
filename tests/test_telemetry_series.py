"""The textfiles of every mode, written by the real prolog, health and epilog
processes into one directory, parsed together the way node_exporter's
textfile collector reads them: no series twice, no job label on per-check
series, the job tied to its GPUs by gcm_job_info, hardware series present
(and absent from the prolog, which makes no extra NVML call)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

prom_parser = pytest.importorskip("prometheus_client.parser")

from gcm_checks.gather import nvml  # noqa: E402
from gcm_checks.sim.fake_nvml import FakeNvml  # noqa: E402
from gcm_checks.sim.scenario import load as load_scenario  # noqa: E402
from gcm_checks.telemetry import hardware, model  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def cfg(tmp_path):
    p = tmp_path / "gcm.yaml"
    p.write_text(
        f"log_path: {tmp_path}/log.jsonl\nstate_dir: {tmp_path}/state\nbudget_s: 8\n"
        f"report: {{spool_dir: {tmp_path}/spool, report_dir: {tmp_path}/reports}}\n"
        f"notify: {{outbox_dir: {tmp_path}/outbox}}\n"
        "epilog: {query_job: false}\n"
        "gpu: {count: 8}\n"
        f"telemetry: {{prometheus_textfile_dir: {tmp_path}/prom}}\n"
    )
    return p


def run(mode, cfg, *args, job=None, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    e["SLURMD_NODENAME"] = "node1"
    if job:
        e.update({"SLURM_JOB_ID": job, "SLURM_JOB_USER": "root", "SLURM_JOB_UID": "0", "SLURM_JOB_GID": "0",
                  "SLURM_JOB_NODELIST": "node1", "SLURM_JOB_EXIT_CODE2": "0:0", "SLURM_JOB_EXIT_CODE": "0",
                  "SLURM_JOB_DERIVED_EC": "0", "SLURM_JOB_GPUS": "0,1,3"})
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "gcm_checks", mode, "--config", str(cfg), "--dry-run", *args],
                          capture_output=True, text=True, env=e, timeout=90, cwd=str(REPO))


def read_all(d):
    """{file: [(name, labels)]} for every *.prom file, as node_exporter sees them."""
    out = {}
    for f in sorted(Path(d).glob("*.prom")):
        out[f.name] = [(s.name, tuple(sorted(s.labels.items())), s.value)
                       for fam in prom_parser.text_string_to_metric_families(f.read_text()) for s in fam.samples]
    return out


def assert_no_duplicates(files):
    seen = {}
    for name, samples in files.items():
        for metric, labels, _ in samples:
            key = (metric, labels)
            assert key not in seen, f"{metric}{dict(labels)} in {seen.get(key)} and {name}"
            seen[key] = name
    return seen


def test_every_mode_together_has_no_duplicate_series(cfg, tmp_path):
    prom = tmp_path / "prom"
    assert run("prolog", cfg, "--sim", "healthy", job="77").returncode == 0
    files = read_all(prom)
    assert set(files) == {"gcm_checks_prolog.prom", "gcm_checks_job_77.prom"}
    job_info = sorted(dict(lb)["gpu"] for m, lb, _ in files["gcm_checks_job_77.prom"] if m == "gcm_job_info")
    assert job_info == ["0", "1", "3"]
    # The prolog exports no hardware readings (no extra NVML calls before a job).
    assert not any(m.startswith("gcm_gpu_") for m, _, _ in files["gcm_checks_prolog.prom"])

    assert run("health", cfg, "--sim", "healthy").returncode == 0
    # A second job runs beside the first (shared node): its own job file.
    assert run("prolog", cfg, "--sim", "healthy", job="78").returncode == 0
    files = read_all(prom)
    assert {"gcm_checks_health.prom", "gcm_checks_gpu.prom", "gcm_checks_ib.prom", "gcm_checks_job_78.prom",
            "gcm_checks_drain.prom"} <= set(files)
    seen = assert_no_duplicates(files)
    # Every metric family in exactly one file per mode-less series.
    for metric in ("gcm_node_drained", "gcm_gpu_temperature_celsius", "gcm_ib_port_counter"):
        assert len({f for (m, _), f in seen.items() if m == metric}) == 1, metric
    # Per-check series carry no job label; only gcm_job_info does.
    assert {m for (m, lb) in seen if "job" in dict(lb)} == {"gcm_job_info"}
    hw = {m for m, _, _ in files["gcm_checks_gpu.prom"]}
    assert {"gcm_gpu_up", "gcm_gpu_temperature_celsius", "gcm_gpu_power_watts", "gcm_gpu_sm_clock_hertz",
            "gcm_gpu_throttle_reason", "gcm_gpu_ecc_errors", "gcm_gpu_retired_pages", "gcm_gpu_remapped_rows",
            "gcm_gpu_nvlink_errors"} <= hw
    temps = {dict(lb)["gpu"]: v for m, lb, v in files["gcm_checks_gpu.prom"] if m == "gcm_gpu_temperature_celsius"}
    assert temps == {str(i): 33.0 for i in range(8)}  # the scenario's value, not a constant
    idle = [v for m, lb, v in files["gcm_checks_gpu.prom"]
            if m == "gcm_gpu_throttle_reason" and dict(lb)["reason"] == "gpu_idle"]
    assert idle == [1.0] * 8
    assert {m for m, _, _ in files["gcm_checks_ib.prom"]} >= {"gcm_ib_port_active", "gcm_ib_port_rate_bits_per_second"}
    drained = [v for m, _, v in files["gcm_checks_drain.prom"]]
    assert drained == [0.0]
    durations = [v for m, _, v in files["gcm_checks_health.prom"] if m == "gcm_run_duration_seconds"]
    assert len(durations) == 1 and 0 < durations[0] < 60

    # The job ends: its epilog rewrites the GPU file and removes the job's info.
    assert run("epilog", cfg, "--sim", "healthy", job="77").returncode == 0
    files = read_all(prom)
    assert "gcm_checks_job_77.prom" not in files and "gcm_checks_job_78.prom" in files
    assert "gcm_checks_epilog.prom" in files
    assert_no_duplicates(files)


def test_health_on_a_lost_gpu_graphs_it_down(cfg, tmp_path):
    run("health", cfg, "--sim", "gpu-lost")
    files = read_all(tmp_path / "prom")
    up = {dict(lb)["gpu"]: v for m, lb, v in files["gcm_checks_gpu.prom"] if m == "gcm_gpu_up"}
    assert up["3"] == 0.0 and up["0"] == 1.0
    # No readings invented for the lost GPU.
    assert not [lb for m, lb, _ in files["gcm_checks_gpu.prom"] if m == "gcm_gpu_temperature_celsius" and dict(lb)["gpu"] == "3"]


def _gather(extended, **gpu):
    scenario = load_scenario("healthy")
    for g in scenario["gpus"]:
        g.update(gpu)
    fake = FakeNvml(scenario)
    return nvml.gather(lambda: fake, 2.0, extended=extended), fake


def test_prolog_gather_makes_no_telemetry_only_nvml_call():
    facts, fake = _gather(False)
    extra = {"nvmlDeviceGetPowerUsage", "nvmlDeviceGetClockInfo", "nvmlDeviceGetRetiredPages",
             "nvmlDeviceGetNvLinkState", "nvmlDeviceGetNvLinkErrorCounter"}
    assert not extra & set(fake.calls)
    assert facts.gpus[0].power_w is None
    samples = hardware.gpu_samples(facts, "n")
    assert not [s for s in samples if s.name == "gcm_gpu_power_watts"]  # absent, never a made-up 0


def test_extended_readings_follow_the_hardware():
    facts, fake = _gather(True, power_w=412.5, sm_clock_mhz=1755, ecc_corrected_aggregate=9,
                          retired_pages={"single_bit": 2, "double_bit": 1},
                          remapped_rows={"correctable": 4, "uncorrectable": 1, "pending": True, "failure": False},
                          nvlink={"links": 12, "down": [5], "errors": {"replay": 7, "crc_flit": 3}})
    got = {(s.name, dict(s.labels).get("type", "") + dict(s.labels).get("cause", "") + dict(s.labels).get("kind", "")
            + dict(s.labels).get("counter", "")): s.value
           for s in hardware.gpu_samples(facts, "n") if dict(s.labels)["gpu"] == "2"}
    assert got[("gcm_gpu_power_watts", "")] == 412.5
    assert got[("gcm_gpu_sm_clock_hertz", "")] == 1755e6
    assert got[("gcm_gpu_ecc_errors", "correctedaggregate")] == 9
    assert got[("gcm_gpu_retired_pages", "single_bit")] == 2 and got[("gcm_gpu_retired_pages", "double_bit")] == 1
    assert got[("gcm_gpu_remapped_rows", "correctable")] == 4 and got[("gcm_gpu_row_remap_pending", "")] == 1
    assert got[("gcm_gpu_nvlink_errors", "replay")] == 7 and got[("gcm_gpu_nvlink_errors", "crc_flit")] == 3
    # Links stop at the first NVML "invalid argument" (12 links, one probe past them), not at 18.
    assert fake.calls.count("nvmlDeviceGetNvLinkState") == 8 * 13
    # The down link (5) is not read: 11 active links x 4 counters per GPU.
    assert fake.calls.count("nvmlDeviceGetNvLinkErrorCounter") == 8 * 11 * 4


# How the OpenTelemetry Collector's Prometheus exporters name an OTLP metric
# (pkg/translator/prometheus, add_metric_suffixes on): dots become
# underscores, a unit adds its suffix, an {annotation} unit adds none.
_UNIT_SUFFIX = {"s": "seconds", "Cel": "celsius", "W": "watts", "Hz": "hertz", "bit/s": "bits_per_second"}


def _collector_name(otlp, unit):
    name = otlp.replace(".", "_")
    if unit.startswith("{"):
        return name
    suffix = _UNIT_SUFFIX[unit]  # a KeyError here: a unit without a documented suffix
    return name if name.endswith(suffix) else f"{name}_{suffix}"


def test_every_metric_has_a_unit_a_file_and_the_same_name_through_a_collector():
    for name, m in model.METRICS.items():
        assert m.file in {"run", "drain", "job", "gpu", "ib"} and m.help and m.unit
        assert m.unit != "1", f"{name}: unit '1' gets a _ratio suffix in Prometheus; use an annotation"
        assert _collector_name(m.otlp, m.unit) == name, (name, m.otlp, m.unit)


def test_the_epilog_alone_writes_gpu_and_ib_readings(cfg, tmp_path):
    # The epilog judges no IB port, but it graphs them (one sysfs read after the verdict).
    assert run("epilog", cfg, "--sim", "healthy", job="90").returncode == 0
    files = read_all(tmp_path / "prom")
    assert set(files) == {"gcm_checks_epilog.prom", "gcm_checks_gpu.prom", "gcm_checks_ib.prom"}
    active = [v for m, _, v in files["gcm_checks_ib.prom"] if m == "gcm_ib_port_active"]
    assert active == [1.0] * 8
    powers = [v for m, _, v in files["gcm_checks_gpu.prom"] if m == "gcm_gpu_power_watts"]
    assert len(powers) == 8


def test_a_failing_prolog_ties_no_gpu_to_the_job(cfg, tmp_path):
    # The job is requeued elsewhere: a gcm_job_info file here would never be removed.
    run("prolog", cfg, "--sim", "gpu-lost", job="66")
    files = read_all(tmp_path / "prom")
    assert "gcm_checks_job_66.prom" not in files and "gcm_checks_prolog.prom" in files
    # --dry-run drained nothing, so it claims no drain state either.
    assert "gcm_checks_drain.prom" not in files
