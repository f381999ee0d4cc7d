"""`gcm-checks install` / `uninstall` (issue 12 item 6), config discovery for
a health check without SLURM_CONF, and `gcm-checks inventory` (item 8)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gcm_checks import config
from gcm_checks.commands import install as inst

REPO = Path(__file__).resolve().parent.parent


def gcm(*args, env=None, timeout=60):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "GCM_CHECKS_"))}
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "gcm_checks", *args], capture_output=True, text=True, env=e,
                          timeout=timeout, cwd=str(REPO))


@pytest.fixture
def site():
    """A slurm.conf outside /etc/slurm and a fake gcm-checks every user can run
    that records how the entry scripts called it. Not under pytest's tmp_path:
    its base directory is 0700, which install rightly refuses."""
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="gcm-install-", dir="/tmp"))
    try:
        yield _site(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "slurm.conf").write_text("ClusterName=t\n")
    binp = root / "venv" / "bin" / "gcm-checks"
    binp.parent.mkdir(parents=True)
    binp.write_text(f"#!/bin/sh\necho \"$1|$GCM_CHECKS_CONFIG|$SLURM_CONF\" >> {root}/calls\n")
    binp.chmod(0o755)
    for d in (tmp_path, root, root / "etc", root / "venv", binp.parent):
        d.chmod(0o755)
    return root


def _install(site, *extra):
    return gcm("install", "--slurm-conf", str(site / "etc" / "slurm.conf"), "--bin", str(site / "venv/bin/gcm-checks"), *extra)


def test_install_writes_scripts_config_and_prints_the_slurm_conf_lines(site):
    p = _install(site)
    assert p.returncode == 0, p.stderr
    etc = site / "etc"
    for path in (etc / "prolog.d/50-gcm-checks", etc / "epilog.d/50-gcm-checks", etc / "gcm-checks-health"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o755
    cfg = config.parse_file(str(etc / "gcm-checks.yaml"))
    assert cfg == {"report_only": True}  # first rollout: report only
    assert f"Prolog={etc}/prolog.d/*" in p.stdout and f"HealthCheckProgram={etc}/gcm-checks-health" in p.stdout
    assert "HealthCheckNodeState=ANY" in p.stdout


def test_installed_scripts_run_this_binary_with_this_config_and_no_environment(site):
    assert _install(site).returncode == 0
    etc = site / "etc"
    for kind, path in (("prolog", etc / "prolog.d/50-gcm-checks"), ("epilog", etc / "epilog.d/50-gcm-checks"),
                       ("health", etc / "gcm-checks-health")):
        # slurmd's environment for a health check: no PATH, no SLURM_CONF.
        r = subprocess.run([str(path)], env={"SLURMD_NODENAME": "n1"}, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
    calls = (site / "calls").read_text().splitlines()
    conf = f"{etc}/gcm-checks.yaml|{etc}/slurm.conf"
    assert calls == [f"prolog|{conf}", f"epilog|{conf}", f"health|{conf}"]


def test_scripts_are_the_shipped_ones_with_paths_added(site):
    assert _install(site).returncode == 0
    body = (site / "etc/prolog.d/50-gcm-checks").read_text()
    shipped = (REPO / "prolog.d/50-gcm-checks").read_text()
    assert body.startswith("#!") and inst.MARK_BEGIN in body
    assert body.replace(body[body.index(inst.MARK_BEGIN):body.index(inst.MARK_END) + len(inst.MARK_END) + 1], "") == shipped


def test_existing_config_is_kept(site):
    (site / "etc/gcm-checks.yaml").write_text("budget_s: 7\n")
    p = _install(site)
    assert p.returncode == 0 and "keep" in p.stdout
    assert (site / "etc/gcm-checks.yaml").read_text() == "budget_s: 7\n"


def test_prefix_puts_scripts_elsewhere_and_config_beside_slurm_conf(site):
    prefix = site.parent / "opt"
    assert _install(site, "--prefix", str(prefix)).returncode == 0
    assert (prefix / "prolog.d/50-gcm-checks").exists() and (site / "etc/gcm-checks.yaml").exists()
    assert f"GCM_CHECKS_CONFIG:-{site}/etc/gcm-checks.yaml" in (prefix / "gcm-checks-health").read_text()


def test_root_only_interpreter_is_refused_and_nothing_written(site):
    tmp_path = site.parent
    private = tmp_path / "root-home" / ".pyenv"
    private.mkdir(parents=True)
    py = private / "python3"
    py.symlink_to("/bin/sh")
    (tmp_path / "root-home").chmod(0o700)
    (site / "venv/bin/python3").symlink_to(py)
    b = site / "venv/bin/gcm-checks"
    b.write_text(f"#!{site}/venv/bin/python3\n")
    p = _install(site)
    assert p.returncode == 1
    assert f"{tmp_path / 'root-home'} is mode 0700" in p.stderr
    assert not (site / "etc/prolog.d").exists() and not (site / "etc/gcm-checks.yaml").exists()
    assert _install(site, "--force").returncode == 0


def test_world_runnable_table(site):
    f = site / "venv/bin/gcm-checks"
    assert inst.world_runnable(str(f)) == []
    f.chmod(0o750)
    assert inst.world_runnable(str(f)) == [f"{f} is mode 0750: other users cannot run it"]
    f.chmod(0o755)
    (site / "venv").chmod(0o750)
    assert inst.world_runnable(str(f)) == [f"{site / 'venv'} is mode 0750: other users cannot enter it"]
    (site / "venv").chmod(0o755)
    link = site / "link"
    link.symlink_to(f)  # a link is judged by where it leads
    assert inst.world_runnable(str(link)) == []


def test_non_executable_file_in_prolog_d_is_refused(site):
    (site / "etc/prolog.d").mkdir()
    (site / "etc/prolog.d/README").write_text("notes\n")
    p = _install(site)
    assert p.returncode == 1 and "README" in p.stderr and "not an executable" in p.stderr
    assert not (site / "etc/prolog.d/50-gcm-checks").exists()


def test_unsafe_path_is_refused(site):
    tmp_path = site.parent
    odd = tmp_path / "my etc"
    odd.mkdir()
    (odd / "slurm.conf").write_text("")
    p = gcm("install", "--slurm-conf", str(odd / "slurm.conf"), "--bin", str(site / "venv/bin/gcm-checks"))
    assert p.returncode == 1 and "plain absolute paths" in p.stderr


def test_failed_install_leaves_no_empty_prolog_d(site):
    (site / "etc/epilog.d").write_text("a file where a directory must go\n")
    p = _install(site)
    assert p.returncode == 1 and "undone" in p.stderr
    assert not (site / "etc/prolog.d").exists()


def test_dry_run_changes_nothing(site):
    p = _install(site, "--dry-run")
    assert p.returncode == 0 and "would write" in p.stdout
    assert sorted(x.name for x in (site / "etc").iterdir()) == ["slurm.conf"]


def test_uninstall_refuses_while_slurm_conf_runs_the_scripts(site):
    assert _install(site).returncode == 0
    conf = site / "etc/slurm.conf"
    conf.write_text(f"ClusterName=t\nProlog={site}/etc/prolog.d/*\nHealthCheckProgram={site}/etc/gcm-checks-health\n")
    p = gcm("uninstall", "--slurm-conf", str(conf))
    assert p.returncode == 1 and "scontrol reconfigure" in p.stderr and "Prolog=" in p.stderr
    assert (site / "etc/prolog.d/50-gcm-checks").exists()


def test_uninstall_never_leaves_an_empty_prolog_d(site):
    assert _install(site).returncode == 0
    other = site / "etc/epilog.d/10-site"
    other.write_text("#!/bin/sh\nexit 0\n")
    other.chmod(0o755)
    p = gcm("uninstall", "--slurm-conf", str(site / "etc/slurm.conf"))
    assert p.returncode == 0, p.stderr
    assert [x.name for x in (site / "etc/prolog.d").iterdir()] == [inst.NOOP_NAME]
    assert os.access(site / "etc/prolog.d" / inst.NOOP_NAME, os.X_OK)
    assert [x.name for x in (site / "etc/epilog.d").iterdir()] == ["10-site"]  # not empty: no no-op needed
    assert not (site / "etc/gcm-checks-health").exists()
    assert (site / "etc/gcm-checks.yaml").exists()  # kept unless --remove-config


def test_uninstall_keeps_a_script_it_did_not_write(site):
    d = site / "etc/prolog.d"
    d.mkdir()
    (d / "50-gcm-checks").write_text("#!/bin/sh\n# hand-made\n")
    (d / "50-gcm-checks").chmod(0o755)
    p = gcm("uninstall", "--slurm-conf", str(site / "etc/slurm.conf"))
    assert p.returncode == 1 and "not written by gcm-checks install" in p.stderr
    assert (d / "50-gcm-checks").exists()


def test_config_found_in_known_slurm_dirs_without_slurm_conf(tmp_path, monkeypatch):
    dirs = [tmp_path / n for n in ("etc-slurm", "run-slurm-conf", "usr-local-etc-slurm", "etc-slurm-llnl")]
    monkeypatch.setattr(config, "SLURM_CONF_DIRS", tuple(str(d) for d in dirs))
    for d in dirs:
        d.mkdir()
    assert config.find_config(None, {}) in (None, "/etc/gcm-checks/config.yaml")
    (dirs[3] / "gcm-checks.yaml").write_text("budget_s: 3\n")
    assert config.find_config(None, {}) == str(dirs[3] / "gcm-checks.yaml")
    (dirs[1] / "gcm-checks.yaml").write_text("budget_s: 4\n")  # configless cache beats a later dir
    assert config.find_config(None, {}) == str(dirs[1] / "gcm-checks.yaml")
    assert config.find_config(None, {"GCM_CHECKS_CONFIG": "/x.yaml"}) == "/x.yaml"


def test_known_dirs_cover_the_packagings():
    assert {"/etc/slurm", "/run/slurm/conf", "/usr/local/etc/slurm", "/etc/slurm-llnl"} <= set(config.SLURM_CONF_DIRS)


# ---------------------------------------------------------------- inventory


def test_inventory_text_names_what_is_on_the_bus():
    p = gcm("inventory", "--sim", "hca-missing", "--node", "n1")
    assert p.returncode == 0, p.stderr
    assert "8 NVIDIA GPUs (8x 0x2330), nvidia module loaded; 8 InfiniBand HCAs" in p.stdout
    assert "HCA 0000:7c:00.0 (0x1021): no InfiniBand device" in p.stdout
    assert "NVML: 8 GPUs, driver 550.54.15" in p.stdout


def test_inventory_json():
    doc = json.loads(gcm("inventory", "--sim", "gpu-missing", "--json").stdout)
    assert len(doc["pci"]["gpus"]) == 8 and doc["nvml"]["count"] == 7 and len(doc["infiniband"]) == 8


def test_inventory_yaml_is_a_valid_config_that_pins_the_node(tmp_path):
    p = gcm("inventory", "--sim", "ib-port-down", "--yaml", "--node", "n1")
    snippet = tmp_path / "pin.yaml"
    snippet.write_text(p.stdout)
    data = config.parse_file(str(snippet))
    assert data["gpu"] == {"count": 8}
    assert [e["device"] for e in data["infiniband"]["expected"]] == [f"mlx5_{i}" for i in range(8) if i != 3]
    assert all(e["rate_gbps"] == 400 for e in data["infiniband"]["expected"])
    assert "mlx5_3 port 1 is DOWN" in p.stdout


def test_pinned_inventory_wins_over_zero_config(tmp_path):
    pin = tmp_path / "c.yaml"
    pin.write_text(gcm("inventory", "--sim", "healthy", "--yaml").stdout
                   + f"log_path: {tmp_path}/l.jsonl\nstate_dir: {tmp_path}/s\n")
    doc = json.loads(gcm("prolog", "--config", str(pin), "--sim", "ib-port-down", "--json", "--dry-run").stdout)
    fails = {r["check"] for r in doc["results"] if r["status"] == "fail"}
    assert "ib.port.state" in fails and "ib.port.rail" not in fails  # listed port judged; rail rule silent


def test_install_config_path_names_where_the_config_goes(tmp_path):
    """--config PATH (the flag every command takes): the scripts point at it
    and the first, report-only config is written there."""
    import argparse

    from gcm_checks.commands import install

    conf = tmp_path / "etc" / "slurm.conf"
    conf.parent.mkdir()
    conf.write_text("ClusterName=x\n")
    other = tmp_path / "cfg" / "site.yaml"
    args = argparse.Namespace(slurm_conf=str(conf), prefix=None, bin=None, config=str(other))
    assert install._plan(args)[2] == other
    args.config = None
    assert install._plan(args)[2] == conf.parent / install.CONFIG_NAME
