"""XID scan: events, PCI-to-GPU mapping, escalation state, last-scan state."""

from __future__ import annotations

import json
from datetime import timezone

import pytest

from gcm_checks.gather import kernel_log as kl
from gcm_checks.testing import kernel_xid_line
from gcm_checks.xid import scan as xscan

UTC = timezone.utc
T0 = 1_796_000_000.0  # 2026-11-30T...

# DGX-like map in NVML's spelling; the log spells bus ids differently.
BUS_MAP = {"00000000:18:00.0": 0, "00000000:2A:00.0": 1, "00000000:3A:00.0": 2, "00000000:5D:00.0": 3,
           "00000000:9A:00.0": 4, "00000000:AB:00.0": 5, "00000000:BA:00.0": 6, "00000000:DB:00.0": 7}


def events_from(lines, bus_map=BUS_MAP, **kw):
    return list(xscan.scan(kl.read_text("\n".join(lines), tz=UTC, **kw), bus_map, tz=UTC))


@pytest.mark.parametrize(
    "bus, index",
    [("0000:18:00", 0), ("0000:2a:00", 1), ("0000:5D:00", 3), ("0000:db:00", 7), ("0000:99:00", None)],
)
def test_pci_bus_id_maps_to_gpu_index(bus, index):
    (ev,) = events_from([kernel_xid_line(79, bus, when=T0)])
    assert ev.gpu_index == index
    assert ev.pci_bus_id == "00000000:" + bus[5:].upper() + ".0"


def test_bus_map_keys_in_any_spelling():
    (ev,) = events_from([kernel_xid_line(79, "0000:3a:00", when=T0)], bus_map={"0000:3a:00.0": 2})
    assert ev.gpu_index == 2


def test_event_dict_schema_is_exact():
    (ev,) = events_from([kernel_xid_line(79, "0000:5d:00", when=T0 + 0.5)])
    d = ev.to_dict()
    assert list(d) == ["time", "xid", "pci_bus_id", "gpu_index", "severity", "responsibility", "action", "name", "line"]
    assert d["time"].endswith("+00:00") and "T" in d["time"]
    assert (d["xid"], d["gpu_index"], d["severity"], d["action"]) == (79, 3, "fail", "reboot")
    assert json.loads(json.dumps(d)) == d


def test_line_is_sanitised_and_bounded():
    evil = kernel_xid_line(13, "0000:18:00", "x\x1b[2J$(reboot)<script>" + "A" * 2000, when=T0)
    (ev,) = events_from([evil])
    assert "\x1b" not in ev.line and len(ev.line) <= 512
    assert all(32 <= ord(c) < 127 for c in ev.line)


def test_scan_window_edges_end_to_end():
    start, end = T0, T0 + 3600
    lines = [
        kernel_xid_line(48, "0000:18:00", "DBE", when=start - 1, fmt="dmesg_t"),  # one second before: out
        kernel_xid_line(79, "0000:2a:00", when=start, fmt="dmesg_t"),
        kernel_xid_line(63, "0000:ab:00", "Row Remapper", when=end, fmt="dmesg_t"),
        kernel_xid_line(64, "0000:ab:00", "Row Remapper failure", when=end + 1, fmt="dmesg_t"),  # after: out
    ]
    got = events_from(lines, since=start, until=end)
    assert [(e.xid, e.gpu_index) for e in got] == [(79, 1), (63, 5)]


def test_summarise_and_worst():
    evs = events_from([
        kernel_xid_line(13, "0000:18:00", "Graphics Exception", when=T0),
        kernel_xid_line(79, "0000:18:00", when=T0 + 1),
        kernel_xid_line(31, "0000:2a:00", "MMU Fault", when=T0 + 2),
    ])
    groups = xscan.summarise(evs)
    assert set(groups) == {"00000000:18:00.0", "00000000:2A:00.0"}
    sev, ev = xscan.worst(evs)
    assert sev == "fail" and ev.xid == 79


