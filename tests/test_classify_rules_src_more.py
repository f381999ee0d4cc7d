"""Rules for the message families the d/e/f audit found unread (gcm_checks/classify/rules_src_more.py).

Every row is written from the format string the tool's source or documentation
prints (hosts, ids, paths and numbers made up), never copied from a corpus
excerpt; each family also has look-alikes that must not be read as it.
"""

from __future__ import annotations


from classify_cases import cls, tb  # noqa: E402 - tests/classify_cases.py


CASES = [
    # ---- machines that went away
    ("ci.runner_lost", "node_failure",
     "The hosted runner: GitHub Actions 7 lost communication with the server. Anything in your workflow that"
     " terminates the runner process, starves it for CPU/Memory, or blocks its network access can cause this error."),
    ("ci.runner_lost", "node_failure",
     "The self-hosted runner: gpu-box-3 lost communication with the server. Verify the machine is running and has a"
     " healthy network connection."),
    ("ci.runner_lost", "node_failure",
     "##[error]We stopped hearing from agent build-agent-2. Verify the agent machine is running and has a healthy"
     " network connection."),
    ("ci.jenkins_agent_lost", "node_failure", "Agent went offline during the build\nERROR: Connection was broken"),
    ("ci.jenkins_agent_lost", "node_failure", "FATAL: hudson.remoting.ChannelClosedException: Channel \"unknown\": "
                                              "Remote call on worker-7 failed. The channel is closing down or has closed down"),
    ("ci.jenkins_agent_lost", "node_failure",
     "FATAL: java.nio.channels.ClosedChannelException\n"
     "Also:   hudson.remoting.Channel$CallSiteStackTrace: Remote call to JNLP4-connect connection from 10.1.2.3/10.1.2.3:50000"),
    ("ray.node_died", "node_failure",
     "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n"
     "\tclass_name: TrainWorker\n"
     "The actor is dead because its node has died. Node Id: 1f2e3d"),
    ("tf.worker_restarted", "node_failure",
     tb("tensorflow.python.framework.errors_impl.AbortedError: RecvTensor expects a different device incarnation:"
        " 123 vs. 456. Your worker job (\"/job:worker/replica:0/task:1\") was probably restarted. Check your worker"
        " job for the reason why it was restarted.")),
    ("cloud.worker_vm_lost", "node_failure",
     "Task wf.align:2:1 failed. The job was stopped before the command finished. PAPI error code 10. 14: VM"
     " ggp-1234 stopped unexpectedly."),
    ("cloud.worker_vm_lost", "node_failure",
     "Task wf.call:NA:1 failed. The job was stopped before the command finished. GCP Batch task exited with"
     " VMRebootedDuringExecution(50003)."),
    # ---- scheduler and CI ends
    ("ci.max_time", "timeout_walltime",
     "##[error]The job running on agent build-pool-2 ran longer than the maximum time of 1.12:00:00 minutes."),
    ("ci.max_time", "timeout_walltime", "##[Error 1]\nThe job exceeded the maximum allowed time of 02:30:00 and was stopped."),
    ("ci.max_time", "timeout_walltime", "error: The job running on agent Azure Pipelines 3 ran longer than\n"
                                        "the maximum time of 45 minutes."),
    ("wf.out_of_walltime", "timeout_walltime",
     "[12|PwBaseWorkChain|report_error_handled]: PwCalculation<13> failed with exit status 400: The calculation"
     " stopped prematurely because it ran out of walltime."),
    ("cloud.spot_interrupted", "preempted", '"stoppedReason": "Your Spot Task was interrupted.",'),
    ("wf.session_sigint", "cancelled_user",
     "Mar-02 10:11:12.123 [SIGINT handler] DEBUG nextflow.Session - Session aborted -- Cause: SIGINT"),
    ("sched.user_cancel", "cancelled_user", "Cancelling jobs (3, 4) on cluster 'sky-ab12-user'..."),
    ("sched.user_cancel", "cancelled_user", "Cancelling all jobs on cluster 'mycluster'..."),
    ("sched.user_cancel", "cancelled_user", "DAG Removed: User removed scheduler job from queue. (by user alice)"),
    ("tty.hangup", "cancelled_user",
     "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4242 closing signal SIGHUP"),
    ("tty.ctrl_c", "cancelled_user", "Epoch 3/10:  41%|####      | 410/1000 [02:01<02:55]\n^C"),
    ("glog.sigterm", "cancelled_user",
     "*** Aborted at 1600000000 (unix time) try \"date -d @1600000000\" if you are using GNU date ***\n"
     "PC: @                0x0 (unknown)\n"
     "*** SIGTERM (@0x3e8) received by PID 777 (TID 0x7f00aa) from PID 700; stack trace: ***\n"
     "    @     0x7f00aa123456 (unknown)"),
    ("ci.canceled", "cancelled_user", "Run make test\n##[error]The operation was canceled."),
    ("ci.runner_shutdown", "unknown",
     "The runner has received a shutdown signal. This can happen when the runner service is stopped, or a manually"
     " started runner is canceled.\nError: The operation was canceled."),
    # ---- Ray's worker deaths
    ("ray.worker_died", "unknown",
     "(raylet) A worker died or was killed while executing a task by an unexpected system error. Worker exit type:"
     " SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. Some"
     " common causes include: (1) the process was killed by the OOM killer due to high memory usage, (2) ray stop"
     " --force was called, or (3) the worker crashed unexpectedly due to SIGSEGV or another unexpected error."),
    ("ray.worker_died", "unknown",
     "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n\tclass_name: Learner"),
    # ---- network
    ("net.go_client_timeout", "network_fabric",
     'Error response from daemon: Get "https://registry.example.org/v2/": net/http: request canceled while waiting'
     " for connection (Client.Timeout exceeded while awaiting headers)"),
    ("net.go_client_timeout", "network_fabric",
     "CannotPullContainerError: failed to do request: Head https://x.example.org/v2/m: dial tcp 10.9.8.7:443: i/o timeout"),
    ("net.urllib3_timeout", "network_fabric",
     "pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='pypi.example.org', port=443): Read"
     " timed out."),
    ("net.urllib3_timeout", "network_fabric",
     "  Retrying (Retry(total=2, connect=None, read=None, redirect=None, status=None)) after connection"
     " broken by 'ConnectTimeoutError(<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>, 'Connection"
     " to pypi.example.org timed out. (connect timeout=15)')': /simple/numpy/"),
    ("net.libfabric", "network_fabric",
     "Unable to write to EQ: Missing or unavailable event queue. err: Input/output error (5) prov_errno: Unknown"
     " error -7 (-7) prov/efa/src/rdm/efa_rdm_ep.c:210"),
    ("net.libfabric", "network_fabric",
     "libfabric:77:1700000000::core:core:fi_getinfo_():1300<warn> fi_getinfo: provider efa output empty list"),
    ("net.libfabric", "network_fabric",
     "libfabric:88:1700000000:cxi:core:cxip_ux_onload_cb():2400<warn> nid01: RXC (0x1:2:0): Flow control triggered"
     " due to failure to append LE. Software endpoint mode required.\n"
     "Program received signal SIGABRT: Process abort signal."),
    ("net.pmix_coll_timeout", "network_fabric",
     "slurmstepd: error:  mpi/pmix_v4: pmixp_coll_ring_reset_if_to: node7 [0]: pmixp_coll_ring.c:738: 0xabc:"
     " collective timeout seq=3"),
    # ---- NCCL / c10d
    ("nccl.error_unwind", "nccl_comm",
     "host:11:22 [1] NCCL INFO transport/net.cc:200 -> 2\nhost:11:22 [1] NCCL INFO init.cc:900 -> 2\n"
     "host:11:22 [1] NCCL INFO group.cc:70 -> 2 [Async thread]"),
    ("c10d.store_timeout", "nccl_comm",
     tb("  File \"/x/torch/distributed/elastic/utils/store.py\", line 31, in get_all\n"
        "RuntimeError: Socket Timeout")),
    # ---- memory
    ("host.systemd_oom", "host_oom",
     "trainer.service: A process of this unit has been killed by the OOM killer.\n"
     "trainer.service: Failed with result 'oom-kill'."),
    ("host.colab_ram", "host_oom", "Your session crashed after using all available RAM. If you are interested in"
                                   " access to high-RAM runtimes, you may want to check out Colab Pro."),
    ("shell.job_killed", "host_oom",
     "worker-1  | ./start.sh: line 12:   321 Killed                  python serve.py --port 8000"),
    ("shell.job_killed", "host_oom", "loading shards\n已杀死"),
    # (the rest of the line, "cudaErrorMemoryAllocation out of memory", is rules.py's cuda.oom; a
    # wrapped or cut line keeps only RMM's part)
    ("rmm.oom", "gpu_oom",
     "MemoryError: std::bad_alloc: out_of_memory: CUDA error at: /opt/include/rmm/mr/device/cuda_memory_resource.hpp"),
    ("rmm.oom", "gpu_oom", "RuntimeError: RMM failure at: pool_memory_resource.hpp:190: Maximum pool size exceeded"),
    ("ort.arena_oom", "gpu_oom",
     "onnxruntime.capi.onnxruntime_pybind11_state.RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION :"
     " Non-zero status code returned while running MatMul node. Name:'MatMul_7' Status Message:"
     " bfc_arena.cc:376 AllocateRawInternal Failed to allocate memory for requested buffer of size 123456789"),
    ("tf.bfc_dump", "gpu_oom",
     "2019-01-02 03:04:05.000001: I tensorflow/core/common_runtime/bfc_allocator.cc:671]      Summary of in-use"
     " Chunks by size:\n"
     "2019-01-02 03:04:05.000002: I tensorflow/core/common_runtime/bfc_allocator.cc:678] Sum Total of in-use chunks:"
     " 7.25GiB"),
    # ---- GPU and CUDA
    ("gpu.gsp_rpc_failed", "gpu_hardware",
     "kernel: NVRM: GPU1 _issueRpcAndWait: rpcSendMessage failed with status 0x00000011 for fn 12 sequence 4321!"),
    ("gpu.gsp_rpc_failed", "gpu_hardware",
     "kernel: NVRM: GPU1 nvAssertFailedNoLog: Assertion failed: (status == NV_OK) || (status =="
     " NV_ERR_GPU_IN_FULLCHIP_RESET) @ rs_server.c:259"),
    ("gpu.pci_rev_ff", "gpu_hardware",
     "3b:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev a1)\n"
     "5e:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev ff)"),
    ("thc.unknown_error", "gpu_hardware",
     "THCudaCheck FAIL file=/src/THC/THCGeneral.c line=70 error=30 : unknown error\n"
     "luajit: cuda runtime error (30) : unknown error at /tmp/cutorch/lib/THC/THCGeneral.c:70"),
    ("ort.cuda_call", "cuda_runtime",
     "Fail: [ONNXRuntimeError] : 1 : FAIL : CUDA error executing cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice)"),
    # ---- storage
    ("io.enospc", "storage_io",
     "FATAL:   While performing build: conveyor failed to get: writing blob: write /tmp/build-1/blob: no space left"
     " on device"),
    ("io.short_write", "storage_io", tb("OSError: 4000000 requested and 1024 written")),
    ("wf.no_file_locks", "storage_io",
     "Can't open cache DB: /shared/proj/.nextflow/cache/abc/db\n\nNextflow needs to be executed in a shared file"
     " system that supports file locks."),
    # ---- environment
    ("container.start_failed", "import_env",
     'OCI runtime create failed: runc create failed: unable to start container process: exec: "serve": executable'
     " file not found in $PATH: unknown"),
    ("container.start_failed", "import_env",
     'message: "The replica workerpool0-0 exited with a non-zero status of 128. Termination reason: StartError."'),
    ("slurm.bad_request", "import_env",
     "srun: error: Unable to create step for job 991: Invalid generic resource (gres) specification"),
    ("slurm.bad_request", "import_env",
     "srun: fatal: SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually exclusive."),
    ("mpi.init_env", "import_env",
     "It looks like orte_init failed for some reason; your parallel process is\nlikely to abort."),
    ("mpi.init_env", "import_env",
     "The application appears to have been direct launched using \"srun\",\nbut OMPI was not built with SLURM's PMI"
     " support and therefore cannot\nexecute."),
    ("torch.local_rank_flag", "import_env",
     "usage: train.py [-h] [--local_rank LOCAL_RANK]\ntrain.py: error: unrecognized arguments: --local-rank=3"),
    # ---- input data
    ("llama.bad_model_file", "data_input",
     "gguf_init_from_file: invalid magic number 3c21444f\nllama_load_model_from_file: failed to load model"),
    ("llama.bad_model_file", "data_input", "gguf_init_from_file: invalid magic characters 'lmgg'"),
    ("data.missing_input", "data_input",
     '`.fit(ckpt_path="hpc")` is set but no HPC checkpoint was found. Please pass an exact checkpoint path to'
     " `.fit(ckpt_path=...)`"),
    ("data.missing_input", "data_input",
     "Dataset 'coco8.yaml' images not found, missing path '/data/coco8/images/val'"),
    ("data.no_such_path", "data_input", "No such file or directory: '/opt/ml/input/data/train'"),
    ("data.no_such_path", "data_input",
     "NotFoundError: Error executing an HTTP request: HTTP response code 404 with body '{\n"
     '  "message": "No such object: my-bucket/shards/train-00001.tfrecord"\n}'),
    # ---- numeric
    ("md.lost_atoms", "numeric_divergence", "ERROR: Lost atoms: original 2048 current 2040 (src/thermo.cpp:480)"),
    ("md.lost_atoms", "numeric_divergence", "ERROR on proc 2: Bond atoms 101 102 missing on proc 2 at step 5000"),
    ("train.loss_nan_bar", "numeric_divergence",
     "[2024-01-01 10:00:00,000] [INFO] [loss_scaler.py:180:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step."
     "Steps:   1%| | 3/500 [00:40<1:10:00, lr=2e-5, step_loss=nan]"),
    ("train.loss_nan_bar", "numeric_divergence", "INFO {'loss': nan, 'grad_norm': nan, 'epoch': 0.3}"),
    ("np.invalid_value", "numeric_divergence",
     "/usr/lib/python3/site-packages/numpy/core/_methods.py:180: RuntimeWarning: invalid value encountered in divide"),
    # ---- crashes
    ("sig.job_status", "segfault_signal",
     "INFO:runner:ERR: /home/u/run.sh: line 42: 1234 Segmentation fault      ./solver -n 4"),
    ("sig.job_status", "segfault_signal",
     "[node3:5555] *** Process received signal ***\n[node3:5555] Signal: Aborted (6)\n[node3:5555] Signal code:  (-6)"),
    # ---- the job's own errors
    ("ray.task_error", "software_exception",
     "ray.exceptions.RayTaskError(KeyError): ray::Trainer.train() (pid=42, ip=10.0.0.2)"),
    ("mxnet.fatal", "software_exception",
     "infer_shape error. Arguments:\n  data: (8, 3, 224, 224)\n  label: (8,)"),
    ("mxnet.fatal", "software_exception",
     "[bt] (0) /opt/mxnet/libmxnet.so(_ZN4dmlc15LogMessageFatalD1Ev+0x3f) [0x7f01]\n"
     "[bt] (1) /opt/mxnet/libmxnet.so(_ZNK5mxnet2op9SliceProp10InferShapeEv+0x10) [0x7f02]"),
    ("mxnet.fatal", "software_exception",
     "Assignment: Shape of Tensors are not consistent with target, eshape: (8,10) dshape:(8,12)"),
    ("slurm.bad_option", "software_exception", "sbatch: invalid option -- 'z'"),
    ("slurm.bad_option", "software_exception", "srun: unrecognized option '--gpu=2'"),
    # ---- completion records
    ("cloud.job_succeeded", "success", "2024-02-01 10:00:00 Completed - Training job completed\nTraining seconds: 100"),
    ("cloud.job_succeeded", "success",
     'description: "Job state is set from RUNNING to SUCCEEDED for job projects/1/locations/r/jobs/j1."'),
    ("cloud.job_succeeded", "success",
     '{"name": "torchelastic.worker.status.SUCCEEDED", "source": "WORKER", "timestamp": 0}'),
]


