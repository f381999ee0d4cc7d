"""Which backend a run gets, from the settings (``slurm.backend``,
``--dry-run``, ``report_only``, whether scontrol exists here)."""

from __future__ import annotations

import sys
from typing import Any, Optional, TextIO

from gcm_checks.slurm.backends import DEFAULT_TIMEOUT_S, DryRunBackend, ScontrolBackend, SlurmBackend


def _setting(settings: Any, key: str, default: Any) -> Any:
    if settings is None:
        return default
    try:
        v = settings.get(key)
    except Exception:  # a Settings without the key, or a plain dict
        v = None
    if v is None and isinstance(settings, dict):
        v = settings.get(key)
    return default if v is None else v


def report_only(settings: Any = None) -> bool:
    """``report_only: true`` (or ``slurm.report_only``): log every decision, drain nothing."""
    return bool(_setting(settings, "report_only", False)) or bool(_setting(settings, "slurm.report_only", False))


def backend_from_settings(settings: Any = None, dry_run: bool = False, out: Optional[TextIO] = None, log: Any = None) -> SlurmBackend:
    """The backend to use: scontrol (``slurm.backend: cli``).

    ``pyslurm`` and ``auto`` are accepted, so a config written for an older
    release still loads, and mean scontrol: the pyslurm backend was removed
    (docs/slurm.md, "Why no pyslurm backend").

    ``dry_run`` or ``slurm.report_only`` wraps the real reader in a
    ``DryRunBackend``. With no scontrol on this machine there is no Slurm to
    change, so the dry-run backend is used as well.
    """
    timeout_s = float(_setting(settings, "slurm.timeout_s", DEFAULT_TIMEOUT_S))
    kind = str(_setting(settings, "slurm.backend", "cli")).lower()
    if kind == "pyslurm" and log is not None:
        log.warning("slurm_backend_unsupported", backend="pyslurm", using="scontrol", see="docs/slurm.md")
    real: SlurmBackend = ScontrolBackend(scontrol=_setting(settings, "slurm.scontrol", None), timeout_s=timeout_s)
    if real.scontrol is None:  # type: ignore[attr-defined]
        chosen: SlurmBackend = DryRunBackend(out=out if out is not None else sys.stderr, log=log)
    elif dry_run or report_only(settings):
        chosen = DryRunBackend(out=out if out is not None else sys.stderr, reader=real, log=log)
    else:
        chosen = real
    # How Extra is written travels with the backend (apply_features reads it),
    # so no caller has to thread the setting through.
    chosen.extra_format = str(_setting(settings, "slurm.extra_format", "auto") or "auto")  # type: ignore[attr-defined]
    return chosen
