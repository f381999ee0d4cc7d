"""Rules for the world beyond Slurm + CUDA + Python (issue 14), and the full table.

rules.py holds the original table; this module adds what real logs from
other places say: PBS/Torque and MOAB, LSF, HTCondor, Kubernetes, Ray,
SkyPilot, TPU/XLA, C++ programs logging through glog, and what a shell
prints when it kills or loses a child. ``ALL_RULES`` is the table the engine
runs. Same conventions as rules.py: literal keywords gate each rule, every
repetition is bounded, patterns key on the stable words of a message.
"""

from __future__ import annotations

import re
from typing import Dict, Tuple

from gcm_checks.classify.rules_docs import DOC_RULES
from gcm_checks.classify.rules_enum import ENUM_RULES
from gcm_checks.classify.rules_fam import FAM_RULES
from gcm_checks.classify.rules_gh import GH_RULES
from gcm_checks.classify.rules_s4 import S4_RULES
from gcm_checks.classify.rules_src_app import SRC_APP_RULES
from gcm_checks.classify.rules_src_infra import SRC_INFRA_RULES
from gcm_checks.classify.rules_src_more import SRC_MORE_RULES
from gcm_checks.classify.rules import (
    KERNEL, R_CANCEL, R_CUDA, R_DATA, R_ENV, R_EXCEPTION, R_GPU_HW, R_HOST_OOM_SLURM, R_NCCL, R_NODE_FAIL, R_NUMERIC, R_OOM,
    R_NET, R_SCHED, R_SIGNAL, R_STORAGE, R_SUCCESS, R_VAGUE, RULES, Rule,
)

