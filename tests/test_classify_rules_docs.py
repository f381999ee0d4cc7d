"""Rules written from documented message families (gcm_checks/classify/rules_docs.py).

Every row is written from the format the tool's own documentation or source
prints (hosts, ids, paths and numbers made up), never copied from a corpus
excerpt: these rows test that the rule knows the *family*, so a log nobody
here has seen is recognised when it uses the documented words.
"""

from __future__ import annotations

from typing import Optional

import pytest

from gcm_checks.classify import ClassifyInput, LogText, classify
from gcm_checks.classify.rules_docs import DOC_RULES
from classify_cases import cls  # noqa: E402 - tests/classify_cases.py


CASES = [
    # ---- time limits
    ("doc.timeout", "timeout_walltime", "job 4711.1 exceeded hard wallclock time - initiate terminate method"),
    ("doc.timeout", "timeout_walltime", "flux-job: job.exception type=timeout severity=0 resource allocation expired"),
    ("doc.timeout", "timeout_walltime",
     "  - type: Failed\n    reason: DeadlineExceeded\n    message: Job was active longer than specified deadline"),
    ("doc.timeout", "timeout_walltime", "Job 881 terminated: walltime exceeded"),
    ("doc.timeout", "timeout_walltime", "ERROR: the job exceeded its requested wall-time limit and was killed"),
    # ---- preemption
    ("doc.preempted", "preempted", "Normal  Preempted  12s  default-scheduler  Preempted by a pod on node gpu-node-7"),
    ("doc.preempted", "preempted", "Normal  Preempted  3m  default-scheduler  Preempted by team-a/trainer-0 on node n4"),
    ("doc.preempted", "preempted",
     "- type: DisruptionTarget\n  status: \"True\"\n  reason: PreemptionByKubeScheduler"),
    ("doc.preempted", "preempted", "004 (1234.000.000) 2024-03-01 10:11:12 Job was evicted.\n\t(0) Job was not checkpointed."),
    ("doc.preempted", "preempted", '{"EventId": "A1B2", "EventType": "Preempt", "ResourceType": "VirtualMachine"}'),
    ("doc.preempted", "preempted", "Managed job 7 (status: RECOVERING)"),
    ("doc.preempted", "preempted", "State transition reason: Server.SpotInstanceTermination: Spot instance termination"),
    ("doc.preempted", "preempted", "[rank0] Preemption detected, saving a checkpoint before exit"),
    # ---- cancellation
    ("doc.cancelled", "cancelled_user", "009 (1234.000.000) 2024-03-01 10:11:12 Job was aborted.\n\tvia condor_rm (by user alice)"),
    ("doc.cancelled", "cancelled_user", "alice has registered the job 8812 for deletion"),
    ("doc.cancelled", "cancelled_user", "flux-job: job.exception type=cancel severity=0"),
    ("doc.cancelled", "cancelled_user", "srun: job 77 queued and waiting for resources\n^Csrun: Cancelled pending job allocation"),
    ("doc.cancelled", "cancelled_user", "scancel: Terminating job 5512"),
    ("doc.cancelled", "cancelled_user", "Job <5512> is being terminated"),
    ("doc.cancelled", "cancelled_user", "ray.exceptions.TaskCancelledError: Task: TaskID(16310a0f0a45af5cffffffffffffffffffffffff01000000) was cancelled."),
    # ---- completion markers
    ("doc.completed", "success", "005 (1234.000.000) 2024-03-01 10:11:12 Job terminated.\n\t(1) Normal termination (return value 0)"),
    ("doc.completed", "success", "Execution terminated\nExit_status=0\nresources_used.walltime=01:02:03"),
    ("doc.completed", "success", "    State:          Terminated\n      Reason:       Completed\n      Exit Code:    0"),
    ("doc.completed", "success",
     "INFO:torch.distributed.elastic.agent.server.api:Local worker group finished (WorkerState.SUCCEEDED). "
     "Waiting 300 seconds for other agents to finish"),
    ("doc.completed", "success", "***** eval metrics *****\n  epoch = 3.0\n  eval_loss = 0.412"),
    ("doc.completed", "success", "INFO:tensorflow:Loss for final step: 0.0213."),
    ("doc.completed", "success", "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 182.4 \n#"),
    # ---- network fabric
    ("doc.fabric", "network_fabric",
     "The InfiniBand retry count between two MPI processes has been\nexceeded.  \"Retry count\" is defined in the InfiniBand spec"),
    ("doc.fabric", "network_fabric",
     "[[123,1],0][btl_openib_component.c:3000:handle_wc] from n1 to: n2 error polling LP CQ with status "
     "RETRY EXCEEDED ERROR status number 12 for wr_id 1a2b opcode 2  vendor error 129 qp_idx 3"),
    ("doc.fabric", "network_fabric",
     "MPICH ERROR [Rank 12] [job id 99] [Mon Jan  1 00:00:00 2024] [nid001] - Abort(404): Fatal error in PMPI_Allreduce:"
     " Other MPI error, error stack:\nMPIDI_OFI_handle_cq_error(1062): OFI poll failed (ofi_events.c:1064:"
     "MPIDI_OFI_handle_cq_error:Input/output error)"),
    ("doc.fabric", "network_fabric", "mlx5_core 0000:5e:00.0: poll_health:800:(pid 0): Fatal error 1 detected"),
    ("doc.fabric", "network_fabric", "mlx5_core 0000:5e:00.0: mlx5_health_try_recover:310:(pid 9): device's health compromised - reached miss count"),
    ("doc.fabric", "network_fabric", "NETDEV WATCHDOG: ib0 (mlx5_core): transmit queue 3 timed out"),
    ("doc.fabric", "network_fabric", "ixgbe 0000:03:00.0 eth2: NIC Link is Down"),
    ("doc.mpi_tcp", "network_fabric",
     "[n3][[1234,1],5][btl_tcp_frag.c:241:mca_btl_tcp_frag_recv] mca_btl_tcp_frag_recv: readv failed: Connection reset by peer (104)"),
    ("doc.mpi_tcp", "network_fabric",
     "[n3][[1234,1],5][btl_tcp_endpoint.c:626:mca_btl_tcp_endpoint_complete_connect] connect() to 10.0.0.2 failed: No route to host (113)"),
    ("doc.fabric", "network_fabric", "hfi1_0: 12345 link down, reason: link error"),
    ("doc.fabric", "network_fabric", "CA 'mlx5_2'\n\tPort 1:\n\t\tState: Down\n\t\tPhysical state: Polling"),
    # ---- node failure
    ("doc.node_lost", "node_failure",
     "=>> PBS: job killed: node 1 (n042) requested job terminate, 'EOF' (code 1099) - received SISTER_EOF "
     "attempting to communicate with sister MOM's"),
    ("doc.node_lost", "node_failure", "error: Nodes gpu017 not responding, setting DOWN"),
    ("doc.node_lost", "node_failure", "Job <4411> exited: TERM_REMOVE_HUNG_JOB: job removed from the LSF system"),
    ("doc.node_lost", "node_failure", "  - type: DisruptionTarget\n    reason: DeletionByTaintManager"),
    ("doc.node_lost", "node_failure", "Kernel panic - not syncing: Fatal exception in interrupt"),
    ("doc.node_lost", "node_failure",
     "srun: error: Task launch for StepId=1234.0 failed on node gpu3: Communication connection failure"),
    # ---- environment
    ("doc.env", "import_env",
     "A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.1 as it may crash. To support both 1.x and 2.x"),
    ("doc.env", "import_env", "ValueError: numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, got 88 from PyObject"),
    ("doc.env", "import_env", "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain."),
    ("doc.env", "import_env", "jax.errors: INTERNAL: CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel binary for this device"),
    ("doc.env", "import_env", "Check failed: error == cudaSuccess (35 vs. 0)  cudaErrorInsufficientDriver"),
    ("doc.env", "import_env", "nvcc fatal   : Unsupported gpu architecture 'compute_90'"),
    ("doc.env", "import_env", "#error -- unsupported GNU version! gcc versions later than 11 are not supported!"),
    ("doc.env", "import_env", "Failed to initialize NVML: Driver/library version mismatch"),
    ("doc.env", "import_env", "INTEL MKL ERROR: libmkl_avx2.so: cannot read\nIntel MKL FATAL ERROR: Cannot load libmkl_avx2.so or libmkl_def.so."),
    ("doc.env", "import_env", "EnvironmentNameNotFound: Could not find conda environment: train-env"),
    ("doc.env", "import_env", "  Warning  Failed     12s   kubelet  Error: ErrImagePull"),
    ("doc.env", "import_env", "docker: Error response from daemon: failed to create task for container: unknown."),
    ("doc.env", "import_env", "FATAL:   While making image from oci registry: error fetching image to cache"),
    ("doc.env", "import_env", "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4"),
    ("doc.env", "import_env", "ERROR: Cannot install torch==2.1.0 because these package versions have conflicting dependencies.\nERROR: ResolutionImpossible: for help visit https://pip.pypa.io"),
    ("doc.env", "import_env", "ERROR: Package 'mylib' requires a different Python: 3.8.10 not in '>=3.9'"),
    ("doc.env", "import_env", "RuntimeError: Ninja is required to load C++ extensions"),
    ("doc.env", "import_env", "/usr/bin/ld: cannot find -lcudart"),
    ("doc.env", "import_env", "/bin/bash^M: bad interpreter: No such file or directory"),
    ("doc.env", "import_env", "exec /usr/local/bin/train: exec format error"),
    ("doc.env", "import_env", "Unable to load any of {libcudnn_cnn.so.9.1.0, libcudnn_cnn.so.9.1, libcudnn_cnn.so.9, libcudnn_cnn.so}"),
    ("doc.env", "import_env", "RuntimeError: FlashAttention only supports Ampere GPUs or newer."),
    ("doc.env", "import_env", "csrc/ops.cu:3:10: fatal error: cuda_fp8.h: No such file or directory"),
    ("doc.env", "import_env", "error: Microsoft Visual C++ 14.0 or greater is required. Get it with \"Microsoft C++ Build Tools\""),
    ("doc.env", "import_env", "ValueError: Tokenizer class Qwen2Tokenizer does not exist or is not currently imported."),
    ("doc.env", "import_env", "/bin/sh: 1: deepspeed: not found"),
    ("doc.env_module_attr", "import_env", "AttributeError: module 'numpy' has no attribute 'float'."),
    ("doc.fabric_setup", "network_fabric",
     "mlx5_core 0000:b8:00.0: mlx5_cmd_out_err:838:(pid 0): CREATE_QP(0x500) op_mod(0x0) failed, status bad resource state(0x9)"),
    ("doc.fabric_setup", "network_fabric", "node7.12345PSM2 can't open hfi unit: -1 (err=23)"),
    ("doc.fabric_setup", "network_fabric",
     "libfabric:4242:1700000000::efa:cq:efa_rdm_cq_poll_ibv_cq():420<warn> Error: remote access error (15)"),
    ("doc.sacct_cancelled", "cancelled_user", "Job ID: 9911\nState: CANCELLED (exit code 0)\nNodes: 1"),
    ("doc.sacct_cancelled", "cancelled_user", "       JobID    JobName      State ExitCode\n        9911      train CANCELLED+      0:0\n  9911.batch      batch  CANCELLED     0:15"),
    ("doc.sacct_cancelled", "cancelled_user", "JobId=9911 JobName=train\n   JobState=CANCELLED Reason=None Dependency=(null)"),
    ("doc.sacct_preempted", "preempted", "       JobID    JobName      State ExitCode\n        9912      train  PREEMPTED      0:0"),
    ("doc.failed_state", "unknown",
     "JobID|State|ExitCode\n9913|FAILED|1:0\n9913.batch|FAILED|1:0\n9913.extern|COMPLETED|0:0"),
    ("doc.failed_state", "unknown", "Execution terminated\nExit_status=1"),
    ("doc.failed_state", "unknown", "{'train_runtime': 10.0}\nExited with exit code 2."),
    ("doc.failed_state", "unknown", "005 (77.000.000) Job terminated.\n\t(1) Normal termination (return value 1)"),
    ("doc.fabric", "network_fabric",
     "[gpu3:mpi_rank_0][async_thread] src/mpid/ch3/channels/mrail/src/gen2/ibv_channel_manager.c:1100: Got FATAL event 3"),
    ("doc.fabric", "network_fabric", "[n1:mpi_rank_2][handle_cqe] Send desc error in msg to 3, wc_opcode=0\n"
     "[n1:mpi_rank_2][handle_cqe] Msg from 3: wc.status=12, wc.wr_id=0x1, wc.opcode=0, vbuf->phead->type=24"),
    ("doc.fabric", "network_fabric", " Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81"),
    ("doc.fabric", "network_fabric", "hca_id:\tmlx5_1\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_DOWN (1)"),
    ("doc.fabric", "network_fabric", "mlx5_core 0000:3b:00.0: mlx5_fw_fatal_reporter_err_work:690:(pid 12): Driver is in error state. Unloading"),
    ("doc.env", "import_env", "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before"
     " calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility was attempted on non supported HW"),
    ("doc.env", "import_env", "CUDA initialization: Error 803: system has unsupported display driver / cuda driver combination"),
    ("doc.env", "import_env", "ptxas fatal   : Value 'sm_90a' is not defined for option 'gpu-name'"),
    ("doc.env", "import_env", "OSError: [WinError 126] The specified module could not be found. Error loading \"c10.dll\""),
    ("doc.env", "import_env", "CondaError: Run 'conda init' before 'conda activate'"),
    ("doc.completed", "success", "[d2.engine.hooks]: Overall training speed: 89998 iterations in 9:51:12 (0.3943 s / it)\n"
     "[d2.engine.hooks]: Total training time: 9:58:01 (0:06:49 on hooks)"),
    ("doc.completed", "success", "100 epochs completed in 2.345 hours.\nOptimizer stripped from runs/train/exp/weights/last.pt"),
    ("doc.completed", "success", "Validating runs/detect/train/weights/best.pt...\nResults saved to runs/detect/train"),
    ("doc.completed", "success", "\u250f\u2501\u2501\u2513\n\u2503        Test metric        \u2503       DataLoader 0        \u2503\n"
     "\u2502         test_acc          \u2502    0.9123    \u2502"),
    ("doc.completed", "success", "|  Tasks  |Version|Filter|n-shot| Metric |   |Value |   |Stderr|\n|---------|------:|------|-----:|--------|---|-----:|"),
    ("doc.completed", "success", "Total run time: 812.31 seconds (811.90 seconds for the tuning loop)."),
    ("doc.slurm_mail.completed", "success", "Subject: Slurm Job_id=4242 Name=train Ended, Run time 10:01:02, COMPLETED, ExitCode 0"),
    ("doc.slurm_mail.timeout", "timeout_walltime", "Slurm Job_id=4242 Name=train Ended, Run time 1-00:00:13, TIMEOUT, ExitCode 0"),
    ("doc.slurm_mail.preempted", "preempted", "Slurm Job_id=4242 Name=train Ended, Run time 02:00:00, PREEMPTED, ExitCode 0"),
    ("doc.slurm_mail.cancelled", "cancelled_user", "Slurm Job_id=4242 Name=train Ended, Run time 00:12:40, CANCELLED, ExitCode 0"),
    ("doc.slurm_mail.out_of_memory", "host_oom", "Slurm Job_id=4242 Name=train Failed, Run time 00:42:00, OUT_OF_MEMORY, ExitCode 0"),
    ("slurm.node_failure", "node_failure", "Slurm Job_id=4242 Name=train Failed, Run time 03:10:00, NODE_FAIL, ExitCode 0"),
    ("doc.failed_state", "unknown", "Slurm Job_id=4242 Name=train Failed, Run time 00:00:09, FAILED, ExitCode 1"),
    ("doc.timeout", "timeout_walltime", "=>> job 4242.pbs01 exceeded its walltime and was terminated"),
    ("doc.timeout", "timeout_walltime", "ERROR: Time limit exceeded, the job was stopped by the batch system"),
    ("doc.gpu_oom", "gpu_oom",
     "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to allocate 1.20GiB: CUDA_ERROR_OUT_OF_MEMORY: out of memory"),
    ("doc.gpu_oom", "gpu_oom", "cupy.cuda.memory.OutOfMemory...\ncudaMalloc failed: out of memory"),
    ("doc.host_oom", "host_oom",
     "012 (88.000.000) Job was held.\n\tError from slot1@n4: Job has gone over cgroup memory limit of 4096 megabytes."),
    ("doc.host_oom", "host_oom",
     'job 991.1 exceeds job hard limit "h_vmem" of queue "all.q@n1" (4.3e9 > limit:4.2e9) - sending SIGKILL'),
    ("doc.numeric", "numeric_divergence",
     "tensorflow.python.framework.errors_impl.InvalidArgumentError:  gradients/loss : Tensor had NaN values"),
    ("doc.numeric", "numeric_divergence", "InvalidArgumentError: Nan in summary histogram for: dense/kernel_0"),
    ("doc.node_daemon", "node_failure",
     "An ORTE daemon has unexpectedly failed after launch and before\ncommunicating back to mpirun."),
    ("doc.env_arch_hint", "import_env",
     "UserWarning: NVIDIA H100 80GB HBM3 with CUDA capability sm_90 is not compatible with the current PyTorch installation."),
]


