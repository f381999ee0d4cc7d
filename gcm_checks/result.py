"""The one result type every check returns.

``fail`` means the hardware is bad and the node should be drained.
``unknown`` means we could not tell (tool missing, parse error, our own bug):
it is reported and counted but never drains, so one bad deploy cannot drain a
cluster (STYLE.md, complaint 4).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Optional


class Status(str, enum.Enum):
    PASS = "pass"
    WARN = "warn"
    UNKNOWN = "unknown"
    FAIL = "fail"

    @property
    def rank(self) -> int:
        # Verdict order: a fail outranks everything; unknown outranks warn so
        # that "we could not tell" is never summarised as a mere warning.
        return _RANK[self]


_RANK = {Status.PASS: 0, Status.WARN: 1, Status.UNKNOWN: 2, Status.FAIL: 3}


@dataclass(frozen=True)
class CheckResult:
    check: str  # stable id, e.g. "gpu.ecc.uncorrectable"; stamped by the suite for a check's results
    status: Status
    message: str  # what a human should know / do
    subject: str = ""  # "GPU 3 (00000000:3B:00.0)", "mlx5_2 port 1", "" = node
    duration_s: float = 0.0
    details: Mapping[str, Any] = field(default_factory=dict)

    def with_status(self, status: Status) -> "CheckResult":
        return replace(self, status=status)

    def to_dict(self) -> dict:
        return {
            "check": self.check,
            "status": self.status.value,
            "subject": self.subject,
            "message": self.message,
            "duration_s": round(self.duration_s, 4),
            "details": dict(self.details),
        }


def passed(check: str, message: str, subject: str = "", **details: Any) -> CheckResult:
    return CheckResult(check, Status.PASS, message, subject, details=details)


def warned(check: str, message: str, subject: str = "", **details: Any) -> CheckResult:
    return CheckResult(check, Status.WARN, message, subject, details=details)


def failed(check: str, message: str, subject: str = "", **details: Any) -> CheckResult:
    return CheckResult(check, Status.FAIL, message, subject, details=details)


def unknown(check: str, message: str, subject: str = "", **details: Any) -> CheckResult:
    return CheckResult(check, Status.UNKNOWN, message, subject, details=details)


# Inside a check: a check says only what it found; the suite stamps the id
# of the registry row that ran it (registry.run_check), so an id is written
# once, in the row. The four above are for results made outside a check
# (a gather error, a report).


def ok(message: str, subject: str = "", **details: Any) -> CheckResult:
    return CheckResult("", Status.PASS, message, subject, details=details)


def warn(message: str, subject: str = "", **details: Any) -> CheckResult:
    return CheckResult("", Status.WARN, message, subject, details=details)


def fail(message: str, subject: str = "", **details: Any) -> CheckResult:
    return CheckResult("", Status.FAIL, message, subject, details=details)


def cannot_tell(message: str, subject: str = "", **details: Any) -> CheckResult:
    """``unknown``: we could not tell; never drains."""
    return CheckResult("", Status.UNKNOWN, message, subject, details=details)


def verdict(results: Iterable[CheckResult]) -> Status:
    """Worst status among results; an empty run passes."""
    worst = Status.PASS
    for r in results:
        if r.status.rank > worst.rank:
            worst = r.status
    return worst


def first_failure(results: Iterable[CheckResult]) -> Optional[CheckResult]:
    for r in results:
        if r.status is Status.FAIL:
            return r
    return None
