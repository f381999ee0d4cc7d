"""Fleet report: robust statistics from tables, stragglers on a simulated
fleet (precision/recall measured, not assumed), loading rules, the CLI."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from gcm_checks import fleet
from gcm_checks.qualify import results
from gcm_checks.qualify.simfleet import make_fleet, score, write_plain

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("values, q, expected", [
    ([1.0, 2.0, 3.0, 4.0, 5.0], 0.5, 3.0),
    ([1.0, 2.0, 3.0, 4.0], 0.5, 2.5),
    ([1.0, 2.0, 3.0, 4.0, 5.0], 0.0, 1.0),
    ([1.0, 2.0, 3.0, 4.0, 5.0], 1.0, 5.0),
    ([10.0, 20.0], 0.05, 10.5),
    ([7.0], 0.95, 7.0),
])
def test_quantile(values, q, expected):
    assert fleet.quantile(values, q) == pytest.approx(expected)


@pytest.mark.parametrize("values, med, mad", [
    ([1.0, 2.0, 3.0, 4.0, 100.0], 3.0, 1.0),  # the outlier moves neither
    ([5.0, 5.0, 5.0], 5.0, 0.0),
    ([1.0, 1.0, 2.0, 2.0, 4.0, 6.0, 9.0], 2.0, 1.0),
])
def test_median_mad(values, med, mad):
    assert fleet.median_mad(values) == (med, mad)


@pytest.mark.parametrize("value, med, mad, z", [
    (100.0, 100.0, 1.0, 0.0),
    (95.0, 100.0, 1.0, -5.0 / 1.4826),
    (100.0, 100.0, 0.0, 0.0),
    (90.0, 100.0, 0.0, -math.inf),
])
def test_robust_z(value, med, mad, z):
    assert fleet.robust_z(value, med, mad) == pytest.approx(z)


def _points(values):
    return [(f"n{i:03d}", 0, "GPU 0", v) for i, v in enumerate(values)]


@pytest.mark.parametrize("values, slow, why", [
    ([740.0 + (i % 5) for i in range(99)] + [650.0], ["n099"], "12% below, far outside the spread"),
    ([740.0 + (i % 5) for i in range(99)] + [725.0], [], "2% below: under the minimum drop"),
    ([740.0] * 99 + [735.0], [], "uniform fleet, 0.7% below: MAD is 0 but the drop floor holds"),
    ([740.0 * (1 + 0.05 * ((i % 11) - 5) / 5) for i in range(99)] + [700.0], [], "5% below in a fleet that varies +-5%"),
])
def test_find_stragglers(values, slow, why):
    _, found = fleet.find_stragglers(_points(values), "H100-SXM", "gemm_tflops")
    assert [s.node for s in found] == slow, why


def test_straggler_record_says_how_far_below():
    _, (s,) = fleet.find_stragglers(_points([740.0 + (i % 5) for i in range(99)] + [650.0]), "H100-SXM", "gemm_tflops")
    assert s.median == 742.0 and s.drop == pytest.approx(1 - 650 / 742) and s.z < -3.5
    assert s.to_dict()["below_fleet_pct"] == pytest.approx(12.4, abs=0.05)


def test_simulated_fleet_4096_gpus_precision_and_recall():
    """The issue's validation: 4,096 GPUs, 1% of them 5-15% slow. Measured."""
    docs, truth = make_fleet(n_gpus=4096, slow_fraction=0.01, slow_range=(0.05, 0.15), seed=11)
    assert len(docs) == 512 and len(truth) == 41
    rep = fleet.report([("", d) for d in docs])
    found = {(s.node, s.gpu) for s in rep.stragglers}
    s = score(found, truth)
    assert s["precision"] >= 0.9 and s["recall"] >= 0.9, s
    gemm = next(d for d in rep.distributions if d.metric == "gemm_tflops")
    assert gemm.model == "H100-SXM" and gemm.n == 4096 and abs(gemm.median - 740.0) < 2.0


def test_report_lists_failing_and_unknown_nodes():
    docs, _ = make_fleet(n_gpus=64, slow_fraction=0.0, failing_nodes=2)
    docs[5]["verdict"] = "unknown"
    docs[5]["qualified"] = False
    docs[5]["results"].append({"check": "dcgm.diag", "status": "unknown", "subject": "", "message": "dcgmi missing"})
    rep = fleet.report([(f"/r/{d['node']}.json", d) for d in docs])
    assert rep.nodes == 8 and rep.gpus == 64 and rep.qualified == 5
    assert [f.node for f in rep.failing] == ["gpu0000", "gpu0001"]
    assert rep.failing[0].checks == ("gpu.ecc.uncorrectable",)
    assert rep.failing[0].first == "gpu.ecc.uncorrectable GPU 2: 12 uncorrectable ECC errors"
    assert [(f.node, f.checks) for f in rep.unknown] == [("gpu0005", ("dcgm.diag",))]


