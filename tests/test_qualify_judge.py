"""Qualification building blocks from tables: baselines, judging, levels,
probe arithmetic, the simulated probe, the result file."""

from __future__ import annotations

import json
import os

import pytest

from gcm_checks.qualify import baselines, judge, levels, probe, results
from gcm_checks.qualify.probe import GpuPerf, PerfFacts
from gcm_checks.result import Status, passed


# ---------------------------------------------------------------- baselines
@pytest.mark.parametrize("nvml_name, model", [
    ("NVIDIA H100 80GB HBM3", "H100-SXM"),
    ("NVIDIA H100 PCIe", "H100-PCIe"),
    ("NVIDIA H100 NVL", "H100-NVL"),
    ("NVIDIA H200", "H200"),
    ("NVIDIA H200 NVL", "H200-NVL"),
    ("NVIDIA B200", "B200"),
    ("NVIDIA GB200", "GB200"),
    ("NVIDIA A100-SXM4-40GB", "A100-SXM-40GB"),
    ("NVIDIA A100-SXM4-80GB", "A100-SXM-80GB"),
    ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"),
    ("NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB"),
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA L40", "L40"),
    ("NVIDIA L4", "L4"),
    ("NVIDIA A10", "A10"),
    ("NVIDIA GeForce RTX 4090", None),
    ("", None),
])
def test_model_key(nvml_name, model):
    assert baselines.model_key(nvml_name) == model


def test_every_shipped_model_has_both_figures():
    assert len(baselines.known_models()) >= 10
    for key, _, figs in baselines.shipped():
        assert set(figs) == {"gemm_tflops", "mem_bw_gbps"}, key
        assert all(v > 0 for v in figs.values())


@pytest.mark.parametrize("overrides, expect_gemm, expect_bw, source", [
    ({}, 740.0, 3000.0, "shipped"),
    ({"H100-SXM": {"gemm_tflops": 700}}, 700.0, 3000.0, "config"),
    ({"NVIDIA H100 80GB HBM3": {"mem_bw_gbps": 3100}}, 740.0, 3100.0, "config"),
    # The exact NVML name wins over the model key (more specific).
    ({"H100-SXM": {"gemm_tflops": 700}, "NVIDIA H100 80GB HBM3": {"gemm_tflops": 720}}, 720.0, 3000.0, "config"),
])
def test_baseline_overrides(overrides, expect_gemm, expect_bw, source):
    b = baselines.lookup("NVIDIA H100 80GB HBM3", overrides)
    assert (b.gemm_tflops, b.mem_bw_gbps, b.source) == (expect_gemm, expect_bw, source)


def test_unknown_model_has_no_baseline_unless_configured():
    assert baselines.lookup("NVIDIA Future X1").gemm_tflops is None
    b = baselines.lookup("NVIDIA Future X1", {"NVIDIA Future X1": {"gemm_tflops": 2000}})
    assert b.gemm_tflops == 2000.0 and b.mem_bw_gbps is None and b.source == "config"


# ---------------------------------------------------------------- judging
H100 = "NVIDIA H100 80GB HBM3"


def _facts(gemm, bw=None, name=H100, **extra):
    bw = bw or [3020.0] * len(gemm)
    gpus = tuple(GpuPerf(i, f"GPU {i}", name, g, b) for i, (g, b) in enumerate(zip(gemm, bw)))
    return PerfFacts("sim", gpus, **extra)


def _judge(facts, metric="gemm_tflops", fraction=0.85, sib=0.10):
    return judge.judge_metric(metric, facts, baselines.lookup, fraction, sib)


@pytest.mark.parametrize("gemm, failing", [
    ([740.0] * 8, []),
    ([740.0] * 7 + [640.0], [7]),  # 86% of baseline passes, but 13.5% below its siblings fails
    ([740.0] * 7 + [700.0], []),  # 5% below: within both limits
    ([740.0] * 7 + [518.0], [7]),  # 70% of baseline and 30% below siblings
    ([600.0] * 8, list(range(8))),  # whole node at 81% of baseline: siblings agree, the baseline does not
    ([740.0, 740.0, 500.0, 740.0, 740.0, 740.0, 740.0, 480.0], [2, 7]),
])
def test_gemm_judgement(gemm, failing):
    out = _judge(_facts(gemm))
    bad = sorted(int(r.subject.split()[1]) for r in out if r.status is Status.FAIL)
    assert bad == failing
    if not failing:
        assert [r.status for r in out] == [Status.PASS]


