"""InfiniBand: sysfs parsing on a real captured tree, and every check on
real-layout trees written by write_sysfs_tree (the simulated node's writer)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from gcm_checks import testing
from gcm_checks.checks import ib as ibchecks
from gcm_checks.gather import ib
from gcm_checks.result import Status

REAL_ROOT = Path(__file__).parent / "fixtures" / "ib" / "h100"

CHECKS = ("ib.hca.present", "ib.port.state", "ib.port.phys_state", "ib.port.rate", "ib.port.link_layer", "ib.port.errors")


def _ctx(root: Path, state_dir: Optional[Path] = None, **extra):
    return testing.context(testing.settings({"infiniband.sysfs_root": str(root)}), state_dir, **extra)


def _run_all(facts, settings: Dict[str, Any]) -> List:
    """The port checks, run as the suite runs them (ids stamped), on settings
    built from the schema (defaults included) by gcm_checks.testing."""
    return testing.run_checks(facts, testing.settings(settings), *CHECKS)


def _errors(facts, settings: Optional[Dict[str, Any]] = None) -> List:
    return testing.run_checks(facts, testing.settings(settings), "ib.port.errors")


def _port(device: str, **kw) -> Dict[str, Any]:
    return {"device": device, "port": 1, "state": "ACTIVE", "phys_state": "LinkUp", "rate": 400, "link_layer": "InfiniBand", **kw}


def _ndr_node(tmp_path: Path, n: int = 8, **overrides: Dict[str, Any]) -> Path:
    """An 8-rail NDR node; overrides = {device: {attr: value}}."""
    ports = [_port(f"mlx5_{i}", **overrides.get(f"mlx5_{i}", {})) for i in range(n)]
    ib.write_sysfs_tree(tmp_path, ports)
    return tmp_path


EIGHT_RAILS = {"infiniband.expected_hcas": [f"mlx5_{i}" for i in range(8)], "infiniband.min_rate_gbps": 400}


def _bad(results, status=Status.FAIL):
    return sorted((r.check, r.subject) for r in results if r.status is status)


# --------------------------------------------------------------------------
# parsers


@pytest.mark.parametrize(
    "text,expected",
    [("4: ACTIVE", (4, "ACTIVE")), ("1: DOWN", (1, "DOWN")), ("5: LinkUp", (5, "LinkUp")), ("2: Polling", (2, "Polling")),
     ("3: Disabled\n", (3, "Disabled")), ("7: Phy Test", (7, "Phy Test")), ("ACTIVE", (None, "ACTIVE"))],
)
def test_parse_coded(text, expected):
    assert ib.parse_coded(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [("400 Gb/sec (4X NDR)", 400.0), ("200 Gb/sec (2X NDR)", 200.0), ("2.5 Gb/sec (1X SDR)", 2.5),
     ("100 Gb/sec (4X EDR)", 100.0), ("Unknown", None), ("", None)],
)
def test_parse_rate(text, expected):
    assert ib.parse_rate(text) == expected


# --------------------------------------------------------------------------
# the real captured tree


@pytest.mark.parametrize(
    "device,state,phys,rate,link_layer,link_downed",
    [
        ("mlx5_0", "ACTIVE", "LinkUp", 400.0, "InfiniBand", 0),
        ("mlx5_1", "ACTIVE", "LinkUp", 400.0, "InfiniBand", 255),
        ("mlx5_bond_0", "ACTIVE", "LinkUp", 200.0, "Ethernet", None),
    ],
)
def test_real_h100_tree_is_read_exactly(device, state, phys, rate, link_layer, link_downed):
    snap = ib.read_sysfs(REAL_ROOT)
    assert snap.class_present and snap.devices == ("mlx5_0", "mlx5_1", "mlx5_bond_0")
    p = snap.port(device, 1)
    assert (p.state, p.state_code, p.phys_state, p.phys_state_code) == (state, 4, phys, 5)
    assert (p.rate_gbps, p.link_layer) == (rate, link_layer)
    assert p.read_errors == {}
    if link_downed is not None:
        assert p.counters["link_downed"] == link_downed
        assert p.counters["port_rcv_data"] > 10**14  # 64-bit counters survive
    assert p.subject == f"{device} port 1"


def test_real_h100_tree_passes_with_its_hcas_expected(tmp_path):
    facts = ibchecks.gather_ib(_ctx(REAL_ROOT, tmp_path))
    results = _run_all(facts, {"infiniband.expected_hcas": ["mlx5_0", "mlx5_1"], "infiniband.min_rate_gbps": 400})
    assert {r.status for r in results} == {Status.PASS}, [r.message for r in results if r.status is not Status.PASS]


def test_ethernet_bond_is_not_judged_when_unlisted(tmp_path):
    facts = ibchecks.gather_ib(_ctx(REAL_ROOT, tmp_path))
    # 200 Gb/s Ethernet bond below a 400 Gb/s node-wide minimum: ignored.
    results = _run_all(facts, {"infiniband.min_rate_gbps": 400})
    assert _bad(results) == [] and _bad(results, Status.WARN) == []


# --------------------------------------------------------------------------
# write_sysfs_tree produces the kernel's formats


@pytest.mark.parametrize(
    "spec,files",
    [
        (_port("mlx5_0"), {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": "400 Gb/sec (4X NDR)", "link_layer": "InfiniBand"}),
        (_port("mlx5_3", state="DOWN", phys_state="Polling", rate=10), {"state": "1: DOWN", "phys_state": "2: Polling", "rate": "10 Gb/sec (4X SDR)"}),
        (_port("mlx5_2", state="INIT", rate=200), {"state": "2: INIT", "rate": "200 Gb/sec (4X HDR)"}),
        (_port("mlx5_bond_0", rate="200 Gb/sec (2X NDR)", link_layer="Ethernet"), {"rate": "200 Gb/sec (2X NDR)", "link_layer": "Ethernet"}),
        (_port("mlx4_0", state=1, phys_state="Disabled", rate=2.5), {"state": "1: DOWN", "phys_state": "3: Disabled", "rate": "2.5 Gb/sec (1X SDR)"}),
    ],
)
def test_written_tree_has_kernel_formats(tmp_path, spec, files):
    ib.write_sysfs_tree(tmp_path, [spec])
    pdir = tmp_path / "sys/class/infiniband" / spec["device"] / "ports/1"
    for name, text in files.items():
        assert (pdir / name).read_text() == text + "\n"
    assert (pdir / "counters" / "symbol_error").read_text() == "0\n"


def test_written_tree_reads_back_like_the_real_one(tmp_path):
    ib.write_sysfs_tree(tmp_path, [_port("mlx5_0", counters={"symbol_error": 7})])
    mine = ib.read_sysfs(tmp_path).port("mlx5_0", 1)
    real = ib.read_sysfs(REAL_ROOT).port("mlx5_0", 1)
    assert (mine.state, mine.phys_state, mine.rate_gbps, mine.rate_text, mine.link_layer) == (
        real.state, real.phys_state, real.rate_gbps, real.rate_text, real.link_layer)
    assert mine.counters["symbol_error"] == 7


# --------------------------------------------------------------------------
# judging


def test_healthy_eight_rail_node_passes(tmp_path):
    facts = ibchecks.gather_ib(_ctx(_ndr_node(tmp_path / "r"), tmp_path / "s"))
    results = _run_all(facts, EIGHT_RAILS)
    assert {r.status for r in results} == {Status.PASS}


def test_port_down_polling_fails_with_a_cable_hint(tmp_path):
    root = _ndr_node(tmp_path / "r", mlx5_3={"state": "DOWN", "phys_state": "Polling", "rate": 10})
    results = _run_all(ibchecks.gather_ib(_ctx(root, tmp_path / "s")), EIGHT_RAILS)
    assert _bad(results) == [("ib.port.phys_state", "mlx5_3 port 1"), ("ib.port.state", "mlx5_3 port 1")]
    state = next(r for r in results if r.check == "ib.port.state" and r.status is Status.FAIL)
    assert "state DOWN / phys_state Polling" in state.message and "check cable and switch" in state.message


def test_active_but_subnet_manager_missing_is_named(tmp_path):
    root = _ndr_node(tmp_path / "r", mlx5_5={"state": "INIT"})
    results = _run_all(ibchecks.gather_ib(_ctx(root, tmp_path / "s")), EIGHT_RAILS)
    assert _bad(results) == [("ib.port.state", "mlx5_5 port 1")]
    assert "subnet manager" in next(r for r in results if r.status is Status.FAIL).message


@pytest.mark.parametrize(
    "rate,expected_rate,bad",
    [(200, 400, True), (400, 400, False), ("400 Gb/sec (4X NDR)", 200, False), (100, 200, True)],
)
def test_rate_below_expected_fails(tmp_path, rate, expected_rate, bad):
    root = _ndr_node(tmp_path / "r", n=1, mlx5_0={"rate": rate})
    settings = {"infiniband.expected": [{"device": "mlx5_0", "ports": [1], "rate_gbps": expected_rate}]}
    results = _run_all(ibchecks.gather_ib(_ctx(root, tmp_path / "s")), settings)
    assert _bad(results) == ([("ib.port.rate", "mlx5_0 port 1")] if bad else [])


def test_missing_hca_fails(tmp_path):
    root = _ndr_node(tmp_path / "r", n=7)  # mlx5_7 never registered
    results = _run_all(ibchecks.gather_ib(_ctx(root, tmp_path / "s")), EIGHT_RAILS)
    assert _bad(results) == [("ib.hca.present", "mlx5_7")]
    assert "lspci" in next(r for r in results if r.status is Status.FAIL).message


def test_missing_port_of_present_hca_fails(tmp_path):
    root = _ndr_node(tmp_path / "r", n=1)
    results = _run_all(ibchecks.gather_ib(_ctx(root, tmp_path / "s")), {"infiniband.expected": [{"device": "mlx5_0", "ports": [1, 2]}]})
    assert _bad(results) == [("ib.hca.present", "mlx5_0 port 2")]


def test_no_infiniband_at_all_when_expected_fails(tmp_path):
    results = _run_all(ibchecks.gather_ib(_ctx(tmp_path / "empty", tmp_path / "s")), EIGHT_RAILS)
    assert _bad(results) == [("ib.hca.present", f"mlx5_{i}") for i in range(8)]
    assert "no InfiniBand devices at all" in next(r for r in results if r.status is Status.FAIL).message


def test_no_infiniband_expected_and_none_present_passes(tmp_path):
    results = _run_all(ibchecks.gather_ib(_ctx(tmp_path / "empty", tmp_path / "s")), {})
    assert len(results) == len(CHECKS)
    assert all(r.status is Status.PASS and r.message == "no InfiniBand expected" for r in results)


def test_ethernet_link_layer_where_infiniband_expected_fails(tmp_path):
    root = _ndr_node(tmp_path / "r", mlx5_2={"link_layer": "Ethernet"})
    results = _run_all(ibchecks.gather_ib(_ctx(root, tmp_path / "s")), EIGHT_RAILS)
    assert _bad(results) == [("ib.port.link_layer", "mlx5_2 port 1")]
    assert "expected InfiniBand" in next(r for r in results if r.status is Status.FAIL).message


def test_expected_ethernet_port_passes(tmp_path):
    facts = ibchecks.gather_ib(_ctx(REAL_ROOT, tmp_path))
    settings = {"infiniband.expected": [{"device": "mlx5_bond_0", "link_layer": "Ethernet", "rate_gbps": 200}, "mlx5_0"]}
    assert _bad(_run_all(facts, settings)) == []


@pytest.mark.parametrize(
    "mode,status",
    [(None, Status.WARN), ("fail", Status.FAIL), ("warn", Status.WARN), ("ignore", None)],
)
def test_unlisted_down_port_follows_unlisted_ports(tmp_path, mode, status):
    root = _ndr_node(tmp_path / "r", n=2, mlx5_1={"state": "DOWN", "phys_state": "Disabled"})
    settings = {"infiniband.expected_hcas": ["mlx5_0"]}
    if mode:
        settings["infiniband.unlisted_ports"] = mode
    results = _run_all(ibchecks.gather_ib(_ctx(root, tmp_path / "s")), settings)
    flagged = sorted((r.check, r.subject, r.status) for r in results if r.status is not Status.PASS)
    if status is None:
        assert flagged == []
    else:
        assert flagged == [("ib.port.phys_state", "mlx5_1 port 1", status), ("ib.port.state", "mlx5_1 port 1", status)]
        assert any("disabled" in r.message for r in results if r.subject == "mlx5_1 port 1")


def test_unlisted_ethernet_port_down_is_not_judged(tmp_path):
    root = tmp_path / "r"
    ib.write_sysfs_tree(root, [_port("mlx5_0"), _port("mlx5_bond_0", state="DOWN", phys_state="Polling", link_layer="Ethernet")])
    results = _run_all(ibchecks.gather_ib(_ctx(root, tmp_path / "s")), {"infiniband.expected_hcas": ["mlx5_0"]})
    assert _bad(results) == [] and _bad(results, Status.WARN) == []


def test_unreadable_attribute_is_unknown_for_that_port_only(tmp_path):
    root = _ndr_node(tmp_path / "r", n=2)
    (root / "sys/class/infiniband/mlx5_1/ports/1/state").unlink()
    results = _run_all(ibchecks.gather_ib(_ctx(root, tmp_path / "s")), {"infiniband.expected_hcas": ["mlx5_0", "mlx5_1"]})
    assert _bad(results, Status.UNKNOWN) == [("ib.port.state", "mlx5_1 port 1")]
    assert _bad(results) == []


# --------------------------------------------------------------------------
# error counters across runs


def _set_counter(root: Path, device: str, name: str, value: int) -> None:
    (root / "sys/class/infiniband" / device / "ports/1/counters" / name).write_text(f"{value}\n")


def test_growing_error_counters_warn_on_the_next_run(tmp_path):
    root, state = _ndr_node(tmp_path / "r", n=2), tmp_path / "state"
    first = _errors(ibchecks.gather_ib(_ctx(root, state)))
    assert [r.status for r in first] == [Status.PASS] and "baseline recorded" in first[0].message
    assert json.loads((state / ibchecks.BASELINE_FILE).read_text())["ports"]["mlx5_1/1"]["symbol_error"] == 0

    _set_counter(root, "mlx5_1", "symbol_error", 3)
    _set_counter(root, "mlx5_1", "port_rcv_data", 10**12)  # traffic is not an error
    second = _errors(ibchecks.gather_ib(_ctx(root, state)))
    assert [(r.subject, r.status) for r in second] == [("mlx5_1 port 1", Status.WARN)]
    assert second[0].details["grown"] == {"symbol_error": 3}
    assert "symbol_error +3" in second[0].message

    # nothing grew since the second run
    third = _errors(ibchecks.gather_ib(_ctx(root, state)))
    assert [r.status for r in third] == [Status.PASS]


@pytest.mark.parametrize(
    "before,after,conf,warns",
    [
        (5, 2, None, False),  # reset: smaller value is not growth
        (0, 4, {"symbol_error": 10}, False),  # below threshold
        (0, 12, {"symbol_error": 10}, True),
        (0, 4, ["link_downed"], False),  # not watched
        (0, 4, ["symbol_error"], True),
    ],
)
def test_counter_growth_table(tmp_path, before, after, conf, warns):
    root, state = _ndr_node(tmp_path / "r", n=1), tmp_path / "state"
    _set_counter(root, "mlx5_0", "symbol_error", before)
    ibchecks.gather_ib(_ctx(root, state))
    _set_counter(root, "mlx5_0", "symbol_error", after)
    settings = {} if conf is None else {"infiniband.error_counters_warn": conf}
    results = _errors(ibchecks.gather_ib(_ctx(root, state)), settings)
    assert [r.status for r in results] == [Status.WARN if warns else Status.PASS]


def test_corrupt_baseline_starts_over(tmp_path):
    root, state = _ndr_node(tmp_path / "r", n=1), tmp_path / "state"
    state.mkdir()
    (state / ibchecks.BASELINE_FILE).write_text("{ half written")
    facts = ibchecks.gather_ib(_ctx(root, state))
    assert facts.baseline is None and "unreadable" in facts.baseline_note
    assert [r.status for r in _errors(facts)] == [Status.PASS]
    assert "ports" in json.loads((state / ibchecks.BASELINE_FILE).read_text())


def test_dry_run_does_not_move_the_baseline(tmp_path):
    root, state = _ndr_node(tmp_path / "r", n=1), tmp_path / "state"
    ibchecks.gather_ib(_ctx(root, state))
    _set_counter(root, "mlx5_0", "link_downed", 1)
    ibchecks.gather_ib(_ctx(root, state, dry_run=True))
    results = _errors(ibchecks.gather_ib(_ctx(root, state)))
    assert [r.status for r in results] == [Status.WARN]


def test_unwritable_state_dir_is_noted_not_raised(tmp_path):
    root = _ndr_node(tmp_path / "r", n=1)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    facts = ibchecks.gather_ib(_ctx(root, blocker / "state"))
    assert "could not save counters" in facts.baseline_note


# --------------------------------------------------------------------------
# the suite's context and simulated scenarios


def test_gatherer_prefers_the_context_sysfs_root(tmp_path):
    root = _ndr_node(tmp_path / "r", n=3)
    ctx = _ctx(tmp_path / "elsewhere", tmp_path / "s")
    ctx._sysfs_root = str(root)  # what Context.sysfs_root() answers (a simulated tree, say)
    assert ibchecks.gather_ib(ctx).snapshot.devices == ("mlx5_0", "mlx5_1", "mlx5_2")


def test_ib_port_down_scenario_through_the_suite_context(tmp_path):
    scenario = pytest.importorskip("gcm_checks.sim.scenario")
    ctx = testing.context(testing.settings(EIGHT_RAILS), tmp_path, sim=scenario.load("ib-port-down"))
    try:
        results = _run_all(ibchecks.gather_ib(ctx), EIGHT_RAILS)
    finally:
        ctx.close()
    assert _bad(results) == [("ib.port.phys_state", "mlx5_3 port 1"), ("ib.port.state", "mlx5_3 port 1")]


@pytest.mark.parametrize(
    "settings,expected",
    [
        ({"infiniband.expected_hcas": ["mlx5_0"]}, [ibchecks.ExpectedPort("mlx5_0", 1, None, "InfiniBand")]),
        ({"infiniband.expected_hcas": ["mlx5_0"], "infiniband.min_rate_gbps": 200, "infiniband.link_layer": "Ethernet"},
         [ibchecks.ExpectedPort("mlx5_0", 1, 200.0, "Ethernet")]),
        ({"infiniband.expected": [{"device": "mlx5_1", "ports": [1, 2], "rate_gbps": 400}]},
         [ibchecks.ExpectedPort("mlx5_1", 1, 400.0, "InfiniBand"), ibchecks.ExpectedPort("mlx5_1", 2, 400.0, "InfiniBand")]),
        ({"infiniband.expected": [{"device": "mlx5_1", "port": 2}], "infiniband.expected_hcas": ["mlx5_0"]},
         [ibchecks.ExpectedPort("mlx5_0", 1, None, "InfiniBand"), ibchecks.ExpectedPort("mlx5_1", 2, None, "InfiniBand")]),
    ],
)
def test_expected_ports_table(settings, expected):
    assert ibchecks.expected_ports(testing.settings(settings)) == expected


def test_malformed_expectation_is_an_error_not_a_silent_pass():
    with pytest.raises(ValueError, match="infiniband.expected"):
        ibchecks.expected_ports(testing.settings({"infiniband.expected": [{"ports": [1]}]}))


def test_logically_down_with_physical_link_up_points_at_the_subnet_manager(tmp_path):
    # Real case (corpus: network-operator249_ibstat_state_down_phys_linkup):
    # "State: Down / Physical state: LinkUp", Base lid 65535 (no SM).
    root = _ndr_node(tmp_path / "r", mlx5_6={"state": "DOWN", "phys_state": "LinkUp"})
    results = _run_all(ibchecks.gather_ib(_ctx(root, tmp_path / "s")), EIGHT_RAILS)
    assert _bad(results) == [("ib.port.state", "mlx5_6 port 1")]
    assert "subnet manager" in next(r for r in results if r.status is Status.FAIL).message
