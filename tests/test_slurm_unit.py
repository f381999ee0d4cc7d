"""gcm_checks.slurm without daemons: parsing, reasons, ownership decisions.

The same rules are proven against real slurmctld in test_slurm_cluster.py;
these tables cover the corner cases a live cluster makes slow to reach.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import time

import pytest

from gcm_checks import slurm, testing
from gcm_checks.slurm.parse import NodeInfo, SlurmError
from gcm_checks.testing import MemoryBackend

from corpus import corpus  # noqa: E402

# Captured from the real 22.05 test cluster (tests/slurm_cluster.py).
NODE_IDLE = (
    "NodeName=node1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.04 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm Port=16803 "
    "Version=22.05.8 OS=Linux 6.18.44-fc-v657 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 AllocMem=0 FreeMem=23553 "
    "Sockets=2 Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug  "
    "BootTime=2026-11-30T01:47:13 SlurmdStartTime=2026-11-30T01:53:11 LastBusyTime=2026-11-30T01:53:11 "
    "CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s "
    "ExtSensorsWatts=0 ExtSensorsTemp=n/s"
)


@pytest.mark.parametrize(
    "tail, expect",
    [
        ("", dict(state="IDLE", reason=None, reason_user=None, available_features=(), extra=None)),
        (
            " State=IDLE+DRAIN Reason=gcm: gpu.count: expected 8 found 7 [root@2026-11-29T22:08:32]",
            dict(state="IDLE+DRAIN", reason="gcm: gpu.count: expected 8 found 7", reason_user="root"),
        ),
        (
            " State=MIXED+DRAIN Reason=maintenance: swap PSU x=1 [alice@2026-11-29T22:08:32]",
            dict(state="MIXED+DRAIN", reason="maintenance: swap PSU x=1", reason_user="alice"),
        ),
        (" AvailableFeatures=a100,gcm_ok ActiveFeatures=a100 State=IDLE", dict(available_features=("a100", "gcm_ok"), active_features=("a100",))),
        (" Comment=rack 4 Extra=gcm ok 2026-11-30T01:00:00Z", dict(comment="rack 4", extra="gcm ok 2026-11-30T01:00:00Z")),
        (" State=DOWN*+DRAIN Reason=Not responding [slurm@2026-11-29T22:08:32]", dict(state="DOWN*+DRAIN", reason="Not responding", reason_user="slurm")),
    ],
)
def test_parse_node(tail, expect):
    info = slurm.parse_node(NODE_IDLE + tail)
    assert info.name == "node1"
    for k, v in expect.items():
        assert getattr(info, k) == v, k


def test_parse_node_corpus_multiline_reason():
    # A real capture (24.05, multi-line form) joined the way -o prints it.
    with open(corpus("formats", "sacct", "awsome-distributed-ai195_scontrol_show_node_idle_drain_gres.txt")) as f:
        text = " ".join(ln.strip() for ln in f)
    info = slurm.parse_node(text)
    assert info.drained and not info.gcm_owned
    assert info.reason == "gres/gpu count reported lower than configured (0 < 1)"
    assert info.reason_user == "slurm"


def test_parse_node_rejects_garbage():
    with pytest.raises(SlurmError):
        slurm.parse_node("slurm_load_node error: Invalid node name specified")


@pytest.mark.parametrize(
    "state, reason, drained, owned",
    [
        ("IDLE", None, False, False),
        ("IDLE+DRAIN", "gcm: x", True, True),
        ("MIXED+DRAIN", "admin work", True, False),
        ("DRAINED", "gcm:x", True, True),
        ("IDLE", "gcm: stale", False, True),
    ],
)
def test_nodeinfo_flags(state, reason, drained, owned):
    n = NodeInfo("n", state, reason)
    assert (n.drained, n.gcm_owned) == (drained, owned)


@pytest.mark.parametrize(
    "raw, expect",
    [
        ("plain text", "plain text"),
        ("a\nb\r\nc\td", "a b c d"),
        ("rm -rf $HOME; `id` | cat & x > y < z", "rm -rf HOME, id cat x y z"),
        ("reset the GPU; RMA if it recurs", "reset the GPU, RMA if it recurs"),
        ("quote 'single' \"double\" back\\slash", "quote single double backslash"),
        ("ctrl\x00\x07\x1b[31mred", "ctrlred"),  # the escape sequence goes whole (gcm_checks.text)
        ("\u202eevil\u2028line", "evil line"),
        ("ünïcödé", "ncd"),
        ("key=value", "key value"),
        ("x" * 300, "x" * 197 + "..."),
    ],
)
def test_sanitize_reason(raw, expect):
    out = slurm.sanitize_reason(raw)
    assert out == expect
    assert len(out) <= slurm.MAX_REASON
    assert all(32 <= ord(c) < 127 for c in out)


@pytest.mark.parametrize(
    "check, subject, message, expect",
    [
        ("gpu.count", "", "expected 8 found 7", "gcm: GPU missing (gpu.count): expected 8 found 7"),
        ("gpu.ecc.uncorrectable", "GPU 3 (00000000:3B:00.0)", "2 uncorrectable",
         "gcm: GPU 3 ECC errors (gpu.ecc.uncorrectable) 00000000:3B:00.0: 2 uncorrectable"),
        ("xid.hardware", "GPU 1", "Xid 79; `reboot`\nnow", "gcm: XID 79 GPU 1 (xid.hardware): Xid 79, reboot now"),
        ("gpu.responsive", "GPU 3 (00000000:3B:00.0)", "GPU has fallen off the bus (NVML_ERROR_GPU_IS_LOST)",
         "gcm: GPU 3 lost (gpu.responsive) 00000000:3B:00.0: GPU has fallen off the bus (NVML_ERROR_GPU_IS_LOST)"),
        ("ib.port.state", "mlx5_3 port 1", "DOWN", "gcm: mlx5_3/1 down (ib.port.state): DOWN"),
    ],
)
def test_make_drain_reason(check, subject, message, expect):
    assert slurm.make_drain_reason(check, subject, message) == expect


@pytest.mark.parametrize("check, subject, head", [
    ("gpu.responsive", "GPU 3 (00000000:3B:00.0)", "gcm: GPU 3 hung (gpu"),
    ("gpu.pcie.width", "GPU 12 (00000000:3B:00.0)", "gcm: GPU 12 PCIe deg"),
    ("ib.port.state", "mlx5_10 port 2", "gcm: mlx5_10/2 down "),
    ("xid.hardware", "GPU at 00000000:3B:00.0", "gcm: XID 79 GPU 3B:0"),
])
def test_first_20_characters_name_the_part(check, subject, head):
    # sinfo -R shows 20 characters by default.
    assert slurm.make_drain_reason(check, subject, "XID 79 whatever")[:20] == head


@pytest.mark.parametrize("reason, check", [
    ("gcm: GPU 3 lost (gpu.responsive) 00000000:3B:00.0: gone", "gpu.responsive"),
    ("gcm: GPU 5 slow (qualify perf.gemm) 00000000:AB:00.0: x", "perf.gemm"),
    ("gcm: gpu.count: expected 8 found 7", "gpu.count"),  # the old format is still ours
    ("gcm: qualify: perf.gemm: GPU 5: slow", "perf.gemm"),
    ("gcm: RMA 1234 (admin)", None),
    ("RMA 1234", None),
])
def test_reason_check_reads_new_and_old_formats(reason, check):
    assert slurm.reason_check(reason) == check


def test_make_drain_reason_is_bounded():
    r = slurm.make_drain_reason("c" * 100, "s" * 100, "m" * 500)
    assert r.startswith("gcm: ") and len(r) <= 200


# ---------------------------------------------------------------- ownership


@pytest.mark.parametrize(
    "state, reason, action, updates, final_reason",
    [
        ("IDLE", None, "drained", 1, "gcm: gpu.count: 7 of 8"),
        ("MIXED", None, "drained", 1, "gcm: gpu.count: 7 of 8"),
        ("IDLE+DRAIN", "maintenance", "kept_foreign", 0, "maintenance"),
        ("IDLE+DRAIN", "Prolog error", "kept_foreign", 0, "Prolog error"),
        ("IDLE+DRAIN", "gcm: gpu.count: 7 of 8", "already", 0, "gcm: gpu.count: 7 of 8"),
        ("IDLE+DRAIN", "gcm: older finding", "already", 0, "gcm: older finding"),
        ("DOWN*", "Not responding", "kept_foreign", 0, "Not responding"),
    ],
)
def test_apply_drain_ownership(tmp_path, state, reason, action, updates, final_reason):
    be = MemoryBackend({"n1": NodeInfo("n1", state, reason)})
    out = slurm.apply_drain(be, "n1", "gcm: gpu.count: 7 of 8", state_dir=str(tmp_path), check="gpu.count")
    assert out.action == action
    assert len(be.updates) == updates
    assert be.nodes["n1"].reason == final_reason
    rec = slurm.drain_record(str(tmp_path), "n1")
    # Recorded only when the drain in Slurm is exactly ours.
    assert (rec is not None) == (final_reason == "gcm: gpu.count: 7 of 8")


def test_apply_drain_slurm_down_is_logged_not_raised(tmp_path):
    logged = []

    class Log:
        def error(self, event, **fields):
            logged.append((event, fields))

    out = slurm.apply_drain(MemoryBackend(fail_with="slurmctld unreachable"), "n1", "gcm: x", state_dir=str(tmp_path), log=Log())
    assert out.action == "error"
    assert logged == [("slurm_unreadable", {"node": "n1", "error": "slurmctld unreachable", "skipped": "drain",
                                            "reason": "gcm: x"})]
    assert slurm.drain_record(str(tmp_path), "n1") is None


def test_apply_drain_adds_prefix_and_sanitises():
    be = MemoryBackend()
    out = slurm.apply_drain(be, "n1", "bad; $(reboot)")
    # "$" goes, ";" becomes ","; parentheses stay (subjects read "GPU 3 (00000000:3B:00.0)").
    assert out.reason == "gcm: bad, (reboot)" and be.nodes["n1"].reason == "gcm: bad, (reboot)"


@pytest.mark.parametrize(
    "state, reason, force, action, resumed",
    [
        ("IDLE+DRAIN", "gcm: x", False, "resumed", True),
        ("IDLE+DRAIN", "maintenance", False, "kept_foreign", False),
        ("IDLE+DRAIN", "maintenance", True, "resumed", True),
        ("IDLE", None, False, "not_drained", False),
    ],
)
def test_apply_resume_ownership(tmp_path, state, reason, force, action, resumed):
    be = MemoryBackend({"n1": NodeInfo("n1", state, reason)})
    out = slurm.apply_resume(be, "n1", force=force, state_dir=str(tmp_path))
    assert out.action == action
    assert (("resume", "n1") in be.updates) == resumed
    assert be.nodes["n1"].drained == (state.endswith("DRAIN") and not resumed)


def test_resume_if_passed_needs_no_rpc_without_record(tmp_path):
    be = MemoryBackend({"n1": NodeInfo("n1", "IDLE+DRAIN", "gcm: x")})
    assert slurm.resume_if_passed(be, "n1", ["gpu.count"], state_dir=str(tmp_path)) is None
    assert be.reads == 0 and be.updates == []


@pytest.mark.parametrize(
    "passed, current_reason, action",
    [
        (["gpu.count", "gpu.ecc"], "gcm: gpu.count: 7 of 8", "resumed"),
        (["gpu.ecc"], "gcm: gpu.count: 7 of 8", "not_passed"),
        (["gpu.count"], "maintenance", "kept_foreign"),  # the admin re-drained since
    ],
)
def test_resume_if_passed(tmp_path, passed, current_reason, action):
    be = MemoryBackend({"n1": NodeInfo("n1", "IDLE", None)})
    slurm.apply_drain(be, "n1", "gcm: gpu.count: 7 of 8", state_dir=str(tmp_path), check="gpu.count")
    be.nodes["n1"] = NodeInfo("n1", "IDLE+DRAIN", current_reason)
    out = slurm.resume_if_passed(be, "n1", passed, state_dir=str(tmp_path))
    assert out is not None and out.action == action


# ---------------------------------------------------------------- features


@pytest.mark.parametrize(
    "current, gcm, expect",
    [
        ((), ["gcm_ok"], ["gcm_ok"]),
        (("a100", "ib"), ["gcm_ok"], ["a100", "ib", "gcm_ok"]),
        (("a100", "gcm_ok", "ib"), ["gcm_degraded"], ["a100", "ib", "gcm_degraded"]),
        (("gcm_ok", "gcm_qualified"), ["gcm_ok", "gcm_qualified"], ["gcm_ok", "gcm_qualified"]),
    ],
)
def test_merge_features(current, gcm, expect):
    assert slurm.merge_features(current, gcm) == expect


def test_features_only_on_transitions(tmp_path):
    be = MemoryBackend({"n1": NodeInfo("n1", "IDLE", available_features=("a100",), active_features=("a100",))})
    sd = str(tmp_path)
    assert slurm.apply_features(be, "n1", ["gcm_ok"], "gcm ok", state_dir=sd).action == "applied"
    n = len(be.updates)
    reads = be.reads
    for _ in range(3):
        assert slurm.apply_features(be, "n1", ["gcm_ok"], "gcm ok", state_dir=sd).action == "unchanged"
    assert len(be.updates) == n and be.reads == reads  # zero RPCs while nothing changes
    assert slurm.apply_features(be, "n1", ["gcm_degraded"], "gcm degraded", state_dir=sd).action == "applied"
    assert be.nodes["n1"].available_features == ("a100", "gcm_degraded")
    assert be.nodes["n1"].extra == "gcm degraded"


def test_features_reapplied_after_wipe(tmp_path):
    be = MemoryBackend({"n1": NodeInfo("n1", "IDLE", available_features=("a100",), active_features=("a100",))})
    sd = str(tmp_path)
    slurm.apply_features(be, "n1", ["gcm_ok"], "gcm ok", state_dir=sd)
    # scontrol reconfigure: features back to slurm.conf's, Extra kept.
    be.nodes["n1"] = NodeInfo("n1", "IDLE", available_features=("a100",), active_features=("a100",), extra="gcm ok")
    assert slurm.apply_features(be, "n1", ["gcm_ok"], None, state_dir=sd, verify=True).action == "reapplied"
    assert be.nodes["n1"].active_features == ("a100", "gcm_ok")
    assert slurm.apply_features(be, "n1", ["gcm_ok"], None, state_dir=sd, verify=True).action == "unchanged"


# ---------------------------------------------------------------- backends


def _fake_scontrol(tmp_path, body: str) -> str:
    p = tmp_path / "scontrol"
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


def test_scontrol_backend_argv_and_no_shell(tmp_path):
    log = tmp_path / "argv"
    sc = _fake_scontrol(tmp_path, f'for a in "$@"; do printf "%s\\n" "$a" >> {log}; done\n')
    be = slurm.ScontrolBackend(scontrol=sc, timeout_s=5)
    be.drain("node2", "gcm: a b; c")
    assert log.read_text().splitlines() == ["update", "nodename=node2", "state=drain", "reason=gcm: a b; c"]


def test_scontrol_backend_timeout_is_bounded(tmp_path):
    sc = _fake_scontrol(tmp_path, "sleep 30\n")
    be = slurm.ScontrolBackend(scontrol=sc, timeout_s=0.3)
    t0 = time.monotonic()
    with pytest.raises(SlurmError, match="no answer"):
        be.node_info("node1")
    assert time.monotonic() - t0 < 10  # generous: only proves we did not wait 30 s


@pytest.mark.parametrize("body, match", [("echo 'slurm_load_node error: Unable to contact slurm controller' >&2; exit 1\n", "Unable to contact"), ("exit 0\n", "no NodeName")])
def test_scontrol_backend_errors(tmp_path, body, match):
    be = slurm.ScontrolBackend(scontrol=_fake_scontrol(tmp_path, body), timeout_s=5)
    with pytest.raises(SlurmError, match=match):
        be.node_info("node1")


def test_scontrol_backend_missing():
    be = slurm.ScontrolBackend(scontrol="/nonexistent/scontrol")
    with pytest.raises(SlurmError):
        be.resume("n1")


def test_dry_run_prints_and_records():
    out = io.StringIO()
    be = slurm.DryRunBackend(out=out, state=NodeInfo("node2", "IDLE"))
    res = slurm.apply_drain(be, "node2", "gcm: gpu.count: 7 of 8")
    assert res.action == "would_drain"
    assert be.actions == ["would run: scontrol update nodename=node2 state=drain reason='gcm: gpu.count: 7 of 8'"]
    assert out.getvalue().strip() == be.actions[0]


@pytest.mark.parametrize(
    "settings, dry, kind",
    [
        (None, False, "ScontrolBackend"),
        ({"slurm.backend": "cli"}, True, "DryRunBackend"),
        ({"report_only": True}, False, "DryRunBackend"),
        ({"slurm.scontrol": "/nonexistent/scontrol"}, False, "DryRunBackend"),
        ({"slurm.backend": "auto"}, False, "ScontrolBackend"),  # no pyslurm backend any more
    ],
)
def test_backend_from_settings(settings, dry, kind, tmp_path):
    if settings is None or "slurm.scontrol" not in settings:
        settings = dict(settings or {}, **{"slurm.scontrol": _fake_scontrol(tmp_path, "exit 0\n")})
    be = slurm.backend_from_settings(testing.settings(settings), dry_run=dry, out=io.StringIO())
    assert type(be).__name__ == kind


def test_slurm_module_imports_nothing_heavy():
    # Rule 7: on the prolog path. A fresh interpreter proves it.
    from gcm_checks.proc import run

    # Every module of the package: the lazy front door alone would prove nothing.
    code = ("import sys, pkgutil, importlib, gcm_checks.slurm as s; "
            "[importlib.import_module('gcm_checks.slurm.' + m.name) for m in pkgutil.iter_modules(s.__path__)]; "
            "print(','.join(m for m in ('yaml', 'structlog', 'pynvml', 'pyslurm', 'asyncio', 'gcm_checks.testing') "
            "if m in sys.modules))")
    out = run([sys.executable, "-c", code], timeout=30, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.ok and out.stdout.strip() == ""


def test_features_reverified_when_slurm_conf_changes(tmp_path):
    be = MemoryBackend({"n1": NodeInfo("n1", "IDLE")})
    sd = str(tmp_path)
    slurm.apply_features(be, "n1", ["gcm_ok"], "gcm ok", state_dir=sd, stamp="1:100")
    be.nodes["n1"] = NodeInfo("n1", "IDLE", extra="gcm ok")  # reconfigure wiped them
    assert slurm.apply_features(be, "n1", ["gcm_ok"], None, state_dir=sd, stamp="1:100").action == "unchanged"
    reads = be.reads
    assert slurm.apply_features(be, "n1", ["gcm_ok"], None, state_dir=sd, stamp="2:101").action == "reapplied"
    assert be.reads == reads + 1 and be.nodes["n1"].active_features == ("gcm_ok",)


def test_health_features_leave_gcm_qualified_alone(tmp_path):
    be = MemoryBackend({"n1": NodeInfo("n1", "IDLE", available_features=("gcm_qualified", "gcm_ok"), active_features=("gcm_qualified", "gcm_ok"))})
    slurm.apply_features(be, "n1", ["gcm_degraded"], "x", state_dir=str(tmp_path), manage=("gcm_ok", "gcm_degraded"))
    assert be.nodes["n1"].active_features == ("gcm_qualified", "gcm_degraded")


def test_resume_if_passed_skips_a_redrain_with_another_gcm_reason(tmp_path):
    be = MemoryBackend({"n1": NodeInfo("n1", "IDLE")})
    slurm.apply_drain(be, "n1", "gcm: gpu.count: 7 of 8", state_dir=str(tmp_path), check="gpu.count")
    # An admin re-drained with `gcm-checks node drain` (also a gcm: reason).
    be.nodes["n1"] = NodeInfo("n1", "IDLE+DRAIN", "gcm: replace PSU")
    out = slurm.resume_if_passed(be, "n1", ["gpu.count"], state_dir=str(tmp_path))
    assert out is not None and out.action == "reason_changed"
    assert be.nodes["n1"].drained and ("resume", "n1") not in be.updates


def test_pyslurm_settings_from_old_configs_mean_scontrol(monkeypatch, tmp_path):
    """The pyslurm backend is gone (docs/slurm.md): an importable pyslurm is
    never used, and an old config naming it still gets a working backend."""
    monkeypatch.setitem(sys.modules, "pyslurm", object())
    warned = []

    class Log:
        def warning(self, event, **kw):
            warned.append((event, kw))

    scontrol = _fake_scontrol(tmp_path, "exit 0\n")
    for kind in ("pyslurm", "auto"):
        be = slurm.backend_from_settings(testing.settings({"slurm.backend": kind, "slurm.scontrol": scontrol}), log=Log())
        assert type(be).__name__ == "ScontrolBackend"
    assert warned == [("slurm_backend_unsupported", {"backend": "pyslurm", "using": "scontrol", "see": "docs/slurm.md"})]
    assert not hasattr(slurm, "PyslurmBackend")


@pytest.mark.parametrize("check", ["xid.hardware", "dcgm.diag", ""])
def test_event_drains_are_never_auto_resumed(tmp_path, check):
    be = MemoryBackend({"n1": NodeInfo("n1", "IDLE")})
    slurm.apply_drain(be, "n1", "gcm: xid.hardware: GPU 1: XID 48", state_dir=str(tmp_path), check=check)
    out = slurm.resume_if_passed(be, "n1", [check, "gpu.count"], state_dir=str(tmp_path))
    assert out is not None and out.action == "not_passed"
    assert be.nodes["n1"].drained


@pytest.mark.parametrize(
    "current, ours, expect",
    [
        (None, "gcm ok 2026-11-30T02:00:00Z", "gcm ok 2026-11-30T02:00:00Z"),
        ("gcm ok 2026-11-30T02:00:00Z", "gcm degraded 2026-11-30T03:00:00Z gpu.responsive",
         "gcm degraded 2026-11-30T03:00:00Z gpu.responsive"),
        # an admin's text stays, ours is added after it
        ("rack=12 owner=ops", "gcm ok 2026-11-30T02:00:00Z", "rack=12 owner=ops; gcm ok 2026-11-30T02:00:00Z"),
        # health does not wipe qualification's segment, and vice versa
        ("gcm qualified 2026-11-29T10:00:00Z", "gcm ok 2026-11-30T02:00:00Z",
         "gcm qualified 2026-11-29T10:00:00Z; gcm ok 2026-11-30T02:00:00Z"),
        ("rack=12; gcm qualified 2026-11-29T10:00:00Z; gcm ok 2026-11-30T02:00:00Z", "gcm qualify-failed 2026-11-30T04:00:00Z perf.gemm",
         "rack=12; gcm qualify-failed 2026-11-30T04:00:00Z perf.gemm; gcm ok 2026-11-30T02:00:00Z"),
    ],
)
def test_merge_extra_keeps_what_is_not_ours(current, ours, expect):
    assert slurm.merge_extra(current, ours) == expect


def test_health_features_keep_admin_extra_and_qualification(tmp_path):
    be = MemoryBackend({"n1": NodeInfo("n1", "IDLE", extra="rack=12; gcm qualified 2026-11-29T10:00:00Z")})
    out = slurm.apply_features(be, "n1", ["gcm_ok"], slurm.summary_extra("ok", (), 0), state_dir=str(tmp_path))
    assert out.action == "applied"
    assert be.nodes["n1"].extra == "rack=12; gcm qualified 2026-11-29T10:00:00Z; gcm ok 1970-01-01T00:00:00Z"


@pytest.mark.parametrize("current, ours, fmt, expect", [
    # text form, as before
    ("rack=12", "gcm ok 2026-11-30T02:00:00Z", "auto", "rack=12; gcm ok 2026-11-30T02:00:00Z"),
    # a JSON Extra (SchedulerParameters=extra_constraints) stays JSON, other keys kept
    ('{"rack": 12, "gcm_health": "degraded", "gcm_health_failing": "gpu.ecc"}', "gcm ok 2026-11-30T02:00:00Z", "auto",
     {"rack": 12, "gcm_health": "ok", "gcm_health_at": "2026-11-30T02:00:00Z"}),
    ("", "gcm degraded 2026-11-30T02:00:00Z gpu.ecc,ib.port.state", "json",
     {"gcm_health": "degraded", "gcm_health_at": "2026-11-30T02:00:00Z", "gcm_health_failing": "gpu.ecc,ib.port.state"}),
    # qualification has its own slot beside health's
    ('{"gcm_health": "ok", "gcm_health_at": "t1"}', "gcm qualified 2026-11-30T03:00:00Z", "auto",
     {"gcm_health": "ok", "gcm_health_at": "t1", "gcm_qualify": "qualified", "gcm_qualify_at": "2026-11-30T03:00:00Z"}),
    # forcing JSON over an admin's free text keeps that text under "text"
    ("rack 12", "gcm ok t", "json", {"text": "rack 12", "gcm_health": "ok", "gcm_health_at": "t"}),
    # text forced over JSON-looking junk stays text
    ("{not json", "gcm ok t", "auto", "{not json; gcm ok t"),
])
def test_merge_extra_text_and_json(current, ours, fmt, expect):
    import json as _json

    out = slurm.merge_extra(current, ours, fmt)
    if isinstance(expect, dict):
        assert _json.loads(out) == expect
        assert ", " not in out and ": " not in out  # compact separators
    else:
        assert out == expect


@pytest.mark.parametrize("extra, summary", [
    ("rack=12; gcm ok 2026-11-30T02:00:00Z", "gcm ok 2026-11-30T02:00:00Z"),
    ('{"rack":12,"gcm_health":"degraded","gcm_health_at":"t","gcm_health_failing":"gpu.ecc"}', "gcm degraded t gpu.ecc"),
    ('{"rack":12}', None),
    ("gcm qualified t", None),  # qualification's segment is not the health summary
    (None, None),
])
def test_gcm_summary_reads_both_forms(extra, summary):
    assert slurm.gcm_summary(extra) == summary


def test_json_extra_written_through_the_features_call(tmp_path):
    be = MemoryBackend({"n1": NodeInfo("n1", "IDLE", extra='{"rack":"12"}')})
    out = slurm.apply_features(be, "n1", ["gcm_ok"], "gcm ok 2026-11-30T02:00:00Z", state_dir=str(tmp_path))
    assert out.action == "applied"
    import json as _json

    assert _json.loads(be.nodes["n1"].extra) == {"rack": "12", "gcm_health": "ok", "gcm_health_at": "2026-11-30T02:00:00Z"}


def test_extra_format_setting_travels_with_the_backend(tmp_path):
    be = slurm.backend_from_settings(testing.settings({"slurm.extra_format": "json", "slurm.scontrol": _fake_scontrol(tmp_path, "exit 0\n")}),
                                     dry_run=True, out=io.StringIO())
    assert be.extra_format == "json"
    mem = MemoryBackend({"n1": NodeInfo("n1", "IDLE")})
    mem.extra_format = be.extra_format  # what apply_features reads from any backend
    slurm.apply_features(mem, "n1", ["gcm_ok"], "gcm ok 2026-11-30T02:00:00Z", state_dir=str(tmp_path))
    import json as _json

    assert _json.loads(mem.nodes["n1"].extra)["gcm_health"] == "ok"
    assert slurm.backend_from_settings(testing.settings({"slurm.scontrol": "/nonexistent"}), out=io.StringIO()).extra_format == "auto"