def test_fail_message_carries_measured_and_expected():
    (r,) = _judge(_facts([740.0] * 7 + [518.0]))
    assert r.status is Status.FAIL and r.subject == "GPU 7"
    assert "518 TFLOPS" in r.message and "expected 740 TFLOPS" in r.message and "H100-SXM" in r.message
    assert r.details["measured"] == 518.0 and r.details["expected"] == 740.0
    assert r.details["short"] == "GEMM 518 TFLOPS, 70% of 740 expected for H100-SXM, 30% below siblings"


def test_sibling_comparison_fails_without_any_baseline():
    out = _judge(_facts([900.0, 905.0, 898.0, 700.0], name="NVIDIA Future X1"))
    assert [(r.status, r.subject) for r in out] == [(Status.FAIL, "GPU 3")]
    assert "below the median of its 3 sibling GPUs" in out[0].message
    assert out[0].details["expected"] is None


@pytest.mark.parametrize("gemm", [[900.0, 600.0], [600.0]])
def test_too_few_siblings_to_judge_without_baseline(gemm):
    # Two GPUs: which one is slow? One GPU: no siblings. Without a baseline: pass.
    out = _judge(_facts(gemm, name="NVIDIA Future X1"))
    assert [r.status for r in out] == [Status.PASS]


def test_memory_bandwidth_metric():
    out = _judge(_facts([740.0] * 4, bw=[3020.0, 3020.0, 3020.0, 2400.0]), metric="mem_bw_gbps")
    assert [(r.status, r.subject) for r in out] == [(Status.FAIL, "GPU 3")]
    assert "memory bandwidth 2400 GB/s" in out[0].message


@pytest.mark.parametrize("gpu, status", [
    (GpuPerf(0, "GPU 0", H100, errors={"gemm_tflops": "probe error: CUDA OOM"}), Status.UNKNOWN),
    (GpuPerf(0, "GPU 0", H100, errors={"gemm_tflops": "did not finish"}, hung=True), Status.FAIL),
    (GpuPerf(0, "GPU 0", H100, verdicts={"gemm_tflops": ("fail", "DCGM targeted_stress: below target")}), Status.FAIL),
    (GpuPerf(0, "GPU 0", H100, verdicts={"gemm_tflops": ("pass", "DCGM targeted_stress passed")}), Status.PASS),
])
def test_unmeasured_and_tool_judged_gpus(gpu, status):
    out = _judge(PerfFacts("x", (gpu,)))
    assert [r.status for r in out] == [status]


def test_probe_problem_is_unknown_never_fail():
    out = _judge(PerfFacts("dcgm", problem="no performance probe: PyTorch, CuPy and dcgmi are all unavailable"))
    assert [r.status for r in out] == [Status.UNKNOWN]
    assert "no performance probe" in out[0].message


# ---------------------------------------------------------------- arithmetic
@pytest.mark.parametrize("n, iters, secs, tflops", [
    (8192, 100, 1.0, 2 * 8192 ** 3 * 100 / 1e12),
    (1000, 1, 2.0, 0.001),
])
def test_gemm_tflops(n, iters, secs, tflops):
    assert probe.gemm_tflops(n, iters, secs) == pytest.approx(tflops)


@pytest.mark.parametrize("nbytes, iters, secs, gbps", [
    (1 << 30, 10, 1.0, 2 * (1 << 30) * 10 / 1e9),
    (10 ** 9, 1, 2.0, 1.0),
])
def test_copy_bandwidth(nbytes, iters, secs, gbps):
    assert probe.copy_bandwidth_gbps(nbytes, iters, secs) == pytest.approx(gbps)


@pytest.mark.parametrize("bad", [(0, 1.0), (1, 0.0), (1, -1.0)])
def test_arithmetic_rejects_empty_measurements(bad):
    with pytest.raises(ValueError):
        probe.gemm_tflops(8, *bad)


def test_timed_loop_counts_whole_synchronised_batches():
    calls = {"step": 0, "sync": 0}
    iters, elapsed = probe.timed_loop(lambda: calls.__setitem__("step", calls["step"] + 1),
                                      lambda: calls.__setitem__("sync", calls["sync"] + 1), 0.0, batch=7)
    assert iters == 7 == calls["step"] and calls["sync"] == 2 and elapsed >= 0


@pytest.mark.parametrize("pref, have, chosen", [
    ("auto", {"torch", "cupy"}, "torch"),
    ("auto", {"cupy"}, "cupy"),
    ("auto", set(), "dcgm"),
    ("cupy", {"torch", "cupy"}, "cupy"),
    ("none", {"torch"}, "none"),
])
def test_choose_probe(pref, have, chosen):
    assert probe.choose(pref, lambda m: m in have) == chosen


