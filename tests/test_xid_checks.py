"""xid.hardware / xid.software: gatherer over real files and the simulated node, then judging."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional, Tuple

import pytest

from gcm_checks import config, testing
from gcm_checks.checks import xid as xc
from gcm_checks.result import Status
from gcm_checks.testing import kernel_xid_line

START = time.time() - 3600
END = START + 1800
BUS_MAP = {"00000000:18:00.0": 0, "00000000:2A:00.0": 1, "00000000:3A:00.0": 2, "00000000:5D:00.0": 3,
           "00000000:9A:00.0": 4, "00000000:AB:00.0": 5, "00000000:BA:00.0": 6, "00000000:DB:00.0": 7}


def FakeCtx(settings: Any, state_dir: Path, window: Optional[Tuple[float, float]] = (START, END),
            sources: Any = None, bus_map: Any = None):
    """The suite's context (gcm_checks.testing.context): the kernel log is the
    host reader's (a file, from the settings) unless ``sources`` injects one;
    the run's GPU bus map is given instead of read from NVML (an exception
    raises from it)."""
    ctx = testing.context(settings, state_dir, window=window, sources=sources)
    bus = dict(BUS_MAP) if bus_map is None else bus_map

    def gpu_bus_ids():
        if isinstance(bus, Exception):
            raise bus
        return bus

    ctx.gpu_bus_ids = gpu_bus_ids
    return ctx


def settings_for(log: Path, **xid: Any):
    return config.resolve({"xid": {"source": "file", "kernel_log_path": str(log), **xid}}, "node1")


def run_checks(ctx):
    facts = xc.gather_xid(ctx)
    return facts, xc.check_xid_hardware(facts, ctx.settings), xc.check_xid_software(facts, ctx.settings)


def write_log(tmp_path, lines, name="kern.log"):
    p = tmp_path / name
    p.write_text("\n".join(["[    0.000000] Linux version 6.1"] + lines) + "\n")
    return p


def test_hardware_xid_in_window_fails_that_gpu_only(tmp_path):
    log = write_log(tmp_path, [
        kernel_xid_line(48, "0000:18:00", "DBE", when=int(START) - 1, fmt="iso"),  # one second before start
        kernel_xid_line(79, "0000:5d:00", when=START + 60, fmt="iso"),
        kernel_xid_line(13, "0000:2a:00", "Graphics Exception", when=START + 61, fmt="iso"),
    ])
    facts, hw, sw = run_checks(FakeCtx(settings_for(log), tmp_path / "state"))
    assert [(r.status, r.subject) for r in hw] == [(Status.FAIL, "GPU 3 (00000000:5D:00.0)")]
    assert "XID 79 (GPU has fallen off the bus)" in hw[0].message and "reboot the node" in hw[0].message
    assert hw[0].details["action"] == "reboot" and hw[0].details["gpu_index"] == 3
    assert [e["xid"] for e in hw[0].details["events"]] == [79]
    assert [r.status for r in sw] == [Status.PASS] and "13" in sw[0].message


@pytest.mark.parametrize("gpu_pos", [1, 7])  # the 2nd and the 8th GPU
def test_fail_names_the_right_gpu(tmp_path, gpu_pos):
    bus = sorted(BUS_MAP, key=BUS_MAP.get)[gpu_pos]
    log = write_log(tmp_path, [kernel_xid_line(95, bus[4:14].lower(), "Uncontained", when=START + 5, fmt="syslog")])
    _, hw, _ = run_checks(FakeCtx(settings_for(log), tmp_path / "s"))
    assert len(hw) == 1 and hw[0].status is Status.FAIL
    assert hw[0].subject == f"GPU {gpu_pos} ({bus})"
    assert "reset GPU" in hw[0].message


def test_application_xids_only_never_fail(tmp_path):
    log = write_log(tmp_path, [kernel_xid_line(x, "0000:3a:00", "app", when=START + i, fmt="dmesg_t")
                               for i, x in enumerate((13, 31, 43, 45))])
    _, hw, sw = run_checks(FakeCtx(settings_for(log), tmp_path / "s"))
    assert [r.status for r in hw] == [Status.PASS]
    assert [r.status for r in sw] == [Status.PASS]
    assert [e["xid"] for e in sw[0].details["events"]] == [13, 31, 43, 45]


def test_driver_xid_warns(tmp_path):
    log = write_log(tmp_path, [kernel_xid_line(38, "0000:3a:00", "FECS watchdog", when=START + 5, fmt="iso")])
    _, hw, sw = run_checks(FakeCtx(settings_for(log), tmp_path / "s"))
    assert [r.status for r in hw] == [Status.PASS]
    assert [(r.status, r.subject) for r in sw] == [(Status.WARN, "GPU 2 (00000000:3A:00.0)")]


def test_several_xids_on_one_gpu_name_the_most_serious_action(tmp_path):
    log = write_log(tmp_path, [
        kernel_xid_line(63, "0000:ab:00", "Row Remapper", when=START + 5, fmt="iso"),
        kernel_xid_line(79, "0000:ab:00", when=START + 6, fmt="iso"),
        kernel_xid_line(63, "0000:ab:00", "Row Remapper", when=START + 7, fmt="iso"),
    ])
    _, hw, _ = run_checks(FakeCtx(settings_for(log), tmp_path / "s"))
    assert len(hw) == 1 and hw[0].details["xid"] == 79
    assert "(2 more events, also XID 63)" in hw[0].message


def test_no_xids_passes(tmp_path):
    log = write_log(tmp_path, [])
    facts, hw, sw = run_checks(FakeCtx(settings_for(log), tmp_path / "s"))
    assert facts.error is None and [r.status for r in hw + sw] == [Status.PASS, Status.PASS]


def test_unreadable_kernel_log_is_unknown_not_fail(tmp_path):
    facts, hw, sw = run_checks(FakeCtx(settings_for(tmp_path / "missing.log"), tmp_path / "s"))
    assert facts.error
    assert [r.status for r in hw + sw] == [Status.UNKNOWN, Status.UNKNOWN]


def test_without_gpu_map_the_bus_id_still_fails_the_gpu(tmp_path):
    log = write_log(tmp_path, [kernel_xid_line(79, "0000:5d:00", when=START + 5, fmt="iso")])
    _, hw, _ = run_checks(FakeCtx(settings_for(log), tmp_path / "s", bus_map=RuntimeError("NVML gone")))
    assert hw[0].status is Status.FAIL and hw[0].subject == "GPU at 00000000:5D:00.0"


def test_repeat_after_remedy_escalates_across_epilogs(tmp_path):
    state = tmp_path / "state"
    log1 = write_log(tmp_path, [kernel_xid_line(74, "0000:9a:00", "NVLink", when=START + 5, fmt="iso")], "a.log")
    _, hw1, _ = run_checks(FakeCtx(settings_for(log1), state, window=(START, START + 100)))
    assert hw1[0].details["action"] == "reset_gpu"
    log2 = write_log(tmp_path, [kernel_xid_line(74, "0000:9a:00", "NVLink", when=START + 500, fmt="iso")], "b.log")
    _, hw2, _ = run_checks(FakeCtx(settings_for(log2), state, window=(START + 400, START + 600)))
    assert hw2[0].details["action"] == "drain_inspect" and "drain for inspection" in hw2[0].message
    # Escalation can be switched off.
    _, hw3, _ = run_checks(FakeCtx(settings_for(log2, escalate_after_reset=False), state, window=(START + 400, START + 600)))
    assert hw3[0].details["action"] == "reset_gpu"


def test_health_mode_scans_since_the_last_scan(tmp_path):
    state = tmp_path / "state"
    now = time.time()
    log = write_log(tmp_path, [kernel_xid_line(79, "0000:5d:00", when=now - 30, fmt="iso")])
    facts1, hw1, _ = run_checks(FakeCtx(settings_for(log), state, window=None))
    assert facts1.window[0] == pytest.approx(now - 3600, abs=5)  # bounded first lookback
    assert hw1[0].status is Status.FAIL
    facts2, hw2, _ = run_checks(FakeCtx(settings_for(log), state, window=None))
    assert facts2.window[0] == pytest.approx(facts1.window[1])  # continues where the last one ended
    assert hw2[0].status is Status.PASS  # the same XID is not reported twice


def test_simulated_node_kernel_log(tmp_path):
    from gcm_checks import suite
    from gcm_checks.sim.scenario import load

    settings = config.resolve({}, "node1")
    ctx = suite.Context(settings=settings, node="node1", sim=load("gpu-lost"), state_dir=tmp_path,
                         window=(time.time() - 60, time.time()))
    facts, hw, _ = run_checks(ctx)
    assert facts.source == "simulation"
    assert [(r.status, r.details["xid"]) for r in hw] == [(Status.FAIL, 79)]
    assert hw[0].subject.startswith("GPU 3 ")


def test_simulated_healthy_node_passes(tmp_path):
    from gcm_checks import suite
    from gcm_checks.sim.scenario import load

    ctx = suite.Context(settings=config.resolve({}, "n"), node="n", sim=load("healthy"), state_dir=tmp_path)
    _, hw, sw = run_checks(ctx)
    assert [r.status for r in hw + sw] == [Status.PASS, Status.PASS]


def test_checks_are_registered_for_epilog_and_health():
    from gcm_checks.checks import load_all
    from gcm_checks.registry import CHECKS

    load_all()
    for cid in (xc.HARDWARE, xc.SOFTWARE):
        assert CHECKS[cid].needs == "xid" and {"epilog", "health"} <= CHECKS[cid].tags
        assert "prolog" not in CHECKS[cid].tags


def test_file_source_without_a_path_is_unknown(tmp_path):
    settings = config.resolve({"xid": {"source": "file"}}, "node1")
    facts, hw, _ = run_checks(FakeCtx(settings, tmp_path / "s"))
    assert "path" in facts.error and hw[0].status is Status.UNKNOWN
