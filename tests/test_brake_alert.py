"""The mass-drain brake's one admin alert (gcm_checks.brake.alert,
gcm_checks.notify.admin): episode naming from data, the Extra marker, the
outbox, a real HTTP receiver. The real-cluster run is in test_brake_cluster.py."""

from __future__ import annotations

import json
import os

import pytest

from gcm_checks import brake, notify
from gcm_checks.config import ConfigError
from gcm_checks.slurm.parse import CensusEntry, NodeInfo
from gcm_checks.slurm.reasons import make_drain_reason
from gcm_checks.testing import MemoryBackend
from gcm_checks.testing import settings as make_settings
from http_receiver import WebhookReceiver  # the real HTTP server (tests/http_receiver.py)
from test_notify_delivery import cert  # noqa: F401 - a TLS certificate for the relay

LOST = make_drain_reason("gpu.responsive", "GPU 3 (00000000:3B:00.0)", "GPU has fallen off the bus")
NOW = 1_800_000_000.0


@pytest.fixture
def hook():
    with WebhookReceiver() as h:
        yield h


def _census(me, drained_at):
    out = [CensusEntry(me, ("gpu",), False, None, None)]
    for name, t in drained_at.items():
        out.append(CensusEntry(name, ("gpu",), True, LOST, t))
    out.append(CensusEntry("idle9", ("gpu",), False, None, None))
    return out


def test_every_braked_node_names_the_episode_the_same_way():
    drained = {"n1": NOW - 300, "n2": NOW - 200}
    a = brake.episode(_census("n3", drained), "n3", "gpu.responsive", window_s=900, now=NOW, cluster="c1", why="w")
    b = brake.episode(_census("n4", drained), "n4", "gpu.responsive", window_s=900, now=NOW + 40, cluster="c1", why="w")
    assert a.key == b.key and a.marker_id == b.marker_id
    assert a.key == "c1/mass-drain-brake/gpu/gpu.responsive/" + "2027-01-15T07:55:00Z"
    assert a.drained == ("n1", "n2")
    # Another check, cluster or a later episode (the first drain left the window) is another key.
    other = brake.episode(_census("n3", drained), "n3", "ib.port.state", window_s=900, now=NOW, cluster="c1", why="w")
    later = brake.episode(_census("n3", {"n2": NOW - 200}), "n3", "gpu.responsive", window_s=900, now=NOW, cluster="c1", why="w")
    assert len({a.key, other.key, later.key,
                brake.episode(_census("n3", drained), "n3", "gpu.responsive", window_s=900, now=NOW, cluster="c2", why="w").key}) == 4


