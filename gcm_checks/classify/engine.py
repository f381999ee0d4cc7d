"""Apply the rule table to one job's inputs and pick one explainable answer.

Gather apart from judge: everything here is a pure function of
:class:`ClassifyInput`; reading logs (bounded) and asking Slurm happen elsewhere.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from gcm_checks.classify.model import ClassifyInput, Classification, Evidence, LogText
from gcm_checks.classify.rules import KERNEL, LOG, RULES, RULES_BY_ID, WARNING_LINE, Rule
from gcm_checks.classify.taxonomy import CATEGORIES

# Only the end of a text is scanned: a failed job's cause is at the end, and
# this keeps a huge --batch record as cheap as a small one.
SCAN_CHARS = 256 * 1024
MAX_HITS_PER_RULE = 20
MAX_LINE_CHARS = 8192
EVIDENCE_CHARS = 300
MAX_EVIDENCE = 5
_KERNEL_SOURCES = ("kernel", "dmesg", "syslog", "journal")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")  # colour codes from rich/tqdm/loguru
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029]")


@dataclass(frozen=True)
class _Compiled:
    rule: Rule
    regex: "re.Pattern[str]"
    exclude: Optional["re.Pattern[str]"]


_COMPILED: Optional[Tuple[_Compiled, ...]] = None


def _compiled() -> Tuple[_Compiled, ...]:
    # Compiled on first use, not at import: the epilog imports this package
    # even for jobs whose logs it never needs to read.
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = tuple(
            _Compiled(r, r.compiled(), re.compile(r.exclude) if r.exclude else None) for r in RULES
        )
    return _COMPILED


@dataclass
class Hit:
    rule_id: str
    category: str
    rank: int
    confidence: float
    source_idx: int  # index of the text; structured evidence uses -1
    pos: int  # line index (last occurrence) inside the scanned text; 0 for structured hits
    evidence: Evidence
    says: str
    first_pos: int = 0  # first occurrence of the same line (text hits)
    base_rule: str = ""  # the table rule that produced it (rule_id may be refined)


# --------------------------------------------------------------------------- scanning


def sanitize(text: str, limit: int = EVIDENCE_CHARS) -> str:
    """Log text fit for a drain reason, a shell or HTML: no control chars, bounded.

    Renderers still escape for their medium; this only removes what no medium wants.
    """
    text = _CONTROL.sub(" ", _ANSI.sub("", text).replace("\t", " ")).strip()
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def _is_kernel(source: str) -> bool:
    s = source.lower()
    return any(k in s for k in _KERNEL_SOURCES)


# Deleting digits and blanks makes the thousands of progress lines of a
# training log ("iteration 4312/10000 | loss 2.31 ...") collapse to one line
# class, so the rules look at a few hundred bytes instead of megabytes.
_DIGITS_BLANKS = b"0123456789 \t"


_PREFIX = re.compile(r"^(?:\[[^\]\n]{0,40}\]:?)+")  # "[rank5]:", "[default3]:", "[1,12]<stdout>:" style


def _is_frame(line: str) -> Optional[str]:
    """The line with any rank prefix removed, if it is a stack frame, else None.

    Frames are paths and code, and rules never key on paths: skipping them
    keeps quoted source (``raise ValueError(...)``, ``except KeyError:``)
    from matching and makes tracebacks cheap.
    """
    body = line.lstrip()
    if body.startswith("["):
        m = _PREFIX.match(body)
        if m:
            body = body[m.end():].lstrip()
    if body.startswith('File "') or body.startswith("frame #"):
        return body
    return None


def _is_code_after_frame(line: str) -> bool:
    body = line
    if body.startswith("["):
        m = _PREFIX.match(body)
        if m:
            body = body[m.end():]
    return body.startswith("  ")


def _compact(text: str) -> Tuple[List[str], List[int], List[int]]:
    """Unique non-frame lines (by a digit/blank-blind key), in order of last occurrence.

    Returns (lines, original index of each line's last occurrence, of its first).
    Every rule is line-local, so the unique lines match whatever the whole
    text would.
    """
    lines = text.split("\n")
    # bytes.translate is C-fast; a UTF-8 "\n" is always the single byte 0x0A,
    # so the byte lines stay aligned with the str lines.
    keys = text.encode("utf-8", "surrogatepass").translate(None, _DIGITS_BLANKS).split(b"\n")
    last: Dict[bytes, int] = {}
    first: Dict[bytes, int] = {}
    after_frame = False
    for i, key in enumerate(keys):
        if key.startswith(b"File\"") or key.startswith(b"frame#") or (
                key.startswith(b"[") and (b"]:File\"" in key[:48] or b"]:frame#" in key[:48])):
            if _is_frame(lines[i]) is not None:
                after_frame = True
                continue
        if after_frame:
            after_frame = False
            if _is_code_after_frame(lines[i]):
                continue
        if key not in first:
            first[key] = i
        last[key] = i
    order = sorted(last.values())
    # A single huge line (tqdm redraws joined by "\r") is cut to its end,
    # where the error that ended the job is printed.
    out = [lines[i] if len(lines[i]) <= MAX_LINE_CHARS else lines[i][-MAX_LINE_CHARS:] for i in order]
    return out, order, [first[keys[i]] for i in order]


def scan_text(log: LogText, source_idx: int = 0) -> List[Hit]:
    """All rule matches in one text, in text order (positions are line indexes).

    Keywords locate candidate lines in the lower-cased text (C-speed
    ``str.find``); a rule's regex then runs on those lines only.
    """
    text = log.text
    first_line = log.first_line_no
    if len(text) > SCAN_CHARS:
        cut = len(text) - SCAN_CHARS
        nl = text.find("\n", cut)
        if 0 <= nl < len(text) - 1:  # drop the partial first line, unless it is all there is
            cut = nl + 1
        first_line += text.count("\n", 0, cut)
        text = text[cut:]
    lines, line_idx, first_idx = _compact(text)
    low = "\n".join(lines).lower()
    if len(low) != sum(len(x) for x in lines) + len(lines) - 1:
        # A few non-ASCII characters change length when lower-cased; keep
        # offsets aligned by lower-casing line by line.
        low = "\n".join(x.lower() if len(x.lower()) == len(x) else x for x in lines)
    offsets = [0]
    for x in lines[:-1]:
        offsets.append(offsets[-1] + len(x) + 1)
    kernel = _is_kernel(log.source)
    hits: List[Hit] = []
    for c in _compiled():
        rule = c.rule
        if (rule.source == KERNEL and not kernel) or (rule.source == LOG and kernel):
            continue
        candidates = set()
        for kw in rule.keywords:
            p = low.find(kw)
            while p >= 0:
                li = bisect_right(offsets, p) - 1
                candidates.add(li)
                if li + 1 >= len(offsets):
                    break
                p = low.find(kw, offsets[li + 1])
        if not candidates:
            continue
        n = 0
        for li in sorted(candidates):
            line = lines[li]
            m = c.regex.search(line)
            if m is None:
                continue
            if not rule.warnings_ok and WARNING_LINE.search(line):
                continue
            if c.exclude is not None and c.exclude.search(m.group(0)):
                continue
            rid, cat, rank, conf, says = rule.id, rule.category, rule.rank, rule.confidence, rule.says
            if rule.judge:
                judged = _JUDGES[rule.judge](line)
                if judged is None:
                    continue
                rid, cat, rank, conf, says = judged
            hits.append(Hit(rid, cat, rank, conf, source_idx, line_idx[li],
                            Evidence(log.source, first_line + line_idx[li], sanitize(line)), says,
                            first_pos=first_idx[li], base_rule=rule.id))
            n += 1
            if n >= MAX_HITS_PER_RULE:
                break
    hits.sort(key=lambda h: h.pos)
    return hits


def _judge_xid(line: str) -> Optional[Tuple[str, str, int, float, str]]:
    """A kernel XID line judged by NVIDIA's catalog (rule 4), as a hit."""
    # ---- issue 18 hook: kernel lines are read by the XID scanner's own parser
    # (gcm_checks.xid.parse.parse_xid), so `classify` and `xid scan` cannot disagree.
    parsed = _kernel_reading(line)
    m = None if parsed is not None else re.search(r"NVRM: Xid \([^)]*\):\s*(\d+)", line)
    # A bare "Xid 79" (a person's or a tool's note) counts only for codes in the
    # catalog and only when clear-cut; "xid 1234" may be a database's.
    bare = parsed is None and m is None
    if bare:
        m = re.search(r"\b[Xx][Ii][Dd](?:\s+[Ee]rror)?[\s:=]+(\d{1,3})\b", line)
    if parsed is None and m is None:
        return None
    code = parsed.xid if parsed is not None else int(m.group(1))  # type: ignore[union-attr]
    try:
        from gcm_checks.xid.catalog import CATALOG, assess

        if bare and code not in CATALOG:
            return None
        a = assess(parsed.xid if parsed else code, dict(parsed.decoded) if parsed else None)
        sev, resp, name = a.severity, a.responsibility, a.name
    except ImportError:  # pragma: no cover - the xid package ships with us
        from gcm_checks.classify.rules import APP_XIDS, FALLBACK_HW_XIDS

        resp = "application" if code in APP_XIDS else "hardware"
        sev = "fail" if code in FALLBACK_HW_XIDS else "info"
        name = ""
    what = f"XID {code}" + (f" ({name})" if name else "")
    if resp == "application":
        return ("kernel.xid.application", "cuda_runtime", 65, 0.6,
                f"the driver logged {what}, a fault in the job's own GPU code")
    if sev == "fail":
        return ("kernel.xid.hardware", "gpu_hardware", 94, 0.9, f"the driver logged {what}")
    if sev == "warn" and not bare:
        return ("kernel.xid.warn", "gpu_hardware", 60, 0.5, f"the driver logged {what}")
    return None


def _kernel_reading(line: str) -> Any:
    """The XID scanner's reading of a kernel line (None: not an XID), issue 18."""
    if "NVRM" not in line:
        return None
    try:
        from gcm_checks.xid.parse import parse_xid
    except ImportError:  # pragma: no cover - the xid package ships with us
        return None
    return parse_xid(line)


_JUDGES = {"xid": _judge_xid}


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
        add("exit.sigkill", "unknown", 4, 0.3, "slurm", "signal 9 (SIGKILL)",
            "the job was SIGKILLed (out of memory, or killed by hand)")
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


def _normalise(inp: ClassifyInput) -> ClassifyInput:
    """Coerce what callers hand over ("3", None lists) into the documented types."""
    return replace(
        inp,
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
    return judge(hits, inp)


def judge(hits: Sequence[Hit], inp: ClassifyInput) -> Classification:
    if not hits:
        return _fallback(inp)
    # Highest rank wins; ties go to the later text and the later line in it
    # (the last error is the one that ended the job).
    best = max(hits, key=lambda h: (h.rank, h.source_idx, h.pos))
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
        # A log with no error, no failure marker and no exit data is a job that
        # ran to its end: the most honest low-confidence answer is success.
        return Classification("success", CATEGORIES["success"].responsibility, 0.4, "fallback.no_error_seen", [],
                              "No error or failure marker in the log — probably finished normally.")
    return Classification("unknown", unk.responsibility, 0.0, "fallback.no_input", [],
                          "No log and no exit data to classify.")
