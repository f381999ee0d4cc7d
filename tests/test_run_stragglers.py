"""Stragglers found while the job runs: the pure judge from tables, the shared
directory's safety, and several real gcm-run processes as the tasks of one
job (Slurm task variables set) with one slowed, named by task 0 while running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gcm_checks.wrapper import shared
from gcm_checks.wrapper.stragglers import TaskRate, explain, judge, task_rate

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable


def rates(*spec):
    return [TaskRate(node, str(i), r, 0.0) for i, (node, r) in enumerate(spec)]


@pytest.mark.parametrize("spec,slow", [
    ([("n1", 10.0), ("n2", 7.7)], {"n2": 0.77}),  # two nodes: leave-one-out median
    ([("n1", 10.0), ("n2", 10.2), ("n3", 9.9), ("n4", 7.0)], {"n4": 0.7}),
    ([("n1", 10.0), ("n2", 9.0), ("n3", 9.5)], {}),  # -10%: under the threshold
    ([("n1", 10.0), ("n1", 10.0), ("n2", 10.0), ("n2", 6.0), ("n3", 10.0)], {}),  # a node's median, not its worst task
    ([("n1", 10.0), ("n1", 5.0), ("n1", 10.0)], {"n1": 0.5}),  # one node: tasks compared
    ([("n1", 0.0), ("n2", 0.0)], {}),
    ([("n1", 10.0)], {}),
])
def test_judge(spec, slow):
    found = judge(rates(*spec), 0.20, {}, 100.0)
    assert {s["node"]: s["ratio"] for s in found} == pytest.approx(slow)
    for s in found:
        assert s["since"] == 100.0 and s["task"]


def test_hysteresis_keeps_a_recovering_node_named_until_it_is_clearly_back():
    r = rates(("n1", 10.0), ("n2", 8.5))  # -15%: not new, but not recovered past -10%
    assert judge(r, 0.20, {}, 5.0) == []
    still = judge(r, 0.20, {"n2": 1.0}, 5.0)
    assert still[0]["node"] == "n2" and still[0]["since"] == 1.0


def test_task_rate_needs_enough_samples_over_the_window():
    assert task_rate([[0, 0], [1, 10]], 1.0, 10.0) is None
    assert task_rate([[0, 0], [5, 50], [10, 100]], 10.0, 10.0) == pytest.approx(10.0)
    assert task_rate([[0, 0], [1, 10], [100, 1000], [105, 1050], [110, 1100]], 110.0, 10.0) == pytest.approx(10.0)


def test_gpu_sample_reads_clocks_and_power_under_deadlines():
    from gcm_checks.wrapper.stragglers import sample_gpus
    from gcm_checks.sim.fake_nvml import FakeNvml

    scen = {"gpus": [{"index": 0, "pci_bus_id": "00000000:18:00.0", "temperature_c": 50},
                     {"index": 1, "pci_bus_id": "00000000:2A:00.0", "hang": True}]}
    out = sample_gpus(lambda: FakeNvml(scen), timeout_s=0.2)
    g0, g1 = out["gpus"]
    assert g0["temperature_c"] == 50 and g0["sm_clock_mhz"] == 1980 and g0["power_w"] == 300.0
    assert g1["responsive"] is False and "sm_clock_mhz" not in g1


def test_explain_says_why_from_the_gpu_sample():
    g = {"gpus": [{"index": 0, "throttle_reasons": ["gpu_idle"]},
                  {"index": 3, "throttle_reasons": ["hw_thermal_slowdown"], "temperature_c": 91}]}
    assert explain(g) == "thermal slowdown on GPU 3 (91 C)"


def test_shared_dir_refuses_a_planted_symlink(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    base = tmp_path / "base"
    base.mkdir()
    os.symlink(tmp_path / "elsewhere", base / "job-9")
    with pytest.raises(OSError):
        shared.SharedDir.open(str(base), "job-9")
    os.chmod(tmp_path / "elsewhere", 0o777)
    (base / "job-10").mkdir(mode=0o777)
    os.chmod(base / "job-10", 0o777)
    with pytest.raises(PermissionError):
        shared.SharedDir.open(str(base), "job-10")


def test_shared_base_may_be_a_sticky_shared_directory(tmp_path):
    base = tmp_path / "scratch"
    base.mkdir()
    os.chmod(base, 0o1777)
    d = shared.SharedDir.open(str(base), "job-3")
    assert (os.stat(d.path).st_mode & 0o777) == 0o700
    os.chmod(base, 0o777)  # world-writable without the sticky bit: refused
    with pytest.raises(PermissionError):
        shared.SharedDir.open(str(base), "job-4")


def test_shared_dir_never_writes_through_a_planted_file_link(tmp_path):
    d = shared.SharedDir.open(str(tmp_path / "base"), "job-1")
    victim = tmp_path / "victim"
    victim.write_text("keep")
    os.symlink(victim, Path(d.path) / "task-0.json")
    d.write_json("task-0.json", {"a": 1})  # replaces the link, never follows it
    assert victim.read_text() == "keep"
    assert d.read_json("task-0.json") == {"a": 1}
    (Path(d.path) / "task-9.json").write_bytes(b"{" + b" " * (shared.MAX_FILE_BYTES + 10) + b"}")
    assert d.read_json("task-9.json") is None  # bounded


def test_job_key_matches_the_reports_key():
    assert shared.job_key({"SLURM_JOB_ID": "42"}) == "42"
    assert shared.job_key({"SLURM_JOB_ID": "42", "SLURM_RESTART_COUNT": "2"}) == "42.2"
    assert shared.job_key({"SLURM_JOB_ID": "../../x"}) == "....x"


CHILD = """
import sys, time
rate, secs = float(sys.argv[1]), float(sys.argv[2])
start = time.monotonic(); n = 0
while time.monotonic() - start < secs:
    n += 1
    print(f"step {n} loss={1.0 / n:.4f}", flush=True)
    time.sleep(1.0 / rate)
