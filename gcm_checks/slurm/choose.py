"""Which backend a run gets, from the settings (``slurm.backend``,
``--dry-run``, ``report_only``, whether scontrol exists here)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Optional, TextIO

from gcm_checks.slurm.backends import DryRunBackend, ScontrolBackend, SlurmBackend

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings


def _slurm(settings: Optional["Settings"]) -> Any:
    """The ``slurm:`` section; a library call without settings gets the built-in defaults."""
    if settings is None:
        from gcm_checks import config

        return config.builtin().slurm
    return settings.slurm


def report_only(settings: Optional["Settings"] = None) -> bool:
    """``report_only: true``: log every decision, drain nothing."""
    return bool(settings is not None and settings.report_only)


def backend_from_settings(settings: Optional["Settings"] = None, dry_run: bool = False, out: Optional[TextIO] = None, log: Any = None) -> SlurmBackend:
    """The backend to use: scontrol (``slurm.backend: cli``).

    ``pyslurm`` and ``auto`` are accepted, so a config written for an older
    release still loads, and mean scontrol: the pyslurm backend was removed
    (docs/slurm.md, "Why no pyslurm backend").

    ``dry_run`` or ``report_only`` wraps the real reader in a
    ``DryRunBackend``. With no scontrol on this machine there is no Slurm to
    change, so the dry-run backend is used as well.
    """
    sl = _slurm(settings)
    timeout_s = sl.timeout_s
    kind = sl.backend.lower()
    if kind == "pyslurm" and log is not None:
        log.warning("slurm_backend_unsupported", backend="pyslurm", using="scontrol", see="docs/slurm.md")
    real: SlurmBackend = ScontrolBackend(scontrol=sl.scontrol, timeout_s=timeout_s)
    if real.scontrol is None:  # type: ignore[attr-defined]
        chosen: SlurmBackend = DryRunBackend(out=out if out is not None else sys.stderr, log=log)
    elif dry_run or report_only(settings):
        chosen = DryRunBackend(out=out if out is not None else sys.stderr, reader=real, log=log)
    else:
        chosen = real
    # How Extra is written travels with the backend (apply_features reads it),
    # so no caller has to thread the setting through.
    chosen.extra_format = sl.extra_format  # type: ignore[attr-defined]
    return chosen