def test_every_documented_rule_has_a_case() -> None:
    covered = {c[0] for c in CASES}
    assert [r.id for r in DOC_RULES if r.id not in covered] == []


@pytest.mark.parametrize("text", [
    # srun stopping the other tasks of a step after one failed is not a cancel.
    "srun: error: n1: task 0: Killed\nsrun: Force Terminated StepId=120.0",
    # gRPC's deadline in a TF/JAX error is not a Kubernetes Job deadline.
    "tensorflow.python.framework.errors_impl.DeadlineExceededError: Barrier timed out",
    # Words that only look like the documented ones.
    "Reason: Completed the warmup phase",
    "# Avg bus bandwidth    : N/A",
    "INFO: Physical state: LinkUp",
    "the scheduler was not preempted by any pod",
    # A step row of a timed-out job is not the job being cancelled.
    "9914.batch|batch|CANCELLED|0:15",
    # PBS mail: the server aborted the job (a limit, not a user).
    "PBS Job Id: 12.pbs\nAborted by PBS Server\nJob was aborted",
])
def test_lookalikes_are_not_the_documented_message(text: str) -> None:
    r = cls(text)
    assert r.rule not in {x.id for x in DOC_RULES}, (text, r.rule)


def test_completion_marker_loses_to_a_failure_in_the_same_log() -> None:
    text = ("***** eval metrics *****\n  eval_loss = 0.4\n"
            "OSError: [Errno 122] Disk quota exceeded: 'out/checkpoint-500/optimizer.pt'")
    assert cls(text).category == "storage_io"