LOOKALIKES = [
    # A runner that came back; an agent that is online.
    ("ci.runner_lost", "Runner reconnected: communication with the server restored"),
    ("ci.jenkins_agent_lost", "Agent build-7 is online; building remotely on build-7"),
    # Ray's healthy actor status; a node that was added.
    ("ray.node_died", "Actor status: ALIVE on node 1f2e (node added to the cluster)"),
    # PAPI's other codes (code 14 is a preemption, not a lost VM).
    ("cloud.worker_vm_lost", "PAPI error code 14. Task was preempted for the 1st time."),
    # A CI job that finished well inside its limit; a timeout setting.
    ("ci.max_time", "timeoutInMinutes: 120  # the maximum time the job may run"),
    # The plain "N minutes" form is rules_fam's fam.ci_timeout.
    ("ci.max_time", "The job running on agent Hosted Agent ran longer than the maximum time of 60 minutes."),
    ("wf.out_of_walltime", "walltime: 02:00:00 (ran 01:12:00)"),
    ("cloud.spot_interrupted", "Spot interruption notice received; checkpointing"),
    # Nextflow aborting for an error, and a SIGTERM (scheduler or user: not decided here).
    ("wf.session_sigint", "Session aborted -- Cause: Process `align (1)` terminated with an error exit status (1)"),
    ("wf.session_sigint", "Session aborted -- Cause: SIGTERM"),
    ("sched.user_cancel", "Cancelling the download of shard 3"),
    # The agent stopping the other ranks with SIGTERM after a failure is not a hang-up.
    ("tty.hangup", "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 42 closing signal SIGTERM"),
    # "^C" inside a line (a documented shortcut), not the terminal's echo.
    ("tty.ctrl_c", "Press ^C to stop the server"),
    # glog's crash report for SIGSEGV stays a crash.
    ("glog.sigterm", "*** SIGSEGV (@0x0) received by PID 77 (TID 0x7f) from PID 0; stack trace: ***"),
    ("ci.canceled", "Cancel the operation with ctrl-c if it was not canceled already"),
    # A Ray worker that exited on purpose.
    ("ray.worker_died", "Worker exit type: INTENDED_USER_EXIT Worker exit detail: Worker exits by an user request."),
    # Timeouts that are not network clients', a request that succeeded.
    ("net.go_client_timeout", "GET https://registry.example.org/v2/ 200 OK in 31ms"),
    # pip >= 10 logs a retry as a warning; one retry that may still succeed is not the end.
    ("net.urllib3_timeout", "  WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None,"
                            " status=None)) after connection broken by 'ConnectTimeoutError(...)': /simple/x/"),
    ("net.urllib3_timeout", "requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://x/y"),
    # libfabric's informational lines.
    ("net.libfabric", "libfabric:77:1700000000:efa:core:efa_device_init():120<info> Found 4 EFA devices"),
    ("net.pmix_coll_timeout", "mpi/pmix_v4: pmixp_coll_ring_init: collective timeout set to 300 s"),
    # NCCL's successful unwinding marker and its INFO lines with "->" that are rings.
    ("nccl.error_unwind", "host:11:22 [1] NCCL INFO Channel 00/02 :    0   1   2   3 -> 0"),
    ("nccl.error_unwind", "host:11:22 [1] NCCL INFO Ring 00 : 5[3d000] -> 6[b2000] via P2P/IPC"),
    ("c10d.store_timeout", "store timeout set to 1800 seconds"),
    ("host.systemd_oom", "trainer.service: Succeeded.\ntrainer.service: Consumed 2min CPU time."),
    ("host.colab_ram", "Your session is using 60% of available RAM."),
    # A bash line about a killed job that names no signal; zh text that is not the signal name.
    ("shell.job_killed", "./run.sh: line 9: kill: (4242) - No such process"),
    ("shell.job_killed", "训练完成"),
    ("rmm.oom", "rmm.reinitialize(pool_allocator=True, initial_pool_size=2**30)"),
    ("ort.arena_oom", "BFCArena options: initial_chunk_size_bytes: 1048576 max_dead_bytes_per_chunk: 134217728"),
    ("tf.bfc_dump", "I tensorflow/core/common_runtime/bfc_allocator.cc:1000] Creating new BFCAllocator named: GPU_0_bfc"),
    ("gpu.gsp_rpc_failed", "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15"),
    ("gpu.pci_rev_ff", "5e:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev a1)"),
    ("thc.unknown_error", "THCudaCheck FAIL file=/src/THC/THCGeneral.c line=70 error=2 : out of memory"),
    ("ort.cuda_call", "onnxruntime: CUDA execution provider registered; CUDA executing on device 0"),
    ("io.enospc", "Filesystem 1K-blocks Used Available Use% Mounted on\n/dev/sda1 100 40 60 40% /"),
    ("io.short_write", "100 requested, 100 written"),
    ("wf.no_file_locks", "Launching `main.nf` [sad_euler] DSL2 - revision: 1a2b3c"),
    ("container.start_failed", "Container started: exec /usr/bin/serve"),
    ("slurm.bad_request", "srun: job 991 queued and waiting for resources"),
    ("mpi.init_env", "orte_init completed; 4 daemons launched"),
    # Other argparse errors are the script's, not the launcher's flag.
    ("torch.local_rank_flag", "train.py: error: unrecognized arguments: --lr=0.1"),
    ("llama.bad_model_file", "llama_model_loader: loaded meta data with 24 key-value pairs from model.gguf"),
    ("data.missing_input", "Dataset 'coco8.yaml' images found: 8 train, 4 val"),
    # Python's FileNotFoundError with [Errno 2] is rules.py's, and a missing library is the environment's.
    ("data.no_such_path", "FileNotFoundError: [Errno 2] No such file or directory: 'data/x.json'"),
    ("data.no_such_path", "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory"),
    ("md.lost_atoms", "Lost atoms check: 0 atoms lost"),
    ("train.loss_nan_bar", "Steps: 10%| | 50/500 [00:40<06:00, lr=2e-5, step_loss=0.412]"),
    ("np.invalid_value", "numpy: invalid values are masked before the mean"),
    ("sig.job_status", "[node3:5555] Signal code: Address not mapped (1)"),
    ("ray.task_error", "ray.exceptions.RayTaskError: see the logs of the task"),
    ("mxnet.fatal", "infer_shape done: (8, 1000)"),
    ("slurm.bad_option", "sbatch: error: invalid partition specified: gpu2"),
    ("cloud.job_succeeded", 'description: "Job state is set from RUNNING to FAILED for job projects/1/jobs/j1."'),
]


