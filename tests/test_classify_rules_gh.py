"""Rules for the message families the g/h audit found unread (gcm_checks/classify/rules_gh.py).

Every row is written from the format string the tool's source or documentation
prints (hosts, ids, paths and numbers made up), never copied from a corpus
excerpt; each family also has look-alikes that must not be read as it:
informational lines and ordinary training output with the same words.
"""

from __future__ import annotations


from gcm_checks.classify.rules_gh import GH_RULES
from gcm_checks.classify.rules_more import ALL_RULES
from classify_cases import cls, tb  # noqa: E402 - tests/classify_cases.py


CASES = [
    # ---- nodes that went away
    ("slurm.node_rebooted", "node_failure",
     "NodeName=gpu017 Arch=x86_64 CoresPerSocket=32\n   State=DOWN ThreadsPerCore=1\n"
     "   Reason=Node unexpectedly rebooted [slurm@2025-03-04T05:06:07]"),
    ("slurm.node_rebooted", "node_failure",
     "[2025-03-04T05:06:07.123] error: validate_node_specs: Node gpu017 unexpectedly rebooted boot_time=1741064767"
     " last response=1741064700"),
    ("slurm.launch_failed_held", "node_failure",
     "  JOBID PARTITION  NAME  USER ST  TIME NODES NODELIST(REASON)\n"
     "  88123       gpu train alice PD  0:00     2 (launch failed requeued held)"),
    # ---- time limits
    ("nf.time_limit", "timeout_walltime",
     "ERROR ~ Error executing process > 'ALIGN (sample_7)'\n\nCaused by:\n  Process exceeded running time limit (12h)\n"),
    ("rocoto.timeout", "timeout_walltime",
     "03/02/25 11:22:33 UTC :: wf.xml :: Cycle 202501010000, Task fcst_mem003, jobid=5521, in state DEAD (TIMEOUT),"
     " ran for 21600.0 seconds, exit status=15, try=2 (of 2)"),
    ("rocoto.out_of_memory", "host_oom",
     "Task post_f012, jobid=991, in state DEAD (OUT_OF_MEMORY), ran for 301.0 seconds, exit status=9, try=1 (of 3)"),
    ("rocoto.preempted", "preempted",
     "Task ens_f06, jobid=7001, in state DEAD (PREEMPTED), ran for 90.0 seconds, exit status=15, try=1 (of 1)"),
    # ---- preemption
    ("k8s.karpenter_spot", "preempted",
     '{"level":"INFO","time":"2025-05-06T07:08:09.000Z","logger":"controller","message":"initiating delete from'
     ' interruption message","controller":"interruption","queue":"my-queue","messageKind":"spot_interrupted",'
     '"NodeClaim":{"name":"general-x7k2q"},"action":"CordonAndDrain","Node":{"name":"ip-10-1-2-3.ec2.internal"}}'),
    ("k8s.karpenter_spot", "preempted",
     '"message":"initiating delete from interruption message","messageKind":"SpotInterruptionKind",'
     '"nodeclaim":"default-abcde","action":"CordonAndDrain"'),
    ("pbs.sched_rerun", "preempted",
     "03/04/2025 10:11:12  S    Job Run at request of Scheduler@pbs01 on exec_vnode (cn12:ncpus=8)\n"
     "03/04/2025 10:40:00  S    Job Rerun at request of Scheduler@pbs01"),
    ("colab.runtime_disconnected", "preempted",
     "Your runtime has been disconnected due to inactivity or reaching its maximum duration."),
    # ---- cancels
    ("galaxy.slurm_cancelled", "cancelled_user",
     "galaxy.jobs.runners.slurm INFO 2024-05-06 07:08:09,101 [p:1,w:1,m:0] (4242/991122) Job was cancelled via"
     " SLURM (e.g. with scancel(1))"),
    ("airflow.state_set_externally", "cancelled_user",
     "[2025-01-02, 03:04:05 UTC] {local_task_job_runner.py:302} WARNING - State of this instance has been"
     " externally set to failed. Terminating instance.\n"
     "[2025-01-02, 03:04:05 UTC] {taskinstance.py:2450} ERROR - Received SIGTERM. Terminating subprocesses."),
    ("airflow.state_set_externally", "cancelled_user",
     "WARNING - State of this instance has been externally set to success. Taking the poison pill."),
    ("sky.cancel_requested", "cancelled_user",
     "2025-02-03 04:05:06 PM  CANCELLING  Cancellation requested by user bob (request ID: 1234-abcd)"),
    # ---- storage
    ("pbs.jobfs_quota", "storage_io",
     "Job 998877.gadi-pbs killed due to exceeding jobfs quota. Quota: 100.0GB, Used: 100.2GB, Host: gadi-cpu-0042"),
    # ---- host memory
    ("kernel.oom_task_dump", "host_oom",
     "[ 812.000001] Tasks state (memory values in pages):\n"
     "[ 812.000002] [  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name\n"
     "[ 812.000003] [   1234]  1000  1234  9000000  8000000 70000000        0             0 python"),
    ("kernel.oom_task_dump", "host_oom",
     "kernel: [ pid ]   uid  tgid total_vm      rss nr_ptes nr_pmds swapents oom_score_adj name\n"
     "kernel: [  777]     0   777    10234      512      24       3        0             0 sshd"),
    ("shell.killed_9", "host_oom", "Loading the matrix (48000 x 48000)...\nKilled: 9\n"),
    ("shell.killed_9", "host_oom", "step 900 loss 1.23\nzsh: Killed: 9\n"),
    # ---- network
    ("ompi.tcp_peer", "network_fabric",
     "--------------------------------------------------------------------------\n"
     "WARNING: Open MPI failed to TCP connect to a peer MPI process.  This\nshould not happen.\n\n"
     "Your Open MPI job may now hang or fail.\n\n  Local host: cn101\n  PID:        5150\n"
     "  Message:    connect() to 192.168.7.8:1024 failed\n  Error:      Operation now in progress (115)"),
    ("ompi.tcp_peer", "network_fabric",
     "[cn07][[1234,1],5][btl_tcp.c:559:mca_btl_tcp_recv_blocking] recv(17) failed: Connection reset by peer (104)"),
    ("pscom.openib", "network_fabric",
     "12: <PSP:r0000012:ib:ibv_poll_cq(): Infiniband returned the wrong Opcode 1234>\n"
     "12: <PSP:r0000012:connection to (10.1.1.2,4000,0x2,r0000040) (type:openib,state:open) : read : Broken pipe>"),
    # ---- GPUs
    ("amdgpu.ras_uncorrectable", "gpu_hardware",
     "[1234.5] amdgpu 0000:c1:00.0: amdgpu: {3}uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!\n"
     "[1234.6] amdgpu 0000:c1:00.0: amdgpu: GPU reset begin!"),
    ("mlx.metal_oom", "gpu_oom",
     "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] Command buffer execution"
     " failed: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)"),
    ("mlx.metal_oom", "gpu_oom",
     tb("RuntimeError: [metal::malloc] Attempting to allocate 137438953472 bytes which is greater than the maximum"
        " allowed buffer size of 77309411328 bytes.")),
    ("jax.cuda_components", "import_env",
     tb("RuntimeError: Unable to use CUDA because of the following issues with CUDA components:\n"
        "Outdated cuSPARSE installation found.\nVersion JAX was built against: 12300\nMinimum supported: 12100\n"
        "Installed version: 12002\nThe local installation version must be no lower than 12100.")),
    ("torch.ninja_build", "import_env",
     "Building extension module cpu_adam...\n"
     + tb("subprocess.CalledProcessError: Command '['ninja', '-v', '-j', '8']' returned non-zero exit status 2.")),
    # ---- crashes
    ("tcmalloc.invalid_free", "segfault_signal",
     "epoch 3 step 120\nsrc/tcmalloc.cc:302] Attempt to free invalid pointer 0x7f00dead0000\nepoch 3 step 121"),
    # ---- the program's own errors
    ("gmx.input_error", "data_input",
     "Program:     gmx grompp, version 2023.3\nSource file: src/gromacs/gmxpreprocess/toppush.cpp (line 2000)\n\n"
     "Fatal error:\nAtomtype CT3 not found\n"),
    ("gmx.input_error", "data_input",
     "Program gmx grompp, VERSION 2019.6\nFatal error:\nSyntax error - File topol.top, line 27\nLast line read:\n"
     "'[ moleculetype ]'\n"),
    ("gmx.input_error", "data_input",
     "Error in user input:\nInvalid command-line options\n  In command-line option -f\n"
     "    File 'md.mdp' does not exist or is not accessible.\n"),
    ("gmx.input_error", "data_input", "Fatal error:\nNo such moleculetype LIG\n"),
    ("foam.fatal", "software_exception",
     "Starting time loop\n\n--> FOAM FATAL IO ERROR: (openfoam-2306)\nEntry 'nCorrectors' not found in dictionary"
     " \"system/fvSolution/PIMPLE\"\n\nfile: system/fvSolution/PIMPLE at line 40.\n"),
    ("foam.fatal", "software_exception",
     "--> FOAM FATAL ERROR:\nUnknown patchField type fixedValu for patch inlet\n\n    From function ...\n"),
    # ---- completion
    ("hpl.passed", "success",
     "WR11C2R4       40000   192     2     2             123.45             3.4567e+02\n"
     "||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=   1.2345678e-03 ...... PASSED\n"),
    ("hpl.passed", "success",
     "Finished      4 tests with the following results:\n              4 tests completed and passed residual checks,\n"
     "              0 tests completed and failed residual checks,\n"
     "              0 tests skipped because of illegal input values.\n"),
    ("opm.end_of_simulation", "success",
     "Report step 120/120 at day 3650/3650, date = 01-Jan-2035\n\n"
     "================    End of simulation     ===============\n\nTotal time (seconds):         12.3\n"),
    ("precice.coupling_completed", "success",
     "---[precice]  Time window completed\n---[preciceAdapter] The coupling completed.\n"
     "---[preciceAdapter] The simulation was ended by preCICE. Calling the end() methods of any functionObject"
     " explicitly.\nEnd\n"),
    ("sacct.parsable_completed", "success",
     "$ sacct -P -n --format JobID,State,AllocCPUS,Elapsed,MaxRSS,ExitCode -j 445566\n"
     "445566|COMPLETED|64|1-02:03:04||0:0\n445566.batch|COMPLETED|32|1-02:03:04|1234567K|0:0\n"),
]


