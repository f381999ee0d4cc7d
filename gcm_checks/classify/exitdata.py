"""Decode Slurm's exit data as the epilog and sacct present it.

Measured on Slurm 22.05 (shared/notes/slurm-22.05-facts.md): the epilog gets
SLURM_JOB_EXIT_CODE as a raw wait status (exit 3 -> ``768``, SIGKILL -> ``9``),
SLURM_JOB_EXIT_CODE2 as ``exit:signal`` (``3:0``, ``0:9``) and
SLURM_JOB_DERIVED_EC as a wait status of the highest *step* code. A timeout
and an scancel both give 0, so the state/reason has to come from scontrol.
"""

from __future__ import annotations

from typing import Mapping, Optional, Tuple, Union


def parse_exit_code2(value: Optional[str]) -> Tuple[Optional[int], Optional[int]]:
    """``"3:0"`` -> (3, 0); ``"0:9"`` -> (0, 9); ``"3"`` -> (3, 0); junk -> (None, None)."""
    if value is None:
        return None, None
    text = str(value).strip()
    if not text:
        return None, None
    code, _, sig = text.partition(":")
    try:
        return int(code), int(sig or 0)
    except ValueError:
        return None, None


def decode_wait_status(status: Union[int, str, None]) -> Tuple[Optional[int], Optional[int]]:
    """A POSIX wait status as (exit_code, signal): 768 -> (3, 0); 9 -> (0, 9)."""
    if status is None or status == "":
        return None, None
    try:
        st = int(status)
    except (TypeError, ValueError):
        return None, None
    if st < 0:
        return None, None
    sig = st & 0x7F
    if sig:
        return 0, sig
    return (st >> 8) & 0xFF, 0


def parse_exit_arg(value: Union[int, str, None]) -> Tuple[Optional[int], Optional[int]]:
    """CLI / batch form: ``3``, ``"3"``, ``"3:0"`` or ``"0:9"``.

    A bare integer above 255 is read as a wait status (what the epilog env gives).
    """
    if value is None:
        return None, None
    if isinstance(value, bool):
        return None, None
    if isinstance(value, int):
        return decode_wait_status(value) if value > 255 else (value, 0)
    text = str(value).strip()
    if ":" in text:
        return parse_exit_code2(text)
    try:
        n = int(text)
    except ValueError:
        return None, None
    return decode_wait_status(n) if n > 255 else (n, 0)


def exit_info_from_env(env: Mapping[str, str]) -> dict:
    """Exit data from an epilog environment, ready to splat into ClassifyInput.

    Prefers SLURM_JOB_EXIT_CODE2 (unambiguous) over the raw wait status.
    """
    code, sig = parse_exit_code2(env.get("SLURM_JOB_EXIT_CODE2"))
    if code is None:
        code, sig = decode_wait_status(env.get("SLURM_JOB_EXIT_CODE"))
    derived, _dsig = decode_wait_status(env.get("SLURM_JOB_DERIVED_EC"))
    return {"exit_code": code, "signal": sig, "derived_exit_code": derived}
