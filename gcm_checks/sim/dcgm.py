"""Simulated dcgmi: a scenario's ``dcgm_diag`` stands in for ``dcgmi diag -j``.

The canned text goes through the same parser and the same judgement of how
the run ended (``gcm_checks.gather.dcgm.interpret``) as the real dcgmi's
output, so a scenario tests the production path from stdout on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

from gcm_checks import proc
from gcm_checks.gather.dcgm import DiagParseError, DiagReport, could_not_tell, interpret, only_gpus, parse_document


@dataclass(frozen=True)
class CannedBackend:
    """Simulation: a scenario's ``dcgm_diag`` stands in for dcgmi.

    ``canned`` is either the JSON text (or an already-parsed mapping) that
    dcgmi would print on stdout, or a mapping ``{stdout, stderr, returncode,
    timeout, missing}`` describing how the run ended, so a scenario can also
    simulate nv-hostengine being down or dcgmi hanging.
    """

    canned: Any
    gpu_ids: Optional[Tuple[int, ...]] = None  # as dcgmi -i: report only these GPUs

    def run(self, level: int, timeout: float) -> DiagReport:
        report = self._run(level, timeout)
        return only_gpus(report, self.gpu_ids) if self.gpu_ids else report

    def _run(self, level: int, timeout: float) -> DiagReport:
        c = self.canned
        if isinstance(c, Mapping) and _is_run_description(c):
            if c.get("missing"):
                outcome = proc.Outcome.MISSING
            elif c.get("timeout"):
                outcome = proc.Outcome.TIMEOUT
            else:
                outcome = proc.Outcome.OK if int(c.get("returncode", 0)) == 0 else proc.Outcome.NONZERO
            stdout = c.get("stdout", "")
            if isinstance(stdout, Mapping):
                stdout = json.dumps(stdout)
            r = proc.ProcResult(
                ("dcgmi", "diag", "-r", str(level), "-j"),
                outcome,
                None if outcome in (proc.Outcome.MISSING, proc.Outcome.TIMEOUT) else int(c.get("returncode", 0)),
                str(stdout or ""),
                str(c.get("stderr", "")),
                float(timeout) if outcome is proc.Outcome.TIMEOUT else 0.0,
            )
            return interpret(r, level, "sim")
        if isinstance(c, Mapping):
            try:
                return parse_document(c, level, "sim")
            except DiagParseError as e:
                return could_not_tell(level, "sim", f"could not parse dcgmi diag output: {e}")
        r = proc.ProcResult(("dcgmi",), proc.Outcome.OK, 0, str(c), "", 0.0)
        return interpret(r, level, "sim")


def _is_run_description(c: Mapping) -> bool:
    return bool({"stdout", "stderr", "returncode", "timeout", "missing"} & set(c)) and not (
        {"DCGM Diagnostic", "DCGM GPU Diagnostic", "iterations"} & set(c)
    )
