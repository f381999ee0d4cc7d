"""The only module that talks to Slurm (rule 3, STYLE.md practice 6).

Everything Slurm-visible that gcm-checks does - drain, resume, node features,
the node's ``Extra`` summary, a job's comment - goes through one small
``SlurmBackend`` interface. The default backend runs ``scontrol`` by absolute
path (a prolog has no PATH, Slurm 22.05) through ``gcm_checks.proc.run`` with a
timeout: an unreachable slurmctld must cost a bounded wait and a log line,
never a hang and never a drain (peer tools drained whole racks with "Script
timed out" when ``scontrol`` hung).

Ownership rules, enforced by ``apply_drain`` / ``apply_resume``:

* our drain reasons start with ``gcm:``; a reason that does not is someone
  else's (an admin's maintenance, Slurm's own "Prolog error") and is never
  overwritten and never resumed (NHC once resumed nodes drained for
  maintenance);
* every drain we make is recorded under ``state_dir`` so a healthy run can tell
  without any RPC whether a gcm drain may exist - a healthy prolog makes zero
  ``REQUEST_UPDATE_NODE`` calls, a drain exactly one.

Health is published as node features (``gcm_ok`` / ``gcm_degraded`` /
``gcm_qualified``) plus a compact summary in ``Extra``, written only on
transitions. Features set with scontrol are lost on ``scontrol reconfigure``
(``Extra`` survives), so the last applied state is kept locally and health mode
re-applies it.

The package, one concern a module (each imports only the ones above it):

* ``reasons``      the ``gcm:`` drain reason: make, sanitise, read back
* ``parse``        scontrol ``-o`` records, sacct ``--parsable2`` rows; ``SlurmError``
* ``backends``     ``SlurmBackend``: scontrol (bounded), dry run
* ``choose``       which backend a run gets from its settings
* ``local_state``  our drain/feature records under ``state_dir``
* ``drains``       drain and resume with ownership
* ``features``     node features and our segment of ``Extra``
* ``nodes``        many nodes in one read: listing, the brake's census
* ``sacct``        accounting queries (batched passes only, never the prolog)

The in-memory fake slurmctld is ``gcm_checks.testing.MemoryBackend``.

``from gcm_checks import slurm; slurm.apply_drain(...)`` works: a name is
looked up in ``_WHERE`` and its module imported on first use (PEP 562), so
importing the package costs nothing and a caller pays only for the modules
it touches (the prolog path, rule 7).
"""

from __future__ import annotations

from typing import Any, Dict, List

# Public name -> the module of this package that defines it.
_WHERE: Dict[str, str] = {
    # reasons
    "GCM_PREFIX": "reasons", "MAX_REASON": "reasons", "sanitize_reason": "reasons",
    "reason_head": "reasons", "make_drain_reason": "reasons", "reason_check": "reasons",
    # parse
    "SlurmError": "parse", "NodeInfo": "parse", "parse_key_values": "parse", "parse_nodes": "parse",
    "parse_node": "parse", "parse_sacct": "parse", "iter_sacct_rows": "parse",
    "is_placeholder_row": "parse", "parse_census": "parse", "CensusEntry": "parse",
    # backends
    "DEFAULT_TIMEOUT_S": "backends", "SlurmBackend": "backends", "ScontrolBackend": "backends",
    "DryRunBackend": "backends",
    # choose
    "report_only": "choose", "backend_from_settings": "choose",
    # local_state
    "DRAIN_STATE_FILE": "local_state", "FEATURE_STATE_FILE": "local_state",
    "drain_record": "local_state", "record_drain": "local_state", "forget_drain": "local_state",
    "feature_record": "local_state", "record_features": "local_state", "conf_stamp": "local_state",
    # drains
    "DrainOutcome": "drains", "ResumeOutcome": "drains", "apply_drain": "drains",
    "apply_resume": "drains", "NO_AUTO_RESUME": "drains", "resume_if_passed": "drains",
    # features
    "GCM_FEATURES": "features", "FeatureOutcome": "features",
    "merge_features": "features", "summary_extra": "features",
    "gcm_summary": "features", "merge_extra": "features", "apply_features": "features",
    # nodes
    "node_census": "nodes", "list_nodes": "nodes",
    # sacct
    "SACCT_FIELDS": "sacct", "SACCT_TIMEOUT_S": "sacct", "sacct_time": "sacct",
    "sacct_argv": "sacct", "sacct_rows": "sacct", "sacct_stream": "sacct", "sacct_job": "sacct",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_WHERE))
