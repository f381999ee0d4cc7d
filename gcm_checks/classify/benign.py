"""Line classes known to hold no keyword, remembered across the texts of one process,
and the check that keeps that memory from hiding a keyword (issue 14 item 6).

A --batch over a cluster's logs meets the same progress, INFO and warning lines in
every job; scan.py searches a line class (its digit/blank/'#'/non-ASCII-blind key)
with the keyword trie once, and skips it afterwards if it held no keyword. A later
line of the class can still hold one: "status code 0" then "status code 137", "CUDA
outof mem ory." then "CUDA out of memory.", "OMP: Err#or" then "OMP: Error #", or a
blank inside a keyword ("kil led" then "killed"). A keyword in a line puts its form
(the keyword with the key's deleted characters deleted) into the line's key, so each
remembered key is looked up once for the forms it holds, and only those keywords are
then tested in the line itself: the memory narrows the search, it never decides.
"""

from __future__ import annotations

import unicodedata
from typing import Dict, Iterable, List, Optional, Tuple

# Deleting digits and blanks makes the thousands of progress lines of a
# training log ("iteration 4312/10000 | loss 2.31 ...") collapse to one line
# class, so the rules look at a few hundred bytes instead of megabytes.
# Progress bars ("45%|████▌ |", "[#####     ]") and other non-ASCII decoration
# are deleted from the key too, so a tqdm line at 3% and at 97% is one class.
DIGITS_BLANKS = b"0123456789 \t#" + bytes(range(0x80, 0x100))

# Key -> the keywords whose form the key holds (None: not looked at yet).
# Bounded; cleared when full. Only short keys are kept.
BENIGN: Dict[bytes, Optional[Tuple[str, ...]]] = {}
BENIGN_MAX = 65536
BENIGN_KEY_MAX = 512

# The forms of every ASCII keyword without a newline, by their first three
# characters, and the keywords of each form. A key is looked up with one dict probe
# per position instead of ~1,100 "in" tests (a --batch keeps meeting new recurring
# classes); a trie regex would do it too but costs 0.2 s to compile in every process.
# Keywords whose form is the keyword itself are kept: a benign first line holds their
# form only with a deleted character inside ("kil led"), and later lines must be tested.
_BY_GRAM: Dict[str, Tuple[str, ...]] = {}
_SHORT_FORMS: Tuple[str, ...] = ()  # forms under three characters
_BY_FORM: Dict[str, Tuple[str, ...]] = {}
# Keywords with non-ASCII characters ("已杀死"): their form loses them, so they are
# searched in the text itself; the flag says a plain (not lower-cased) search is exact.
_NON_ASCII: List[Tuple[str, bool]] = []


def key_form(keyword: str) -> str:
    """The keyword as it appears in a line's key (the key's deleted bytes deleted)."""
    return keyword.encode("utf-8", "surrogatepass").translate(None, DIGITS_BLANKS).decode("latin-1")


def set_keywords(keywords: Iterable[str]) -> None:
    """Called by scan.py when it compiles the rule table."""
    global _BY_GRAM, _SHORT_FORMS, _BY_FORM
    kws = [k for k in keywords if "\n" not in k]
    by_form: Dict[str, List[str]] = {}
    for k in kws:
        if k.isascii():
            by_form.setdefault(key_form(k), []).append(k)
    _BY_FORM = {f: tuple(v) for f, v in by_form.items()}
    by_gram: Dict[str, List[str]] = {}
    for f in _BY_FORM:
        if len(f) >= 3:
            by_gram.setdefault(f[:3], []).append(f)
    _BY_GRAM = {g: tuple(v) for g, v in by_gram.items()}
    _SHORT_FORMS = tuple(f for f in _BY_FORM if len(f) < 3)  # "" (a keyword of only digits) is in every key
    # A character with no case (CJK, "Lo") is the lower-case form of no other character.
    _NON_ASCII[:] = [(k, all(unicodedata.category(c) == "Lo" or (c.isascii() and not c.isalpha()) for c in k))
                     for k in kws if not k.isascii()]
    BENIGN.clear()  # cached look-ups were made with the old keyword list


def remember(keys: List[bytes], searched: List[int], holds_keyword: set) -> None:
    """Remember the searched line classes that held no keyword."""
    if len(BENIGN) > BENIGN_MAX:
        BENIGN.clear()
    for j in searched:
        if j not in holds_keyword and len(keys[j]) <= BENIGN_KEY_MAX:
            BENIGN[keys[j]] = None


def benign_keyword_lines(lines: List[str], keys: List[bytes], searched: int,
                         text: str, is_ascii: bool) -> List[Tuple[str, List[int]]]:
    """(keyword, indexes of the lines holding it) for the lines the trie did not
    search because their class is in BENIGN.

    A line is lower-cased as scan.py lower-cases the searched ones (not at all when
    that changes its length). The form test is exact but for one character: the
    Kelvin sign lower-cases to "k" and leaves no byte in the key, so scan.py
    searches every line of a text that holds it.
    """
    benign = BENIGN
    if searched == len(lines) or not benign:
        return []
    found: Dict[str, List[int]] = {}
    for j, k in enumerate(keys):
        maybe = benign.get(k, ())
        if maybe is None:
            maybe = benign[k] = keywords_in_key(k)
        if maybe:
            line = lines[j].lower()
            if not is_ascii and len(line) != len(lines[j]):
                line = lines[j]
            for kw in maybe:
                if kw in line:
                    found.setdefault(kw, []).append(j)
    if not is_ascii:
        low_text: Optional[str] = None
        for kw, caseless in _NON_ASCII:
            if caseless:
                if kw not in text:
                    continue
            else:
                if low_text is None:
                    low_text = text.lower()
                if kw not in low_text:
                    continue
            for j, k in enumerate(keys):
                if k in benign:
                    line = lines[j].lower()
                    if kw in (line if len(line) == len(lines[j]) else lines[j]):
                        found.setdefault(kw, []).append(j)
    return list(found.items())


def keywords_in_key(key: bytes) -> Tuple[str, ...]:
    """The ASCII keywords whose form the key holds."""
    low = key.decode("latin-1").lower()
    forms = [f for f in _SHORT_FORMS if f in low]
    get = _BY_GRAM.get
    for i in range(len(low) - 2):
        starting = get(low[i:i + 3])
        if starting:
            forms.extend([f for f in starting if low.startswith(f, i)])
    return tuple(kw for f in sorted(set(forms)) for kw in _BY_FORM[f])
