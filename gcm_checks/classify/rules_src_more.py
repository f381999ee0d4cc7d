"""Rules for message families the d/e/f audit found unread (issue 14).

docs/classify-misses-def.md sorts the misses on the tuning split of the blind
batches d/e/f into buckets; bucket A is "the text shows the cause in a message
a tool prints, and no rule knows it". Most of those families live outside the
GPU stack the earlier tables were written for: CI runners (GitHub Actions,
Azure Pipelines, Jenkins), workflow engines and clouds (Nextflow, Cromwell,
GCP Batch, AWS Batch/ECS, SageMaker, Vertex), Open MPI, PMIx and libfabric,
Go's and urllib3's network clients, ONNX Runtime, RMM, llama.cpp, MXNet,
LAMMPS, bash's job-status lines and Ray's worker-death texts. Each rule is
written from the format string in the tool's source or documentation (cited
above it), for the whole family rather than one excerpt; tests in
tests/test_classify_rules_src_more.py quote the documented format with other
numbers and names, plus look-alikes that must not match.

Same conventions as rules.py: lower-case literal keywords gate each rule and
hold no digits (a keyword with a digit costs a containment test of every
log's whole text), every repetition is bounded, no hosts/paths/numbers.
"""

from __future__ import annotations

from typing import Tuple

from gcm_checks.classify.rules import (
    R_CANCEL, R_CUDA, R_DATA, R_ENV, R_ENV_CUDA, R_EXCEPTION, R_GPU_HW, R_GPU_HW_WEAK, R_HOST_OOM_SLURM,
    R_INTERRUPT, R_NCCL, R_NET, R_NODE_FAIL, R_NUMERIC, R_OOM, R_SCHED, R_SIGNAL, R_STORAGE, R_SUCCESS, R_VAGUE,
    Rule,
)

