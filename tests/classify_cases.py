"""Helpers the classifier's rule-table tests share (tests/test_classify_rules_*.py)."""

from __future__ import annotations

from gcm_checks.classify import Classification, ClassifyInput, LogText, classify


def cls(text: str, source: str = "stderr", **kw: object) -> Classification:
    """Classify one log text as if it were the job's ``source`` stream."""
    return classify(ClassifyInput(logs=[LogText(source, text)], **kw))  # type: ignore[arg-type]


def tb(last: str) -> str:
    """A short Python traceback ending in ``last`` (the exception line)."""
    return ("Traceback (most recent call last):\n"
            '  File "/home/u/train.py", line 88, in <module>\n'
            "    main()\n" + last + "\n")
