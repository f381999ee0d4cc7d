"""Shape checks for the fresh real-log batch ``tests/fixtures/classify_corpus/c.jsonl`` (issue 14).

c.jsonl was gathered after a.jsonl and b.jsonl had been read many times while the
rules were written, by someone who never read the rules and never ran the
classifier on it: it is the part of the corpus nobody here has tuned against.
What makes it worth that is that none of its source threads appears in a.jsonl
or b.jsonl (a near-copy of a seen thread would leak the answer), so that is
checked here together with the file's shape and the class floors it was
gathered to meet. These tests say nothing about how well the classifier does.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Dict, List

import pytest

from gcm_checks.classify import corpus
from gcm_checks.classify.corpus import MAX_TEXT_BYTES, load, thread_key
from gcm_checks.classify.taxonomy import CATEGORY_IDS

DIR = Path(__file__).resolve().parent / "fixtures" / "classify_corpus"
CORPUS = DIR / "c.jsonl"
MIN_ROWS = 180
MIN_SOURCES = 150
# The classes the classifier was weakest on when c.jsonl was gathered get more rows.
WEAK = ("network_fabric", "preempted", "cancelled_user", "success", "unknown", "import_env", "host_oom",
        "segfault_signal", "gpu_hardware", "node_failure", "timeout_walltime")
MIN_WEAK = 12
MIN_OTHER = 6


def shape_problems(rows: List[Dict], seen_threads: "set[str]") -> List[str]:
    return corpus.shape_problems(rows, "c-", seen_threads)


@pytest.fixture(scope="module")
def rows() -> List[Dict]:
    return load([str(CORPUS)])


@pytest.fixture(scope="module")
def seen_threads() -> "set[str]":
    return {thread_key(r["source"]) for r in load([str(DIR / "a.jsonl"), str(DIR / "b.jsonl")])}


def test_rows_have_the_corpus_shape_and_unseen_sources(rows: List[Dict], seen_threads: "set[str]") -> None:
    assert shape_problems(rows, seen_threads) == []


def test_enough_rows_sources_and_weak_classes(rows: List[Dict]) -> None:
    counts = Counter(r["label"] for r in rows)
    floors = {c: (MIN_WEAK if c in WEAK else MIN_OTHER) for c in CATEGORY_IDS}
    thin = {c: counts.get(c, 0) for c, floor in floors.items() if counts.get(c, 0) < floor}
    assert thin == {}, f"classes under their floor: {thin}"
    assert len(rows) >= MIN_ROWS
    assert len({thread_key(r["source"]) for r in rows}) >= MIN_SOURCES


def test_ids_unique_across_the_whole_corpus() -> None:
    ids = Counter(r["id"] for r in load([str(DIR)]))
    assert [i for i, n in ids.items() if n > 1] == []


def test_shape_check_catches_broken_rows() -> None:
    good = {"id": "c-x", "label": "gpu_oom", "alt_label": None, "text": "CUDA out of memory",
            "source": "https://github.com/o/r/issues/1", "stack": "pytorch"}
    assert shape_problems([good], set()) == []
    bad = [dict(good, label="oom"), dict(good, id="b-1"), dict(good, source=""),
           dict(good, alt_label="gpu_oom"), dict(good, text="x" * (MAX_TEXT_BYTES + 1))]
    assert all(shape_problems([row], set()) for row in bad)
    assert any("already in another" in p for p in shape_problems([good], {"o/r#1"}))
    assert any("duplicate text" in p for p in shape_problems([good, dict(good, id="c-y")], set()))