MORE_RULES: Tuple[Rule, ...] = (
    # ---- other schedulers: the line they print when they end a job ------------------
    # PBS/Torque: "=>> PBS: job killed: walltime 906 exceeded limit 900"; MOAB mail
    # "job exceeded wallclock limit"; LSF "TERM_RUNLIMIT: job killed after reaching
    # LSF run time limit"; HTCondor/CRAB "wall clock limit".
    Rule("pbs.walltime", "timeout_walltime", R_SCHED, 0.95,
         ("walltime", "wallclock", "wall clock", "term_runlimit", "term_cpulimit", "term_deadline"),
         r"PBS: job killed: (?:walltime|cput) \d+ exceeded limit|job exceeded wall ?clock limit"
         r"|TERM_(?:RUNLIMIT|CPULIMIT|DEADLINE)\b|due to wall clock limit|exceeded (?:its )?wall ?(?:clock|time) limit",
         "the batch system stopped the job at its time limit", terminal=True, warnings_ok=True,
         flags=re.IGNORECASE),
    Rule("pbs.memory", "host_oom", R_HOST_OOM_SLURM, 0.93,
         ("pbs: job killed", "memory resource limit", "mem usage hard limit", "term_memlimit", "term_swap",
          "term_threadlimit", "term_processlimit"),
         r"PBS: job killed: [pv]?mem\b|Job exceeded a memory resource limit|exceeded MEM usage hard limit"
         r"|TERM_(?:MEMLIMIT|SWAP|THREADLIMIT|PROCESSLIMIT)\b",
         "the batch system killed the job for exceeding its memory (or process) limit", terminal=True,
         warnings_ok=True),
    Rule("lsf.preempt", "preempted", R_SCHED, 0.9,
         ("term_preempt", "term_requeue", "term_unknown"),
         r"TERM_PREEMPT\b|TERM_REQUEUE_(?:OWNER|ADMIN)\b",
         "LSF preempted or requeued the job", terminal=True, warnings_ok=True),
    Rule("batch.deleted", "cancelled_user", R_CANCEL, 0.7,
         ("deleted at request of", "term_owner", "term_admin", "term_force"),
         r"Job deleted at request of|TERM_(?:OWNER|ADMIN|FORCE_OWNER|FORCE_ADMIN)\b",
         "the job was deleted (qdel / bkill)", terminal=True, warnings_ok=True),
    # ---- Kubernetes / containers -----------------------------------------------------
    Rule("k8s.oomkilled", "host_oom", R_HOST_OOM_SLURM, 0.9,
         ("oomkilled", "oom killed", "low on resource: memory", "memorypressure"),
         r"(?<![\"'])\bOOMKilled\b(?![\"']?\s*:\s*false)|\"?reason\"?\s*:\s*\"?OOM ?Killed|Reason:\s+OOMKilled"
         r"|low on resource: memory|condition: \[MemoryPressure\]",
         "Kubernetes killed the container for exceeding its memory limit", terminal=True, warnings_ok=True),
    Rule("k8s.evicted_disk", "storage_io", R_STORAGE + 4, 0.8,
         ("ephemeral-storage", "diskpressure"),
         r"low on resource: ephemeral-storage|condition: \[DiskPressure\]",
         "Kubernetes evicted the pod because the node's disk filled up", terminal=True, warnings_ok=True),
    # ---- Ray / SkyPilot ------------------------------------------------------------
    Rule("ray.oom", "host_oom", R_HOST_OOM_SLURM, 0.92,
         ("running low on memory", "rayoutofmemoryerror", "memory pressure (oom)", "of the memory on node"),
         r"killed due to the node running low on memory|RayOutOfMemoryError|killed due to memory pressure \(OOM\)"
         r"|More than \d+% of the memory on node",
         "Ray killed a worker because the node ran low on memory", warnings_ok=True),
    Rule("sky.preempted", "preempted", R_SCHED, 0.85,
         ("is preempted", "preempted or failed", "spot cluster"),
         r"Cluster is preempted|is preempted or failed|Terminating unhealthy spot cluster",
         "the (spot) cluster was preempted", terminal=True, warnings_ok=True, flags=re.IGNORECASE),
    # Final status lines, in the formats SkyPilot and Ray's job CLI print them.
    # A SUCCEEDED status is a completion marker (any failure marker outranks it);
    # FAILED without a cause says nothing about the cause and is left alone.
    Rule("sky.succeeded", "success", R_SUCCESS + 1, 0.75,
         ("status: succeeded",), r"\bJob finished \(status: SUCCEEDED\)|\bManaged job finished: \d+ \(status: SUCCEEDED\)",
         "SkyPilot reports the job SUCCEEDED", warnings_ok=True),
    Rule("sky.failed_setup", "import_env", R_ENV - 3, 0.6,
         ("status: failed_setup",), r"\(status: FAILED_SETUP\)",
         "the job's setup commands (environment) failed", warnings_ok=True),
    Rule("sky.cancelled", "cancelled_user", R_CANCEL - 3, 0.65,
         ("status: cancelled",), r"\bJob finished \(status: CANCELLED\)|\bManaged job finished: \d+ \(status: CANCELLED\)",
         "the job was cancelled (sky cancel / sky jobs cancel)", terminal=True, warnings_ok=True),
    Rule("ray.job_succeeded", "success", R_SUCCESS + 1, 0.75,
         ("succeeded",), r"^Job '[\w-]+' succeeded$",
         "Ray's job CLI reports the job succeeded", warnings_ok=True),
    Rule("ray.job_stopped", "cancelled_user", R_CANCEL - 3, 0.6,
         ("was stopped",), r"^Job '[\w-]+' was stopped$",
         "the Ray job was stopped (ray job stop)", terminal=True, warnings_ok=True),
    # ---- TPU / XLA: accelerator memory is this taxonomy's gpu_oom ---------------------
    Rule("xla.oom", "gpu_oom", R_OOM, 0.92,
         ("resource_exhausted", "resource exhausted", "ran out of memory in memory space", "hbm",
          "attempting to reserve"),
         r"RESOURCE_EXHAUSTED\b|Resource exhausted:|Ran out of memory in memory space \w+"
         r"|Attempting to (?:reserve|allocate) [\d.]+[KMGT]?i?B?\b.{0,120}(?:not possible|HBM)",
         "the accelerator (TPU/XLA) ran out of device memory", warnings_ok=True),
    # JAX's multi-host coordination service is this taxonomy's collective layer on
    # TPU/GPU pods: a barrier or heartbeat timeout means some process never
    # arrived (crashed, was not launched, or could not reach the coordinator).
    Rule("xla.coordination_timeout", "nccl_comm", R_NCCL - 2, 0.75,
         ("barrier timed out", "missing heartbeats", "coordination service", "coordinationservice"),
         r"DEADLINE_EXCEEDED: Barrier timed out|CoordinationService/Barrier"
         r"|coordination service has detected missing heartbeats|distributed service detected fatal errors",
         "processes of a multi-host JAX/XLA job did not all reach the coordination barrier", symptom=True),
    Rule("tpu.busy", "node_failure", R_NODE_FAIL - 10, 0.7,
         ("/dev/vfio", "no accelerator found", "tpu initialization failed"),
         r"open\(/dev/vfio/\d+\): Device or resource busy|TPU initialization failed|No accelerator found",
         "the node's TPU could not be initialised (held by another process or broken)"),
    # ---- C++ programs logging through glog ------------------------------------------
    # "F0612 12:24:45.417707  7096 routing.cc:1462] Check failed: pickup < size (49 vs. 5)"
    # is the program's own assertion: it ranks above the "Aborted (core dumped)"
    # it causes. A failed cudaMalloc reported this way is GPU OOM (below).
    # glog follows every LOG(FATAL) / failed CHECK with "*** Check failure stack
    # trace: ***", which is a cheaper gate than the "F0612 12:24:45 ..." prefix.
    Rule("glog.fatal", "software_exception", R_SIGNAL + 4, 0.75,
         ("check failed", "check failure stack trace", "check_"),
         r"\bCheck failed: |\bCHECK_\w+ failed:|\*\*\* Check failure stack trace: \*\*\*",
         "a C++ assertion (glog CHECK / LOG(FATAL)) failed"),
    # An uncaught C++ exception aborts the process: the exception is the cause and
    # the SIGABRT / "(core dumped)" that follows is its effect. std::bad_alloc is
    # host memory (host.alloc_failed); CUDA and NCCL messages in what() rank higher.
    Rule("cpp.uncaught_exception", "software_exception", R_SIGNAL + 3, 0.75,
         ("terminate called after throwing",),
         r"terminate called after throwing an instance of '?(?!std::bad_alloc\b)(?!c10::(?:CUDA|Dist)\w*Error\b)[\w:<>]+",
         "an uncaught C++ exception aborted the process"),
    Rule("glog.cuda_oom", "gpu_oom", R_OOM, 0.93,
         ("out of memory",),
         r"(?:Check failed|Cuda Error|CUDA error).{0,80}\(\s*[02] vs\.\s*[02]\)\s*:?\s*(?:Cuda Error: )?out of memory"
         r"|cudaSuccess.{0,40}out of memory",
         "the job ran out of GPU memory", warnings_ok=True),
    Rule("glog.host_alloc", "host_oom", R_OOM - 2, 0.8,
         ("host allocation",), r"host allocation of size \d+ failed",
         "host memory allocation failed"),
    # ---- shells and launchers: a child killed by a signal, no cause printed ----------
    # SIGKILL with nothing else is most often the OOM killer (issue 14, item 4);
    # moderate confidence: the kernel log, when the epilog has it, confirms it.
    Rule("shell.sigkill", "host_oom", R_SIGNAL - 3, 0.55,
         ("killed", "exitcode", "signal 9", "status code 137", "exit code 137", "exit status 137", "sigkill"),
         r"^\s*(?:\S+: line \d+:\s+\d+\s+)?Killed(?:\s{2,}\S.{0,400})?$|exitcode\s*:\s*-9\b|failed \(exitcode: -9\)"
         r"|Signal 9 \(SIGKILL\) received|terminated by signal 9\b|(?:status|exit) code:? 137\b|exit status 137\b"
         r"|killed by signal 9\b|terminated with signal SIGKILL|exits with return code = -9\b",
         "a process was SIGKILLed with no other error, which is what the OOM killer does"),
    Rule("shell.sigterm", "cancelled_user", R_CANCEL - 10, 0.45,
         ("terminated", "exitcode", "signal 15", "exit code 143", "exit status 143"),  # "received signal 15"
         # srun's "task 3: Terminated" is srun stopping the other tasks, not a cancel;
         # kubectl's "State: Terminated" is any finished container, whatever its exit.
         r"^(?![^\n]{0,300}\btasks? [\d,-]+: )(?!\s*(?:Last )?(?:State|Reason|Phase|Status):\s)(?:[^\n]{0,300}[\s\\])?Terminated\s*$|exitcode\s*:\s*-15\b|failed \(exitcode: -15\)|(?:status|exit) code:? 143\b"
         r"|exit status 143\b|terminated by signal 15\b|exits with return code = -15\b|received signal 15\b",
         "the job was sent SIGTERM (scancel/qdel; a time limit or preemption would say so)"),
    # ---- numeric divergence, as other frameworks say it ------------------------------
    Rule("train.diverged", "numeric_divergence", R_NUMERIC, 0.8,
         ("diverged", "nan!", "is nan", "[nan]", "nan values"),
         r"(?i:\bloss (?:has )?diverged\b)|(?i:\b(?:outputs?|loss|gradients?) (?:is|are) nan\b)"
         r"|^\s*\d+\s+\[nan\]\s+\[nan\]",
         "the loss or the network's outputs became NaN"),
    # ---- PermissionError: whose path was it? --------------------------------------
    # On the job's data/checkpoint path it is the user's input (data_input);
    # on a cache or extension-build directory it is the environment; a
    # filesystem that refused (EROFS, EIO, quota) is storage_io in rules.py.
    Rule("perm.env_path", "import_env", R_ENV + 1, 0.6,
         ("permission denied",),
         r"Permission denied: '[^'\n]{0,300}(?:torch_extensions|site-packages|dist-packages|/\.cache/|/\.triton/)",
         "a cache or extension-build directory is not writable"),
    Rule("perm.data_path", "data_input", R_DATA, 0.7,
         ("permission denied", "permissionerror"),
         r"PermissionError: \[Errno 13\]|\[Errno 13\] Permission denied",
         "the job cannot read or write a file it was given (permissions)"),
    # ---- crashes, case-insensitively as DataLoader prints them ----------------------
    Rule("sig.worker_segfault", "segfault_signal", R_SIGNAL, 0.8,
         ("segmentation fault",), r"(?i:unexpected segmentation fault encountered)",
         "a DataLoader worker crashed with SIGSEGV"),
    # ---- Slurm node failure as salloc/sbatch say it ----------------------------------
    Rule("slurm.node_failure_alloc", "node_failure", R_NODE_FAIL, 0.9,
         ("node failure on",), r"(?:salloc|sbatch|srun): error: Node failure on\b",
         "Slurm lost a node the job was running on", terminal=True),
    # ---- cancellation as launchers and sacct print it --------------------------------
    Rule("launcher.interrupted", "cancelled_user", R_CANCEL, 0.7,
         ("death signal", "on user request", "cancelled by", "sigint"),
         r"Received [12] death signal|Terminating processes on user request|\|CANCELLED by \d+\||\bCANCELLED by \d+\s*$"
         r"|[Rr]eceived SIGINT\b|got SIGINT\b",
         "the job was interrupted or cancelled by a user", terminal=True, warnings_ok=True),
    # ---- completion markers other systems print ------------------------------------
    Rule("batch.completed", "success", R_SUCCESS, 0.75,
         ("successfully completed", "benchmark result", "stopping training"),
         r"^Successfully completed\.$|=+ Serving Benchmark Result =+|Reached max_steps \(\d+\), stopping training",
         "the batch system reports the job completed", warnings_ok=True),
    # ---- weak hints, used only when nothing stronger matched ------------------------
    Rule("hint.enospc_warning", "storage_io", R_VAGUE + 2, 0.45,
         ("no space left on device",), r"No space left on device",
         "the filesystem was full (reported as a warning before the failure)", warnings_ok=True),
    Rule("hint.ran_out_of_memory", "host_oom", R_EXCEPTION - 5, 0.5,
         ("ran out of memory",), r"\bran out of memory\b(?! in memory space)(?! trying to allocate)",
         "the node ran out of memory", warnings_ok=True, flags=re.IGNORECASE),
    # ---- job state as sacct / seff / scontrol print it in a log -------------------
    # "State: COMPLETED (exit code 0)" (seff), "... COMPLETED      0:0" (sacct), and
    # "...|COMPLETED|0:0" (sacct -p / --parsable2).
    Rule("sacct.completed", "success", R_SUCCESS + 2, 0.8,
         ("completed",), r"\bState:\s+COMPLETED\b|JobState=COMPLETED\b|[\s|]COMPLETED[\s|]+0:0\b",
         "the scheduler reports the job COMPLETED", warnings_ok=True),
    Rule("sacct.timeout", "timeout_walltime", R_SCHED, 0.9,
         ("timeout",), r"\bState:\s+TIMEOUT\b|[\s|]TIMEOUT[\s|]+\d+:\d+\b",
         "the scheduler reports the job TIMEOUT", terminal=True, warnings_ok=True),
    Rule("sacct.oom", "host_oom", R_HOST_OOM_SLURM, 0.9,
         ("out_of_me",), r"\bState:\s+OUT_OF_MEMORY\b|[\s|]OUT_OF_ME(?:MORY|\+)[\s|]+\d+:\d+\b",
         "the scheduler reports the job OUT_OF_MEMORY", warnings_ok=True),
    Rule("sacct.node_fail", "node_failure", R_NODE_FAIL, 0.9,
         ("node_fail",), r"\bState:\s+NODE_FAIL\b|[\s|]NODE_FAIL[\s|]+\d+:\d+\b",
         "the scheduler reports NODE_FAIL", terminal=True, warnings_ok=True),
    # ---- preemption as Kueue, Kubernetes and the clouds say it ----------------------
    Rule("cloud.preempted", "preempted", R_SCHED, 0.85,
         ("preempted to accommodate", "evicteddueto", "reason: preempted", "preemptionbyscheduler",
          "termination is imminent", "host ec2 terminated", "preemption notice", "spot interruption",
          "instance-action", "being reclaimed", "preemptionerror", "pre-empted", "pre-emption"),
         r"Preempted to accommodate|EvictedDueToPreempt\w*|reason: Preempted\b|PreemptionByScheduler"
         r"|termination is imminent|Host EC2 Terminated|preemption notice|Spot interruption"
         r"|instance-action\b.{0,80}terminate|is being reclaimed|PreemptionError|got pre-empted|pre-emption warning",
         "the cloud or the queue took the machine back (preemption / spot reclaim)", terminal=True,
         warnings_ok=True, flags=re.IGNORECASE),
    # MOAB's "job preempted (node failure)" is a node failure, whatever the word.
    Rule("moab.node_failure", "node_failure", R_NODE_FAIL, 0.9,
         ("node failure",), r"preempted \(node failure\)|due to node failure",
         "the batch system lost the node the job ran on", terminal=True, warnings_ok=True,
         flags=re.IGNORECASE),
    # ---- a node that died or never became usable, as launchers report it ------------
    Rule("ray.node_dead", "node_failure", R_NODE_FAIL - 6, 0.8,
         ("marked dead", "node has crashed", "raylet_marked_dead", "node_removed"),
         r"has been marked dead because the (?:detector|monitor) has missed too many heartbeats"
         r"|Owner's node has crashed|RAYLET_MARKED_DEAD|RAY_NODE_REMOVED",
         "Ray lost a node (missed heartbeats or the node crashed)", warnings_ok=True),
    Rule("slurm.node_setup", "node_failure", R_NODE_FAIL - 10, 0.75,
         ("prolog failure", "has been revoked", "credential expired", "slurm_script"),
         r"Prolog failure on node|Job allocation \d+ has been revoked|Job credential expired"
         r"|execve\(\): \S*slurm_script: No such file",
         "the node failed while setting up the job (prolog, credentials, spool)", warnings_ok=True),
    Rule("k8s.node_lost", "node_failure", R_NODE_FAIL - 10, 0.65,
         ("imminent node shutdown", "notready", "nodelost"),
         r"terminated in response to imminent node shutdown|\bNotReady\b|\bNodeLost\b",
         "Kubernetes lost the node (NotReady, node shutdown)", warnings_ok=True),
    Rule("host.machine_check", "node_failure", R_NODE_FAIL - 6, 0.75,
         ("hardware error", " ue memory"), r"mce: \[Hardware Error\]: Machine check|EDAC \S+: \d+ UE memory",
         "the node's memory or CPU reported an uncorrectable hardware error"),
    Rule("ucx.ib_error", "network_fabric", R_NET, 0.8,
         ("completion_with_err",), r"uct_ib_\w*completion_with_err",
         "InfiniBand transfers failed (UCX completion with error)", warnings_ok=True),
    # ---- collectives that disagree, numeric collapse, vLLM's KV cache ---------------
    Rule("dist.collective_mismatch", "nccl_comm", R_NCCL - 2, 0.75,
         ("mismatch between collectives",), r"Detected mismatch between collectives",
         "ranks ran different collectives"),
    Rule("amp.loss_scale_collapse", "numeric_divergence", R_NUMERIC - 2, 0.7,
         # "loss scale to", not "loss scale": Megatron prints "loss scale: 131072.0" on every
         # iteration line, and the regex ran on it in every log (~25 us a log).
         ("loss scale to", "loss is"),
         r"(?:reducing|setting) loss scale to:? (?:\d(?:\.\d+)?e-\d{2,}|0\.000\d+)|\bLoss is (?:Infinity|NaN|nan|inf)\b",
         "the fp16 loss scale collapsed or the loss became infinite", warnings_ok=True),
    Rule("vllm.kv_cache", "gpu_oom", R_OOM, 0.85,
         ("cache blocks", "kv cache is -", "cuda blocks: 0"),
         r"No available memory for the cache blocks|reserved for KV Cache is -|# cuda blocks: 0\b",
         "the GPU has no memory left for the KV cache", warnings_ok=True),
    Rule("torch.state_dict", "software_exception", R_EXCEPTION + 2, 0.75,
         ("state_dict", "size mismatch for"),
         r"Error\(s\) in loading state_dict|size mismatch for \S+: copying a param with shape",
         "the checkpoint does not fit the model (state_dict mismatch)"),
    Rule("env.shell_setup", "import_env", R_ENV, 0.8,
         ("commandnotfounderror", "modulefile", "conda init"),
         r"CommandNotFoundError|Unable to locate a modulefile|ModuleCmd_Load\.c",
         "the job's shell environment (conda / modules) is not set up"),
    # The shell could not start the program: its interpreter or binary is not there
    # ("bash: /usr/bin/python: No such file or directory"). A data file named in a
    # redirect carries an extension, so paths with one are left alone.
    Rule("env.shell_missing_program", "import_env", R_ENV - 1, 0.75,
         ("no such file or directory",),
         r"(?:^|[\s)/])(?:ba|z|da)?sh: (?:line \d+: )?(?:\S*/)?[\w.+-]*[A-Za-z][\w.+-]*"
         r"(?<!\.[A-Za-z]{2})(?<!\.[A-Za-z]{3})(?<!\.[A-Za-z]{4})(?<!\.[A-Za-z]{5})"
         r": No such file or directory",
         "the program the job runs (or its interpreter) is not installed at that path"),
    Rule("ray.runtime_env", "import_env", R_ENV, 0.85,
         ("runtime_env setup failed", "runtime env failed", "runtimeenvsetuperror"),
         r"runtime_env setup failed|associated runtime env failed to be created|RuntimeEnvSetupError",
         "Ray could not build the job's runtime environment (pip/conda/working_dir)"),
    Rule("launcher.return_code", "segfault_signal", R_SIGNAL - 1, 0.7,
         ("return code = -",), r"exits with return code = -(?:11|7|6|4|8)\b",
         "a training process died of a crash signal"),
    Rule("launcher.hangup", "cancelled_user", R_CANCEL - 4, 0.6,
         ("got signal: 1", "got signal: 2"), r"SignalException: Process \d+ got signal: [12]\b",
         "the job got SIGHUP/SIGINT (the terminal or session that started it went away)", terminal=True),
    Rule("scancel.ran", "cancelled_user", R_CANCEL - 5, 0.6,
         ("scancel",), r"\bscancel \d+\b",
         "scancel was run on the job", warnings_ok=True),
    # ---- well-known messages from vendors' and frameworks' documentation ------------
    # (general formats, added from what these tools are documented to print,
    # not from any corpus item).
    Rule("gpu.gsp_timeout", "gpu_hardware", R_GPU_HW - 2, 0.85,
         ("timeout waiting for rpc from gsp", "gsp rpc"), r"Timeout waiting for RPC from GSP|GSP RPC timeout",
         "the GPU's system processor (GSP) stopped answering the driver", warnings_ok=True, flags=re.IGNORECASE),
    # Above cuda.error: "CUDA error: CUDA-capable device(s) is/are busy or
    # unavailable" is this message, not a generic CUDA error.
    Rule("gpu.unavailable", "gpu_hardware", R_CUDA + 1, 0.55,
         ("busy or unavailable", "devicesunavailable", "no devices were found"),
         r"CUDA-capable device\(s\) is/are busy or unavailable|cudaErrorDevicesUnavailable|^No devices were found$",
         "a GPU is unavailable (held by another process, or in a bad state)"),
    Rule("net.rdma_error", "network_fabric", R_NET - 2, 0.75,
         ("ibv_wc_", "infiniband", "ucx  error", "ucx error", "rdma", "mlx5_"),
         r"IBV_WC_(?!SUCCESS\b)\w+|(?i:infiniband\b.{0,60}\b(?:link down|port down|error))|\bUCX\s+ERROR\b"
         r"|(?i:\brdma\b(?![-.:]).{0,60}\b(?:error|failed))|mlx5_\d+:.{0,120}\b(?:CQE error|error CQE|syndrome)",
         "the RDMA/InfiniBand transport reported an error", warnings_ok=True),
    Rule("env.build_or_library", "import_env", R_ENV, 0.75,
         ("could not load dynamic library", "failed building wheel", "failed with exit status",
          "is not a supported wheel", "no nvidia driver", "no cuda gpus are available"),
         r"Could not load dynamic library|Failed building wheel|error: command '[^'\n]{0,120}' failed with exit status"
         r"|is not a supported wheel on this platform|Found no NVIDIA driver on your system|No CUDA GPUs are available",
         "the software environment is broken (a library, wheel, driver or GPU visibility)"),
    Rule("train.nan_words", "numeric_divergence", R_NUMERIC - 1, 0.75,
         # "nan loss"/"nan grad", not "nan ": every Megatron iteration line holds
         # "number of nan iterations", and the regex ran on it in every log (~30 us a log).
         ("nan loss", "nan grad", "became", "becomes", "turned", "went"),
         r"(?i:\bnan (?:loss|gradients?|grads?)\b)|(?i:\bloss (?:became|becomes|turned|went) (?:to )?(?:nan|inf)\b)",
         "the loss or the gradients became NaN/Inf"),
    Rule("sched.preempted_word", "preempted", R_SCHED - 10, 0.7,
         ("preempted", "pre-empted", "preemption signal", "preemption notice"),
         r"(?<!not )(?<!non-)(?<!not been )(?<!never been )\bpre-?empted\b|\bpreemption (?:signal|notice|event)\b",
         "the job (or its machine) was preempted", warnings_ok=True, flags=re.IGNORECASE),
    Rule("run.finished_ok", "success", R_SUCCESS, 0.7,
         ("finished with exit code 0", "completed successfully", "finished successfully", "exit code 0"),
         r"Process finished with exit code 0\b|(?i:\b(?:job|run|training|task|script) (?:has )?(?:completed|finished) successfully\b)"
         r"|^Exited with exit code 0\.?$",
         "the program reports it finished normally", warnings_ok=True),
    Rule("env.extension_build", "import_env", R_ENV, 0.75,
         ("error building extension", "ninja: build stopped", "symbol lookup error", "but it was not found in your environment",
          "because of the following error", "could not select device driver", "nvidia-container-cli"),
         r"Error building extension|ninja: build stopped|symbol lookup error"
         r"|requires the \S+ library but it was not found in your environment|Failed to import \S+ because of the following error"
         r"|could not select device driver|nvidia-container-cli: initialization error",
         "a compiled extension or a required library is missing or does not match"),
    Rule("train.nonfinite_grads", "numeric_divergence", R_NUMERIC - 1, 0.75,
         ("inf or nan", "nan or inf"),
         r"(?i:\b(?:found|detected|encountered|contains?)\b.{0,40}\b(?:inf or nan|nan or inf)\b)",
         "the gradients or the loss became NaN/Inf"),
    Rule("net.rdma_cm", "network_fabric", R_NET - 2, 0.75,
         ("rdma_cm_event", "ibv_"),
         r"RDMA_CM_EVENT_(?:REJECTED|UNREACHABLE|ADDR_ERROR|ROUTE_ERROR|CONNECT_ERROR)|\bibv_\w+ failed\b",
         "RDMA connection setup failed", warnings_ok=True),
    # Launchers' own "finished" lines are completion markers: they print them
    # only after every worker exited 0.
    Rule("launcher.finished", "success", R_SUCCESS, 0.7,
         ("exits successfully", "successfully finished", "after training is done", "done training in",
          "throughput:"),
         r"Process \d+ exits successfully|worker group successfully finished|\[after training is done\]"
         r"|done training in [\d.]+ seconds|^Throughput: [\d.]+ requests/s",
         "the launcher reports every worker finished normally", warnings_ok=True),
    Rule("keras.last_epoch", "success", R_SUCCESS - 2, 0.6,
         ("epoch ",), r"^Epoch (\d+)/\1\s*$",
         "the last epoch ran (Keras)", warnings_ok=True),
    # ---- NCCL watchdog frames without the message line -------------------------------
    Rule("nccl.watchdog_frame", "nccl_comm", R_NCCL - 6, 0.6,
         ("exception raised from ncclcommwatchdog",), r"Exception raised from ncclCommWatchdog",
         "the NCCL watchdog aborted the job", symptom=True),
)

