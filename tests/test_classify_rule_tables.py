"""The checks every rule table of the classifier shares (issue 14).

Each ``tests/test_classify_rules_<module>.py`` holds its module's table: CASES,
the messages each rule was written from (``(rule id, category, text)``), and
LOOKALIKES, lines with the same words that must not be read as the family
(``(rule id, text)``), plus the tests only that module needs. The checks that
are the same for every table live here, once:

- every documented message is matched by its rule's regex on one of its lines
  and classified as the rule says (the rule wins, not just its category,
  except where a table says a more specific older rule may claim the line);
- every rule of the module has at least one case;
- one of the rule's keywords occurs in each case: a rule only runs when one of
  its lower-case keywords is in the text, so a case its keywords miss would
  pass the regex check and never match in a real log;
- the keywords are cheap for the keyword trie (docs/benchmarks.md,
  "Classifier"), for the tables written since that rule: lower-case, no digits (a digit keyword is checked in every
  line the benign-line memory would skip), and starting with a character the
  trie already branches on for another module (a new first character costs a
  branch at every position of every log);
- no look-alike is read as the family it resembles (and, where the table
  promises it, no look-alike line is matched by the family's regex at all).
"""

from __future__ import annotations

from typing import Dict, List, NamedTuple, Tuple

import pytest

from gcm_checks.classify.rules import Rule
from gcm_checks.classify.rules_docs import DOC_RULES
from gcm_checks.classify.rules_enum import ENUM_RULES
from gcm_checks.classify.rules_fam import FAM_RULES
from gcm_checks.classify.rules_gh import GH_RULES
from gcm_checks.classify.rules_more import ALL_BY_ID, ALL_RULES
from gcm_checks.classify.rules_s4 import S4_RULES
from gcm_checks.classify.rules_src_app import SRC_APP_RULES
from gcm_checks.classify.rules_src_infra import SRC_INFRA_RULES
from gcm_checks.classify.rules_src_more import SRC_MORE_RULES
import test_classify_rules_docs as t_docs  # noqa: E402 - tests/ is on sys.path
import test_classify_rules_enum as t_enum
import test_classify_rules_fam as t_fam
import test_classify_rules_gh as t_gh
import test_classify_rules_s4 as t_s4
import test_classify_rules_src_app as t_src_app
import test_classify_rules_src_infra as t_src_infra
import test_classify_rules_src_more as t_src_more
from classify_cases import cls  # noqa: E402 - tests/classify_cases.py


class Table(NamedTuple):
    rules: Tuple[Rule, ...]
    cases: List[Tuple[str, str, str]]
    lookalikes: List[Tuple[str, str]]
    # src_app's cases name the family; a more specific older rule may claim the line
    # first (same category), and that is what its table asserts.
    exact_rule: bool = True
    # The keyword rules came with the third round: the older tables have digit
    # keywords ("synd 0x", "return value 0") and brought first characters of their own.
    cheap_keywords: bool = True
    new_first_characters: bool = False
    # Most look-alikes are lines the regex does match but a filter refuses (a
    # WARNING line, an INFO line); where a table promises more, the regex must miss.
    lookalike_regex_misses: bool = False


TABLES: Dict[str, Table] = {
    "docs": Table(DOC_RULES, t_docs.CASES, [], cheap_keywords=False, new_first_characters=True),
    "fam": Table(FAM_RULES, t_fam.CASES, t_fam.LOOKALIKES, lookalike_regex_misses=True),
    "src_infra": Table(SRC_INFRA_RULES, t_src_infra.CASES, t_src_infra.LOOKALIKES, cheap_keywords=False,
                       new_first_characters=True),
    "src_app": Table(SRC_APP_RULES, t_src_app.CASES, t_src_app.LOOKALIKES, exact_rule=False),
    "src_more": Table(SRC_MORE_RULES, t_src_more.CASES, t_src_more.LOOKALIKES, new_first_characters=True),
    "s4": Table(S4_RULES, t_s4.CASES, t_s4.LOOKALIKES, lookalike_regex_misses=True),
    "enum": Table(ENUM_RULES, t_enum.CASES, t_enum.LOOKALIKES),
    "gh": Table(GH_RULES, t_gh.CASES, t_gh.LOOKALIKES, lookalike_regex_misses=True),
}

CASES = [(name, *case) for name, t in TABLES.items() for case in t.cases]
LOOKALIKES = [(name, *case) for name, t in TABLES.items() for case in t.lookalikes]


@pytest.mark.parametrize("table,rule_id,category,text", CASES)
def test_documented_format_is_recognised(table: str, rule_id: str, category: str, text: str) -> None:
    assert any(ALL_BY_ID[rule_id].compiled().search(line) for line in text.split("\n")), text
    r = cls(text)
    if TABLES[table].exact_rule:
        assert (r.category, r.rule) == (category, rule_id), r.sentence
    else:
        assert r.category == category, (r.rule, r.sentence)


@pytest.mark.parametrize("table", list(TABLES))
def test_every_rule_has_a_case(table: str) -> None:
    covered = {c[0] for c in TABLES[table].cases}
    assert [r.id for r in TABLES[table].rules if r.id not in covered] == []


@pytest.mark.parametrize("table", list(TABLES))
def test_keywords_gate_every_case(table: str) -> None:
    missed = [(rule_id, text) for rule_id, _, text in TABLES[table].cases
              if not any(k in text.lower() for k in ALL_BY_ID[rule_id].keywords)]
    assert missed == []


@pytest.mark.parametrize("table", list(TABLES))
def test_keywords_are_cheap_for_the_trie(table: str) -> None:
    t = TABLES[table]
    others = {k[0] for r in ALL_RULES if r not in t.rules for k in r.keywords}
    keywords = [(r.id, k) for r in t.rules for k in r.keywords]
    # Keywords are matched against the lower-cased text, whatever the table.
    assert [(i, k) for i, k in keywords if k != k.lower()] == []
    if t.cheap_keywords:
        assert [(i, k) for i, k in keywords if any(ch.isdigit() for ch in k)] == []
    if not t.new_first_characters:
        assert [(i, k) for i, k in keywords if k[0] not in others] == []


@pytest.mark.parametrize("table,rule_id,text", LOOKALIKES)
def test_lookalike_is_not_the_family(table: str, rule_id: str, text: str) -> None:
    if TABLES[table].lookalike_regex_misses:
        assert not any(ALL_BY_ID[rule_id].compiled().search(line) for line in text.split("\n")), text
    assert cls(text).rule != rule_id, text
