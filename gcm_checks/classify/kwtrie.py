"""One regex that finds every one of many words in a text in one pass (scan.py's
keyword trie, benign.py's trie of keyword forms)."""

from __future__ import annotations

import re
from typing import Any, Dict, Optional, Sequence, Tuple


def build_trie(words: Sequence[str]) -> Tuple[Optional["re.Pattern[str]"], Dict[str, Tuple[str, ...]]]:
    """The pattern (None for no words) and, for each word, every word that is a prefix
    of it (itself included): ``m.group(1)`` is the longest word starting at a position.

    ``(?=(...))`` matches at every position, so words that overlap or sit inside a
    longer one are all seen; Python's ``re`` has no Aho-Corasick and 350 separate
    ``in`` tests cost 2.5x more. Words must not be empty.
    """
    trie: Dict[str, Any] = {}
    for w in words:
        d = trie
        for ch in w:
            d = d.setdefault(ch, {})
        d[""] = {}

    def build(d: Dict[str, Any]) -> str:
        # re tries a group's alternatives one after another at every position of
        # the text; the children of a trie node start with distinct characters,
        # so their order changes nothing but how soon a common letter is found.
        alts = [re.escape(ch) + build(sub) for ch, sub in sorted(d.items(), key=_by_frequency) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return "(?:" + body + ")?" if "" in d else body

    # The character class in front rejects a position that starts no word
    # (digits, most punctuation) in one bitmap test instead of ~35 tries.
    firsts = "".join(re.escape(ch) for ch in sorted({w[0] for w in words}))
    pattern = re.compile("(?=[" + firsts + "])(?=(" + build(trie) + "))") if words else None
    return pattern, {k: tuple(p for p in words if k.startswith(p)) for k in words}


_LETTER_RANK = {ch: i for i, ch in enumerate(" etaoinsrhldcumfpgwybvkxjqz")}


def _by_frequency(item: Tuple[str, Any]) -> Tuple[int, str]:
    return _LETTER_RANK.get(item[0], len(_LETTER_RANK)), item[0]