def test_cluster_name_from_env_or_slurm_conf(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("# ClusterName=commented\nSlurmctldHost=x\nClusterName = gpu-a  # the GPU cluster\n")
    assert brake.cluster_name({"SLURM_CLUSTER_NAME": "c9", "SLURM_CONF": str(conf)}) == "c9"
    assert brake.cluster_name({"SLURM_CONF": str(conf)}) == "gpu-a"  # health mode has no SLURM_CLUSTER_NAME
    assert brake.cluster_name({"SLURM_CONF": str(tmp_path / "missing")}) == ""


def _setup(tmp_path, hook, node, handoff="inline", admin=None, **channel):
    ch = {"name": "ops", "type": "webhook", "url": hook.url + "/ops", "timeout_s": 5, **channel}
    return make_settings({
        "state_dir": str(tmp_path / node / "state"),
        "report": {"outbox_dir": str(tmp_path / node / "outbox")},
        "notify": {"channels": [ch, {"name": "users", "type": "webhook", "url": hook.url + "/users"}],
                   "admin": admin if admin is not None else {"channels": ["ops"]}, "handoff": handoff},
    }, node=node)


def _episode(now=NOW):
    return brake.episode(_census("n3", {"n1": NOW - 300, "n2": NOW - 200}), "n3", "gpu.responsive", window_s=900,
                         now=now, cluster="c1", why="suspected cluster-wide cause: 2 of 4 nodes")


def test_nodes_without_a_shared_spool_send_one_alert(tmp_path, hook):
    backend = MemoryBackend({n: NodeInfo(n, "IDLE", extra="rack=7" if n == "n3" else None) for n in ("n1", "n2", "n3", "n4")})
    ep = _episode()
    first = brake.alert(_setup(tmp_path, hook, "n3"), "n3", ep, mode="health", reason=LOST, backend=backend, now=NOW)
    assert first["sent"] is True and first["marker"] == "n3"
    # The marker is our own Extra segment; the admin's text stays.
    assert backend.nodes["n3"].extra.startswith("rack=7; gcm brake ") and ep.marker_id in backend.nodes["n3"].extra
    # n4 has its own state and outbox: it finds n3's marker and stays quiet.
    second = brake.alert(_setup(tmp_path, hook, "n4"), "n4", ep, mode="prolog", reason=LOST, backend=backend, now=NOW + 5)
    assert second["sent"] is False and "n3 alerted" in second["why"]
    # n3 again (its next job): the local record answers, no Slurm read.
    gone = MemoryBackend(fail_with="slurmctld down")  # would raise if it were asked
    again = brake.alert(_setup(tmp_path, hook, "n3"), "n3", ep, mode="prolog", reason=LOST, backend=gone, now=NOW + 9)
    assert again["sent"] is False and again["why"].startswith("already handled on this node")
    [req] = hook.requests
    assert req["path"] == "/ops"  # the admin route only, never the users' channel
    body = req["body"]
    assert body["event"] == "mass_drain_brake" and body["dedup_key"] == ep.key + "/ops"
    assert req["headers"]["idempotency-key"] == ep.key + "/ops"
    assert body["alert"]["drained"] == ["n1", "n2"] and body["alert"]["observed_by"] == "n3"
    assert "gpu.responsive" in body["summary"] and "resume" in body["text"]


def test_simultaneous_nodes_both_miss_the_marker_but_send_the_same_key(tmp_path, hook):
    ep = _episode()
    for node in ("n3", "n4"):  # each reads a node list without the other's marker
        backend = MemoryBackend({n: NodeInfo(n, "IDLE") for n in ("n1", "n2", "n3", "n4")})
        assert brake.alert(_setup(tmp_path, hook, node), node, ep, mode="prolog", reason=LOST, backend=backend)["sent"]
    keys = {r["headers"]["idempotency-key"] for r in hook.requests}
    assert len(hook.requests) == 2 and keys == {ep.key + "/ops"}  # one alert at a receiver that dedupes


def test_relay_down_keeps_the_alert_in_the_outbox_until_a_flush(tmp_path, hook):
    hook.status = 503
    s = _setup(tmp_path, hook, "n3")
    backend = MemoryBackend({n: NodeInfo(n, "IDLE") for n in ("n3",)})
    out = brake.alert(s, "n3", _episode(), mode="health", reason=LOST, backend=backend)
    assert out["notification"]["delivery"]["failed"]
    box = notify.outbox_for(s)
    assert box.counts()["pending"] == 1  # on disk, retried by the next flush
    hook.status = 200
    assert notify.flush(s, force=True).sent == [_episode().key + "/ops"]
    assert box.counts() == {"pending": 0, "sent": 1, "dead": 0}


def test_smtp_alert_goes_to_admin_addresses_only_and_needs_them(tmp_path, hook):
    s2 = make_settings({"state_dir": str(tmp_path / "s"), "report": {"outbox_dir": str(tmp_path / "o")},
                        "notify": {"channels": [{"name": "mail", "type": "smtp"}], "admin": {"channels": ["mail"]}}})
    from gcm_checks.notify.admin import enqueue_alert

    alert = brake.alert_text(_episode(), "n3", "prolog", LOST)
    s = make_settings({"state_dir": str(tmp_path / "s1"), "report": {"outbox_dir": str(tmp_path / "o1")},
                       "notify": {"channels": [{"name": "mail", "type": "smtp"}],
                                  "admin": {"channels": ["mail"], "to": "hpc-ops@example.org"}}})
    [(key, what)] = enqueue_alert(s, "k1", alert).items()
    assert what == "queued"
    [item] = notify.outbox_for(s).items()
    assert item["payload"]["to"] == ["hpc-ops@example.org"] and "mass-drain brake" in item["payload"]["subject"]
    assert '<meta charset="utf-8">' in item["payload"]["html"]
    assert enqueue_alert(s2, "k1", alert) == {"k1/mail": "no admin address (notify.admin.to)"}


def test_admin_routes_default_to_admin_channels_and_names_are_checked():
    ns = make_settings(notify={"channels": [{"name": "u", "type": "webhook", "url": "http://x"},
                                            {"name": "ops", "type": "slack", "url": "http://y", "when": "on_failure"}]}).notify
    assert [c.name for c in ns.admin_routes()] == ["ops"]
    with pytest.raises(ValueError, match="not a channel"):
        make_settings(notify={"channels": [], "admin": {"channels": ["nope"]}}).notify.admin_routes()
    with pytest.raises(ConfigError, match="notify.admin.recipients"):
        make_settings(notify={"admin": {"recipients": ["a@b"]}})
    with pytest.raises(ConfigError, match="notify.admin.to"):
        make_settings(notify={"admin": {"to": [3]}})


def test_no_admin_channel_means_no_marker_and_no_slurm_write(tmp_path, hook):
    backend = MemoryBackend({n: NodeInfo(n, "IDLE") for n in ("n3",)})
    s = _setup(tmp_path, hook, "n3", admin={})  # no channel has when:, no admin.channels
    out = brake.alert(s, "n3", _episode(), mode="prolog", reason=LOST, backend=backend)
    assert out["sent"] is False and backend.updates == [] and hook.requests == []


def test_dry_run_sends_nothing(tmp_path, hook):
    backend = MemoryBackend({n: NodeInfo(n, "IDLE") for n in ("n3",)})
    out = brake.alert(_setup(tmp_path, hook, "n3"), "n3", _episode(), mode="prolog", reason=LOST, backend=backend,
                      dry_run=True)
    assert out["sent"] is False and backend.updates == [] and hook.requests == []
    assert not os.path.exists(str(tmp_path / "n3" / "outbox" / "pending"))
    json.dumps(out)


def test_two_nodes_mail_the_same_message_id_to_a_real_relay(tmp_path, cert):
    """A plain mailbox shows both mails of the documented race; a mail store
    that drops duplicate Message-IDs keeps one: the id must be the same."""
    from test_notify_delivery import Relay

    relay = Relay(cert)
    relay.start()
    try:
        pw = tmp_path / "smtp.pass"
        pw.write_text("hunter2\n")
        mail = {"name": "ops-mail", "type": "smtp", "host": "127.0.0.1", "port": relay.port, "starttls": True,
                "cafile": cert[0], "username": "gcm", "password_file": str(pw), "from": "gcm@cluster.example",
                "message_id_domain": "cluster.example", "timeout_s": 5}
        ep = _episode()
        for node in ("n3", "n4"):  # simultaneous: neither saw the other's marker
            s = make_settings({"state_dir": str(tmp_path / node / "state"),
                               "report": {"outbox_dir": str(tmp_path / node / "outbox")},
                               "notify": {"channels": [mail], "handoff": "inline",
                                          "admin": {"channels": ["ops-mail"], "to": ["hpc-ops@cluster.example"]}}}, node=node)
            backend = MemoryBackend({n: NodeInfo(n, "IDLE") for n in ("n1", "n2", "n3", "n4")})
            assert brake.alert(s, node, ep, mode="prolog", reason=LOST, backend=backend)["sent"]
    finally:
        relay.stop()
    assert [m["rcpt"] for m in relay.messages] == [["hpc-ops@cluster.example"]] * 2
    ids = {m["msg"]["Message-ID"] for m in relay.messages}
    assert len(ids) == 1 and ids.pop().endswith("@cluster.example>")
    msg = relay.messages[0]["msg"]
    assert msg["Auto-Submitted"] == "auto-generated" and "mass-drain brake on gpu.responsive" in msg["Subject"]
    assert "n1, n2" in msg.get_body(("plain",)).get_content()


def test_old_episode_records_are_forgotten(tmp_path, hook):
    s = _setup(tmp_path, hook, "n3")
    state_dir = tmp_path / "n3" / "state"
    state_dir.mkdir(parents=True)
    stale, fresh = state_dir / "brake-episode.aaaaaaaaaaaa.json", state_dir / "brake-episode.bbbbbbbbbbbb.json"
    for p in (stale, fresh):
        p.write_text("{}")
    import time

    wall = time.time()
    os.utime(stale, (wall - 8 * 86400, wall - 8 * 86400))
    os.utime(fresh, (wall - 86400, wall - 86400))
    backend = MemoryBackend({n: NodeInfo(n, "IDLE") for n in ("n3",)})
    brake.alert(s, "n3", _episode(), mode="prolog", reason=LOST, backend=backend, now=NOW)
    assert not stale.exists() and fresh.exists()
    assert (state_dir / f"brake-episode.{_episode().marker_id}.json").exists()