# ---------------------------------------------------------------- loading
def _write(d, node, finished, level="standard", gemm=740.0, **kw):
    docs, _ = make_fleet(n_gpus=8, slow_fraction=0.0, started=finished - 300)
    doc = docs[0]
    doc.update(node=node, level=level, **kw)
    doc["perf"]["gpus"][0]["gemm_tflops"] = gemm
    path = os.path.join(d, results.file_name(node, doc["finished"], level))
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def test_newest_result_per_node_wins(tmp_path):
    _write(tmp_path, "gpu001", 1_790_000_000, gemm=500.0)
    newest = _write(tmp_path, "gpu001", 1_790_090_000, gemm=741.0)
    _write(tmp_path, "gpu_002", 1_790_000_000)  # '_' in a node name
    docs, bad = fleet.load_latest(str(tmp_path))
    assert [(p, d["node"]) for p, d in docs] == [(newest, "gpu001"), (docs[1][0], "gpu_002")]
    assert docs[0][1]["perf"]["gpus"][0]["gemm_tflops"] == 741.0 and bad == []


def test_unreadable_and_foreign_files_are_listed_and_skipped(tmp_path):
    good = _write(tmp_path, "gpu001", 1_790_000_000)
    (tmp_path / "gpu002_20260101T000000Z_standard.json").write_text("{truncated")
    (tmp_path / "notes.json").write_text(json.dumps({"hello": 1}))
    newer = _write(tmp_path, "gpu003", 1_790_000_000)
    doc = json.loads(open(newer).read())
    doc["version"] = 2
    open(newer, "w").write(json.dumps(doc))
    (tmp_path / ".gpu004_20260101T000000Z_standard.json.123.tmp").write_text("{")  # a writer in progress
    docs, bad = fleet.load_latest(str(tmp_path))
    assert [p for p, _ in docs] == [good]
    assert len(bad) == 3
    assert any("not JSON" in b for b in bad) and any("newer than this gcm-checks" in b for b in bad)


def test_an_unreadable_newest_file_falls_back_to_the_previous(tmp_path):
    older = _write(tmp_path, "gpu001", 1_790_000_000)
    (tmp_path / "gpu001_20990101T000000Z_standard.json").write_text("")
    docs, bad = fleet.load_latest(str(tmp_path))
    assert [p for p, _ in docs] == [older] and len(bad) == 1


def test_level_filter_and_subdirectories(tmp_path):
    (tmp_path / "rack1").mkdir()
    _write(tmp_path / "rack1", "gpu001", 1_790_000_000, level="deep")
    _write(tmp_path, "gpu002", 1_790_000_000, level="standard")
    assert [d["node"] for _, d in fleet.load_latest(str(tmp_path))[0]] == ["gpu001", "gpu002"]
    assert [d["node"] for _, d in fleet.load_latest(str(tmp_path), "deep")[0]] == ["gpu001"]


def test_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        fleet.load_latest(str(tmp_path / "nope"))


# ---------------------------------------------------------------- CLI
def _cli(*args):
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.run([sys.executable, "-m", "gcm_checks", "fleet", *args], capture_output=True, text=True,
                          timeout=60, env=env, cwd=REPO)


def test_fleet_report_cli_json_and_text(tmp_path):
    docs, truth = make_fleet(n_gpus=1024, slow_fraction=0.01, seed=3, failing_nodes=1)
    write_plain(str(tmp_path), docs)
    p = _cli("report", str(tmp_path), "--json")
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["schema"] == "gcm-checks/fleet-report" and rep["nodes"] == 128 and rep["gpus"] == 1024
    found = {(s["node"], s["gpu"]) for s in rep["stragglers"]}
    assert score(found, truth)["recall"] == 1.0 and score(found, truth)["precision"] >= 0.9
    assert [f["node"] for f in rep["failing"]] == ["gpu0000"]
    text = _cli("report", str(tmp_path)).stdout
    assert "STRAGGLERS" in text and "H100-SXM" in text and "FAILED" in text
    first = sorted(rep["stragglers"], key=lambda s: -s["below_fleet_pct"])[0]
    assert first["node"] in text.split("STRAGGLERS")[1].splitlines()[2]


@pytest.mark.parametrize("args, code", [(["report", "/nonexistent/dir"], 2), ([], 2)])
def test_fleet_cli_errors(args, code):
    assert _cli(*args).returncode == code
