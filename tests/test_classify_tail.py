"""read_tail: bounded, symlink-refusing, fd-friendly."""

from __future__ import annotations

import os

import pytest

from gcm_checks.classify import read_tail
from gcm_checks.classify.engine import SCAN_CHARS
from gcm_checks.classify import ClassifyInput, LogText, classify


def test_huge_sparse_file_reads_only_the_window(tmp_path) -> None:
    p = tmp_path / "huge.out"
    tail = b"\nslurmstepd: error: *** JOB 5 ON n1 CANCELLED AT 2024-01-01T00:00:00 DUE TO TIME LIMIT ***\n"
    with open(p, "wb") as f:
        f.truncate(50 * 1024**3)  # 50 GB, sparse: costs nothing on disk
        f.seek(0, os.SEEK_END)
        f.write(tail)
    text, truncated, size = read_tail(str(p), 64 * 1024)
    assert truncated is True
    assert size == 50 * 1024**3 + len(tail)
    assert len(text.encode()) <= 64 * 1024
    assert text.endswith("DUE TO TIME LIMIT ***\n")
    r = classify(ClassifyInput(logs=[LogText(str(p), text)]))
    assert r.category == "timeout_walltime"


def test_small_file_is_read_whole(tmp_path) -> None:
    p = tmp_path / "small.out"
    p.write_bytes(b"line one\nline two\n")
    assert read_tail(str(p), 1 << 20) == ("line one\nline two\n", False, 18)


def test_partial_first_line_is_dropped(tmp_path) -> None:
    p = tmp_path / "x.out"
    p.write_bytes(b"A" * 100 + b"\nsecond\nthird\n")
    text, truncated, _ = read_tail(str(p), 20)
    assert truncated and text == "second\nthird\n"


def test_accepts_an_open_fd_and_leaves_its_offset(tmp_path) -> None:
    p = tmp_path / "fd.out"
    p.write_bytes(b"a\nb\nc\n")
    fd = os.open(p, os.O_RDONLY)
    try:
        os.lseek(fd, 2, os.SEEK_SET)
        assert read_tail(fd, 4) == ("c\n", True, 6)
        assert os.lseek(fd, 0, os.SEEK_CUR) == 2
    finally:
        os.close(fd)


def test_refuses_a_symlink(tmp_path) -> None:
    target = tmp_path / "secret"
    target.write_text("root only\n")
    link = tmp_path / "slurm-1.out"
    link.symlink_to(target)
    with pytest.raises(OSError):
        read_tail(str(link), 1024)


def test_refuses_a_fifo(tmp_path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError):
        read_tail(str(fifo), 1024)  # must not block waiting for a writer


def test_invalid_utf8_is_replaced(tmp_path) -> None:
    p = tmp_path / "bin.out"
    p.write_bytes(b"\xff\xfe garbage\nKeyError: 'x'\n")
    text, _, _ = read_tail(str(p), 1024)
    assert "KeyError" in text and "\ufffd" in text


def test_max_bytes_must_be_positive(tmp_path) -> None:
    p = tmp_path / "e.out"
    p.write_bytes(b"")
    with pytest.raises(ValueError):
        read_tail(str(p), 0)


def test_classify_scans_only_the_end_of_a_huge_text() -> None:
    # An error far before the scan window is not seen; the end of the text is.
    head = "KeyError: 'early'\n"
    filler = ("step ok\n" * (SCAN_CHARS // 8 + 10))
    r = classify(ClassifyInput(logs=[LogText("stdout", head + filler + "torch.OutOfMemoryError: CUDA out of memory.\n")]))
    assert r.category == "gpu_oom"
    assert r.evidence[0].line_no == 1 + filler.count("\n") + 1


def test_one_line_longer_than_the_window_keeps_its_end(tmp_path) -> None:
    p = tmp_path / "bar.out"
    p.write_bytes(b"\r progress" * 10000 + b" Fatal Python error: Segmentation fault\n")
    text, truncated, _ = read_tail(str(p), 4096)
    assert truncated and text.endswith("Segmentation fault\n") and len(text) <= 4096
