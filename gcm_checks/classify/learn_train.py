"""Train the learned fallback and measure whether it pays (issue 14, item 7).

Learners over the same labelled real excerpts, all pure Python and
deterministic (no numpy, no scikit-learn):

- ``logreg``: multinomial logistic regression, SGD with L2, over
  ``learn.features`` (words, word pairs and char 5-grams of error-looking lines);
- ``cnb``: complement naive Bayes over the same features, stored as the same
  linear model (a per-feature shift leaves the answer unchanged);
- ``knn``: tf-idf nearest excerpts, the first version;
- ``agree`` (shipped): ``knn`` and ``logreg`` together, answering only where
  both give the same class.

Only *tuning* rows reach a trainer or the CV (``tuning_rows`` drops sealed
ones by ``corpus.split_of`` as the files are loaded), and only from named
files: a directory would pull in batches gathered blind later.

``--cv``: grouped k-fold cross-validation, group = source thread
(``corpus.thread_key``). Each held-out fold is classified by the rules, then
``learn.decide`` (the very function the engine calls) may replace the answer
with the model trained on the other folds; macro-F1 is compared with the rules
alone, per fold and pooled.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import statistics
import sys
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from gcm_checks.classify import learn
from gcm_checks.classify.corpus import TUNING, load as load_corpus, split_of, thread_key

Record = Dict[str, Any]


def tuning_rows(paths: Sequence[str]) -> List[Record]:
    """The tuning rows of the named corpus files; sealed rows never leave here."""
    for p in paths:
        if os.path.isdir(p):
            raise ValueError(f"{p}: name the corpus files, not the directory (blind batches live there too)")
    return [r for r in load_corpus(paths) if split_of(r) == TUNING]


def _vocabulary(xs: Sequence[Dict[str, float]], min_df: int) -> set:
    df: Dict[str, int] = {}
    for x in xs:
        for f in x:
            df[f] = df.get(f, 0) + 1
    # A feature of one excerpt only cannot generalise; it would memorise.
    return {f for f, c in df.items() if c >= min_df}


def _sparse(classes: Sequence[str], dense: Dict[str, List[float]], bias: Sequence[float], prune: float,
            **meta: Any) -> Dict[str, Any]:
    """Store weights sparsely: shift each feature's row to mean 0 (softmax and
    argmax do not change), then drop the small ones (keeps the file small)."""
    w: Dict[str, List[List[float]]] = {}
    for f in sorted(dense):
        row = dense[f]
        m = sum(row) / len(row)
        kept = [[ci, round(x - m, 3)] for ci, x in enumerate(row) if abs(x - m) >= prune]
        if kept:
            w[f] = kept
    return {"version": 2, "kind": "linear", "classes": list(classes),
            "bias": [round(b - sum(bias) / len(bias), 4) for b in bias], "w": w, **meta}


def train_logreg(records: Sequence[Record], epochs: int = 25, rate: float = 1.0, l2: float = 1e-5,
                 min_df: int = 2, prune: float = 0.02, seed: int = 14) -> Dict[str, Any]:
    classes = sorted({r["label"] for r in records})
    cidx = {c: i for i, c in enumerate(classes)}
    xs = [learn.features(r["text"]) for r in records]
    vocab = _vocabulary(xs, min_df)
    data = [([(f, v) for f, v in sorted(x.items()) if f in vocab], cidx[r["label"]]) for x, r in zip(xs, records)]
    n_c = len(classes)
    dense: Dict[str, List[float]] = {f: [0.0] * n_c for f in sorted(vocab)}
    bias = [0.0] * n_c
    order = list(range(len(data)))
    rng = random.Random(seed)
    for epoch in range(epochs):
        rng.shuffle(order)
        eta = rate / (1.0 + epoch)
        for i in order:
            x, y = data[i]
            s = list(bias)
            for f, v in x:
                row = dense[f]
                for c in range(n_c):
                    s[c] += v * row[c]
            g = learn.softmax(s)
            g[y] -= 1.0
            active = [c for c in range(n_c) if abs(g[c]) > 1e-4]  # most classes stop mattering quickly
            for f, v in x:
                row = dense[f]
                for c in active:
                    row[c] -= eta * (v * g[c] + l2 * row[c])
            for c in active:
                bias[c] -= eta * g[c]
    return _sparse(classes, dense, bias, prune, learner="logreg",
                   params={"epochs": epochs, "rate": rate, "l2": l2, "min_df": min_df, "seed": seed})


def train_cnb(records: Sequence[Record], alpha: float = 0.3, scale: float = 8.0, min_df: int = 2,
              prune: float = 0.02) -> Dict[str, Any]:
    """Complement NB (Rennie et al. 2003): a class is scored by how unlike the
    *other* classes' text the log is, which copes with small, uneven classes."""
    classes = sorted({r["label"] for r in records})
    xs = [learn.features(r["text"]) for r in records]
    vocab_set = _vocabulary(xs, min_df)
    vocab = sorted(vocab_set)
    per_class: Dict[str, Dict[str, float]] = {c: {} for c in classes}
    for x, r in zip(xs, records):
        acc = per_class[r["label"]]
        for f, v in x.items():
            if f in vocab_set:
                acc[f] = acc.get(f, 0.0) + v
    total = {f: sum(per_class[c].get(f, 0.0) for c in classes) for f in vocab}
    dense: Dict[str, List[float]] = {f: [0.0] * len(classes) for f in vocab}
    for ci, c in enumerate(classes):
        comp = {f: total[f] - per_class[c].get(f, 0.0) + alpha for f in vocab}
        z = sum(comp.values())
        logs = {f: math.log(comp[f] / z) for f in vocab}
        norm = sum(abs(v) for v in logs.values()) or 1.0
        for f in vocab:
            # Weight normalisation (the "W" in WCNB); minus: unlike the rest is good.
            dense[f][ci] = -scale * len(vocab) * logs[f] / norm
    return _sparse(classes, dense, [0.0] * len(classes), prune, learner="cnb",
                   params={"alpha": alpha, "scale": scale, "min_df": min_df})


