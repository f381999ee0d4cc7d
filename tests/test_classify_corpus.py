"""The real-log corpus as a whole (every file in the directory) and its sealed split (issue 14).

The split is a pure function of the excerpt's source thread, fixed before any
rule was written: these tests pin it so nobody can move an item between the
sealed and the tuning part after reading it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from gcm_checks.classify.corpus import SEALED, TUNING, load, select, split_of, thread_key
from gcm_checks.classify.taxonomy import CATEGORY_IDS

DIR = Path(__file__).resolve().parent / "fixtures" / "classify_corpus"


@pytest.fixture(scope="module")
def corpus() -> list:
    return load([str(DIR)])


def test_whole_corpus_meets_the_issue_floors(corpus: list) -> None:
    by_class = Counter(r["label"] for r in corpus)
    assert len(corpus) >= 400
    assert min(by_class[c] for c in CATEGORY_IDS) >= 15, by_class
    assert len({thread_key(r["source"]) for r in corpus}) >= 150
    assert len({r["id"] for r in corpus}) == len(corpus)


@pytest.mark.parametrize("words", [
    ("slurm",), ("pbs", "torque", "moab"), ("lsf",), ("k8s", "kube"), ("ray",), ("sky",), ("ddp",), ("fsdp",),
    ("torchrun",), ("deepspeed",), ("megatron",), ("lightning",), ("hf", "huggingface", "trl"), ("jax", "tpu"),
    ("tensorflow", "keras"), ("vllm",), ("glog", "caffe"), ("shell",),
])
def test_every_stack_the_issue_names_is_covered(corpus: list, words: tuple) -> None:
    assert any(any(w in r["stack"].lower() for w in words) for r in corpus), words


def test_split_is_by_source_thread_and_stable() -> None:
    # Pinned: these answers were fixed before any rule was tuned (issue 14).
    assert thread_key("https://github.com/marbl/canu/issues/444") == "marbl/canu#444"
    assert thread_key("marbl/canu#444") == "marbl/canu#444"
    assert thread_key("https://github.com/o/r/pull/7#issuecomment-1") == "o/r#7"
    assert split_of({"id": "x", "source": "https://github.com/marbl/canu/issues/444"}) == split_of("marbl/canu#444")
    assert {split_of(f"o/r#{n}") for n in range(30)} == {SEALED, TUNING}


def test_same_thread_never_straddles_the_split(corpus: list) -> None:
    splits = {}
    for r in corpus:
        splits.setdefault(thread_key(r["source"]), set()).add(split_of(r))
    assert all(len(s) == 1 for s in splits.values())


def test_sealed_part_is_about_a_third(corpus: list) -> None:
    sealed = len(list(select(corpus, SEALED)))
    assert 0.2 < sealed / len(corpus) < 0.45


def test_evaluate_cli_scores_one_split_and_hides_sealed_misses() -> None:
    out = subprocess.run([sys.executable, "-m", "gcm_checks", "classify", "--evaluate", str(DIR), "--split", "sealed",
                          "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["misses"] == []  # never shown for the sealed part
    assert d["n"] == len(list(select(load([str(DIR)]), SEALED)))
    assert 0 <= d["calibration"]["precision"] <= 1 and "baseline_macro_f1" in d
