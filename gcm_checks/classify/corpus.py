"""The labelled corpus of real logs and its sealed split (issue 14).

``tests/fixtures/classify_corpus/*.jsonl`` holds excerpts of real failure logs
from public issue threads and Q&A pages, one JSON object a line:
``{"id", "label", "alt_label", "text", "source", "stack"}``.

A third of it is *sealed*: rules are never tuned by reading sealed items, only
the tuning split's misses. The split is a pure function of the excerpt's
*source thread* (not its id), fixed before any rule was written: two excerpts
of the same thread (or one gathered twice, into a.jsonl and b.jsonl) always
land in the same split, so a near-copy in the tuning split cannot leak the
answer to a sealed item. Adding excerpts never moves an old one between
splits, and nobody can choose where an item lands after seeing it.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, Iterable, Iterator, List, Optional

SEALED, TUNING = "sealed", "tuning"
SPLITS = (SEALED, TUNING)


def thread_key(source: str) -> str:
    """``https://github.com/o/r/issues/12#c3`` and ``o/r#12`` -> ``o/r#12``."""
    s = str(source).strip().lower()
    for prefix in ("https://", "http://"):
        if s.startswith(prefix):
            s = s[len(prefix):]
    if s.startswith("github.com/"):
        s = s[len("github.com/"):]
        s = s.replace("/issues/", "#").replace("/pull/", "#").replace("/discussions/", "#")
    s = s.split("?")[0]
    head, sep, tail = s.partition("#")
    if sep:
        tail = "".join(ch for ch in tail.split("#")[0] if ch.isdigit()) or tail
    return (head + sep + tail).rstrip("/")


def split_of(record: "Dict[str, Any] | str") -> str:
    """``sealed`` iff sha256(thread of the source) mod 3 == 0, else ``tuning``.

    A bare string is taken as the source (records without one fall back to their id).
    """
    if isinstance(record, dict):
        key = thread_key(record.get("source") or "") or str(record.get("id"))
    else:
        key = thread_key(record)
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    return SEALED if int(digest, 16) % 3 == 0 else TUNING


def default_dir() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(os.path.dirname(here)), "tests", "fixtures", "classify_corpus")


def load(paths: Iterable[str]) -> List[Dict[str, Any]]:
    """Records from the given JSONL files (or every *.jsonl in a directory)."""
    out: List[Dict[str, Any]] = []
    for path in paths:
        files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".jsonl")) \
            if os.path.isdir(path) else [path]
        for f in files:
            with open(f, encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        out.append(json.loads(line))
    return out


def select(records: Iterable[Dict[str, Any]], split: Optional[str]) -> Iterator[Dict[str, Any]]:
    """Records of one split (``None`` or ``all``: every record)."""
    for rec in records:
        if split in (None, "all") or split_of(rec) == split:
            yield rec


# The record shape every corpus file keeps (tests/fixtures/classify_corpus/README.md).
FIELDS = frozenset({"id", "label", "alt_label", "text", "source", "stack"})
MAX_TEXT_BYTES = 6144


def shape_problems(rows: Iterable[Dict[str, Any]], id_prefix: str,
                   seen_threads: "frozenset[str] | set[str]" = frozenset()) -> List[str]:
    """Every way ``rows`` break the corpus format, as readable strings (empty: fine).

    ``id_prefix`` is the file's own (``c-`` for c.jsonl); ``seen_threads`` are
    thread keys of other files that this one must not reuse, since a near-copy
    of a thread already read would leak its answer into a held-out batch.
    """
    from gcm_checks.classify.taxonomy import CATEGORY_IDS

    problems: List[str] = []
    ids: set = set()
    texts: set = set()
    for r in rows:
        rid = r.get("id", "?")
        if set(r) != FIELDS:
            problems.append(f"{rid}: fields {sorted(r)} != {sorted(FIELDS)}")
        if not str(rid).startswith(id_prefix):
            problems.append(f"{rid}: id must start with {id_prefix!r}")
        if rid in ids:
            problems.append(f"{rid}: duplicate id")
        ids.add(rid)
        if r.get("label") not in CATEGORY_IDS:
            problems.append(f"{rid}: label {r.get('label')!r} not in the taxonomy")
        alt = r.get("alt_label")
        if alt is not None and (alt not in CATEGORY_IDS or alt == r.get("label")):
            problems.append(f"{rid}: alt_label {alt!r} invalid")
        text = r.get("text")
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{rid}: empty text")
        else:
            if len(text.encode("utf-8")) > MAX_TEXT_BYTES:
                problems.append(f"{rid}: text over {MAX_TEXT_BYTES} bytes")
            if text in texts:
                problems.append(f"{rid}: duplicate text")
            texts.add(text)
        source = r.get("source")
        if not isinstance(source, str) or not source.strip():
            problems.append(f"{rid}: no source")
        elif thread_key(source) in seen_threads:
            problems.append(f"{rid}: source thread {thread_key(source)} is already in another corpus file")
        if not isinstance(r.get("stack"), str) or not r["stack"].strip():
            problems.append(f"{rid}: no stack")
    return problems
