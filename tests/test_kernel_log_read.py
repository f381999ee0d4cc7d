"""Kernel log readers: stamp formats, window edges, streaming, sources."""

from __future__ import annotations

import gzip
import os
import stat
import sys
import textwrap
import time
import uuid
from datetime import datetime, timezone

import pytest

from gcm_checks.gather import kernel_log as kl
from gcm_checks.testing import kernel_xid_line

UTC = timezone.utc


def epoch(*args) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


CTX = kl.StampContext(boot_time=1_000_000.0, tz=UTC, ref=epoch(2026, 11, 30, 12, 0, 0))


@pytest.mark.parametrize(
    "line, expected, resolution",
    [
        # dmesg -T
        ("[Fri Apr  5 21:29:39 2024] NVRM: Xid (PCI:0000:a1:00): 79, GPU has fallen off the bus.",
         epoch(2024, 4, 5, 21, 29, 39), 1.0),
        ("[Wed Jun 24 15:44:20 2026] NVRM: Xid (PCI:0000:70:00): 13, Graphics Exception",
         epoch(2026, 6, 24, 15, 44, 20), 1.0),
        # raw dmesg: seconds since boot
        ("[6781741.548779] NVRM: Xid (PCI:0000:91:00): 79, GPU has fallen off the bus.",
         1_000_000.0 + 6781741.548779, 1e-6),
        ("[   24.000001] NVRM: Xid (PCI:0000:01:00): 32, Channel ID 00000000",
         1_000_000.0 + 24.000001, 1e-6),
        # syslog (year from the reference; wall clock wins over the [mono] stamp after it)
        ("Dec  2 10:43:35 worker4 kernel: [240314.528856] NVRM: Xid (PCI:0000:07:00): 48, DBE",
         epoch(2025, 12, 2, 10, 43, 35), 1.0),
        ("Nov 30 01:02:03 gpu001 kernel: NVRM: Xid (PCI:0000:3b:00): 79, x",
         epoch(2026, 11, 30, 1, 2, 3), 1.0),
        # a relay's prefix before the syslog stamp
        ("Xid errors on instance: ip-1, Error: May 19 07:08:57 ip-1 kernel: [680111.646286] NVRM: Xid (PCI:0000:10:1c): 63, x",
         epoch(2026, 5, 19, 7, 8, 57), 1.0),
        # ISO: dmesg --decode --time-format iso (comma), journalctl short-iso-precise (+0000), Z, no fraction
        ("kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, x",
         epoch(2025, 1, 21, 4, 41, 44) + 0.283302, 1e-6),
        ("2026-11-30T01:02:03.500000+0000 gpu001 kernel: NVRM: Xid (PCI:0000:3b:00): 79, x",
         epoch(2026, 11, 30, 1, 2, 3) + 0.5, 1e-6),
        ("2026-11-30T03:02:03.250000+02:00 gpu001 kernel: NVRM: Xid (PCI:0000:3b:00): 79, x",
         epoch(2026, 11, 30, 1, 2, 3) + 0.25, 1e-6),
        ("2026-11-30T01:02:03Z gpu001 kernel: NVRM: Xid (PCI:0000:3b:00): 79, x",
         epoch(2026, 11, 30, 1, 2, 3), 1.0),
        # no stamp at all
        ("NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus.", None, 1.0),
        ("kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001", None, 1.0),
    ],
)
def test_stamp_formats(line, expected, resolution):
    ts, res = kl.stamp(line, CTX)
    if expected is None:
        assert ts is None
    else:
        assert ts == pytest.approx(expected, abs=1e-6)
        assert res == resolution


def test_date_inside_message_is_not_the_stamp():
    line = "NVRM: Xid (PCI:0000:06:00): 13, file 2020-01-01T00:00:00Z.log"
    assert kl.stamp(line, CTX) == (None, 1.0)


def test_syslog_december_line_read_in_january_is_last_year():
    ctx = kl.StampContext(tz=UTC, ref=epoch(2027, 1, 2, 0, 0, 0))
    ts, _ = kl.stamp("Dec 31 23:59:59 h kernel: NVRM: Xid (PCI:0000:3b:00): 79, x", ctx)
    assert ts == epoch(2026, 12, 31, 23, 59, 59)


