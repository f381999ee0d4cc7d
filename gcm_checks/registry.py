"""The check registry: a plain dict you can read in one screen.

A check is a small function over gathered facts that returns results. It never
prints, exits, sleeps, drains or sends mail (STYLE.md practice 1). It declares
which gatherer it needs ("gpu", "ib", "xid", "dcgm", ...); the suite
(gcm_checks.suite) gathers each needed area once, concurrently and under
deadlines, then calls the checks through ``run_check``, which stamps the
check's id on its results.

Check modules are imported by ``gcm_checks.checks.load_all`` - one place to grep.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, Iterable, List

from gcm_checks.result import CheckResult

# The four suites; a check tagged with all of them runs wherever a GPU node
# is judged (the GPU checks).
EVERY_SUITE = ("prolog", "epilog", "health", "qualify")
TAGS = frozenset(EVERY_SUITE)

# fn(facts, settings) -> list of results. ``settings`` is the resolved node
# configuration (gcm_checks.config.Settings).
CheckFn = Callable[[Any, Any], List[CheckResult]]
# gatherer(ctx) -> facts. ``ctx`` is gcm_checks.suite.Context; only gatherers
# see it, checks get the facts.
GatherFn = Callable[[Any], Any]


@dataclass(frozen=True)
class CheckSpec:
    id: str
    fn: CheckFn
    tags: FrozenSet[str]
    needs: str
    doc: str


CHECKS: Dict[str, CheckSpec] = {}
GATHERERS: Dict[str, GatherFn] = {}


def register(check_id: str, *, tags: Iterable[str], needs: str) -> Callable[[CheckFn], CheckFn]:
    tagset = frozenset(tags)
    bad = tagset - TAGS
    if bad:
        raise ValueError(f"{check_id}: unknown tags {sorted(bad)}")

    def deco(fn: CheckFn) -> CheckFn:
        if check_id in CHECKS:
            raise ValueError(f"check {check_id} registered twice")
        CHECKS[check_id] = CheckSpec(check_id, fn, tagset, needs, (fn.__doc__ or "").strip())
        return fn

    return deco


def run_check(spec: CheckSpec, facts: Any, settings: Any) -> List[CheckResult]:
    """Call one check as every suite does: its results carry the row's id
    (a check says only what it found), and an exception in it - our bug - is
    ``unknown``, never a drain."""
    from dataclasses import replace

    from gcm_checks.result import unknown

    try:
        out = spec.fn(facts, settings)
    except Exception as e:  # noqa: BLE001 - our bug is "unknown", never a drain
        return [unknown(spec.id, f"internal error in check: {type(e).__name__}: {e}")]
    return [r if r.check == spec.id else replace(r, check=spec.id) for r in out]


def gatherer(name: str) -> Callable[[GatherFn], GatherFn]:
    def deco(fn: GatherFn) -> GatherFn:
        GATHERERS[name] = fn
        return fn

    return deco


def disables(entry: Any, check_id: str) -> bool:
    """Whether one ``checks.disabled`` entry (exact id, or prefix ``gpu.*``)
    names ``check_id``. A non-string entry names nothing."""
    if not isinstance(entry, str):
        return False
    return check_id == entry or (entry.endswith("*") and check_id.startswith(entry[:-1]))


def select(tag: str, disabled: Iterable[Any] = ()) -> List[CheckSpec]:
    """Checks carrying ``tag``, minus disabled ids (exact id or prefix ``gpu.*``)."""
    off = list(disabled)
    out = []
    for spec in CHECKS.values():
        if tag not in spec.tags:
            continue
        if any(disables(d, spec.id) for d in off):
            continue
        out.append(spec)
    return sorted(out, key=lambda s: s.id)


def unmatched(disabled: Iterable[Any], check_ids: Iterable[str]) -> List[Any]:
    """Entries of ``checks.disabled`` that name none of ``check_ids``: a typo
    would otherwise leave a check the admin meant to switch off running."""
    ids = list(check_ids)
    return [d for d in disabled if not any(disables(d, i) for i in ids)]