def test_registered_in_the_engines_table() -> None:
    ids = {r.id for r in ALL_RULES}
    assert {r.id for r in GH_RULES} <= ids


LOOKALIKES = [
    # A node that came back on purpose; a reason an admin set.
    ("slurm.node_rebooted", "Reason=Reboot ASAP [root@2025-01-01T00:00:00]"),
    ("slurm.node_rebooted", "scontrol reboot nextstate=resume gpu017  # node rebooted for the new driver"),
    ("slurm.launch_failed_held", "  88123  gpu train alice PD  0:00  2 (JobHeldUser)"),
    # A Nextflow time directive and a task that finished within it.
    ("nf.time_limit", "process { time = '4h' }  // the running time limit of each task"),
    # Rocoto's other states and a succeeded task.
    ("rocoto.timeout", "Task gfs_fcst, jobid=1, in state SUCCEEDED (COMPLETED), ran for 5000.0 seconds, exit status=0,"
                       " try=1 (of 2)"),
    ("rocoto.preempted", "Task anal, jobid=4410, in state DEAD (FAILED), ran for 12.0 seconds, exit status=1"),
    # Karpenter's other interruption kinds (a scheduled maintenance, a rebalance hint).
    ("k8s.karpenter_spot", '"message":"initiating delete from interruption message","messageKind":"scheduled_change"'),
    ("k8s.karpenter_spot", '"messageKind":"rebalance_recommendation","action":"NoAction"'),
    # PBS's ordinary run and a user's own rerun.
    ("pbs.sched_rerun", "03/04/2025 10:11:12  S    Job Run at request of Scheduler@pbs01 on exec_vnode (cn12:ncpus=8)"),
    ("pbs.sched_rerun", "03/04/2025 10:40:00  S    Job Rerun at request of alice@login1"),
    ("colab.runtime_disconnected", "Connecting to a new runtime... connected."),
    # Galaxy's own delete (a user deleting a dataset is not a Slurm cancel line).
    ("galaxy.slurm_cancelled", "galaxy.jobs.runners.slurm DEBUG (4242/991122) state change: job is running"),
    # Airflow's own zombie and retry messages; a state that was read, not set.
    ("airflow.state_set_externally", "INFO - Marking task as UP_FOR_RETRY. dag_id=etl, task_id=load"),
    ("airflow.state_set_externally", "INFO - Task exited with return code 0"),
    ("sky.cancel_requested", "RUNNING  Job has started"),
    # Gadi's resource summary alone (a job well inside its quota).
    ("pbs.jobfs_quota", "   JobFS requested:    100.0GB      JobFS used: 1.2GB"),
    # Ordinary memory reports that are not the OOM killer's task dump.
    ("kernel.oom_task_dump", "  PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND"),
    ("kernel.oom_task_dump", "Mem-Info: active_anon:123 inactive_anon:45 isolated_anon:0"),
    # A tool's counters with the same words; "killed" in prose.
    ("shell.killed_9", "workers: started 12, killed: 9, restarted 3"),
    ("shell.killed_9", "Killed: 9 stale lock files removed"),
    # Open MPI's informational TCP lines.
    ("ompi.tcp_peer", "[cn07] mca: base: components_register: component tcp register function successful"),
    ("ompi.tcp_peer", "btl_tcp.c:559:mca_btl_tcp_recv_blocking] recv(17) returned 0 bytes, retrying"),
    ("pscom.openib", "<PSP:r0000012:connection to (10.1.1.2,4000,0x2,r0000040) (type:openib,state:open) : open>"),
    # amdgpu's informational RAS lines.
    ("amdgpu.ras_uncorrectable", "amdgpu 0000:c1:00.0: amdgpu: MEM ECC is active."),
    ("amdgpu.ras_uncorrectable", "amdgpu: RAS: optional ras ta ucode is not available"),
    # MLX's memory reports during training.
    ("mlx.metal_oom", "Iter 100: Train loss 1.234, It/sec 0.9, Peak mem 31.753 GB"),
    ("mlx.metal_oom", "[METAL] Command buffer execution completed in 12 ms"),
    # JAX's backend listing and a pip note about an outdated package.
    ("jax.cuda_components", "Available backends are ['cpu', 'cuda']"),
    ("jax.cuda_components", "[notice] A new release of pip is available; your installation is outdated"),
    # torch building an extension that succeeds.
    ("torch.ninja_build", "Emitting ninja build file /home/u/.cache/torch_extensions/fused_adam/build.ninja...\n"
                          "ninja: no work to do.\nLoading extension module fused_adam..."),
    ("tcmalloc.invalid_free", "tcmalloc: large alloc 2147483648 bytes == 0x7f00 @  0x7f0a 0x7f0b"),
    # GROMACS notes and a completed run.
    ("gmx.input_error", "NOTE 1 [file md.mdp]:\n  nstcomm < nstcalcenergy defeats the purpose of nstcalcenergy"),
    ("gmx.input_error", "GROMACS reminds you: \"Atomtype conversion finished\" (-the user)"),
    ("foam.fatal", "ExecutionTime = 12.3 s  ClockTime = 13 s\n\nEnd\n"),
    ("foam.fatal", "--> FOAM Warning : \n    From function Foam::dictionary::read\n    Reading \"system/controlDict\""),
    # HPL's header and a failed residual check; a test suite's PASSED.
    ("hpl.passed", "||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=   9.9e+03 ...... FAILED"),
    ("hpl.passed", "Finished      4 tests with the following results:\n"
                   "              0 tests completed and passed residual checks,"),
    ("hpl.passed", "test_io.py::test_roundtrip PASSED"),
    ("opm.end_of_simulation", "Starting time step 3, stepsize 2 days, at day 10/365, date = 11-Jan-2025"),
    ("opm.end_of_simulation", "checkpoint written; the end of simulation is at step 5000"),
    ("precice.coupling_completed", "---[precice]  Time window completed"),
    # sacct rows of a job that failed, and a step that completed under a failed job.
    ("sacct.parsable_completed", "445566|FAILED|64|1-02:03:04||1:0"),
    ("sacct.parsable_completed", "445566|OUT_OF_MEMORY|64|00:10:00||0:125"),
]


