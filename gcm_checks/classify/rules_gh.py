"""Rules for message families the g/h audit found unread (issue 14).

docs/classify-misses-gh.md sorts the misses on the tuning split of the blind
batches g (infrastructure classes) and h (the job's own failures, success)
into the same buckets as the d/e/f audit; bucket A is "the text shows the
cause in a message a tool prints, and no rule knows it". This round's A
families: batch systems and their front ends (Slurm's node reasons, PBS,
NCI Gadi, Rocoto, Galaxy, Airflow, SkyPilot, Nextflow, Karpenter, Colab),
MPI transports (Open MPI's TCP BTL, ParaStation's pscom), AMD GPUs (ROCr,
amdgpu RAS), Apple's Metal via MLX, JAX's CUDA component checks, PyTorch's
extension build, GROMACS and OpenFOAM, tcmalloc, the kernel's OOM task dump,
and the completion banners of HPL, OPM Flow, preCICE and sacct -P. Each rule
is written from the tool's own format string (cited above it), for the whole
family rather than one excerpt; tests/test_classify_rules_gh.py quotes the
documented format with other numbers and names, plus look-alikes that must
not match.

Same conventions as rules.py: lower-case literal keywords gate each rule,
hold no digits and start with characters the keyword trie already branches
on; every repetition is bounded; no hosts/paths/numbers from any excerpt.
"""

from __future__ import annotations

from typing import Tuple

from gcm_checks.classify.rules import (
    R_CANCEL, R_DATA, R_ENV, R_EXCEPTION, R_GPU_HW, R_GPU_HW_WEAK, R_HOST_OOM_SLURM, R_NET, R_NODE_FAIL, R_OOM,
    R_SCHED, R_SIGNAL, R_STORAGE, R_SUCCESS,
    Rule,
)

