"""``gcm-checks classify``: why did this job fail?

    gcm-checks classify --log slurm-123.out [--log err] [--state TIMEOUT] [--exit-code 0:9]
                        [--kernel-log dmesg.txt] [--json]
    gcm-checks classify --batch jobs.jsonl        # one JSON line out per line in
    gcm-checks classify --evaluate labelled.jsonl # P/R/F1, macro-F1, confusion, baseline

Thin: parse, call gcm_checks.classify, render. Exit 0 when classification ran
(whatever the category), 1 on unreadable input, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, List, Optional


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log", action="append", default=[], metavar="PATH",
                        help="job stdout/stderr file (repeatable); only its end is read")
    parser.add_argument("--state", help="Slurm job state (TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, PREEMPTED, CANCELLED, ...)")
    parser.add_argument("--reason", help="scontrol Reason (e.g. TimeLimit)")
    parser.add_argument("--exit-code", metavar="CODE[:SIGNAL]", help="job exit code as sacct shows it, e.g. 1:0 or 0:9")
    parser.add_argument("--kernel-log", metavar="PATH", help="kernel log covering the job (dmesg/journal text)")
    parser.add_argument("--max-bytes", type=int, default=None, metavar="N",
                        help="read at most the last N bytes of each log (default 1 MiB)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--batch", metavar="FILE.jsonl",
                      help='classify records {"id","text","state"?,"exit_code"?}; "-" reads stdin')
    mode.add_argument("--evaluate", metavar="FILE.jsonl", help="score labelled records against their 'label'")
    parser.add_argument("--split", choices=("all", "sealed", "tuning"), default="all",
                        help="with --evaluate: score only one split of the corpus (sealed iff sha256(source thread) mod 3 == 0)")
    parser.add_argument("--learned", "--neighbours", dest="learned", action=argparse.BooleanOptionalAction,
                        default=None,
                        help="when no rule decides, let the model learned from labelled real logs guess "
                             "(issue 14 item 7; off by default: after the last rules round cross-validation "
                             "no longer shows it pays, docs/benchmarks.md)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    from gcm_checks.commands._conventions import add_config

    add_config(parser, used=False)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "learned", None) is not None:
        from gcm_checks.classify import engine

        engine.LEARNED_FALLBACK = args.learned  # threshold and scope travel with the model (learn.py)
    if args.batch:
        return _batch(args.batch, sys.stdout)
    if args.evaluate:
        return _evaluate(args.evaluate, args.json, getattr(args, "split", "all"))
    return _single(args)


def _single(args: argparse.Namespace) -> int:
    from gcm_checks.classify import ClassifyInput, DEFAULT_MAX_BYTES, LogText, classify, parse_exit_arg, read_tail

    if not args.log and not args.state and not args.exit_code and not args.kernel_log:
        print("gcm-checks classify: give --log, --state, --exit-code or --kernel-log (or --batch/--evaluate)",
              file=sys.stderr)
        return 2
    if args.max_bytes is not None and args.max_bytes <= 0:
        print("gcm-checks classify: --max-bytes must be positive", file=sys.stderr)
        return 2
    max_bytes = args.max_bytes or DEFAULT_MAX_BYTES
    logs: List[LogText] = []
    paths = [(p, p) for p in args.log] + ([(args.kernel_log, "kernel:" + args.kernel_log)] if args.kernel_log else [])
    for path, source in paths:
        try:
            text, truncated, _size = read_tail(path, max_bytes)
        except OSError as e:
            print(f"gcm-checks classify: cannot read {path}: {e.strerror or e}", file=sys.stderr)
            return 1
        logs.append(LogText(source + (" (tail)" if truncated else ""), text))
    code, sig = parse_exit_arg(args.exit_code)
    if args.exit_code and code is None:
        print(f"gcm-checks classify: --exit-code {args.exit_code!r} is not CODE or CODE:SIGNAL", file=sys.stderr)
        return 2
    result = classify(ClassifyInput(logs=logs, state=args.state, exit_code=code, signal=sig, reason=args.reason))
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
        return 0
    print(result.sentence)
    print(f"category: {result.category}  responsibility: {result.responsibility}  "
          f"confidence: {result.confidence:.2f}  rule: {result.rule}")
    for ev in result.evidence:
        where = f"{ev.source}:{ev.line_no}" if ev.line_no else ev.source
        print(f"  {where}: {ev.text}")
    return 0


def _open(path: str) -> IO[bytes]:
    # Binary: records are read with bounded memory (classify.records).
    if path == "-":
        return sys.stdin.buffer
    return open(path, "rb")


def _batch(path: str, out: IO[str]) -> int:
    from gcm_checks.classify import classify
    from gcm_checks.classify.records import RecordError, read_records, record_to_input

    try:
        stream = _open(path)
    except OSError as e:
        print(f"gcm-checks classify: cannot read {path}: {e.strerror or e}", file=sys.stderr)
        return 1
    bad = 0
    try:
        for n, rec in read_records(stream):
            try:
                r = classify(record_to_input(rec))
            except RecordError as e:
                print(f"gcm-checks classify: {path} line {n}: {e}", file=sys.stderr)
                bad += 1
                continue
            d = r.to_dict()
            d.pop("sentence")
            out.write(json.dumps({"id": rec.get("id"), **d}, ensure_ascii=False) + "\n")
    except RecordError as e:
        print(f"gcm-checks classify: {path}: {e}", file=sys.stderr)
        return 1
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    return 1 if bad else 0


def _evaluate(path: str, as_json: bool, split: str = "all") -> int:
    import os

    from gcm_checks.classify import classify
    from gcm_checks.classify.corpus import split_of
    from gcm_checks.classify.evaluate import baseline, build_report, render
    from gcm_checks.classify.records import RecordError, read_records, record_to_input

    rows = []
    # A directory means every *.jsonl in it (the corpus is a.jsonl + b.jsonl).
    paths = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".jsonl")) \
        if path != "-" and os.path.isdir(path) else [path]
    try:
        for p in paths:
            with _open(p) as stream:
                for n, rec in read_records(stream):
                    label = rec.get("label")
                    if not isinstance(label, str):
                        raise RecordError(f"line {n}: no 'label'")
                    rid = str(rec.get("id", n))
                    if split != "all" and split_of(rec) != split:
                        continue
                    r = classify(record_to_input(rec))
                    rows.append((rid, label, r.category, r.rule,
                                 baseline(rec.get("state"), rec.get("exit_code")), r.confidence))
    except OSError as e:
        print(f"gcm-checks classify: cannot read {path}: {e.strerror or e}", file=sys.stderr)
        return 1
    except RecordError as e:
        print(f"gcm-checks classify: {path}: {e}", file=sys.stderr)
        return 1
    if not rows:
        print(f"gcm-checks classify: {path}: no records", file=sys.stderr)
        return 1
    report = build_report(rows)
    if split == "sealed":
        # The sealed split measures; it is never read to tune rules, so its
        # individual misses are not shown (issue 14).
        report.misses = []
    print(json.dumps(report.to_dict(), indent=2) if as_json else render(report))
    return 0


def main(argv: Optional[List[str]] = None) -> int:  # pragma: no cover - convenience
    p = argparse.ArgumentParser(prog="gcm-checks classify")
    add_arguments(p)
    return run(p.parse_args(argv))
