"""Rules for message families (gcm_checks/classify/rules_fam.py).

Every row is written from the format the tool's source or documentation prints
(hosts, ids, paths and numbers made up), never copied from a corpus excerpt;
each rule also has a look-alike that must not be read as that rule.
"""

from __future__ import annotations


from gcm_checks.classify.rules_fam import FAM_RULES
from classify_cases import cls  # noqa: E402 - tests/classify_cases.py


SUBMITIT_TB = (
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.10/site-packages/submitit/core/job_environment.py", line 226, in checkpoint_and_try_requeue\n'
    "    raise utils.UncompletedJobError(message)\n"
    "submitit.core.utils.UncompletedJobError: Job not requeued because: {reason}.\n")

RDZV = (
    "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'gpu17_40211_0' has failed to send a "
    "keep-alive heartbeat to the rendezvous 'job-42' due to an error of type RendezvousConnectionError.\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/c10d_rendezvous_backend.py",'
    " line 113, in _call_store\n"
    "    return getattr(self._store, store_op)(*args, **kwargs)\n"
    "RuntimeError: Connection reset by peer\n")

CASES = [
    # ---- a time limit re-raised as a generic exception
    ("fam.submitit_timeout", "timeout_walltime", SUBMITIT_TB.format(reason="timed-out and not checkpointable")),
    ("fam.submitit_timeout", "timeout_walltime", SUBMITIT_TB.format(reason="timed-out too many times")),
    ("fam.ci_timeout", "timeout_walltime",
     "##[error]The job running on runner gpu-runner-2 has exceeded the maximum execution time of 360 minutes."),
    ("fam.ci_timeout", "timeout_walltime", "The job has exceeded the maximum execution time of 2h0m0s"),
    ("fam.ci_timeout", "timeout_walltime", "ERROR: Job failed: execution took longer than 1h0m0s seconds"),
    ("fam.ci_timeout", "timeout_walltime",
     "##[error]The job running on agent Hosted Agent ran longer than the maximum time of 60 minutes."),
    ("fam.ci_timeout", "timeout_walltime", '"statusReason": "Job attempt duration exceeded timeout"'),
    ("fam.ci_timeout", "timeout_walltime", "FailureReason: MaxRuntimeExceeded: Training job runtime exceeded"),
    ("fam.ci_timeout", "timeout_walltime", "Run failed with error code MAX_DURATION_EXCEEDED."),
    # ---- preemption by a cloud
    ("fam.cloud_preempted", "preempted", "Run failed with error code INTERRUPTED_BY_NO_CAPACITY. Check CLI and server logs."),
    ("fam.cloud_preempted", "preempted", "train-7  aws (us-east-1)  failed  Interrupted by no capacity"),
    ("fam.cloud_preempted", "preempted", "Spot request sir-8x2k status: instance-terminated-by-price"),
    ("fam.cloud_preempted", "preempted", "Status code: instance-terminated-no-capacity"),
    ("fam.cloud_preempted", "preempted",
     "Task state is updated from RUNNING to FAILED on zones/us-central1-a/instances/vm-1 due to Spot VM preemption"
     " with exit code 50001."),
    ("fam.cloud_preempted", "preempted",
     "ray.exceptions.ActorDiedError: The actor died because its node has died. Node Id: 5c2a\n"
     "\tthe actor's node was terminated: Termination reason: AUTOSCALER_DRAIN_PREEMPTED"),
    # ---- a person stopped it
    ("fam.stopped_by_user", "cancelled_user", "Run failed with error code TERMINATED_BY_USER."),
    ("fam.stopped_by_user", "cancelled_user", "train-7  runpod  terminated  Stopped by user"),
    ("fam.stopped_by_user", "cancelled_user",
     "time=2026-01-02T03:04:05Z level=error msg=\"Job canceled\"\ntime=2026-01-02T03:04:05Z level=info msg=done"),
    # ---- completion markers
    ("fam.completed", "success", "Tue Mar  3 10:01:38: Done successfully. The CPU time used is 12.4 seconds;"),
    ("fam.completed", "success", "Managed job 6 (task: 1) SUCCEEDED. Cleaning up the cluster train-6."),
    ("fam.completed", "success", "Managed job 12 SUCCEEDED."),
    ("fam.completed", "success", "Run finished: termination reason ALL_JOBS_DONE"),
    ("fam.completed", "success",
     "[1,0]<stdout>:# Out of bounds values : 0 OK\n[1,0]<stdout>:# Avg bus bandwidth    : 185.12 \n"),
    # ---- rendezvous, store, Gloo, NCCL internals
    ("fam.rendezvous", "nccl_comm", RDZV),
    ("fam.rendezvous", "nccl_comm",
     "[W socket.cpp:601] [c10d] The client socket has failed to connect to [trainer-0]:29500 "
     "(errno: 111 - Connection refused).\nRuntimeError: Socket Timeout"),
    ("fam.rendezvous", "nccl_comm", "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error"),
    ("fam.nccl_internal", "nccl_comm", "node3:4242:4300 [0] include/alloc.h:103 NCCL WARN Cuda failure 1 'invalid argument'"),
    ("fam.nccl_internal", "nccl_comm",
     "node3:4242:4300 [2] proxy.cc:1519 NCCL WARN [Proxy Service 2] Failed to execute operation Connect from rank 2, retcode 3"),
    # ---- GPU memory for the KV cache
    ("fam.kv_cache_oom", "gpu_oom",
     "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in"
     " KV cache (20144). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."),
    ("fam.kv_cache_oom", "gpu_oom",
     "ValueError: To serve at least one request with the models's max seq len (131072), (16.0 GiB KV cache is needed,"
     " which is larger than the available KV cache memory (9.1 GiB)."),
    ("fam.kv_cache_oom", "gpu_oom", "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."),
    ("fam.kv_cache_oom", "gpu_oom", "Not enough memory to handle 4096 prefill tokens. You need to decrease `--max-batch-prefill-tokens`"),
    # ---- numeric divergence
    ("fam.numeric", "numeric_divergence",
     " iteration      120/  5000 | lm loss: 7.1E+00 | loss scale: 1.0 | number of skipped iterations:   4 |"
     " number of nan iterations:   4 |"),
    ("fam.numeric", "numeric_divergence",
     "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 1.0\n"
     "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 0.5"),
    # ---- storage quota
    ("fam.quota", "storage_io",
     "org.apache.hadoop.hdfs.protocol.DSQuotaExceededException: The DiskSpace quota of /user/alice is exceeded:"
     " quota = 1099511627776 B = 1 TB but diskspace consumed = 1099600000000 B"),
    ("fam.quota", "storage_io", "write /scratch/run/ckpt/step_900.pt: EDQUOT"),
    ("fam.quota", "storage_io", "rsync: write failed on \"/home/u/out.bin\": block quota exceeded"),
    ("fam.quota", "storage_io", "/scratch: write failed, filesystem is full"),
    # ---- nodes the launcher lost
    ("fam.node_lost", "node_failure",
     "--------------------------------------------------------------------------\n"
     "ORTE has lost communication with its daemon located on node:\n\n  hostname:  cn0412\n"),
    ("fam.node_lost", "node_failure", "PRTE has lost communication with a remote daemon."),
    ("fam.node_lost", "node_failure", "03/01/2024 10:11:12  S    unable to run job, send to MOM 'cn07' failed"),
    ("fam.node_lost", "node_failure",
     "[2025-01-02T03:04:05.678] update_node: node gpu-st-p5-3 reason set to: Scheduler health check failed"),
    # ---- GSP
    ("fam.gsp_timeout", "gpu_hardware",
     "[ 912.4] NVRM: GPU3 _kgspLogRpcTimeout: ********************************* GSP Timeout **********************************"),
    ("fam.gsp_timeout", "gpu_hardware",
     "[ 84.3] NVRM: GPU1 kgmmuCheckMemSubsysError_IMPL: Memory Subsystem Error detected. kbusSendSysmembarSingle failed."),
    # ---- crashes an IDE or glog reports
    ("fam.crash_signal", "segfault_signal", "Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)"),
    ("fam.crash_signal", "segfault_signal", "Process finished with exit code 134"),
    ("fam.crash_signal", "segfault_signal",
     "*** Aborted at 1700000000 (unix time) try \"date -d @1700000000\" if you are using GNU date ***"),
    ("fam.caffe_unknown_layer", "import_env",
     "F0301 10:11:12.345678  4242 layer_factory.hpp:81] Check failed: registry.count(type) == 1 (0 vs. 1) Unknown layer"
     " type: Python (known types: AbsVal, Accuracy, ArgMax, BNLL)\n*** Check failure stack trace: ***"),
]


