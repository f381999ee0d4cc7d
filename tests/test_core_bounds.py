"""Every size and state a user or a fault controls is bounded (issue 12 item 9)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gcm_checks import state
from gcm_checks.notify.outbox import Outbox, file_name

REPO = Path(__file__).resolve().parent.parent
AS_ROOT = os.geteuid() == 0


def _cfg(tmp_path, extra=""):
    c = tmp_path / "gcm.yaml"
    c.write_text(f"log_path: {tmp_path}/log/gcm.jsonl\nstate_dir: {tmp_path}/state\nbudget_s: 6\ngpu: {{count: 8}}\n"
                 f"report: {{spool_dir: {tmp_path}/spool, report_dir: {tmp_path}/reports, outbox_dir: {tmp_path}/outbox}}\n"
                 + extra)
    return c


def gcm(*args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "gcm_checks", *args], capture_output=True, text=True, env=e,
                          timeout=90, cwd=str(REPO))


# ---------------------------------------------------------------- JSON depth


def test_deep_json_is_refused_without_recursion(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 200000 + "]" * 200000)
    with pytest.raises(ValueError, match="deeper"):
        state.load_json(p)
    assert state.read_json(p) is None
    assert state.json_depth('{"a": "[[[[[[", "b": [1, [2]]}') == 3  # brackets in strings do not count


def test_state_files_nested_absurdly_deep_do_not_end_the_health_run(tmp_path):
    c = _cfg(tmp_path)
    sd = tmp_path / "state"
    sd.mkdir(mode=0o755)
    deep = "{\"a\":" * 100000 + "1" + "}" * 100000
    from gcm_checks.checks.ib import BASELINE_FILE
    from gcm_checks.xid.scan import STATE_HISTORY, STATE_LAST_SCAN

    for name in ("slurm-drain.node1.json", "slurm-features.node1.json", "would-drain.node1.json", BASELINE_FILE,
                 STATE_HISTORY, STATE_LAST_SCAN):
        (sd / name).write_text(deep)
    klog = tmp_path / "kern.log"
    klog.write_text("")
    # Real (non-simulated) code path: the XID scan reads its last-scan mark.
    c.write_text(f"log_path: {tmp_path}/log/gcm.jsonl\nstate_dir: {sd}\nbudget_s: 6\n"
                 f"xid: {{source: file, kernel_log_path: {klog}}}\ninfiniband: {{sysfs_root: {tmp_path}/nosys}}\n")
    p = gcm("health", "--config", str(c), "--dry-run", "--json", "--node", "node1")
    assert p.returncode == 0, p.stderr
    assert "RecursionError" not in p.stderr + p.stdout
    doc = json.loads(p.stdout)
    assert not [r for r in doc["results"] if r["check"].startswith("xid.") and r["status"] == "unknown"], doc["results"]


# ---------------------------------------------------------------- unsafe dirs


@pytest.mark.skipif(not AS_ROOT, reason="the directory rule applies to root")
def test_world_writable_state_dir_is_refused_loudly_never_a_drain(tmp_path):
    sd = tmp_path / "state"
    sd.mkdir()
    os.chmod(sd, 0o777)
    c = _cfg(tmp_path)
    p = gcm("prolog", "--config", str(c), "--sim", "healthy", "--json", env={"SLURM_JOB_ID": "5", "SLURMD_NODENAME": "node1"})
    assert p.returncode == 0, p.stderr
    assert "REFUSED state_dir" in p.stderr and "writable by group or others" in p.stderr
    assert not (sd / "jobs").exists()  # nothing written where a user could plant a symlink
    log = [json.loads(x) for x in (tmp_path / "log" / "gcm.jsonl").read_text().splitlines()]
    assert any(e["event"] == "unsafe_dir" and e["level"] == "error" for e in log)


@pytest.mark.skipif(not AS_ROOT, reason="the directory rule applies to root")
def test_state_dir_owned_by_a_user_is_refused(tmp_path):
    sd = tmp_path / "state"
    sd.mkdir()
    os.chown(sd, 65534, 65534)
    assert "owned by uid 65534" in state.unsafe_dir(str(sd))
    os.chown(sd, 0, 0)
    os.chmod(sd, 0o755)
    assert state.unsafe_dir(str(sd)) is None
    assert state.unsafe_dir(str(sd / "not-yet")) is None  # we create it ourselves


# ---------------------------------------------------------------- outbox


def _item(box: Outbox, key: str) -> None:
    assert box.enqueue(key, "mail", {"subject": key})


def test_bad_outbox_items_are_quarantined_and_the_rest_delivered(tmp_path):
    root = tmp_path / "outbox"
    box = Outbox(str(root))
    _item(box, "job-1")
    _item(box, "job-2")
    pending = root / "pending"
    (pending / "empty-000000000000.json").write_bytes(b"")
    (pending / "junk-000000000000.json").write_bytes(b"\x00\xffnot json")
    (pending / "deep-000000000000.json").write_text("[" * 100000 + "]" * 100000)
    forged = {"key": "job-9", "channel": "mail", "payload": {"to": "victim@example.org"}, "attempts": 0,
              "next_attempt_at": 0, "created_at": 0}
    (pending / "forged-000000000000.json").write_text(json.dumps(forged))  # its name is not its key's
    (pending / file_name("job-3")).write_text(json.dumps({**forged, "key": "job-3", "next_attempt_at": float("inf")}))
    sent = []
    summary = box.flush(lambda item, timeout: sent.append(item["key"]), budget_s=10)
    assert sorted(sent) == ["job-1", "job-2"]
    why = {q["name"]: q["why"] for q in summary.quarantined}
    assert set(why) == {"empty-000000000000.json", "junk-000000000000.json", "deep-000000000000.json",
                        "forged-000000000000.json", file_name("job-3")}
    assert "forged" in why["forged-000000000000.json"] and why["empty-000000000000.json"] == "empty"
    assert len(list((root / "quarantine").iterdir())) == 5 and not list(pending.glob("*.json"))
    # the next flush is clean
    assert box.flush(lambda item, timeout: None, budget_s=10).quarantined == []


@pytest.mark.skipif(not AS_ROOT, reason="the directory rule applies to root")
def test_outbox_others_can_write_is_refused_and_nothing_is_sent(tmp_path):
    root = tmp_path / "outbox"
    box = Outbox(str(root))
    _item(box, "job-1")
    os.chmod(root / "pending", 0o777)
    sent = []
    summary = box.flush(lambda item, timeout: sent.append(item), budget_s=5)
    assert sent == [] and "writable by group or others" in summary.refused


@pytest.mark.skipif(not AS_ROOT, reason="ownership is judged as root")
def test_outbox_item_owned_by_a_user_is_forged(tmp_path):
    root = tmp_path / "outbox"
    box = Outbox(str(root))
    _item(box, "job-1")
    os.chown(root / "pending" / file_name("job-1"), 65534, 65534)
    sent = []
    summary = box.flush(lambda item, timeout: sent.append(item), budget_s=5)
    assert sent == [] and "not root" in summary.quarantined[0]["why"]


# ---------------------------------------------------------------- gcm-run


def test_gcm_progress_infinity_never_crashes_gcm_run_or_changes_its_status(tmp_path):
    from gcm_checks.wrapper.comment import format_comment
    from gcm_checks.wrapper.progress import ChunkScanner, Tracker, parse_gcm

    ev = parse_gcm('GCM_PROGRESS {"eta_s": Infinity, "step": 1e400, "total": 10, "rate": NaN, "loss": Infinity}')
    assert ev.eta_s is None and ev.step is None and ev.rate is None and ev.loss == float("inf")
    assert parse_gcm("GCM_PROGRESS " + "[" * 100000 + "]" * 100000) is None
    t = Tracker()
    ChunkScanner(t).feed(b'GCM_PROGRESS {"eta_s": Infinity, "step": 3, "total": 10}\n', 1.0, 1.0)
    assert "step 3/10" in format_comment(t.snap)  # was OverflowError in fmt_duration(inf)
    child = tmp_path / "child.py"
    child.write_text('import sys\nprint(\'GCM_PROGRESS {"eta_s": Infinity, "step": 2, "total": 4}\', flush=True)\n'
                     'print("GCM_PROGRESS " + "[" * 50000, flush=True)\nsys.exit(3)\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    env.update(PYTHONPATH=str(REPO), GCM_RUN_COMMENT_INTERVAL="0")
    p = subprocess.run([sys.executable, "-m", "gcm_checks.gcm_run_cli", "--log", str(tmp_path / "r.log"), "--notify", "never",
                        "--", sys.executable, str(child)], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 3, p.stderr  # the child's status, untouched


# ---------------------------------------------------------------- pattern widths


def test_stdout_pattern_width_is_capped():
    from gcm_checks.report.model import expand_stdio

    out = expand_stdio("/x/%999999999j-%3j-%x.out", job_id="42", user="u", name="n", node="h")
    assert out == "/x/0000000042-042-n.out"
    assert len(expand_stdio("/x/" + "%9j" * 5000, job_id="1", user="u", name="n", node="h")) <= 4096


def test_huge_stdout_pattern_width_through_the_real_epilog(tmp_path):
    c = _cfg(tmp_path)
    env = {"SLURM_JOB_ID": "42", "SLURMD_NODENAME": "node1", "SLURM_JOB_USER": "root", "SLURM_JOB_UID": "0",
           "SLURM_JOB_STDOUT": str(tmp_path / "out-%999999999j.log"), "SLURM_JOB_EXIT_CODE2": "1:0"}
    p = gcm("epilog", "--config", str(c), "--sim", "healthy", "--dry-run", env=env)
    assert p.returncode == 0, p.stderr[-2000:]
