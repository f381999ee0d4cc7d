"""Every check module, imported in one place (a registry you can grep).

Each module registers its checks and gatherer with gcm_checks.registry on
import and keeps heavy imports inside functions (the prolog imports all of
these before every job).
"""

from __future__ import annotations

import importlib

MODULES = (
    "gcm_checks.checks.gpu",
    "gcm_checks.checks.ib",
    "gcm_checks.checks.dcgm",
    "gcm_checks.checks.xid",
)

_loaded = False


def load_all() -> None:
    global _loaded
    if _loaded:
        return
    for name in MODULES:
        importlib.import_module(name)
    _loaded = True
