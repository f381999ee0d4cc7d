"""``gcm-checks qualify``: qualify this node before it enters production.

Runs the level's suites (quick: prolog + epilog; standard: + DCGM level 2 +
performance probe; deep: + DCGM level 3 + long probe), writes a versioned JSON
result file into ``qualify.results_dir``, then publishes the outcome in Slurm:
feature ``gcm_qualified`` on pass, a ``gcm: qualify: ...`` drain on fail.

Exit status: 0 qualified (pass or warn), 1 not qualified (fail or unknown),
2 configuration or usage error.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, List, Optional

from gcm_checks.commands._suite import add_common

if TYPE_CHECKING:
    from gcm_checks.config.types import Settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common(parser)
    parser.add_argument("--level", choices=("quick", "standard", "deep"),
                        help="quick = prolog+epilog suites; standard = + DCGM level 2 + perf probe; "
                             "deep = + DCGM level 3 + long probe (default: qualify.level)")
    parser.add_argument("--results-dir", metavar="DIR", help="override qualify.results_dir")
    parser.add_argument("--no-slurm", action="store_true", help="write the result file, take no Slurm action")


class ProgressBar:
    """A live bar on a terminal, one plain line per phase otherwise (logs, sbatch output)."""

    WIDTH = 24

    def __init__(self, node: str, level: str, out: Any, live: bool):
        self.node, self.level, self.out, self.live = node, level, out, live
        self.t0 = time.monotonic()
        self.state = (0, 1, "")
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ticker: Optional[threading.Thread] = None
        if live:
            # Long phases (DCGM level 3 runs for most of an hour) still show time passing.
            self._ticker = threading.Thread(target=self._tick, name="qualify-progress", daemon=True)
            self._ticker.start()

    def __call__(self, done: int, total: int, label: str, results: Optional[List[Any]]) -> None:
        with self._lock:
            self.state = (done, total, label)
            if self.live:
                self._draw()
            elif results is None:
                print(f"qualify {self.node} [{done + 1}/{total}] {label} ... ({time.monotonic() - self.t0:.0f}s)", file=self.out, flush=True)
            else:
                from gcm_checks.commands._suite import counts

                c = counts(results)
                print(f"qualify {self.node} [{done}/{total}] {label} done: {c['pass']} pass, {c['warn']} warn, "
                      f"{c['unknown']} unknown, {c['fail']} fail ({time.monotonic() - self.t0:.0f}s)", file=self.out, flush=True)

    def _draw(self) -> None:
        done, total, label = self.state
        filled = int(self.WIDTH * done / max(1, total))
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        self.out.write(f"\r\x1b[Kqualify {self.level} [{bar}] {done}/{total} {label} {time.monotonic() - self.t0:.0f}s")
        self.out.flush()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                self._draw()

    def close(self) -> None:
        self._stop.set()
        if self.live:
            with self._lock:
                self.out.write("\r\x1b[K")
                self.out.flush()


def run(args: argparse.Namespace) -> int:
    from gcm_checks.config import ConfigError
    from gcm_checks.qualify.levels import LevelError, resolve

    try:
        from gcm_checks.commands._suite import load_settings

        settings = load_settings(args)
        level = resolve(args.level or settings.qualify.level, settings.qualify.levels)
    except (ConfigError, LevelError) as e:
        print(f"gcm-checks qualify: configuration error: {e}", file=sys.stderr)
        return 2
    from gcm_checks.logs import close_log, open_log

    node = settings.node
    log = open_log(settings.log_path, mode="qualify", node=node, level=level.name)
    try:
        return _run(args, settings, level, node, log)
    finally:
        close_log()


def _run(args: argparse.Namespace, settings: "Settings", level: Any, node: str, log: Any) -> int:
    import os

    from gcm_checks.commands._suite import emit_json, render_table, summary_line
    from gcm_checks.qualify import qualification as qrun

    results_dir = args.results_dir or settings.qualify.results_dir
    bar = ProgressBar(node, level.name, sys.stderr, live=sys.stderr.isatty() and not args.json)
    log.info("start", level=level.name, suites=list(level.suites), dcgm_level=level.dcgm_level, probe_s=level.probe_s)
    try:
        outcome = qrun.qualify(settings, level, sim=args.sim, progress=bar, budget_s=args.budget)
    finally:
        bar.close()
    # Result file first: it must exist even if Slurm is unreachable (rule 6).
    qrun.write_result(outcome, results_dir)
    if outcome.result_error:
        log.error("result_not_written", error=outcome.result_error)
    if not args.no_slurm:
        state_dir = os.path.expanduser(settings.state_dir)
        action, reason = qrun.publish(outcome, settings, state_dir=state_dir, dry_run=args.dry_run,
                                      out=sys.stderr, log=log)
        outcome.slurm_action, outcome.slurm_reason = action, reason
        log.info("slurm", action=action, reason=reason)
        if outcome.result_path:
            qrun.write_result(outcome, results_dir)  # now with the Slurm action recorded
    from gcm_checks import telemetry

    telemetry.export(outcome.results, settings, mode="qualify", node=node, log=log, when=outcome.finished,
                     drained=(outcome.slurm_action in ("drained", "already")) if outcome.slurm_action else None)
    log.info("done", verdict=outcome.verdict.value, qualified=outcome.qualified, result_file=outcome.result_path)
    if args.json:
        emit_json(qrun.summary(outcome))
    else:
        render_table(outcome.results)
        _print_perf(outcome)
        where = outcome.result_path or outcome.result_error
        print(f"result file: {where}")
    print(summary_line(f"qualify {level.name}", node, outcome.verdict, outcome.results, outcome.slurm_action), file=sys.stderr)
    return 0 if outcome.qualified else 1


def _print_perf(outcome: Any) -> None:
    perf = outcome.perf
    if perf is None or not perf.gpus:
        return
    print(f"\nperformance ({perf.source}{', ' + perf.dtype if perf.dtype else ''}):")
    print(f"{'GPU':28} {'GEMM TFLOPS':>12} {'MEM GB/s':>10}")
    for g in perf.gpus:
        gemm = f"{g.gemm_tflops:.0f}" if g.gemm_tflops is not None else g.verdicts.get("gemm_tflops", ("-",))[0]
        bw = f"{g.mem_bw_gbps:.0f}" if g.mem_bw_gbps is not None else g.verdicts.get("mem_bw_gbps", ("-",))[0]
        print(f"{g.subject:28} {gemm:>12} {bw:>10}")
