"""The learned fallback (issue 14, item 7): trainable, deterministic, explainable,
never trained on sealed rows, off by default until cross-validation says it pays."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gcm_checks.classify import ClassifyInput, LogText, classify, engine, learn, learn_train
from gcm_checks.classify.corpus import SEALED, TUNING, load as load_corpus, split_of, thread_key

CORPUS = Path(__file__).parent / "fixtures" / "classify_corpus"
FILES = [str(CORPUS / f"{b}.jsonl") for b in "abcdefgh"]

RECS = [
    {"id": "t1", "label": "preempted", "text": "spot node reclaimed by provider, workload moved away from node alpha"},
    {"id": "t2", "label": "preempted", "text": "spot node reclaimed by provider, workload moved away from node beta"},
    {"id": "t3", "label": "success", "text": "all shards written, workload summary uploaded, goodbye from node alpha"},
    {"id": "t4", "label": "success", "text": "all shards written, workload summary uploaded, goodbye from node gamma"},
] + [{"id": f"f{i}", "label": "unknown", "text": f"filler line number {i} about nothing in particular"}
     for i in range(8)]
PREEMPT = "the spot node was reclaimed by provider tonight"


def _sources(want: str, n: int) -> list:
    """``n`` distinct sources whose thread falls in split ``want``."""
    out, i = [], 0
    while len(out) < n:
        src = f"https://github.com/o/r/issues/{i}"
        if split_of(src) == want:
            out.append(src)
        i += 1
    return out


@pytest.mark.parametrize("learner", sorted(learn_train.TRAINERS))
def test_training_is_deterministic(learner: str) -> None:
    a = json.dumps(learn_train.TRAINERS[learner](RECS), sort_keys=True)
    b = json.dumps(learn_train.TRAINERS[learner](list(RECS)), sort_keys=True)
    assert a == b


@pytest.mark.parametrize("learner", sorted(learn_train.TRAINERS))
def test_abstains_on_text_with_no_known_features(learner: str) -> None:
    model = learn_train.TRAINERS[learner](RECS)
    # Even a threshold of 0 gives no answer: nothing it knows is in the text.
    assert learn.predict(model, "zq xv 12345 0xdeadbeef", threshold=0.0) is None


@pytest.mark.parametrize("learner", ["logreg", "cnb"])
def test_linear_answer_names_the_line_and_features(learner: str) -> None:
    model = learn_train.TRAINERS[learner](RECS * 3)
    got = learn.predict(model, "epoch 3 loss 0.2\n" + PREEMPT + "\n", threshold=0.0)
    assert got is not None
    label, p, why = got
    assert label == "preempted" and 0 < p <= 1
    assert "reclaimed" in why and f'"{PREEMPT}"' in why


def test_neighbours_name_the_excerpt_and_the_shared_words() -> None:
    got = learn.predict(learn_train.train_knn(RECS), PREEMPT, threshold=0.1)
    assert got is not None
    label, sim, why = got
    assert label == "preempted" and 0 < sim <= 1
    assert ("t1" in why or "t2" in why) and "reclaimed" in why


def test_agree_answers_only_where_both_parts_do() -> None:
    m = learn_train.train_agree(RECS * 3)
    got = learn.predict(m, PREEMPT, (0.1, 0.0))
    assert got is not None and got[0] == "preempted"
    assert "nearest labelled excerpt" in got[2] and "learned model: preempted" in got[2]
    swapped = [{**r, "label": "cancelled_user" if r["label"] == "preempted" else r["label"]} for r in RECS]
    m2 = dict(m, parts=[learn_train.train_knn(swapped), m["parts"][1]])
    assert learn.predict(m2["parts"][0], PREEMPT, 0.1)[0] == "cancelled_user"  # each alone answers...
    assert learn.predict(m2, PREEMPT, (0.1, 0.0)) is None  # ...but they disagree


def test_no_guess_below_the_threshold() -> None:
    assert learn.predict(learn_train.train_knn(RECS), "completely unrelated words here", threshold=0.5) is None


def test_decide_only_where_no_rule_claimed_or_weak_hints() -> None:
    model = dict(learn_train.train_knn(RECS), threshold=0.1, scope=learn.SCOPE_UNCLAIMED)
    assert learn.decide(model, PREEMPT, "fallback.no_evidence", "unknown", 0.2)[0] == "preempted"
    assert learn.decide(model, PREEMPT, "py.traceback", "software_exception", 0.45) is None
    weak = dict(model, scope=learn.SCOPE_WEAK)
    assert learn.decide(weak, PREEMPT, "py.traceback", "software_exception", 0.45)[0] == "preempted"
    assert learn.decide(weak, PREEMPT, "py.traceback", "software_exception", 0.9) is None
    assert learn.decide(weak, PREEMPT, "exit.sigkill", "host_oom", 0.5) is None  # exit data is not a text hint


def test_off_by_default_and_only_for_logs_no_rule_claims(monkeypatch) -> None:
    text = "spot node reclaimed by provider, workload moved away"
    assert engine.LEARNED_FALLBACK is engine.LEARNED_FALLBACK_DEFAULT is False
    monkeypatch.setattr(engine, "LEARNED_FALLBACK", False)
    assert classify(ClassifyInput(logs=[LogText("log", text)])).rule == "fallback.no_evidence"
    monkeypatch.setattr(engine, "LEARNED_FALLBACK", True)
    monkeypatch.setattr(learn, "_MODEL", dict(learn_train.train_logreg(RECS * 3), threshold=0.2, cv_precision=0.4))
    r = classify(ClassifyInput(logs=[LogText("log", text)]))
    assert (r.category, r.rule) == ("preempted", "learned.logreg") and r.confidence <= 0.4
    assert "learned model: preempted" in r.evidence[0].text and "reclaimed" in r.evidence[0].text
    # A log a rule claims is never second-guessed.
    assert classify(ClassifyInput(logs=[LogText("log", "torch.OutOfMemoryError: CUDA out of memory.")])).rule == "cuda.oom"


def test_training_never_reads_sealed_rows(tmp_path: Path) -> None:
    tuning, sealed = _sources(TUNING, len(RECS)), _sources(SEALED, 4)
    rows = [{**r, "source": s} for r, s in zip(RECS, tuning)]
    rows += [{"id": f"s{i}", "label": "gpu_oom", "text": "SEALED secret words", "source": s} for i, s in enumerate(sealed)]
    corpus = tmp_path / "x.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = learn_train.tuning_rows([str(corpus)])
    assert [r["id"] for r in got] == [r["id"] for r in RECS] and all(split_of(r) == TUNING for r in got)
    with pytest.raises(ValueError):
        learn_train.tuning_rows([str(tmp_path)])  # a directory would pull in blind batches
    out = tmp_path / "m.json"
    res = subprocess.run([sys.executable, "-m", "gcm_checks.classify.learn_train", str(corpus), "--learner", "knn",
                          "--out", str(out)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    model = json.loads(out.read_text())
    assert model["trained_on"] == len(RECS) and {d["id"] for d in model["docs"]} <= {r["id"] for r in RECS}
    assert not any("secret" in t for t in model["idf"])
    assert (model["threshold"], model["cv_precision"]) == learn_train.BEST["knn"]
    res = subprocess.run([sys.executable, "-m", "gcm_checks.classify.learn_train", str(corpus), "--learner", "knn",
                          "--cv", "--k", "3", "--json"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    cv = json.loads(res.stdout)
    assert cv["n"] == len(RECS) and len(cv["rules"]["folds"]) == 3


def test_folds_keep_a_thread_together_and_are_stable() -> None:
    recs = [{"id": f"x{i}", "label": "unknown", "text": "t", "source": f"o/r#{i // 2}"} for i in range(40)]
    fs = learn_train.folds(recs, 5)
    assert sorted(i for f in fs for i in f) == list(range(40)) and all(fs)
    where = {thread_key(recs[i]["source"]): n for n, f in enumerate(fs) for i in f}
    assert all(where[thread_key(recs[i]["source"])] == n for n, f in enumerate(fs) for i in f)
    assert fs == learn_train.folds(recs, 5) and fs != learn_train.folds(recs, 5, seed=1)


def test_cross_validation_runs_the_engine_and_reports_both() -> None:
    recs = [{**r, "source": f"o/r#{i}"} for i, r in enumerate(RECS * 2)]
    cv = learn_train.cross_validate(recs, "knn", k=3, thresholds=(0.1,), scopes=(learn.SCOPE_UNCLAIMED,))
    assert len(cv["rules"]["folds"]) == 3 and len(cv["configs"]) == 1
    c = cv["configs"][0]
    # The rules call every one of these "unknown" (so only the unknown rows count as
    # right for them); the neighbours answer some, at least half of them right.
    assert cv["rules"]["pooled"] < 0.5
    assert c["answers"] > 0 and 2 * c["right"] >= c["answers"] and c["pooled"] > cv["rules"]["pooled"]


def test_shipped_model_is_small_and_saw_no_sealed_row() -> None:
    assert Path(learn.DATA).stat().st_size < 2 << 20
    model = learn.read(learn.DATA)
    by_id = {r["id"]: r for r in load_corpus(FILES)}
    tuning = {i for i, r in by_id.items() if split_of(r) == TUNING}
    # Every excerpt it learned from is a tuning row of the corpus, and it learned
    # from (nearly) all of them: retrain when the corpus grows.
    assert len(tuning) * 0.98 <= model["trained_on"] <= len(tuning)
    for part in model.get("parts", [model]):
        if part["kind"] == "knn":
            # (a row whose words are all too rare or too common has no vector)
            assert model["trained_on"] * 0.98 <= len(part["docs"]) <= model["trained_on"]
            assert {d["id"] for d in part["docs"]} <= tuning
    assert (model["threshold"], model["cv_precision"]) == tuple(
        list(x) if isinstance(x, tuple) else x for x in learn_train.BEST[model["learner"]])
    assert learn.answer_confidence(model, 1.0) <= 0.5


def test_index_finds_the_neighbours_a_full_scan_finds() -> None:
    model = learn_train.train_knn(RECS * 2)
    for text in [PREEMPT, "all shards written by node alpha", "filler line number 3 about nothing", "zq xv"]:
        q = learn.tfidf_vector(learn.terms(text), model["idf"])
        scan = sorted(((sum(q[t] * w for t, w in d["v"].items() if t in q), n) for n, d in enumerate(model["docs"])
                       if any(t in q for t in d["v"])), key=lambda x: (-x[0], x[1]))[:3]
        got = learn.neighbours(model, text)
        assert [(round(s, 9), d["id"]) for s, d, _ in got] == [(round(s, 9), model["docs"][n]["id"]) for s, n in scan]


def test_query_terms_are_the_vocabulary_part_of_all_terms() -> None:
    vocab = {"reclaimed": 1.0, "spot node": 1.0, "node": 1.0, "never seen": 1.0}
    every = learn.terms(PREEMPT)
    assert learn.terms(PREEMPT, vocab) == {t: w for t, w in every.items() if t in vocab}
    assert set(learn.terms(PREEMPT, vocab)) == {"reclaimed", "spot node", "node"}


def test_model_file_round_trips_and_is_reproducible(tmp_path: Path) -> None:
    model = learn_train.train_agree(RECS * 3)
    a, b = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    learn.write(model, str(a))
    learn.write(learn.read(str(a)), str(b))
    assert learn.read(str(b)) == learn.read(str(a)) == json.loads(json.dumps(model))
    assert a.read_bytes() == b.read_bytes()  # no name or time in the gzip header


def test_cv_can_score_only_some_batches() -> None:
    recs = [{**r, "id": ("d-" if i % 2 else "a-") + str(i), "source": f"o/r#{i}"} for i, r in enumerate(RECS * 2)]
    cv = learn_train.cross_validate(recs, "knn", k=3, thresholds=(0.1,), scopes=(learn.SCOPE_UNCLAIMED,),
                                    score_prefixes=("d-",))
    assert (cv["n"], cv["scored"]) == (len(recs), len(recs) // 2)
    # Every scored row is one the rules left unclaimed (they know none of these words).
    assert cv["reach"]["unclaimed"] == cv["scored"]
    assert cv["configs"][0]["answers"] <= cv["scored"]


def test_learned_success_never_outweighs_a_failed_exit(monkeypatch) -> None:
    done = "all shards written, workload summary uploaded, goodbye from node alpha"
    monkeypatch.setattr(engine, "LEARNED_FALLBACK", True)
    monkeypatch.setattr(learn, "_MODEL", dict(learn_train.train_knn(RECS), threshold=0.1, cv_precision=0.6))
    assert classify(ClassifyInput(logs=[LogText("log", done)])).rule == "learned.knn"
    r = classify(ClassifyInput(logs=[LogText("log", done)], exit_code=3, signal=0))
    assert r.category == "unknown" and not r.rule.startswith("learned")


def test_no_guess_for_a_log_that_stops_mid_progress() -> None:
    line = " iteration {0:>6}/  8000 | lm loss: {1:.4E} | grad norm: 0.{0} | number of nan iterations:   0 |"
    routine = "\n".join(line.format(i, 1.0 / i) for i in range(100, 110)) + "\n"
    assert learn.ends_in_routine(routine)
    assert not learn.ends_in_routine(routine + "torch.distributed.DistBackendError: NCCL error\n")
    assert not learn.ends_in_routine(routine.splitlines()[0])  # too short to tell
    # A model that has learned exactly these lines still gives no answer there.
    rows = [{"id": f"m{i}", "label": "numeric_divergence", "text": routine} for i in range(3)] + RECS
    model = dict(learn_train.train_knn(rows), threshold=0.1, scope=learn.SCOPE_UNCLAIMED)
    assert learn.predict(model, routine)[0] == "numeric_divergence"
    assert learn.decide(model, routine, "fallback.no_evidence", "unknown", 0.2) is None


def test_bound_skips_only_logs_no_excerpt_is_near() -> None:
    """``_cannot_reach`` (the shortcut most logs take) is an upper bound: where it
    says no excerpt reaches the threshold, none does; a real case still gets through."""
    model = learn.read(learn.DATA)
    knn = next(p for p in model["parts"] if p["kind"] == "knn")
    rows = [r for r in load_corpus([FILES[0]]) if split_of(r) == TUNING][:60]
    chatter = "\n".join(f"step {i} loss {i / 7:.3f} lr 1e-4 epoch {i // 9} tokens/s 5120" for i in range(60))
    skipped = reached = 0
    for text in [r["text"] for r in rows] + [chatter]:
        q = learn._query(knn, text)
        sims = learn._similarities(knn, q)
        for thr in (0.2, 0.4, 0.6, 0.8):
            if q and learn._cannot_reach(knn, q, thr):
                skipped += 1
                assert max(sims.values(), default=0.0) < thr
            elif sims and max(sims.values()) >= thr:
                reached += 1
    assert skipped and reached
    # A tuning row the model learned from is its own nearest excerpt: never skipped.
    own = next(r for r in rows if any(d["id"] == r["id"] for d in knn["docs"]))
    assert learn.predict_knn(knn, own["text"], 0.6) is not None


def test_agree_stops_at_an_unwanted_first_answer() -> None:
    m = learn_train.train_agree(RECS * 3)
    assert learn.predict(m, PREEMPT, (0.1, 0.0))[0] == "preempted"
    assert learn.predict(m, PREEMPT, (0.1, 0.0), unwanted=("preempted",)) is None
    model = dict(m, threshold=(0.1, 0.0), scope=learn.SCOPE_UNCLAIMED)
    assert learn.decide(model, PREEMPT, "fallback.no_match", "unknown", 0.2)[0] == "preempted"
    assert learn.decide(model, PREEMPT, "fallback.no_match", "preempted", 0.2) is None
    assert learn.decide(model, "   \n" * 3, "fallback.no_match", "unknown", 0.2) is None
