"""Every kernel-log format issue 18 names, read from our own captures
(tests/fixtures/kernel/README.md): fallen off the bus without an Xid line,
NVSwitch SXids, saved /dev/kmsg records - through the file reader, the text
reader (journal/simulation path), the checks and the CLI."""

from __future__ import annotations

import json
import os
from datetime import timezone

import pytest

from gcm_checks.checks import xid as xchecks
from gcm_checks.gather import kernel_log as kl
from gcm_checks.sim.sources import scenario_sources
from gcm_checks.xid import scan as xscan
from gcm_checks.xid import sxid
from gcm_checks.xid.parse import parse_xid

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "kernel")
UTC = timezone.utc
BOOT = 1_796_000_000.0
BUS_MAP = {"00000000:18:00.0": 0, "00000000:29:00.0": 1, "00000000:5D:00.0": 3, "00000000:91:00.0": 5}


def _file_events(name, **kw):
    kw.setdefault("boot", BOOT)
    return list(xscan.scan_all(kl.read_file(os.path.join(FIX, name), tz=UTC, **kw), BUS_MAP, tz=UTC))


def _text_events(name, **kw):
    kw.setdefault("boot", BOOT)
    text = open(os.path.join(FIX, name)).read()
    return list(xscan.scan_all(kl.read_text(text, tz=UTC, **kw), BUS_MAP, tz=UTC))


def _xids(evs):
    return [e for e in evs if isinstance(e, xscan.XidEvent)]


def _sxids(evs):
    return [e for e in evs if isinstance(e, xscan.SxidEvent)]


@pytest.mark.parametrize("reader", [_file_events, _text_events])
def test_single_line_fallen_off_bus_is_xid_79_on_its_gpu(reader):
    (ev,) = _xids(reader("fallen_off_bus_single.dmesg"))
    assert (ev.xid, ev.pci_bus_id, ev.gpu_index, ev.severity, ev.action) == (79, "00000000:29:00.0", 1, "fail", "reboot")
    assert "without an Xid line" in ev.note
    assert ev.ts == pytest.approx(BOOT + 6781.548783)


@pytest.mark.parametrize("reader", [_file_events, _text_events])
def test_three_line_fallen_off_bus_is_one_event_and_unsupported_gpu_is_none(reader):
    evs = _xids(reader("fallen_off_bus_three_line.dmesg_t"))
    assert [(e.xid, e.pci_bus_id, e.gpu_index) for e in evs] == [(79, "00000000:18:00.0", 0)]
    assert "not responding to commands" in evs[0].line and "PCI ID: 10de:2901" in evs[0].line


@pytest.mark.parametrize("reader", [_file_events, _text_events])
def test_xid_79_and_its_fallen_off_follower_are_one_event_and_sxids_their_own(reader):
    evs = reader("xid79_with_followers.dmesg")
    (x,) = _xids(evs)
    assert (x.xid, x.gpu_index) == (79, 5) and "GPU has fallen off the bus" in x.line
    sx = _sxids(evs)
    assert [(e.sxid, e.switch, e.link, e.fatal, e.severity) for e in sx] == [
        (20034, "nvswitch1", 48, True, "fail"), (20034, "nvswitch0", 63, True, "fail"),
        (20034, "nvswitch2", 37, True, "fail")]
    assert sx[0].pci_bus_id == "00000000:06:00.0"


def test_fallen_off_line_after_another_xid_is_its_own_event():
    lines = ["[10.000000] NVRM: Xid (PCI:0000:5d:00): 48, pid=1, DBE",
             "[10.100000] NVRM: GPU 0000:29:00.0: GPU has fallen off the bus."]
    evs = list(xscan.scan(kl.read_text("\n".join(lines), boot=BOOT), BUS_MAP))
    assert [(e.xid, e.gpu_index) for e in evs] == [(48, 3), (79, 1)]


@pytest.mark.parametrize("line, expected", [
    ("NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.", (79, "00000000:29:00.0", "fallen_off_bus")),
    ("NVRM: fallen off the bus and is not responding to commands.", (79, None, "fallen_off_bus")),
    ("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.", (79, "00000000:3B:00.0", "xid")),
    ("NVRM: The NVIDIA GPU 0000:18:00.0", None),  # the opening alone is not an event
    ("nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault Up", None),  # not an XID
])
def test_parse_xid_is_the_one_reading(line, expected):
    p = parse_xid(line)
    assert (None if p is None else (p.xid, p.pci_bus_id, p.origin)) == expected


def test_classify_and_scan_agree_on_fallen_off_bus():
    from gcm_checks.classify import ClassifyInput, LogText, classify

    text = open(os.path.join(FIX, "fallen_off_bus_three_line.dmesg_t")).read()
    c = classify(ClassifyInput(logs=[LogText("kernel", text)]))
    assert c.category == "gpu_hardware"
    assert _xids(_text_events("fallen_off_bus_three_line.dmesg_t"))[0].severity == "fail"


