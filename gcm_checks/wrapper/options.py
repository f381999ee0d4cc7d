"""What gcm-run was asked to do (``RunOptions``) and what it learned (``RunState``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional


@dataclass
class RunOptions:
    argv: List[str]
    log_path: str
    name: str = ""
    notify_policy: str = "on_failure"
    stall_after_s: Optional[float] = None
    # No --stall-after: a stall is still noticed, once the step counter has
    # moved a few times, after max(STALL_AUTO_MIN_S, STALL_AUTO_STEPS steps).
    stall_auto: bool = True
    silent_after_s: Optional[float] = None
    kill_on_stall: bool = False
    kill_on_nan: bool = False
    kill_grace_s: float = 30.0
    pty: str = "auto"  # auto | always | never
    comment: str = "auto"  # auto | off
    comment_interval_s: float = 60.0
    status_interval_s: float = 2.0
    tick_s: float = 1.0
    out_fd: int = 1
    err_fd: int = 2
    env: Optional[Mapping[str, str]] = None
    index_dir: Optional[str] = None
    straggler_threshold: float = 0.20  # a node this much slower than the median is named
    straggler_window_s: float = 300.0
    work_dir: Optional[str] = None  # the job's working directory (None: our cwd); .gcm-run/ goes there
    nvml_sampler: Optional[Callable[[], dict]] = None  # tests: a simulated GPU sampler
    # Hooks for tests and for the lead's wiring; None = the real thing.
    comment_sender: Optional[Callable[[str, str], None]] = None
    notifier: Optional[Callable[[dict, str], dict]] = None


@dataclass
class RunState:
    """Everything the wrapper learned; becomes the status file and the report."""

    run_id: str
    opts: RunOptions
    started_wall: float
    started_mono: float
    child_pid: Optional[int] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    launch_error: Optional[str] = None
    signals_forwarded: List[dict] = field(default_factory=list)
    alerts: List[Any] = field(default_factory=list)  # watch.Alert
    killed_by: Optional[str] = None
    log_error: Optional[str] = None
    terminal_error: Optional[str] = None
    status_error: Optional[str] = None
    comment_info: Dict[str, object] = field(default_factory=dict)
    notifications: List[dict] = field(default_factory=list)
    output_bytes: int = 0
    log_lines: Optional[int] = None  # lines in the log; None if it held older runs
    ended_wall: Optional[float] = None
