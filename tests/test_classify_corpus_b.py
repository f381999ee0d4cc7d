"""Shape checks for the real-log corpus ``tests/fixtures/classify_corpus/b.jsonl`` (issue 14).

Every row is an excerpt someone posted in a public thread, labelled by the root
cause the thread shows. These tests only guard the file's shape (it parses, ids are
unique, labels are taxonomy ids, every row names its source, the classes stay
covered); they say nothing about how well the classifier does on it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Dict, List

import pytest

from gcm_checks.classify import corpus
from gcm_checks.classify.corpus import MAX_TEXT_BYTES
from gcm_checks.classify.taxonomy import CATEGORY_IDS

CORPUS = Path(__file__).resolve().parent / "fixtures" / "classify_corpus" / "b.jsonl"
# Floors for this half of the corpus (a.jsonl is the other half); raise them as it grows.
MIN_ROWS = 200
MIN_PER_CLASS = 10
MIN_SOURCES = 90


def load_rows(path: Path) -> List[Dict]:
    rows = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:  # pragma: no cover - message only
                raise AssertionError(f"{path.name}:{n}: not JSON: {e}") from e
    return rows


def shape_problems(rows: List[Dict]) -> List[str]:
    return corpus.shape_problems(rows, "b-")


@pytest.fixture(scope="module")
def rows() -> List[Dict]:
    return load_rows(CORPUS)


def test_rows_have_the_corpus_shape(rows: List[Dict]) -> None:
    assert shape_problems(rows) == []


def test_no_excerpt_is_listed_twice(rows: List[Dict]) -> None:
    texts = Counter(r["text"] for r in rows)
    assert [t[:60] for t, n in texts.items() if n > 1] == []


def test_enough_rows_sources_and_every_class(rows: List[Dict]) -> None:
    counts = Counter(r["label"] for r in rows)
    thin = {c: counts.get(c, 0) for c in CATEGORY_IDS if counts.get(c, 0) < MIN_PER_CLASS}
    assert thin == {}, f"classes under {MIN_PER_CLASS} excerpts: {thin}"
    assert len(rows) >= MIN_ROWS
    assert len({r["source"] for r in rows}) >= MIN_SOURCES


def test_shape_check_catches_broken_rows() -> None:
    good = {"id": "b-x", "label": "gpu_oom", "alt_label": None, "text": "CUDA out of memory",
            "source": "o/r#1", "stack": "pytorch"}
    assert shape_problems([good]) == []
    bad = [dict(good, label="oom"), dict(good, id="x-1"), dict(good, source=""),
           dict(good, alt_label="gpu_oom"), dict(good, text="x" * (MAX_TEXT_BYTES + 1))]
    assert all(shape_problems([row]) for row in bad)
    assert any("duplicate" in p for p in shape_problems([good, good]))
