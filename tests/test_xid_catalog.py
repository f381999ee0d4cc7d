"""XID catalog: complete, consistent, and judging the way NVIDIA's catalog says."""

from __future__ import annotations

import pytest

from gcm_checks.xid import catalog


def test_every_code_in_nvidias_catalog_is_present():
    # NVIDIA's Xid-Catalog.xlsx lists 1..172 (R575): every number, no gaps.
    assert sorted(catalog.CATALOG) == list(range(1, 173))


@pytest.mark.parametrize("code", sorted(catalog.CATALOG))
def test_rows_are_well_formed(code):
    info = catalog.CATALOG[code]
    assert info.code == code
    assert info.mnemonic and info.name and info.cause
    assert info.responsibility in catalog.RESPONSIBILITIES
    assert info.action in catalog.ACTIONS
    assert info.severity in catalog.SEVERITIES
    # Drain-worthy means there is something to do; nothing to do never drains.
    assert (info.severity == "fail") <= (info.action in ("reset_gpu", "reboot", "drain_inspect"))
    assert (info.action == "none") <= (info.severity != "fail")
    # Application faults are the job's, never the node's (rule 4).
    if info.responsibility == "application":
        assert info.severity == "info"


@pytest.mark.parametrize("code", [8, 11, 13, 14, 25, 31, 43, 45, 69, 137])
def test_application_xids_never_drain(code):
    info = catalog.lookup(code)
    assert info.responsibility == "application"
    assert info.severity == "info"
    assert catalog.assess(code).severity == "info"


@pytest.mark.parametrize(
    "code, responsibility, action",
    [
        (48, "hardware", "reset_gpu"),
        (62, "hardware", "reset_gpu"),
        (63, "hardware", "reset_gpu"),
        (64, "hardware", "drain_inspect"),
        (74, "nvlink_fabric", "reset_gpu"),
        (79, "hardware", "reboot"),
        (95, "hardware", "reset_gpu"),
        (119, "driver", "reset_gpu"),
        (120, "driver", "reset_gpu"),
        (140, "hardware", "reset_gpu"),
        (54, "thermal_power", "drain_inspect"),
    ],
)
def test_hardware_xids_drain_with_an_action(code, responsibility, action):
    info = catalog.lookup(code)
    assert (info.severity, info.responsibility, info.action) == ("fail", responsibility, action)


def test_nvidia_reset_or_reboot_buckets_always_drain():
    # Where NVIDIA's immediate action is a GPU reset or a bare-metal restart,
    # the GPU must not take another job first.
    for info in catalog.CATALOG.values():
        if info.nvidia_immediate in ("RESET_GPU", "RESTART_BM"):
            assert info.severity == "fail", info.code


def test_unused_codes_are_marked_and_do_not_drain():
    unused = [i for i in catalog.CATALOG.values() if not i.in_use]
    assert {1, 2, 9, 47, 58, 122, 138} <= {i.code for i in unused}
    assert all(i.severity == "warn" and i.action == "none" for i in unused)


def test_unknown_code_is_warn_never_fail():
    info = catalog.lookup(999)
    assert info.severity == "warn" and info.action == "none"
    assert catalog.assess(999).severity == "warn"


@pytest.mark.parametrize(
    "text, action, severity",
    [
        ("Node Reboot Required", "reboot", "fail"),
        ("Reboot the system", "reboot", "fail"),
        ("GPU Reset Required", "reset_gpu", "fail"),
        ("Drain and Reset", "reset_gpu", "fail"),
        ("Drain P2P", "reset_gpu", "fail"),
        ("None", "none", "info"),
    ],
)
def test_xid_154_recovery_action(text, action, severity):
    a = catalog.assess(154, {"recovery_action": text})
    assert (a.action, a.severity) == (action, severity)


def test_xid_154_without_decodable_text_stays_warn():
    assert catalog.assess(154, {}).severity == "warn"


@pytest.mark.parametrize(
    "decoded, severity, action",
    [
        ({}, "warn", "restart_app"),
        ({"reset_required": False, "drain_reset_required": False}, "warn", "restart_app"),
        ({"reset_required": True}, "fail", "reset_gpu"),
        ({"reset_required": False, "drain_reset_required": True}, "fail", "reset_gpu"),
    ],
)
def test_xid_94_by_containment(decoded, severity, action):
    a = catalog.assess(94, decoded)
    assert (a.severity, a.action) == (severity, action)


@pytest.mark.parametrize(
    "code, decoded, severity",
    [
        (144, {"nvlink_subcode": "SAW_MVB", "nvlink_fatal": False}, "warn"),
        (144, {"nvlink_subcode": "SAW_MVB", "nvlink_fatal": True}, "fail"),
        (149, {"nvlink_subcode": "NETIR", "nvlink_fatal": True}, "fail"),
        (149, {"nvlink_subcode": "NETIR", "nvlink_fatal": True, "nvlink_injected": True}, "info"),
        (145, {"nvlink_subcode": "RLW_RXPIPE", "nvlink_fatal": False}, "warn"),
        (146, {}, "warn"),  # undecodable: the catalog default, never a guess at fail
    ],
)
def test_nvlink5_by_subcode(code, decoded, severity):
    assert catalog.assess(code, decoded).severity == severity


def test_to_dict_has_the_fields_explain_prints():
    d = catalog.lookup(79).to_dict()
    assert d["code"] == 79 and d["action"] == "reboot" and d["action_text"] == "reboot the node"
    assert d["nvidia_immediate"] == "RESTART_BM"