SRC_MORE_RULES: Tuple[Rule, ...] = (
    # ---- CI runners, agents and cloud workers that went away -----------------------------
    # GitHub Actions' check annotation: "The hosted runner: GitHub Actions 12 lost
    # communication with the server. Anything in your workflow that terminates the runner
    # process, starves it for CPU/Memory, or blocks its network access can cause this
    # error." (self-hosted: "The self-hosted runner: NAME lost communication ..."); Azure
    # Pipelines: "We stopped hearing from agent NAME. Verify the agent machine is running
    # and has a healthy network connection."
    Rule("ci.runner_lost", "node_failure", R_NODE_FAIL - 10, 0.8,
         ("lost communication with the server", "we stopped hearing from agent"),
         r"\brunner(?::\s.{0,200}?)? lost communication with the server|We stopped hearing from agent\b",
         "the CI runner (the machine running the job) stopped answering"),
    # Jenkins remoting: "Agent went offline during the build" (older: "Slave went offline
    # during the build"), "hudson.remoting.ChannelClosedException: Channel ...", "FATAL:
    # hudson.remoting.ChannelClosed", and the call-site trace Jenkins adds to a
    # ClosedChannelException: "Remote call to JNLP4-connect connection from ...".
    Rule("ci.jenkins_agent_lost", "node_failure", R_NODE_FAIL - 10, 0.8,
         ("went offline during the build", "hudson.remoting.channelclosed", "remote call to jnlp"),
         r"\b(?:Agent|Slave) went offline during the build|hudson\.remoting\.ChannelClosed(?:Exception)?\b"
         r"|Remote call to JNLP\d?-connect connection",
         "the Jenkins agent running the build went offline"),
    # Ray GCS (gcs_actor_manager.cc): "The actor is dead because its node has died. Node Id: ...".
    Rule("ray.node_died", "node_failure", R_NODE_FAIL - 10, 0.8,
         ("because its node has died",), r"The actor is dead because its node has died",
         "a Ray node died under the job's actors"),
    # TensorFlow's worker service (grpc_worker_service.cc): "RecvTensor expects a different
    # device incarnation: N vs. M. Your worker job (\"/job:worker/...\") was probably
    # restarted. Check your worker job for the reason why it was restarted."
    Rule("tf.worker_restarted", "node_failure", R_NODE_FAIL - 12, 0.7,
         ("expects a different device incarnation",), r"RecvTensor expects a different device incarnation",
         "a TensorFlow worker (or its TPU host) restarted under the job"),
    # Cromwell on Google's Pipelines API: "The job was stopped before the command finished.
    # PAPI error code 10. 14: VM NAME stopped unexpectedly." / "... PAPI error code 10. The
    # assigned worker has failed to complete the operation" (Cromwell's changelog: code 10
    # is a worker VM lost, which on a preemptible VM Cromwell counts as a preemption). GCP
    # Batch's reserved exit code names, as Cromwell prints them: "GCP Batch task exited
    # with VMRecreatedDuringExecution(50006)" (also VMRebootedDuringExecution).
    Rule("cloud.worker_vm_lost", "node_failure", R_NODE_FAIL - 12, 0.6,
         ("papi error code", "duringexecution"),
         r"PAPI error code 10\b|\bVM(?:Recreated|Rebooted)DuringExecution\b",
         "the cloud VM running the task stopped or was recreated"),
    # ---- scheduler and CI ends -----------------------------------------------------------
    # Azure Pipelines: "The job running on agent NAME ran longer than the maximum time of 60
    # minutes." is rules_fam's fam.ci_timeout; this rule reads the forms it does not: the
    # d.hh:mm:ss limit of classic pipelines ("... ran longer than the maximum time of
    # 2.00:00:00 minutes."), the message wrapped after "ran longer than", and the YAML
    # form "The job exceeded the maximum allowed time of 01:00:00 and was stopped."
    Rule("ci.max_time", "timeout_walltime", R_SCHED - 2, 0.85,
         ("ran longer than", "exceeded the maximum allowed time of"),
         r"ran longer than the maximum time of \d+\.?\d*:\d\d:\d\d|exceeded the maximum allowed time of [\d.:]+"
         r"|The job running on agent .{1,200} ran longer than\s*$",
         "the CI system stopped the job at its time limit", terminal=True, warnings_ok=True),
    # AiiDA calculation plugins' exit messages: "The job ran out of walltime." / "The
    # calculation stopped prematurely because it ran out of walltime." (ERROR_OUT_OF_WALLTIME).
    Rule("wf.out_of_walltime", "timeout_walltime", R_SCHED - 2, 0.8,
         ("ran out of walltime", "error_out_of_walltime"), r"\bran out of walltime\b|\bERROR_OUT_OF_WALLTIME\b",
         "the job ran out of its wall-time"),
    # Amazon ECS stoppedReason for a reclaimed Fargate Spot task (AWS Batch retries on it):
    # "Your Spot Task was interrupted."
    Rule("cloud.spot_interrupted", "preempted", R_SCHED, 0.9,
         ("your spot task was interrupted",), r"Your Spot Task was interrupted",
         "the cloud reclaimed the Spot capacity the task ran on", terminal=True),
    # Nextflow's Session.abort(): "Session aborted -- Cause: SIGINT" when the user pressed
    # Ctrl-C (a SIGTERM may be the scheduler's, so only SIGINT counts here).
    Rule("wf.session_sigint", "cancelled_user", R_CANCEL, 0.75,
         ("session aborted -- cause",), r"Session aborted -- Cause: SIGINT\b",
         "the workflow was interrupted with Ctrl-C", terminal=True, warnings_ok=True),
    # Cancels other schedulers print: SkyPilot's core.cancel "Cancelling jobs (9) on cluster
    # 'sky-1234-u'..." (also "Cancelling all jobs on cluster ..."); HTCondor DAGMan's remove
    # reason "DAG Removed: User removed scheduler job from queue." (dagman_main.cpp).
    Rule("sched.user_cancel", "cancelled_user", R_CANCEL, 0.8,
         ("cancelling jobs (", "cancelling all jobs on cluster", "user removed scheduler job"),
         r"^Cancelling (?:jobs \([\d, ]{1,200}\)|all jobs) on cluster\b|DAG Removed: User removed scheduler job from queue",
         "the job was cancelled by its user", terminal=True),
    # A terminal echoes Ctrl-C as "^C" at the start of the next line; PyTorch's elastic
    # agent forwards the hangup of a closed terminal: "Sending process 4242 closing signal
    # SIGHUP" (SIGTERM there is the agent stopping the other ranks, not a cancel).
    Rule("tty.hangup", "cancelled_user", R_INTERRUPT, 0.6,
         ("closing signal sighup",), r"Sending process \d+ closing signal SIGHUP\b",
         "the job's terminal hung up (the session that started it was closed)", warnings_ok=True),
    # The echo comes after whatever the program printed last; an exception before it is the
    # reason someone pressed Ctrl-C on a hung program, so the echo ranks below exceptions.
    Rule("tty.ctrl_c", "cancelled_user", R_EXCEPTION - 2, 0.6,
         ("^c",), r"^\^C(?:$|\S)",
         "the job was interrupted with Ctrl-C", warnings_ok=True),
    # glog's failure signal handler also reports termination signals: "*** SIGTERM
    # (@0x3e8) received by PID 42 (TID 0x7f...) from PID 41; stack trace: ***". That is a
    # kill from outside, not a crash (rules_fam's fam.crash_signal reads the header).
    Rule("glog.sigterm", "cancelled_user", R_SIGNAL + 2, 0.5,
         ("*** sigterm (@", "*** sigint (@"), r"^\*\*\* SIG(?:TERM|INT) \(@0x[0-9a-f]+\) received by PID \d+",
         "the process was sent SIGTERM/SIGINT from outside (a cancel, or a parent stopping it)"),
    # GitHub Actions: "The operation was canceled." / "##[error]The operation was canceled."
    # after a cancel; when the runner itself "has received a shutdown signal" (service
    # stopped, a spot VM reclaimed) the cancel is not the user's: that line wins below.
    Rule("ci.canceled", "cancelled_user", R_INTERRUPT - 1, 0.55,
         ("the operation was canceled",), r"^(?:##\[error\]|Error: )?The operation was canceled\.",
         "the CI run was cancelled"),
    Rule("ci.runner_shutdown", "unknown", R_INTERRUPT + 1, 0.3,
         ("has received a shutdown signal",), r"The (?:runner|agent) has received a shutdown signal",
         "the CI runner was told to shut down (service stopped, a cancel, or its VM reclaimed)"),
    # ---- Ray's worker-death texts --------------------------------------------------------
    # "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a
    # connection error code 2. End of file. There are some potential root causes. (1) The
    # process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop
    # --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other
    # unexpected errors." Ray lists *possible* causes; reading "SIGSEGV" in that list as a
    # crash (sig.fatal) is wrong. With nothing else, a Ray worker died and we cannot tell
    # why; so does "ActorDiedError: The actor died unexpectedly before finishing this task."
    # without a reason. Above sig.fatal and py.exception, below every real cause.
    Rule("ray.worker_died", "unknown", R_SIGNAL + 3, 0.3,
         ("worker exit type: system_error", "the actor died unexpectedly before finishing"),
         r"Worker exit type: SYSTEM_ERROR|The actor died unexpectedly before finishing this task",
         "a Ray worker or actor died; Ray does not say why (OOM kill, ray stop or a crash)"),
    # ---- network -------------------------------------------------------------------------
    # Go's net/http client: "net/http: request canceled while waiting for connection
    # (Client.Timeout exceeded while awaiting headers)"; Go's dialer "dial tcp
    # 10.0.0.1:443: i/o timeout" (docker/containerd pulls, cloud agents).
    Rule("net.go_client_timeout", "network_fabric", R_NET - 6, 0.7,
         ("request canceled while waiting for connection", "client.timeout exceeded", "dial tcp"),
         r"request canceled while waiting for connection|Client\.Timeout exceeded while awaiting headers"
         r"|\bdial tcp \S{1,100}: i/o time(?:out)?\b",
         "a network connection timed out"),
    # urllib3 (pip, requests): "ReadTimeoutError: HTTPSConnectionPool(host='x', port=443):
    # Read timed out." and pip's "Retrying (Retry(total=4, ...)) after connection broken by
    # 'ConnectTimeoutError(...)'".
    Rule("net.urllib3_timeout", "network_fabric", R_NET - 6, 0.7,
         ("readtimeouterror", "connecttimeouterror"),
         r"\bReadTimeoutError: \w*ConnectionPool\(|after connection broken by 'ConnectTimeoutError\(",
         "a network download timed out"),
    # libfabric providers (EFA, CXI, verbs): completion-queue errors carry the provider's
    # errno and source, "err: Input/output error (5) prov_errno: Unknown error -12 (-12)
    # prov/efa/src/rxr/rxr.h:1343" (io.errno would read the EIO as storage); log lines at
    # warn/error level, "libfabric:4242:1656625588:cxi:core:cxip_ux_onload_cb():2444<warn>
    # ... Flow control triggered ...", and "fi_getinfo: provider efa output empty list"
    # (the requested provider is not usable on this node).
    Rule("net.libfabric", "network_fabric", R_NET - 4, 0.7,
         ("prov_errno", "output empty list", "libfabric:"),
         r"\bprov_errno: .{0,120}\bprov/\w+/|fi_getinfo: provider \w+ output empty list"
         r"|libfabric:\d+:\d+:\w+:\w+:.{0,200}<(?:warn|error)>.{0,200}(?:[Ff]ail|[Ee]rror|triggered)",
         "the network fabric's provider (libfabric) reported an error", warnings_ok=True),
    # Slurm's PMIx plugin (pmixp_coll_ring.c / pmixp_coll_tree.c): "mpi/pmix_v3:
    # pmixp_coll_ring_reset_if_to: node1 [0]: pmixp_coll_ring.c:742: 0x...: collective timeout seq=0".
    Rule("net.pmix_coll_timeout", "network_fabric", R_NET - 6, 0.7,
         ("collective timeout",), r"pmixp_coll\w*: .{0,200}collective timeout seq=\d+",
         "Slurm's PMIx wire-up between the nodes timed out"),
    # ---- NCCL / c10d ---------------------------------------------------------------------
    # NCCL logs the return code of every call on the way up after a failure: "NCCL INFO
    # init.cc:424 -> 2" (2 = ncclSystemError, 3 = internal, 5 = invalid usage...). The
    # lines come only when a call failed, whatever the WARN before them said.
    # Keyed on the source file, not "nccl info": a healthy run prints hundreds of INFO lines.
    Rule("nccl.error_unwind", "nccl_comm", R_NCCL - 3, 0.65,
         (".cc:", ".cu:"), r"NCCL INFO [\w/.-]{1,80}\.(?:cc|cu):\d+ -> [1-9]\d?\b",
         "an NCCL call failed (its error code is logged on the way up)", warnings_ok=True),
    # c10d's TCPStore (the rendezvous store torchrun and init_process_group use):
    # "RuntimeError: Socket Timeout" when a peer never wrote its key - often because that peer
    # failed first (a symptom, like rules_fam's fam.rendezvous, which ranks above it).
    Rule("c10d.store_timeout", "nccl_comm", R_NCCL - 5, 0.7,
         ("socket timeout",), r"\bRuntimeError: Socket Timeout\b|DistStoreError: Socket Timeout\b",
         "the distributed rendezvous store timed out waiting for a peer", symptom=True),
    # ---- memory --------------------------------------------------------------------------
    # systemd, for a unit (a service running the job) the kernel OOM killer hit: "NAME.service:
    # A process of this unit has been killed by the OOM killer." / "Failed with result 'oom-kill'."
    Rule("host.systemd_oom", "host_oom", R_HOST_OOM_SLURM, 0.9,
         ("killed by the oom killer", "failed with result 'oom-kill'"),
         r"has been killed by the OOM killer|Failed with result 'oom-kill'",
         "the kernel's OOM killer killed the job's service"),
    # Google Colab's notice: "Your session crashed after using all available RAM."
    Rule("host.colab_ram", "host_oom", R_HOST_OOM_SLURM - 2, 0.85,
         ("your session crashed after using all available ram",),
         r"Your session crashed after using all available RAM",
         "the notebook's machine ran out of memory"),
    # bash's job-status line for a child killed by a signal, wherever the line sits (after a
    # docker-compose "svc | " or a log viewer's prefix): "./run.sh: line 28:  4242 Killed
    # python train.py" (rules_more's shell.sigkill wants it alone on its line); glibc's zh_CN
    # strsignal(SIGKILL) is "已杀死". SIGKILL with nothing else is host OOM at moderate
    # confidence (issue 14 item 4).
    Rule("shell.job_killed", "host_oom", R_SIGNAL - 3, 0.55,
         ("killed", "已杀死"), r"\S: line \d+:\s+\d+ Killed\s{2,}\S|^\s*已杀死\s*$",
         "a process was SIGKILLed with no other error, which is what the OOM killer does", warnings_ok=True),
    # RMM (cuDF, XGBoost, cuML): "std::bad_alloc: out_of_memory: CUDA error at:
    # .../rmm/mr/device/cuda_memory_resource.hpp:70: cudaErrorMemoryAllocation out of memory"
    # is device memory; host.alloc_failed reads the bad_alloc as host memory.
    Rule("rmm.oom", "gpu_oom", R_OOM, 0.9,
         ("out_of_memory: cuda error", "maximum pool size exceeded"),
         r"out_of_memory: CUDA error at:|RMM failure at: .{0,200}Maximum pool size exceeded",
         "the job ran out of GPU memory (RMM allocator)"),
    # ONNX Runtime's BFC arena (bfc_arena.cc): "BFCArena::AllocateRawInternal(...) Failed to
    # allocate memory for requested buffer of size 8388608000". The arena also serves the
    # CPU provider, hence the lower confidence.
    Rule("ort.arena_oom", "gpu_oom", R_OOM - 4, 0.6,
         ("failed to allocate memory for requested buffer",),
         r"Failed to allocate memory for requested buffer of size \d+",
         "ONNX Runtime's memory arena could not allocate a buffer (usually GPU memory)"),
    # TensorFlow's BFC allocator dumps its chunks when an allocation fails: "Summary of in-use
    # Chunks by size:", "Sum Total of in-use chunks: 3.67MiB" (the line before the dump,
    # "ran out of memory trying to allocate", is rules_src_app's src.bfc_oom).
    Rule("tf.bfc_dump", "gpu_oom", R_OOM - 4, 0.7,
         ("sum total of in-use chunks", "summary of in-use chunks"),
         r"Sum Total of in-use chunks:|Summary of in-use Chunks by size:",
         "TensorFlow's allocator dumped its memory map after a failed allocation", warnings_ok=True),
    # ---- GPU and CUDA --------------------------------------------------------------------
    # The driver's GSP firmware channel failing (open kernel modules, kernel log): "NVRM: GPU0
    # _issueRpcAndWait: rpcSendMessage failed with status 0x0000000f for fn 10 sequence 800!",
    # and the status name NV_ERR_GPU_IN_FULLCHIP_RESET.
    Rule("gpu.gsp_rpc_failed", "gpu_hardware", R_GPU_HW - 4, 0.8,
         ("rpcsendmessage failed", "nv_err_gpu_in_fullchip_reset"),
         r"_issueRpcAndWait: rpcSendMessage failed|NV_ERR_GPU_IN_FULLCHIP_RESET",
         "the driver lost contact with the GPU's system processor (GSP)", warnings_ok=True),
    # lspci shows a device that no longer answers config-space reads as revision ff:
    # "1c:00.0 VGA compatible controller: NVIDIA Corporation TU102GL [...] (rev ff)".
    Rule("gpu.pci_rev_ff", "gpu_hardware", R_GPU_HW - 2, 0.85,
         ("(rev ff)",), r"NVIDIA Corporation .{0,200}\(rev ff\)",
         "a GPU no longer answers on the PCI bus (lspci shows rev ff)"),
    # Old torch/cutorch (THC): "cuda runtime error (30) : unknown error at .../THCStorage.c:113"
    # - cudaErrorUnknown in the format rules.py's gpu.cuda_unknown_error does not read.
    Rule("thc.unknown_error", "gpu_hardware", R_GPU_HW_WEAK, 0.6,
         ("cuda runtime error (",), r"cuda runtime error \(\d+\) : unknown error",
         "the CUDA driver reported an unknown error, which usually means the GPU is in a bad state"),
    # ONNX Runtime's CUDA provider (cuda_call.cc): "CUDA error executing cudaMemcpy(dst,
    # src, bytes, cudaMemcpyDeviceToHost)".
    Rule("ort.cuda_call", "cuda_runtime", R_CUDA, 0.75,
         ("cuda error executing",), r"CUDA error executing \w+\(",
         "a CUDA call failed in ONNX Runtime"),
    # ---- storage -------------------------------------------------------------------------
    # ENOSPC inside an Apptainer/Singularity "FATAL: While performing build: ... no space left
    # on device": rules_docs' doc.env keys on "FATAL:" and ranks above io.errno (which keeps
    # Python's "[Errno 28] No space left on device").
    Rule("io.enospc", "storage_io", R_ENV_CUDA + 1, 0.85,
         ("no space left on device",), r"(?<!\[Errno 28\] )(?i:no space left on device)",
         "the filesystem ran out of space"),
    # NumPy's tofile/save on a short write (convert.c): "OSError: 120000000 requested and 0 written".
    Rule("io.short_write", "storage_io", R_STORAGE, 0.75,
         ("requested and",), r"\b\d+ requested and \d+ written\b",
         "a write to the filesystem came up short"),
    # Nextflow on a filesystem without locks: "Can't open cache DB: PATH" ... "Nextflow needs
    # to be executed in a shared file system that supports file locks."
    Rule("wf.no_file_locks", "storage_io", R_STORAGE, 0.8,
         ("supports file locks",), r"shared file system that supports file locks",
         "the filesystem does not support the file locks the workflow needs"),
    # ---- environment ---------------------------------------------------------------------
    # Go's os/exec (runc, containerd, Kubernetes): 'exec: "train": executable file not found
    # in $PATH'; Kubernetes/Vertex container start failures: "Termination reason: StartError"
    # and containerd's "failed to create containerd task".
    Rule("container.start_failed", "import_env", R_ENV, 0.8,
         ("executable file not found in $path", "termination reason: starterror", "failed to create containerd task"),
         r"exec: \"[^\"]{1,200}\": executable file not found in \$PATH|Termination reason: StartError"
         r"|failed to create containerd task",
         "the container could not start its command"),
    # Slurm refusing the step as requested: "srun: error: Unable to create step for job 42:
    # Invalid generic resource (gres) specification" (ESLURM_INVALID_GRES) and srun's "fatal:
    # SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually exclusive."
    # (usually inherited from the environment of an enclosing job).
    Rule("slurm.bad_request", "import_env", R_ENV, 0.7,
         ("invalid generic resource", "are mutually exclusive"),
         r"Invalid generic resource \(gres\) specification|SLURM_MEM_PER_\w+, .{0,100}are mutually exclusive",
         "Slurm refused the job step as requested (its options or inherited SLURM_* variables)"),
    # Open MPI started the wrong way or in the wrong environment: "It looks like orte_init
    # failed for some reason; your parallel process is likely to abort." and "The
    # application appears to have been direct launched using \"srun\", but OMPI was not
    # built with SLURM's PMI support and therefore cannot execute."
    Rule("mpi.init_env", "import_env", R_ENV, 0.8,
         ("orte_init failed", "not built with slurm's pmi support"),
         r"It looks like orte_init failed|not built with SLURM's PMI support",
         "MPI could not start in this environment (launcher or PMI support)"),
    # torch >= 2.0's launcher passes "--local-rank=N"; a script that only knows --local_rank
    # stops with argparse's "error: unrecognized arguments: --local-rank=1".
    Rule("torch.local_rank_flag", "import_env", R_ENV, 0.75,
         ("unrecognized arguments: --local-rank",), r"error: unrecognized arguments: --local-rank\b",
         "the script predates the launcher's --local-rank flag (torch >= 2.0)"),
    # ---- input data ----------------------------------------------------------------------
    # llama.cpp's GGUF reader: "gguf_init_from_file: invalid magic number 73726576" (older:
    # "invalid magic characters 'tjgg'"): the file is not GGUF (a Git LFS pointer, an HTML page).
    Rule("llama.bad_model_file", "data_input", R_DATA, 0.8,
         ("gguf_init_from_file: invalid magic",), r"gguf_init_from_file: invalid magic",
         "the model file is not a GGUF file"),
    # PyTorch Lightning: '`.fit(ckpt_path="hpc")` is set but no HPC checkpoint was found.
    # Please pass an exact checkpoint path to `.fit(ckpt_path=...)`'; Ultralytics: "Dataset
    # 'data.yaml' images not found, missing path '/datasets/valid/images'".
    Rule("data.missing_input", "data_input", R_DATA, 0.8,
         ("no hpc checkpoint was found", "images not found"),
         r"but no HPC checkpoint was found|Dataset '[^']{1,200}' images not found",
         "an input path the job needs does not exist"),
    # The strerror of ENOENT with the path the job asked for, printed without Python's
    # "[Errno 2]": "No such file or directory: '/opt/ml/input/data/training'"; TensorFlow's
    # file system layer: "NotFoundError: ... No such object: bucket/train.tf_record".
    Rule("data.no_such_path", "data_input", R_DATA - 3, 0.6,
         ("no such file or directory: '", "no such object:"),
         r"(?<!\] )No such file or directory: '[^']{1,300}'|\bNo such object: \S",
         "an input file the job opened does not exist"),
    # ---- numeric -------------------------------------------------------------------------
    # LAMMPS (thermo.cpp, ntopo_*.cpp), documented as atoms moving too far in one step
    # (unstable dynamics): "ERROR: Lost atoms: original 1600 current 272" and "ERROR on proc
    # 4: Bond atoms 11544 11567 missing on proc 4 at step 41630".
    Rule("md.lost_atoms", "numeric_divergence", R_NUMERIC, 0.75,
         ("lost atoms: original", "bond atoms"),
         r"ERROR: Lost atoms: original \d+|\bBond atoms \d+ \d+ missing\b",
         "the simulation blew up (atoms flew apart)"),
    # A loss printed as NaN by a progress bar or a metrics dict: tqdm's postfix
    # "step_loss=nan", "loss=nan", HF/DeepSpeed dicts "'loss': nan" - also where rules.py's
    # train.loss_nan skips the line because a logger's "[INFO]" shares it with the bar.
    Rule("train.loss_nan_bar", "numeric_divergence", R_NUMERIC - 2, 0.7,
         ("loss=nan", "loss': nan", "loss\": nan"),
         r"\b\w*loss=nan\b|\w*loss['\"]: nan\b",
         "the loss became NaN", warnings_ok=True),
    # NumPy's floating-point warning: "RuntimeWarning: invalid value encountered in divide":
    # a NaN appeared. Weak: many healthy runs print it; only when nothing else was found.
    Rule("np.invalid_value", "numeric_divergence", R_VAGUE + 2, 0.4,
         ("invalid value encountered in",), r"RuntimeWarning: invalid value encountered in \w+",
         "NumPy saw NaN values (invalid value encountered)", warnings_ok=True),
    # ---- crashes -------------------------------------------------------------------------
    # bash's job-status line for a crash signal, also under a logger's INFO prefix
    # ("INFO:runner:... ERR: ./run.sh: line 99: 32268 Segmentation fault  prun ..."); Open
    # MPI's signal handler (opal/util/stacktrace.c): "[host:4242] Signal: Aborted (6)".
    Rule("sig.job_status", "segfault_signal", R_SIGNAL, 0.8,
         ("segmentation fault", "signal: aborted", "signal: bus error", "signal: illegal instruction",
          "signal: floating point exception"),
         r"\S: line \d+:\s+\d+ (?:Segmentation fault|Aborted|Bus error|Illegal instruction)\b"
         r"|\bSignal: (?:Aborted|Bus error|Illegal instruction|Floating point exception) \(\d+\)",
         "a process crashed with a fatal signal", warnings_ok=True),
    # ---- the job's own errors ------------------------------------------------------------
    # Ray wraps a task's exception: "ray.exceptions.RayTaskError(AttributeError): ray::f()"
    # (py.exception's pattern wants "Error:" right after the name).
    Rule("ray.task_error", "software_exception", R_EXCEPTION, 0.7,
         ("raytaskerror(",), r"RayTaskError\(\w+(?:Error|Exception)\)",
         "a Ray task raised an exception"),
    # MXNet's shape inference: "infer_shape error. Arguments:" (symbol.py), mshadow's
    # "Assignment: Shape of Tensors are not consistent with target", and dmlc's fatal log
    # in a native backtrace "libmxnet.so(_ZN4dmlc15LogMessageFatalD1Ev+0x29)".
    Rule("mxnet.fatal", "software_exception", R_EXCEPTION, 0.7,
         ("infer_shape error", "shape of tensors are not consistent", "logmessagefatal"),
         r"\binfer_shape error\. Arguments:|Shape of Tensors are not consistent with target|dmlc\d*LogMessageFatal",
         "the framework stopped on a failed check in the model (shapes)"),
    # sbatch/srun/salloc option parsing (getopt): "sbatch: invalid option -- 'q'" /
    # "sbatch: unrecognized option '--gpu'": the submission itself is wrong.
    Rule("slurm.bad_option", "software_exception", R_EXCEPTION + 5, 0.7,
         ("invalid option --", "unrecognized option '"),
         r"^(?:sbatch|srun|salloc): (?:invalid option -- '|unrecognized option ')",
         "the job's submission used an option Slurm does not know"),
    # ---- completion records --------------------------------------------------------------
    # SageMaker's training-job status lines: "2021-04-01 13:27:49 Completed - Training job
    # completed"; GCP Batch's status events: "Job state is set from RUNNING to SUCCEEDED for
    # job projects/..."; torchelastic's event records "torchelastic.worker.status.SUCCEEDED".
    Rule("cloud.job_succeeded", "success", R_SUCCESS, 0.75,
         ("completed - training job completed", "to succeeded for job", "worker.status.succeeded"),
         r"Completed - Training job completed|Job state is set from RUNNING to SUCCEEDED"
         r"|torchelastic\.worker\.status\.SUCCEEDED",
         "the platform recorded the job as completed", warnings_ok=True),
)
