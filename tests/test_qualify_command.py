"""``gcm-checks qualify`` as a real process on simulated nodes, the Slurm
outcome against the in-memory slurmctld, and the probe adapters at their
boundary (a fake ``dcgmi`` executable, a fake ``torch`` module)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types

import pytest

from gcm_checks import slurm
from gcm_checks.config import resolve
from gcm_checks.qualify import levels
from gcm_checks.qualify import qualification as qrun
from gcm_checks.result import Status, failed, passed, unknown
from gcm_checks.testing import MemoryBackend

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def cfg(tmp_path):
    path = tmp_path / "gcm.yaml"
    path.write_text(textwrap.dedent(f"""\
        state_dir: {tmp_path}/state
        log_path: {tmp_path}/log.jsonl
        slurm: {{scontrol: {tmp_path}/no-scontrol}}
        qualify: {{results_dir: {tmp_path}/results}}
        """))
    return path


def qualify(cfg, *args):
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("GCM_CHECKS_CONFIG", None)
    argv = [sys.executable, "-m", "gcm_checks", "qualify", "--config", str(cfg), "--node", "gpu001", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, cwd=REPO)


# ---------------------------------------------------------------- the command
@pytest.mark.parametrize("scenario, level, code, verdict, failing", [
    ("healthy-dcgm", "standard", 0, "pass", set()),
    ("healthy-dcgm", "deep", 0, "pass", set()),
    ("healthy-dcgm", "quick", 0, "pass", set()),
    ("slow-gpu", "standard", 1, "fail", {("perf.gemm", "GPU 5"), ("perf.mem_bw", "GPU 5")}),
    # The slow GPU passes every health check: only the probe (standard, deep) sees it.
    ("slow-gpu", "quick", 0, "pass", set()),
    ("gpu-lost", "standard", 1, "fail", {("gpu.responsive", "GPU 3")}),
    # No DCGM on the node: "could not tell" is not qualified, and not a drain.
    ("healthy", "standard", 1, "unknown", set()),
])
def test_qualify_levels_on_simulated_nodes(cfg, tmp_path, scenario, level, code, verdict, failing):
    p = qualify(cfg, "--sim", scenario, "--level", level, "--json")
    assert p.returncode == code, p.stderr
    doc = json.loads(p.stdout)
    assert doc["verdict"] == verdict and doc["level"] == level
    assert {(r["check"], r["subject"].split(" (")[0]) for r in doc["results"] if r["status"] == "fail"} >= failing
    checks = {r["check"] for r in doc["results"]}
    assert ("perf.gemm" in checks) == (level != "quick")
    # Each check runs once even though gpu.* carries every suite's tag.
    gpu_nvml = [r for r in doc["results"] if r["check"] == "gpu.nvml"]
    assert len(gpu_nvml) == 1
    on_disk = json.loads(open(doc["result_file"]).read())
    assert on_disk["verdict"] == verdict and on_disk["node"] == "gpu001"
    if verdict == "fail":
        assert doc["slurm"]["reason"].startswith("gcm: ") and "(qualify " in doc["slurm"]["reason"]
    if verdict == "unknown":
        assert doc["slurm"]["action"].startswith("not qualified") and doc["slurm"]["reason"] is None


def test_slow_gpu_message_names_measured_and_expected(cfg):
    p = qualify(cfg, "--sim", "slow-gpu", "--json", "--no-slurm")
    doc = json.loads(p.stdout)
    (gemm,) = [r for r in doc["results"] if r["check"] == "perf.gemm" and r["status"] == "fail"]
    assert "518 TFLOPS" in gemm["message"] and "expected 740 TFLOPS" in gemm["message"]
    assert doc["slurm"]["action"] is None  # --no-slurm
    gpus = {g["index"]: g for g in doc["perf"]["gpus"]}
    assert gpus[5]["gemm_tflops"] == 518.0 and gpus[0]["model"] == "H100-SXM"


def test_sibling_comparison_catches_slow_gpu_of_a_model_without_baseline(cfg, tmp_path):
    sc = tmp_path / "future.yaml"
    sc.write_text(textwrap.dedent("""\
        extends: healthy-dcgm
        gpus:
          template: {name: NVIDIA Future X1, perf: {gemm_tflops: 2000.0, mem_bw_gbps: 9000.0}}
          overrides:
            1: {perf: {gemm_tflops: 1600.0}}
        """))
    p = qualify(cfg, "--sim", str(sc), "--json", "--no-slurm")
    doc = json.loads(p.stdout)
    fails = [r for r in doc["results"] if r["status"] == "fail"]
    assert [(r["check"], r["subject"].split(" (")[0]) for r in fails] == [("perf.gemm", "GPU 1")]
    assert "20% below the median of its 7 sibling GPUs" in fails[0]["message"]
    assert p.returncode == 1


def test_plain_progress_lines_when_not_a_terminal(cfg):
    p = qualify(cfg, "--sim", "healthy-dcgm", "--level", "standard")
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("qualify gpu001 [")]
    assert [ln.split("]")[0] for ln in lines] == ["qualify gpu001 [1/3", "qualify gpu001 [1/3", "qualify gpu001 [2/3",
                                                 "qualify gpu001 [2/3", "qualify gpu001 [3/3", "qualify gpu001 [3/3"]
    assert "\r" not in p.stderr
    assert "STATUS" in p.stdout and "performance (sim, bf16)" in p.stdout


def test_live_bar_redraws_on_a_terminal():
    import io

    from gcm_checks.commands.qualify import ProgressBar

    out = io.StringIO()
    bar = ProgressBar("n1", "standard", out, live=True)
    bar(0, 3, "prolog", None)
    bar(1, 3, "prolog", [])
    bar.close()
    text = out.getvalue()
    assert "\r\x1b[Kqualify standard [--------" in text and "[########----------------] 1/3" in text


@pytest.mark.parametrize("args, code, err", [
    (["--level", "thorough"], 2, "invalid choice"),
])
def test_usage_errors(cfg, args, code, err):
    p = qualify(cfg, *args)
    assert p.returncode == code and err in p.stderr


def test_config_error_exits_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("qualify: {fraction: lots}\n")
    p = qualify(bad)
    assert p.returncode == 2 and "qualify.fraction" in p.stderr


def test_unwritable_results_dir_is_reported_not_fatal(cfg, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    p = qualify(cfg, "--sim", "healthy-dcgm", "--json", "--results-dir", str(blocker / "sub"), "--no-slurm")
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and doc["result_file"] is None and "cannot write result file" in doc["result_error"]


# ---------------------------------------------------------------- Slurm outcome
def _outcome(results, node="gpu001"):
    o = qrun.QualifyOutcome(node, levels.resolve("standard"), 1_790_000_000.0, 1_790_000_600.0)
    o.results = list(results)
    return o


def _settings(tmp_path):
    return resolve({"state_dir": str(tmp_path)}, "gpu001")


def _publish(outcome, backend, tmp_path, monkeypatch):
    monkeypatch.setattr(slurm, "backend_from_settings", lambda *a, **k: backend)
    return qrun.publish(outcome, _settings(tmp_path), state_dir=str(tmp_path))


def test_pass_adds_gcm_qualified_and_keeps_other_features(tmp_path, monkeypatch):
    be = MemoryBackend({"gpu001": slurm.NodeInfo("gpu001", "IDLE", available_features=("h100", "gcm_ok"),
                                                       active_features=("h100", "gcm_ok"))})
    action, reason = _publish(_outcome([passed("gpu.nvml", "ok")]), be, tmp_path, monkeypatch)
    assert action == "set gcm_qualified" and reason is None
    n = be.nodes["gpu001"]
    assert list(n.active_features) == ["h100", "gcm_ok", "gcm_qualified"]
    assert n.extra == "gcm qualified 2026-09-21T14:23:20Z"
    assert not n.drained


def test_fail_drains_and_removes_gcm_qualified(tmp_path, monkeypatch):
    be = MemoryBackend({"gpu001": slurm.NodeInfo("gpu001", "IDLE", available_features=("h100", "gcm_qualified"),
                                                       active_features=("h100", "gcm_qualified"))})
    bad = failed("perf.gemm", "long text", "GPU 5 (00000000:AB:00.0)", short="GEMM 518 TFLOPS, 70% of 740 expected for H100-SXM")
    action, reason = _publish(_outcome([passed("gpu.nvml", "ok"), bad]), be, tmp_path, monkeypatch)
    assert action == "drained"
    n = be.nodes["gpu001"]
    assert n.drained and n.reason == "gcm: GPU 5 slow (qualify perf.gemm) 00000000:AB:00.0: GEMM 518 TFLOPS, 70% of 740 expected for H100-SXM"
    assert list(n.active_features) == ["h100"]
    assert n.extra.startswith("gcm qualify-failed ") and n.extra.endswith("perf.gemm")


def test_fail_keeps_an_admins_drain(tmp_path, monkeypatch):
    be = MemoryBackend({"gpu001": slurm.NodeInfo("gpu001", "IDLE+DRAIN", reason="maintenance: PSU swap", reason_user="alice")})
    action, _ = _publish(_outcome([failed("perf.gemm", "slow", "GPU 1")]), be, tmp_path, monkeypatch)
    assert action == "kept_foreign" and be.nodes["gpu001"].reason == "maintenance: PSU swap"
    assert not [u for u in be.updates if u[0] == "drain"]


def test_unknown_touches_nothing(tmp_path, monkeypatch):
    be = MemoryBackend()
    action, reason = _publish(_outcome([passed("gpu.nvml", "ok"), unknown("dcgm.diag", "dcgmi missing")]), be, tmp_path, monkeypatch)
    assert action.startswith("not qualified") and reason is None
    assert be.updates == [] and be.reads == 0


def test_report_only_changes_nothing(tmp_path, monkeypatch):
    be = MemoryBackend()
    monkeypatch.setattr(slurm, "backend_from_settings", lambda *a, **k: be)
    action, _ = qrun.publish(_outcome([failed("perf.gemm", "slow", "GPU 1")]),
                             resolve({"report_only": True}, "gpu001"), state_dir=str(tmp_path))
    assert action == "would drain" and be.updates == []


# ---------------------------------------------------------------- probe adapters
FAKE_DCGMI = """#!/bin/sh
# fake dcgmi: records its argv, answers like `dcgmi diag -r <test> -j`
echo "$@" >> "{log}"
case "$*" in
  *memory_bandwidth*) status2=Fail; warn='"warnings": [{{"warning": "GPU 2 bandwidth 2101000 MB/s below 2550000", "error_id": 56}}],' ;;
  *) status2=Pass; warn='' ;;