def test_raw_dmesg_without_boot_time_is_undated():
    ts, _ = kl.stamp("[  12.5] NVRM: Xid (PCI:0000:3b:00): 79, x", kl.StampContext(boot_time=None))
    assert ts is None


START = epoch(2026, 11, 30, 10, 0, 0)
END = epoch(2026, 11, 30, 11, 0, 0)


@pytest.mark.parametrize(
    "ts, resolution, since, until, inside",
    [
        (START - 1, 1.0, START, END, False),  # one second before the job: does not count
        (START - 1, 1e-6, START, END, False),
        (START - 0.000002, 1e-6, START, END, False),
        (START, 1.0, START, END, True),  # the job's first second counts
        (START, 1.0, START + 0.4, END, True),  # second-resolution stamp may be .4 .. .999
        (START - 1, 1.0, START + 0.4, END, False),
        (START, 1e-6, START + 0.4, END, False),  # a precise stamp is compared precisely
        (END, 1e-6, START, END, True),  # inclusive end
        (END + 1, 1.0, START, END, False),
        (END + 0.001, 1e-6, START, END, False),
        (None, 1.0, START, END, False),  # undated: cannot be placed, dropped
        (None, 1.0, None, None, True),  # no window: everything
        (START - 1e6, 1.0, None, END, True),
        (END + 1e6, 1.0, START, None, True),
    ],
)
def test_window_edges(ts, resolution, since, until, inside):
    assert kl.in_window(ts, resolution, since, until) is inside


@pytest.mark.parametrize("fmt", ["iso", "dmesg_t", "syslog", "dmesg"])
def test_read_file_window_per_format(tmp_path, fmt):
    boot = START - 5000.0
    lines = [
        "[ 0.000000] Linux version 6.1",
        kernel_xid_line(48, "0000:07:00", "DBE", when=START - 1, fmt=fmt, boot_time=boot),  # before the job
        kernel_xid_line(79, "0000:3b:00", when=START, fmt=fmt, boot_time=boot),
        "[ 12.000000] mlx5_core 0000:0c:00.0: link up",
        kernel_xid_line(13, "0000:5d:00", "Graphics Exception", when=START + 600, fmt=fmt, boot_time=boot),
        kernel_xid_line(94, "0000:5d:00", "Contained", when=END + 1, fmt=fmt, boot_time=boot),  # after
    ]
    p = tmp_path / "kern.log"
    p.write_text("\n".join(lines) + "\n")
    got = list(kl.read_file(str(p), since=START, until=END, boot=boot, tz=UTC))
    assert [g.text.split("): ")[1].split(",")[0] for g in got] == ["79", "13"]
    assert got[0].ts == pytest.approx(START, abs=1e-6)


def test_read_file_drops_undated_lines_in_a_window_and_counts_them(tmp_path):
    p = tmp_path / "kern.log"
    p.write_text(kernel_xid_line(79, fmt="bare") + "\n" + kernel_xid_line(79, when=START + 1) + "\n")
    cov = kl.Coverage()
    got = list(kl.read_file(str(p), since=START, until=END, tz=UTC, coverage=cov))
    assert len(got) == 1 and cov.undated == 1
    assert len(list(kl.read_file(str(p), tz=UTC))) == 2  # no window: both


def _body() -> bytes:
    out = []
    for i in range(300):
        k = i % 10
        if k == 0:
            out.append(b"[%d.0] NVRM: Xid (PCI:0000:3b:00): 79, n%d" % (i, i))
        elif k == 1:
            out.append(b"[%d.0] NVRM: continuation of %d" % (i, i - 1))
        elif k == 6:
            out.append(b"[%d.0] NVRM: unrelated, 6 lines after" % i)
        else:
            out.append(b"[%d.0] eth0: noise %d" % (i, i))
    return b"\n".join(out) + b"\nNVRM: Xid (PCI:0000:3b:00): 13, last line without newline"


