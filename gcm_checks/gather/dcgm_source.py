"""The host's DCGM as the DCGM gatherer's source (``gcm_checks.gather.sources``).

``dcgm.use_pydcgm`` picks the backend: DCGM's Python bindings
(``gcm_checks.gather.dcgm_py``, in a child killed at the deadline) when
wanted and installed, else ``dcgmi diag -j`` (``gcm_checks.gather.dcgm``);
both give the same report. Simulation injects its own source instead
(``gcm_checks.sim.sources``).
"""

from __future__ import annotations

from typing import Any

from gcm_checks.gather import dcgm

_NO_BINDINGS = ("dcgm.use_pydcgm is yes but DCGM's Python bindings (pydcgm) were not found on sys.path or under "
                "/usr/share/datacenter-gpu-manager*/bindings/python3 or /usr/local/dcgm/bindings/python3")


def pydcgm_mode(value: Any) -> str:
    """``dcgm.use_pydcgm`` as auto / yes / no; a bool (the key's old form,
    and what YAML makes of a bare yes/no) is yes / no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = str(value if value is not None else "auto").strip().lower()
    return {"true": "yes", "false": "no", "1": "yes", "0": "no"}.get(text, text if text in ("yes", "no") else "auto")


def diag_backend(ctx: Any, gpus: Any) -> Any:
    """pydcgm when wanted and found, else dcgmi; a backend that says so
    (``unknown``) when pydcgm is required (``yes``) but absent."""
    dcgmi = dcgm.DcgmiBackend(ctx.settings.dcgm.dcgmi or "dcgmi", gpu_ids=gpus)  # null: search (no PATH)
    mode = pydcgm_mode(ctx.settings.dcgm.use_pydcgm)
    if mode == "no":
        return dcgmi
    from gcm_checks.gather import dcgm_py

    found = dcgm_py.find_bindings()
    if found is None:
        return dcgm.MissingBackend("pydcgm", _NO_BINDINGS) if mode == "yes" else dcgmi
    return dcgm_py.PydcgmBackend(found, gpus, fallback=dcgmi if mode == "auto" else None)


class HostDcgm:
    """This node's DCGM: dcgmi or pydcgm, as ``dcgm.use_pydcgm`` says."""

    def backend(self, ctx: Any, gpus: Any) -> Any:
        return diag_backend(ctx, gpus)

    def __repr__(self) -> str:
        return "HostDcgm()"