def test_every_family_rule_has_a_case() -> None:
    covered = {c[0] for c in CASES}
    assert [r.id for r in FAM_RULES if r.id not in covered] == []


LOOKALIKES = [
    # submitit requeued the job (it had a checkpoint): no time-limit verdict from this line.
    ("fam.submitit_timeout", "submitit INFO (2024-01-01 10:00:00) Job not requeued because: checkpoint failed."),
    # A step's own timing is not a runner's limit.
    ("fam.ci_timeout", "step 40: execution took 3.2 s, maximum execution time so far 4.1 s"),
    # AWS's user-initiated termination is not capacity taken back.
    ("fam.cloud_preempted", "Spot Instance terminated due to user-initiated termination. [instance-terminated-by-user]"),
    ("fam.cloud_preempted", "exit code 5000 from the container"),
    # Words in prose, not dstack's reason.
    ("fam.stopped_by_user", "INFO: the job can be stopped by the user at any time with Ctrl-C"),
    # bjobs' header and a FAILED managed job are not completion.
    ("fam.completed", "Managed job 6 (task: 1) FAILED. See logs."),
    ("fam.completed", "# Avg bus bandwidth    : 185.12"),  # unprefixed form is doc.completed's, not this rule's
    # The word "rendezvous" in a config dump; a store that connected.
    ("fam.rendezvous", "INFO: rendezvous backend: c10d, endpoint: trainer-0:29500"),
    ("fam.rendezvous", "[I socket.cpp:480] [c10d] The client socket has connected to [trainer-0]:29500"),
    # NCCL's own CUDA OOM is GPU memory; an INFO trace line is not a failure.
    ("fam.nccl_internal", "node3:1:2 [0] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'"),
    ("fam.nccl_internal", "node3:1:2 [0] NCCL INFO proxy.cc:1306 -> 3"),
    # vLLM sizing that fitted.
    ("fam.kv_cache_oom", "INFO: # GPU blocks: 2048, # CPU blocks: 512; maximum concurrency for 4096 tokens: 8.0x"),
    # Zero NaN iterations; a loss scale that grew back.
    ("fam.numeric", "iteration 10 | lm loss: 2.1E+00 | number of skipped iterations:   0 | number of nan iterations:   0 |"),
    ("fam.numeric", "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0"),
    # Quota reporting, not a refusal.
    ("fam.quota", "Disk quotas for user alice (uid 1000): blocks quota limit grace"),
    # ORTE's launch banner; a Torque MOM that answered.
    ("fam.node_lost", "ORTE_ERROR_LOG: Not found in file util/session_dir.c"),
    ("fam.node_lost", "03/01/2024 10:11:12  S    Job Run at request of root@pbs-server"),
    # A GSP firmware load line.
    ("fam.gsp_timeout", "NVRM: GPU0 kgspBootstrap_IMPL: GSP-RM is now running"),
    # Exit code 0 from an IDE; a unix time in an ordinary log line.
    ("fam.crash_signal", "Process finished with exit code 0"),
    ("fam.crash_signal", "checkpoint saved at 1700000000 (unix time)"),
    ("fam.crash_signal", "Process finished with exit code 1"),
    # Caffe registering a layer type is not an unknown one.
    ("fam.caffe_unknown_layer", "I0301 10:11:12.3 4242 layer_factory.hpp:77] Creating layer type: Python"),
]