class TestEscalation:
    def run(self, state, lines, window_start, now):
        esc = xscan.Escalation(str(state))
        evs = esc.apply(events_from(lines), window_start, now)
        esc.record(evs, now)
        return evs

    def test_same_xid_same_gpu_in_a_later_scan_escalates(self, tmp_path):
        first = self.run(tmp_path, [kernel_xid_line(79, "0000:5d:00", when=T0)], T0 - 10, T0 + 100)
        assert first[0].action == "reboot"
        # The node was drained, rebooted, resumed; a later job sees it again.
        later = self.run(tmp_path, [kernel_xid_line(79, "0000:5d:00", when=T0 + 7200)], T0 + 7000, T0 + 7300)
        assert later[0].action == "drain_inspect" and later[0].severity == "fail"
        assert "escalated" in later[0].note

    @pytest.mark.parametrize(
        "second",
        [
            kernel_xid_line(79, "0000:18:00", when=T0 + 7200),  # other GPU
            kernel_xid_line(48, "0000:5d:00", "DBE", when=T0 + 7200),  # other XID
            kernel_xid_line(13, "0000:5d:00", "Graphics Exception", when=T0 + 7200),  # application
        ],
    )
    def test_no_escalation_for_other_gpu_or_code(self, tmp_path, second):
        self.run(tmp_path, [kernel_xid_line(79, "0000:5d:00", when=T0)], T0 - 10, T0 + 100)
        later = self.run(tmp_path, [second], T0 + 7000, T0 + 7300)
        assert later[0].action != "drain_inspect"

    def test_repeats_within_one_window_do_not_escalate_themselves(self, tmp_path):
        lines = [kernel_xid_line(119, "0000:9a:00", "GSP timeout", when=T0 + i * 6) for i in range(5)]
        evs = self.run(tmp_path, lines, T0 - 1, T0 + 100)
        assert {e.action for e in evs} == {"reset_gpu"}
        # Re-scanning the same window (epilog retried) must not escalate either.
        again = self.run(tmp_path, lines, T0 - 1, T0 + 200)
        assert {e.action for e in again} == {"reset_gpu"}

    def test_history_expires(self, tmp_path):
        self.run(tmp_path, [kernel_xid_line(79, "0000:5d:00", when=T0)], T0 - 10, T0 + 100)
        much_later = T0 + 31 * 86400
        evs = self.run(tmp_path, [kernel_xid_line(79, "0000:5d:00", when=much_later)], much_later - 10, much_later + 1)
        assert evs[0].action == "reboot"
        hist = json.loads((tmp_path / xscan.STATE_HISTORY).read_text())
        assert list(hist["gpus"]["00000000:5D:00.0"]) == ["79"]

    def test_corrupt_state_loses_history_not_the_scan(self, tmp_path):
        (tmp_path / xscan.STATE_HISTORY).write_text("{not json")
        evs = self.run(tmp_path, [kernel_xid_line(79, "0000:5d:00", when=T0)], T0 - 10, T0 + 100)
        assert evs[0].action == "reboot"
        assert json.loads((tmp_path / xscan.STATE_HISTORY).read_text())["version"] == 1


def test_last_scan_roundtrip(tmp_path):
    assert xscan.read_last_scan(str(tmp_path)) is None
    xscan.write_last_scan(str(tmp_path / "sub"), 1234.5)
    assert xscan.read_last_scan(str(tmp_path / "sub")) == 1234.5
    assert not [p for p in (tmp_path / "sub").iterdir() if p.name.startswith(".xid.")]  # no temp files left


def test_recorded_since_answers_for_resume_decisions(tmp_path):
    esc = xscan.Escalation(str(tmp_path))
    esc.record(events_from([kernel_xid_line(79, "0000:5d:00", when=T0),
                            kernel_xid_line(13, "0000:18:00", "app", when=T0 + 5),  # not remembered
                            kernel_xid_line(48, "0000:18:00", "DBE", when=T0 + 10)]), now=T0 + 20)
    assert xscan.recorded_since(str(tmp_path), T0 + 1) == [("00000000:18:00.0", 48, T0 + 10)]
    assert [r[1] for r in xscan.recorded_since(str(tmp_path), 0)] == [79, 48]
    assert xscan.recorded_since(str(tmp_path / "none"), 0) == []