"""


def test_task_0_names_the_slow_node_while_the_job_runs(tmp_path):
    scen = tmp_path / "hot.yaml"
    scen.write_text("gpus:\n  count: 4\n  overrides:\n    3: {throttle_reasons: [hw_thermal_slowdown], temperature_c: 91, sm_clock_mhz: 1110, power_w: 450}\n")
    child = tmp_path / "train.py"
    child.write_text(CHILD)
    procs = []
    rates_by_task = [20.0, 20.0, 11.0, 20.0]  # task 2 on gpu-n2 runs 45% slow
    for task, rate in enumerate(rates_by_task):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env.update(PYTHONPATH=str(REPO), GCM_RUN_INDEX=str(tmp_path / "index"), SLURM_JOB_ID="4242",
                   SLURM_PROCID=str(task), SLURM_NTASKS="4", SLURMD_NODENAME=f"gpu-n{task}",
                   GCM_RUN_SHARED_DIR=str(tmp_path / "shared"), GCM_RUN_STRAGGLER_INTERVAL="0.25",
                   GCM_RUN_TICK="0.1", GCM_RUN_STATUS_INTERVAL="0.2", XDG_CACHE_HOME=str(tmp_path / "cache"))
        if task == 2:
            env["GCM_RUN_SIMULATE"] = str(scen)
        argv = [PY, "-m", "gcm_checks.gcm_run_cli", "--log", str(tmp_path / f"task{task}.log"), "--no-comment",
                "--notify", "never", "--straggler-window", "3s", "--", PY, str(child), str(rate), "12" if task == 0 else "10"]
        procs.append(subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    status = tmp_path / "task0.log.status.json"
    named = None
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and named is None:
            time.sleep(0.3)
            try:
                st = json.loads(status.read_text())
            except (OSError, ValueError):
                continue
            if st.get("state") == "running" and any(s.get("why") for s in st.get("stragglers") or ()):
                named = st
    finally:
        outs = [p.communicate(timeout=60) for p in procs]
    assert named is not None, [o[1][-2000:] for o in outs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    slow = named["stragglers"]
    assert [s["node"] for s in slow] == ["gpu-n2"]
    assert 0.4 < slow[0]["ratio"] < 0.75 and slow[0]["task"] == "2"
    # The slow node's own task looked at its GPUs; the report can say why.
    assert "thermal slowdown on GPU 3 (91 C, 1110 MHz, 450 W)" in slow[0]["why"]
    # After the tasks ended nobody is slow now, but the record keeps who was.
    final = json.loads((tmp_path / "task0.log.report.json").read_text())
    seen = final["stragglers_seen"]
    assert [s["node"] for s in seen] == ["gpu-n2"] and "thermal" in seen[0]["why"]
    # The job summary for the epilog's report, under the working directory.
    summary = json.loads((tmp_path / ".gcm-run" / "4242.status.json").read_text())
    assert summary["run_id"] == final["run_id"]


class Snap:
    def __init__(self, step):
        self.step, self.steps_seen = step, 1


def test_a_node_that_straggles_again_is_an_admin_event_not_a_drain(tmp_path, monkeypatch):
    from gcm_checks.wrapper import stragglers as sg

    events = []
    env = {"SLURM_JOB_ID": "9", "SLURM_PROCID": "0", "SLURMD_NODENAME": "n0", "GCM_RUN_SHARED_DIR": str(tmp_path / "sh")}
    leader = sg.Stragglers(env, str(tmp_path), threshold=0.2, window_s=10.0, interval_s=1.0, event_sink=events.append)
    other = leader.dir

    def publish_n1(t, step):
        other.write_json("task-1.json", {"node": "n1", "task": "1", "updated": t,
                                         "samples": [[t - 8, step - 8 * r1], [t - 4, step - 4 * r1], [t, step]]})

    t, s0, s1 = 1000.0, 0.0, 0.0
    for phase, r1 in enumerate([5.0, 10.0, 5.0]):  # slow, recovered, slow again
        for _ in range(15):
            t += 1.0
            s0 += 10.0
            s1 += r1
            publish_n1(t, s1)
            leader.samples = [(t - 8, s0 - 80), (t - 4, s0 - 40)]
            leader.tick(Snap(s0), t, t, s0)
        named = [s["node"] for s in leader.current()]
        assert named == (["n1"] if phase != 1 else []), (phase, named)
    assert [e["node"] for e in events] == ["n1"] and events[0]["episodes"] == 2
    assert leader.info()["admin_events"][0]["node"] == "n1"
    seen = leader.seen()
    assert seen[0]["node"] == "n1" and seen[0]["ratio"] == pytest.approx(0.5, abs=0.05)


def test_admin_event_writes_a_log_line_and_a_prometheus_sample(tmp_path, monkeypatch):
    from gcm_checks.wrapper import stragglers as sg

    monkeypatch.setenv("GCM_RUN_METRICS_DIR", str(tmp_path))
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    sg.admin_event({"node": "gpu-n2", "episodes": 2, "ratio": 0.7})
    prom = (tmp_path / "gcm_checks_gcm_run_straggler.prom").read_text()
    assert 'gcm_run_straggler_episodes{' in prom and 'node="gpu-n2"' in prom and prom.rstrip().endswith(" 2")
