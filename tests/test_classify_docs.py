"""docs/failure-taxonomy.md stays true: every category is documented and its example classifies as documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gcm_checks.classify import CATEGORY_IDS, ClassifyInput, LogText, classify

DOC = Path(__file__).resolve().parents[1] / "docs" / "failure-taxonomy.md"
SECTIONS = dict(re.findall(r"## `(\w+)`.*?```\n(.*?)\n```", DOC.read_text(), re.S))


def test_all_categories_documented() -> None:
    assert sorted(SECTIONS) == sorted(CATEGORY_IDS)


@pytest.mark.parametrize("category", CATEGORY_IDS)
def test_documented_example_classifies_as_its_category(category: str) -> None:
    r = classify(ClassifyInput(logs=[LogText("log", SECTIONS[category])]))
    assert r.category == category


def test_every_rule_id_is_documented() -> None:
    from gcm_checks.classify.rules_more import ALL_RULES as RULES

    text = DOC.read_text()
    assert [r.id for r in RULES if f"`{r.id}" not in text] == []
