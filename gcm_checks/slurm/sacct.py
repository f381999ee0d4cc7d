"""Accounting: running ``sacct`` (its rows are read by ``parse``).

Only the batched refinement pass, ``why`` and ``failures`` call these -
never the prolog or a per-node epilog: one sacct per job end on every node
is exactly the slurmdbd load Slurm's docs warn prolog/epilog authors about.
"""

from __future__ import annotations

import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from gcm_checks.slurm.parse import SlurmError, iter_sacct_rows, parse_sacct

# Slurm 22.05 sacct has no Restarts, StdOut or StdErr field (facts #9): a
# requeued job's runs are told apart with --duplicates, the logs come from
# ``scontrol show job`` while the job is still known.
SACCT_FIELDS: Tuple[str, ...] = (
    "JobID", "JobIDRaw", "JobName", "User", "UID", "Partition", "State", "ExitCode",
    "DerivedExitCode", "Reason", "Elapsed", "Timelimit", "MaxRSS", "NodeList",
    "Submit", "Start", "End", "WorkDir",
)
SACCT_TIMEOUT_S = 30.0


def sacct_time(t: float) -> str:
    """sacct's -S/-E take local time without a zone."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def sacct_argv(
    sacct: str,
    *,
    since: Optional[float] = None,
    until: Optional[float] = None,
    job_ids: Sequence[str] = (),
    partition: Optional[str] = None,
    fields: Sequence[str] = SACCT_FIELDS,
    duplicates: bool = True,
) -> List[str]:
    argv = [sacct, "--parsable2", "--noheader", "-o", ",".join(fields)]
    if duplicates:
        argv.append("--duplicates")  # every run of a requeued job, not just the last
    if job_ids:
        argv += ["-j", ",".join(str(j) for j in job_ids)]
    else:
        argv.append("--allusers")
    if since is not None:
        argv += ["-S", sacct_time(since)]
    elif job_ids:
        # -j alone only looks at today's jobs on some versions; look back far.
        argv += ["-S", "1970-01-02T00:00:00"]
    if until is not None:
        argv += ["-E", sacct_time(until)]
    if partition:
        argv += ["-r", partition]
    return argv


def _sacct_call(sacct: Optional[str], query: Dict[str, Any]) -> Tuple[List[str], Sequence[str]]:
    """The one preamble of every sacct call: the binary (a missing one is a
    ``SlurmError``), the argv for ``query`` (``sacct_argv``'s keywords) and
    the fields its rows are parsed with."""
    from gcm_checks.proc import which

    path = which(sacct or "sacct")
    if not path:
        raise SlurmError("sacct: not found (set accounting.sacct)")
    return sacct_argv(path, **query), query.get("fields", SACCT_FIELDS)


def sacct_rows(
    *,
    sacct: Optional[str] = None,
    timeout: float = SACCT_TIMEOUT_S,
    env: Optional[Dict[str, str]] = None,
    runner: Any = None,
    **query: Any,
) -> List[Dict[str, str]]:
    """One ``sacct`` call: every job and step in the window (or the given ids).

    ``query``: ``sacct_argv``'s keywords (``since``, ``until``, ``job_ids``,
    ``partition``, ``fields``, ``duplicates``). Raises ``SlurmError`` when
    sacct is missing, fails (no slurmdbd: "accounting storage is disabled")
    or times out; callers report that as unknown. ``runner`` (default
    ``gcm_checks.proc.run``) is injectable so tests can count calls.
    """
    from gcm_checks.proc import run

    argv, fields = _sacct_call(sacct, query)
    res = (runner or run)(argv, timeout=timeout, env=env)
    if not res.ok:
        raise SlurmError(res.describe())
    return parse_sacct(res.stdout, fields)


def sacct_stream(
    *,
    sacct: Optional[str] = None,
    timeout: float = SACCT_TIMEOUT_S,
    env: Optional[Dict[str, str]] = None,
    notes: Any = None,
    **query: Any,
) -> Iterator[Dict[str, str]]:
    """``sacct_rows`` streamed: rows as sacct prints them, memory independent
    of their number (``failures --since 7d`` over a fleet: a million rows).

    Raises ``SlurmError`` when sacct is missing (at the first row) or, after
    the last row, when it failed or ran past ``timeout`` - so a caller never
    mistakes a cut-off listing for a complete one.
    """
    from gcm_checks.proc import LineStream

    argv, fields = _sacct_call(sacct, query)
    stream = LineStream(argv, timeout=timeout, env=env)
    yield from iter_sacct_rows(stream, fields, notes)
    res = stream.result
    if res is None or not res.ok:
        raise SlurmError(res.describe() if res is not None else "sacct: no result")


def sacct_job(job_id: str, **kw: Any) -> List[Dict[str, str]]:
    """All runs and steps of one job (``--duplicates``)."""
    return sacct_rows(job_ids=[str(job_id)], **kw)