GH_RULES: Tuple[Rule, ...] = (
    # ---- nodes that went away ------------------------------------------------------------
    # slurmctld (node_mgr.c) sets a node DOWN with Reason "Node unexpectedly rebooted" when
    # a node registers with a boot time after its last response, and logs "%s: Node %s
    # unexpectedly rebooted boot_time=%u last response=%u". sinfo -R / scontrol show node
    # print it as "Reason=Node unexpectedly rebooted [slurm@2024-01-02T03:04:05]".
    Rule("slurm.node_rebooted", "node_failure", R_NODE_FAIL - 10, 0.8,
         ("unexpectedly rebooted",),
         r"\bNode unexpectedly rebooted\b|\bNode \S{1,80} unexpectedly rebooted boot_time=",
         "a node of the job rebooted unexpectedly"),
    # squeue's reason for a batch job whose launch on its node failed (slurmd/prolog could
    # not start it), after which Slurm requeued and held it: "(launch failed requeued held)".
    Rule("slurm.launch_failed_held", "node_failure", R_NODE_FAIL - 12, 0.6,
         ("launch failed requeued held",), r"\blaunch failed requeued held\b",
         "the job's node failed to launch it (Slurm requeued and held it)"),
    # ---- time limits ---------------------------------------------------------------------
    # Nextflow, when a task outlives its `time` directive (local and grid executors):
    # "Caused by:\n  Process exceeded running time limit (4h)".
    Rule("nf.time_limit", "timeout_walltime", R_SCHED - 2, 0.9,
         ("exceeded running time limit",), r"\bProcess exceeded running time limit \(",
         "the workflow task ran past its time limit"),
    # Rocoto (NOAA's workflow manager; workflowengine.rb's statemsg "Task #{job.task},
    # jobid=#{job.id}, in state #{job.state} (#{job.native_state})") logs a finished task as
    # "Task NAME, jobid=N, in state DEAD (TIMEOUT), ran for S seconds, ..."; the word in
    # parentheses is the batch system's own final state (NODE_FAIL is already read by
    # slurm.node_failure's state words).
    Rule("rocoto.timeout", "timeout_walltime", R_SCHED - 2, 0.85,
         ("in state dead",), r"\bin state DEAD \(TIMEOUT\)",
         "the batch system ended the task at its time limit (Rocoto)"),
    Rule("rocoto.out_of_memory", "host_oom", R_HOST_OOM_SLURM, 0.85,
         ("in state dead",), r"\bin state DEAD \(OUT_OF_MEMORY\)",
         "the batch system killed the task for exceeding its memory (Rocoto)"),
    Rule("rocoto.preempted", "preempted", R_SCHED - 2, 0.8,
         ("in state dead",), r"\bin state DEAD \(PREEMPTED\)",
         "the batch system preempted the task (Rocoto)"),
    # ---- preemption ----------------------------------------------------------------------
    # Karpenter's interruption controller: log message "initiating delete from interruption
    # message" with "messageKind": "spot_interrupted" (older: "SpotInterruptionKind"); the
    # other kinds (scheduled_change, state_change, rebalance_recommendation) are not spot
    # reclaims and are not read here.
    Rule("k8s.karpenter_spot", "preempted", R_SCHED - 2, 0.85,
         ("messagekind",), r"\"?messageKind\"?\s*[:=]\s*\"?(?:spot_interrupted|SpotInterruptionKind)\b",
         "the cloud reclaimed the spot instance under the job (Karpenter)", warnings_ok=True),
    # PBS Professional: a running job requeued by the scheduler is logged (tracejob, server
    # log) as "Job Rerun at request of Scheduler@HOST", which the scheduler does to preempt
    # it by requeueing; its own log line reads "... preempting job".
    Rule("pbs.sched_rerun", "preempted", R_SCHED - 10, 0.65,
         ("rerun at request of scheduler", "preempting job"),
         r"\bJob Rerun at request of Scheduler@|\bpreempting job\b",
         "the PBS scheduler requeued the running job to preempt it", warnings_ok=True),
    # Google Colab's dialog when the VM is taken back: "Your runtime has been disconnected due
    # to inactivity or reaching its maximum duration." (Colab's FAQ: runtimes are reclaimed).
    Rule("colab.runtime_disconnected", "preempted", R_SCHED - 10, 0.6,
         ("runtime has been disconnected",), r"\bYour runtime has been disconnected\b",
         "Colab took the runtime back (idle or at its maximum lifetime)"),
    # ---- cancels -------------------------------------------------------------------------
    # Galaxy's Slurm runner (lib/galaxy/jobs/runners/slurm.py) when sacct says CANCELLED:
    # "(123/4567) Job was cancelled via SLURM (e.g. with scancel(1))".
    Rule("galaxy.slurm_cancelled", "cancelled_user", R_CANCEL, 0.8,
         ("cancelled via slurm",), r"\bJob was cancelled via SLURM\b",
         "the job was cancelled through Slurm (scancel)", warnings_ok=True),
    # Airflow's LocalTaskJob when a user (UI, CLI, API) changes a running task's state:
    # "State of this instance has been externally set to failed. Terminating instance."
    # (older: "... Taking the poison pill."). The scheduler's own timeouts print other text.
    Rule("airflow.state_set_externally", "cancelled_user", R_CANCEL, 0.65,
         ("has been externally set to",),
         r"State of this instance has been externally set to (?:failed|success|skipped|removed|None)\b",
         "someone set the running Airflow task's state from outside, which terminated it", warnings_ok=True),
    # SkyPilot managed jobs' event log: "CANCELLING  Cancellation requested by user NAME".
    Rule("sky.cancel_requested", "cancelled_user", R_CANCEL, 0.75,
         ("cancellation requested by user",), r"\bCancellation requested by user\b",
         "a user cancelled the job"),
    # ---- storage -------------------------------------------------------------------------
    # NCI Gadi's PBS epilogue: "Job 123.gadi-pbs killed due to exceeding jobfs quota. Quota:
    # 100.0GB, Used: 100.0GB, Host: gadi-cpu-0001" (the node-local scratch, -l jobfs=).
    Rule("pbs.jobfs_quota", "storage_io", R_STORAGE + 2, 0.85,
         ("exceeding jobfs quota",), r"\bkilled due to exceeding jobfs quota\b",
         "the batch system killed the job for filling its node-local scratch quota (jobfs)", terminal=True),
    # ---- host memory ---------------------------------------------------------------------
    # The kernel's OOM report (mm/oom_kill.c dump_tasks) lists every task under "Tasks state
    # (memory values in pages):" with the header "[  pid  ]   uid  tgid total_vm      rss
    # pgtables_bytes swapents oom_score_adj name" (older: "... rss nr_ptes nr_pmds swapents
    # oom_score_adj name"); it is printed only while the OOM killer picks a victim.
    Rule("kernel.oom_task_dump", "host_oom", R_OOM - 1, 0.85,
         ("total_vm", "tasks state (memory values in pages)"),
         r"\[\s{0,4}pid\s{0,4}\]\s+uid\s+tgid\s+total_vm\s+rss\s.{0,60}oom_score_adj\s+name"
         r"|Tasks state \(memory values in pages\):",
         "the kernel's OOM killer ran (its task dump is in the log)", warnings_ok=True),
    # macOS's shells report a child killed by SIGKILL as "Killed: 9" (strsignal's text plus
    # the number); like Linux's bare "Killed" (shell.sigkill), what the OOM killer (here
    # macOS's memory-pressure kill) leaves when nothing else is printed.
    Rule("shell.killed_9", "host_oom", R_SIGNAL - 3, 0.5,
         ("killed: ",), r"^\s*(?:\S{1,40}: )?Killed: 9\s*$",
         "a process was SIGKILLed with no other error, which is what the OOM killer does"),
    # ---- network -------------------------------------------------------------------------
    # Open MPI's TCP BTL: the help text "WARNING: Open MPI failed to TCP connect to a peer MPI
    # process.  This should not happen." and btl_tcp.c's "mca_btl_tcp_recv_blocking] recv(17)
    # failed: Connection reset by peer (104)" (doc.mpi_tcp reads the frag/endpoint forms). A
    # reset can follow a peer rank's own crash, so an earlier error of the job wins.
    Rule("ompi.tcp_peer", "network_fabric", R_NET - 4, 0.7,
         ("failed to tcp connect", "mca_btl_tcp"),
         r"\bOpen MPI failed to TCP connect to a peer MPI process\b"
         r"|mca_btl_tcp_recv_blocking\] recv\(\d+\) failed: (?:Connection reset by peer|Connection timed out"
         r"|No route to host)",
         "the network between the MPI ranks' nodes failed (Open MPI TCP transport)", warnings_ok=True, symptom=True),
    # ParaStation MPI's pscom (openib plugin, psoib.c: "ibv_poll_cq(): Infiniband returned the
    # wrong Opcode %d", after which it marks every connection broken) on a completion error:
    # "<PSP:r0000012:ib:ibv_poll_cq(): Infiniband returned the wrong Opcode 5408>", then
    # "<PSP:r0000012:connection to (...) (type:openib,state:open) : read : Broken pipe>".
    Rule("pscom.openib", "network_fabric", R_NET - 4, 0.7,
         ("infiniband returned", "type:openib"),
         r"ibv_poll_cq\(\): Infiniband returned the wrong Opcode"
         r"|\(type:openib,state:\w{1,10}\) : (?:read|write) : (?:Broken pipe|Connection reset by peer)",
         "the InfiniBand fabric failed under ParaStation MPI", warnings_ok=True),
    # ---- GPUs ----------------------------------------------------------------------------
    # AMD's amdgpu RAS handler (amdgpu_ras.c): "amdgpu 0000:c1:00.0: {1}uncorrectable hardware
    # error(ERREVENT_ATHUB_INTERRUPT) detected!" (older: without the {seqno}), then a reset.
    Rule("amdgpu.ras_uncorrectable", "gpu_hardware", R_GPU_HW, 0.9,
         ("uncorrectable hardware error",),
         r"(?i:uncorrectable hardware error)\((?:ERREVENT_\w{1,40})?\) detected",
         "an AMD GPU reported an uncorrectable hardware error (RAS)"),
    # Apple Metal through MLX: "[METAL] Command buffer execution failed: Insufficient Memory
    # (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)", and MLX's allocator:
    # "[metal::malloc] Attempting to allocate N bytes which is greater than the maximum
    # allowed buffer size of M bytes."
    Rule("mlx.metal_oom", "gpu_oom", R_OOM, 0.9,
         ("kiogpucommandbuffercallbackerroroutofmemory", "command buffer execution failed", "[metal::malloc]"),
         r"kIOGPUCommandBufferCallbackErrorOutOfMemory|Command buffer execution failed: Insufficient Memory"
         r"|\[metal::malloc\] Attempting to allocate \d+ bytes which is greater than the maximum allowed buffer size",
         "the GPU (Apple Metal) ran out of memory"),
    # JAX's CUDA component check (xla_bridge / cuda_versions): "Unable to use CUDA because of
    # the following issues with CUDA components:" followed by "Outdated cuDNN installation
    # found." / "Version JAX was built against: ..." / "Minimum supported: ...".
    Rule("jax.cuda_components", "import_env", R_ENV + 1, 0.85,
         ("unable to use cuda because", "outdated"),
         r"Unable to use CUDA because of the following issues with CUDA components"
         r"|\bOutdated (?:cuDNN|cuBLAS|cuFFT|cuSOLVER|cuSPARSE|cuPTI|CUDA|NCCL|NVCC|PTXAS|\w{1,20}) installation found",
         "the installed CUDA libraries do not match what JAX was built for"),
    # torch.utils.cpp_extension._run_ninja_build: "subprocess.CalledProcessError: Command
    # '['ninja', '-v']' returned non-zero exit status 1." (before its "Error building
    # extension" RuntimeError, which env.extension_build reads; excerpts often stop here).
    Rule("torch.ninja_build", "import_env", R_ENV, 0.75,
         ("'ninja', '-v'",), r"Command '\['ninja', '-v'(?:, '-j', '\d+')?\]' returned non-zero exit status \d+",
         "building a C++/CUDA extension (ninja) failed"),
    # ---- crashes -------------------------------------------------------------------------
    # gperftools' tcmalloc aborts on a bad free: "src/tcmalloc.cc:333] Attempt to free invalid
    # pointer 0x55d0c0a0" (glibc's "free(): invalid pointer" is in rules_src_app).
    Rule("tcmalloc.invalid_free", "segfault_signal", R_SIGNAL, 0.8,
         ("attempt to free invalid pointer",), r"tcmalloc\.cc:\d+\] Attempt to free invalid pointer",
         "the process corrupted its heap and tcmalloc aborted it"),
    # ---- the program's own errors --------------------------------------------------------
    # GROMACS's input errors (InvalidInputError prints "Error in user input:"; grompp's
    # topology reader: "Atomtype X not found", "No such moleculetype X", cpp's "Syntax error -
    # File x.itp, line 3"; "Invalid command-line options" with "File 'x' does not exist or is
    # not accessible."): the run's input files are wrong.
    Rule("gmx.input_error", "data_input", R_DATA, 0.75,
         ("error in user input", "atomtype", "no such moleculetype", "syntax error - file"),
         r"^\s*Error in user input:\s*$|^\s*Atomtype \S{1,40} not found\b|^\s*No such moleculetype \S{1,40}"
         r"|^\s*Syntax error - File \S{1,200}, line \d+",
         "the simulation's input files are invalid (GROMACS)"),
    # OpenFOAM's FatalError / FatalIOError exit: "--> FOAM FATAL ERROR:" / "--> FOAM FATAL IO
    # ERROR:" then the message (e.g. "keyword X is undefined in dictionary ..."), like glog's
    # LOG(FATAL) an error the program raised itself.
    Rule("foam.fatal", "software_exception", R_EXCEPTION + 2, 0.6,
         ("foam fatal",), r"^\s*--> FOAM FATAL (?:IO )?ERROR\b",
         "OpenFOAM stopped with a fatal error", warnings_ok=True),
    # ---- completion ----------------------------------------------------------------------
    # HPL (HPL_pdtest / HPL_pdinfo): each run's "||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=
    # 0.0041 ...... PASSED" and the end "N tests completed and passed residual checks,".
    Rule("hpl.passed", "success", R_SUCCESS, 0.7,
         ("passed residual checks", "...... passed"),
         r"\b[1-9]\d{0,6} tests completed and passed residual checks\b|\|\|Ax-b\|\|_oo.{0,80} \.{6} PASSED\s*$",
         "the HPL runs passed their residual checks", warnings_ok=True),
    # OPM Flow's end-of-run banner "================    End of simulation     ===============",
    # printed only after the last report step.
    Rule("opm.end_of_simulation", "success", R_SUCCESS, 0.75,
         ("end of simulation",), r"^\s*={4,}\s+End of simulation\s+={4,}\s*$",
         "the simulator reports the end of the simulation", warnings_ok=True),
    # The OpenFOAM-preCICE adapter: "---[preciceAdapter] The coupling completed." and "The
    # simulation was ended by preCICE. Calling the end() methods of any functionObject ...".
    Rule("precice.coupling_completed", "success", R_SUCCESS, 0.75,
         ("the coupling completed", "ended by precice"),
         r"\[preciceAdapter\] (?:The coupling completed\.|The simulation was ended by preCICE\b)",
         "the coupled simulation completed (preCICE)", warnings_ok=True),
    # sacct -P / --parsable2 rows, where ExitCode need not sit next to State:
    # "123|COMPLETED|36|4000M|01:02:03|...|0:0|1|" (sacct.completed reads "COMPLETED|0:0").
    Rule("sacct.parsable_completed", "success", R_SUCCESS + 2, 0.8,
         ("completed",),
         r"^\s*\d{1,12}(?:_\d{1,8})?(?:\.batch)?\|COMPLETED\|(?:[^|\n]{0,40}\|){0,20}0:0(?:\||$)",
         "the scheduler reports the job COMPLETED with exit code 0", warnings_ok=True),
)