# ---- kernel-log lines for GPU hardware (one marked place, issue 14) -----------------
# NVRM Xid lines (and fallen-off-the-bus lines that carry "Xid") are read by
# gcm_checks.xid.parse and SXid lines by gcm_checks.xid.sxid (judges._judge_xid,
# judges._judge_sxid), so `classify` and `xid scan` judge them alike. The other
# patterns here are driver messages gcm_checks.xid has no parser for.
KERNEL_HW_RULES: Tuple[Rule, ...] = (
    Rule("kernel.gpu_init_failed", "gpu_hardware", R_GPU_HW, 0.9,
         ("rminitadapter failed", "failed to initialize the nvidia gpu", "failed to allocate nvrm"),
         r"RmInitAdapter failed|Failed to initialize the NVIDIA GPU at|NVRM: GPU \S+: RmInitAdapter",
         "the NVIDIA driver failed to initialise a GPU"),
    # Judged by the XID package's own SXid parser and the Fabric Manager guide's
    # catalogue (gcm_checks.xid.sxid): fatal, or non-fatal with stalled NVLink traffic
    # -> gpu_hardware above the CUDA errors it causes; other non-fatal -> a hint
    # only; ignorable and register-detail lines -> nothing (judges._judge_sxid).
    Rule("kernel.nvswitch_sxid", "gpu_hardware", R_GPU_HW, 0.9,
         ("sxid",), r"\bSXid\b.{0,80}\d+",
         "an NVSwitch reported a fatal error (SXid)", judge="sxid"),
    Rule("kernel.nvlink_error", "gpu_hardware", R_GPU_HW - 2, 0.8,
         ("nvlink",), r"NVLink:? .{0,200}(?:fatal|error|link down|training failed)|NVLINK Error",
         "an NVLink link failed", flags=re.IGNORECASE),
    Rule("kernel.pcie_gone", "gpu_hardware", R_GPU_HW - 2, 0.8,
         ("surprise down", "device has no aer-aware driver", "not responding to commands"),
         r"Surprise Down Error|has fallen off the bus and is not responding|PCIe Bus Error: severity=Uncorrected \(Fatal\)",
         "a GPU dropped off the PCIe bus"),
)

ALL_RULES: Tuple[Rule, ...] = (RULES + MORE_RULES + KERNEL_HW_RULES + DOC_RULES + FAM_RULES + SRC_INFRA_RULES
                                + SRC_APP_RULES + SRC_MORE_RULES + S4_RULES + ENUM_RULES + GH_RULES)
ALL_BY_ID: Dict[str, Rule] = {r.id: r for r in ALL_RULES}
if len(ALL_BY_ID) != len(ALL_RULES):  # pragma: no cover - a table typo
    raise ValueError("duplicate rule id in ALL_RULES")
_ = (KERNEL, R_DATA, R_EXCEPTION, R_NCCL)  # the rank names this table reads with