# ---- precedence: what the audit found misread -------------------------------------------


def test_galaxy_cancel_beats_its_own_missing_stderr_file() -> None:
    # Galaxy looks for the job's stderr to check for a memory message; the
    # FileNotFoundError is its bookkeeping, the scancel is the end.
    r = cls("galaxy.jobs.runners.slurm ERROR Error reading end of /srv/jobs/000/1/galaxy_1.e:\n"
            + tb("FileNotFoundError: [Errno 2] No such file or directory: '/srv/jobs/000/1/galaxy_1.e'")
            + "galaxy.jobs.runners.slurm INFO (1/77) Job was cancelled via SLURM (e.g. with scancel(1))\n")
    assert r.category == "cancelled_user"


def test_rocm_gpu_hang_beats_the_abort_it_causes() -> None:
    r = cls("HW Exception by GPU node-3 (Agent handle: 0x1) reason :GPU Hang\n"
            "E0101 00:00:00.000 1 api.py:874] failed (exitcode: -6) local_rank: 0 (pid: 9) of binary: python")
    # rules_enum.py's enum.accel_hang reads this line (rules_gh.py had a second rule for it).
    assert (r.category, r.rule) == ("gpu_hardware", "enum.accel_hang")


def test_jax_cuda_check_is_the_environment_not_the_runtime_error() -> None:
    r = cls(tb("RuntimeError: Backend 'cuda' failed to initialize: Unable to use CUDA because of the following"
               " issues with CUDA components:\nOutdated cuDNN installation found."))
    assert r.category == "import_env"


def test_a_crash_before_the_mpi_reset_keeps_the_crash() -> None:
    # One rank's own error, then its peers' TCP connections reset.
    r = cls(tb("ValueError: negative dimensions are not allowed")
            + "[cn07][[1,1],5][btl_tcp.c:559:mca_btl_tcp_recv_blocking] recv(17) failed: Connection reset by peer"
              " (104)\n")
    assert r.category == "software_exception"


def test_an_oom_before_the_completion_banner_keeps_the_oom() -> None:
    r = cls("slurmstepd: error: Detected 1 oom_kill event in StepId=7.batch. Some of your processes may have been"
            " killed by the cgroup out-of-memory handler.\n"
            "================    End of simulation     ===============\n")
    assert r.category == "host_oom"


def test_tcmalloc_abort_and_the_shells_abort_line_agree() -> None:
    r = cls("src/tcmalloc.cc:302] Attempt to free invalid pointer 0x7f00dead0000\nAborted (core dumped)\n")
    assert r.category == "segfault_signal"
