"""Apply the rule table to one job's inputs and pick one explainable answer.

Gather apart from judge: everything here is a pure function of
:class:`ClassifyInput`; reading logs (bounded) and asking Slurm happen elsewhere.
"""

from __future__ import annotations

import re
from dataclasses import fields
from typing import Any, Dict, List, Optional, Sequence, Tuple

from gcm_checks.classify.model import ClassifyInput, Classification, Evidence, LogText
from gcm_checks.classify.rules_more import ALL_BY_ID as RULES_BY_ID
from gcm_checks.classify.scan import MAX_EVIDENCE, SCAN_CHARS, Hit, sanitize, scan_text  # noqa: F401 (re-exported)
from gcm_checks.classify.taxonomy import CATEGORIES


def _apply_text_order(hits: List[Hit]) -> None:
    """Demote matches that are consequences, judged by their order in one text."""
    first_seen: Dict[str, int] = {}
    for h in hits:
        first_seen[h.base_rule] = min(first_seen.get(h.base_rule, h.first_pos), h.first_pos)
    terminal_at: Optional[int] = None
    for h in hits:
        rule = RULES_BY_ID[h.base_rule]
        if rule.unless_after and first_seen.get(rule.unless_after, h.pos + 1) < h.pos:
            # srun killed the step because a task failed: not a user's cancel.
            h.rank, h.confidence = 1, 0.2
            continue
        if rule.terminal and (terminal_at is None or h.first_pos < terminal_at):
            terminal_at = h.first_pos
    causes = [h.first_pos for h in hits if h.category in _CAUSE_CATEGORIES and h.rank >= R_MIN_CAUSE]
    if causes:
        earliest_cause = min(causes)
        for h in hits:
            if RULES_BY_ID[h.base_rule].symptom and h.first_pos > earliest_cause:
                h.rank = min(h.rank, R_MIN_CAUSE - 1)
    if terminal_at is None:
        return
    for h in hits:
        rule = RULES_BY_ID[h.base_rule]
        if h.first_pos > terminal_at and h.rank < R_KEEP_AFTER_TERMINAL and not rule.terminal:
            # After "CANCELLED ... DUE TO TIME LIMIT" the SIGTERM traceback, the
            # NCCL abort and "Killed" are fallout, not the cause.
            h.rank = min(h.rank, 3)


# Errors the job raises itself; any of them before a symptom (NCCL watchdog
# timeout) is the cause of that symptom.
_CAUSE_CATEGORIES = frozenset({"software_exception", "data_input", "import_env", "numeric_divergence", "cuda_runtime",
                               "gpu_oom", "host_oom", "segfault_signal", "storage_io"})
R_MIN_CAUSE = 30

# Hardware evidence after a termination line still counts: a GPU that fell off
# the bus is a fact about the node whatever the scheduler was doing.
R_KEEP_AFTER_TERMINAL = 94


# --------------------------------------------------------------------------- structured inputs

_STATE_RULES: Dict[str, Tuple[str, str, int, float, str]] = {
    # state -> (rule id, category, rank, confidence, says). Ranks equal the
    # matching log rules', so the log line (which says when) wins the tie.
    "TIMEOUT": ("slurm.state.timeout", "timeout_walltime", 90, 0.95, "Slurm ended the job at its time limit"),
    "DEADLINE": ("slurm.state.deadline", "timeout_walltime", 90, 0.9, "the job reached its --deadline"),
    "NODE_FAIL": ("slurm.state.node_fail", "node_failure", 96, 0.95, "Slurm lost a node the job was running on"),
    "BOOT_FAIL": ("slurm.state.boot_fail", "node_failure", 96, 0.9, "the job's nodes failed to boot"),
    "PREEMPTED": ("slurm.state.preempted", "preempted", 90, 0.95, "the scheduler preempted the job"),
    "OUT_OF_MEMORY": ("slurm.state.out_of_memory", "host_oom", 84, 0.95,
                      "Slurm killed the job for exceeding its memory request"),
    "CANCELLED": ("slurm.state.cancelled", "cancelled_user", 57, 0.8, "the job was cancelled"),
}
_REASON_RULES = {
    "timelimit": "TIMEOUT",
    "nodedown": "NODE_FAIL",
    "node_fail": "NODE_FAIL",
    "preempted": "PREEMPTED",
    "outofmemory": "OUT_OF_MEMORY",
    "nodefail": "NODE_FAIL",
}
# Signals a process dies of when it crashes by itself (not when it is killed).
_CRASH_SIGNALS = {4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 11: "SIGSEGV"}


_KNOWN_STATES = ("BOOT_FAIL", "CANCELLED", "COMPLETED", "COMPLETING", "DEADLINE", "FAILED", "NODE_FAIL",
                 "OUT_OF_MEMORY", "PREEMPTED", "REQUEUED", "RUNNING", "TIMEOUT")


