"""Why did the job fail? One explainable answer from logs, exit data and node evidence.

Public API (stable; the epilog, ``why`` and ``failures`` commands use it):

``classify(inp: ClassifyInput) -> Classification``
    ``ClassifyInput(logs=[LogText(source, text, first_line_no=1)], state=None,
    exit_code=None, signal=None, derived_exit_code=None, reason=None, xids=[],
    dcgm_failures=[], ib_problems=[])``. ``state`` is the sacct/scontrol
    JobState (TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, PREEMPTED, CANCELLED, FAILED,
    COMPLETED; "CANCELLED by 123" is fine); ``reason`` the scontrol Reason
    (TimeLimit). ``xids`` are the epilog's in-window XID events (keys time, xid,
    pci_bus_id, gpu_index, severity info|warn|fail, responsibility
    application|driver|hardware|thermal_power|nvlink_fabric, action, name,
    line); ``dcgm_failures`` dicts (gpu_index, test, error_id, message);
    ``ib_problems`` strings. Pure: no I/O, never raises on odd input.

``Classification`` (frozen): ``category`` (one of ``CATEGORY_IDS``),
    ``responsibility`` (infrastructure|scheduler|user|unknown), ``confidence``
    0..1, ``rule`` (rule id, e.g. ``slurm.time_limit``), ``evidence``
    (list of ``Evidence(source, line_no, text)``, text sanitised and bounded),
    ``sentence`` (one human sentence), ``to_dict()``.

``read_tail(path_or_fd, max_bytes) -> (text, truncated, total_size)``
    Bounded read of a log's end; a path is opened with O_NOFOLLOW, an fd
    (opened root-safely by the epilog) is read with pread.

``parse_exit_code2("3:0") -> (3, 0)``, ``decode_wait_status(768) -> (3, 0)``,
``decode_wait_status(9) -> (0, 9)``, ``exit_info_from_env(os.environ)`` ->
dict(exit_code, signal, derived_exit_code) for ``ClassifyInput(**...)``.

The taxonomy lives in ``taxonomy.py`` (docs/failure-taxonomy.md), the rules as
a table in ``rules.py``, metrics in ``evaluate.py``.
"""

from __future__ import annotations

from gcm_checks.classify.engine import classify, sanitize
from gcm_checks.classify.exitdata import decode_wait_status, exit_info_from_env, parse_exit_arg, parse_exit_code2
from gcm_checks.classify.model import Classification, ClassifyInput, Evidence, LogText
from gcm_checks.classify.tail import DEFAULT_MAX_BYTES, read_tail
from gcm_checks.classify.taxonomy import CATEGORIES, CATEGORY_IDS, RESPONSIBILITIES, Category

__all__ = [
    "CATEGORIES",
    "CATEGORY_IDS",
    "Category",
    "Classification",
    "ClassifyInput",
    "DEFAULT_MAX_BYTES",
    "Evidence",
    "LogText",
    "RESPONSIBILITIES",
    "classify",
    "decode_wait_status",
    "exit_info_from_env",
    "parse_exit_arg",
    "parse_exit_code2",
    "read_tail",
    "sanitize",
]