def test_arch_hint_never_outranks_a_completion_marker_or_a_real_error() -> None:
    warn = "UserWarning: NVIDIA H100 with CUDA capability sm_90 is not compatible with the current PyTorch installation.\n"
    assert cls(warn + "{'train_runtime': 12.0}").category == "success"
    assert cls(warn + "RuntimeError: CUDA error: no kernel image is available for execution on the device").rule \
        == "env.cuda_mismatch"


# ---- item 3: NVSwitch SXids read by gcm_checks.xid.sxid, dominating their fallout ------

FATAL_SXID = "nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 30 LTSSM Fault Up"
NONFATAL_SXID = "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 20001, Non-fatal, Link 12 TX replay error"
STALL_SXID = "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)"
DETAIL_SXID = "nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Severity 1 Engine instance 60 Sub-engine instance 00"
IGNORABLE_SXID = "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 11012, Non-fatal, Single bit ECC error"


@pytest.mark.parametrize("source", ["kernel", "stderr"])
def test_fatal_sxid_beats_the_nccl_and_cuda_errors_it_causes(source: str) -> None:
    later = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error"
             " (run with NCCL_DEBUG=INFO for details)\nRuntimeError: CUDA error: an illegal memory access was encountered")
    r = classify(ClassifyInput(logs=[LogText(source, FATAL_SXID), LogText("stderr", later)]))
    assert (r.category, r.rule) == ("gpu_hardware", "kernel.nvswitch_sxid"), r.sentence
    assert r.confidence >= 0.9 and "SXid 20034" in r.sentence


