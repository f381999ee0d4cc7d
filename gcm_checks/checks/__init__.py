"""Every check module, imported in one place (a registry you can grep).

Each module registers its checks and gatherer with gcm_checks.registry on
import and keeps heavy imports inside functions. ``MODULES`` also says which
suites a module contributes to, so the prolog - run before every job - imports
only what it runs (rule 7); ``tests/test_core_registry.py`` keeps this table
honest against the tags the checks actually register.
"""

from __future__ import annotations

import importlib
from typing import Optional

from gcm_checks.registry import EVERY_SUITE

ALL = frozenset(EVERY_SUITE)

# module -> suites (tags) its checks belong to
MODULES = {
    "gcm_checks.checks.gpu": ALL,
    "gcm_checks.checks.ib": ALL,
    "gcm_checks.checks.ib_rails": frozenset({"prolog", "health", "qualify"}),
    "gcm_checks.checks.ib_host": frozenset({"health", "qualify"}),  # IPoIB, HCA firmware (issue 18)
    "gcm_checks.checks.dcgm": frozenset({"epilog", "qualify"}),
    "gcm_checks.checks.xid": frozenset({"epilog", "health"}),
    "gcm_checks.checks.perf": frozenset({"qualify"}),
}

_loaded: set = set()


def load_all(tag: Optional[str] = None) -> None:
    """Import the check modules for ``tag`` (all of them when None)."""
    for name, tags in MODULES.items():
        if name in _loaded or (tag is not None and tag not in tags):
            continue
        importlib.import_module(name)
        _loaded.add(name)
