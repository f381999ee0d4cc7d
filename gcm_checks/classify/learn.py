"""Nearest labelled excerpts, for the logs no rule claims (issue 14, item 7).

Only consulted when the rules could not tell (``fallback.no_evidence`` /
``fallback.no_match``). It compares the end of the log with the labelled
real excerpts of the corpus's *tuning* split (tf-idf over words and word
pairs, cosine similarity) and, when a close enough neighbour exists, answers
with that neighbour's label at a low confidence, naming the neighbour and the
words they share: explainable, a few hundred KB of JSON, no network, no GPU,
loaded lazily (the prolog never imports it).

Retrain on a larger corpus with::

    python -m gcm_checks.classify.learn tests/fixtures/classify_corpus/a.jsonl tests/fixtures/classify_corpus/b.jsonl

(name the files: the directory also holds c.jsonl, the held-out batch, which
must stay out of the training data; see tests/fixtures/classify_corpus/README.md)
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "classify_knn.json")
QUERY_CHARS = 8192
TERMS_PER_DOC = 64
_WORD = re.compile(r"[a-z][a-z0-9_]{2,}")

_MODEL: Optional[Dict[str, Any]] = None


def terms(text: str) -> Dict[str, float]:
    """Log-scaled counts of words and adjacent word pairs (numbers and ids dropped)."""
    words = [w for w in _WORD.findall(text[-QUERY_CHARS:].lower()) if sum(ch.isdigit() for ch in w) < 3]
    counts: Dict[str, int] = {}
    for i, w in enumerate(words):
        counts[w] = counts.get(w, 0) + 1
        if i:
            pair = words[i - 1] + " " + w
            counts[pair] = counts.get(pair, 0) + 1
    return {t: 1.0 + math.log(c) for t, c in counts.items()}


def _vector(tf: Dict[str, float], idf: Dict[str, float], keep: Optional[int] = None) -> Dict[str, float]:
    v = {t: w * idf[t] for t, w in tf.items() if t in idf}
    if keep is not None and len(v) > keep:
        v = dict(sorted(v.items(), key=lambda kv: -kv[1])[:keep])
    norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
    return {t: x / norm for t, x in v.items()}


def train(records: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """A model (plain JSON data) from labelled records ``{"id", "label", "text"}``."""
    tfs = [terms(r["text"]) for r in records]
    df: Dict[str, int] = {}
    for tf in tfs:
        for t in tf:
            df[t] = df.get(t, 0) + 1
    n = len(tfs)
    # Terms seen in one excerpt only cannot link two excerpts; terms in most
    # excerpts (traceback, file, line) do not tell classes apart.
    idf = {t: math.log((1 + n) / (1 + c)) + 1.0 for t, c in df.items() if 2 <= c <= n // 4}
    docs = []
    for r, tf in zip(records, tfs):
        v = _vector(tf, idf, TERMS_PER_DOC)
        if v:
            docs.append({"id": r["id"], "label": r["label"], "v": {t: round(x, 4) for t, x in v.items()}})
    return {"version": 1, "idf": {t: round(x, 4) for t, x in idf.items() if any(t in d["v"] for d in docs)},
            "docs": docs}


def neighbours(model: Dict[str, Any], text: str, k: int = 3) -> List[Tuple[float, Dict[str, Any], List[str]]]:
    """The ``k`` most similar labelled excerpts: (cosine, doc, shared terms by weight)."""
    q = _vector(terms(text), model["idf"])
    scored = []
    for d in model["docs"]:
        shared = [(q[t] * w, t) for t, w in d["v"].items() if t in q]
        if shared:
            scored.append((sum(s for s, _ in shared), d, [t for _, t in sorted(shared, reverse=True)[:4]]))
    scored.sort(key=lambda x: -x[0])
    return scored[:k]


def predict(model: Dict[str, Any], text: str, min_similarity: float) -> Optional[Tuple[str, float, str]]:
    """(label, similarity, explanation) when the nearest excerpts agree closely enough."""
    near = neighbours(model, text)
    if not near or near[0][0] < min_similarity:
        return None
    votes: Dict[str, float] = {}
    for sim, d, _ in near:
        votes[d["label"]] = votes.get(d["label"], 0.0) + sim
    label = max(votes, key=lambda c: votes[c])
    sim, doc, shared = next(x for x in near if x[1]["label"] == label)
    why = f"nearest labelled excerpt {doc['id']} ({label}, similarity {sim:.2f}) shares: " + ", ".join(shared)
    return label, sim, why


def load() -> Optional[Dict[str, Any]]:
    global _MODEL
    if _MODEL is None:
        try:
            with open(DATA, encoding="utf-8") as f:
                _MODEL = json.load(f)
        except (OSError, ValueError):
            _MODEL = {}
    return _MODEL or None


def main(argv: Optional[Iterable[str]] = None) -> int:  # pragma: no cover - exercised by the retrain test
    import argparse

    from gcm_checks.classify.corpus import TUNING, load as load_corpus, select

    p = argparse.ArgumentParser(prog="python -m gcm_checks.classify.learn")
    p.add_argument("corpus", nargs="+", help="labelled JSONL files or directories")
    p.add_argument("--out", default=DATA)
    p.add_argument("--all", action="store_true", help="train on every record, not only the tuning split")
    a = p.parse_args(list(argv) if argv is not None else None)
    recs = load_corpus(a.corpus)
    if not a.all:
        recs = list(select(recs, TUNING))
    model = train(recs)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(model, f, separators=(",", ":"), sort_keys=True)
    print(f"{len(model['docs'])} excerpts, {len(model['idf'])} terms -> {a.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
