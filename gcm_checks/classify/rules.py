"""The classifier's rules, as a table.

Read it top to bottom like a precedence list: each rule names a category, a
``rank`` (higher wins), a confidence, the literal keywords that gate it (a rule
is only tried when one of its keywords occurs in the lower-cased text, which
keeps one log cheap), and one regex. Ties in rank go to the line nearest the
end of the log: the last error is the one that ended the job.

Why the ranks are ordered the way they are (issue 5, "precedence is the point"):

* node evidence (XID, DCGM, IB from the epilog) > everything: hardware faults
  surface in the job as CUDA/NCCL errors, which are symptoms, not causes;
* node failure / GPU hardware lines > scheduler termination lines > OOM >
  network fabric > NCCL > CUDA runtime > numeric > storage > environment >
  data > crash signal > generic exception > success markers;
* a scheduler termination line (time limit, preemption, cancel, node failure)
  makes every *later* match in the same text a consequence (the SIGTERM
  traceback after ``DUE TO TIME LIMIT``) - the engine demotes those;
* lines that are Python/framework *warnings* never match, unless the rule says
  ``warnings_ok`` (NCCL reports real IB faults as ``NCCL WARN``).

Every repetition in a pattern is bounded (``.{0,400}``, never ``.*``): a log
can hold a 200 KB line that repeats a keyword thousands of times, and an
unbounded ``.*`` after each occurrence is quadratic.

Patterns key on the stable parts of messages - exception class names, CUDA,
NCCL and slurmstepd strings, kernel messages - never on paths, hosts or numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Pattern, Tuple

# Where a rule may match: "any" text, only job output ("log"), or the kernel log.
ANY, LOG, KERNEL = "any", "log", "kernel"


@dataclass(frozen=True)
class Rule:
    id: str
    category: str
    rank: int
    confidence: float
    keywords: Tuple[str, ...]  # lower-case literals; the rule runs only if one occurs
    pattern: str
    says: str  # first half of the human sentence
    source: str = ANY
    # A scheduler termination line: later matches in the same text are consequences.
    terminal: bool = False
    # Match even on a line that looks like a warning (``NCCL WARN``, ``[W ...]``).
    warnings_ok: bool = False
    # A match whose own text matches this is skipped (wrappers, benign variants).
    exclude: Optional[str] = None
    # If this rule id matched earlier in the same text, this match is demoted:
    # a STEP CANCELLED line right after "srun: Terminating StepId" is srun
    # killing the other tasks because one failed, not a user's scancel.
    unless_after: Optional[str] = None
    # Name of a judge in the engine that refines a match (category, rank...).
    judge: Optional[str] = None
    # A symptom of some other failure: when the job raised its own error
    # earlier in the same text, that error is the cause. One rank's KeyError
    # leaves the other ranks waiting in a collective until the NCCL watchdog
    # fires minutes later.
    symptom: bool = False
    flags: int = 0

    def compiled(self) -> Pattern[str]:
        return re.compile(self.pattern, self.flags | re.MULTILINE)


# Ranks, named so the table reads as a precedence list.
R_NODE_FAIL = 96
R_GPU_HW = 94
R_SCHED = 90
R_HOST_OOM_SLURM = 84
R_NET = 82
R_OOM = 80
R_NCCL = 75
R_GPU_HW_WEAK = 72
R_ENV_CUDA = 72
R_CUDA = 70
R_NUMERIC = 66
R_STORAGE = 62
R_CANCEL = 58
R_ENV = 55
R_DATA = 50
R_SIGNAL = 45
R_INTERRUPT = 40
R_EXCEPTION = 30
R_SUCCESS = 10
R_VAGUE = 4

# Only used if gcm_checks.xid cannot be imported (it always ships with us).
FALLBACK_HW_XIDS = frozenset({48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 121, 140, 154})
APP_XIDS = frozenset({13, 31, 43, 45})

# train.loss_nan's pattern, every alternative spelled out to start with a plain letter:
# then re can skip to the positions holding one of those letters in C, instead of trying
# every alternative at every position of a line. Same matches, same spans as the compact
# "(?:loss|Loss|LOSS|norm|Norm)...|(?:[Ll]oss|norm) ...|(?i:found ...)|[Mm]inimum ..." form
# (checked on every corpus line and 300,000 generated ones), ~5x faster on a Megatron
# iteration line ("number of nan iterations"), which carries the keyword in every log.
_NAN_AFTER = r"['\"]?\s*[:=]?\s*(?:tensor\()?[+-]?(?:nan|NaN|NAN|inf|Inf|INF)\b"
_NAN_WORDS = r" (?:is|became|became infinite or) (?:nan|NaN|NAN|inf|Inf)\b"
_NAN_IN = r" (?:detected|encountered) in (?:loss|grad)"
_NAN_FOUND = r"(?i:ound (?:nan|inf) in (?:local )?(?:loss|grad))"
_LOSS_NAN = "|".join(
    [w + _NAN_AFTER for w in ("loss", "Loss", "LOSS", "norm", "Norm")]
    + [w + _NAN_WORDS for w in ("Loss", "loss", "norm")] + ["FloatingPointError"]
    + [w + _NAN_IN for w in ("NaN", "nan", "Inf", "inf")] + ["f" + _NAN_FOUND, "F" + _NAN_FOUND]
    + [r"NaN or Inf found in input tensor", r"non-finite (?:loss|gradient|value)", r"is non-finite",
       r"returned nan values", r"Detected (?:NaN|nan|Inf|inf)\b", r"cannot decrease (?:loss )?scale anymore",
       r"Minimum loss scale reached", r"minimum loss scale reached", r"Invalid loss, terminating training"])

RULES: Tuple[Rule, ...] = (
    # ---- node failure: Slurm lost the node -------------------------------------------
    Rule("slurm.node_failure", "node_failure", R_NODE_FAIL, 0.95,
         ("node fail", "node_fail"), r"(?i:due to node fail)|srun: error: Node failure on\b|\bNODE_FAIL\b",
         "Slurm lost a node the job was running on", terminal=True),
    Rule("srun.nodes_not_ready", "node_failure", R_NODE_FAIL - 4, 0.85,
         ("are still not ready", "boot of the nodes"),
         r"srun: error: Nodes \S+ are still not ready|Something is wrong with the boot of the nodes",
         "the allocated nodes never came up"),
    Rule("slurm.kill_task_failed", "node_failure", R_NODE_FAIL - 8, 0.8,
         ("not ending with signals", "kill task failed"),
         r"DUE TO JOB NOT ENDING WITH SIGNALS|Kill task failed",
         "processes could not be killed (stuck in the kernel)", terminal=True),
    Rule("mpi.lost_daemon", "node_failure", R_NCCL - 3, 0.6,
         ("lost communication with a remote daemon", "socket timed out on send/recv"),
         r"ORTE has lost communication with a remote daemon|Socket timed out on send/recv operation",
         "the launcher lost contact with another node"),
    # ---- GPU hardware seen from inside the job --------------------------------------
    Rule("gpu.fallen_off_bus", "gpu_hardware", R_GPU_HW, 0.95,
         ("fallen off the bus", "fell off the bus"), r"(?:fallen|fell) off the bus",
         "a GPU fell off the bus"),
    # Kernel XID lines are judged by NVIDIA's catalog (gcm_checks.xid), not
    # by this table: the hit becomes kernel.xid.hardware (gpu_hardware),
    # kernel.xid.warn (gpu_hardware, low) or kernel.xid.application
    # (cuda_runtime: XID 13/31/43/45 are the job's own faults and never
    # hardware); info-level non-application codes are dropped.
    Rule("kernel.xid", "gpu_hardware", R_GPU_HW, 0.9,
         ("xid",), r"NVRM: Xid \(|\b[Xx][Ii][Dd](?:\s+[Ee]rror)?[\s:=]+\d",
         "the driver logged a hardware XID", judge="xid"),
    Rule("gpu.ecc_uncorrectable", "gpu_hardware", R_GPU_HW, 0.93,
         ("ecc", "double bit", "dbe"),
         r"uncorrectable ECC error|cudaErrorECCUncorrectable|ECC_UNCORRECTABLE|double bit error|\bDBE\b",
         "the GPU hit an uncorrectable memory (ECC) error"),
    Rule("gpu.lost", "gpu_hardware", R_GPU_HW, 0.9,
         ("gpu is lost", "gpu_is_lost", "requires reset", "nvlink", "device handle"),
         r"GPU is lost|GPU_IS_LOST|GPU requires reset|uncorrectable NVLink error|cudaErrorNvlinkUncorrectable"
         r"|Unable to determine the device handle for GPU",
         "a GPU stopped responding"),
    Rule("gpu.cuda_unknown_error", "gpu_hardware", R_GPU_HW_WEAK, 0.6,
         ("unknown error", "cudaerrorunknown", "system not yet initialized", "systemnotready", "communicate with the nvidia driver",
          "err!"),
         r"CUDA error: unknown error|cudaErrorUnknown|system not yet initialized|cudaErrorSystemNotReady"
         r"|couldn't communicate with the NVIDIA driver|Cuda failure 'unknown error'|(?:^|\s)ERR!(?=\s|$)",
         "CUDA reported 'unknown error', which is what a GPU dropping out looks like from the job"),
    Rule("gpu.row_remap", "gpu_hardware", R_NUMERIC - 6, 0.5,
         ("row remap",), r"Row Remapper|[Rr]ow remapping (?:failure|pending)",
         "the GPU needs a reset to remap failing memory rows"),
    # ---- scheduler: time limit, preemption -------------------------------------------
    Rule("slurm.time_limit", "timeout_walltime", R_SCHED, 0.97,
         ("time limit", "timelimit", "state=timeout"),
         r"DUE TO TIME ?LIMIT|\bexceeded (?:its )?time ?limit\b|JobState=TIMEOUT|Reason=TimeLimit\b",
         "Slurm stopped the job at its time limit", terminal=True, warnings_ok=True),
    Rule("submitit.timed_out", "timeout_walltime", R_SCHED, 0.85,
         ("timed out", "timed-out"), r"this job is timed-out|\bJob has timed out\b",
         "the job ran out of wall time", terminal=True, warnings_ok=True),
    Rule("slurm.preemption", "preempted", R_SCHED, 0.97,
         # A requeue (preemption with requeue, `scontrol requeue`) ends this run
         # for the scheduler's reasons, not the user's: same category.
         ("preempt", "interruption", "requeue"),
         r"DUE TO PREEMPTION|DUE TO JOB REQUEUE|this job is preempted|\bjob (?:was |has been )?preempted\b"
         r"|(?<!not )\b(?:was|been|got|being) preempted\b|JobState=PREEMPTED|spot (?:instance )?interruption",
         "the scheduler preempted the job", terminal=True, warnings_ok=True, flags=re.IGNORECASE),
    Rule("tpu.lame_workers", "preempted", R_SCHED - 5, 0.6,
         ("lame workers",), r"lame workers found",
         "the accelerator workers were taken away (preempted) mid-run", warnings_ok=True),
    # ---- host memory ---------------------------------------------------------------
    Rule("slurm.oom_kill", "host_oom", R_HOST_OOM_SLURM, 0.95,
         ("oom", "memory limit", "out of memory", "out-of-memory"),
         r"Detected \d+ oom[-_]kill event|oom[-_]kill event\(s\)|(?i:exceeded (?:job |step )?memory limit)"
         r"|task \d+: Out Of Memory|cgroup out-of-memory handler",
         "Slurm's cgroup killed the job for using more memory than requested"),
    Rule("kernel.oom_killer", "host_oom", R_HOST_OOM_SLURM, 0.9,
         ("out of memory", "oom-kill", "oom_reaper"),
         r"Out of memory: Kill(?:ed)? process|Memory cgroup out of memory|\boom-kill:|invoked oom-killer",
         "the kernel's OOM killer killed a process"),
    Rule("host.worker_killed", "host_oom", R_OOM - 2, 0.8,
         ("killed by signal: killed",), r"killed by signal: Killed",
         "a worker process was SIGKILLed, which is what the OOM killer does"),
    Rule("host.alloc_failed", "host_oom", R_OOM - 2, 0.85,
         ("allocate memory", "bad_alloc", "memoryerror", "java heap space", "unable to allocate"),
         r"can't allocate memory|Cannot allocate memory|\bstd::bad_alloc\b|(?<![A-Za-z.])MemoryError\b"
         r"|java\.lang\.OutOfMemoryError|Unable to allocate [\d.]+ [KMGTP]i?B for an array",
         "host memory allocation failed"),
    # ---- network fabric (IB/RoCE/EFA) ------------------------------------------------
    Rule("ib.async_event", "network_fabric", R_NET, 0.88,
         ("got async event",),
         r"NET/IB\s*:\s*Got async event\s*:\s*(?!.{0,400}\b(?:GID table change|client reregistration|LID change|SM change|port active)\b)",
         "the InfiniBand adapter reported a port/adapter error", warnings_ok=True, flags=re.IGNORECASE),
    Rule("ib.completion_error", "network_fabric", R_NET, 0.85,
         ("got completion",), r"NET/IB\s*:\s*Got completion (?:from peer \S+ )?with (?:error|status=)\s*\d+",
         "InfiniBand transfers failed between nodes", warnings_ok=True),
    Rule("ib.retry_exceeded", "network_fabric", R_NET, 0.85,
         ("retry", "catastrophic", "ibv_poll_cq", "completion with error", "call to ibv_", "link down", "cable unplugged",
          "lost carrier"),
         r"IBV_WC_(?:RNR_)?RETRY_EXC_ERR|transport retry count(?:er)? exceeded|local catastrophic error|ibv_poll_cq error"
         r"|got completion with error|Call to ibv_\w+ failed|mlx5_core\b.{0,400}\b(?:link down|cable unplugged)|\bib\d+: (?:link down|lost carrier)",
         "InfiniBand transfers failed between nodes", warnings_ok=True, flags=re.IGNORECASE),
    Rule("efa.error", "network_fabric", R_NET - 4, 0.65,
         ("net/ofi",), r"NET/OFI.{0,400}\b(?:error|failed)\b",
         "the EFA/libfabric network reported an error", warnings_ok=True, flags=re.IGNORECASE),
    # ---- GPU memory ------------------------------------------------------------------
    Rule("cuda.oom", "gpu_oom", R_OOM, 0.95,
         ("out of memory", "outofmemoryerror", "alloc_failed", "memoryallocation", "oom when allocating",
          "resource_exhausted", "resourceexhaustederror"),
         r"CUDA out of memory|torch(?:\.cuda)?\.OutOfMemoryError|CUDA error: out of memory|cudaErrorMemoryAllocation"
         r"|CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|HIP out of memory|OOM when allocating tensor"
         r"|RESOURCE_EXHAUSTED: Out of memory|Cuda failure 'out of memory'|out of memory on device"
         r"|ResourceExhaustedError(?![^\n]{0,200}(?:[Dd]isk quota|[Nn]o space left|[Qq]uota exceeded))",
         "the job ran out of GPU memory"),
    # ---- NCCL / torch.distributed ----------------------------------------------------
    Rule("nccl.watchdog_timeout", "nccl_comm", R_NCCL, 0.85,
         ("collective operation timeout", "watchdog", "heartbeat monitor", "store based barrier"),
         r"Watchdog caught collective operation timeout|collective operation timeout"
         r"|NCCL watchdog thread terminated with exception: (?!CUDA error)|watchdog got stuck"
         r"|Heartbeat monitor timed out|store based barrier",
         "a NCCL collective hung until the watchdog timed it out", symptom=True),
    Rule("nccl.error", "nccl_comm", R_NCCL, 0.85,
         # Not the bare word "nccl": NCCL_DEBUG=INFO logs are thousands of "NCCL INFO" lines.
         ("nccl error", "nccl operation", "socket timeout", "connection reset by peer", "connection refused",
          "ncclinternal", "ncclsystem", "ncclunhandled", "ncclremote", "some nccl operations",
          "nccl communicator", "distbackenderror", "distnetworkerror", "ncclinvalid", "duplicate gpu detected"),
         r"NCCL [Ee]rror\b|NCCL operation \w+\(\) failed|\bNCCL\b.{0,400}\b(?:Socket Timeout|Connection reset by peer|Connection refused)|\bnccl(?:Internal|System|UnhandledCuda|Remote)Error\b|\bnccl(?:InvalidUsage|InvalidArgument)\b|Duplicate GPU detected|DistBackendError|DistNetworkError"
         r"|Some NCCL operations have failed or timed out|NCCL communicator was aborted",
         "NCCL (GPU-to-GPU communication) failed", symptom=True),
    Rule("nccl.socket", "nccl_comm", R_NCCL - 1, 0.8,
         ("nccl warn", "gloo"),
         r"NCCL WARN\b.{0,400}(?:Connection (?:reset|refused|closed)|Connect to .{0,400} failed|socket\w*: .{0,400}failed"
         r"|Call to \w+ failed|Broken pipe|timed out|[Tt]imeout|Net : Connection closed)"
         r"|gloo/transport/\S+\] (?:Connection closed by peer|Connection reset|Timed out"
         r"|connect \S+: (?:No route to host|Connection refused|Network is unreachable|Connection timed out))",
         "NCCL lost a connection between ranks", warnings_ok=True),
    Rule("dist.store", "nccl_comm", R_NCCL - 5, 0.7,
         ("rendezvous", "diststoreerror", "tcpstore"),
         r"Rendezvous\w*(?:Timeout|Connection|Closed)Error|DistStoreError|TCPStore\b.{0,400}(?:timed out|failed|reset)",
         "the ranks could not reach each other's rendezvous store"),
    # ---- environment problems that surface as CUDA errors ---------------------------
    Rule("env.cuda_mismatch", "import_env", R_ENV_CUDA, 0.85,
         ("no kernel image", "driver version is insufficient", "driver on your system is too old"),
         r"no kernel image is available for execution|CUDA driver version is insufficient"
         r"|NVIDIA driver on your system is too old",
         "the CUDA build does not match this GPU or driver"),
    # ---- CUDA runtime errors raised by the job --------------------------------------
    Rule("cuda.device_assert", "cuda_runtime", R_CUDA, 0.9,
         ("device-side assert", "cudaerrorassert", ".cu:"),
         r"device-side assert(?:ion)? triggered|cudaErrorAssert|\.cu:\d+: .{0,400}Assertion .{0,400} failed",
         "a CUDA kernel assertion failed (often an out-of-range index or label)"),
    Rule("cuda.illegal_access", "cuda_runtime", R_CUDA, 0.85,
         ("illegal memory access", "illegal instruction was", "misaligned address", "unspecified launch failure",
          "cudaerrorillegal", "cudaerrorlaunchfailure"),
         r"illegal memory access|an illegal instruction was encountered|misaligned address"
         r"|unspecified launch failure|cudaErrorIllegal\w+|cudaErrorLaunchFailure",
         "a CUDA kernel accessed memory it should not"),
    Rule("cuda.error", "cuda_runtime", R_CUDA - 1, 0.75,
         ("cuda error", "cuda driver error", "cudaerror", "cublas_status", "cudnn_status", "cuda_error_", "cuda kernel errors"),
         # The success and OOM codes are excluded inside the pattern, so that
         # "Check failed: status == CUBLAS_STATUS_SUCCESS (13 vs. 0) CUBLAS_STATUS_EXECUTION_FAILED"
         # still finds the failure after the success code.
         r"CUDA (?:driver )?error(?::| \d)|\bcudaError\w+|CUBLAS_STATUS_(?!SUCCESS\b)\w+|CUDNN_STATUS_(?!SUCCESS\b)\w+"
         r"|CUDA_ERROR_(?!OUT_OF_MEMORY\b)\w+|CUDA kernel errors might be asynchronously reported|c10::CUDAError",
         "CUDA returned an error"),
    # ---- numeric divergence ----------------------------------------------------------
    Rule("train.loss_nan", "numeric_divergence", R_NUMERIC, 0.85,
         # "inf" only where the pattern can match it: bare "inf" is in every "INFO" line.
         ("nan", "inf ", "inf\n", "inf,", "inf)", "inf'", "inf\"", "inf}", "inf|", "inf;", "inf]", "infinite",
          "non-finite", "floatingpointerror", "scale anymore", "loss scale reached", "invalid loss"),
         _LOSS_NAN,
         "the loss or gradients became NaN/Inf"),
    # ---- storage ---------------------------------------------------------------------
    Rule("io.errno", "storage_io", R_STORAGE, 0.85,
         ("input/output error", "errno", "quota", "no space left", "stale", "read-only file system",
          "transport endpoint", "remote i/o", "pytorchstreamwriter", "unexpected pos", "disk i/o error",
          "disk is full", "lustreerror", "not responding"),
         r"Input/output error|\[Errno (?:5|28|30|107|116|121|122)\]|(?i:disk quota exceeded|no space left on device)"
         r"|Stale (?:NFS )?file handle|Read-only file system|Transport endpoint is not connected|Remote I/O error"
         r"|PytorchStreamWriter failed writing file|unexpected pos \d+ vs \d+|disk I/O error|database or disk is full"
         r"|LustreError|nfs: server \S+ not responding",
         "a filesystem operation failed"),
    # ---- cancel ---------------------------------------------------------------------
    Rule("srun.terminating", "unknown", R_VAGUE, 0.3,
         ("terminating",), r"\bTerminating (?:StepId=|job step )\S+",
         "srun stopped the step because a task failed"),
    Rule("slurm.cancelled", "cancelled_user", R_CANCEL, 0.85,
         ("cancelled at",), r"\*\*\*\s*(?:JOB|STEP)\b[^*\n]*?\bCANCELLED AT\b(?![^*\n]*\bDUE TO (?:TIME|PREEMPTION|NODE|JOB NOT|JOB REQUEUE|TASK FAILURE))[^*\n]*\*\*\*",
         "the job was cancelled (scancel)", terminal=True, unless_after="srun.terminating"),
    Rule("srun.interrupt", "cancelled_user", R_CANCEL, 0.75,
         ("srun: interrupt", "sending ctrl-c"), r"srun: interrupt \(one more within|srun: sending Ctrl-C to",
         "the job was interrupted with Ctrl-C", terminal=True),
    # ---- software environment --------------------------------------------------------
    Rule("py.import_error", "import_env", R_ENV, 0.9,
         ("modulenotfounderror", "no module named", "importerror", "undefined symbol", "shared object file",
          "loading shared libraries", "glibc", "command not found", "execve", "distributionnotfound",
          "versionconflict", "dll load failed", "could not load library", "not compiled with cuda",
          "different cuda", "can't open file", "couldn't connect to", "localentrynotfounderror", "cuda_home",
          "mismatches the version", "satisfies the requirement", "no matching distribution", "lmod",
          "are unknown", "container creation failed", "could not open image", "pyxis"),
         r"ModuleNotFoundError|No module named|ImportError(?!: sys\.meta_path is None)|undefined symbol|cannot open shared object file"
         r"|error while loading shared libraries|GLIBC(?:XX)?_[\d.]+'? not found|: command not found"
         r"|execve\(\): .{0,400}(?:No such file or directory|Permission denied)|DistributionNotFound|VersionConflict|DLL load failed"
         r"|Could not load library|Torch not compiled with CUDA enabled|compiled with different CUDA (?:major )?versions"
         r"|can't open file .{0,400}\[Errno 2\]|We couldn't connect to '|LocalEntryNotFoundError"
         r"|CUDA_HOME environment variable is not set|mismatches the version that was used to compile"
         r"|Could not find a version that satisfies the requirement|No matching distribution found"
         r"|Lmod has detected the following error|module\(s\) are unknown|container creation failed"
         r"|could not open image|pyxis: .{0,400}(?:failed|error)",
         # (CPython's "ImportError: sys.meta_path is None, Python is likely shutting down" is
         # an import inside a __del__ at interpreter exit, after "Exception ignored in:":
         # shutdown noise after the job's end, neither its environment nor its bug.)
         "the software environment is broken (a module or library is missing or incompatible)"),
    # ---- input data ------------------------------------------------------------------
    Rule("data.bad_input", "data_input", R_DATA, 0.8,
         ("unidentifiedimageerror", "decompressionbomb", "image file is truncated", "arrowinvalid",
          "arrowtypeerror", "jsondecodeerror", "json parse error", "datasetgenerationerror",
          "datasetnotfounderror", "emptydataerror", "error tokenizing data", "unicodedecodeerror",
          "couldn't find a dataset", "unpicklingerror", "ran out of input", "badzipfile",
          "failed finding central directory", "failed reading zip archive", "invalid load key", "!_src.empty()",
          "unable to load weights", "deserializing header", "headertoolarge", "can't load",
          "does not appear to have a file"),
         r"UnidentifiedImageError|DecompressionBombError|[Ii]mage file is truncated|ArrowInvalid|ArrowTypeError"
         r"|JSONDecodeError|JSON parse error|DatasetGenerationError|DatasetNotFoundError|EmptyDataError"
         r"|Error tokenizing data|UnicodeDecodeError|Couldn't find a dataset|UnpicklingError"
         r"|EOFError: Ran out of input|BadZipFile|failed finding central directory|failed reading zip archive"
         r"|invalid load key|!_src\.empty\(\)|Unable to load weights from|Error while deserializing header"
         r"|HeaderTooLarge|Can't load (?:tokenizer|config|the configuration|weights)|does not appear to have a file named",
         "an input file is malformed or unreadable"),
    Rule("data.missing", "data_input", R_DATA - 2, 0.7,
         ("filenotfounderror", "errno 2", "not found", "does not exist", "doesn't exist", "is missing",
          "to find", "to locate", "to open", "to read", "not find", "not locate", "not open", "not read",
          "n't find", "n't locate", "n't open", "n't read"),
         r"FileNotFoundError|\[Errno 2\] No such file or directory"
         r"|(?:Error|Exception): [^\n]{0,400}\b(?:[Ff]ile|[Dd]ataset|[Dd]ata|[Pp]ath|[Dd]irectory|shard)s?\b[^\n]{0,400}"
         r"\b(?:not found|does not exist|doesn't exist|is missing)"
         r"|(?:Error|Exception): [^\n]{0,400}(?:[Uu]nable to|[Cc]ould not|[Cc]ouldn't|[Cc]annot|[Cc]an't) (?:find|locate|open|read)"
         r" [^\n]{0,400}\b(?:file|dataset|data|path|directory|shard)s?\b",
         "an input file or dataset is missing"),
    Rule("data.loader_worker", "data_input", R_DATA - 5, 0.55,
         ("in dataloader worker",), r"Caught \w+ in DataLoader worker process",
         "loading a data sample raised an error"),
    # ---- fatal signals ---------------------------------------------------------------
    Rule("sig.bus_error_shm", "segfault_signal", R_SIGNAL + 2, 0.85,
         ("bus error", "shared memory"), r"killed by signal: Bus error|(?i:insufficient shared memory|unexpected bus error)",
         "a process died with SIGBUS (usually /dev/shm too small)"),
    Rule("sig.fatal", "segfault_signal", R_SIGNAL, 0.85,
         ("segmentation fault", "sigsegv", "fatal python error", "bus error", "sigbus", "core dumped",
          "sigabrt", "sigill", "illegal instruction", "floating point exception", "double free",
          "free():", "malloc():", "stack smashing", "exitcode", "terminate called", "signal 11"),
         r"Segmentation fault|SIGSEGV|Fatal Python error|Bus error|SIGBUS|\(core dumped\)|SIGABRT|SIGILL"
         r"|Illegal instruction|Floating point exception|double free or corruption|free\(\): invalid"
         r"|malloc\(\): |stack smashing detected|exitcode\s*:\s*-(?:11|7|6|4|8)\b|signal 11\b"
         r"|terminate called (?:after throwing an instance of|without an active exception|recursively)",
         "a process crashed with a fatal signal"),
    Rule("job.sigterm", "cancelled_user", R_CANCEL - 2, 0.5,
         ("got signal: 15", "death signal", "received sigterm"),
         r"SignalException: Process \d+ got signal: 15|Received 15 death signal|Main process received SIGTERM",
         "the job was sent SIGTERM (scancel; a time limit or preemption would say so)", terminal=True),
    # ---- interrupts ------------------------------------------------------------------
    Rule("py.keyboard_interrupt", "cancelled_user", R_INTERRUPT, 0.6,
         ("keyboardinterrupt",), r"\bKeyboardInterrupt\b",
         "the job was interrupted (SIGINT / Ctrl-C)"),
    # ---- generic exceptions ----------------------------------------------------------
    Rule("py.exception", "software_exception", R_EXCEPTION, 0.7,
         ("error", "exception", "execution halted"),
         r"(?<!raise )(?<!except )(?<![\w.])(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)(?=:\s|:?$)(?!: sys\.meta_path is None)"
         r"|^Execution halted$",
         "the job raised an unhandled exception",
         exclude=r"ChildFailedError|ProcessRaisedException|ProcessExitedException|CalledProcessError"
                 r"|SystemExit|BrokenPipeError|Warning|^Error$|^Exception$|^\w*Error\w*Error$"),
    Rule("c.assertion", "software_exception", R_EXCEPTION - 1, 0.6,
         ("assertion",), r"Assertion [`'].{0,400}[`'] failed",
         "an assertion in compiled code failed"),
    # ---- vague failure markers: "it failed" without a cause -------------------------
    Rule("vague.failed", "unknown", R_VAGUE, 0.3,
         ("childfailederror", "exitcode", "exited with", "task", "sigkill", "killed", "exited on signal",
          "per user-direction"),
         r"ChildFailedError|failed \(exitcode: -?\d+\)|exited with (?:exit )?code [1-9]"
         r"|srun: error: \S+: tasks? [\d,-]+: (?:Exited with exit code|Killed|Terminated)"
         r"|terminated with signal SIGKILL|^Killed$|Signal 9 \(SIGKILL\) received|exited on signal 9\b"
         r"|\bKilled\s{2,}\S|Per user-direction, the job has been aborted",
         "a process failed but the log does not say why"),
    # ---- success markers -------------------------------------------------------------
    Rule("train.finished", "success", R_SUCCESS, 0.7,
         ("train metrics", "train_runtime", "stopped:", "training completed", "training complete",
          "finished training", "training finished", "(success)", "model weights saved", "training done",
          "training is", "run summary:"),
         r"\*+ train metrics \*+|'train_runtime'|\btrain_runtime\s*=|`Trainer\.fit` stopped: "
         r"|(?i:\btraining (?:is )?(?:completed|complete|finished|done)\b)|(?i:\bfinished training\b)"
         r"|wandb: Waiting for W&B process to finish\.\.\. \(success\)|Model weights saved in|wandb: Run summary:",
         "the training finished normally", warnings_ok=True),
)

# A line logged as a warning or for information, not as an error:
# "UserWarning: ...", "[W1123 ...", "WARNING: ...", "[INFO|...]", "NCCL INFO".
# Successful runs are full of them ("NCCL INFO NET/Plugin: ... cannot open
# shared object file" is a normal start-up line). "NCCL WARN" is not one: it
# is how NCCL reports its real errors.
# "INFO"/"DEBUG"/"WARN" only as a level word, never as a value: PyTorch's real
# error "unhandled system error (run with NCCL_DEBUG=INFO for details)" must match.
WARNING_LINE = re.compile(r"\b[A-Z][A-Za-z]*Warning\b|\[W(?:\d{4}\s|\s)|(?<![=_])\bWARNING\b|(?<!NCCL )(?<![=_])\bWARN\b"
                          r"|\bwarn(?:ing)?:|(?<![=_])\bINFO\b|(?<![=_])\bDEBUG\b")

RULES_BY_ID = {r.id: r for r in RULES}
if len(RULES_BY_ID) != len(RULES):  # pragma: no cover - a table typo
    raise ValueError("duplicate rule id in RULES")
