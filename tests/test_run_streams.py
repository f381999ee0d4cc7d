"""The pump keeps one line buffer per stream: a Hugging Face-style child (bar
redraws on stderr with no newline, loss dicts on stdout) is followed, through
pipes and through ptys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable

HF_CHILD = r"""
import sys, time
for step in range(1, 41):
    sys.stderr.write(f"\r{100 * step // 40:3d}%|#####     | {step}/40 [00:01<00:01, 20.00it/s]")
    sys.stderr.flush()
    if step % 10 == 0:
        print({"loss": round(2.0 / step, 4), "grad_norm": 1.25, "learning_rate": 5e-05 * (1 - step / 40), "epoch": step / 40}, flush=True)
    time.sleep(0.03)
sys.stderr.write("\n")
"""


@pytest.mark.parametrize("pty", ["never", "always"])
def test_hf_trainer_bar_and_loss_dicts_on_two_streams(tmp_path, pty):
    import pty as ptymod

    env = dict(os.environ, PYTHONPATH=str(REPO), GCM_RUN_INDEX=str(tmp_path / "idx"))
    env.pop("SLURM_JOB_ID", None)
    out = err = subprocess.DEVNULL
    fds = []
    if pty == "always":
        m1, s1 = ptymod.openpty()
        m2, s2 = ptymod.openpty()
        out, err, fds = s1, s2, [m1, m2, s1, s2]
    r = subprocess.run([PY, "-m", "gcm_checks.gcm_run_cli", "--log", str(tmp_path / "hf.log"), "--notify", "never",
                        "--pty", pty, "--", PY, "-c", HF_CHILD], env=env, cwd=tmp_path, stdout=out, stderr=err, timeout=60)
    for fd in fds:
        os.close(fd)
    assert r.returncode == 0
    rep = json.loads((tmp_path / "hf.log.report.json").read_text())
    p = rep["progress"]
    assert (p["step"], p["total"]) == (40, 40)
    assert p["loss"] == 0.05 and p["metrics"]["grad_norm"] == 1.25 and p["metrics"]["learning_rate"] == 0.0
    # One point per scan: under load two dicts may share a scan, so the
    # history is the expected series with at most some points left out.
    hist = [pt[2] for pt in p["history"]["loss"]]
    assert len(hist) >= 2 and hist[-1] == 0.05 and all(v in (0.2, 0.1, 0.0667, 0.05) for v in hist)
    assert hist == sorted(hist, reverse=True)
