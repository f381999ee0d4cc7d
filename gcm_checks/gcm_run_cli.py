"""``gcm-run [options] -- CMD ARGS...``: wrap a training command.

Parse, build ``RunOptions``, hand over to ``gcm_checks.wrapper.launcher``. The
exit status is the child's (N, or 128+signal); 2 means gcm-run itself could
not start (bad options, no log) and nothing was launched.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import List, Optional, Sequence

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gcm-run",
        usage="gcm-run [options] -- CMD [ARGS...]",
        description="Run CMD with a durable log, its exact exit status, live progress "
        "(status file, Slurm job comment), stall and NaN-loss alerts, and a classified report at exit.",
    )
    p.add_argument("--log", metavar="PATH", help="log file (appended; default: ./gcm-run-<job or time>.log, "
                   "or under $GCM_RUN_LOG_DIR)")
    p.add_argument("--name", default="", help="a name for this run in reports and `gcm-checks jobs`")
    p.add_argument("--notify", default="on_failure", metavar="POLICY",
                   help="always | on_failure (default; also stalls and NaN) | never")
    p.add_argument("--stall-after", metavar="DURATION",
                   help="alert when the step counter has not advanced for this long, whatever else the program "
                   "prints, e.g. 30m, 2h (default: auto, judged from the job's own step rate; 'off' disables)")
    p.add_argument("--silent-after", metavar="DURATION",
                   help="no-output alert after this long (default: same as --stall-after)")
    p.add_argument("--kill-on-stall", action="store_true",
                   help="end the job (SIGTERM, then SIGKILL) when it stalls; recorded in the report")
    p.add_argument("--kill-on-nan", action="store_true", help="end the job when the loss becomes NaN or inf")
    p.add_argument("--kill-grace", default="30s", metavar="DURATION",
                   help="time between SIGTERM and SIGKILL for --kill-on-* (default 30s)")
    p.add_argument("--pty", choices=("auto", "always", "never"), default="auto",
                   help="give the command a terminal when ours is one (auto, default), so progress bars render")
    p.add_argument("--no-comment", action="store_true", help="do not put progress in the Slurm job comment")
    p.add_argument("--comment-interval", metavar="DURATION", default=None,
                   help="at most one job-comment update per DURATION (default 60s; env GCM_RUN_COMMENT_INTERVAL)")
    p.add_argument("--straggler-threshold", default="20%", metavar="PCT",
                   help="name a node whose step rate is this much below the other nodes' median (default 20%%)")
    p.add_argument("--straggler-window", default="5m", metavar="DURATION",
                   help="sliding window over which step rates are compared (default 5m)")
    p.add_argument("--simulate", metavar="SCENARIO", default=None,
                   help="sample simulated GPUs (a gcm_checks.sim scenario) instead of NVML; for tests and demos")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    return p


def default_log_path(name: str, env: "os._Environ[str] | dict") -> str:
    d = env.get("GCM_RUN_LOG_DIR") or "."
    job = env.get("SLURM_JOB_ID")
    stem = name or "gcm-run"
    if job:
        step = env.get("SLURM_STEP_ID")
        tag = f"{job}" + (f".{step}" if step else "") + f".{env.get('SLURM_PROCID', '0')}"
    else:
        tag = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem)[:64]
    return os.path.join(d, f"{safe}-{tag}.log")


def split_argv(argv: Sequence[str]) -> "tuple[List[str], List[str]]":
    """Options before ``--``, the command after. Without ``--`` the command
    starts at the first word that is not an option."""
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    opts_part, cmd = split_argv(argv)
    parser = build_parser()
    try:
        args = parser.parse_args(opts_part)
    except SystemExit as e:
        return int(e.code or 0)
    command = cmd or [a for a in (args.command or []) if a != "--"]
    if not command:
        parser.print_usage(sys.stderr)
        print("gcm-run: no command given (put it after --)", file=sys.stderr)
        return EXIT_USAGE

    from gcm_checks.wrapper.comment import DEFAULT_INTERVAL_S, interval_from_env
    from gcm_checks.wrapper.finish import normalize_policy
    from gcm_checks.wrapper.launcher import RunOptions, run_wrapped
    from gcm_checks.wrapper.watch import parse_duration

    env = os.environ
    try:
        policy = normalize_policy(args.notify)
        stall_word = (args.stall_after or "auto").strip().lower()
        stall = None if stall_word in ("auto", "off", "never", "no") else parse_duration(args.stall_after)
        silent = parse_duration(args.silent_after) if args.silent_after else stall
        threshold = parse_percent(args.straggler_threshold)
        window = parse_duration(args.straggler_window)
        grace = parse_duration(args.kill_grace)
        interval = (parse_duration(args.comment_interval) if args.comment_interval
                    else interval_from_env(env, DEFAULT_INTERVAL_S))
        tick = float(env.get("GCM_RUN_TICK", "") or 1.0)
        status_every = float(env.get("GCM_RUN_STATUS_INTERVAL", "") or 2.0)
    except ValueError as e:
        print(f"gcm-run: {e}", file=sys.stderr)
        return EXIT_USAGE
    if (args.kill_on_stall and stall is None):
        print("gcm-run: --kill-on-stall needs --stall-after", file=sys.stderr)
        return EXIT_USAGE
    # Check often enough that a short stall timeout is noticed on time.
    for limit in (stall, silent):
        if limit:
            tick = min(tick, max(0.05, limit / 4))
    opts = RunOptions(
        argv=command,
        log_path=args.log or default_log_path(args.name, env),
        name=args.name,
        notify_policy=policy,
        stall_after_s=stall,
        silent_after_s=silent,
        kill_on_stall=args.kill_on_stall,
        kill_on_nan=args.kill_on_nan,
        kill_grace_s=grace,
        pty=args.pty,
        comment="off" if args.no_comment else "auto",
        comment_interval_s=interval,
        status_interval_s=min(status_every, max(tick, 0.05)) if stall else status_every,
        tick_s=tick,
        stall_auto=stall_word == "auto",
        straggler_threshold=threshold,
        straggler_window_s=window,
    )
    if args.simulate:
        os.environ["GCM_RUN_SIMULATE"] = args.simulate
    return run_wrapped(opts)


def parse_percent(text: str) -> float:
    """'20%', '20', '0.2' -> 0.2; ValueError outside (0, 1)."""
    t = text.strip().rstrip("%")
    v = float(t)
    v = v / 100.0 if (text.strip().endswith("%") or v >= 1) else v
    if not 0 < v < 1:
        raise ValueError(f"bad straggler threshold {text!r} (use e.g. 20%)")
    return v


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
