"""Issue 14's rules and defaults, one table row per behaviour (real message formats)."""

from __future__ import annotations

import pytest

from gcm_checks.classify import ClassifyInput, LogText, classify
from classify_cases import cls  # noqa: E402 - tests/classify_cases.py


# ---- item 2: honest defaults -------------------------------------------------------

def test_no_failure_marker_and_no_exit_data_is_unknown_not_success() -> None:
    r = cls("Epoch 3: 100%|##########| 500/500 [02:01<00:00, loss=0.213]\nsaving model to out/\n")
    assert (r.category, r.rule) == ("unknown", "fallback.no_evidence") and r.confidence <= 0.2


@pytest.mark.parametrize("text", [
    "{'train_runtime': 896.0, 'train_samples_per_second': 1.1}",
    "`Trainer.fit` stopped: `max_epochs=1` reached.",
    "Job ID: 64626\nState: COMPLETED (exit code 0)\nNodes: 2",
    "Successfully completed.\n\nResource usage summary:",
    "============ Serving Benchmark Result ============\nSuccessful requests:                     1000",
])
def test_success_needs_an_explicit_completion_marker(text: str) -> None:
    assert cls(text).category == "success"


def test_exit_zero_alone_is_success_and_completion_then_failure_exit_is_not() -> None:
    assert classify(ClassifyInput(exit_code=0)).category == "success"
    assert cls("{'train_runtime': 896.0}", exit_code=1).category == "unknown"


def test_an_exception_after_the_completion_marker_wins() -> None:
    r = cls("`Trainer.fit` stopped: `max_steps=100` reached.\n"
            "pytorch_lightning.utilities.exceptions.MisconfigurationException: No `test_dataloader()` method defined")
    assert r.category == "software_exception"


# ---- item 3: root cause over last line ---------------------------------------------

@pytest.mark.parametrize("hw_line", [
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
    "NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)",
    "nvidia-nvswitch3: SXid (PCI:0000:c7:00.0): 12028, Non-fatal, Link 33 egress non-posted PRIV error",
    "[74889.542184] pcieport 0000:00:02.0:    [ 5] Surprise Down Error    (First)",
])
def test_hardware_evidence_beats_the_cuda_error_it_causes(hw_line: str) -> None:
    r = cls(hw_line + "\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error")
    assert r.category == "gpu_hardware", r.rule


def test_first_fatal_error_beats_the_later_watchdog_and_child_failed() -> None:
    r = cls("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
            "[rank0]:[E ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.\n"
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n")
    assert r.category == "gpu_oom"


def test_nccl_debug_info_inside_a_real_error_does_not_hide_it() -> None:
    r = cls("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
            "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3")
    assert r.category == "nccl_comm"


def test_informational_lines_still_do_not_match() -> None:
    assert cls("node1:23:23 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: "
               "cannot open shared object file").category == "unknown"


# ---- item 4: signals and shells ------------------------------------------------------

@pytest.mark.parametrize("text", [
    "/var/spool/slurmd/job42/slurm_script: line 14: 31337 Killed                  python train.py",
    "Killed",
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 9) of binary: python",
    "Training task exit with status code 137",
])
def test_sigkill_alone_is_host_oom_at_moderate_confidence(text: str) -> None:
    r = cls(text)
    assert r.category == "host_oom" and 0.4 <= r.confidence < 0.8, (r.rule, r.confidence)


def test_kernel_oom_killer_line_confirms_with_high_confidence() -> None:
    r = classify(ClassifyInput(logs=[
        LogText("stderr", "Killed"),
        LogText("kernel", "Out of memory: Killed process 1440763 (python) total-vm:87033376kB")]))
    assert r.category == "host_oom" and r.confidence >= 0.8


def test_sigterm_is_cancel_unless_a_time_limit_says_why() -> None:
    assert cls("getting output:  20% (117/558) [#      ] eta 28:34:54 \\Terminated").category == "cancelled_user"
    assert classify(ClassifyInput(signal=15)).category == "cancelled_user"
    r = cls("slurmstepd: error: *** STEP 5.0 ON n1 CANCELLED AT 2025-01-10T15:27:25 DUE TO TIME LIMIT ***\n"
            "[rank: 0] Received SIGTERM: 15\nTerminated")
    assert r.category == "timeout_walltime"
    assert classify(ClassifyInput(state="TIMEOUT", signal=15)).category == "timeout_walltime"


def test_srun_terminating_its_other_tasks_is_not_a_cancel() -> None:
    r = cls("error: *** STEP 5.0 ON nid1 CANCELLED AT 2026-04-29T23:36:37 DUE TO TASK FAILURE ***\n"
            "srun: error: nid1: tasks 0-57,59-63: Terminated")
    assert r.category == "unknown"


# ---- other schedulers, launchers, accelerators ------------------------------------------