# ---- root cause over last line: the context beats the generic exception it raises ------

def test_submitit_time_limit_beats_the_generic_exception_it_raises() -> None:
    text = SUBMITIT_TB.format(reason="timed-out and not checkpointable") + (
        "submitit.core.utils.FailedJobError: Job (task=0) failed during processing with trace:\n"
        "RuntimeError: interrupted\n")
    r = cls(text)
    assert (r.category, r.rule) == ("timeout_walltime", "fam.submitit_timeout")


def test_rendezvous_failure_beats_the_runtime_error_torchrun_raises() -> None:
    r = cls(RDZV + "torch.distributed.elastic.rendezvous.api.RendezvousError: rendezvous failed\n")
    assert r.category == "nccl_comm"


def test_an_earlier_crash_on_a_rank_beats_the_rendezvous_fallout() -> None:
    # One rank's own error took the store down; the others' heartbeat failure is a symptom.
    r = cls("[rank0]: ValueError: expected 3 channels, got 4\n" + RDZV)
    assert r.category == "software_exception"


def test_kv_cache_error_is_gpu_memory_even_inside_a_value_error_traceback() -> None:
    r = cls("Traceback (most recent call last):\n  File \"serve.py\", line 9, in <module>\n"
            "ValueError: The model's max seq len (8192) is larger than the maximum number of tokens that can be"
            " stored in KV cache (4096).\n")
    assert r.category == "gpu_oom"
