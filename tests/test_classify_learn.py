"""The nearest-excerpt fallback (issue 14, item 7): trainable, explainable, off by default."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gcm_checks.classify import ClassifyInput, LogText, classify, engine, learn

RECS = [
    {"id": "t1", "label": "preempted", "text": "spot node reclaimed by provider, workload moved away from node alpha"},
    {"id": "t2", "label": "preempted", "text": "spot node reclaimed by provider, workload moved away from node beta"},
    {"id": "t3", "label": "success", "text": "all shards written, workload summary uploaded, goodbye from node alpha"},
    {"id": "t4", "label": "success", "text": "all shards written, workload summary uploaded, goodbye from node gamma"},
] + [{"id": f"f{i}", "label": "unknown", "text": f"filler line number {i} about nothing in particular"}
     for i in range(8)]


def test_neighbours_name_the_excerpt_and_the_shared_words() -> None:
    model = learn.train(RECS)
    got = learn.predict(model, "the spot node was reclaimed by provider tonight", min_similarity=0.1)
    assert got is not None
    label, sim, why = got
    assert label == "preempted" and 0 < sim <= 1
    assert ("t1" in why or "t2" in why) and "reclaimed" in why


def test_no_guess_below_the_threshold() -> None:
    model = learn.train(RECS)
    assert learn.predict(model, "completely unrelated words here", min_similarity=0.5) is None


def test_off_by_default_and_only_for_logs_no_rule_claims(monkeypatch) -> None:
    text = "spot node reclaimed by provider, workload moved away"
    assert engine.NEIGHBOURS_MIN_SIMILARITY is None
    assert classify(ClassifyInput(logs=[LogText("log", text)])).rule == "fallback.no_evidence"
    monkeypatch.setattr(engine, "NEIGHBOURS_MIN_SIMILARITY", 0.1)
    monkeypatch.setattr(learn, "_MODEL", learn.train(RECS))
    r = classify(ClassifyInput(logs=[LogText("log", text)]))
    assert (r.category, r.rule) == ("preempted", "learned.neighbours") and r.confidence <= 0.5
    assert "nearest labelled excerpt" in r.evidence[0].text
    # A log a rule claims is never second-guessed.
    assert classify(ClassifyInput(logs=[LogText("log", "torch.OutOfMemoryError: CUDA out of memory.")])).rule == "cuda.oom"


def test_shipped_model_is_small_and_retrainable(tmp_path: Path) -> None:
    assert learn.DATA.endswith("classify_knn.json") and Path(learn.DATA).stat().st_size < 2 << 20
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({**r, "source": f"o/r#{i}"}) + "\n" for i, r in enumerate(RECS)))
    out = tmp_path / "m.json"
    res = subprocess.run([sys.executable, "-m", "gcm_checks.classify.learn", str(corpus), "--all", "--out", str(out)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(out.read_text())["docs"]