def train_knn(records: Sequence[Record]) -> Dict[str, Any]:
    tfs = [learn.terms(r["text"]) for r in records]
    df: Dict[str, int] = {}
    for tf in tfs:
        for t in tf:
            df[t] = df.get(t, 0) + 1
    n = len(tfs)
    # Terms in one excerpt only cannot link two; terms in most do not separate classes.
    idf = {t: math.log((1 + n) / (1 + c)) + 1.0 for t, c in df.items() if 2 <= c <= n // 4}
    docs = []
    for r, tf in zip(records, tfs):
        v = learn.tfidf_vector(tf, idf, learn.TERMS_PER_DOC)
        if v:
            docs.append({"id": r["id"], "label": r["label"], "v": {t: round(x, 4) for t, x in v.items()}})
    return {"version": 2, "kind": "knn", "learner": "knn",
            "idf": {t: round(x, 4) for t, x in idf.items() if any(t in d["v"] for d in docs)}, "docs": docs}


def train_agree(records: Sequence[Record]) -> Dict[str, Any]:
    return {"version": 2, "kind": "agree", "learner": "agree", "parts": [train_knn(records), train_logreg(records)]}


TRAINERS: Dict[str, Callable[..., Dict[str, Any]]] = {"logreg": train_logreg, "cnb": train_cnb, "knn": train_knn,
                                                      "agree": train_agree}
# Per learner: (its best threshold in the grouped CV over a..f's 867 tuning rows,
# 2026-12-01, the share of its answers that were right when the threshold was
# chosen inside each fold). agree rechecked on a..h's 1,063: 37/54 = 0.69 nested.
# Retraining without --threshold/--cv-precision uses these; docs/benchmarks.md.
BEST: Dict[str, Tuple[Any, float]] = {"knn": (0.5, 0.53), "cnb": (0.1, 0.67), "logreg": (0.3, 0.53),
                                      "agree": ((0.6, 0.2), 0.69)}
THRESHOLDS = {"logreg": (0.2, 0.3, 0.4, 0.5, 0.6, 0.7), "cnb": (0.1, 0.15, 0.2, 0.25, 0.3),
              "knn": (0.4, 0.5, 0.6, 0.7, 0.8),
              "agree": ((0.4, 0.2), (0.5, 0.2), (0.6, 0.2), (0.4, 0.3), (0.5, 0.3))}


# --------------------------------------------------------------------------- cross-validation


def folds(records: Sequence[Record], k: int, seed: int = 0) -> List[List[int]]:
    """Record indices in ``k`` folds; every excerpt of one source thread in the same fold."""
    groups: Dict[str, List[int]] = {}
    for i, r in enumerate(records):
        groups.setdefault(thread_key(r.get("source") or "") or str(r.get("id")), []).append(i)
    keys = sorted(groups, key=lambda g: hashlib.sha256(f"{seed}:{g}".encode()).hexdigest())
    out: List[List[int]] = [[] for _ in range(k)]
    for n, g in enumerate(keys):
        out[n % k].extend(groups[g])
    return out


def _rules_alone(records: Sequence[Record]) -> List[Tuple[str, str, float]]:
    from gcm_checks.classify import engine
    from gcm_checks.classify.records import record_to_input

    saved, engine.LEARNED_FALLBACK = engine.LEARNED_FALLBACK, False
    try:
        out = []
        for r in records:
            res = engine.classify(record_to_input(r))
            out.append((res.rule, res.category, res.confidence))
        return out
    finally:
        engine.LEARNED_FALLBACK = saved


_FITTED: Dict[Tuple[str, Tuple[str, ...]], Dict[str, Any]] = {}


def _fit(learner: str, rows: Sequence[Record]) -> Dict[str, Any]:
    """``TRAINERS[learner](rows)``, remembered for this process: the CV, its
    nested inner CVs and the d/e/f-scored rerun train on the very same fold
    sets, and ``agree`` is its two parts (training is deterministic)."""
    if learner == "agree":
        return {"version": 2, "kind": "agree", "learner": "agree", "parts": [_fit("knn", rows), _fit("logreg", rows)]}
    key = (learner, tuple(str(r.get("id")) for r in rows))
    if key not in _FITTED:
        _FITTED[key] = TRAINERS[learner](rows)
    return _FITTED[key]


def _scored(records: Sequence[Record], prefixes: Sequence[str]) -> List[bool]:
    return [not prefixes or str(r.get("id", "")).startswith(tuple(prefixes)) for r in records]


def _reach(records: Sequence[Record], rules: Sequence[Tuple[str, str, float]], idx: Sequence[int]) -> Dict[str, int]:
    """How many scored rows each scope lets the model see (the rules' answer
    there, and how often that answer was already right)."""
    out = {}
    for scope in (learn.SCOPE_UNCLAIMED, learn.SCOPE_WEAK):
        m = {"scope": scope}
        hit = [i for i in idx if learn.in_scope(m, *rules[i])]
        out[scope] = len(hit)
        out[scope + "_rules_right"] = sum(rules[i][1] == records[i]["label"] for i in hit)
    return out


def cross_validate(records: Sequence[Record], learner: str, k: int = 5, seeds: Sequence[int] = (0,),
                   thresholds: Optional[Sequence[float]] = None,
                   scopes: Sequence[str] = (learn.SCOPE_UNCLAIMED, learn.SCOPE_WEAK),
                   score_prefixes: Sequence[str] = ()) -> Dict[str, Any]:
    """Per (scope, threshold): macro-F1 per fold with and without the model, and its answers.

    ``score_prefixes`` (e.g. ``d- e- f-``): train on every row of the other
    folds but score only held-out rows whose id starts so (the batches no rule
    author read, which resemble unseen logs)."""
    from gcm_checks.classify.evaluate import scores

    rules = _rules_alone(records)
    scored = _scored(records, score_prefixes)
    thresholds = thresholds or THRESHOLDS[learner]
    configs = [(s, t) for s in scopes for t in thresholds]
    res: Dict[Any, Dict[str, Any]] = {c: {"f1": [], "pred": {}, "answers": 0, "right": 0} for c in configs}
    base_f1: List[float] = []
    for seed in seeds:
        for held_all in folds(records, k, seed):
            held_set = set(held_all)
            held = [i for i in held_all if scored[i]]
            model = _fit(learner, [r for i, r in enumerate(records) if i not in held_set])
            gold = [records[i]["label"] for i in held]
            base_f1.append(scores(gold, [rules[i][1] for i in held])[1])
            for scope, t in configs:
                m = dict(model, threshold=t, scope=scope)
                pred = []
                for i in held:
                    rule, cat, conf = rules[i]
                    got = learn.decide(m, records[i]["text"], rule, cat, conf)
                    if got is not None:
                        res[(scope, t)]["answers"] += 1
                        res[(scope, t)]["right"] += got[0] == records[i]["label"]
                        cat = got[0]
                    pred.append(cat)
                    if seed == seeds[0]:
                        res[(scope, t)]["pred"][i] = cat
                res[(scope, t)]["f1"].append(scores(gold, pred)[1])
    idx = [i for i in range(len(records)) if scored[i]]
    gold_all = [records[i]["label"] for i in idx]
    out = {"learner": learner, "k": k, "seeds": list(seeds), "n": len(records), "scored": len(idx),
           "reach": _reach(records, rules, idx),
           "rules": {"folds": base_f1, "pooled": scores(gold_all, [rules[i][1] for i in idx])[1]}, "configs": []}
    for (scope, t), d in res.items():
        deltas = [a - b for a, b in zip(d["f1"], base_f1)]
        pooled = scores(gold_all, [d["pred"][i] for i in idx])[1]
        out["configs"].append({"scope": scope, "threshold": t, "pooled": pooled,
                               "mean_delta": statistics.mean(deltas),
                               "sd_delta": statistics.pstdev(deltas), "folds_up": sum(x > 1e-9 for x in deltas),
                               "folds_down": sum(x < -1e-9 for x in deltas), "answers": d["answers"],
                               "right": d["right"]})
    return out


def nested_cv(records: Sequence[Record], learner: str, k: int = 5, seeds: Sequence[int] = (0,),
              score_prefixes: Sequence[str] = ()) -> Dict[str, Any]:
    """What *choosing by CV* is worth: in each outer fold, scope and threshold
    are picked by an inner grouped CV on the training folds alone (kept only if
    they beat the rules there), then applied once to the held-out fold. The
    plain CV table's best row is optimistic (picked from many); this is not."""
    from gcm_checks.classify.evaluate import scores

    rules = _rules_alone(records)
    scored = _scored(records, score_prefixes)
    deltas: List[float] = []
    picks: List[Optional[Tuple[str, float]]] = []
    pred_first: Dict[int, str] = {}
    answers = right = 0
    for seed in seeds:
        for held_all in folds(records, k, seed):
            held_set = set(held_all)
            held = [i for i in held_all if scored[i]]
            train = [r for i, r in enumerate(records) if i not in held_set]
            inner = cross_validate(train, learner, k - 1, (seed + 1000,), score_prefixes=score_prefixes)
            best = max(inner["configs"], key=lambda c: (c["pooled"], c["threshold"]))
            pick = (best["scope"], best["threshold"]) if best["pooled"] > inner["rules"]["pooled"] + 1e-9 else None
            picks.append(pick)
            gold = [records[i]["label"] for i in held]
            base = [rules[i][1] for i in held]
            pred = list(base)
            if pick is not None:
                m = dict(_fit(learner, train), scope=pick[0], threshold=pick[1])
                for n, i in enumerate(held):
                    got = learn.decide(m, records[i]["text"], *rules[i])
                    if got is not None:
                        answers += 1
                        right += got[0] == records[i]["label"]
                        pred[n] = got[0]
            if seed == seeds[0]:
                pred_first.update(zip(held, pred))
            deltas.append(scores(gold, pred)[1] - scores(gold, base)[1])
    idx = [i for i in range(len(records)) if scored[i]]
    gold_all = [records[i]["label"] for i in idx]
    return {"learner": learner, "k": k, "seeds": list(seeds), "deltas": deltas, "scored": len(idx),
            "reach": _reach(records, rules, idx),
            "mean_delta": statistics.mean(deltas), "sd_delta": statistics.pstdev(deltas),
            "pooled_rules": scores(gold_all, [rules[i][1] for i in idx])[1],
            "pooled": scores(gold_all, [pred_first[i] for i in idx])[1],
            "picks": [list(p) if p else None for p in picks], "answers": answers, "right": right}


def _reach_text(scored: int, reach: Dict[str, int]) -> str:
    return (f"{scored} rows scored; reach the model: {reach['unclaimed']} unclaimed "
            f"({reach['unclaimed_rules_right']} of them already right as unknown), {reach['weak']} with weak hints "
            f"({reach['weak_rules_right']} right)")


def render_nested(n: Dict[str, Any]) -> str:
    picks = ", ".join(f"{p[0]}@{_fmt(p[1])}" if p else "off" for p in n["picks"])
    se = statistics.stdev(n["deltas"]) / math.sqrt(len(n["deltas"])) if len(n["deltas"]) > 1 else 0.0
    return (f"{n['learner']} nested {n['k']}-fold x {len(n['seeds'])}: {_reach_text(n['scored'], n['reach'])}\n"
            f"  pooled macro-F1 {n['pooled_rules']:.3f} -> "
            f"{n['pooled']:.3f}; per-fold delta {n['mean_delta']:+.4f} +- {n['sd_delta']:.4f} (se {se:.4f}) "
            f"(up {sum(d > 1e-9 for d in n['deltas'])}, down {sum(d < -1e-9 for d in n['deltas'])} of "
            f"{len(n['deltas'])}); answers {n['right']}/{n['answers']} right; picks: {picks}")


def _fmt(threshold: Any) -> str:
    return "/".join(f"{t:g}" for t in threshold) if isinstance(threshold, (list, tuple)) else f"{threshold:.2f}"


def render_cv(cv: Dict[str, Any]) -> str:
    r = cv["rules"]
    nf = len(r["folds"])
    lines = [f"{cv['learner']}: {cv['n']} tuning rows, {cv['k']}-fold grouped CV x {len(cv['seeds'])} seed(s)",
             "  " + _reach_text(cv["scored"], cv["reach"]),
             f"  rules alone: pooled macro-F1 {r['pooled']:.3f}, per fold {statistics.mean(r['folds']):.3f}"
             f" +- {statistics.pstdev(r['folds']):.3f}",
             f"  {'scope':<10} {'thr':>4} {'pooled':>7} {'delta':>7} {'sd':>6} {'up/down':>8} {'answers right':>14}"]
    for c in cv["configs"]:
        lines.append(f"  {c['scope']:<10} {_fmt(c['threshold']):>4} {c['pooled']:7.3f} {c['mean_delta']:+7.3f}"
                     f" {c['sd_delta']:6.3f} {c['folds_up']:>3}/{c['folds_down']:<3}/{nf:<2}"
                     f" {c['answers']:>6} {c['right']:>6}")
    return "\n".join(lines)


def main(argv: Optional[Iterable[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gcm_checks.classify.learn_train",
                                description="retrain the learned fallback on tuning rows, or cross-validate it")
    p.add_argument("corpus", nargs="+", help="labelled JSONL files (named; a directory is refused)")
    p.add_argument("--learner", choices=sorted(TRAINERS), default="agree", help="default: the shipped one")
    p.add_argument("--cv", action="store_true", help="grouped k-fold CV instead of training the shipped model")
    p.add_argument("--nested", action="store_true", help="with --cv: also pick scope/threshold inside each fold")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--score-prefix", nargs="*", default=[], metavar="ID_PREFIX",
                   help="train on all tuning rows of the other folds, score only rows whose id starts so (d- e- f-)")
    p.add_argument("--seeds", type=int, default=1, help="CV repeats with different fold assignments")
    p.add_argument("--threshold", type=float, default=None, help="abstain below this score (stored with the model)")
    p.add_argument("--scope", choices=(learn.SCOPE_UNCLAIMED, learn.SCOPE_WEAK), default=learn.SCOPE_UNCLAIMED)
    p.add_argument("--cv-precision", type=float, default=None,
                   help="precision of the model's answers in CV; caps the confidence it reports")
    p.add_argument("--json", action="store_true")
    p.add_argument("--out", default=learn.DATA)
    a = p.parse_args(list(argv) if argv is not None else None)
    try:
        recs = tuning_rows(a.corpus)
    except ValueError as e:
        print(f"learn: {e}", file=sys.stderr)
        return 2
    if a.cv:
        cv = cross_validate(recs, a.learner, a.k, tuple(range(a.seeds)),
                            thresholds=(a.threshold,) if a.threshold is not None else None,
                            score_prefixes=a.score_prefix)
        print(json.dumps(cv) if a.json else render_cv(cv))
        if a.nested:
            nested = nested_cv(recs, a.learner, a.k, tuple(range(a.seeds)), a.score_prefix)
            print(json.dumps(nested) if a.json else render_nested(nested))
        return 0
    model = TRAINERS[a.learner](recs)
    best_threshold, best_precision = BEST[a.learner]
    model.update(threshold=best_threshold if a.threshold is None else a.threshold, scope=a.scope,
                 cv_precision=best_precision if a.cv_precision is None else a.cv_precision, trained_on=len(recs))
    learn.write(model, a.out)
    sizes = [f"{len(m['w'])} features" if "w" in m else f"{len(m['docs'])} excerpts"
             for m in model.get("parts", [model])]
    print(f"{a.learner}: {len(recs)} tuning rows, {' + '.join(sizes)} -> {a.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
