"""XID line parser over real line formats (shared corpus, xid_lines.txt)."""

from __future__ import annotations

import pytest

from gcm_checks.gather.kernel_log_parse import KernelLine
from gcm_checks.xid.parse import group, normalise_bus_id, parse_xid, sanitise

# (line, xid, normalised bus id, pid, process) - lines copied from the corpus.
REAL_LINES = [
    ("NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus.", 79, "00000000:06:00.0", None, None),
    ("[Fri Apr  5 21:29:39 2024] NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
     79, "00000000:A1:00.0", None, None),
    ("[6781741.548779] NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
     79, "00000000:91:00.0", None, None),
    ("[Wed Jul 31 23:14:18 2024] NVRM: Xid (PCI:0000:00:05): 43, pid=1045242, name=pt_main_thread, Ch 00000008",
     43, "00000000:00:05.0", 1045242, "pt_main_thread"),
    ("[Mon Aug  5 03:54:13 2024] NVRM: Xid (PCI:0000:00:07): 31, pid=2512125, name=python3.10, Ch 00000008, intr 00000000. "
     "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ 0x73ac_1c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE",
     31, "00000000:00:07.0", 2512125, "python3.10"),
    ("NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.",
     63, "00000000:10:1C.0", 1896, None),
    ("Dec  2 10:43:35 worker4 kernel: [240314.528856] NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, "
     "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x7fdd60000 partition",
     48, "00000000:07:00.0", None, None),
    ("[24128.828315] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000000 intr 00004000", 32, "00000000:01:00.0", None, None),
    # older format without "PCI:"
    ("NVRM: Xid (0000:01:00): 16, Head 00000000 Count 00000000", 16, "00000000:01:00.0", None, None),
    ("NVRM: Xid (0000:01:00): 8, Channel 00000000", 8, "00000000:01:00.0", None, None),
    ("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
     45, "00000000:DC:00.0", 1818990, "python3"),
    ("[605633.376794] NVRM: Xid (PCI:0000:06:00): 120, GSP task exception: store access page fault (cause:0xf) @ pc:0x13ebd80, partition:2#0, task:3",
     120, "00000000:06:00.0", None, None),
    ("kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, "
     "Graphics SM Global Exception on (GPC 8, TPC 5, SM 1): Multiple Warp Errors", 13, "00000000:38:00.0", None, None),
    ("[Sun Apr 26 23:12:26 2026] NVRM: Xid (PCI:0001:6c:00): 119, pid=10200, name=NvmlTaskRunner, Timeout after 45s of "
     "waiting for RPC response from GPU5 GSP! Expected function 76 (GSP_RM_CONTROL) sequence 24174 (0x20801322 0x808).",
     119, "00000001:6C:00.0", 10200, "NvmlTaskRunner"),
    ("NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
     149, "00000019:01:00.0", None, None),
    # no bus id at all
    ("NVRM: Xid: 79, GPU has fallen off the bus.", 79, None, None, None),
    ("NVRM: Xid (GPU-4f1c2b8e-0000): 48, DBE", 48, None, None, None),
    # a mangled bus id is dropped, the code is not misread as 0000
    ("NVRM: Xid (PCI:0000:2a:): 95, Uncontained", 95, None, None, None),
]


@pytest.mark.parametrize("line, xid, bus, pid, process", REAL_LINES)
def test_real_lines(line, xid, bus, pid, process):
    p = parse_xid(line)
    assert p is not None
    assert (p.xid, p.pci_bus_id, p.pid, p.process) == (xid, bus, pid, process)


@pytest.mark.parametrize(
    "line",
    [
        "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15",
        "NVRM: GPU at PCI:0000:5d:00: GPU-4f1c2b8e",
        "mlx5_core 0000:0c:00.0: Xid-like but not NVRM: 79",
        "",
    ],
)
def test_non_xid_lines(line):
    assert parse_xid(line) is None


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("0000:3b:00", "00000000:3B:00.0"),
        ("PCI:0000:3b:00", "00000000:3B:00.0"),
        ("00000000:3B:00.0", "00000000:3B:00.0"),
        ("0000:3b:00.1", "00000000:3B:00.1"),
        ("3b:00.0", "00000000:3B:00.0"),
        ("0019:01:00", "00000019:01:00.0"),
        ("zz:00", None),
        ("", None),
        (None, None),
    ],
)
def test_normalise_bus_id(raw, expected):
    assert normalise_bus_id(raw) == expected


