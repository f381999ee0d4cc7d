"""Match node names against Slurm hostlist expressions, globs or regexes.

Admins already write ``gpu[001-128,200]`` in slurm.conf; config node sections
accept the same (NHC's ``<node match> ||`` lines are loved for this).

Matching never expands a hostlist: ``gpu[0-30000000]`` is range arithmetic
on the digits of the node name (a prolog once spent 32 s and 4 GB expanding
it). ``expand`` still exists for the places that need the names (a job's
node list from Slurm) and refuses more than ``EXPAND_LIMIT`` names.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Iterable, List, Optional, Tuple, Union

EXPAND_LIMIT = 200_000
MAX_NAME = 255  # longer "node names" are not Slurm's; never matched
_RANGE_BODY = re.compile(r"^\s*\d+(\s*-\s*\d+)?(\s*,\s*\d+(\s*-\s*\d+)?)*\s*$")

# A parsed hostlist term: literal text and bracket sets, in order.
Range = Tuple[int, int, int]  # (lo, hi, width): width 0 = no zero padding
Part = Union[str, Tuple[Range, ...]]


def expand(expr: str, limit: int = EXPAND_LIMIT) -> List[str]:
    """Expand a hostlist expression: ``a[1-3],b[01-02]-x`` -> names.

    Raises ValueError for a malformed expression or more than ``limit`` names.
    """
    out: List[str] = []
    for term in split_top(expr):
        parts = parse_term(term)
        if parts is None:
            out.append(term)
        else:
            _expand_parts(parts, "", out, limit)
        if len(out) > limit:
            raise ValueError(f"hostlist {expr[:80]!r} names more than {limit} nodes")
    return out


def count(expr: str) -> int:
    """How many names ``expr`` stands for, without expanding it."""
    total = 0
    for term in split_top(expr):
        parts = parse_term(term)
        n = 1
        for p in parts or ():
            if not isinstance(p, str):
                n *= sum(hi - lo + 1 for lo, hi, _ in p)
        total += n
    return total


def first(expr: str) -> Optional[str]:
    """The first name of a hostlist, without expanding the rest."""
    for term in split_top(expr):
        parts = parse_term(term)
        if parts is None:
            return term
        name = ""
        for p in parts:
            if isinstance(p, str):
                name += p
            else:
                lo, _, width = p[0]
                name += _fmt(lo, width)
        return name
    return None


def split_top(expr: str) -> List[str]:
    """Split at commas outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in {expr[:80]!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ValueError(f"unbalanced '[' in {expr[:80]!r}")
    if cur:
        parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def parse_term(term: str) -> Optional[List[Part]]:
    """Literal/bracket parts of one term; None when it has no numeric brackets
    (a plain name, or a glob class like ``gpu[ab]``)."""
    if "[" not in term:
        return None
    parts: List[Part] = []
    pos = 0
    for m in re.finditer(r"\[([^\]]*)\]", term):
        body = m.group(1)
        if not _RANGE_BODY.match(body):
            return None  # a glob character class, not a hostlist
        if m.start() > pos:
            parts.append(term[pos:m.start()])
        parts.append(tuple(_parse_range(r) for r in body.split(",")))
        pos = m.end()
    if pos < len(term):
        parts.append(term[pos:])
    return parts


def _parse_range(text: str) -> Range:
    text = text.strip()
    lo_s, dash, hi_s = (x.strip() for x in text.partition("-"))
    lo = int(lo_s)
    hi = int(hi_s) if dash else lo
    if hi < lo:
        raise ValueError(f"range {text!r} runs backwards")
    width = len(lo_s) if lo_s.startswith("0") else 0  # gpu[001-128]: the padding is part of the name
    return lo, hi, width


def _fmt(i: int, width: int) -> str:
    return f"{i:0{width}d}" if width else str(i)


def _expand_parts(parts: List[Part], prefix: str, out: List[str], limit: int) -> None:
    if not parts:
        out.append(prefix)
        return
    head, rest = parts[0], parts[1:]
    if isinstance(head, str):
        _expand_parts(rest, prefix + head, out, limit)
        return
    for lo, hi, width in head:
        for i in range(lo, hi + 1):
            if len(out) > limit:
                raise ValueError(f"hostlist names more than {limit} nodes")
            _expand_parts(rest, prefix + _fmt(i, width), out, limit)


def _in_ranges(digits: str, ranges: Tuple[Range, ...]) -> bool:
    value = int(digits)
    for lo, hi, width in ranges:
        if lo <= value <= hi and _fmt(value, width) == digits:
            return True
    return False


def _match_parts(node: str, pos: int, parts: List[Part]) -> bool:
    if not parts:
        return pos == len(node)
    head, rest = parts[0], parts[1:]
    if isinstance(head, str):
        return node.startswith(head, pos) and _match_parts(node, pos + len(head), rest)
    end = pos
    while end < len(node) and node[end].isdigit():
        end += 1
    # Try every digit run starting here (adjacent brackets split it); at most
    # len(node) tries per bracket, never one per name in the range.
    for stop in range(end, pos, -1):
        if _in_ranges(node[pos:stop], head) and _match_parts(node, stop, rest):
            return True
    return False


def validate(pattern: str) -> None:
    """Raise ValueError if ``pattern`` cannot be matched safely (config check)."""
    if pattern.startswith("re:"):
        body = pattern[3:]
        try:
            re.compile(body)
        except re.error as e:
            raise ValueError(f"bad regular expression: {e}") from None
        if _NESTED_QUANTIFIER.search(body):
            raise ValueError("nested quantifier such as (a+)+: its matching time can explode; rewrite it")
        return
    for term in split_top(pattern):
        parse_term(term)


# (x+)+, (x*)*, (x+){2,}: the shapes whose backtracking is exponential.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)\s*[+*{]")


def matches(node: str, pattern: str) -> bool:
    """``re:<regex>``, a hostlist expression (``gpu[001-128]``) or a glob (``gpu*``)."""
    if len(node) > MAX_NAME:
        return False
    if pattern.startswith("re:"):
        return re.fullmatch(pattern[3:], node) is not None
    if "[" in pattern or "," in pattern:
        try:
            for term in split_top(pattern):
                parts = parse_term(term)
                if parts is not None and _match_parts(node, 0, parts):
                    return True
                if parts is None and fnmatch.fnmatchcase(node, term):
                    return True
            # A hostlist that did not match is a no: "gpu[0001-9999]" read
            # as a glob class would let "gpu7" in.
            return False
        except ValueError:  # not a hostlist after all
            pass
    return fnmatch.fnmatchcase(node, pattern)


def matches_any(node: str, patterns: Iterable[str]) -> bool:
    return any(matches(node, p) for p in patterns)
