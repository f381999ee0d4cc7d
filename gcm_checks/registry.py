"""The check registry: a plain dict you can read in one screen.

A check is a small function over gathered facts that returns results. It never
prints, exits, sleeps, drains or sends mail (STYLE.md practice 1). It declares
which gatherer it needs ("gpu", "ib", "xid", "dcgm", ...); the runner gathers
each needed area once, concurrently and under deadlines, then calls the checks.

Check modules are imported by ``gcm_checks.checks.load_all`` - one place to grep.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, Iterable, List

from gcm_checks.result import CheckResult

TAGS = frozenset({"prolog", "epilog", "health", "qualify"})

# fn(facts, settings) -> list of results. ``settings`` is the resolved node
# configuration (gcm_checks.config.Settings).
CheckFn = Callable[[Any, Any], List[CheckResult]]
# gatherer(ctx) -> facts. ``ctx`` is gcm_checks.runner.Context.
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


def gatherer(name: str) -> Callable[[GatherFn], GatherFn]:
    def deco(fn: GatherFn) -> GatherFn:
        GATHERERS[name] = fn
        return fn

    return deco


def select(tag: str, disabled: Iterable[str] = ()) -> List[CheckSpec]:
    """Checks carrying ``tag``, minus disabled ids (exact id or prefix ``gpu.*``)."""
    off = list(disabled)
    out = []
    for spec in CHECKS.values():
        if tag not in spec.tags:
            continue
        if any(spec.id == d or (d.endswith("*") and spec.id.startswith(d[:-1])) for d in off):
            continue
        out.append(spec)
    return sorted(out, key=lambda s: s.id)
