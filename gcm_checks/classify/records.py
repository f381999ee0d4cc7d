"""JSONL records for ``classify --batch`` and ``--evaluate``.

A record is ``{"id", "text", "state"?, "exit_code"?, "label"?}``; ``exit_code``
may be ``3``, ``"3"``, ``"3:0"`` or ``"0:9"`` (sacct's ExitCode column).
"""

from __future__ import annotations

import io
import json
import re
from typing import Any, Dict, IO, Iterator, Optional, Tuple

from gcm_checks.classify.exitdata import parse_exit_arg
from gcm_checks.classify.model import ClassifyInput, LogText


class RecordError(ValueError):
    pass


def record_to_input(rec: Dict[str, Any]) -> ClassifyInput:
    text = rec.get("text", "")
    if not isinstance(text, str):
        raise RecordError("'text' must be a string")
    code, sig = parse_exit_arg(rec.get("exit_code"))
    state = rec.get("state")
    return ClassifyInput(
        logs=[LogText(str(rec.get("source_name") or "log"), text)],
        state=str(state) if state else None,
        exit_code=code,
        signal=sig,
        reason=rec.get("reason") if isinstance(rec.get("reason"), str) else None,
    )


# One JSONL record is read whole only up to this size. A longer one (a job that
# printed 200 MB) is read as its first HEAD and last TAIL bytes, spliced inside
# the "text" string: the classifier only looks at a text's end anyway, and a
# 200 MB record must not take 200 MB twice (the line, then the parsed string).
MAX_RECORD_BYTES = 4 << 20
HEAD_BYTES = 64 << 10
TAIL_BYTES = 1 << 20
_CHUNK = 1 << 20
_TEXT_KEY = re.compile(rb'"text"\s*:\s*"')


def _safe_cut(buf: bytes, start: int, from_end: bool) -> int:
    """A position in ``buf`` (at or after ``start``) that is not inside a JSON
    string escape or a UTF-8 sequence, nearest the end (or the start)."""
    rng = range(len(buf) - 1, start, -1) if from_end else range(max(start, 1), len(buf))
    for p in rng:
        c = buf[p]
        if 0x80 <= c < 0xC0:  # inside a UTF-8 sequence
            continue
        if c == 0x5C and buf[p - 1] != 0x5C:  # a backslash no backslash precedes starts an escape
            return p
        if p >= 6 and c != 0x5C and 0x5C not in buf[p - 6:p]:  # no escape reaches p
            return p
    return -1


def _bounded_lines(stream: IO[bytes], cap: int) -> Iterator[Tuple[int, bytes, Optional[bytes], int]]:
    """(line number, line or head, tail or None, bytes skipped) with memory bounded by ``cap``."""
    n = 0
    while True:
        chunk = stream.readline(cap + 1)
        if not chunk:
            return
        n += 1
        if len(chunk) <= cap or chunk.endswith(b"\n"):
            yield n, chunk, None, 0
            continue
        head, tail, total = chunk[:HEAD_BYTES], chunk[-TAIL_BYTES:], len(chunk)
        del chunk
        while not tail.endswith(b"\n"):
            more = stream.readline(_CHUNK)
            if not more:
                break
            total += len(more)
            tail = (tail + more)[-TAIL_BYTES:]
        yield n, head, tail, total - len(head) - len(tail)


def _splice(n: int, head: bytes, tail: bytes, skipped: int) -> Dict[str, Any]:
    m = _TEXT_KEY.search(head)
    p = _safe_cut(head, m.end(), from_end=True) if m else -1
    q = _safe_cut(tail, 0, from_end=False)
    if p < 0 or q < 0:
        raise RecordError(f"line {n}: record over {MAX_RECORD_BYTES} bytes whose \"text\" does not start it")
    marker = f"\\n[gcm-checks: {skipped} bytes of this record not read]\\n".encode()
    try:
        rec = json.loads((head[:p] + marker + tail[q:]).decode("utf-8", "replace"))
    except ValueError:
        raise RecordError(f"line {n}: record over {MAX_RECORD_BYTES} bytes could not be read") from None
    if not isinstance(rec, dict):
        raise RecordError(f"line {n}: not a JSON object")
    return rec


def read_records(stream: IO[Any], max_record_bytes: int = MAX_RECORD_BYTES) -> Iterator[Tuple[int, Dict[str, Any]]]:
    """(line number, record) for each non-blank line; a bad line raises RecordError.

    Reads a binary stream (or a text stream's ``.buffer``) with memory bounded
    per record; a plain text stream without a buffer is read line by line.
    """
    raw = stream if not isinstance(stream, io.TextIOBase) else getattr(stream, "buffer", None)
    if raw is None:
        lines: Iterator[Tuple[int, Any, Optional[bytes], int]] = (
            (n, line, None, 0) for n, line in enumerate(stream, 1))
    else:
        lines = _bounded_lines(raw, max_record_bytes)
    for n, line, tail, skipped in lines:
        if tail is not None:
            yield n, _splice(n, line, tail, skipped)
            continue
        if not line.strip():
            continue
        try:
            rec = json.loads(line.decode("utf-8", "replace") if isinstance(line, bytes) else line)
        except ValueError as e:
            raise RecordError(f"line {n}: not JSON ({getattr(e, 'msg', e)})") from None
        if not isinstance(rec, dict):
            raise RecordError(f"line {n}: not a JSON object")
        yield n, rec
