"""Root-safe access to a job user's files (gcm_checks.safeio).

These run as root (the epilog does) with a throwaway uid/gid 4242 that has
no passwd entry; without root they skip, since the threat only exists then.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile

import pytest

from gcm_checks import jsonfile, safeio, text

UID = GID = 4242
SECRET = b"root-only secret: s3cr3t-token\n"

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="root-safety tests need root")


@pytest.fixture
def space():
    """A world-traversable base (pytest's tmp_path is 0700 root: the user
    could not even reach it) with a user-owned dir and a root-only file."""
    base = tempfile.mkdtemp(prefix="gcm-safeio-", dir="/tmp")
    os.chmod(base, 0o755)
    user = os.path.join(base, "user")
    os.mkdir(user)
    os.chown(user, UID, GID)
    secret = os.path.join(base, "secret")
    with open(secret, "wb") as f:
        f.write(SECRET)
    os.chmod(secret, 0o600)
    yield base, user, secret
    shutil.rmtree(base, ignore_errors=True)


def _user_file(path: str, data: bytes, mode: int = 0o600) -> str:
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    os.chown(path, UID, GID)
    return path


def _user_symlink(target: str, link: str) -> str:
    os.symlink(target, link)
    os.lchown(link, UID, GID)
    return link


@root_only
def test_reads_user_file_as_user_even_when_private(space):
    _, user, _ = space
    p = _user_file(os.path.join(user, "out.log"), b"hello\nworld\n", 0o600)
    t = safeio.read_tail(p, uid=UID, gid=GID, max_bytes=1024)
    assert t.error == ""
    assert t.data == b"hello\nworld\n" and t.size == 12 and not t.truncated


@root_only
@pytest.mark.parametrize("make", ["symlink_to_secret", "symlinked_parent", "hardlink_to_secret", "root_owned_in_user_dir"])
def test_never_reads_root_only_file(space, make):
    base, user, secret = space
    if make == "symlink_to_secret":
        p = _user_symlink(secret, os.path.join(user, "out.log"))
    elif make == "symlinked_parent":
        _user_symlink(base, os.path.join(user, "up"))
        p = os.path.join(user, "up", "secret")
    elif make == "hardlink_to_secret":
        p = os.path.join(user, "out.log")
        os.link(secret, p)  # only root can do this, but a stale one may exist
    else:
        p = os.path.join(user, "out.log")
        shutil.copy(secret, p)  # root-owned file in the user's dir
        os.chmod(p, 0o644)
    t = safeio.read_tail(p, uid=UID, gid=GID, max_bytes=1 << 20)
    assert t.data == b""
    assert t.error.startswith("not read")
    assert b"s3cr3t" not in t.data


@root_only
def test_root_owned_symlink_in_path_is_trusted(space):
    # /home -> /gpfs/home style links set up by the admin must keep working.
    base, user, _ = space
    real = os.path.join(base, "real")
    os.mkdir(real)
    os.chmod(real, 0o755)
    os.symlink(user, os.path.join(real, "home"))  # root-owned link
    _user_file(os.path.join(user, "out.log"), b"ok\n")
    t = safeio.read_tail(os.path.join(real, "home", "out.log"), uid=UID, gid=GID, max_bytes=100)
    assert t.error == "" and t.data == b"ok\n"


@root_only
def test_fifo_is_not_read(space):
    _, user, _ = space
    p = os.path.join(user, "out.log")
    os.mkfifo(p)
    os.chown(p, UID, GID)
    t = safeio.read_tail(p, uid=UID, gid=GID, max_bytes=100, timeout=3)
    assert "not a regular file" in t.error


@pytest.mark.parametrize(
    "size,cap,expect_len,truncated",
    [(10, 100, 10, False), (100, 100, 100, False), (1000, 64, 64, True), (0, 64, 0, False)],
)
def test_tail_is_bounded(tmp_path, size, cap, expect_len, truncated):
    p = tmp_path / "log"
    p.write_bytes(bytes(range(256)) * (size // 256) + bytes(range(size % 256)))
    t = safeio.read_tail(str(p), uid=os.geteuid(), max_bytes=cap)
    assert len(t.data) == expect_len
    assert t.truncated is truncated
    assert t.size == size
    assert t.data == p.read_bytes()[size - expect_len :]


@root_only
def test_write_user_file_is_owned_by_user(space):
    _, user, _ = space
    path = safeio.write_user_file(user, "gcm-report-7.txt", b"report\n", uid=UID, gid=GID)
    st = os.lstat(path)
    assert (st.st_uid, st.st_gid) == (UID, GID)
    assert stat.S_IMODE(st.st_mode) == 0o600
    assert open(path, "rb").read() == b"report\n"


@root_only
def test_write_into_workdir_symlinked_to_etc_is_refused(space):
    base, user, _ = space
    wd = _user_symlink("/etc", os.path.join(user, "work"))
    before = set(os.listdir("/etc"))
    with pytest.raises(OSError):
        safeio.write_user_file(wd, "gcm-report-7.txt", b"x", uid=UID, gid=GID)
    assert set(os.listdir("/etc")) == before


@root_only
def test_write_over_planted_symlink_replaces_link_not_target(space):
    base, user, secret = space
    _user_symlink(secret, os.path.join(user, "gcm-report-7.txt"))
    safeio.write_user_file(user, "gcm-report-7.txt", b"report\n", uid=UID, gid=GID)
    assert open(secret, "rb").read() == SECRET
    assert not os.path.islink(os.path.join(user, "gcm-report-7.txt"))


@root_only
def test_write_into_dir_user_cannot_write_fails(space):
    base, _, _ = space
    root_dir = os.path.join(base, "rootdir")
    os.mkdir(root_dir, 0o755)
    with pytest.raises(OSError):
        safeio.write_user_file(root_dir, "x.txt", b"x", uid=UID, gid=GID)
    assert os.listdir(root_dir) == []


@pytest.mark.parametrize(
    "raw,expected",
    [
        (b"\x1b[31mred\x1b[0m", "red"),
        (b"\x1b]52;c;ZXZpbA==\x07after", "after"),  # OSC 52 clipboard write
        (b"a\rb\r\nc", "a\nb\nc"),
        (b"bell\x07 nul\x00 del\x7f", "bell nul del"),
        (b"<b>&amp;</b>", "<b>&amp;</b>"),  # HTML is the renderer's job
        (b"\xff\xfeok", "\ufffd\ufffdok"),
    ],
)
def test_clean_text(raw, expected):
    assert text.clean_text(raw) == expected


def test_atomic_write_leaves_no_temp_and_replaces(tmp_path):
    p = tmp_path / "d" / "report.json"
    jsonfile.write_atomic(str(p), b"one")
    jsonfile.write_atomic(str(p), b"two")
    assert p.read_bytes() == b"two"
    assert sorted(os.listdir(p.parent)) == ["report.json"]


def test_relative_path_refused():
    with pytest.raises(safeio.UnsafePath):
        safeio.open_nofollow("etc/passwd")


@pytest.mark.parametrize("n,expected", [(0, "0 B"), (1023, "1023 B"), (65536, "64 KiB"), (int(3.2 * 2**30), "3.2 GiB")])
def test_human_bytes(n, expected):
    assert safeio.human_bytes(n) == expected