# ---- precedence: what the audit found misread -------------------------------------------


def test_ray_hint_list_is_not_a_segfault() -> None:
    # Ray lists SIGSEGV among *possible* causes; the crash rule must not take it as one.
    r = cls("The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit"
            " detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential"
            " root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop"
            " --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.")
    assert (r.category, r.rule) == ("unknown", "ray.worker_died")


def test_a_real_cause_beats_the_ray_worker_death() -> None:
    r = cls("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
            "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.")
    assert r.category == "gpu_oom"


def test_ctrl_c_after_an_exception_keeps_the_exception() -> None:
    # Someone pressed Ctrl-C on a program that had already failed and hung.
    r = cls(tb("mytool.errors.CommandError: 'sbatch x.sh' exited with status 1") + "^C\n")
    assert r.category == "software_exception"


def test_runner_shutdown_is_not_a_users_cancel() -> None:
    r = cls("The runner has received a shutdown signal. This can happen when the runner service is stopped, or a"
            " manually started runner is canceled.\nThe operation was canceled.")
    assert r.category == "unknown"


def test_ci_time_limit_beats_the_shutdown_and_cancel_lines() -> None:
    r = cls("The agent has received a shutdown signal.\n##[error]The operation was canceled.\n"
            "The job exceeded the maximum allowed time of 01:00:00 and was stopped.")
    assert r.category == "timeout_walltime"