@pytest.mark.parametrize("line, expected", [
    ("nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 20034, Fatal, Link 30 LTSSM Fault Up",
     ("nvswitch0", "0000:00:00.0", 20034, True, 30, "fail")),
    ("nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)",
     ("nvswitch3", "0000:05:00.0", 12028, False, 32, "warn")),
    ("SXid (PCI:0000:07:00.0): 11012, Non-fatal, Link 01 ingress SBE", (None, "0000:07:00.0", 11012, False, 1, "info")),
    ("nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 23001, Link 12 ingress SRC-VC buffer overflow",
     ("nvswitch2", "0000:07:00.0", 23001, None, 12, "fail")),  # always fatal, no verdict printed
    ("nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Link 12 LTSSM Fault Up",
     ("nvswitch2", "0000:07:00.0", 20034, None, 12, "warn")),  # no verdict, not always fatal: could not tell
    ("nvidia-nvswitch0: SXid (PCI:0000:ca:00.0): 10003, Fatal, unhandled interrupt",
     ("nvswitch0", "0000:ca:00.0", 10003, True, None, "fail")),
    ("nvidia-nvswitch9: SXid (PCI:0000:ca:00.0): 99999, Fatal, Link 2 something new",
     ("nvswitch9", "0000:ca:00.0", 99999, True, 2, "fail")),  # unknown code: the driver's verdict decides
])
def test_sxid_lines_parsed_and_judged(line, expected):
    p = sxid.parse_sxid(line)
    assert (p.switch, p.bus_raw, p.code, p.fatal, p.link, sxid.assess(p).severity) == expected


@pytest.mark.parametrize("detail", [
    "nvidia-nvswitch0: SXid (PCI:0000:a9:00.0): 20034, Severity 1 Engine instance 30 Sub-engine instance 00",
    "nvidia-nvswitch0: SXid (PCI:0000:a9:00.0): 20034, Data {0x50610002, 0x10100030, 0x00000000}",
    "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
])
def test_sxid_detail_lines_and_xids_are_not_sxid_events(detail):
    assert sxid.parse_sxid(detail) is None


def test_sxid_catalogue_kinds_from_the_fabric_manager_guide():
    assert sxid.CATALOG[20034].kind == sxid.FATAL and sxid.CATALOG[23001].kind == sxid.ALWAYS_FATAL
    assert sxid.CATALOG[12028].kind == sxid.NONFATAL and sxid.CATALOG[10004].kind == sxid.NOTABLE
    assert len(sxid.CATALOG) >= 90


@pytest.mark.parametrize("reader", [_file_events, _text_events])
def test_syslog_sxids(reader):
    sx = _sxids(reader("sxid_mixed.syslog"))
    assert [(e.sxid, e.severity) for e in sx] == [(20034, "fail"), (12028, "warn"), (19049, "info"), (23001, "fail")]
    assert all(e.time and e.time.endswith("+00:00") for e in sx)


def test_kmsg_file_uses_the_captures_own_boot_time():
    cov = kl.Coverage()
    evs = list(xscan.scan_all(kl.read_file(os.path.join(FIX, "kmsg_records.txt"), tz=UTC, coverage=cov),
                              BUS_MAP, tz=UTC))
    boot = kl.parse_iso("2026-11-30T00:00:00+00:00")
    assert [(type(e).__name__, e.ts) for e in evs] == [
        ("XidEvent", pytest.approx(boot + 206.7644)), ("XidEvent", pytest.approx(boot + 206.7645)),
        ("SxidEvent", pytest.approx(boot + 306.7644))]
    assert evs[0].xid == 48 and evs[0].gpu_index == 3 and evs[1].xid == 79
    assert any("taken from the capture" in n for n in cov.notes)


def test_kmsg_file_in_a_window_with_boot_time():
    path = os.path.join(FIX, "kmsg_records_noboot.txt")
    since, until = BOOT + 206, BOOT + 207
    cov = kl.Coverage()
    evs = list(xscan.scan_all(kl.read_file(path, since=since, until=until, boot=BOOT, coverage=cov), BUS_MAP))
    assert [getattr(e, "xid", None) for e in evs] == [48, 79]
    assert cov.undated == 0
    # The explicit --boot-time wins over the capture's own.
    evs2 = list(xscan.scan_all(kl.read_file(os.path.join(FIX, "kmsg_records.txt"), since=since, until=until,
                                            boot=BOOT), BUS_MAP))
    assert len(evs2) == 2


def test_kmsg_file_gz_same_as_plain(tmp_path):
    import gzip

    p = tmp_path / "kmsg.txt.gz"
    p.write_bytes(gzip.compress(open(os.path.join(FIX, "kmsg_records.txt"), "rb").read()))
    evs = list(xscan.scan_all(kl.read_file(str(p)), BUS_MAP))
    assert len(evs) == 3 and evs[0].ts == pytest.approx(kl.parse_iso("2026-11-30T00:00:00Z") + 206.7644)


def _facts(name):
    evs = _file_events(name)
    return xchecks.XidFacts(events=tuple(_xids(evs)), source="file", window=(BOOT, BOOT + 1e8),
                            sxids=tuple(_sxids(evs)))


