"""What a node remembers of its own drains and features (slurm/local_state.py)."""

from __future__ import annotations

import os

from gcm_checks.slurm import local_state as ls


def test_drain_record_lifecycle(tmp_path):
    sd = str(tmp_path)
    assert ls.drain_record(sd, "n1") is None
    ls.record_drain(sd, "n1", "gcm: x", "gpu.count")
    rec = ls.drain_record(sd, "n1")
    assert (rec["node"], rec["reason"], rec["check"]) == ("n1", "gcm: x", "gpu.count")
    assert os.listdir(sd) == ["slurm-drain.n1.json"]
    ls.forget_drain(sd, "n1")
    ls.forget_drain(sd, "n1")  # already gone: fine
    assert ls.drain_record(sd, "n1") is None and os.listdir(sd) == []


def test_without_a_state_dir_nothing_is_kept():
    ls.record_drain(None, "n1", "gcm: x", "gpu.count")
    ls.record_features(None, "n1", {"node": "n1"})
    ls.forget_drain(None, "n1")
    assert ls.drain_record(None, "n1") is None and ls.feature_record(None, "n1") is None


def test_a_record_that_cannot_be_written_is_lost_not_raised(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    ls.record_drain(str(not_a_dir), "n1", "gcm: x", "gpu.count")
    ls.record_features(str(not_a_dir), "n1", {"node": "n1", "features": ["gcm_ok"]})
    assert ls.drain_record(str(not_a_dir), "n1") is None


def test_two_nodes_that_share_a_file_name_do_not_share_a_record(tmp_path):
    sd = str(tmp_path)
    ls.record_features(sd, "a/b", {"node": "a/b", "features": ["gcm_ok"]})
    assert ls.feature_record(sd, "a/b")["features"] == ["gcm_ok"]
    assert ls.feature_record(sd, "a_b") is None  # same file, another node's record
