"""The textfiles as the real node_exporter reads them (Debian's
prometheus-node-exporter; skipped when it is not installed).

node_exporter merges every *.prom file of the directory; a series found in
two files is logged as "collected before with the same name and label
values" and one of the values is silently dropped - the issue 17 complaint
about gcm_node_drained written by three modes. The control case shows the
check can fail; the real prolog, health and epilog processes must not trip
it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

EXPORTER = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
pytestmark = pytest.mark.skipif(EXPORTER is None, reason="prometheus-node-exporter not installed (apt-get install prometheus-node-exporter)")
REPO = Path(__file__).resolve().parent.parent
DUPLICATE = "was collected before with the same name and label values"


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def scrape(directory, tmp_path):
    """(metrics text, node_exporter's log) after one scrape of ``directory``."""
    port = _free_port()
    log = tmp_path / f"node_exporter.{port}.log"
    with open(log, "w") as out:
        p = subprocess.Popen([EXPORTER, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
                              "--collector.textfile", f"--collector.textfile.directory={directory}"],
                             stdout=out, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 15
        text = None
        while time.monotonic() < end and text is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    text = r.read().decode()
            except OSError:
                time.sleep(0.1)
        assert text is not None, log.read_text()
    finally:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)
    return text, log.read_text()


def test_control_the_old_layout_is_caught(tmp_path):
    d = tmp_path / "old"
    d.mkdir()
    for mode, value in (("prolog", 0), ("health", 1)):
        (d / f"gcm_checks_{mode}.prom").write_text(
            f'# HELP gcm_node_drained x\n# TYPE gcm_node_drained gauge\ngcm_node_drained{{node="n"}} {value}\n')
    text, log = scrape(d, tmp_path)
    assert DUPLICATE in log
    assert text.count('gcm_node_drained{node="n"}') == 1  # one of the two values is gone


def test_files_of_every_mode_scrape_cleanly(tmp_path):
    prom = tmp_path / "prom"
    cfg = tmp_path / "gcm.yaml"
    cfg.write_text(
        f"log_path: {tmp_path}/log.jsonl\nstate_dir: {tmp_path}/state\nbudget_s: 8\n"
        f"report: {{spool_dir: {tmp_path}/spool, report_dir: {tmp_path}/reports}}\n"
        f"notify: {{outbox_dir: {tmp_path}/outbox}}\nepilog: {{query_job: false}}\ngpu: {{count: 8}}\n"
        f"telemetry: {{prometheus_textfile_dir: {prom}}}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    env.update({"SLURMD_NODENAME": "node1", "SLURM_JOB_USER": "root", "SLURM_JOB_UID": "0", "SLURM_JOB_GID": "0",
                "SLURM_JOB_NODELIST": "node1", "SLURM_JOB_EXIT_CODE2": "0:0", "SLURM_JOB_EXIT_CODE": "0",
                "SLURM_JOB_DERIVED_EC": "0", "SLURM_JOB_GPUS": "0,1"})
    for mode, job in (("prolog", "11"), ("prolog", "12"), ("health", None), ("epilog", "11"), ("health", None)):
        e = dict(env, **({"SLURM_JOB_ID": job} if job else {}))
        subprocess.run([sys.executable, "-m", "gcm_checks", mode, "--config", str(cfg), "--dry-run", "--sim",
                        "healthy"], env=e, cwd=str(REPO), capture_output=True, timeout=90, check=False)
    text, log = scrape(prom, tmp_path)
    assert DUPLICATE not in log and "level=error" not in log, log
    assert "node_textfile_scrape_error 0" in text
    for series in ('gcm_node_verdict{mode="health",node="node1"}', 'gcm_node_verdict{mode="prolog",node="node1"}',
                   'gcm_node_verdict{mode="epilog",node="node1"}', 'gcm_node_drained{node="node1"} 0',
                   'gcm_job_info{gpu="1",job="12",node="node1"} 1', 'gcm_gpu_temperature_celsius{gpu="7",node="node1"}',
                   'gcm_ib_port_active{device="mlx5_7",node="node1",port="1"} 1'):
        assert series in text, series
    assert 'job="11"' not in text  # the ended job's GPUs are no longer tied to it