def test_sim_probe_reads_scenario_and_skips_broken_gpus():
    from gcm_checks.sim.scenario import load

    sim = load("slow-gpu")
    sim["gpus"][2]["lost"] = True
    facts = probe.probe_sim(sim, probe.gpus_from_sim(sim))
    assert facts.source == "sim" and len(facts.gpus) == 8
    assert facts.gpus[5].gemm_tflops == 518.0 and facts.gpus[5].mem_bw_gbps == 2110.0
    assert facts.gpus[0].gemm_tflops == 740.0
    assert facts.gpus[2].gemm_tflops is None and "lost" in facts.gpus[2].errors["gemm_tflops"]
    assert facts.gpus[5].subject == "GPU 5 (00000000:AB:00.0)"


def test_sim_probe_without_figures_is_unmeasured():
    sim = {"gpus": [{"index": 0, "name": H100, "pci_bus_id": "00000000:18:00.0"}]}
    facts = probe.probe_sim(sim, probe.gpus_from_sim(sim))
    out = _judge(facts)
    assert [r.status for r in out] == [Status.UNKNOWN]


# ---------------------------------------------------------------- levels
@pytest.mark.parametrize("name, suites, dcgm, has_probe", [
    ("quick", ("prolog", "epilog"), None, False),
    ("standard", ("prolog", "epilog", "qualify"), 2, True),
    ("deep", ("prolog", "epilog", "qualify"), 3, True),
])
def test_levels(name, suites, dcgm, has_probe):
    lv = levels.resolve(name)
    assert (lv.suites, lv.dcgm_level, lv.probe_s > 0) == (suites, dcgm, has_probe)


def test_deep_probes_longer_than_standard():
    assert levels.resolve("deep").probe_s > levels.resolve("standard").probe_s


@pytest.mark.parametrize("overrides, error", [
    ({"deep": {"dcgm_level": 4}}, None),
    ({"standard": {"probe_s": 30, "budget_s": 1200}}, None),
    ({"deep": {"dcgm_level": 7}}, "dcgm_level"),
    ({"quick": {"suites": "prolog"}}, "suites"),
    ({"quick": {"colour": "red"}}, "unknown key"),
    ({"quick": {"probe_s": -1}}, "probe_s"),
])
def test_level_overrides(overrides, error):
    name = next(iter(overrides))
    if error is None:
        lv = levels.resolve(name, overrides)
        for k, v in overrides[name].items():
            assert getattr(lv, k) == v
    else:
        with pytest.raises(levels.LevelError, match=error):
            levels.resolve(name, overrides)


def test_unknown_level():
    with pytest.raises(levels.LevelError, match="quick, standard, deep"):
        levels.resolve("thorough")


# ---------------------------------------------------------------- result file
def _doc(**kw):
    facts = _facts([740.0, 518.0])
    args = dict(node="gpu001", level="standard", started=1_790_000_000.0, finished=1_790_000_300.0,
                verdict="pass", qualified=True, results=[passed("gpu.nvml", "ok")], perf=facts, probe_s=10.0)
    args.update(kw)
    return results.build_doc(**args)


def test_result_file_roundtrip(tmp_path):
    path = results.write(str(tmp_path / "res"), _doc())
    assert os.path.basename(path) == "gpu001_20260921T141820Z_standard.json"
    assert oct(os.stat(path).st_mode & 0o777) == "0o644"
    doc = results.read(path)
    assert doc["version"] == results.VERSION and doc["duration_s"] == 300.0
    assert [g["model"] for g in doc["perf"]["gpus"]] == ["H100-SXM", "H100-SXM"]
    assert doc["perf"]["gpus"][1]["gemm_tflops"] == 518.0
    assert doc["counts"] == {"pass": 1, "warn": 0, "unknown": 0, "fail": 0}
    assert not [p for p in os.listdir(tmp_path / "res") if p.startswith(".")]  # no temp file left


@pytest.mark.parametrize("node, name", [
    ("gpu001", "gpu001_"),
    ("../../etc/passwd", "_.._etc_passwd_"),
    ("", "unknown_"),
])
def test_result_file_name_is_a_plain_name(node, name):
    fn = results.file_name(node, "2026-11-30T02:00:00Z", "standard")
    assert fn.startswith(name) and "/" not in fn and fn.endswith("_20261130T020000Z_standard.json")


@pytest.mark.parametrize("mutate, error", [
    (lambda d: d.update(version=99), "newer than this gcm-checks"),
    (lambda d: d.update(schema="other"), "not a gcm-checks qualify result"),
    (lambda d: d.pop("node"), "missing 'node'"),
    (lambda d: d.update(version="1"), "bad version"),
])
def test_result_file_validation(tmp_path, mutate, error):
    doc = _doc()
    mutate(doc)
    p = tmp_path / "x.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(results.ResultFileError, match=error):
        results.read(str(p))


def test_unreadable_result_file(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{not json")
    with pytest.raises(results.ResultFileError, match="not JSON"):
        results.read(str(p))
