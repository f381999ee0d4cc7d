"""gcm-run's progress watcher on its own: bytes in, progress and alerts out."""

from __future__ import annotations

import os

from gcm_checks.wrapper.options import RunOptions
from gcm_checks.wrapper.watcher import SCAN_BYTES, ProgressWatcher


def _watcher(tmp_path, **kw):
    r, w = os.pipe()
    opts = RunOptions(argv=["x"], log_path=str(tmp_path / "l"), err_fd=w, **kw)
    return ProgressWatcher(opts, 0.0), r, w


def test_feed_reads_progress_per_stream_and_floods_by_their_tail(tmp_path):
    pw, r, w = _watcher(tmp_path)
    pw.feed(1, memoryview(b"step 5/10 loss 0.5\n"))
    assert pw.tracker.snap.step == 5
    flood = b"junk\n" * (SCAN_BYTES // 5 + 10) + b"step 9/10 loss 0.1\n"
    pw.feed(2, memoryview(flood))
    pw.flush()
    assert pw.tracker.snap.step == 9
    assert set(pw.scanners) == {1, 2}
    os.close(r), os.close(w)


def test_guard_swallows_and_says_once(tmp_path):
    pw, r, w = _watcher(tmp_path)

    def boom():
        raise ValueError("bad line")

    pw.guard(boom)
    pw.guard(boom)
    os.close(w)
    said = os.read(r, 4096).decode()
    os.close(r)
    assert said.count("progress tracking error ignored") == 1
    assert pw.error == "ValueError: bad line"


def test_quiet_episodes_are_numbered_once_each(tmp_path):
    pw, r, w = _watcher(tmp_path)
    assert pw.new_quiet_episode() and not pw.new_quiet_episode()
    pw.check(1.0, 1.0, lambda a: None)  # neither stalled nor silent: the episode ends
    assert pw.new_quiet_episode()
    assert pw.quiet_episodes == 2
    assert pw.current_alert() == ""
    os.close(r), os.close(w)
