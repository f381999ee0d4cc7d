"""Infrastructure rules written from the tools' own source (gcm_checks/classify/rules_src_infra.py).

Every row is the format the program's source or reference documentation prints
(hosts, ids, paths and numbers made up), never a corpus excerpt; each rule also
has look-alikes that must not be read as that rule.
"""

from __future__ import annotations


from classify_cases import cls  # noqa: E402 - tests/classify_cases.py


GCP_BATCH = ("Task state is updated from RUNNING to FAILED on zones/europe-west4-b/instances/batch-7f3a-group0-0-x1y2"
             " due to {why} with exit code {code}.")

CASES = [
    # ---- preemption
    ("src.preempted", "preempted",
     "Status:       Failed\nReason:       Terminated\nMessage:      Pod was terminated in response to imminent node"
     " shutdown.\n"),
    ("src.preempted", "preempted",
     "status:\n  message: Preempted in order to admit critical pod\n  phase: Failed\n  reason: Preempting\n"),
    ("src.preempted", "preempted",
     "  - type: DisruptionTarget\n    status: \"True\"\n    reason: EvictionByEvictionAPI\n"
     "    message: 'Eviction API: evicting'\n"),
    ("src.preempted", "preempted",
     "  Type:     Preempted\n  Status:   True\n  Reason:   InCohortReclamation\n"),
    ("src.preempted", "preempted", GCP_BATCH.format(why="Spot Preemption", code=50001)),
    ("src.preempted", "preempted",
     "acceleratorType: v4-32\nname: projects/p/locations/us-central2-b/nodes/tpu-7\nstate: PREEMPTED\n"),
    # ---- time limits
    ("src.timeout", "timeout_walltime",
     "Status:       Failed\nReason:       DeadlineExceeded\nMessage:      Pod was active on the node longer than the"
     " specified deadline\n"),
    ("src.timeout", "timeout_walltime",
     "  Warning  MaximumExecutionTimeExceeded  2m  kueue-admission  exceeding the maximum execution time\n"),
    ("src.timeout", "timeout_walltime", GCP_BATCH.format(why="task runs over the maximum runtime", code=50005)),
    ("src.timeout", "timeout_walltime",
     "012 (4411.002.000) 2024-02-03 04:05:06 Job was held.\n\tThe job exceeded allowed execute duration of 20:00:00\n"
     "\tCode 47 Subcode 0\n"),
    # ---- nodes lost
    ("src.node_lost", "node_failure", GCP_BATCH.format(why="Batch no longer receives VM updates", code=50002)),
    ("src.node_lost", "node_failure", GCP_BATCH.format(why="VM is rebooted during task execution", code=50003)),
    ("src.node_lost", "node_failure", GCP_BATCH.format(why="VM is recreated during task execution", code=50006)),
    ("src.node_lost", "node_failure",
     "flux-job: job.exception type=node-failure severity=0 lost contact with job shell on tioga12 (shell rank 3)"),
    ("src.node_lost", "node_failure",
     "024 (5123.000.000) 2024-05-13 01:11:20 Job reconnection failed\n    Job not found at execution machine\n"
     "    Can not reconnect to slot1_3@wn-41.example.org, rescheduling job\n"),
    ("src.ray_node_died", "node_failure",
     "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
     "\tThe actor died because its node has died. Node Id: 3a9f0b\n"
     "\tthe actor's node was terminated unexpectedly: health check failed due to missing too many heartbeats\n"),
    # ---- network fabric
    ("src.ucx_cqe", "network_fabric",
     "[1718000000.123456] [gpu-a12:40112:0]   ib_mlx5_log.c:177  Local protection on mlx5_2:1/IB"
     " (synd 0x15 vend 0x81 hw_synd 0/0)\n"
     "[1718000000.123456] [gpu-a12:40112:0]   ib_mlx5_log.c:177  RC QP 0x1f2e wqe[311]: SEND s-e [inl len 84]\n"),
    ("src.ucx_cqe", "network_fabric",
     "[gpu-b3:7710:0:7722] ib_mlx5_log.c:171  Remote access on mlx5_0:1/RoCE (synd 0x13 vend 0x88 hw_synd 0/0)"),
    ("src.ucx_cqe", "network_fabric",
     "[1718000000.5] [gpu-c4:812:1]  ucp_ep.c:1504 UCX  DIAG  ep 0x7f10a2c4e0c0: error 'Endpoint timeout' on"
     " rc_mlx5/mlx5_1:1 will not be handled since no error callback is installed"),
    ("src.efa_error", "network_fabric",
     "libfabric:90211:1718000000::efa:cq:efa_rdm_txe_handle_error():702<warn> err: 113, message: Unreachable remote"
     " (113) My EFA addr: fi_addr_efa://[fe80::1]:0:1 Peer EFA addr: fi_addr_efa://[fe80::2]:0:2"),
    ("src.efa_error", "network_fabric",
     "libfabric:4410:1718000000::efa:cq:efa_rdm_rxe_handle_error():812<warn> err: 5, message: Remote unknown peer (21)"),
    # ---- NCCL's own words
    ("src.nccl_error", "nccl_comm",
     "gpu-d7: Test NCCL failure common.cu:1005 'unhandled system error (run with NCCL_DEBUG=INFO for details)'"),
    ("src.nccl_error", "nccl_comm",
     "gpu-d7:3301:3390 [2] NCCL WARN [Service thread] Error encountered progressing operation=Connect, res=3,"
     " closing connection"),
    ("src.nccl_error", "nccl_comm",
     "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: external/xla/xla/service/gpu/nccl_utils.cc:297:"
     " remote process exited or there was a network error"),
    ("src.nccl_error", "nccl_comm", "internal error - please report this issue to the NCCL developers"),
    ("src.nccl_error", "nccl_comm",
     "gpu-e2:5512:5601 [0] bootstrap.cc:87 NCCL WARN Message truncated : received 1024 bytes instead of 256"),
    ("src.nccl_error", "nccl_comm",
     "[rank3]:[E1003 18:37:01.8336 ProcessGroupNCCL.cpp:1709] [PG 0 (default_pg) Rank 3] Timeout at NCCL work: 912,"
     " last enqueued NCCL work: 913, last completed NCCL work: 911."),
    # ---- GPU hardware
    ("src.dcgm_health", "gpu_hardware", "Error: GPU 5 had uncorrectable memory errors and row remapping failed."),
    ("src.dcgm_health", "gpu_hardware", "GPU 2 had uncorrectable memory errors and 3 rows were remapped"),
    ("src.dcgm_health", "gpu_hardware", "Detected a miscompare failure in the L1 cache."),
    ("src.dcgm_health", "gpu_hardware", "NVSwitch 3's NvLink 17 is down."),
    ("src.dcgm_health", "gpu_hardware",
     "    Remapped Rows\n        Correctable Error                 : 0\n        Uncorrectable Error               : 2\n"
     "        Pending                           : No\n        Remapping Failure Occurred        : Yes\n"),
    # ---- storage
    ("src.object_store", "storage_io",
     "tensorflow.python.framework.errors_impl.UnavailableError: Error executing an HTTP request: HTTP response code"
     " 503 with body '{\"error\": {\"code\": 503}}'\n\t when reading gs://bucket-x/ckpt/model.ckpt-900.index"),
    ("src.object_store", "storage_io",
     "botocore.exceptions.ClientError: An error occurred (SlowDown) when calling the PutObject operation: Please"
     " reduce your request rate."),
    ("src.object_store", "storage_io",
     "google.api_core.exceptions.ServiceUnavailable: 503 GET https://storage.googleapis.com/download/storage/v1/b/"
     "bkt/o/shard-00017.tar?alt=media: We encountered an internal error. Please try again."),
    ("src.object_store", "storage_io",
     "[81234.5] Lustre: scratch-OST0007-osc-ffff9a: Connection to scratch-OST0007 (at 10.20.0.7@o2ib) was lost; in"
     " progress operations using this service will wait for recovery to complete"),
    ("src.k8s_disk_limit", "storage_io",
     "  Warning  Evicted  3m  kubelet  Pod ephemeral local storage usage exceeds the total limit of containers 8Gi."),
    ("src.k8s_disk_limit", "storage_io",
     "Status:  Failed\nReason:  Evicted\nMessage: Container trainer exceeded its local ephemeral storage limit \"20Gi\". \n"),
    ("src.k8s_disk_limit", "storage_io", "Message: Usage of EmptyDir volume \"scratch\" exceeds the limit \"64Gi\". "),
    ("src.hdf5_lock", "storage_io",
     "  File \"h5py/h5f.pyx\", line 102, in h5py.h5f.open\nBlockingIOError: [Errno 11] Unable to open file (unable to"
     " lock file, errno = 11, error message = 'Resource temporarily unavailable')"),
    ("src.sacct_boot_fail", "node_failure", "JobID|State|ExitCode\n881|BOOT_FAIL|0:0\n"),
    ("src.sacct_boot_fail", "node_failure", "   JobId=881 JobName=train\n   JobState=BOOT_FAIL Reason=NodeDown Dependency=(null)"),
    ("src.sacct_deadline", "timeout_walltime", "       882        train        gpu    acct1         8   DEADLINE      0:0 "),
    ("src.sacct_deadline", "timeout_walltime", "Job ID: 882\nState: DEADLINE (exit code 0)\n"),
    ("src.object_store", "storage_io",
     "botocore.exceptions.ReadTimeoutError: Read timeout on endpoint URL: "
     "\"https://bkt-train.s3.us-west-2.amazonaws.com/ckpt/step_4000/model.safetensors\""),
    ("src.object_store", "storage_io",
     "botocore.exceptions.EndpointConnectionError: Could not connect to the endpoint URL: "
     "\"https://s3.eu-central-1.amazonaws.com/data-bkt?list-type=2\""),
    # ---- cancellation
    ("src.cancelled", "cancelled_user", "STATUS: Failed\nMESSAGE: Stopped with strategy 'Terminate'\n"),
    ("src.cancelled", "cancelled_user",
     "srun: forcing job termination\nsrun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"),
    ("src.cancelled", "cancelled_user", "Exited with exit code 130.\nTERM_BUCKET_KILL: job killed with bkill -b\n"),
    ("src.elastic_signal", "cancelled_user",
     "W0616 00:44:57.731000 4026234 torch/distributed/elastic/agent/server/api.py:719] Received Signals.SIGTERM death"
     " signal, shutting down workers\nW0616 00:44:57.732000 4026234 torch/distributed/elastic/multiprocessing/api.py:900]"
     " Sending process 4026322 closing signal SIGTERM\n"),
    # ---- failure markers without a cause
    ("src.failed_marker", "unknown",
     "  Type:     Failed\n  Status:   True\n  Reason:   BackoffLimitExceeded\n"
     "  Message:  Job has reached the specified backoff limit\n"),
    ("src.failed_marker", "unknown", "TFJob default/mnist has failed because 2 Worker replica(s) failed."),
    ("src.failed_marker", "unknown",
     "------------------------------------------\nJob 'raysubmit_x1Y2' failed\n"
     "------------------------------------------\nStatus message: Job entrypoint command failed with exit code 1,"
     " last available logs (truncated to 20,000 chars):\n"),
    ("src.failed_marker", "unknown", "Job 'raysubmit_Q7w2' failed"),
    ("src.failed_marker", "unknown", "(task, pid=2210) hello\n\u2717 Job finished (status: FAILED).\n"),
    ("src.failed_marker", "unknown", "Name:         train-0\nNamespace:    ml\nStatus:       Failed\nIP:           10.4.0.17\n"),
    ("src.failed_marker", "unknown", "Exiting because a job execution failed. Look above for error message\n"),
    # ---- completion markers
    ("src.completed", "success",
     "[2025-01-02 03:04:05,678] torch.distributed.elastic.agent.server.api: [INFO] Done waiting for other agents."
     " Elapsed: 0.0012 seconds"),
    ("src.completed", "success",
     "Conditions:\n  Type           Status  Reason\n  SuccessCriteriaMet  True  CompletionsReached\n"
     "  Complete       True    CompletionsReached\n"),
    ("src.completed", "success", "job.batch/train-42 condition met"),
    ("src.completed", "success", "qname        gpu.q\nfailed       0    \nexit_status  0                   \n"),
    ("src.completed", "success", "[Tue Mar  4 10:11:12 2025]\nFinished job 0.\n17 of 17 steps (100%) done\n"
                                 "Complete log: .snakemake/log/2025-03-04T101010.snakemake.log\n"),
    ("src.completed", "success", "Name:                train-x7k2p\nNamespace:           argo\nStatus:              Succeeded\n"),
]