def _norm_state(state: Optional[str]) -> Optional[str]:
    if not state or not isinstance(state, str) or not state.strip():
        return None
    # sacct prints "CANCELLED by 1234" and, in narrow columns, "OUT_OF_ME+";
    # scontrol prints JobState=TIMEOUT.
    s = state.strip().upper().split()[0].split("=", 1)[-1].rstrip("+")
    if s not in _KNOWN_STATES and len(s) >= 4:
        s = next((k for k in _KNOWN_STATES if k.startswith(s)), s)
    return s or None


def _exit_says_success(inp: ClassifyInput) -> bool:
    state = _norm_state(inp.state)
    code_ok = inp.exit_code == 0 or (inp.exit_code is None and state == "COMPLETED")
    return code_ok and not inp.signal and not inp.derived_exit_code and state in (None, "COMPLETED", "COMPLETING")


def _exit_says_failure(inp: ClassifyInput) -> bool:
    state = _norm_state(inp.state)
    return bool(inp.exit_code or inp.signal or inp.derived_exit_code) or state in (
        "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "CANCELLED", "BOOT_FAIL", "DEADLINE")


def structured_hits(inp: ClassifyInput) -> List[Hit]:
    """Hits from node evidence and Slurm's own exit data."""
    hits: List[Hit] = []

    def add(rule_id: str, category: str, rank: int, conf: float, source: str, text: str, says: str) -> None:
        hits.append(Hit(rule_id, category, rank, conf, -1, 0, Evidence(source, 0, sanitize(text)), says))

    for x in inp.xids:
        if not isinstance(x, dict):
            continue
        sev = str(x.get("severity", "")).lower()
        resp = str(x.get("responsibility", "")).lower()
        code = x.get("xid")
        line = str(x.get("line") or f"XID {code} {x.get('name', '')}")
        if resp == "application":
            # Application XIDs (13, 31, 43, 45) are the job's own faults: they
            # explain a CUDA error, and never make it a hardware failure (rule 4).
            add("node.xid.application", "cuda_runtime", 69, 0.75, "xid", line, _xid_says(x, hardware=False))
        elif sev == "fail":
            add("node.xid.hardware", "gpu_hardware", 100, 0.97, "xid", line, _xid_says(x, hardware=True))
        elif sev == "warn":
            add("node.xid.warn", "gpu_hardware", 60, 0.5, "xid", line, _xid_says(x, hardware=True))
    for d in inp.dcgm_failures:
        if not isinstance(d, dict):
            continue
        text = f"GPU {d.get('gpu_index', '?')}: {d.get('test', '')}: {d.get('message', '')}".strip()
        add("node.dcgm", "gpu_hardware", 99, 0.93, "dcgm", text,
            f"DCGM found GPU {d.get('gpu_index', '?')} faulty ({d.get('test', 'diagnostic')})")
    for p in inp.ib_problems:
        add("node.ib", "network_fabric", 97, 0.85, "ib", str(p), f"the node's InfiniBand is unhealthy ({sanitize(str(p), 80)})")

    state = _norm_state(inp.state)
    if state not in _STATE_RULES and isinstance(inp.reason, str) and inp.reason:
        state = _REASON_RULES.get(inp.reason.strip().lower().replace(" ", ""), state)
    if state in _STATE_RULES:
        rid, cat, rank, conf, says = _STATE_RULES[state]
        shown = f"State={inp.state or state}" + (f" Reason={inp.reason}" if inp.reason else "")
        add(rid, cat, rank, conf, "slurm", shown, says)

    sig = inp.signal or 0
    code = inp.exit_code
    # A shell reports "killed by signal N" as exit code 128+N.
    if not sig and code is not None and 128 < code < 160:
        sig = code - 128
    if sig in _CRASH_SIGNALS:
        add("exit.crash_signal", "segfault_signal", 44, 0.8, "slurm", f"signal {sig} ({_CRASH_SIGNALS[sig]})",
            f"the job died of {_CRASH_SIGNALS[sig]}")
    elif sig == 9:
        # SIGKILL with no other cause is most often the OOM killer (issue 14,
        # item 4): a moderate guess that any real cause in the logs outranks.
        add("exit.sigkill", "host_oom", 40, 0.5, "slurm", "signal 9 (SIGKILL)",
            "the job was SIGKILLed with no other error, which is what the OOM killer does")
    elif sig == 15:
        # SIGTERM: scancel/qdel unless the state says TIMEOUT or PREEMPTED
        # (those state hits outrank this one).
        add("exit.sigterm", "cancelled_user", 35, 0.45, "slurm", "signal 15 (SIGTERM)",
            "the job was sent SIGTERM (cancelled; a time limit or preemption would say so)")
    elif code in (126, 127):
        add("exit.not_executable", "import_env", 20, 0.5, "slurm", f"exit code {code}",
            "a command was not found or not executable")
    if _exit_says_success(inp):
        add("exit.success", "success", 28, 0.8, "slurm", "exit code 0", "the job exited 0")
    return hits


def _xid_says(x: Dict[str, Any], hardware: bool) -> str:
    gpu = x.get("gpu_index")
    who = f"GPU {gpu}" if gpu is not None else (f"GPU {x.get('pci_bus_id')}" if x.get("pci_bus_id") else "a GPU")
    name = str(x.get("name") or "").strip().rstrip(".")
    what = f"XID {x.get('xid')}" + (f" ({sanitize(name, 80)})" if name else "")
    when = _hhmm(x.get("time"))
    at = f" at {when}" if when else ""
    if hardware:
        return f"{who} hit {what}{at} and killed the job"
    return f"{who} logged {what}{at}, an error in the job's own GPU code"


def _hhmm(t: Any) -> str:
    if t is None or t == "":
        return ""
    if isinstance(t, (int, float)):
        import datetime

        return datetime.datetime.fromtimestamp(float(t)).strftime("%H:%M")
    m = re.search(r"(\d{1,2}:\d{2})(?::\d{2})?", str(t))
    return m.group(1) if m else sanitize(str(t), 40)


# --------------------------------------------------------------------------- judging


def _as_int(v: Any) -> Optional[int]:
    if v is None or isinstance(v, bool):
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


_NORMALISED = ("logs", "state", "exit_code", "signal", "derived_exit_code", "reason", "xids", "dcgm_failures",
               "ib_problems")
if tuple(f.name for f in fields(ClassifyInput)) != _NORMALISED:  # pragma: no cover - a new field must be copied below
    raise TypeError("ClassifyInput gained a field that _normalise does not copy")


def _normalise(inp: ClassifyInput) -> ClassifyInput:
    """Coerce what callers hand over ("3", None lists) into the documented types."""
    # The constructor, not dataclasses.replace: replace() re-reads the fields
    # on every call, a few percent of a small log's time.
    return ClassifyInput(
        exit_code=_as_int(inp.exit_code),
        signal=_as_int(inp.signal),
        derived_exit_code=_as_int(inp.derived_exit_code),
        state=inp.state if isinstance(inp.state, str) else None,
        reason=inp.reason if isinstance(inp.reason, str) else None,
        logs=list(inp.logs or []),
        xids=list(inp.xids or []),
        dcgm_failures=list(inp.dcgm_failures or []),
        ib_problems=[str(p) for p in (inp.ib_problems or [])],
    )


def classify(inp: ClassifyInput) -> Classification:
    """One answer for one job: category, responsibility, confidence, rule, evidence, sentence."""
    inp = _normalise(inp)
    hits: List[Hit] = []
    for i, log in enumerate(inp.logs):
        if not isinstance(log.text, str):
            # Pure and total: a caller's bytes or None is classified, not raised.
            raw = log.text
            text = raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else str(raw or "")
            log = LogText(str(log.source), text, log.first_line_no)
        text_hits = scan_text(log, i)
        _apply_text_order(text_hits)
        hits.extend(text_hits)
    structured = structured_hits(inp)
    if _exit_says_success(inp):
        # Node evidence explains a failure; it does not turn a job that exited
        # 0 into one (an XID between two jobs' kernels hurt nobody).
        for h in structured:
            if h.rule_id.startswith("node.") and h.category != "cuda_runtime":
                h.rank = 1
    hits.extend(structured)
    result = judge(hits, inp)
    if LEARNED_FALLBACK and result.confidence <= 0.5:
        result = _learned_guess(inp, result)
    return result


# Item 7 of issue 14: when no rule claims a log, a model learned from the
# labelled real excerpts may guess (gcm_checks.classify.learn, which also says
# how it was measured; docs/failure-taxonomy.md). Off by default since the fourth
# round for its cost, not its answers: cross-validation and every held-out split say
# it helps (+0.016 macro-F1 on a..h's sealed third), but at ~0.3 ms a log that
# reaches it, it costs ~35% of `classify --batch` on item 6's bench
# (docs/benchmarks.md, "Quality on real logs", fourth round). `--learned` turns it on.
LEARNED_FALLBACK_DEFAULT = False
LEARNED_FALLBACK = LEARNED_FALLBACK_DEFAULT


def _learned_guess(inp: ClassifyInput, result: Classification) -> Classification:
    from gcm_checks.classify import learn  # lazy: never on the prolog path

    model = learn.load()
    if not model:
        return result
    text = "\n".join(log.text for log in inp.logs if isinstance(log.text, str))
    got = learn.decide(model, text, result.rule, result.category, result.confidence)
    if got is None:
        return result
    label, score, why = got
    if label == "success" and _exit_says_failure(inp):
        # Issue 14 item 2: a log that merely resembles finished runs does not
        # outweigh a non-zero exit (the rules said "cannot tell" for this reason).
        return result
    cat = CATEGORIES[label]
    rule = "learned." + str(model.get("learner") or model.get("kind") or "model")
    return Classification(label, cat.responsibility, learn.answer_confidence(model, score), rule,
                          [Evidence("corpus", 0, sanitize(w)) for w in why.splitlines()],
                          f"No rule decided; a model learned from labelled real logs says {label}"
                          f" ({sanitize(why.splitlines()[0])}) — {cat.verdict}.")


def judge(hits: Sequence[Hit], inp: ClassifyInput) -> Classification:
    if not hits:
        return _fallback(inp)
    # Highest rank wins; ties go to the later text and the later line in it
    # (the last error is the one that ended the job).
    best = max(hits, key=lambda h: (h.rank, h.source_idx, h.pos))
    if best.category == "success" and any(h.category == "unknown" and h.rank > 1 for h in hits):
        # Issue 14 item 2: a completion marker counts only with no failure marker.
        # "Training completed" and then ChildFailedError, "Exited with exit code 1"
        # or sacct's FAILED row: the run did not succeed; the best remaining
        # evidence (a weak hint, else the vague failure itself) decides.
        rest = [h for h in hits if h.category != "success"]
        best = max(rest, key=lambda h: (h.rank, h.source_idx, h.pos))
    if best.category == "success" and _exit_says_failure(inp):
        # "Training finished" and then a non-zero exit: the log's success
        # marker does not explain the failure, so say we cannot tell.
        return _fallback(inp)
    if best.rank <= 1 and best.category not in ("success",):
        fb = _fallback(inp)
        if fb.category != "unknown":
            return fb
    cat = CATEGORIES[best.category]
    same_rule = [h for h in hits if h.rule_id == best.rule_id and h is not best]
    same_cat = [h for h in hits if h.category == best.category and h.rule_id != best.rule_id and h.rank > 1]
    evidence = [best.evidence]
    for h in (same_rule[-2:] + same_cat[-2:]):
        if h.evidence not in evidence and len(evidence) < MAX_EVIDENCE:
            evidence.append(h.evidence)
    conf = best.confidence
    if same_cat:
        conf = min(0.99, conf + 0.05)
    if best.category not in ("success", "unknown") and _exit_says_success(inp):
        conf *= 0.7  # the job exited 0 although its log shows an error
    return Classification(best.category, cat.responsibility, round(conf, 3), best.rule_id, evidence,
                          _sentence(best, cat.verdict, inp))


def _sentence(best: Hit, verdict: str, inp: ClassifyInput) -> str:
    says = best.says[0].upper() + best.says[1:] if best.says else ""
    ev = best.evidence
    where = ""
    if ev.line_no:
        where = f" ({ev.source} line {ev.line_no}: \"{sanitize(ev.text, 120)}\")"
    tail = verdict
    if best.rule_id == "node.xid.hardware":
        tail = "not your code; the node is being drained, resubmit the job"
    return f"{says}{where} — {tail}."


def _fallback(inp: ClassifyInput) -> Classification:
    """Nothing matched: decide from the exit data, else from whether there was any log."""
    unk = CATEGORIES["unknown"]
    if inp.exit_code is not None or inp.signal or inp.derived_exit_code or inp.state:
        if _exit_says_success(inp):
            return Classification("success", CATEGORIES["success"].responsibility, 0.8, "exit.success",
                                  [Evidence("slurm", 0, "exit code 0")], "The job exited 0 — nothing to fix.")
        code = (f"exit code {inp.exit_code}" if inp.exit_code is not None else f"state {inp.state}") + (
            f", signal {inp.signal}" if inp.signal else "") + (
            f", a step exited {inp.derived_exit_code}" if inp.derived_exit_code else "")
        return Classification("unknown", unk.responsibility, 0.3, "fallback.no_match",
                              [Evidence("slurm", 0, code)],
                              f"The job ended with {code} and its logs do not say why — {unk.verdict}.")
    if any(log.text.strip() for log in inp.logs):
        # No error, no failure marker and no exit data: we cannot tell. A failed
        # job's log without a marker we know must not read as a success
        # (issue 14): success needs exit 0 / COMPLETED or a completion marker.
        return Classification("unknown", unk.responsibility, 0.2, "fallback.no_evidence", [],
                              f"No failure marker, completion marker or exit data — {unk.verdict}.")
    return Classification("unknown", unk.responsibility, 0.0, "fallback.no_input", [],
                          "No log and no exit data to classify.")
