"""gcm_checks.jsonfile: the one atomic writer and the one bounded JSON reader."""

from __future__ import annotations

import os
import stat
import threading

import pytest

from gcm_checks import jsonfile


def test_write_replaces_a_planted_symlink_instead_of_following_it(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    link = tmp_path / "state.json"
    link.symlink_to(victim)
    jsonfile.write_json(link, {"a": 1})
    assert victim.read_text() == "keep"
    assert not link.is_symlink()
    assert jsonfile.read_json(link) == {"a": 1}


@pytest.mark.parametrize("durable", [True, False])
def test_mode_is_exact_and_no_temp_file_is_left(tmp_path, durable):
    old = os.umask(0o077)
    try:
        p = jsonfile.write_json(tmp_path / "sub" / "x.json", [1], mode=0o644, durable=durable)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o644
    assert sorted(os.listdir(tmp_path / "sub")) == ["x.json"]


def test_dir_fd_takes_a_bare_name_only(tmp_path):
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        jsonfile.write_json("ok.json", {"b": 2}, dir_fd=fd)
        assert jsonfile.read_json("ok.json", dir_fd=fd) == {"b": 2}
        for bad in ("../x", "", ".."):
            with pytest.raises(ValueError):
                jsonfile.write_json(bad, {}, dir_fd=fd)
    finally:
        os.close(fd)


def test_over_max_bytes_writes_nothing(tmp_path):
    with pytest.raises(ValueError):
        jsonfile.write_json(tmp_path / "big.json", "x" * 100, max_bytes=10)
    assert not (tmp_path / "big.json").exists()


def test_threads_writing_one_file_never_share_a_temp_file(tmp_path):
    p = tmp_path / "s.json"
    errors = []

    def work(i):
        try:
            for _ in range(50):
                jsonfile.write_json(p, {"i": i}, durable=False)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert jsonfile.read_json(p)["i"] in range(4)


def _fifo(p):
    os.mkfifo(p)


@pytest.mark.parametrize("make", [
    lambda p: None,                                         # missing
    lambda p: p.write_text("{not json"),                    # corrupt
    lambda p: p.write_text("[1, 2]"),                       # not an object
    lambda p: p.write_text("[" * 100 + "]" * 100),          # too deep
    lambda p: p.write_text('{"a": "' + "x" * 200 + '"}'),   # too big (max_bytes=100 below)
    lambda p: p.symlink_to(p.parent / "real.json"),         # symlink at the last component
    _fifo,                                                  # not a regular file: must not block
], ids=["missing", "corrupt", "not-object", "deep", "big", "symlink", "fifo"])
def test_read_json_returns_none_for_every_unusable_file(tmp_path, make):
    (tmp_path / "real.json").write_text('{"ok": 1}')
    p = tmp_path / "f.json"
    make(p)
    assert jsonfile.read_json(p, max_bytes=100) is None


def test_read_json_reads_a_good_object_and_depth_ignores_brackets_in_strings(tmp_path):
    p = tmp_path / "g.json"
    p.write_text('{"a": "[[[[[[[[", "b": [1, [2]]}')
    assert jsonfile.read_json(p, max_depth=3) == {"a": "[[[[[[[[", "b": [1, [2]]}
    assert jsonfile.json_depth(p.read_text()) == 3
