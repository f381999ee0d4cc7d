"""Seeking to the window start in a time-sorted kernel log: the events found
are exactly those of a full read, the prefix is really skipped, and files
that are not time-sorted (monotonic stamps, reordered ends) are read whole."""

from __future__ import annotations

import random
from datetime import timezone

import pytest

from gcm_checks.gather import kernel_log, logseek
from gcm_checks.testing import kernel_xid_line

T0 = 1_796_000_000.0
DAY = 86400.0


def write_log(path, fmt="iso", days=30, lines_per_hour=40, xid_every=97, seed=1, boot=T0 - 10):
    """A month of kernel chatter with XIDs sprinkled in; returns the XID times."""
    rng = random.Random(seed)
    xids = []
    n = 0
    with open(path, "w") as f:
        t = T0
        end = T0 + days * DAY
        while t < end:
            n += 1
            if n % xid_every == 0:
                f.write(kernel_xid_line(79, when=t, fmt=fmt, boot_time=boot) + "\n")
                xids.append(t)
            else:
                # Ordinary lines carry the same kind of stamp as the XID lines.
                stamp = kernel_xid_line(0, when=t, fmt=fmt, boot_time=boot).split("NVRM")[0]
                f.write(f"{stamp}mlx5_core 0000:0c:00.0: port {n % 8} link up, some padding text here\n")
            t += rng.uniform(0.5, 2 * 3600.0 / lines_per_hour)
    import os

    os.utime(path, (t, t))  # written up to its last line (syslog stamps have no year)
    return xids


def events(path, since, until, fmt_boot=T0 - 10):
    cov = kernel_log.Coverage()
    got = [ln.ts for ln in kernel_log.read_file(str(path), since=since, until=until, tz=timezone.utc, boot=fmt_boot,
                                                coverage=cov)]
    return got, cov


@pytest.mark.parametrize("fmt", ["iso", "dmesg_t", "syslog"])
def test_a_one_day_window_reads_a_fraction_and_finds_the_same_events(tmp_path, fmt):
    log = tmp_path / "kern.log"
    xids = write_log(log, fmt)
    size = log.stat().st_size
    since, until = T0 + 20 * DAY + 1234.5, T0 + 21 * DAY + 99.0
    got, cov = events(log, since, until)
    # The reference: every XID whose stamp (second resolution) reaches the window.
    res = 1e-6 if fmt == "iso" else 1.0
    want = [t for t in xids if kernel_log.in_window(t if fmt == "iso" else float(int(t)), res, since, until)]
    assert len(got) == len(want) > 0
    assert all(abs(a - b) < 1.0 for a, b in zip(got, want))
    # Most of the file before the window was never read.
    assert cov.skipped_bytes > 0.6 * size


def test_random_windows_match_a_full_read(tmp_path):
    log = tmp_path / "kern.log"
    write_log(log, "iso", days=10, seed=7)
    rng = random.Random(3)
    for _ in range(25):
        a = T0 + rng.uniform(-DAY, 11 * DAY)
        b = a + rng.uniform(0, 3 * DAY)
        seeked, _ = events(log, a, b)
        full = [ln.ts for ln in kernel_log.read_file(str(log), tz=timezone.utc)
                if kernel_log.in_window(ln.ts, ln.resolution, a, b) and "Xid" in ln.text]
        assert seeked == full, (a, b)


def test_monotonic_stamps_are_never_seeked(tmp_path):
    # [ 123.456] stamps restart at every boot: a file of them is not time-sorted.
    log = tmp_path / "dmesg.log"
    write_log(log, "dmesg", days=10)
    _, cov = events(log, T0 + 8 * DAY, T0 + 9 * DAY)
    assert cov.skipped_bytes == 0


def test_unsorted_ends_and_small_files_are_read_whole(tmp_path):
    log = tmp_path / "kern.log"
    write_log(log, "iso", days=10)
    lines = log.read_text().splitlines(keepends=True)
    half = len(lines) // 2
    log.write_text("".join(lines[half:] + lines[:half]))  # newest half first: last stamp < first stamp
    _, cov = events(log, T0 + 8 * DAY, T0 + 9 * DAY)
    assert cov.skipped_bytes == 0
    small = tmp_path / "small.log"
    write_log(small, "iso", days=1)
    _, cov = events(small, T0 + 0.9 * DAY, T0 + DAY)
    assert cov.skipped_bytes == 0


def test_window_start_lands_on_a_line_start_before_the_target(tmp_path):
    log = tmp_path / "kern.log"
    write_log(log, "iso", days=10)
    wall = kernel_log.StampContext(boot_time=None, tz=timezone.utc)
    since = T0 + 6 * DAY

    def stamper(line):
        return kernel_log.stamp(line, wall)[0]

    with open(log, "rb") as f:
        off = logseek.window_start(f, since, stamper)
        assert off > 0
        f.seek(off - 1)
        assert f.read(1) == b"\n"
        first = stamper(f.readline().decode())
    assert first < since - logseek.DEFAULT_MARGIN_S
    # ... and not far before it: within the bisection's resolution of the exact offset.
    exact = 0
    with open(log, "rb") as f:
        for raw in f:
            if stamper(raw.decode()) >= since - logseek.DEFAULT_MARGIN_S:
                break
            exact += len(raw)
    assert 0 < exact - off <= logseek.MIN_SPAN


def test_a_window_in_the_middle_skips_both_ends(tmp_path):
    log = tmp_path / "kern.log"
    xids = write_log(log, "iso", days=30)
    size = log.stat().st_size
    since, until = T0 + 12 * DAY, T0 + 13 * DAY
    got, cov = events(log, since, until)
    want = [t for t in xids if since <= t <= until]
    assert len(got) == len(want) > 0 and all(abs(a - b) < 1e-3 for a, b in zip(got, want))
    # Read: about one day of thirty, plus the margins and the bisection's slack.
    assert cov.skipped_bytes > 0.85 * size


def test_until_alone_bounds_the_read(tmp_path):
    log = tmp_path / "kern.log"
    xids = write_log(log, "iso", days=10)
    got, cov = events(log, None, T0 + 2 * DAY)
    assert len(got) == len([t for t in xids if t <= T0 + 2 * DAY])
    assert cov.skipped_bytes > 0.6 * log.stat().st_size


def test_bounded_reader_stops_at_its_limit(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"0123456789")
    with open(p, "rb", buffering=0) as f:
        b = logseek.Bounded(f, 4)
        buf = bytearray(8)
        assert b.readinto(buf) == 4 and bytes(buf[:4]) == b"0123"
        assert b.readinto(buf) == 0 and b.read() == b""
