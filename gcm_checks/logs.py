"""Structured JSON-lines log per node, opened before any check runs.

Two writers, one line format (``{...bound context, ...fields, "event",
"level", "timestamp"}``, the output of structlog's ``add_log_level`` ->
``TimeStamper(fmt="iso")`` -> ``JSONRenderer`` chain):

* ``open_log(path, **bind)`` configures structlog - used by every command
  but the prolog;
* ``open_log(path, fast=True, **bind)`` is a small writer with the same
  processor shape for the prolog, which runs before every job on every node:
  importing structlog costs ~38 ms there (its stdlib integration pulls in
  asyncio), a quarter of the prolog's 150 ms budget (docs/benchmarks.md).
  ``tests/test_core_logs.py`` keeps the two formats identical (only an
  ``exception`` differs: a traceback string here, structlog's dict form
  there).

If the log cannot be opened (a read-only /var/log, say) we log to stderr and
say so: losing the log must not stop the checks.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, Dict, List, Optional, TextIO

_file: Optional[TextIO] = None

Processor = Callable[[Any, str, Dict[str, Any]], Dict[str, Any]]


def _open_stream(path: Optional[str]) -> "tuple[TextIO, Optional[str]]":
    global _file
    if path:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            # Line buffered: every event reaches the file even if a hung
            # NVML thread forces an os._exit later.
            _file = open(path, "a", buffering=1, encoding="utf-8")
            return _file, None
        except OSError as e:
            return sys.stderr, f"cannot open log {path}: {e}"
    return sys.stderr, None


MAX_LINE = 64 * 1024  # one log record; a user's huge message must not fill the disk


class SafeStream:
    """The log file as both writers see it: a write never raises (a full log
    filesystem, ENOSPC, must not turn the epilog or health into exit 1 - the
    error would otherwise be raised again while logging it) and one record is
    at most MAX_LINE characters."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self.failed: Optional[str] = None

    def write(self, text: str) -> int:
        if len(text) > MAX_LINE:
            text = text[: MAX_LINE - 40] + '..."(truncated)"\n'
        try:
            return self._stream.write(text)
        except (OSError, ValueError) as e:
            if self.failed is None:
                self.failed = f"{type(e).__name__}: {e}"
                try:
                    sys.stderr.write(f"gcm-checks: log write failed ({self.failed}); continuing without the log\n")
                except Exception:  # noqa: BLE001
                    pass
            return 0

    def flush(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass


def add_log_level(logger: Any, method: str, event_dict: Dict[str, Any]) -> Dict[str, Any]:
    event_dict["level"] = "warning" if method == "warn" else ("error" if method == "exception" else method)
    return event_dict


def add_timestamp(logger: Any, method: str, event_dict: Dict[str, Any]) -> Dict[str, Any]:
    import datetime

    event_dict["timestamp"] = datetime.datetime.now().isoformat()
    return event_dict


class JsonLinesLog:
    """A bound logger with structlog's calling convention (``log.info("event",
    key=value)``, ``bind``) and processor signature, writing JSON lines."""

    processors: List[Processor] = [add_log_level, add_timestamp]

    def __init__(self, stream: TextIO, context: Optional[Dict[str, Any]] = None):
        self._stream = stream
        self._context = dict(context or {})

    def bind(self, **kw: Any) -> "JsonLinesLog":
        return JsonLinesLog(self._stream, {**self._context, **kw})

    def _emit(self, method: str, event: str, kw: Dict[str, Any]) -> None:
        event_dict = {**self._context, **kw, "event": event}
        if method == "exception":
            import traceback

            event_dict["exception"] = traceback.format_exc()
        for proc in self.processors:
            event_dict = proc(self, method, event_dict)
        try:
            self._stream.write(json.dumps(event_dict, default=repr) + "\n")
        except (OSError, ValueError):
            pass  # a full disk must not turn into a failed prolog

    def debug(self, event: str, **kw: Any) -> None:
        self._emit("debug", event, kw)

    def info(self, event: str, **kw: Any) -> None:
        self._emit("info", event, kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._emit("warning", event, kw)

    warn = warning

    def error(self, event: str, **kw: Any) -> None:
        self._emit("error", event, kw)

    def critical(self, event: str, **kw: Any) -> None:
        self._emit("critical", event, kw)

    def exception(self, event: str, **kw: Any) -> None:
        self._emit("exception", event, kw)


def open_log(path: Optional[str], fast: bool = False, **bind: Any) -> Any:
    """Return a bound logger writing JSON lines to ``path``."""
    raw, problem = _open_stream(path)
    stream: Any = SafeStream(raw)
    if fast:
        log: Any = JsonLinesLog(stream).bind(pid=os.getpid(), **bind)
    else:
        import structlog

        structlog.configure(
            processors=[
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=False),
                structlog.processors.dict_tracebacks,
                structlog.processors.JSONRenderer(sort_keys=False, default=repr),
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


def slurmd_line(line: str) -> None:
    """One plain line on stderr, beside the JSON log event that says the same
    with fields: the one way library code speaks outside the log.

    For what an admin must see without opening the JSON log: a config error,
    a refused directory, an internal error, a drain we did not make. An admin
    running the command by hand reads it on the terminal; slurmd keeps a
    prolog's or epilog's output in its own log only when the script fails
    (Slurm 22.05: ``prolog failed: rc:1 output:...``), so the JSON log stays
    the record. Never raises: stderr may be closed, or on a full disk.
    """
    try:
        print(line, file=sys.stderr)
    except Exception:  # noqa: BLE001 - stderr closed or on a full disk
        pass


class NullLog:
    """Drop-in for code paths that log but have no log configured."""

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: None

    def bind(self, **k: Any) -> "NullLog":
        return self
