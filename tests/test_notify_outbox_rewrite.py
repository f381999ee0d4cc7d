"""Outbox.rewrite(): the public way to change a pending item (accounting's
hold and release use it instead of reaching into the outbox's paths)."""

import fcntl
import os

from gcm_checks.notify.outbox import Outbox


def _box(tmp_path):
    box = Outbox(str(tmp_path / "outbox"))
    assert box.enqueue("c/1/mail", "mail", {"text": "old"}, job_key="1", now=100.0)
    return box


def _pending(box):
    return {it["key"]: it for it in box.items("pending")}


def test_rewrite_changes_the_item_in_place(tmp_path):
    box = _box(tmp_path)

    def upd(item):
        item["payload"]["text"] = "new"
        item["next_attempt_at"] = 500.0
        return True

    assert box.rewrite("c/1/mail", upd) is True
    item = _pending(box)["c/1/mail"]
    assert (item["payload"]["text"], item["next_attempt_at"]) == ("new", 500.0)
    assert box.counts() == {"pending": 1, "sent": 0, "dead": 0}


def test_rewrite_declined_leaves_the_item_alone(tmp_path):
    box = _box(tmp_path)

    def upd(item):
        item["payload"]["text"] = "changed but declined"
        return False

    assert box.rewrite("c/1/mail", upd) is False
    assert _pending(box)["c/1/mail"]["payload"]["text"] == "old"


def test_rewrite_of_an_unknown_key_is_false(tmp_path):
    box = _box(tmp_path)
    assert box.rewrite("c/2/mail", lambda item: True) is False


def test_rewrite_skips_an_item_a_flush_holds(tmp_path):
    box = _box(tmp_path)
    path = os.path.join(box.root, "pending", os.listdir(os.path.join(box.root, "pending"))[0])
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert box.rewrite("c/1/mail", lambda item: item.update(x=1) or True) is False
    finally:
        os.close(fd)
    assert "x" not in _pending(box)["c/1/mail"]


def test_not_before_holds_an_item_even_against_force(tmp_path):
    box = Outbox(str(tmp_path / "ob"))
    assert box.enqueue("c/7/hook", "hook", {"body": {}}, now=100.0, not_before=400.0)
    sent = []
    for t in (100.0, 399.0):
        s = box.flush(lambda it, left: sent.append(it["key"]), budget_s=5, now=lambda t=t: t, force=True)
        assert s.held == [{"key": "c/7/hook", "until": 400.0, "why": ""}] and sent == []
    assert box.next_due() == 400.0
    box.flush(lambda it, left: sent.append(it["key"]), budget_s=5, now=lambda: 400.0)
    assert sent == ["c/7/hook"] and box.next_due() is None


def test_a_non_finite_not_before_is_quarantined_not_held_forever(tmp_path):
    import json as _json
    from gcm_checks.notify.outbox import file_name

    box = Outbox(str(tmp_path / "ob"))
    box.enqueue("c/8/hook", "hook", {"body": {}}, now=100.0)
    path = tmp_path / "ob" / "pending" / file_name("c/8/hook")
    item = _json.loads(path.read_text())
    path.write_text(_json.dumps(dict(item, not_before=float("inf"))).replace("Infinity", "1e999"))
    s = box.flush(lambda it, left: None, budget_s=5, now=lambda: 200.0)
    assert [q["name"] for q in s.quarantined] == [file_name("c/8/hook")] and s.held == []