@pytest.mark.parametrize(
    "line, expected",
    [
        ("NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000)",
         {"nvlink_subcode": "SAW_MVB", "nvlink_fatal": False, "nvlink_injected": False, "nvlink_link": 0,
          "nvlink_intr_info": "0x00000001", "nvlink_error_status": "0x00000008"}),
        ("NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
         {"nvlink_subcode": "NETIR", "nvlink_fatal": True, "nvlink_link": -1}),
        ("NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)",
         {"nvlink_subcode": "RLW_RXPIPE", "nvlink_fatal": False, "nvlink_link": 13, "nvlink_error_status": "0x00000008"}),
        ("NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT Link Fatal XC1 i1 Link 3 (0x00000000 0x00000000)",
         {"nvlink_subcode": "NETIR_LINK_EVT", "nvlink_fatal": True, "nvlink_link_fatal": True,
          "nvlink_cross_contain": True, "nvlink_injected": True}),
        ("NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
         {"recovery_action": "Node Reboot Required"}),
        ("NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x3 (Drain and Reset)",
         {"recovery_action": "Drain and Reset"}),
        ("NVRM: Xid (PCI:0000:3b:00): 154, Reboot the system to recover",
         {"recovery_action": "Reboot the system"}),
        ("[Fri Aug  9 13:32:56 2024] NVRM: Xid (PCI:0000:00:08): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). RST: No, D-RST: No",
         {"reset_required": False, "drain_reset_required": False}),
        ("NVRM: Xid (PCI:0000:00:08): 94, pid=1, name=x, Contained: SM (0x1). RST: Yes, D-RST: No",
         {"reset_required": True}),
    ],
)
def test_decoded_details(line, expected):
    d = parse_xid(line).decoded_dict()
    for k, v in expected.items():
        assert d[k] == v, k


def _kl(text, ts=100.0):
    return KernelLine(ts, text)


def test_multiline_message_is_grouped_with_its_xid():
    lines = [
        _kl("[Mon Nov 30 02:14:07 2026] NVRM: GPU at PCI:0000:5d:00: GPU-4f1c"),
        _kl("[Mon Nov 30 02:14:07 2026] NVRM: Xid (PCI:0000:5d:00): 154, GPU recovery action changed from 0x0 (None) to"),
        _kl("[Mon Nov 30 02:14:07 2026] NVRM: 0x2 (Node Reboot Required)"),
        _kl("[Mon Nov 30 02:14:07 2026] NVRM: Xid (PCI:0000:5d:00): 79, pid=2841, name=python, GPU has fallen off the bus."),
        _kl("[Mon Nov 30 02:14:07 2026] NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus."),
        _kl("[Mon Nov 30 03:00:00 2026] NVRM: GPU 0000:5d:00.0: much later, unrelated", ts=3000.0),
    ]
    got = list(group(lines))
    assert [g.parsed.xid for g in got] == [154, 79]
    # The 154's action was on the continuation line and still decides.
    assert got[0].parsed.decoded_dict()["recovery_action"] == "Node Reboot Required"
    assert got[1].continuation == ("GPU 0000:5d:00.0: GPU has fallen off the bus.",)
    assert "much later" not in got[1].full_text


THREE_LINE = ["NVRM: The NVIDIA GPU 0000:3b:00.0", "NVRM: (PCI ID: 10de:2330) installed in this system has",
              "NVRM: fallen off the bus and is not responding to commands."]


@pytest.mark.parametrize("first, expected", [
    # Another GPU's XID (and its own continuation) in the same second: the
    # opening line starts a message of its own, with its own bus id.
    (["NVRM: Xid (PCI:0000:5d:00): 154, GPU recovery action changed from 0x0 (None) to",
      "NVRM: 0x2 (Node Reboot Required)"], [(154, "00000000:5D:00.0"), (79, "00000000:3B:00.0")]),
    (["NVRM: Xid (PCI:0000:3b:00): 48, pid=7, DBE"], [(48, "00000000:3B:00.0"), (79, "00000000:3B:00.0")]),
    # XID 79 of the same GPU told again in the three-line form: one event.
    (["NVRM: Xid (PCI:0000:3b:00): 79, pid=7, GPU has fallen off the bus."], [(79, "00000000:3B:00.0")]),
    # ...of another GPU: two.
    (["NVRM: Xid (PCI:0000:5d:00): 79, pid=7, GPU has fallen off the bus."],
     [(79, "00000000:5D:00.0"), (79, "00000000:3B:00.0")]),
])
def test_three_line_opening_after_an_xid_in_the_same_second(first, expected):
    got = list(group([_kl(t) for t in first + THREE_LINE]))
    assert [(g.parsed.xid, g.parsed.pci_bus_id) for g in got] == expected
    assert "PCI ID: 10de:2330" in got[-1].full_text


def test_grouping_is_bounded():
    lines = [_kl("NVRM: Xid (PCI:0000:5d:00): 79, x")] + [_kl(f"NVRM: more {i}") for i in range(50)]
    got = list(group(lines))
    assert len(got) == 1 and len(got[0].continuation) <= 4


@pytest.mark.parametrize(
    "text, expected",
    [
        ("plain", "plain"),
        ("tab\there", "tab here"),
        ("bell\x07 esc\x1b[31m", "bell esc"),  # controls and whole escapes go (gcm_checks.text)
        ("caf\u00e9", "caf?"),
        ("x" * 1000, "x" * 509 + "..."),
    ],
)
def test_sanitise(text, expected):
    assert sanitise(text) == expected
