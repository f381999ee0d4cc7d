"""Classifier throughput: >= 2,000 logs of 10 KB per second on one core (issue 5).

Run:  GCM_BENCH=1 python -m pytest tests/bench/bench_classify.py -s
  or  python tests/bench/bench_classify.py
Numbers go in docs/benchmarks.md, section "Classifier".
"""

from __future__ import annotations

import json
import os
import random
import time

import pytest

from gcm_checks.classify import ClassifyInput, LogText, classify

# Realistic 10 KB logs: training progress lines, then one of several endings.
_PROGRESS = (
    " iteration {i:>8}/  311541 | consumed samples: {s:>12} | elapsed time per iteration (ms): 25593.4 |"
    " learning rate: 9.135E-05 | global batch size:  1024 | lm loss: 2.635663E+00 | loss scale: 131072.0 |"
    " grad norm: 1.723 | number of skipped iterations:   0 | number of nan iterations:   0 |"
)
_ENDINGS = (
    "slurmstepd: error: *** JOB 42 ON node7 CANCELLED AT 2026-01-01T00:00:00 DUE TO TIME LIMIT ***\n",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
    "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nKeyError: 'x'\n",
    "[rank3]:[E ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)\n",
    "{'train_runtime': 896.0, 'train_samples_per_second': 1.1}\n",
    "Fatal Python error: Segmentation fault\n",
    "",
)


def make_logs(n: int, size: int = 10_000, seed: int = 1) -> list:
    rng = random.Random(seed)
    logs = []
    for k in range(n):
        lines = []
        total = 0
        i = rng.randint(1, 10_000)
        while total < size:
            line = _PROGRESS.format(i=i, s=i * 1024)
            lines.append(line)
            total += len(line) + 1
            i += 1
        ending = _ENDINGS[k % len(_ENDINGS)]
        if ending and k % 2:
            # Half the failures end in a deep traceback of distinct lines, the
            # part of a real log that does not collapse into one line class.
            def word() -> str:
                return "".join(rng.choice("abcdefghijklmnop") for _ in range(7))

            frames = "".join(
                f'  File "/opt/conda/lib/python3.10/site-packages/{word()}/{word()}.py", '
                f"line {rng.randint(1, 999)}, in {word()}\n    result = self.{word()}(x, y)\n" for _ in range(40))
            ending = "Traceback (most recent call last):\n" + frames + ending
        tail = ending
        text = "\n".join(lines) + "\n"
        logs.append(text[-(size - len(tail)):] + tail)
    return logs


def measure(n: int = 4000) -> dict:
    logs = make_logs(n)
    inputs = [ClassifyInput(logs=[LogText("stdout", t)]) for t in logs]
    classify(inputs[0])  # compile the rules outside the timed loop
    t0 = time.process_time()
    for inp in inputs:
        classify(inp)
    cpu = time.process_time() - t0
    return {"logs": n, "bytes_each": len(logs[0]), "cpu_s": round(cpu, 3), "logs_per_s": round(n / cpu)}


def measure_worst(n: int = 1000) -> dict:
    """Every line distinct, not a frame, and full of rule keywords ("error", "nan")."""
    rng = random.Random(2)

    def word() -> str:
        return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8))

    logs = []
    for _ in range(n):
        lines, total = [], 0
        while total < 10_000:
            line = f"{word()} {word()} error {word()} nan {word()} {word()} {word()} {word()}: {word()}"
            lines.append(line)
            total += len(line) + 1
        logs.append("\n".join(lines)[:10_000] + "\nKeyError: x\n")
    inputs = [ClassifyInput(logs=[LogText("stdout", t)]) for t in logs]
    classify(inputs[0])
    t0 = time.process_time()
    for inp in inputs:
        classify(inp)
    cpu = time.process_time() - t0
    return {"worst_case_logs": n, "cpu_s": round(cpu, 3), "logs_per_s": round(n / cpu)}


def measure_adversarial() -> dict:
    """Every rule keyword repeated along one 200 KB line, then as 6,000 distinct lines.

    Guards the bounded repetitions in rules.py: an unbounded ``.*`` after each
    of thousands of keyword occurrences took 30 s here.
    """
    from gcm_checks.classify.rules import RULES

    rng = random.Random(3)
    kws = sorted({k for r in RULES for k in r.keywords})
    worst = 0.0
    for kw in kws:
        line = (kw + " Ab.Cd: *** JOB 1 ON n Error: ") * (200_000 // (len(kw) + 30))
        t0 = time.process_time()
        classify(ClassifyInput(logs=[LogText("stdout", line)]))
        worst = max(worst, time.process_time() - t0)
    soup = "\n".join(f"{rng.choice(kws)} {rng.random()} {rng.choice(kws)} Error: {rng.choice(kws)}" for _ in range(6000))
    t0 = time.process_time()
    classify(ClassifyInput(logs=[LogText("stdout", soup)]))
    return {"worst_single_line_s": round(worst, 3), "keyword_soup_s": round(time.process_time() - t0, 3)}


@pytest.mark.bench
@pytest.mark.skipif(os.environ.get("GCM_BENCH") != "1", reason="benchmarks run with GCM_BENCH=1")
def test_classify_throughput() -> None:
    r = measure()
    print(json.dumps(r))
    assert r["logs_per_s"] >= 2000, r


if __name__ == "__main__":
    print(json.dumps(measure()))
    print(json.dumps(measure_worst()))
    print(json.dumps(measure_adversarial()))
