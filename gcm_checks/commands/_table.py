"""Text tables that fit the terminal: the one place commands lay out columns.

A wide value (a long message, a path) is cut with an ellipsis so a row is
one line of the terminal; ``--json`` always carries the full values. Output
that is not a terminal (a pipe, a file) is cut to ``COLUMNS`` when set, else
left whole: ``grep`` and ``less -S`` users want every character.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any, List, Optional, Sequence

ELLIPSIS = "\u2026"
MIN_WIDTH = 4  # a column is never cut below this (plus the ellipsis)


def terminal_width(out: Any = None) -> Optional[int]:
    """Columns to fit, or None for "do not cut"."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    stream = out if out is not None else sys.stdout
    try:
        if stream.isatty():
            return shutil.get_terminal_size((100, 24)).columns
    except (AttributeError, ValueError, OSError):
        pass
    return None


def cut(text: Any, width: int) -> str:
    s = "" if text is None else str(text)
    s = s.replace("\n", " ")
    if width <= 0:
        return ""
    return s if len(s) <= width else s[: max(0, width - 1)] + ELLIPSIS


def fit_widths(natural: Sequence[int], total: Optional[int], sep: int = 1,
               flexible: Optional[Sequence[int]] = None) -> List[int]:
    """Column widths for a table whose columns want ``natural`` widths, so
    that the row fits ``total`` columns. Only ``flexible`` columns (default:
    the last) shrink, the widest first, never below MIN_WIDTH."""
    widths = list(natural)
    if total is None or not widths:
        return widths
    flex = list(flexible) if flexible is not None else [len(widths) - 1]
    over = sum(widths) + sep * (len(widths) - 1) - total
    while over > 0:
        candidates = [i for i in flex if widths[i] > MIN_WIDTH]
        if not candidates:
            break
        i = max(candidates, key=lambda j: widths[j])  # the widest gives first
        widths[i] -= 1
        over -= 1
    return widths


def render(headers: Sequence[str], rows: Sequence[Sequence[Any]], out: Any = None, *,
           flexible: Optional[Sequence[int]] = None, align_right: Sequence[int] = (),
           width: Optional[int] = -1, gap: int = 1) -> None:
    """Print ``rows`` under ``headers``; fit the terminal (``width=-1``: detect).
    ``gap``: spaces between columns."""
    out = out if out is not None else sys.stdout
    total = terminal_width(out) if width == -1 else width
    cells = [[("" if c is None else str(c)).replace("\n", " ") for c in row] for row in rows]
    natural = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    widths = fit_widths(natural, total, sep=gap, flexible=flexible)
    last = len(headers) - 1

    def line(values: Sequence[str]) -> str:
        parts = []
        for i, v in enumerate(values):
            v = cut(v, widths[i])
            if i in align_right:
                parts.append(v.rjust(widths[i]))
            elif i == last:
                parts.append(v)  # no trailing padding
            else:
                parts.append(v.ljust(widths[i]))
        return (" " * gap).join(parts).rstrip()

    print(line(list(headers)), file=out)
    for r in cells:
        print(line(r), file=out)