@pytest.mark.parametrize("chunk", [1, 7, 64, 4096, 1 << 20])
def test_streaming_is_exact_across_chunk_boundaries(chunk):
    import io

    body = _body()
    got = list(kl.iter_lines_file(io.BytesIO(body), chunk_size=chunk))
    assert got == [ln for ln in body.decode().split("\n") if "NVRM: Xid" in ln]
    # With follow, the NVRM lines right after an XID come too (not the far ones).
    got = list(kl.iter_lines_file(io.BytesIO(body), chunk_size=chunk, follow=4))
    want = [ln for ln in body.decode().split("\n") if "NVRM: Xid" in ln or "continuation" in ln]
    assert got == want


def _three_marks_body() -> bytes:
    """XIDs (with continuations), SXids and both fallen-off-the-bus forms,
    interleaved with noise that holds the search's anchor byte ("EXT4", a
    run of X's long enough to make the reader fall back to plain finds)."""
    lines = [b"NVRM: The NVIDIA GPU 0000:18:00.0", b"NVRM: (PCI ID: 10de:2901) installed in this system has",
             b"NVRM: fallen off the bus and is not responding to commands."]
    for i in range(40):
        k = i % 8
        if k == 0:
            lines += [b"NVRM: Xid (PCI:0000:5d:00): 154, GPU recovery action changed from 0x0 (None) to",
                      b"NVRM: 0x2 (Node Reboot Required)"]
        elif k == 1:
            lines.append(b"nvidia-nvswitch%d: SXid (PCI:0000:05:00.0): 20034, Fatal, Link %d LTSSM Fault Up" % (i % 3, i))
        elif k == 2:
            lines.append(b"NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.")
        elif k == 3:
            lines += [b"NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
                      b"NVRM: GPU 0000:91:00.0: GPU has fallen off the bus."]
        elif k == 4:
            lines.append(b"NVRM: Xid (PCI:0000:3b:00): 48, pid=%d, DBE" % i)
        elif k == 5:
            lines.append(b"EXT4-fs (nvme0n1p2): mounted filesystem XFS X")
        elif k == 6:
            lines.append(b"X" * 5000)
        else:
            lines.append(b"nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV")
    return b"".join(b"[%12.6f] %s\n" % (100 + i / 1000, ln) for i, ln in enumerate(lines))


# Down to reads shorter than one line: the three-line fallen-off form that
# opens the file is cut by reads everywhere (the look-back reaches into the
# previous reads, kernel_log_lines._Carry).
THREE_MARK_CHUNKS = [1, 7] + list(range(23, 1400, 37)) + [1 << 20]


@pytest.mark.parametrize("chunk", THREE_MARK_CHUNKS)
def test_three_marks_across_chunk_edges_match_the_line_by_line_reading(tmp_path, monkeypatch, chunk):
    import functools

    from gcm_checks.xid.scan import SxidEvent, XidEvent, scan_all

    body = _three_marks_body()
    p = tmp_path / "kern.log"
    p.write_bytes(body)
    boot = 1_796_000_000.0
    want = list(scan_all(kl.read_text(body.decode(), boot=boot, tz=UTC), tz=UTC))
    monkeypatch.setattr(kl, "iter_lines_file", functools.partial(kl.iter_lines_file, chunk_size=chunk))
    got = list(scan_all(kl.read_file(str(p), boot=boot, tz=UTC), tz=UTC))
    assert got == want
    xids = [e.xid for e in want if isinstance(e, XidEvent)]
    assert xids[:3] == [79, 154, 79] and xids.count(48) == 5 and len([e for e in want if isinstance(e, SxidEvent)]) == 10
    assert "PCI ID: 10de:2901" in want[0].line  # the three-line form, read as one event