LOOKALIKES = [
    # A node shutdown the pod survived; a NotReady node is still node_failure's.
    ("src.preempted", "I0907 kubelet nodeshutdown_manager: Shutdown manager detected new shutdown event, isShuttingDown"),
    ("src.preempted", "Preemption is enabled for ClusterQueue team-a"),
    # An activeDeadlineSeconds setting is not the kill.
    ("src.timeout", "spec:\n  activeDeadlineSeconds: 3600\n"),
    ("src.timeout", "allowed_execute_duration = 72*3600"),
    # A Batch task that succeeded; exit codes other than the reserved ones.
    ("src.node_lost", "Task state is updated from RUNNING to SUCCEEDED on zones/us-east1-b/instances/vm-9."),
    ("src.node_lost", "022 (5123.000.000) 2024-05-13 01:10:20 Job disconnected, attempting to reconnect"),
    # UCX's flush of queued work after another error is not itself the fault.
    ("src.ucx_cqe", "ucp_ep.c:1504 UCX  DIAG  ep 0x7f: error 'Request canceled' on rc_mlx5/mlx5_0:1 will not be handled"
                    " since no error callback is installed"),
    ("src.ucx_cqe", "UCX  INFO  ep 0x7f: rc_mlx5/mlx5_0:1 connected (synd 0x0)"),
    # A libfabric debug line with no error code.
    ("src.efa_error", "libfabric:1:2::efa:cq:efa_rdm_cq_readfrom():300<debug> polled 12 completions"),
    # NCCL_DEBUG=INFO suggested in a README; an ordinary rank exit.
    ("src.nccl_error", "Tip: run with NCCL_DEBUG=INFO for details about your topology"),
    ("src.nccl_error", "remote process exited with code 0"),
    ("src.nccl_error", "gzip: stdin: unexpected end of file; message truncated"),
    # A healthy GPU in nvidia-smi -q; DCGM's passing summary.
    ("src.dcgm_health", "        Remapping Failure Occurred        : No\n"),
    ("src.dcgm_health", "GPU 3 had memory errors and row remappings are pending"),
    # A 404 is the job's own path, not the store failing.
    ("src.object_store", "Error executing an HTTP request: HTTP response code 404 with body 'Not Found'"),
    ("src.object_store", "An error occurred (NoSuchKey) when calling the GetObject operation: The specified key does"
                         " not exist."),
    ("src.object_store", "Lustre: scratch-OST0007-osc-ffff9a: Connection restored to scratch-OST0007 (at 10.20.0.7@o2ib)"),
    # The same botocore error from a non-storage endpoint.
    ("src.object_store", "Read timeout on endpoint URL: \"https://bedrock-runtime.us-east-1.amazonaws.com/model/x/invoke\""),
    # A TPU that is ready.
    ("src.preempted", "name: tpu-7\nstate: READY\n"),
    # Kubernetes' own limit settings; an HDF5 file that opened.
    ("src.k8s_disk_limit", "resources:\n  limits:\n    ephemeral-storage: 20Gi\n"),
    ("src.hdf5_lock", "HDF5_USE_FILE_LOCKING=FALSE set; opened /data/train.h5"),
    # A --deadline request; a node that booted.
    ("src.sacct_deadline", "sbatch --deadline=2025-01-01T00:00 train.sh"),
    ("src.sacct_boot_fail", "slurmd: Node gpu-7 booted, not BOOT_FAIL"),
    # An Argo workflow that is still running; a single Ctrl-C prompt.
    ("src.cancelled", "Workflow wf-9 is Running (strategy: Stop on failure)"),
    # A Job that set a backoff limit; a restarting (not failed) training job.
    ("src.failed_marker", "spec:\n  backoffLimit: 4\n"),
    ("src.failed_marker", "PyTorchJob ddp-1 is restarting because 1 Worker replica(s) failed."),
    ("src.failed_marker", "Job entrypoint command failed with exit code 0"),
    # Waiting has begun, not ended; a non-zero qacct exit status.
    ("src.completed", "Local worker group finished (WorkerState.FAILED). Waiting 300 seconds for other agents to finish"),
    ("src.completed", "exit_status  137\n"),
    ("src.completed", "timed out waiting for the condition on jobs/train-42"),
    ("src.completed", "16 of 17 steps (94%) done"),
    ("src.completed", "Exiting because a job execution failed. Look above for error message\n3 of 3 steps (100%) done\nx"),
    ("src.failed_marker", "Status:       Running"),
]


