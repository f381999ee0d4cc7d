"""classify --batch records: a record too big to hold is read as head + tail (issue 14, item 6)."""

from __future__ import annotations

import io
import json
import random

import pytest

from gcm_checks.classify import classify
from gcm_checks.classify import records
from gcm_checks.classify.records import RecordError, read_records, record_to_input


@pytest.fixture
def small_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records, "HEAD_BYTES", 2048)
    monkeypatch.setattr(records, "TAIL_BYTES", 4096)
    monkeypatch.setattr(records, "_CHUNK", 1000)


def _stream(*recs: dict) -> io.BytesIO:
    return io.BytesIO(b"".join(json.dumps(r).encode() + b"\n" for r in recs))


def test_small_records_read_whole() -> None:
    got = list(read_records(_stream({"id": 1, "text": "ok"}, {"id": 2, "text": "x"}), max_record_bytes=1 << 20))
    assert [(n, r["id"]) for n, r in got] == [(1, 1), (2, 2)]


def test_oversized_record_keeps_its_keys_and_the_end_of_its_text(small_caps: None) -> None:
    body = "".join(f"step {i} loss 0.{i % 97:02d}\n" for i in range(20000))
    rec = {"id": "big", "state": "FAILED", "text": body + "torch.OutOfMemoryError: CUDA out of memory.\n", "x": 1}
    got = list(read_records(_stream({"id": "before", "text": "a"}, rec, {"id": "after", "text": "b"}),
                            max_record_bytes=8192))
    assert [r["id"] for _, r in got] == ["before", "big", "after"]
    big = got[1][1]
    assert big["state"] == "FAILED" and big["x"] == 1
    assert big["text"].endswith("CUDA out of memory.\n") and "bytes of this record not read" in big["text"]
    assert len(big["text"]) < 10_000
    assert classify(record_to_input(big)).category == "gpu_oom"


@pytest.mark.parametrize("seed", range(12))
def test_splice_never_breaks_an_escape_or_a_utf8_character(small_caps: None, seed: int) -> None:
    rng = random.Random(seed)
    alphabet = ['"', "\\", "\n", "\t", "é", "中", "\u2028", "a", " ", "\x01", "😀"]
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(9000, 20000))) + "END"
    for ascii_only in (True, False):
        line = json.dumps({"id": seed, "text": text}, ensure_ascii=ascii_only).encode() + b"\n"
        [(_, rec)] = list(read_records(io.BytesIO(line), max_record_bytes=5000))
        assert rec["id"] == seed and rec["text"].endswith("END")


def test_oversized_record_whose_text_is_not_at_its_start_is_a_clear_error(small_caps: None) -> None:
    line = json.dumps({"blob": "z" * 50000, "id": 1, "text": "t"}).encode() + b"\n"
    with pytest.raises(RecordError, match="record over"):
        list(read_records(io.BytesIO(line), max_record_bytes=5000))


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    line = b'{"id": 1, "text": "bad \xff byte"}\n'
    [(_, rec)] = list(read_records(io.BytesIO(line)))
    assert rec["text"].startswith("bad ")