def test_three_mark_chunk_sizes_cut_through_every_mark():
    """The sizes above do cut marks: each kind straddles some read boundary."""
    body = _three_marks_body()
    for mark in (b"NVRM: Xid", b": SXid (", b"fallen off the bus"):
        starts = [i for i in range(len(body)) if body.startswith(mark, i)]
        assert any(s // c != (s + len(mark) - 1) // c for c in THREE_MARK_CHUNKS for s in starts), mark


FALLEN_OFF_3 = (b"[Mon Nov 30 02:14:07 2026] NVRM: The NVIDIA GPU 0000:3b:00.0\n"
                b"[Mon Nov 30 02:14:07 2026] NVRM: (PCI ID: 10de:2330) installed in this system has\n"
                b"[Mon Nov 30 02:14:07 2026] NVRM: fallen off the bus and is not responding to commands.\n")
XID_154 = (b"[Mon Nov 30 02:14:06 2026] NVRM: Xid (PCI:0000:5d:00): 154, GPU recovery action changed from 0x0 (None) to\n"
           b"[Mon Nov 30 02:14:06 2026] NVRM: 0x2 (Node Reboot Required)\n")
_READ = 1 << 20  # the file reader's read size (kernel_log_lines._CHUNK)


def _noise(size: int) -> bytes:
    """Exactly ``size`` bytes of whole, stamped, non-NVRM lines."""
    line = b"[Mon Nov 30 02:14:05 2026] eth0: noise %07d padding padding padding padding\n"
    n = len(line % 0)
    out = b"".join(line % i for i in range(size // n - 1))
    tail = size - len(out)
    return out + b"[Mon Nov 30 02:14:05 2026] eth0: " + b"p" * (tail - 34) + b"\n"


def _line_starts(msg: bytes) -> list:
    return [0] + [i + 1 for i, b in enumerate(msg) if b == 0x0A]


# Where the first 1 MiB read ends, relative to the message: at each of its
# line starts (its first byte, the second and third lines, the byte after it)
# and a few bytes either side of each.
FALLEN_CUTS = [(at, d) for at in _line_starts(FALLEN_OFF_3) for d in (-3, -2, -1, 0, 1, 2, 3)]


@pytest.mark.parametrize("at,delta", FALLEN_CUTS)
@pytest.mark.parametrize("before", [b"", XID_154], ids=["alone", "after-an-xid"])
def test_three_line_fallen_off_the_bus_split_by_a_read_keeps_its_bus_id(tmp_path, before, at, delta):
    """The 1 MiB read boundary lands inside (or next to) the three-line
    message: the opening lines are in the previous read. Same lines as one
    big read, and the event keeps the GPU's bus id."""
    import io

    from gcm_checks.xid.scan import scan

    msg = before + FALLEN_OFF_3
    cut = len(before) + at + delta  # the message byte the second read starts at
    body = _noise(_READ - cut) + msg + _noise(4000)
    assert body[_READ - cut:_READ - cut + len(msg)] == msg and len(body) > _READ
    whole = list(kl.iter_lines_file(io.BytesIO(body), chunk_size=len(body) + 1, follow=kl.FOLLOW_LINES))
    got = list(kl.iter_lines_file(io.BytesIO(body), follow=kl.FOLLOW_LINES))
    assert got == whole
    assert whole[-3:] == [ln.decode() for ln in FALLEN_OFF_3.splitlines()]
    p = tmp_path / "kern.log"
    p.write_bytes(body)
    events = list(scan(kl.read_file(str(p), tz=UTC)))
    assert [e.xid for e in events] == ([154, 79] if before else [79])
    assert events[-1].pci_bus_id == "00000000:3B:00.0", events[-1]
    assert "PCI ID: 10de:2330" in events[-1].line


_FUZZ_LINES = [b"NVRM: The NVIDIA GPU 0000:3b:00.0", b"NVRM: (PCI ID: 10de:2330) installed in this system has",
               b"NVRM: fallen off the bus and is not responding to commands.", b"NVRM: Xid (PCI:0000:5d:00): 154, a",
               b"NVRM: 0x2 (Node Reboot Required)", b"eth0: noise", b"EXT4 X XFS", b"",
               b"nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Fatal, Link 3",
               b"NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.", b"X" * 300]


def test_any_read_size_yields_the_lines_of_one_read():
    """Seeded fuzz: random mixes of every mark, both fallen-off forms, XID
    continuations and anchor-byte noise; reads of 1, 2, 3 and a random few
    bytes give the same lines as one read of the whole body."""
    import io
    import random

    rng = random.Random(18)
    for _ in range(400):
        body = b"\n".join(rng.choice(_FUZZ_LINES) for _ in range(rng.randint(0, 30)))
        body += b"\n" if rng.random() < 0.7 else b""
        follow = rng.choice([0, 1, kl.FOLLOW_LINES])
        whole = list(kl.iter_lines_file(io.BytesIO(body), follow=follow, chunk_size=len(body) + 1))
        for chunk in (1, 2, 3, rng.randint(4, 200)):
            assert list(kl.iter_lines_file(io.BytesIO(body), follow=follow, chunk_size=chunk)) == whole, (chunk, body)


def test_follow_stops_at_the_next_xid():
    import io

    body = b"NVRM: Xid (PCI:0000:3b:00): 154, a\nNVRM: Xid (PCI:0000:3b:00): 79, b\nNVRM: c\n"
    assert list(kl.iter_lines_file(io.BytesIO(body), follow=4)) == [
        "NVRM: Xid (PCI:0000:3b:00): 154, a", "NVRM: Xid (PCI:0000:3b:00): 79, b", "NVRM: c"]


def test_multiline_xid_in_a_file_keeps_its_continuation(tmp_path):
    from gcm_checks.xid.scan import scan

    p = tmp_path / "kern.log"
    p.write_text(
        "[Mon Nov 30 02:14:07 2026] NVRM: Xid (PCI:0000:5d:00): 154, GPU recovery action changed from 0x0 (None) to\n"
        "[Mon Nov 30 02:14:07 2026] NVRM: 0x2 (Node Reboot Required)\n"
    )
    (ev,) = list(scan(kl.read_file(str(p), tz=UTC)))
    assert (ev.xid, ev.action, ev.severity) == (154, "reboot", "fail")


def test_overlong_junk_line_is_skipped_not_buffered():
    import io

    from gcm_checks.gather.kernel_log_lines import _MAX_LINE

    junk = b"x" * (_MAX_LINE + 10)
    body = junk + b"\nNVRM: Xid (PCI:0000:3b:00): 79, ok\n"
    assert list(kl.iter_lines_file(io.BytesIO(body), chunk_size=1 << 16)) == ["NVRM: Xid (PCI:0000:3b:00): 79, ok"]


def test_gzip_file(tmp_path):
    p = tmp_path / "kern.log.1.gz"
    with gzip.open(p, "wt") as f:
        f.write(kernel_xid_line(79, when=START) + "\n")
    assert len(list(kl.read_file(str(p), since=START, until=END, tz=UTC))) == 1


def test_missing_file_is_unavailable(tmp_path):
    with pytest.raises(kl.KernelLogUnavailable):
        list(kl.read_file(str(tmp_path / "nope.log")))


@pytest.mark.skipif(os.geteuid() != 0, reason="the symlink rule is about root")
def test_user_symlink_is_refused_as_root(tmp_path):
    target = tmp_path / "real.log"
    target.write_text(kernel_xid_line(79, when=START) + "\n")
    link = tmp_path / "link.log"
    link.symlink_to(target)
    os.lchown(link, 65534, 65534)  # owned by a user, not root
    with pytest.raises(kl.KernelLogUnavailable, match="refused"):
        list(kl.read_file(str(link)))


@pytest.mark.parametrize(
    "record, mono, text",
    [
        (b"6,1234,5000000,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n",
         5.0, "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."),
        (b"4,99,123456,c,caller=T1;NVRM: Xid (PCI:0000:3b:00): 13, x\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n",
         0.123456, "NVRM: Xid (PCI:0000:3b:00): 13, x"),
    ],
)
def test_parse_kmsg_record(record, mono, text):
    line = kl.parse_kmsg_record(record, boot=1000.0)
    assert line.ts == pytest.approx(1000.0 + mono)
    assert line.text.endswith(text)
    assert "SUBSYSTEM" not in line.text


@pytest.mark.parametrize("record", [b"garbage", b"6,1;no usec", b"6,1,notanumber,-;x\n"])
def test_parse_kmsg_record_rejects_garbage(record):
    assert kl.parse_kmsg_record(record, boot=0.0) is None


@pytest.mark.skipif(not os.access("/dev/kmsg", os.R_OK), reason="/dev/kmsg not readable here")
def test_real_kmsg_reads_to_the_end_without_blocking():
    cov = kl.Coverage()
    t0 = time.monotonic()
    lines = list(kl.read_kmsg(contains=None, coverage=cov))
    assert lines, "a booted kernel has messages"
    assert cov.earliest is not None and cov.earliest <= time.time()
    assert time.monotonic() - t0 < 30  # generous: it must return at all (non-blocking)


@pytest.mark.skipif(not os.access("/dev/kmsg", os.W_OK), reason="needs root to write /dev/kmsg")
def test_real_kmsg_sees_a_fresh_message_in_a_window():
    # A harmless marker, not an XID: other suites on this machine read kmsg too.
    marker = f"gcm-kmsg-test-{uuid.uuid4().hex}"
    before = time.time() - 2
    with open("/dev/kmsg", "w") as f:
        f.write(f"gcm-checks test {marker}\n")
    got = list(kl.read_kmsg(contains=marker.encode(), since=before, until=time.time() + 2))
    assert len(got) == 1 and marker in got[0].text
    assert abs(got[0].ts - time.time()) < 60  # monotonic -> wall conversion is sane
    assert list(kl.read_kmsg(contains=marker.encode(), until=before)) == []


def _fake_journalctl(tmp_path, body: str) -> str:
    p = tmp_path / "journalctl"
    p.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


def test_journal_reads_window_and_passes_since_until(tmp_path):
    argv_file = tmp_path / "argv"
    exe = _fake_journalctl(tmp_path, f"""
        import sys
        open({str(argv_file)!r}, "w").write(" ".join(sys.argv[1:]))
        print("2026-11-30T09:59:59.000000+0000 n1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, before")
        print("2026-11-30T10:00:00.100000+0000 n1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, inside")
        print("2026-11-30T10:00:01.000000+0000 n1 kernel: eth0: link up")
    """)
    got = list(kl.read_journal(START, END, timeout=10, journalctl=exe))
    assert [g.text.rsplit(", ", 1)[1] for g in got] == ["inside"]
    args = argv_file.read_text()
    assert "_TRANSPORT=kernel" in args and f"--since @{int(START)}" in args and "--until @" in args


@pytest.mark.parametrize(
    "body, match",
    [
        ("import sys; sys.stderr.write('No journal files were found.\\n'); print('-- No entries --')", "no journal files"),
        ("import sys; sys.stderr.write('Failed to open\\n'); sys.exit(1)", "exit 1"),
        ("import time; time.sleep(30)", "no answer"),
    ],
)
def test_journal_trouble_is_unavailable(tmp_path, body, match):
    exe = _fake_journalctl(tmp_path, body)
    with pytest.raises(kl.KernelLogUnavailable, match=match):
        list(kl.read_journal(START, END, timeout=1.0, journalctl=exe))


def test_read_window_rejects_unknown_source():
    with pytest.raises(ValueError):
        kl.read_window("syslog")


def test_read_window_file_source_needs_a_path():
    with pytest.raises(kl.KernelLogUnavailable):
        list(kl.read_window("file"))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-11-30T01:02:03+00:00", epoch(2026, 11, 30, 1, 2, 3)),
        ("2026-11-30T01:02:03Z", epoch(2026, 11, 30, 1, 2, 3)),
        ("2026-11-30T03:02:03.5+0200", epoch(2026, 11, 30, 1, 2, 3) + 0.5),
        ("2026-11-30 01:02", epoch(2026, 11, 30, 1, 2, 0)),
        ("2026-11-30", epoch(2026, 11, 30)),
        ("@1700000000.25", 1700000000.25),
    ],
)
def test_parse_iso(text, expected):
    assert kl.parse_iso(text, tz=UTC) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["yesterday", "2026-13-45T99", "30/11/2026"])
def test_parse_iso_rejects(text):
    with pytest.raises(ValueError):
        kl.parse_iso(text)
