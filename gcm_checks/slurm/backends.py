"""The ``SlurmBackend`` interface and its two implementations: scontrol
(every call bounded by ``timeout_s`` through ``gcm_checks.proc``) and the
dry run that says what it would run.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple

try:  # Python >= 3.8
    from typing import Protocol
except ImportError:  # pragma: no cover
    Protocol = object  # type: ignore

from gcm_checks.slurm.parse import NodeInfo, SlurmError, parse_key_values, parse_node, parse_nodes

DEFAULT_TIMEOUT_S = 5.0


class SlurmBackend(Protocol):
    def node_info(self, node: str) -> NodeInfo: ...

    def drain(self, node: str, reason: str) -> None: ...

    def resume(self, node: str) -> None: ...

    def set_features(self, node: str, available: List[str], active: List[str]) -> None: ...

    def set_extra(self, node: str, extra: str) -> None: ...

    def set_job_comment(self, job_id: str, comment: str) -> None: ...

    def show_job(self, job_id: str) -> Dict[str, str]: ...


def _feature_arg(features: Sequence[str]) -> str:
    # An empty list must still be sent: scontrol reads "Features=" as "none".
    return ",".join(features)


class _ScontrolUpdates:
    """The scontrol update argv for every write, in one place: the real
    backend runs it, the dry-run backend prints it, and they cannot drift."""

    def _update(self, *argv: str) -> Any:
        raise NotImplementedError

    def drain(self, node: str, reason: str) -> None:
        self._update("update", f"nodename={node}", "state=drain", f"reason={reason}")

    def resume(self, node: str) -> None:
        self._update("update", f"nodename={node}", "state=resume")

    def set_features(self, node: str, available: List[str], active: List[str]) -> None:
        self._update("update", f"nodename={node}", f"AvailableFeatures={_feature_arg(available)}", f"ActiveFeatures={_feature_arg(active)}")

    def set_extra(self, node: str, extra: str) -> None:
        self._update("update", f"nodename={node}", f"Extra={extra}")

    def set_features_and_extra(self, node: str, available: List[str], active: List[str], extra: str) -> None:
        # One update RPC instead of two: health transitions stay cheap.
        self._update("update", f"nodename={node}", f"AvailableFeatures={_feature_arg(available)}",
                     f"ActiveFeatures={_feature_arg(active)}", f"Extra={extra}")

    def set_job_comment(self, job_id: str, comment: str) -> None:
        self._update("update", f"jobid={job_id}", f"comment={comment}")


class ScontrolBackend(_ScontrolUpdates):
    """Runs ``scontrol`` by absolute path, every call under ``timeout_s``."""

    def __init__(self, scontrol: Optional[str] = None, timeout_s: float = DEFAULT_TIMEOUT_S, env: Optional[Dict[str, str]] = None):
        from gcm_checks.proc import which

        # which() also vets an explicit path: a configured but absent scontrol
        # means "no Slurm here", not a crash on the first call.
        self.scontrol = which(scontrol or "scontrol")
        self.timeout_s = float(timeout_s)
        self.env = env
        self.calls: List[Tuple[str, ...]] = []  # argv of every call, for tests and logs

    def _run(self, *args: str) -> str:
        if not self.scontrol:
            raise SlurmError("scontrol: not found (set slurm.scontrol)")
        from gcm_checks.proc import run

        argv = (self.scontrol,) + tuple(args)
        self.calls.append(argv)
        res = run(argv, timeout=self.timeout_s, env=self.env)
        if not res.ok:
            raise SlurmError(res.describe())
        return res.stdout

    def node_info(self, node: str) -> NodeInfo:
        return parse_node(self._run("show", "node", "-o", node))

    def show_nodes(self, expr: Optional[str] = None) -> str:
        """``scontrol show node -o`` for all nodes, or those in a hostlist
        expression, in one RPC: the text, for a parser in ``parse``."""
        return self._run("show", "node", "-o", *([expr] if expr else []))

    def nodes(self, expr: Optional[str] = None) -> List[NodeInfo]:
        """All nodes, or those in a hostlist expression, in one RPC."""
        return parse_nodes(self.show_nodes(expr))

    def _update(self, *argv: str) -> str:
        return self._run(*argv)

    def show_job(self, job_id: str) -> Dict[str, str]:
        out = self._run("show", "job", "-o", str(job_id))
        line = next((ln for ln in out.splitlines() if ln.strip().startswith("JobId=")), "")
        if not line:
            raise SlurmError(f"no JobId in scontrol output for job {job_id}")
        return parse_key_values(line)


class DryRunBackend(_ScontrolUpdates):
    """Says what it would do and does nothing (``--dry-run``, report-only).

    Reads go to ``reader`` when one is given (report-only mode on a real
    cluster decides from the real node state), else to ``state``.
    """

    def __init__(self, out: Optional[TextIO] = None, state: Optional[NodeInfo] = None, reader: Optional[SlurmBackend] = None, log: Any = None):
        self.out = out if out is not None else sys.stdout
        self.state = state
        self.reader = reader
        self.log = log
        self.actions: List[str] = []

    def _would(self, *argv: str) -> None:
        from shlex import quote

        def word(a: str) -> str:
            k, eq, v = a.partition("=")
            return f"{k}={quote(v)}" if eq and v else quote(a)

        command = "scontrol " + " ".join(word(a) for a in argv)
        line = f"would run: {command}"
        self.actions.append(line)
        if self.log is not None:
            self.log.info("slurm_would_run", command=command)
        if self.out is not None:
            # The dry run's answer to whoever asked (stderr of the command).
            self.out.write(line + "\n")

    def node_info(self, node: str) -> NodeInfo:
        if self.reader is not None:
            try:
                return self.reader.node_info(node)
            except SlurmError as e:
                # A dry run must still say what it would do when slurmctld is
                # not reachable (a demo machine, a node being qualified).
                if self.log is not None:
                    self.log.warning("slurm_unreadable", node=node, error=str(e), assumed="not drained")
        if self.state is not None:
            return self.state
        return NodeInfo(name=node, state="UNKNOWN")

    def _update(self, *argv: str) -> None:
        self._would(*argv)

    def show_job(self, job_id: str) -> Dict[str, str]:
        if self.reader is not None:
            return self.reader.show_job(job_id)
        return {}