# ---- root cause over last line --------------------------------------------------------

def test_the_store_failing_beats_the_exception_it_raises() -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/opt/app/train.py", line 88, in save\n'
            "    blob.upload_from_filename(path)\n"
            "google.api_core.exceptions.ServiceUnavailable: 503 PUT https://storage.googleapis.com/upload/storage/v1/b/"
            "bkt/o?uploadType=resumable: Backend Error\n"
            "RuntimeError: checkpoint upload failed\n")
    assert cls(text).category == "storage_io"


def test_a_node_shutdown_beats_the_sigterm_fallout_after_it() -> None:
    text = ("Reason:       Terminated\nMessage:      Pod was terminated in response to imminent node shutdown.\n"
            "torch.distributed.elastic.multiprocessing.api.SignalException: Process 41 got signal: 15\n")
    assert cls(text).category == "preempted"


def test_the_schedulers_time_limit_beats_the_agents_sigterm() -> None:
    text = ("slurmstepd: error: *** STEP 77.0 ON gpu-3 CANCELLED AT 2025-01-01T00:00:00 DUE TO TIME LIMIT ***\n"
            "[WARNING] Received Signals.SIGTERM death signal, shutting down workers\n")
    assert cls(text).category == "timeout_walltime"


def test_preempted_ray_node_is_preemption_not_node_failure() -> None:
    text = ("\tThe actor died because its node has died. Node Id: 11aa\n"
            "\tthe actor's node was preempted: spot instance reclaimed\n")
    assert cls(text).category == "preempted"


def test_a_failure_marker_keeps_a_completion_line_from_reading_as_success() -> None:
    text = ("[INFO] Done waiting for other agents. Elapsed: 0.001 seconds\n"
            "  Reason:   BackoffLimitExceeded\n")
    assert cls(text).category == "unknown"


def test_an_earlier_crash_beats_the_nccl_error_it_causes() -> None:
    # One rank's own bug took the job down; NCCL's remote error on the others is fallout.
    text = ("[rank1]: IndexError: index 8 is out of bounds for dimension 0 with size 8\n"
            "[rank0]: RuntimeError: NCCL communicator was aborted: remote process exited or there was a network error\n")
    assert cls(text).category == "software_exception"