def test_non_fatal_sxid_is_only_a_hint() -> None:
    alone = cls(NONFATAL_SXID, source="kernel")
    assert (alone.category, alone.rule) == ("gpu_hardware", "kernel.nvswitch_sxid.nonfatal")
    assert alone.confidence < 0.5
    # The job's own error is the cause; the non-fatal switch error hurt nobody.
    r = classify(ClassifyInput(logs=[LogText("kernel", NONFATAL_SXID),
                                     LogText("stderr", "ValueError: expected 3 channels, got 4")]))
    assert r.category == "software_exception"


def test_non_fatal_sxid_that_stalls_nvlink_still_beats_the_cuda_error() -> None:
    # Fabric Manager guide: 12028 is non-fatal for the switch, but the port's NVLink
    # traffic stalls and CUDA jobs abort with XID 45.
    r = classify(ClassifyInput(logs=[LogText("kernel", STALL_SXID), LogText(
        "stderr", "RuntimeError: CUDA error: an illegal memory access was encountered")]))
    assert (r.category, r.rule) == ("gpu_hardware", "kernel.nvswitch_sxid.stall")


def test_a_bare_sxid_mention_is_judged_by_the_catalogue() -> None:
    # Fabric Manager guide: 20034 (LTSSM fault) is fatal; 99999 is no SXid we know.
    assert cls("dcgm health: NVSwitch SXid 20034 on switch 2").rule == "kernel.nvswitch_sxid"
    assert cls("dcgm health: NVSwitch SXid 99999 on switch 2").category == "unknown"


