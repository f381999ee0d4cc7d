"""Structured JSON-lines log per node, opened before any check runs.

structlog is configured lazily here (never at import of gcm_checks) and writes
one JSON object per line to ``log_path``. If the log cannot be opened (a
read-only /var/log, say) we log to stderr and say so: losing the log must not
stop the checks.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional, TextIO

_file: Optional[TextIO] = None


def open_log(path: Optional[str], **bind: Any) -> Any:
    """Return a bound structlog logger writing JSON lines to ``path``."""
    import structlog

    global _file
    problem = None
    stream: TextIO = sys.stderr
    if path:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            # Line buffered: every event reaches the file even if a hung
            # NVML thread forces an os._exit later.
            stream = open(path, "a", buffering=1, encoding="utf-8")
            _file = stream
        except OSError as e:
            problem = f"cannot open log {path}: {e}"
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=False),
            structlog.processors.dict_tracebacks,
            structlog.processors.JSONRenderer(sort_keys=False),
        ],
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )
    log = structlog.get_logger().bind(pid=os.getpid(), **bind)
    if problem:
        log.warning("log_unavailable", problem=problem)
    return log


def close_log() -> None:
    global _file
    if _file is not None:
        try:
            _file.flush()
            _file.close()
        except OSError:
            pass
        _file = None


class NullLog:
    """Drop-in for code paths that log but have no log configured."""

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None

    def bind(self, **k: Any) -> "NullLog":
        return self
