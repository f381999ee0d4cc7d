"""Match node names against Slurm hostlist expressions, globs or regexes.

Admins already write ``gpu[001-128,200]`` in slurm.conf; config node sections
accept the same (NHC's ``<node match> ||`` lines are loved for this).
"""

from __future__ import annotations

import fnmatch
import re
from typing import Iterable, List


def expand(expr: str) -> List[str]:
    """Expand a hostlist expression: ``a[1-3],b[01-02]-x`` -> names."""
    out: List[str] = []
    for part in _split_top(expr):
        out.extend(_expand_one(part))
    return out


def _split_top(expr: str) -> List[str]:
    parts, depth, cur = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur:
        parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _expand_one(part: str) -> List[str]:
    m = re.search(r"\[([^\]]*)\]", part)
    if not m:
        return [part]
    head, tail = part[: m.start()], part[m.end():]
    names: List[str] = []
    for rng in m.group(1).split(","):
        rng = rng.strip()
        if "-" in rng:
            lo, hi = rng.split("-", 1)
            width = len(lo) if lo.startswith("0") else 0
            for i in range(int(lo), int(hi) + 1):
                names.append(f"{i:0{width}d}" if width else str(i))
        elif rng:
            names.append(rng)
    return [head + n + rest for n in names for rest in _expand_one(tail)]


def matches(node: str, pattern: str) -> bool:
    """``re:<regex>``, a hostlist expression (``gpu[001-128]``) or a glob (``gpu*``)."""
    if pattern.startswith("re:"):
        return re.fullmatch(pattern[3:], node) is not None
    if "[" in pattern or "," in pattern:
        try:
            if node in expand(pattern):
                return True
        except ValueError:  # not a hostlist after all, e.g. a glob class [ab]
            pass
    return fnmatch.fnmatchcase(node, pattern)


def matches_any(node: str, patterns: Iterable[str]) -> bool:
    return any(matches(node, p) for p in patterns)