@pytest.mark.parametrize("line", [DETAIL_SXID, IGNORABLE_SXID])
def test_register_detail_and_ignorable_sxids_are_not_evidence(line: str) -> None:
    r: Optional[object] = cls(line, source="kernel")
    assert r.category == "unknown"  # type: ignore[attr-defined]


def test_classifier_and_xid_package_agree_on_every_sxid_verdict() -> None:
    from gcm_checks.xid.sxid import assess, parse_sxid

    for line in (FATAL_SXID, NONFATAL_SXID, STALL_SXID, DETAIL_SXID, IGNORABLE_SXID):
        p = parse_sxid(line)
        sev = assess(p).severity if p else None
        r = cls(line, source="kernel")
        assert (r.rule == "kernel.nvswitch_sxid") == (sev == "fail"), line
        assert r.rule.startswith("kernel.nvswitch_sxid.") == (sev == "warn"), line


# ---- item 2: a completion marker counts only when no failure marker is in the log --------

@pytest.mark.parametrize("text", [
    "{'train_runtime': 1.0}\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError:\ntrain.py FAILED",
    "Training completed. Do not forget to share your model\nsrun: error: n1: task 0: Exited with exit code 1",
    "JobID|State|ExitCode\n77|FAILED|2:0\n77.extern|COMPLETED|0:0",
    # kubectl describe: the init container completed, the trainer did not.
    "Init Containers:\n  fetch:\n    State:          Terminated\n      Reason:       Completed\n      Exit Code:    0\n"
    "Containers:\n  trainer:\n    State:          Terminated\n      Reason:       Error\n      Exit Code:    1",
])
def test_completion_marker_with_a_failure_marker_is_not_success(text: str) -> None:
    r = cls(text)
    assert r.category == "unknown" and r.confidence <= 0.3, r.rule


def test_a_weak_hint_still_beats_a_bare_failure_marker_after_a_completion_marker() -> None:
    text = ("Training completed.\nUserWarning: No space left on device while writing the trace\n"
            "srun: error: n1: task 0: Exited with exit code 1")
    assert cls(text).category == "storage_io"
