"""One table row per rule: a real message format in a little log context -> rule and category.

The lines are written from the formats PyTorch, NCCL, CUDA, Slurm, the kernel
and common libraries print; paths, hosts and numbers are made up on purpose,
because the rules must not depend on them.
"""

from __future__ import annotations

import pytest

from gcm_checks.classify import ClassifyInput, LogText, classify, engine
from gcm_checks.classify.rules import RULES, RULES_BY_ID
from gcm_checks.classify.taxonomy import CATEGORIES

PROGRESS = "\n".join(
    f" iteration {i:>6}/ 90000 | lm loss: {3.1 - i / 1e4:.4f} | grad norm: {0.9 + i / 1e5:.3f} | number of nan iterations: 0 |"
    for i in range(100, 130)
)

# (rule id, expected category, log tail)
CASES = [
    ("slurm.node_failure", "node_failure",
     "srun: error: Node failure on gpu-a17\nsrun: Job step aborted: Waiting up to 32 seconds for job step to finish."),
    ("slurm.node_failure", "node_failure",
     "slurmstepd: error: *** STEP 881.0 ON gpu-b2 CANCELLED AT 2024-02-01T10:11:12 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"),
    ("srun.nodes_not_ready", "node_failure",
     "srun: error: Nodes cn-[3-4] are still not ready\nsrun: error: Something is wrong with the boot of the nodes."),
    ("slurm.kill_task_failed", "node_failure",
     "slurmstepd: error: *** JOB 5512 STEPD TERMINATED ON gpu-c1 AT 2024-03-03T03:03:03 DUE TO JOB NOT ENDING WITH SIGNALS ***"),
    ("gpu.fallen_off_bus", "gpu_hardware",
     "[ 9921.118] NVRM: GPU 0000:41:00.0: GPU has fallen off the bus.\n[ 9921.119] NVRM: A GPU crash dump has been created."),
    ("kernel.xid.hardware", "gpu_hardware",
     "[Tue Mar  5 02:14:07 2024] NVRM: Xid (PCI:0000:c1:00): 95, pid=4120, name=python, Uncontained: FBHUB. RST: Yes, D-RST: No"),
    ("gpu.ecc_uncorrectable", "gpu_hardware",
     "RuntimeError: CUDA error: uncorrectable ECC error encountered\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions."),
    ("gpu.lost", "gpu_hardware",
     "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot the system to recover this GPU"),
    ("gpu.cuda_unknown_error", "gpu_hardware",
     "terminate called after throwing an instance of 'c10::CUDAError'\n  what():  CUDA error: unknown error\nException raised from query at ../aten/src/ATen/cuda/CUDAEvent.h:95"),
    ("kernel.xid.hardware", "gpu_hardware",
     "NVRM: Xid (PCI:0000:18:00): 63, pid=771, Row Remapper: New row marked for remapping, reset gpu to activate."),
    ("slurm.time_limit", "timeout_walltime",
     "slurmstepd: error: *** JOB 77123 ON gpu-d9 CANCELLED AT 2024-05-05T05:05:05 DUE TO TIME LIMIT ***"),
    ("submitit.timed_out", "timeout_walltime",
     "submitit WARNING (2024-01-01 10:00:00,000) - Caught signal SIGUSR2 on node9: this job is timed-out."),
    ("slurm.preemption", "preempted",
     "slurmstepd: error: *** JOB 4242 ON gpu-e1 CANCELLED AT 2024-06-06T06:06:06 DUE TO PREEMPTION ***"),
    ("slurm.preemption", "preempted",
     "slurmstepd: error: *** JOB 3 ON node2 CANCELLED AT 2026-11-30T02:20:11 DUE TO JOB REQUEUE ***"),
    ("tpu.lame_workers", "preempted",
     "INFO:tensorflow:ShutdownHook: lame workers found: HeartbeatManager(/job:worker/replica:0/task:0/device:CPU:0)"),
    ("slurm.oom_kill", "host_oom",
     "slurmstepd: error: Detected 1 oom_kill event in StepId=991.batch. Some of your processes may have been killed by the cgroup out-of-memory handler."),
    ("slurm.oom_kill", "host_oom", "srun: error: cn-12: task 0: Out Of Memory"),
    ("kernel.oom_killer", "host_oom",
     "[123.4] Out of memory: Killed process 31337 (python) total-vm:98765432kB, anon-rss:87654321kB"),
    ("host.worker_killed", "host_oom",
     "RuntimeError: DataLoader worker (pid 7781) is killed by signal: Killed. "),
    ("host.alloc_failed", "host_oom",
     "Traceback (most recent call last):\n  File \"prep.py\", line 9, in <module>\nnumpy.core._exceptions._ArrayMemoryError: Unable to allocate 37.3 GiB for an array with shape (5000000000,) and data type float64"),
    ("host.alloc_failed", "host_oom",
     "Traceback (most recent call last):\n  File \"load.py\", line 4, in <module>\nMemoryError"),
    ("ib.async_event", "network_fabric",
     "node3:2231:2290 [2] transport/net_ib.cc:88 NCCL WARN NET/IB : Got async event : port error"),
    ("ib.completion_error", "network_fabric",
     "node3:2231:2290 [2] transport/net_ib.cc:1450 NCCL WARN NET/IB : Got completion from peer 10.0.0.7<51234> with error 12, opcode 0, len 0, vendor err 129"),
    ("ib.retry_exceeded", "network_fabric",
     "[1700000000.1] [node7:123:0] ib_mlx5_log.c:177 UCX ERROR Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81 hw_synd 0/0)"),
    ("efa.error", "network_fabric",
     "ip-10-1-2-3:44:55 [0] nccl_net_ofi_rdma.c:1234 NCCL WARN NET/OFI Request 0x7f completed with error. RC: 12. Error: Remote access error"),
    ("cuda.oom", "gpu_oom",
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.11 GiB of which 1.02 GiB is free."),
    ("cuda.oom", "gpu_oom",
     "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes."),
    ("nccl.watchdog_timeout", "nccl_comm",
     "[rank7]:[E ProcessGroupNCCL.cpp:563] [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600071 milliseconds before timing out."),
    ("nccl.error", "nccl_comm",
     "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, remote process exited or there was a network error, NCCL version 2.19.3\nncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."),
    ("nccl.socket", "nccl_comm",
     "node1:881:990 [0] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer node2<41766>"),
    ("dist.store", "nccl_comm",
     "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError"),
    ("env.cuda_mismatch", "import_env",
     "RuntimeError: CUDA error: no kernel image is available for execution on the device"),
    ("cuda.device_assert", "cuda_runtime",
     "../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.\nRuntimeError: CUDA error: device-side assert triggered"),
    ("cuda.illegal_access", "cuda_runtime",
     "RuntimeError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect."),
    ("cuda.error", "cuda_runtime",
     "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16F, lda)`"),
    ("kernel.xid.application", "cuda_runtime",
     "[Wed Jun 24 15:44:20 2026] NVRM: Xid (PCI:0000:70:00): 13, Graphics SM Warp Exception on (GPC 1, TPC 1, SM 1): MMU Fault"),
    ("train.loss_nan", "numeric_divergence", PROGRESS + "\n iteration    131/ 90000 | lm loss: nan | grad norm: nan |"),
    ("train.loss_nan", "numeric_divergence",
     "{'loss': nan, 'grad_norm': nan, 'learning_rate': 1.9e-05, 'epoch': 0.42}"),
    ("train.loss_nan", "numeric_divergence",
     "FloatingPointError: Loss became infinite or NaN at iteration=88!"),
    ("train.loss_nan", "numeric_divergence",
     "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run."),
    ("io.errno", "storage_io", "OSError: [Errno 28] No space left on device: '/scratch/ckpt/step_1000.pt'"),
    ("io.errno", "storage_io",
     "RuntimeError: [enforce fail at inline_container.cc:595] . unexpected pos 1234567 vs 1234455"),
    ("io.errno", "storage_io", "OSError: [Errno 5] Input/output error: '/lustre/proj/data/shard-00017.tar'"),
    ("slurm.cancelled", "cancelled_user",
     "slurmstepd: error: *** JOB 31337 ON gpu-f3 CANCELLED AT 2024-07-07T07:07:07 ***"),
    ("srun.interrupt", "cancelled_user",
     "srun: interrupt (one more within 1 sec to abort)\nsrun: StepId=12.0 task 0-7: running"),
    ("py.import_error", "import_env",
     "Traceback (most recent call last):\n  File \"train.py\", line 1, in <module>\n    import deepspeed\nModuleNotFoundError: No module named 'deepspeed'"),
    ("py.import_error", "import_env",
     "python: error while loading shared libraries: libpython3.10.so.1.0: cannot open shared object file: No such file or directory"),
    ("py.import_error", "import_env", "/var/spool/slurmd/job123/slurm_script: line 9: torchrun: command not found"),
    ("data.bad_input", "data_input",
     "json.decoder.JSONDecodeError: Expecting ',' delimiter: line 1 column 88 (char 87)"),
    ("data.bad_input", "data_input",
     "OSError: image file is truncated (12 bytes not processed)"),
    ("data.missing", "data_input",
     "FileNotFoundError: [Errno 2] No such file or directory: '/data/imagenet/train/n01440764'"),
    ("data.loader_worker", "data_input",
     "IndexError: Caught IndexError in DataLoader worker process 3."),
    ("sig.bus_error_shm", "segfault_signal",
     "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."),
    ("sig.fatal", "segfault_signal",
     "Fatal Python error: Segmentation fault\n\nThread 0x00007f00 (most recent call first):\n  <no Python frame>"),
    ("sig.fatal", "segfault_signal",
     "/var/spool/slurmd/job77/slurm_script: line 12: 4421 Segmentation fault      (core dumped) ./solver --input x"),
    ("sig.fatal", "segfault_signal",
     "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -11) local_rank: 0 (pid: 1234) of binary: /usr/bin/python"),
    ("py.keyboard_interrupt", "cancelled_user",
     "Traceback (most recent call last):\n  File \"train.py\", line 80, in <module>\n    loss.backward()\nKeyboardInterrupt"),
    ("py.exception", "software_exception",
     "Traceback (most recent call last):\n  File \"train.py\", line 30, in <module>\n    cfg = load(args.config)\nAttributeError: 'NoneType' object has no attribute 'lr'"),
    ("py.exception", "software_exception",
     "[rank0]: TypeError: forward() got an unexpected keyword argument 'labels'"),
    ("c.assertion", "software_exception",
     "solver: mesh.cpp:211: void Mesh::refine(int): Assertion `level < max_level' failed."),
    ("shell.sigkill", "host_oom",  # issue 14: SIGKILL alone -> host OOM, moderate
     "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 1 (pid: 5151) of binary: /usr/bin/python3"),
    ("train.finished", "success",
     PROGRESS + "\n`Trainer.fit` stopped: `max_epochs=10` reached."),
    ("mpi.lost_daemon", "node_failure",
     "ORTE has lost communication with a remote daemon.\n\n  HNP daemon   : [[1234,0],0] on node cn1\n  Remote daemon: [[1234,0],3] on node cn4"),
    ("job.sigterm", "cancelled_user",
     "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4021 got signal: 15"),
    ("gpu.lost", "gpu_hardware",
     "Unable to determine the device handle for GPU 0000:41:00.0: Unknown Error"),
    ("gpu.cuda_unknown_error", "gpu_hardware",
     "RuntimeError: CUDA error: system not yet initialized"),
    ("nccl.error", "nccl_comm", "RuntimeError: NCCL Error 2: unhandled system error"),
    ("nccl.error", "nccl_comm",
     "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: external/xla/xla/service/gpu/nccl_utils.cc:297: NCCL operation ncclGroupEnd() failed: unhandled system error"),
    ("cuda.oom", "gpu_oom", "node1:7:7 [0] enqueue.cc:1460 NCCL WARN Cuda failure 'out of memory'"),
    ("py.import_error", "import_env", "AssertionError: Torch not compiled with CUDA enabled"),
    ("py.import_error", "import_env",
     "python: can't open file '/home/u/proj/trian.py': [Errno 2] No such file or directory"),
    ("io.errno", "storage_io", "sqlite3.OperationalError: disk I/O error"),
    ("train.loss_nan", "numeric_divergence", "Batch 1412: Invalid loss, terminating training"),
    ("data.bad_input", "data_input",
     "cv2.error: OpenCV(4.8.0) /io/opencv/modules/imgproc/src/color.cpp:182: error: (-215:Assertion failed) !_src.empty() in function 'cvtColor'"),
    ("slurm.cancelled", "cancelled_user",
     "slurmstepd: *** JOB 4113 CANCELLED AT 2014-03-15T22:22:06 ***"),
    ("shell.sigkill", "host_oom",  # issue 14: SIGKILL alone -> host OOM, moderate
     "  exitcode  : -9 (pid: 1234)\n  error_file: <N/A>\n  traceback : Signal 9 (SIGKILL) received by PID 1234"),
    ("shell.sigkill", "host_oom",  # issue 14: SIGKILL alone -> host OOM, moderate
     "/var/spool/slurmd/job42/slurm_script: line 14: 31337 Killed                  python train.py"),
    ("gpu.row_remap", "gpu_hardware",
     "Row remapping failure occurred on GPU 00000000:3B:00.0, reset the GPU or reboot the node"),
    ("kernel.xid.warn", "gpu_hardware",
     "[  77.1] NVRM: Xid (PCI:0000:3b:00): 999, pid=1, name=python, a code newer than the catalog"),
    ("sig.fatal", "segfault_signal",
     "mpirun noticed that process rank 3 with PID 0 on node cn2 exited on signal 11 (Segmentation fault)."),
    ("slurm.node_failure", "node_failure", "JobId=77 JobName=train JobState=NODE_FAIL Reason=NodeDown"),
    ("gpu.cuda_unknown_error", "gpu_hardware",
     "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."),
    ("slurm.time_limit", "timeout_walltime", "   JobState=TIMEOUT Reason=TimeLimit Dependency=(null)"),
    ("slurm.preemption", "preempted", "Received spot instance interruption notice, checkpointing and exiting"),
    ("slurm.oom_kill", "host_oom", "slurmstepd: error: Job 5521 exceeded memory limit (10432160 > 10240000), being killed"),
    ("ib.retry_exceeded", "network_fabric", "mlx5: gpu-a3: got completion with error:\n00000000 00000000 00000000 00000000"),
    ("ib.retry_exceeded", "network_fabric", "[ 7011.2] mlx5_core 0000:ca:00.0: mlx5_port_module_event:1119:(pid 0): Port module event[error]: module 0, Cable unplugged"),
    ("cuda.oom", "gpu_oom",
     "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[256,1024,1024]"),
    ("nccl.watchdog_timeout", "nccl_comm",
     "[rank0]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 0] Heartbeat monitor timed out! Process will be terminated after dumping debug info."),
    ("nccl.socket", "nccl_comm",
     "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.2]:2763"),
    ("nccl.socket", "nccl_comm",
     "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect [10.0.0.2]:29500: No route to host"),
    ("train.loss_nan", "numeric_divergence", "[2024-01-01 10:00:00] ERROR NaN detected in loss at iteration 4410, stopping"),
    ("io.errno", "storage_io", "[88211.1] LustreError: 11-0: scratch-OST0007-osc: operation ost_write to node 10.1.1.7@o2ib failed: rc = -107"),
    ("py.import_error", "import_env",
     "RuntimeError: The detected CUDA version (11.8) mismatches the version that was used to compile PyTorch (12.1). Please make sure to use the same CUDA versions."),
    ("py.import_error", "import_env",
     "Lmod has detected the following error:  The following module(s) are unknown: \"cuda/12.9\""),
    ("data.bad_input", "data_input",
     "OSError: Can't load tokenizer for '/models/llama-7b'. If you were trying to load it from 'https://huggingface.co/models', make sure you don't have a local directory with the same name."),
    ("data.bad_input", "data_input",
     "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge"),
    ("sig.fatal", "segfault_signal", "terminate called without an active exception\nAborted (core dumped)"),
    ("py.exception", "software_exception", "Error in eval(expr, envir, enclos) : object 'x' not found\nExecution halted"),
    ("vague.failed", "unknown",
     "Primary job  terminated normally, but 1 process returned\na non-zero exit code. Per user-direction, the job has been aborted."),
    ("data.missing", "data_input",
     "OSError: Unable to open file (unable to open file: name = '/data/feats.h5', errno = 2, error message = 'No such file or directory', flags = 0, o_flags = 0)"),
    ("cuda.error", "cuda_runtime", "RuntimeError: CUDA driver error: invalid argument"),
    ("kernel.xid.hardware", "gpu_hardware", "gpu-a12: GPU 3 fell over with Xid 48, job 1234 lost"),
    ("gpu.cuda_unknown_error", "gpu_hardware",
     "|   3  NVIDIA H100 80GB HBM3          On  | 00000000:9B:00.0 Off |                  ERR! |"),
    ("ib.retry_exceeded", "network_fabric",
     "node7:23:23 [1] NCCL WARN Call to ibv_modify_qp failed with error Connection timed out"),
    ("slurm.preemption", "preempted", "sky.exceptions: The spot cluster was preempted, relaunching"),
    ("train.loss_nan", "numeric_divergence", "step 4400 | loss tensor(nan, device='cuda:0', grad_fn=<AddBackward0>)"),
]


@pytest.mark.parametrize("rule_id,category,text", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rule_matches_real_format(rule_id: str, category: str, text: str) -> None:
    r = classify(ClassifyInput(logs=[LogText("stderr", text)]))
    assert (r.rule, r.category) == (rule_id, category), r.evidence
    assert r.responsibility == CATEGORIES[category].responsibility
    assert r.evidence and r.evidence[0].line_no >= 1
    assert r.sentence and "\n" not in r.sentence


def test_every_rule_has_a_case() -> None:
    covered = {c[0] for c in CASES}
    covered |= {c[0].rsplit(".", 1)[0] for c in CASES}  # judged rules: kernel.xid.hardware -> kernel.xid
    missing = [r.id for r in RULES if r.id not in covered and r.id != "srun.terminating"]
    assert not missing


def test_rule_table_is_consistent() -> None:
    for r in RULES:
        assert r.category in CATEGORIES, r.id
        assert 0.0 < r.confidence <= 1.0, r.id
        assert r.keywords and all(k == k.lower() for k in r.keywords), r.id
        assert r.unless_after is None or r.unless_after in RULES_BY_ID, r.id
        r.compiled()


# Lines that look alarming but are not the cause: they must not match any rule.
HARMLESS = [
    " iteration    50/  1000 | lm loss: 1.09E+01 | loss scale: 16384.0 | number of nan iterations:   0 |",
    "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:88: UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment",
    "FutureWarning: `resume_download` is deprecated; ImportError will be raised in v5",
    "[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).",
    "node1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_3:1/IB ; OOB ib0:10.0.0.1<0>",
    "wandb: Network error (TransientError), entering retry loop.",
    "submitit: Job has not been preempted, continuing",
    "node1:99:99 [0] NCCL INFO NET/Plugin: Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared object file: No such file or directory",
    "[INFO|trainer.py:1812] 2024-01-01 10:00:00,000 >> Caught OutOfMemoryError, retrying with a smaller batch",
    "Epoch 3: 100%|██████████| 500/500 [02:01<00:00, loss=0.213, v_num=7]",
    "  File \"/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py\", line 2050, in all_reduce",
    "    raise ValueError(f\"bad value {x}\")",
    "│ ❱ 88 │   except KeyError:                                                     │",
    "frame #3: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x58 (0x7f in libtorch_cuda.so)",
]


@pytest.mark.parametrize("learned", [False, True])
@pytest.mark.parametrize("line", HARMLESS)
def test_harmless_line_matches_nothing(line: str, learned: bool, monkeypatch) -> None:
    # With the learned fallback off (the default) and on (`classify --learned`):
    # plain training chatter must not look like any labelled failure.
    monkeypatch.setattr(engine, "LEARNED_FALLBACK", learned)
    r = classify(ClassifyInput(logs=[LogText("stdout", PROGRESS + "\n" + line)]))
    assert r.rule == "fallback.no_evidence", (r.rule, r.evidence)


@pytest.mark.parametrize("line", [
    "LOG:  automatic vacuum to prevent wraparound of table: xid 1234 frozen",
    "txn xid=77 committed",  # a catalog code, but warn-level: not clear-cut
])
def test_bare_xid_mentions_outside_the_catalog_or_unclear_are_ignored(line: str) -> None:
    r = classify(ClassifyInput(logs=[LogText("stdout", line)]))
    assert r.category == "unknown" and r.rule == "fallback.no_evidence"
