"""JSONL records for ``classify --batch`` and ``--evaluate``.

A record is ``{"id", "text", "state"?, "exit_code"?, "label"?}``; ``exit_code``
may be ``3``, ``"3"``, ``"3:0"`` or ``"0:9"`` (sacct's ExitCode column).
"""

from __future__ import annotations

import json
from typing import Any, Dict, IO, Iterator, Tuple

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


def read_records(stream: IO[str]) -> Iterator[Tuple[int, Dict[str, Any]]]:
    """(line number, record) for each non-blank line; a bad line raises RecordError."""
    for n, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise RecordError(f"line {n}: not JSON ({e.msg})") from None
        if not isinstance(rec, dict):
            raise RecordError(f"line {n}: not a JSON object")
        yield n, rec