@pytest.mark.parametrize("text,category", [
    ("=>> PBS: job killed: walltime 86415 exceeded limit 86400", "timeout_walltime"),
    ("=>> PBS: job killed: mem 38427376kb exceeded limit 33554432kb", "host_oom"),
    ("=>> PBS: job killed: vmem 3372163072 exceeded limit 2147483648", "host_oom"),
    ("MOAB_INFO:  job exceeded wallclock limit", "timeout_walltime"),
    ("job deleted\nJob deleted at request of root@sched\njob preempted (node failure)", "node_failure"),
    ("TERM_RUNLIMIT: job killed after reaching LSF run time limit.\nExited with exit code 140.", "timeout_walltime"),
    ("TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.\nExited with exit code 130.", "host_oom"),
    ("    Last State: Terminated\n      Reason: OOMKilled\n      Exit Code: 137", "host_oom"),
    ("Status: Failed\nReason: Evicted\nMessage: The node was low on resource: memory.", "host_oom"),
    ("Message: The node was low on resource: ephemeral-storage. Container w was using 7Ki", "storage_io"),
    ("message: 'Preempted to accommodate a workload (UID: 9f54) due to prioritization in the ClusterQueue'",
     "preempted"),
    ("start-worker 2024/12/17 16:03:58 GCP Metadata Service says termination is imminent", "preempted"),
    ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.", "host_oom"),
    ("The node with node id: 75b2 and ip: 10.4.4.107 has been marked dead because the detector has missed too "
     "many heartbeats from it.", "node_failure"),
    ("I 09-12 22:49:49 controller.py:545] Cluster is preempted or failed. Recovering...", "preempted"),
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory "
     "in memory space hbm. Used 21.95G of 15.48G hbm.", "gpu_oom"),
    ("F0304 14:26:21.611594  4889 syncedmem.cpp:71] Check failed: error == cudaSuccess (2 vs. 0)  out of memory\n"
     "*** Check failure stack trace: ***\nAborted (core dumped)", "gpu_oom"),
    ("F0612 12:24:45.417707  7096 routing.cc:1462] Check failed: pickup < size (49 vs. 5)\n"
     "*** Check failure stack trace: ***\nAborted (core dumped)", "software_exception"),
    ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`", "gpu_oom"),
    ("salloc: error: Node failure on worker-1", "node_failure"),
    ("salloc: Prolog failure on node k003-006\nsalloc: Job allocation 235454 has been revoked.", "node_failure"),
    ("ERROR: Unexpected segmentation fault encountered in worker.", "segfault_signal"),
    ("Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 1.4582244039112795e-303",
     "numeric_divergence"),
    ("CommandNotFoundError: Your shell has not been properly configured to use 'conda activate'.", "import_env"),
    ("RuntimeError: Error(s) in loading state_dict for ResNet:\n\tsize mismatch for fc.weight: copying a param "
     "with shape torch.Size([10, 512]) from checkpoint, the shape in current model is torch.Size([1000, 512]).",
     "software_exception"),
])
def test_other_systems(text: str, category: str) -> None:
    r = cls(text)
    assert r.category == category, (r.rule, r.evidence)


# ---- PermissionError: whose path --------------------------------------------------------

@pytest.mark.parametrize("text,category", [
    ("PermissionError: [Errno 13] Permission denied: './ckpt/checkpoint'", "data_input"),
    ("PermissionError: [Errno 13] Permission denied: '/tmp/torch_extensions/inplace_abn'", "import_env"),
    ("OSError: [Errno 30] Read-only file system: '/data/out/model.pt'", "storage_io"),
    ("OSError: [Errno 116] Stale file handle", "storage_io"),
    ("OSError: [Errno 122] Disk quota exceeded", "storage_io"),
])
def test_permission_error_is_the_users_path_unless_the_filesystem_refused(text: str, category: str) -> None:
    assert cls(text).category == category


# ---- the cross-log cache never changes an answer ------------------------------------------

def test_digit_blind_line_cache_does_not_hide_a_digit_keyword() -> None:
    assert cls("Training task exit with status code 0").category == "unknown"
    assert cls("Training task exit with status code 137").category == "host_oom"


def test_same_text_same_answer_cold_and_warm() -> None:
    from gcm_checks.classify import scan

    text = "step 1 loss 2.0\nINFO ready\ntorch.OutOfMemoryError: CUDA out of memory.\n"
    scan._BENIGN.clear()
    cold = cls(text)
    warm = cls(text)
    assert (cold.category, cold.rule, cold.confidence) == (warm.category, warm.rule, warm.confidence) == (
        "gpu_oom", "cuda.oom", cold.confidence)


def test_recurring_line_class_still_finds_a_keyword_its_first_lines_lacked() -> None:
    # Same digit/blank-blind key; only the second spells "out of memory". Once the
    # class has recurred, scan.py checks it with "in" tests instead of the trie:
    # those must still find the keyword (the cache narrows, never decides).
    from gcm_checks.classify import scan

    broken = "RuntimeError: CUDA outof memory. Tried to allocate 20 MiB"
    spelled = "RuntimeError: CUDA out of memory. Tried to allocate 20 MiB"
    scan._BENIGN.clear()
    scan._KEYWORD_CLASSES.clear()
    cold = cls(spelled)
    scan._KEYWORD_CLASSES.clear()
    for _ in range(3):
        assert cls(broken).rule == "py.exception"
    assert scan._KEYWORD_CLASSES  # the class is now checked without the trie
    warm = cls(spelled)
    assert (cold.category, cold.rule) == (warm.category, warm.rule) == ("gpu_oom", "cuda.oom")


def test_nccl_error_after_another_ranks_crash_is_fallout() -> None:
    r = cls("[rank1]: Fatal Python error: Segmentation fault\n"
            "[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
            "remote process exited or there was a network error, NCCL version 2.21.5")
    assert r.category == "segfault_signal", r.rule
    # Alone, the NCCL error is the answer.
    assert cls("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited"
               ).category == "nccl_comm"


@pytest.mark.parametrize("text,category", [
    ("[2023-07-20 15:45:13,980] [INFO] [launch.py:347:main] Process 3966 exits successfully.", "success"),
    ("INFO:torch.distributed.elastic.agent.server.api:[default] worker group successfully finished. "
     "Waiting 300 seconds for other agents to finish.", "success"),
    ("[after training is done] datetime: 2023-06-01 12:00:00", "success"),
    ("Epoch 10/10\n1875/1875 [==============================] - 3s 2ms/step - loss: 0.0251 - accuracy: 0.9921", "success"),
    ("RuntimeError: Error building extension 'fused_adam'", "import_env"),
    ("ImportError: LlamaTokenizer requires the SentencePiece library but it was not found in your environment.",
     "import_env"),
    ("docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]].", "import_env"),
    ("Detected inf or nan values in gradients. Not updating model parameters.", "numeric_divergence"),
    ("NCCL WARN NET/IB : ibv_modify_qp failed with 110 Connection timed out", "network_fabric"),
    ("[rank0]: Received SIGINT, shutting down", "cancelled_user"),
])
def test_more_known_formats(text: str, category: str) -> None:
    r = cls(text)
    assert r.category == category, (r.rule, r.evidence)


# ---- an uncaught C++ exception is the cause of the abort that follows ----------------

@pytest.mark.parametrize("text,category", [
    ("terminate called after throwing an instance of 'std::out_of_range'\n"
     "  what():  basic_string::substr: __pos (which is 2) > this->size() (which is 0)\nAborted (core dumped)",
     "software_exception"),
    ("terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\nAborted (core dumped)",
     "host_oom"),
    ("terminate called after throwing an instance of 'c10::Error'\n"
     "  what():  CUDA error: an illegal memory access was encountered\nAborted (core dumped)",
     "cuda_runtime"),
    ("Fatal Python error: Segmentation fault\n\nThread 0x00007f (most recent call first):\nSegmentation fault (core dumped)",
     "segfault_signal"),
])
def test_uncaught_cpp_exception_versus_the_signal_it_raises(text: str, category: str) -> None:
    assert cls(text).category == category


@pytest.mark.parametrize("text,category", [
    ("(task, pid=2846) bash: /usr/bin/python: No such file or directory\n✓ Job finished (status: SUCCEEDED).", "import_env"),
    ("/bin/sh: torchrun: No such file or directory", "import_env"),
    ("bash: ./data/train.txt: No such file or directory", "unknown"),
    ("Status message: runtime_env setup failed: Failed to set up runtime environment.", "import_env"),
])
def test_program_missing_and_ray_runtime_env(text: str, category: str) -> None:
    assert cls(text).category == category


@pytest.mark.parametrize("text,category", [
    ("(task, pid=4100) done\n✓ Job finished (status: SUCCEEDED).", "success"),
    ("ERROR: Job 439 failed with return code list: [1]\n✓ Job finished (status: FAILED).", "unknown"),
    ("✓ Managed job finished: 3 (status: CANCELLED).", "cancelled_user"),
    ("---------------------------------------\nJob 'raysubmit_fufX4B3GcxYVxBdW' succeeded\n"
     "---------------------------------------", "success"),
    ("Job 'raysubmit_fufX4B3GcxYVxBdW' was stopped", "cancelled_user"),
    ("Traceback (most recent call last):\nValueError: bad shape\n✓ Job finished (status: SUCCEEDED).",
     "software_exception"),
])
def test_skypilot_and_ray_final_status_lines(text: str, category: str) -> None:
    assert cls(text).category == category


def test_a_full_disk_reported_as_resource_exhausted_is_storage_not_gpu_memory() -> None:
    r = cls("tensorflow.python.framework.errors_impl.ResourceExhaustedError: disk quota exceeded [Op:SaveV2]")
    assert r.category == "storage_io"
    assert cls("ResourceExhaustedError: OOM when allocating tensor with shape[256,112,112,64]").category == "gpu_oom"


def test_jax_coordination_barrier_timeout_is_collective_communication() -> None:
    text = ("jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. "
            "Barrier_id: PjRT_Client_Connect. Timed out task names:\n/job:jax_worker/replica:0/task:1")
    assert cls(text).category == "nccl_comm"
    # ...but a worker's own crash before the barrier is the cause.
    crash = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n" + text
    assert cls(crash).category == "gpu_oom"
