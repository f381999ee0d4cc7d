"""Rules written from documented message families, not from corpus excerpts (issue 14).

rules.py and rules_more.py grew from the misses of the corpus's tuning split;
a rule written from one excerpt generalises only as far as that excerpt's
wording. This table instead takes each weak class and writes down what the
tools that end jobs are *documented* to print: the schedulers' own
termination reasons (LSF's TERM_* table, HTCondor's user-log events, Grid
Engine's h_rt message, Flux job exceptions, Kubernetes' Job and pod
conditions), the fabric stacks' error strings (Open MPI's openib help text,
Cray MPICH over libfabric, mlx5 firmware health, the kernel's NIC watchdog),
the usual ways a Python/CUDA environment does not match (NumPy 2 ABI,
PTX/toolchain, nvcc architecture, container runtimes, pip resolution), and
the completion lines popular launchers print only when every worker exited 0.

Same conventions as rules.py: literal lower-case keywords gate each rule (and
start with a letter or a character other keywords already start with: every new
first character costs the keyword trie a branch at every position of every log),
every repetition is bounded, patterns key on the stable words of a message,
never on hosts, paths or numbers. Each rule has a test row written from the
documented format in tests/test_classify_rules_docs.py.
"""

from __future__ import annotations

import re
from typing import Tuple

from gcm_checks.classify.rules import (
    R_CANCEL, R_ENV_CUDA, R_EXCEPTION, R_HOST_OOM_SLURM, R_NCCL, R_NET, R_NODE_FAIL, R_NUMERIC, R_OOM, R_SCHED,
    R_SUCCESS, R_VAGUE, Rule,
)