esac
cat <<EOF
{{"DCGM GPU Diagnostic": {{"version": "3.3.5", "test_categories": [{{"category": "Performance", "tests": [{{"name": "test",
 "results": [{{"gpu_ids": "0,1,3", "status": "Pass"}}, {{"gpu_id": "2", $warn "status": "$status2"}}]}}]}}]}}}}
EOF
exit 0
"""


def test_dcgm_probe_passes_our_threshold_and_reads_verdicts(tmp_path):
    from gcm_checks.qualify import probe

    log = tmp_path / "argv.log"
    dcgmi = tmp_path / "dcgmi"
    dcgmi.write_text(FAKE_DCGMI.format(log=log))
    dcgmi.chmod(0o755)
    gpus = [probe.GpuRef(i, f"GPU {i}", "NVIDIA H100 80GB HBM3") for i in range(4)]
    facts = probe.probe_dcgm(gpus, {"gemm_tflops": 629.0, "mem_bw_gbps": 2550.0}, str(dcgmi), timeout=20)
    calls = log.read_text().splitlines()
    assert "diag -r targeted_stress -j -p targeted_stress.target_stress=629000" in calls
    assert "diag -r memory_bandwidth -j -p memory_bandwidth.minimum_bandwidth=2550000" in calls
    from gcm_checks.qualify.baselines import lookup
    from gcm_checks.qualify.judge import judge_metric

    bw = judge_metric("mem_bw_gbps", facts, lookup, 0.85, 0.1)
    assert [(r.status, r.subject) for r in bw] == [(Status.FAIL, "GPU 2")] and "2101000 MB/s" in bw[0].message
    gemm = judge_metric("gemm_tflops", facts, lookup, 0.85, 0.1)
    assert [r.status for r in gemm] == [Status.PASS]


def test_dcgm_probe_without_dcgmi_is_unknown(tmp_path):
    from gcm_checks.qualify import probe

    facts = probe.probe_dcgm([probe.GpuRef(0, "GPU 0", "x")], {}, str(tmp_path / "missing-dcgmi"), timeout=5)
    assert facts.problem and "all unavailable" in facts.problem


class _FakeTensor:
    def copy_(self, other):
        return self


def _fake_torch(calls):
    t = types.ModuleType("torch")
    t.bfloat16, t.uint8 = "bf16", "u8"
    t.device = lambda kind, index: (kind, index)
    t.randn = lambda *a, **k: _FakeTensor()
    t.empty = lambda *a, **k: _FakeTensor()
    t.empty_like = lambda x: _FakeTensor()

    def matmul(a, b, out=None):
        calls.append("matmul")
        return out

    t.matmul = matmul
    t.cuda = types.SimpleNamespace(synchronize=lambda dev: calls.append(("sync", dev)), empty_cache=lambda: None)
    return t


def test_torch_adapter_times_gemm_and_copy(monkeypatch):
    from gcm_checks.qualify import probe

    calls: list = []
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(calls))
    out = probe.torch_one(3, seconds=0.0, n=1024, copy_bytes=1 << 20)
    assert set(out) == {"gemm_tflops", "mem_bw_gbps"} and all(v > 0 for v in out.values())
    assert calls.count("matmul") == 3 + 10  # warm-up, then one timed batch
    assert ("sync", ("cuda", 3)) in calls


def test_parallel_probe_reports_errors_and_hangs_per_gpu():
    import threading

    from gcm_checks.qualify import probe

    never = threading.Event()

    def one(i):
        if i == 1:
            raise RuntimeError("CUDA error: out of memory")
        if i == 2:
            never.wait(5)
        return {"gemm_tflops": 700.0 + i, "mem_bw_gbps": 3000.0}

    gpus = [probe.GpuRef(i, f"GPU {i}", "NVIDIA H100 80GB HBM3") for i in range(3)]
    gpus.append(probe.GpuRef(3, "GPU 3", "NVIDIA H100 80GB HBM3", broken="GPU is lost"))
    facts = probe._parallel(gpus, one, 0.3, "torch", "bf16")
    never.set()
    g = {x.index: x for x in facts.gpus}
    assert g[0].gemm_tflops == 700.0
    assert "out of memory" in g[1].errors["gemm_tflops"] and not g[1].hung
    assert g[2].hung and "did not finish" in g[2].errors["gemm_tflops"]
    assert g[3].errors["gemm_tflops"] == "GPU is lost"


def _fake_cupy(calls):
    c = types.ModuleType("cupy")
    c.float32, c.float16, c.uint8 = "f32", "f16", "u8"

    class Arr:
        def astype(self, dtype):
            return self

    class Device:
        def __init__(self, index):
            self.index = index

        def __enter__(self):
            calls.append(("device", self.index))
            return self

        def __exit__(self, *exc):
            return False

        def synchronize(self):
            calls.append("sync")

    c.random = types.SimpleNamespace(random=lambda shape, dtype=None: Arr())
    c.empty = lambda *a, **k: Arr()
    c.empty_like = lambda x: Arr()
    c.matmul = lambda a, b, out=None: calls.append("matmul")
    c.copyto = lambda dst, src: calls.append("copy")
    c.cuda = types.SimpleNamespace(Device=Device)
    c.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: calls.append("freed"))
    return c


def test_cupy_adapter_times_gemm_and_copy_on_its_device(monkeypatch):
    from gcm_checks.qualify import probe

    calls: list = []
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(calls))
    out = probe.cupy_one(6, seconds=0.0, n=512, copy_bytes=1 << 20)
    assert set(out) == {"gemm_tflops", "mem_bw_gbps"} and all(v > 0 for v in out.values())
    assert calls[0] == ("device", 6) and calls.count("matmul") == 13 and calls.count("copy") == 10
    assert calls[-1] == "freed"


class _Ctx:
    """What probe.measure needs from a runner Context, on real (not simulated) hardware."""

    def __init__(self, settings, gpus):
        from gcm_checks.gather.nvml import GpuFacts, GpuSnapshot

        self.settings = settings
        self.sim = None
        self._facts = GpuFacts(count=len(gpus), gpus=tuple(GpuSnapshot(i, f"00000000:{i:02X}:00.0", n) for i, n in enumerate(gpus)))

    def gpu_facts(self):
        return self._facts

    def remaining(self):
        return 30.0


@pytest.mark.parametrize("probe_pref, gpus, problem", [
    ("none", ["NVIDIA H100 80GB HBM3"], "performance probe disabled"),
    ("torch", ["NVIDIA H100 80GB HBM3"], "torch is not importable"),
    ("cupy", ["NVIDIA H100 80GB HBM3"], "cupy is not importable"),
    ("auto", [], "NVML lists no GPUs"),
])
def test_measure_on_real_hardware_says_why_it_could_not(monkeypatch, probe_pref, gpus, problem):
    from gcm_checks.qualify import probe

    monkeypatch.setattr(probe, "importable", lambda m: False)
    facts = probe.measure(_Ctx(resolve({"qualify": {"probe": probe_pref}}, "n"), gpus), 1.0)
    assert problem in (facts.problem or "")


def test_measure_auto_falls_back_to_dcgm_with_our_thresholds(monkeypatch, tmp_path):
    from gcm_checks.qualify import probe

    seen = {}
    monkeypatch.setattr(probe, "importable", lambda m: False)
    monkeypatch.setattr(probe, "probe_dcgm", lambda gpus, thresholds, dcgmi, timeout: seen.update(t=thresholds, n=len(gpus)) or _empty_dcgm_facts())
    settings = resolve({"qualify": {"fraction": 0.9, "baselines": {"H200": {"gemm_tflops": 800}}}}, "n")
    probe.measure(_Ctx(settings, ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]), 1.0)
    # The lowest expected figure on the node times the fraction (a mixed node is judged leniently).
    assert seen["n"] == 2 and seen["t"] == {"gemm_tflops": pytest.approx(740 * 0.9), "mem_bw_gbps": pytest.approx(3000 * 0.9)}


def _empty_dcgm_facts():
    from gcm_checks.qualify.probe import PerfFacts

    return PerfFacts("dcgm")
