"""Scan one text with the rule table: line classes, keyword trie, candidate lines, hits.

The fast half of the classifier (issue 14 item 6): everything here works on
one text and returns :class:`Hit` rows; engine.py judges them.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from gcm_checks.classify import benign as _benign
from gcm_checks.classify.benign import BENIGN as _BENIGN, DIGITS_BLANKS as _DIGITS_BLANKS
from gcm_checks.classify.judges import JUDGES
from gcm_checks.classify.model import Evidence, LogText
from gcm_checks.classify.rules import KERNEL, LOG, WARNING_LINE, Rule
from gcm_checks.classify.rules_more import ALL_RULES as RULES
from gcm_checks.text import one_line

# Only the end of a text is scanned: a failed job's cause is at the end, and
# this keeps a huge --batch record as cheap as a small one.
SCAN_CHARS = 256 * 1024
MAX_HITS_PER_RULE = 20
MAX_LINE_CHARS = 8192
EVIDENCE_CHARS = 300
MAX_EVIDENCE = 5
_KERNEL_SOURCES = ("kernel", "dmesg", "syslog", "journal")


@dataclass(frozen=True)
class _Compiled:
    rule: Rule
    regex: "re.Pattern[str]"
    exclude: Optional["re.Pattern[str]"]


_COMPILED: Optional[Tuple[_Compiled, ...]] = None
# Every distinct keyword once, and for each the indexes of the rules it gates.
_KEYWORDS: Tuple[str, ...] = ()
# Keywords with digits ("exit code 137"): a line that holds only such keywords is
# still remembered as benign (see benign.py, which finds them there).
_DIGIT_KEYWORDS: Tuple[str, ...] = ()
_IS_DIGIT_KEYWORD: Dict[str, bool] = {}
_KEYWORD_RULES: Dict[str, Tuple[int, ...]] = {}


_NEWLINE_KEYWORDS: List[str] = []


_TRIE: Optional["re.Pattern[str]"] = None
# For each keyword, every keyword that is a prefix of it (itself included):
# the trie reports the longest keyword starting at a position.
_PREFIXES: Dict[str, Tuple[str, ...]] = {}


def _build_keyword_trie(keywords: Sequence[str]) -> None:
    """One regex that finds every keyword in one pass (a trie as nested groups).

    ``(?=(...))`` matches at every position, so keywords that overlap or sit
    inside a longer one are all seen; Python's ``re`` has no Aho-Corasick and
    350 separate ``in`` tests cost 2.5x more.
    """
    global _TRIE, _PREFIXES
    trie: Dict[str, Any] = {}
    for w in keywords:
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

    # The character class in front rejects a position that starts no keyword
    # (digits, most punctuation) in one bitmap test instead of ~35 tries.
    firsts = "".join(re.escape(ch) for ch in sorted({w[0] for w in keywords}))
    _TRIE = re.compile("(?=[" + firsts + "])(?=(" + build(trie) + "))") if keywords else None
    _PREFIXES = {k: tuple(p for p in keywords if k.startswith(p)) for k in keywords}


_LETTER_RANK = {ch: i for i, ch in enumerate(" etaoinsrhldcumfpgwybvkxjqz")}


def _by_frequency(item: Tuple[str, Any]) -> Tuple[int, str]:
    return _LETTER_RANK.get(item[0], len(_LETTER_RANK)), item[0]


def _compiled() -> Tuple[_Compiled, ...]:
    # Compiled on first use, not at import: the epilog imports this package
    # even for jobs whose logs it never needs to read.
    global _COMPILED, _KEYWORDS, _DIGIT_KEYWORDS, _IS_DIGIT_KEYWORD, _KEYWORD_RULES
    if _COMPILED is None:
        by_kw: Dict[str, List[int]] = {}
        for i, r in enumerate(RULES):
            for kw in r.keywords:
                by_kw.setdefault(kw, []).append(i)
        _KEYWORDS = tuple(k for k in by_kw if not any(ch.isdigit() for ch in k))
        _DIGIT_KEYWORDS = tuple(k for k in by_kw if any(ch.isdigit() for ch in k))
        _IS_DIGIT_KEYWORD = {k: k in _DIGIT_KEYWORDS for k in by_kw}
        _NEWLINE_KEYWORDS[:] = [k for k in by_kw if "\n" in k]
        _benign.set_keywords(by_kw)
        # Digit keywords ride in the trie too: it finds them in the searched
        # lines at no extra pass; only lines of a benign class need their forms.
        _build_keyword_trie(_KEYWORDS + _DIGIT_KEYWORDS)
        _KEYWORD_RULES = {k: tuple(v) for k, v in by_kw.items()}
        _COMPILED = tuple(
            _Compiled(r, r.compiled(), re.compile(r.exclude) if r.exclude else None) for r in RULES
        )
    return _COMPILED


@dataclass
class Hit:
    rule_id: str
    category: str
    rank: int
    confidence: float
    source_idx: int  # index of the text; structured evidence uses -1
    pos: int  # line index (last occurrence) inside the scanned text; 0 for structured hits
    evidence: Evidence
    says: str
    first_pos: int = 0  # first occurrence of the same line (text hits)
    base_rule: str = ""  # the table rule that produced it (rule_id may be refined)


# --------------------------------------------------------------------------- scanning


def sanitize(text: str, limit: int = EVIDENCE_CHARS) -> str:
    """Log text fit for a drain reason, a shell or HTML: ``gcm_checks.text.one_line``.

    Renderers still escape for their medium; this only removes what no medium wants.
    """
    return one_line(text, limit)


def _is_kernel(source: str) -> bool:
    known = _KERNEL_SOURCE.get(source)
    if known is None:
        s = source.lower()
        known = any(k in s for k in _KERNEL_SOURCES)
        if len(_KERNEL_SOURCE) < 1024:  # a --batch has a handful of source names
            _KERNEL_SOURCE[source] = known
    return known


_KERNEL_SOURCE: Dict[str, bool] = {}


# The key's deleted bytes (_DIGITS_BLANKS) and why: see benign.py.


_PREFIX = re.compile(r"^(?:\[[^\]\n]{0,40}\]:?)+")  # "[rank5]:", "[default3]:", "[1,12]<stdout>:" style


def _is_frame(line: str) -> Optional[str]:
    """The line with any rank prefix removed, if it is a stack frame, else None.

    Frames are paths and code, and rules never key on paths: skipping them
    keeps quoted source (``raise ValueError(...)``, ``except KeyError:``)
    from matching and makes tracebacks cheap.
    """
    body = line.lstrip()
    if body.startswith("["):
        m = _PREFIX.match(body)
        if m:
            body = body[m.end():].lstrip()
    if body.startswith('File "') or body.startswith("frame #"):
        return body
    return None


def _is_code_after_frame(line: str) -> bool:
    body = line
    if body.startswith("["):
        m = _PREFIX.match(body)
        if m:
            body = body[m.end():]
    return body.startswith("  ")


def _compact(text: str) -> Tuple[List[str], List[int], List[bytes], List[Optional[bytes]]]:
    """Unique non-frame lines (by a digit/blank-blind key), in order of last occurrence.

    Returns (lines, original index of each line's last occurrence, the line's
    key, the key of every original line, None for a skipped frame). Every
    rule is line-local, so the unique lines match whatever the whole text
    would. The dictionary is built by ``dict(zip(...))`` (C speed); only
    tracebacks need a per-line look. A line's first occurrence is
    ``all_keys.index(key)``, looked up only for the few lines that match a
    rule (a second dictionary for every line cost ~5% of a log's time).
    """
    lines = text.split("\n")
    # bytes.translate is C-fast; a UTF-8 "\n" is always the single byte 0x0A,
    # so the byte lines stay aligned with the str lines.
    kb = text.encode("utf-8", "surrogatepass").translate(None, _DIGITS_BLANKS)
    keys: List[Optional[bytes]] = list(kb.split(b"\n"))
    if not text.isascii():
        # A line of only non-ASCII text (bash's "Killed" in zh_CN is "已杀死") keys like a
        # blank line once its bytes >= 0x80 are dropped, and would vanish with the blanks.
        for i in [i for i, k in enumerate(keys) if not k and lines[i].strip()]:
            keys[i] = lines[i].encode("utf-8", "surrogatepass")
    # bytes.find, not "in": bytes "in" first tries the needle as an int and
    # pays for the TypeError on every call (CPython 3.11).
    if kb.find(b'File"') >= 0 or kb.find(b"frame#") >= 0:
        for i in [i for i, k in enumerate(keys) if k is not None and (
                k.startswith((b'File"', b"frame#")) or (k[:1] == b"[" and (b']:File"' in k[:48] or b"]:frame#" in k[:48])))]:
            if _is_frame(lines[i]) is None:
                continue
            keys[i] = None
            if i + 1 < len(keys) and keys[i + 1] is not None and not keys[i + 1].startswith((b'File"', b"frame#")) \
                    and _is_code_after_frame(lines[i + 1]):
                keys[i + 1] = None
    n = len(keys)
    last = dict(zip(keys, range(n)))
    last.pop(None, None)
    order = sorted(last.values())
    # A single huge line (tqdm redraws joined by "\r") is cut to its end,
    # where the error that ended the job is printed.
    out = [lines[i] if len(lines[i]) <= MAX_LINE_CHARS else lines[i][-MAX_LINE_CHARS:] for i in order]
    out_keys = [keys[i] for i in order]
    return out, order, out_keys, keys  # type: ignore[return-value]


# Line classes (compaction keys) in which no rule keyword occurs, remembered
# across the texts of one process: benign.py.
_BENIGN_MAX = _benign.BENIGN_MAX
_BENIGN_KEY_MAX = _benign.BENIGN_KEY_MAX


def scan_text(log: LogText, source_idx: int = 0) -> List[Hit]:
    """All rule matches in one text, in text order (positions are line indexes).

    Keywords locate candidate lines in the lower-cased text (C-speed
    ``str.find``); a rule's regex then runs on those lines only.
    """
    text = log.text
    first_line = log.first_line_no
    if len(text) > SCAN_CHARS:
        cut = len(text) - SCAN_CHARS
        nl = text.find("\n", cut)
        if 0 <= nl < len(text) - 1:  # drop the partial first line, unless it is all there is
            cut = nl + 1
        first_line += text.count("\n", 0, cut)
        text = text[cut:]
    lines, line_idx, keys, all_keys = _compact(text)
    is_ascii = text.isascii()
    # Only line classes not already known to hold no keyword are searched; the
    # Kelvin sign lower-cases to "k" but leaves no byte in a key (benign.py).
    benign = _BENIGN if is_ascii or "\u212a" not in text else {}
    sidx = [j for j, k in enumerate(keys) if k not in benign] if benign else list(range(len(lines)))
    scan = [lines[j] for j in sidx]
    low = "\n".join(scan).lower()
    if len(low) != sum(map(len, scan)) + len(scan) - 1:
        # A few non-ASCII characters change length when lower-cased; keep
        # offsets aligned by lower-casing line by line.
        low = "\n".join(x.lower() if len(x.lower()) == len(x) else x for x in scan)
    offsets = _line_starts(scan)
    kernel = _is_kernel(log.source)
    hits: List[Hit] = []
    compiled = _compiled()
    # One C-speed containment test per distinct keyword decides which rules
    # run at all; most keywords are absent from most logs, so only the few
    # present ones are located line by line.
    per_rule: Dict[int, set] = {}
    hit_pos: set = set()
    # Keywords in the searched lines are found right here; in the lines of a
    # benign class by benign.benign_keyword_lines.
    present: set = set()
    if _TRIE is not None:
        present = _present_keywords(scan, [keys[j] for j in sidx], low) if is_ascii else _trie_keywords(low)
    for kw in present:
        at = [sidx[p] for p in _keyword_lines(kw, low, offsets)]
        if not _IS_DIGIT_KEYWORD[kw]:
            hit_pos.update(at)
        for ri in _KEYWORD_RULES[kw]:
            per_rule.setdefault(ri, set()).update(at)
    for kw, at in _benign.benign_keyword_lines(lines, keys, len(sidx), text, is_ascii):
        for ri in _KEYWORD_RULES[kw]:
            per_rule.setdefault(ri, set()).update(at)
    _benign.remember(keys, sidx, hit_pos)
    for ri in sorted(per_rule):
        c = compiled[ri]
        rule = c.rule
        if (rule.source == KERNEL and not kernel) or (rule.source == LOG and kernel):
            continue
        candidates = per_rule[ri]
        n = 0
        for li in sorted(candidates):
            line = lines[li]
            m = c.regex.search(line)
            if m is None:
                continue
            if not rule.warnings_ok and WARNING_LINE.search(line):
                continue
            if c.exclude is not None and c.exclude.search(m.group(0)):
                continue
            rid, cat, rank, conf, says = rule.id, rule.category, rule.rank, rule.confidence, rule.says
            if rule.judge:
                judged = JUDGES[rule.judge](line)
                if judged is None:
                    continue
                rid, cat, rank, conf, says = judged
            hits.append(Hit(rid, cat, rank, conf, source_idx, line_idx[li],
                            Evidence(log.source, first_line + line_idx[li], sanitize(line)), says,
                            first_pos=all_keys.index(keys[li]), base_rule=rule.id))
            n += 1
            if n >= MAX_HITS_PER_RULE:
                break
    hits.sort(key=lambda h: h.pos)
    return hits


def _trie_keywords(low: str) -> set:
    """Every keyword in ``low``."""
    present: set = set()
    for longest in {m.group(1) for m in _TRIE.finditer(low)} if _TRIE is not None else ():
        present.update(_PREFIXES[longest])
    return present


# Line classes that hold a keyword, remembered like _BENIGN: None when seen
# once, then the keywords whose form the class's key holds (benign.keywords_in_key).
# A --batch meets the same keyword-bearing progress lines in every job
# ("number of nan iterations: 0"); a recurring class is checked with a few
# "in" tests instead of the trie, which costs ~100 ns a character.
_KEYWORD_CLASSES: Dict[bytes, Optional[Tuple[str, ...]]] = {}
_UNSEEN: Any = object()  # not (): an empty tuple is a class with no keyword forms


def _present_keywords(scan: List[str], scan_keys: List[bytes], low: str) -> set:
    """Keywords in the lines of an ASCII text (a superset is harmless: each one's
    lines are then located exactly in ``low``)."""
    seen = _KEYWORD_CLASSES
    if len(seen) > _BENIGN_MAX:
        seen.clear()
    present: set = set()
    new_lines = []
    for line, key in zip(scan, scan_keys):
        maybe = seen.get(key, _UNSEEN)
        if maybe is _UNSEEN or len(key) > _BENIGN_KEY_MAX:
            if len(key) <= _BENIGN_KEY_MAX:
                seen[key] = None
            new_lines.append(line)
            continue
        if maybe is None:
            # The same look-up the benign memory makes; the text is ASCII, so the
            # ASCII keywords are all it could hold.
            maybe = seen[key] = _benign.keywords_in_key(key)
        if maybe:
            low_line = line.lower()
            present.update([kw for kw in maybe if kw in low_line])
    if new_lines:
        present |= _trie_keywords("\n".join(new_lines).lower())
    # A keyword with a newline ("inf\n") spans two searched lines.
    present.update([kw for kw in _NEWLINE_KEYWORDS if kw in low])
    return present


def _line_starts(lines: List[str]) -> List[int]:
    """Offsets of each line in ``"\\n".join(lines)`` (C-speed accumulate)."""
    return list(accumulate(map(_PLUS_ONE, map(len, lines[:-1])), initial=0))


_PLUS_ONE = (1).__add__


def _keyword_lines(kw: str, low: str, offsets: List[int]) -> Tuple[int, ...]:
    """Indexes of the lines of ``low`` that contain ``kw`` (C-speed ``str.find``)."""
    out = []
    p = low.find(kw)
    while p >= 0:
        li = bisect_right(offsets, p) - 1
        out.append(li)
        if li + 1 >= len(offsets):
            break
        p = low.find(kw, offsets[li + 1])
    return tuple(out)
