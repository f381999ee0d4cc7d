"""The error guard every node mode runs under (prolog, epilog, health).

Load the config (a broken one falls back to built-in defaults, report-only),
open the log, refuse unsafe directories, then run the mode; anything that
goes wrong on our side is logged and exits 0 - never a drain or a requeue
(rule 2). It lives here, not in one command, because every mode owns it.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings

from gcm_checks.logs import slurmd_line  # the one plain stderr line (logs.py says when)


def guarded(args: argparse.Namespace, kind: str, body: Callable[..., int]) -> int:
    """Load config and open the log, then run ``body``; anything that goes
    wrong on our side is reported and exits 0 - never a drain or requeue.

    A broken config does not stop the run: the hardware is still checked with
    built-in defaults in report-only (``config.load_or_defaults``), so the
    admin learns of the bad node AND of the bad config, and nothing drains.
    """
    t0 = time.monotonic()
    from gcm_checks.config import load_or_defaults

    settings, cfg_err = load_or_defaults(args.config, getattr(args, "node", None))
    if cfg_err is not None:
        slurmd_line(f"gcm-checks {kind}: CONFIG ERROR - {cfg_err}; running built-in defaults in report-only "
                    "(nothing is drained); fix it, then run 'gcm-checks config check'")
    from gcm_checks.logs import close_log, open_log

    node = settings.node
    job_id = os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID")
    # The prolog runs before every job: structlog's import alone would be a
    # quarter of its time budget, so it writes the same lines without it.
    log = open_log(settings.log_path, fast=(kind == "prolog"), mode=kind, node=node, job_id=job_id)
    try:
        if cfg_err is not None:
            log.error("config_error", error=str(cfg_err), file=cfg_err.source, key=cfg_err.key,
                      running="built-in defaults, report-only")
        refuse_unsafe_dirs(settings, kind, log)
        return body(args, settings, node, job_id, log, t0)
    except BrokenPipeError:  # the reader went away (| head): nothing to report
        return 0
    except Exception as e:  # noqa: BLE001 - our bug: report, never drain
        try:
            log.exception("internal_error", error=str(e))
        except Exception:  # noqa: BLE001 - a full log disk must not turn this into a crash
            pass
        slurmd_line(f"gcm-checks {kind} {node}: UNKNOWN - internal error: {type(e).__name__}: {e}")
        return 0
    finally:
        try:
            close_log()
        except Exception:  # noqa: BLE001
            pass


def refuse_unsafe_dirs(settings: "Settings", kind: str, log: Any) -> None:
    """Root never uses a state, spool or outbox directory others can write.

    Refused loudly and never a drain: the state moves to a fresh private
    directory for this run (job start, drain records, baselines are not
    kept), and the job report and notification are skipped.
    """
    from gcm_checks.state import unsafe_dir

    problem = unsafe_dir(settings.state_dir)
    if problem:
        import tempfile

        private = tempfile.mkdtemp(prefix="gcm-checks-state-")
        log.error("unsafe_dir", setting="state_dir", problem=problem, using=private)
        slurmd_line(f"gcm-checks {kind}: REFUSED state_dir: {problem}; using {private} for this run - fix: chown root, chmod go-w")
        settings.data["state_dir"] = private
    for key, where in (("report.spool_dir", settings.report.spool_dir), ("report.outbox_dir", settings.report.outbox_dir),
                       ("notify.outbox_dir", settings.notify.outbox_dir)):
        problem = unsafe_dir(where)
        if problem:
            log.error("unsafe_dir", setting=key, problem=problem, skipped="job report and notification")
            slurmd_line(f"gcm-checks {kind}: REFUSED {key}: {problem}; job report and notification skipped - fix: chown root, chmod go-w")
            settings.data.setdefault("epilog", {})["report"] = False
            settings.data.setdefault("notify", {})["channels"] = []