def test_no_space_beats_the_container_tools_fatal_prefix() -> None:
    r = cls("FATAL:   While performing build: while creating squashfs: create command failed: exit status 1: Write"
            " failed because No space left on device")
    assert r.category == "storage_io"


def test_libfabric_eio_is_the_fabric_not_storage() -> None:
    r = cls("err: Input/output error (5) prov_errno: Unknown error -3 (-3) prov/efa/src/rxr/rxr_cq.c:88")
    assert r.category == "network_fabric"


def test_rmm_bad_alloc_is_device_memory() -> None:
    r = cls("xgboost.core.XGBoostError: Memory allocation error on worker 0: std::bad_alloc: out_of_memory: CUDA"
            " error at: /opt/include/rmm/mr/device/cuda_memory_resource.hpp:60: cudaErrorMemoryAllocation")
    assert r.category == "gpu_oom"


def test_deepspeed_compatible_cuda_note_is_not_a_toolchain_error() -> None:
    note = ("Installed CUDA version 12.1 does not match the version torch was compiled with 12.4 but since the APIs"
            " are compatible, accepting this combination")
    assert cls(note).category == "unknown"
    # Without the note's second half it is the toolchain mismatch it always was.
    r = cls("Installed CUDA version 12.1 does not match the version torch was compiled with 12.4, unable to compile"
            " cuda/cpp extensions without a matching cuda version.")
    assert r.category == "import_env"


def test_a_non_ascii_line_is_not_keyed_as_a_blank_line() -> None:
    # scan.py keys lines digit- and non-ASCII-blind; a line of only CJK text must
    # survive next to blank lines (before, it merged with them and vanished).
    text = "loading\n\n已杀死\n\n"
    assert cls(text).rule == "shell.job_killed"
    assert cls(text).rule == "shell.job_killed"  # and again, with the benign-line cache warm