DOC_RULES: Tuple[Rule, ...] = (
    # ---- time limits ------------------------------------------------------------------
    # Grid Engine: "job 12.1 exceeded hard wallclock time - initiate terminate method";
    # Flux: "job.exception type=timeout severity=0 resource allocation expired";
    # Kubernetes Job: condition reason DeadlineExceeded, "Job was active longer than
    # specified deadline" (activeDeadlineSeconds).
    Rule("doc.timeout", "timeout_walltime", R_SCHED - 2, 0.9,
         ("wallclock time", "allocation expired", "type=timeout", "longer than specified deadline", "deadlineexceeded",
          "walltime", "wall time", "wall-time", "run time limit", "runtime limit", "timelimit exceeded",
          "time limit exceeded"),
         r"exceeded (?:hard|soft) wallclock time|resource allocation expired|\bexception type=timeout\b"
         r"|Job was active longer than specified deadline|reason:\s*\"?DeadlineExceeded\b"
         r"|(?i:\bwall[- ]?(?:time|clock)(?: limit)? (?:exceeded|expired)\b)"
         r"|(?i:\bexceeded (?:the |its |their )?(?:requested |maximum )?(?:wall[- ]?time|run ?time) limit\b)"
         r"|(?i:\bexceeded (?:the |its |their )?(?:requested |allocated )?wall[- ]?(?:time|clock)\b)"
         r"|(?i:\b(?:job |wall[- ]?)?time ?limit exceeded\b)",
         "the batch system stopped the job at its time limit", terminal=True, warnings_ok=True),
    # ---- preemption -------------------------------------------------------------------
    # Kubernetes scheduler event on the victim: "Preempted by a pod on node n1"
    # (older: "Preempted by ns/pod on node n1"); pod condition DisruptionTarget with
    # reason PreemptionByKubeScheduler (1.26) / PreemptionByScheduler (1.27+).
    # HTCondor user log event 004: "Job was evicted." Azure scheduled events:
    # "EventType": "Preempt". SkyPilot managed jobs: "(status: RECOVERING)" after a
    # spot preemption. GCE audit log: compute.instances.preempted. EC2 state reasons
    # Server.SpotInstanceTermination / Server.SpotInstanceShutdown.
    Rule("doc.preempted", "preempted", R_SCHED - 3, 0.85,
         ("preempted by", "preemptionby", "job was evicted", "preempt", "status: recovering", "server.spotinstance"),
         r"\bPreempted by (?:a pod|pod|\S+/\S+) (?:\S+ )?on node\b|PreemptionBy(?:Kube)?Scheduler"
         r"|\bJob was evicted\b|\"?EventType\"?\s*:\s*\"?Preempt\b|compute\.instances\.preempted"
         r"|\(status: RECOVERING\)|Server\.SpotInstance(?:Termination|Shutdown)"
         r"|(?i:\bpreemption (?:detected|received|warning|requested)\b)",
         "the scheduler or the cloud took the job's resources back (preemption)", terminal=True,
         warnings_ok=True),
    # ---- cancellation -----------------------------------------------------------------
    # HTCondor user log event 009 "009 (12.000.000) ... Job was aborted." (condor_rm); Grid Engine qdel:
    # "user has registered the job 12 for deletion" / "user has deleted job 12";
    # Flux: "job.exception type=cancel"; srun killed while pending:
    # "srun: Job allocation 12 has been revoked" is not here (it also follows a node
    # failure), but "Cancelled pending job allocation" is a user's Ctrl-C; `scancel -v`
    # prints "scancel: Terminating job 12"; LSF's bkill "Job <12> is being terminated";
    # Ray raises TaskCancelledError for ray.cancel().
    Rule("doc.cancelled", "cancelled_user", R_CANCEL, 0.75,
         ("job was aborted", "for deletion", "has deleted job", "type=cancel", "cancelled pending job",
          "condor_rm", "scancel: terminating", "is being terminated", "taskcancellederror"),
         # (HTCondor's event line only: a PBS mail says "Job was aborted" after a limit kill.)
         r"^0?09 \(\d+\.\d+\.\d+\) .{0,40}Job was aborted|has registered the job \d+ for deletion"
         r"|has deleted job \d+|\bexception type=cancel\b|Cancelled pending job allocation|via condor_rm"
         r"|scancel: Terminating job \d+|^Job <\d+> is being terminated\s*$|\bTaskCancelledError\b",
         "the job was cancelled (qdel / condor_rm / flux cancel / Ctrl-C)", terminal=True, warnings_ok=True),
    # ---- completion markers (only printed when the run ended well) ----------------
    # HTCondor event 005 "Job terminated. (1) Normal termination (return value 0)";
    # Torque/PBS epilogue and mail "Exit_status=0"; kubectl describe of a finished
    # container "Reason: Completed" / "Exit Code: 0"; torchelastic "Local worker group
    # finished (WorkerState.SUCCEEDED)"; Hugging Face's "***** eval metrics *****"
    # block after training; TF Estimator "Loss for final step:"; nccl-tests'
    # closing "# Avg bus bandwidth : N"; detectron2's "Overall training speed" /
    # "Total training time" (printed in a finally: an exception after it still wins);
    # Ultralytics' "100 epochs completed in 1.234 hours." and "Results saved to ...";
    # Lightning's "Test metric" / "Validate metric" table after trainer.test/validate;
    # lm-evaluation-harness's results table; Ray Tune's closing "Total run time".
    Rule("doc.completed", "success", R_SUCCESS + 1, 0.75,
         ("normal termination (return value 0)", "exit_status=0", "reason:", "exit code:", "workerstate.succeeded",
          "metrics *", "loss for final step", "avg bus bandwidth", "overall training speed", "total training time",
          "epochs completed in", "results saved to", "test metric", "validate metric", "tasks", "total run time"),
         r"Normal termination \(return value 0\)|\bExit_status=0\b|^\s*Reason:\s+Completed\s*$|^\s*Exit Code:\s+0\s*$"
         r"|WorkerState\.SUCCEEDED|\*+ (?:eval|test|predict) metrics \*+|Loss for final step:"
         r"|^#\s*Avg bus bandwidth\s*:\s*[\d.]+|Overall training speed: \d+ iterations in|\bTotal training time: \d"
         r"|\b\d+ epochs completed in [\d.]+ hours\b|^Results saved to \S+"
         r"|[\u2503\u2502|]\s+(?:Test|Validate) metric\s+[\u2503\u2502|]|^\|\s*Tasks\s*\|Version\|"
         r"|Total run time: [\d.]+ seconds \([\d.]+ seconds for the tuning loop\)",
         "the job's launcher or scheduler reports a normal end", warnings_ok=True),
    # ---- network fabric -----------------------------------------------------------------
    # Open MPI openib: "The InfiniBand retry count between two MPI processes has been
    # exceeded" and "error polling LP CQ with status RETRY EXCEEDED ERROR"; Cray MPICH
    # on libfabric/Slingshot: "MPIDI_OFI_handle_cq_error(...): OFI poll failed";
    # mlx5 firmware health ("device's health compromised", "Fatal error N detected");
    # the kernel's transmit watchdog ("NETDEV WATCHDOG: ib0 (...): transmit queue 0
    # timed out"); NIC drivers' "NIC Link is Down"; Omni-Path/HFI and Slingshot CXI
    # link loss; MVAPICH2's "Got FATAL event 3" and "wc.status=12"; perftest's
    # "Completion with error at client" / "Failed status 12: wr_id"; ibv_devinfo's
    # "state: PORT_DOWN (1)".
    Rule("doc.fabric", "network_fabric", R_NET, 0.85,
         ("infiniband retry count", "error polling", "ofi poll failed", "mpidi_ofi_handle_cq_error",
          "health compromised", "mlx5_core", "netdev watchdog", "transmit timeout", "link is down", "hfi1",
          "cxi", "physical state:", "retry exceeded", "fatal event", "wc.status=", "send desc error",
          "completion with error", "failed status", "failed to modify qp", "port_down", "port_init"),
         r"InfiniBand retry count between two MPI processes|error polling [LH]P CQ with status"
         r"|OFI poll failed|MPIDI_OFI_handle_cq_error|mlx5_core\b.{0,200}(?:health compromised|Fatal error \d+ detected)"
         r"|NETDEV WATCHDOG: .{0,120}transmit queue \d+ timed out|\bib\d+: transmit timeout|\bNIC Link is Down\b"
         r"|\bhfi1_\d+:.{0,120}\blink (?:down|failure)\b|\bcxi\d*\b.{0,120}\blink (?:down|failed)\b"
         r"|Physical state:\s+(?:Polling|Disabled|LinkErrorRecovery)\b|\bRETRY EXCEEDED ERROR\b"
         r"|\bGot FATAL event \d+|\bwc\.status=(?!0\b)\d+|Send desc error|Completion with error at (?:client|server)"
         r"|Failed status \d+: wr_id|Failed to modify QP to (?:INIT|RTR|RTS)|\bstate:\s+PORT_(?:DOWN|INIT)\b"
         r"|mlx5_core\b.{0,200}Driver is in error state",
         "the network fabric (InfiniBand/RDMA/Slingshot) failed between nodes", warnings_ok=True),
    # Open MPI's TCP transport between nodes: "mca_btl_tcp_frag_recv: readv failed:
    # Connection reset by peer (104)" and "btl_tcp_endpoint.c:...  connect() to
    # 10.0.0.2 failed: No route to host (113)" - the network between the ranks' nodes.
    Rule("doc.mpi_tcp", "network_fabric", R_NET - 4, 0.7,
         ("mca_btl_tcp", "btl_tcp_endpoint"),
         r"mca_btl_tcp_\w+: (?:readv|writev|recv|send) failed: (?:Connection reset by peer|Connection timed out"
         r"|No route to host|Broken pipe)|btl_tcp_endpoint\.c.{0,200}connect\(\) to \S+ failed: (?:No route to host"
         r"|Connection timed out|Network is unreachable)",
         "the network between the MPI ranks' nodes failed (Open MPI TCP transport)", warnings_ok=True),
    # ---- node failure ---------------------------------------------------------------
    # PBS MoM: "PBS: job killed: node 1 (n12) requested job terminate, 'EOF' (code
    # 1099) - received SISTER_EOF attempting to communicate with sister MOM's";
    # slurmctld: "Node n12 not responding, setting DOWN"; LSF TERM_REMOVE_HUNG_JOB
    # (host unreachable); Kubernetes pod conditions DeletionByTaintManager /
    # DeletionByPodGC (the node went away); the kernel's "Kernel panic - not syncing".
    Rule("doc.node_lost", "node_failure", R_NODE_FAIL - 6, 0.8,
         ("sister_eof", "sister mom", "not responding, setting down", "term_remove_hung_job", "deletionby",
          "kernel panic", "communication connection failure"),
         r"SISTER_EOF|communicate with sister MOM|\bnot responding, setting DOWN\b|TERM_REMOVE_HUNG_JOB\b"
         r"|DeletionBy(?:TaintManager|PodGC)\b|Kernel panic - not syncing"
         r"|Task launch for \S+ failed on node \S+: Communication connection failure",
         "the node the job ran on went down or stopped answering", terminal=True, warnings_ok=True),
    # ---- memory, as other runtimes and batch systems say it ----------------------------
    # The CUDA driver API's CUDA_ERROR_OUT_OF_MEMORY (JAX/XLA, CuPy, TensorRT print the
    # enum) and a failed cudaMalloc; HTCondor's "Job has gone over cgroup memory limit
    # of N megabytes"; Grid Engine's 'exceeds job hard limit "h_vmem"'.
    Rule("doc.gpu_oom", "gpu_oom", R_OOM, 0.9,
         ("cuda_error_out_of_memory", "cudamalloc"),
         r"CUDA_ERROR_OUT_OF_MEMORY|cudaMalloc\w*\b.{0,80}\bout of memory",
         "the job ran out of GPU memory", warnings_ok=True),
    Rule("doc.host_oom", "host_oom", R_HOST_OOM_SLURM, 0.9,
         ("memory limit of", "h_vmem"),
         r"(?:gone|went) over (?:cgroup )?memory limit of|exceeds job (?:hard|soft) limit \"h_vmem\"",
         "the batch system killed the job for exceeding its memory request", terminal=True, warnings_ok=True),
    # ---- numbers that stopped being numbers ------------------------------------------
    # TensorFlow's CheckNumerics ("... : Tensor had NaN values") and the summary writer
    # ("InvalidArgumentError: Nan in summary histogram for: loss").
    Rule("doc.numeric", "numeric_divergence", R_NUMERIC, 0.85,
         ("tensor had", "nan in summary"), r"Tensor had (?:NaN|Inf|NaN and Inf) values|Nan in summary histogram",
         "the loss or the gradients became NaN/Inf"),
    # Open MPI/PRRTE: the daemon on another node died after launch.
    Rule("doc.node_daemon", "node_failure", R_NCCL - 3, 0.6,
         ("daemon has unexpectedly failed",), r"(?:ORTE|PRTE) daemon has unexpectedly failed after launch",
         "the launcher's daemon on another node died (node or network lost)"),
    # ---- environment ----------------------------------------------------------------
    # NumPy 2's ABI break ("A module that was compiled using NumPy 1.x cannot be run
    # in NumPy 2.x", "numpy.dtype size changed, may indicate binary incompatibility");
    # CUDA toolchain/driver mismatches as the runtime names them (PTX compiled with an
    # unsupported toolchain, insufficient driver, no binary for the GPU); nvcc
    # "Unsupported gpu architecture" and "unsupported GNU version"; NVML's
    # "Driver/library version mismatch" (driver upgraded without a reboot); MKL's
    # loader; conda environments that do not exist; containers that cannot start
    # (Kubernetes ErrImagePull/ImagePullBackOff, docker's daemon, Apptainer FATAL,
    # nvidia-container-cli requirement errors); pip that cannot resolve; a build
    # that cannot find a header, a library or Ninja; a script with DOS line ends;
    # dash's "/bin/sh: 1: deepspeed: not found" (bash says "command not found");
    # CUDA errors 803/804 (driver/toolkit mismatch, forward compatibility on an
    # unsupported GPU, usually a container's CUDA newer than the host driver).
    Rule("doc.env", "import_env", R_ENV_CUDA, 0.85,
         ("numpy 1.x", "dtype size changed", "unsupported toolchain", "unsupported_ptx", "unsupportedptx",
          "insufficientdriver", "no_binary_for_gpu", "nokernelimage", "unsupported gpu architecture",
          "unsupported gnu version", "driver/library version mismatch", "mkl fatal error", "incompatible with libgomp",
          "environmentnamenotfound", "environmentlocationnotfound", "could not find conda environment",
          "errimagepull", "imagepullbackoff", "createcontainer", "error response from daemon", "requirement error",
          "fatal:", "resolutionimpossible", "requires a different python", "externally-managed-environment",
          "ninja is required", "cannot find -l", "bad interpreter", "exec format error", "numpy is not available",
          "unable to load any of", "could not locate", "only supports ampere",
          "visual c++", "not currently imported", "not found", "fatal error:", "forward compatibility",
          "compat_not_supported", "compatnotsupported", "display driver", "driver_mismatch", "drivermismatch",
          "ptxas fatal", "winerror 126", "conda init", "invalid choice"),
         r"compiled using NumPy 1\.x cannot be run in|numpy\.dtype size changed, may indicate binary incompatibility"
         r"|PTX was compiled with an unsupported toolchain|CUDA_ERROR_UNSUPPORTED_PTX_VERSION|cudaErrorUnsupportedPtxVersion"
         r"|cudaErrorInsufficientDriver|CUDA_ERROR_NO_BINARY_FOR_GPU|cudaErrorNoKernelImageForDevice"
         r"|nvcc fatal\s*:\s*Unsupported gpu architecture|unsupported GNU version!"
         r"|Driver/library version mismatch|Intel MKL FATAL ERROR: Cannot load|MKL_THREADING_LAYER=INTEL is incompatible"
         r"|EnvironmentNameNotFound|EnvironmentLocationNotFound|Could not find conda environment"
         r"|\b(?:ErrImagePull|ImagePullBackOff|CreateContainerConfigError|CreateContainerError)\b"
         r"|docker: Error response from daemon|nvidia-container-cli: requirement error"
         r"|^\s*FATAL:\s+(?:Unable to handle \S+ uri|While (?:making|pulling|performing|checking)|container creation failed"
         r"|could not open image|Image file already exists|failed to)"
         r"|ResolutionImpossible|requires a different Python|error: externally-managed-environment"
         r"|Ninja is required to load C\+\+ extensions|(?:/usr/bin/)?ld: cannot find -l\w+|: bad interpreter: "
         r"|exec format error|Numpy is not available|Unable to load any of \{lib|Could not locate \S+\.(?:dll|so)\b"
         r"|FlashAttention only supports Ampere GPUs or newer|fatal error: \S+\.h(?:pp)?: No such file or directory"
         r"|Microsoft Visual C\+\+ 14\.0 or greater is required|does not exist or is not currently imported"
         r"|^(?:/bin/|/usr/bin/)?(?:sh|dash): \d+: [^\s:]+: not found\s*$"
         r"|forward compatibility was attempted on non supported HW|CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"
         r"|cudaErrorCompatNotSupportedOnDevice|unsupported display driver / cuda driver combination"
         r"|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH|cudaErrorSystemDriverMismatch|ptxas fatal\s*:|\[WinError 126\]"
         r"|Run 'conda init' before 'conda activate'|invalid choice: 'activate'",
         "the software environment does not match (library ABI, CUDA toolchain/driver, container, packages)"),
    # NumPy 1.24 removed np.float/np.int, torch and transformers move APIs between
    # releases: "AttributeError: module 'numpy' has no attribute 'float'" is an
    # installed version that does not match the code, not a bug in the job's logic.
    Rule("doc.env_module_attr", "import_env", R_EXCEPTION + 5, 0.6,
         ("has no attribute",), r"AttributeError: module '[\w.]+' has no attribute '\w+'",
         "an installed package's version does not have what the code uses"),
    # Fabric adapters that could not be set up: mlx5 firmware commands failing
    # ("mlx5_cmd_out_err ... failed, status bad resource state"), PSM2 (Omni-Path)
    # with no usable HFI, libfabric providers logging errors.
    Rule("doc.fabric_setup", "network_fabric", R_NET - 8, 0.65,
         ("mlx5_cmd_out_err", "mlx5_cmd_check", "can't open hfi unit", "libfabric:"),
         r"mlx5_cmd_(?:out_err|check)\b.{0,200}\bfailed, status\b|PSM2 can't open hfi unit"
         r"|libfabric:\d+:\d+::\w+:\w+:.{0,300}\b(?:[Ee]rror|failed)\b",
         "the network adapter (InfiniBand/Omni-Path/EFA) could not be set up or reported an error",
         warnings_ok=True),
    # ---- the scheduler's final state, as sacct / seff / scontrol print it -----------
    Rule("doc.sacct_cancelled", "cancelled_user", R_CANCEL, 0.8,
         ("cancelled",),
         # Only the job's own row: a step row ("123.0 ... CANCELLED 0:15") is also
         # what a timed-out job's batch step or srun's killed step shows.
         r"\bState:\s+CANCELLED\b|JobState=CANCELLED\b"
         r"|^(?!\s*\d+(?:_\d+)?\.\w+[\s|])[^\n]{0,400}?[\s|]CANCELLED(?:\+| by \d+)?[\s|]+\d+:\d+\b",
         "the scheduler reports the job CANCELLED", terminal=True, warnings_ok=True),
    Rule("doc.sacct_preempted", "preempted", R_SCHED, 0.9,
         ("preempted",), r"\bState:\s+PREEMPTED\b|[\s|]PREEMPTED[\s|]+\d+:\d+\b",
         "the scheduler reports the job PREEMPTED", terminal=True, warnings_ok=True),
    # A failed final state without a cause (sacct FAILED 1:0, Torque Exit_status=1,
    # kubectl describe's "Reason: Error" / "Exit Code: 1" next to an init container's
    # "Reason: Completed / Exit Code: 0",
    # LSF "Exited with exit code 1.", HTCondor "return value 1"): says nothing about
    # why, but it is a failure marker, so completion markers in the same log (the
    # extern step's "COMPLETED 0:0", "Training completed" before the crash) do not
    # make it a success (engine.judge); any real cause or weak hint outranks it.
    Rule("doc.failed_state", "unknown", R_VAGUE + 1, 0.3,
         # Not the bare word "failed" (every log has it): the state as these tools print it.
         ("state: failed", "jobstate=failed", "failed|", "failed  ", "exit_status=", "exited with exit code",
          "normal termination (return value", "run time ", "exit code:", "reason:"),
         r"\bState:\s+FAILED\b|JobState=FAILED\b|[\s|]FAILED[\s|]+[1-9]\d*:\d+\b|\bExit_status=(?!0\b)-?\d+"
         r"|^Exited with exit code [1-9]\d*\.?\s*$|Normal termination \(return value [1-9]\d*\)"
         r"|\b(?:Ended|Failed), Run time [\d:-]+, FAILED\b"
         r"|^\s*Exit Code:\s+[1-9]\d*\s*$|^\s*Reason:\s+(?:Error|ContainerCannotRun|StartError)\s*$",
         "the scheduler reports the job failed, without saying why", warnings_ok=True),
    # ---- Slurm's job mail (MailType=END/FAIL): "Slurm Job_id=12 Name=x Ended, Run time
    # 01:02:03, TIMEOUT, ExitCode 0" - the state names the cause for these five (FAILED
    # is doc.failed_state; NODE_FAIL is slurm.node_failure's).
    *(Rule(f"doc.slurm_mail.{state.lower()}", cat, rank, 0.85, ("run time ",),
           r"\b(?:Ended|Failed|Requeued), Run time [\d:-]+, " + state + r"\b", f"Slurm's job mail reports {state}", terminal=True,
           warnings_ok=True)
      for state, cat, rank in (("COMPLETED", "success", R_SUCCESS + 2), ("TIMEOUT", "timeout_walltime", R_SCHED),
                               ("PREEMPTED", "preempted", R_SCHED), ("CANCELLED", "cancelled_user", R_CANCEL),
                               ("OUT_OF_MEMORY", "host_oom", R_HOST_OOM_SLURM))),
    # A warning that the installed PyTorch has no kernels for this GPU: the failure
    # usually follows as "no kernel image"; alone, it is a hint only (any completion
    # marker outranks it).
    Rule("doc.env_arch_hint", "import_env", R_VAGUE + 3, 0.5,
         ("not compatible with the current pytorch installation",),
         r"with CUDA capability sm_\d+ is not compatible with the current PyTorch installation",
         "this GPU's architecture is not supported by the installed PyTorch build", warnings_ok=True),
)

_ = (R_SUCCESS, re)  # the rank names this table reads with
