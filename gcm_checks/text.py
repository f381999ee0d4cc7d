"""The one text sanitiser: text from users, logs and tools, made safe to show.

Job names, log lines, kernel lines and ``dcgmi`` messages reach drain reasons,
mail headers, HTML reports, the Slurm job comment and an admin's terminal.
Before issue 16, seven sanitisers applied four different control-character
rules (dropped, turned into a space, turned into ``?``, or escape sequences
kept). One rule set, applied in this order:

1. Escape sequences are removed whole: CSI (colours from rich/tqdm/loguru,
   cursor moves), OSC (window titles; OSC 52 even writes the clipboard of the
   admin who ``cat``s a report) and two-byte ``ESC X``. They are formatting,
   never content, and a lone ESC left behind would start a new one.
2. Line breaks (CR LF, CR, LF, VT, FF, NEL, U+2028, U+2029) become ``\\n`` in
   multi-line text (``clean_text``) and one space in one-line text
   (``one_line``): a newline in a mail subject adds a header, in a drain
   reason it ends the ``scontrol`` argument, in a log view it is a real break.
3. A tab is kept in multi-line text and is a space in one-line text.
4. Every other control character (C0, DEL, C1) and the Unicode bidi
   overrides/isolates (U+202A-202E, U+2066-2069: "Trojan Source" reordering
   of what an admin reads) are removed: they carry no text, and a ``?`` in
   their place only adds noise.
5. One-line text has its whitespace runs collapsed and is bounded: over
   ``limit`` characters it ends in ``...``.
6. ``ascii_line`` also turns each non-ASCII character into ``?``, for text
   Slurm stores and shows in fixed-width columns (the job comment, kernel
   lines in reasons): ``?`` rather than nothing, so "cafe" with an accent
   does not silently become another word.

What is NOT done here: encoding for a medium. HTML escaping is the HTML
renderer's (``html.escape``), the Prometheus label escape is the exposition
writer's, and the drain reason's argv allow-list (no quotes, ``$``, ``=``) is
``slurm.sanitize_reason``'s. Those run after this, on already clean text.
"""

from __future__ import annotations

import re
from typing import Optional

# CSI / OSC / other two-byte ESC sequences (ECMA-48).
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_BREAKS = re.compile(r"\r\n|[\r\n\x0b\x0c\x85\u2028\u2029]")
_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\u202a-\u202e\u2066-\u2069]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _text(raw: "bytes | str | object") -> str:
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "replace")
    return raw if isinstance(raw, str) else str(raw)


def strip_escapes(text: str) -> str:
    """Rule 1 only: for parsers that read a line (gcm-run's progress formats)."""
    return _ESCAPES.sub("", text) if "\x1b" in text else text


def clean_text(raw: "bytes | str | object") -> str:
    """Multi-line text fit for a terminal, a report or a mail body (rules 1-4)."""
    text = _ESCAPES.sub("", _text(raw))
    return _CONTROLS.sub("", _BREAKS.sub("\n", text))


def one_line(raw: "bytes | str | object", limit: Optional[int] = None) -> str:
    """One line fit for a reason, a header, a table cell (rules 1-5)."""
    text = _CONTROLS.sub("", _BREAKS.sub(" ", _ESCAPES.sub("", _text(raw))))
    text = " ".join(text.split())
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 3, 0)].rstrip() + "..." if limit > 3 else text[:limit]
    return text


def ascii_line(raw: "bytes | str | object", limit: Optional[int] = None) -> str:
    """``one_line`` with each non-ASCII character as ``?`` (rule 6)."""
    return one_line(_NON_ASCII.sub("?", one_line(raw)), limit)