def test_fatal_sxid_fails_naming_switch_and_link_non_fatal_warns():
    res = xchecks.check_xid_nvswitch(_facts("sxid_mixed.syslog"), {})
    fails = [r for r in res if r.status.value == "fail"]
    warns = [r for r in res if r.status.value == "warn"]
    assert sorted(r.subject for r in fails) == ["nvswitch0 (00000000:A9:00.0) link 30",
                                                 "nvswitch2 (00000000:07:00.0) link 12"]
    assert "SXid 20034" in next(r.message for r in fails if "link 30" in r.subject)
    assert [r.subject for r in warns] == ["nvswitch3 (00000000:05:00.0) link 32"]


def test_fatal_sxid_drain_reason_names_switch_and_link():
    from gcm_checks.slurm.reasons import make_drain_reason

    (r, *_) = [r for r in _registered("xid.nvswitch", _facts("xid79_with_followers.dmesg"))
               if r.status.value == "fail"]
    reason = make_drain_reason(r.check, r.subject, r.message)
    assert reason.startswith("gcm: SXid 20034 nvswitch1 (xid.nvswitch)") and "link 48" in reason and "SXid 20034" in reason


def test_no_sxids_passes_and_unreadable_log_is_unknown():
    assert xchecks.check_xid_nvswitch(xchecks.XidFacts(), {})[0].status.value == "pass"
    assert xchecks.check_xid_nvswitch(xchecks.XidFacts(error="denied"), {})[0].status.value == "unknown"


def test_cli_scan_lists_sxids_as_their_own_kind(capsys):
    from gcm_checks.cli import main

    rc = main(["xid", "scan", "--kernel-log", os.path.join(FIX, "xid79_with_followers.dmesg"), "--no-gpu-map",
               "--boot-time", "@1796000000", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert [e["xid"] for e in doc["events"]] == [79]
    assert [e["kind"] for e in doc["sxids"]] == ["sxid"] * 3 and doc["sxids"][0]["link"] == 48


def test_cli_scan_kmsg_file_in_window(capsys):
    from gcm_checks.cli import main

    path = os.path.join(FIX, "kmsg_records_noboot.txt")
    rc = main(["xid", "scan", "--kernel-log", path, "--no-gpu-map", "--boot-time", "2026-11-30T00:00:00Z",
               "--since", "2026-11-30T00:03:00Z", "--until", "2026-11-30T00:04:00Z", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 1 and [e["xid"] for e in doc["events"]] == [48, 79] and doc["undated_lines_skipped"] == 0
    t = kl.parse_iso(doc["events"][0]["time"])
    assert t == pytest.approx(kl.parse_iso("2026-11-30T00:03:26.7644Z"), abs=1e-3)


@pytest.mark.parametrize("code, drains", [(20034, "when the line says Fatal"), (23001, "always fatal")])
def test_cli_explain_sxid(capsys, code, drains):
    from gcm_checks.cli import main

    assert main(["xid", "explain", str(code)]) == 0
    out = capsys.readouterr().out
    assert f"SXid {code}" in out and drains in out
    assert main(["xid", "explain", str(code), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sxid"] == code


def test_simulated_kernel_log_feeds_sxids_to_the_epilog_check(tmp_path):
    text = open(os.path.join(FIX, "sxid_mixed.syslog")).read()
    from gcm_checks import testing

    # The scenario's text injected as the kernel log, as suite.Context does for --sim.
    ctx = testing.context(testing.settings(), tmp_path, window=None, sources=scenario_sources({"kernel_log": text}),
                          dry_run=True)
    ctx.gpu_bus_ids = lambda: {}  # no NVML here: events keep their bus ids
    facts = xchecks.gather_xid(ctx)
    assert [e.sxid for e in facts.sxids] == [20034, 12028, 19049, 23001]


def test_journal_source_reads_fallen_off_and_sxids(tmp_path):
    import stat
    import sys
    import textwrap

    exe = tmp_path / "journalctl"
    exe.write_text(f"#!{sys.executable}\n" + textwrap.dedent("""
        print("2026-11-30T10:00:00.100000+0000 n1 kernel: NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.")
        print("2026-11-30T10:00:01.000000+0000 n1 kernel: nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 30 LTSSM Fault Up")
        print("2026-11-30T10:00:02.000000+0000 n1 kernel: eth0: link up")
    """))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    start = kl.parse_iso("2026-11-30T10:00:00Z")
    evs = list(xscan.scan_all(kl.read_journal(start, start + 60, timeout=10, journalctl=str(exe)), BUS_MAP))
    assert [(type(e).__name__, getattr(e, "xid", None) or getattr(e, "sxid", None)) for e in evs] == [
        ("XidEvent", 79), ("SxidEvent", 20034)]


def _registered(check_id, facts):
    """A check run as the suite runs it (gcm_checks.testing): its id stamped."""
    from gcm_checks import testing

    return testing.run_checks(facts, testing.settings(), check_id)
