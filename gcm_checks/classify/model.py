"""Input and output types of the classifier (frozen, plain data)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass(frozen=True)
class LogText:
    """One text the job produced (or the node logged): stdout, stderr, kernel log.

    ``first_line_no`` is the line number of the text's first line in the whole
    file, so evidence points at the right line even when only the tail was read.
    """

    source: str
    text: str
    first_line_no: int = 1


@dataclass(frozen=True)
class ClassifyInput:
    logs: List[LogText] = field(default_factory=list)
    state: Optional[str] = None  # sacct/scontrol JobState: TIMEOUT, OUT_OF_MEMORY, ...
    exit_code: Optional[int] = None  # job exit code (0..255)
    signal: Optional[int] = None  # signal that ended the job, 0/None if none
    derived_exit_code: Optional[int] = None  # highest step exit code
    reason: Optional[str] = None  # scontrol Reason, e.g. TimeLimit
    xids: List[Dict[str, Any]] = field(default_factory=list)
    dcgm_failures: List[Dict[str, Any]] = field(default_factory=list)
    ib_problems: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class Evidence:
    source: str  # "stderr", "stdout", a path, "kernel", "xid", "dcgm", "ib", "slurm"
    line_no: int  # 0 when the evidence is not a line of a text
    text: str

    def to_dict(self) -> dict:
        return {"source": self.source, "line_no": self.line_no, "text": self.text}


@dataclass(frozen=True)
class Classification:
    category: str
    responsibility: str
    confidence: float
    rule: str
    evidence: List[Evidence]
    sentence: str

    def to_dict(self) -> dict:
        return {
            "category": self.category,
            "responsibility": self.responsibility,
            "confidence": round(self.confidence, 3),
            "rule": self.rule,
            "evidence": [e.to_dict() for e in self.evidence],
            "sentence": self.sentence,
        }
