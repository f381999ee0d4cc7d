"""Rules written from status/error enumerations and other accelerators' messages (gcm_checks/classify/rules_enum.py).

Every row is written from the enum member or the format string the library's
header, error-string table or documentation defines (hosts, ids, paths and
numbers made up), never copied from a corpus excerpt; each family also has
look-alikes (success members, all-clear lines, warnings, informational lines)
that must not be read as it.
"""

from __future__ import annotations


from gcm_checks.classify import ClassifyInput, LogText, classify
from classify_cases import cls, tb  # noqa: E402 - tests/classify_cases.py


CASES = [
    # ---- CUDA runtime / driver members that mean the environment
    ("enum.cuda_env", "import_env", "RuntimeError: CUDA error: CUDA driver is a stub library"),
    ("enum.cuda_env", "import_env", "ggml_cuda_init: failed to initialize CUDA: cudaErrorStubLibrary"),
    ("enum.cuda_env", "import_env", "CUDA failure 34: CUDA driver is a stub library ; GPU=0 ; hostname=n1 ;"
                                    " expr=cudaSetDevice(info_.device_id);"),
    ("enum.cuda_env", "import_env", "RuntimeError: CUDA error: device kernel image is invalid\n"
                                    "CUDA kernel errors might be asynchronously reported at some other API call"),
    ("enum.cuda_env", "import_env", "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE"),
    ("enum.cuda_env", "import_env", "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to load PTX text as a"
                                    " module: CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed"),
    ("enum.cuda_env", "import_env", "CUDA error 221 [cuModuleLoadDataEx]: PTX JIT compiler library not found"),
    ("enum.cuda_env", "import_env", "error: CUDA_ERROR_JIT_COMPILATION_DISABLED"),
    ("enum.cuda_env", "import_env", "RuntimeError: CUDA error: API call is not supported in the installed CUDA"
                                    " driver"),
    ("enum.cuda_env", "import_env", "what():  cudaErrorCallRequiresNewerDriver"),
    ("enum.cuda_env", "import_env", "RuntimeError: HIP error: hipErrorInvalidImage"),
    ("enum.lib_env_mismatch", "import_env", "RuntimeError: cuDNN error: CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"),
    ("enum.lib_env_mismatch", "import_env",
     "RuntimeError: CUDNN_BACKEND_TENSOR_DESCRIPTOR cudnnFinalize failed: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED"),
    ("enum.lib_env_mismatch", "import_env", "RuntimeError: cuDNN error: CUDNN_STATUS_ARCH_MISMATCH"),
    ("enum.lib_env_mismatch", "import_env", "Could not create cudnn handle: CUDNN_STATUS_VERSION_MISMATCH"),
    ("enum.lib_env_mismatch", "import_env", "cudnn error: CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"),
    ("enum.lib_env_mismatch", "import_env",
     "RuntimeError: CUDA error: CUBLAS_STATUS_ARCH_MISMATCH when calling `cublasGemmEx( handle, opa, opb, m, n, k,"
     " &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, CUDA_R_32F,"
     " CUBLAS_GEMM_DEFAULT_TENSOR_OP)`"),
    ("enum.lib_env_mismatch", "import_env", "torch._C._LinAlgError: cusolver error: CUSOLVER_STATUS_ARCH_MISMATCH"),
    ("enum.lib_env_mismatch", "import_env", "nvmlInit failed: NVML_ERROR_LIB_RM_VERSION_MISMATCH"),
    ("enum.cudnn_version", "import_env",
     tb("RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (9, 1, 0) but found runtime version"
        " (8, 9, 7). PyTorch already comes bundled with cuDNN.")),
    ("enum.cudnn_version", "import_env", "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against"
                                         " 7102 but linked against 7005"),
    ("enum.jax_backend_env", "import_env",
     tb("RuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: No visible GPU devices. (set"
        " JAX_PLATFORMS='' to automatically choose an available backend)")),
    ("enum.jax_backend_env", "import_env",
     "RuntimeError: Unable to initialize backend 'cuda': INTERNAL: no supported devices found for platform CUDA (you"
     " may need to uninstall the failing plugin package, or set JAX_PLATFORMS=cpu to skip this backend.)"),
    ("enum.tpu_in_use", "node_failure",
     "RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process with pid 777."
     " Not attempting to load libtpu.so in this process."),
    ("enum.tpu_in_use", "node_failure",
     "RuntimeError: Unable to initialize backend 'tpu': FAILED_PRECONDITION: Couldn't mmap: Resource temporarily"
     " unavailable.; Unable to create DeviceInfo"),
    ("enum.nvml_env", "import_env", tb("pynvml.nvml.NVMLError_LibraryNotFound: NVML Shared Library Not Found")),
    ("enum.nvml_env", "import_env", "pynvml.nvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version"
                                    " mismatch."),
    # ---- ROCm environment
    ("enum.rocm_env", "import_env", '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\n'
                                    "Aborted (core dumped)"),
    ("enum.rocm_env", "import_env", "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat:"
                                    " No such file or directory for GPU arch : gfx1031\n"
                                    "rocBLAS error: Could not initialize Tensile host:"),
    ("enum.rocm_env", "import_env", "rocblaslt error: Could not initialize Tensile host: No devices found"),
    ("enum.no_rocm_device", "import_env", tb("RuntimeError: No HIP GPUs are available")),
    ("enum.no_rocm_device", "import_env", "RuntimeError: HIP error: no ROCm-capable device is detected"),
    ("enum.no_rocm_device", "import_env", "hipGetDeviceCount failed: hipErrorNoDevice"),
    # ---- accelerator memory
    ("enum.accel_oom", "gpu_oom", "MIOpen Error: /src/MIOpen/src/hipoc/hipoc_program.cpp:300: miopenStatusAllocFailed"),
    ("enum.accel_oom", "gpu_oom", "hipblas error: HIPBLAS_STATUS_ALLOC_FAILED"),
    ("enum.accel_oom", "gpu_oom", "RuntimeError: level_zero backend failed with error: 39"
                                  " (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)"),
    ("enum.accel_oom", "gpu_oom", "zeMemAllocDevice returned ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"),
    ("enum.accel_oom", "gpu_oom", "RuntimeError: Native API failed. Native API returns: -4"
                                  " (PI_ERROR_MEM_OBJECT_ALLOCATION_FAILURE)"),
    ("enum.accel_oom", "gpu_oom", "RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for"
                                  " size::2147483648 (2048)MB"),
    ("enum.accel_oom", "gpu_oom", "synDeviceMalloc failed: synOutOfDeviceMemory"),
    ("enum.accel_oom", "gpu_oom", "RuntimeError: synStatus 4 [Out of Device memory (OOM)]"),
    ("enum.accel_oom_weak", "gpu_oom", "RuntimeError: Native API failed. Native API returns: -5"
                                       " (PI_ERROR_OUT_OF_RESOURCES) -5 (PI_ERROR_OUT_OF_RESOURCES)"),
    ("enum.accel_oom_weak", "gpu_oom", "rocsolver_getrf returned rocblas_status_memory_error"),
    ("enum.accel_oom_weak", "gpu_oom", "nrt_load status=4 (NRT_RESOURCE)"),
    # ---- accelerator hardware
    ("enum.accel_hw", "gpu_hardware", "kernel: amdgpu 0000:c1:00.0: amdgpu: 3 uncorrectable hardware errors"
                                      " detected in umc block"),
    ("enum.accel_hw", "gpu_hardware", "amdgpu 0000:0b:00.0: amdgpu: {12} socket: 0, die: 1, 2 new uncorrectable"
                                      " hardware errors detected in umc block"),
    ("enum.accel_hw", "gpu_hardware", "nrt_execute status=1201 (NRT_EXEC_HW_ERR_HBM_UE)"),
    ("enum.accel_hw", "gpu_hardware", "ERROR NRT:nrt_execute  Execution failed: NRT_EXEC_HW_ERR_DMA_ABORT"),
    ("enum.accel_hw", "gpu_hardware", "RuntimeError: HIP error: hipErrorECCNotCorrectable"),
    ("enum.nvml_hw", "gpu_hardware", tb("pynvml.nvml.NVMLError_CorruptedInforom: Corrupted infoROM")),
    ("enum.nvml_hw", "gpu_hardware", "failed to get device handle: nvml: NVIDIA Kernel detected an interrupt issue"
                                     " with a GPU"),
    ("enum.nvml_hw", "gpu_hardware", "nvmlDeviceGetHandleByIndex(1) returned NVML_ERROR_INSUFFICIENT_POWER"),
    ("enum.nvml_hw", "gpu_hardware", "pynvml.NVMLError_ResetRequired: Reset Required"),
    ("enum.nvml_driver", "gpu_hardware", tb("pynvml.nvml.NVMLError_DriverNotLoaded: Driver Not Loaded")),
    ("enum.accel_hang", "gpu_hardware", "HW Exception by GPU node-1 (Agent handle: 0x5612a0) reason :GPU Hang\n"
                                        "Aborted (core dumped)"),
    ("enum.accel_hang", "gpu_hardware", "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled"
                                        " seq=4242, emitted seq=4244"),
    ("enum.accel_hang", "gpu_hardware", "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!"),
    ("enum.accel_hang", "gpu_hardware", "RuntimeError: UR_RESULT_ERROR_DEVICE_LOST"),
    ("enum.accel_hang", "gpu_hardware", "zeCommandQueueSynchronize: ZE_RESULT_ERROR_DEVICE_LOST"),
    ("enum.accel_hang", "gpu_hardware", "nrt_execute status=1200 (NRT_EXEC_HW_ERR_COLLECTIVES)"),
    ("enum.amdgpu_page_fault", "cuda_runtime",
     "amdgpu 0000:c1:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:8 pasid:32770, for"
     " process python3 pid 4242 thread python3 pid 4242)"),
    ("enum.amdgpu_page_fault", "cuda_runtime", "amdgpu 0000:01:00.0: amdgpu: VM fault (0x02, vmid 5, pasid 32772)"
                                               " at page 1053303, write from 'TC4' (0x54433400) (72)"),
    ("enum.accel_busy", "gpu_hardware", "RuntimeError: synStatus=8 [Device not found] Device acquire failed."),
    ("enum.accel_busy", "gpu_hardware", "nrt_execute status=1005 (NRT_EXEC_NC_BUSY)"),
    # ---- MPI
    ("enum.mpi_abort", "unknown", "--------------------------------------------------------------------------\n"
                                  "MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD\nwith errorcode 1.\n\n"
                                  "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes."),
    ("enum.mpi_abort", "unknown", "Abort(1) on node 0 (rank 0 in comm 0): application called"
                                  " MPI_Abort(MPI_COMM_WORLD, 1) - process 0"),
    ("enum.mpi_abort", "unknown", "Rank 12 [Tue Jan  2 03:04:05 2024] [c1-0c0s1n2] application called"
                                  " MPI_Abort(MPI_COMM_WORLD, 60) - process 12"),
    ("enum.mpi_error_class", "software_exception",
     "[n1:4242] *** An error occurred in MPI_Recv\n[n1:4242] *** reported by process [3880,1]\n"
     "[n1:4242] *** on communicator MPI_COMM_WORLD\n[n1:4242] *** MPI_ERR_TRUNCATE: message truncated\n"
     "[n1:4242] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,"),
    ("enum.mpi_error_class", "software_exception", "[n2:77] *** MPI_ERR_RANK: invalid rank"),
    ("enum.mpi_error_class", "software_exception",
     "Abort(537470981) on node 7 (rank 7 in comm 0): Fatal error in PMPI_Allreduce: Invalid communicator, error stack:"),
    ("enum.mpi_error_class", "software_exception", "Fatal error in PMPI_Test: Message truncated, error stack:"),
    ("enum.hydra_sigkill", "host_oom",
     "===================================================================================\n"
     "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   RANK 2 PID 5151 RUNNING AT cn07\n"
     "=   KILLED BY SIGNAL: 9 (Killed)\n"
     "==================================================================================="),
    ("enum.hydra_sigkill", "host_oom", "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 88 RUNNING AT"
                                       " gpu3\n=   EXIT CODE: 9\n=   CLEANING UP REMAINING PROCESSES"),
    ("enum.hydra_crash", "segfault_signal", "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 88"
                                            " RUNNING AT gpu3\n=   EXIT CODE: 139\n=   CLEANING UP REMAINING PROCESSES"),
    ("enum.hydra_crash", "segfault_signal", "=   EXIT CODE: 134"),
    ("enum.mpich_pmi", "import_env", "Fatal error in PMPI_Init: Other MPI error, error stack:\nMPIR_Init_thread(632):\n"
                                     "MPID_Init(286).......:  PMI2 init failed: 1"),
    ("enum.mpich_pmi", "import_env", "[cli_0]: write_line error; fd=9 buf=:cmd=get_appnum\n"
                                     "Abort(1090831) on node 0 (rank 0 in comm 0): Fatal error in PMPI_Init_thread:"
                                     " Unknown error class, error stack:\nMPIR_Init_thread(196): \n"
                                     "MPIR_pmi_init(142)...: PMI_Get_appnum returned -1"),
    ("enum.mpich_ofi", "network_fabric",
     "MPICH ERROR [Rank 0] [job id 12.0] [Fri Dec 13 13:41:36 2024] [nid00084] - Abort(2665871) (rank 0 in comm 0):"
     " Fatal error in PMPI_Init_thread: Other MPI error, error stack:\nMPIR_Init_thread(170).........:\n"
     "MPID_Init(501)................:\nopen_fabric(1559)...........: OFI fi_getinfo() failed"
     " (ofi_init.c:1559:open_fabric:No data available)"),
    ("enum.slurm_launch_comm", "node_failure", "srun: error: Application launch failed: Communication connection failure\n"
                                               "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."),
    ("enum.slurm_launch_comm", "node_failure",
     "srun: error: Task launch for StepId=881.0 failed on node gpu-b3: Zero Bytes were transmitted or received"),
    ("enum.slurmd_setup", "node_failure", "srun: error: Task launch for StepId=881.0 failed on node gpu-b3: Slurmd could"
                                          " not set up environment for batch job"),
    ("enum.slurmd_setup", "node_failure", "srun: error: Task launch for StepId=77.0 failed on node n4: Job prolog failed"),
    ("enum.slurmd_setup", "node_failure", "slurmstepd: error: _send_launch_failure: User not found on host"),
    ("enum.slurm_bad_request", "software_exception",
     "srun: error: Unable to create step for job 1234: Memory required by task is not available"),
    ("enum.slurm_bad_request", "software_exception",
     "srun: error: Unable to create step for job 1234: More processors requested than permitted"),
    ("enum.slurm_bad_request", "software_exception",
     "sbatch: error: Batch job submission failed: Requested node configuration is not available"),
    ("enum.slurm_bad_request", "software_exception",
     "srun: error: Unable to allocate resources: Job violates accounting/QOS policy (job submit limit, user's size"
     " and/or time limits)"),
    # ---- network
    ("enum.ucx_status", "network_fabric", "nixl: transfer failed: UCS_ERR_ENDPOINT_TIMEOUT"),
    ("enum.ucx_status", "network_fabric", "ucp_ep_create returned UCS_ERR_UNREACHABLE for peer 10.0.0.7"),
    ("enum.grpc_unavailable", "network_fabric",
     "tensorflow.python.framework.errors_impl.UnavailableError: UNAVAILABLE: failed to connect to all addresses"),
    # ---- errno
    ("enum.errno_storage", "storage_io", "OSError: [Errno 117] Structure needs cleaning: '/scratch/u/run7/ckpt'"),
    ("enum.errno_storage", "storage_io", "OSError: [Errno 27] File too large: 'out/shard-00007.bin'"),
    ("enum.errno_storage", "storage_io", "dd: error writing '/mnt/fat/big.img': File too large"),
    ("enum.errno_storage", "storage_io", "OSError: [Errno 37] No locks available"),
    ("enum.errno_storage", "storage_io",
     "OSError: [Errno 108] Cannot send after transport endpoint shutdown: '/lustre/proj/u/log.txt'"),
    # (libuv's "Error: ENOSPC: no space left on device, write" is io.enospc's, by its strerror;
    # "(EDQUOT)" is rules_fam's fam.quota)
    ("enum.go_errno_storage", "storage_io", "Error: write /ckpt/step-100/shard-3.bin: input/output error"),
    ("enum.go_errno_storage", "storage_io", "failed to create dir: mkdir /shared/run7: read-only file system"),
    ("enum.go_errno_storage", "storage_io", "open /nfs/home/u/data.json: stale NFS file handle"),
    ("enum.go_errno_storage", "storage_io", "level=error msg=\"stat /mnt/fuse/ds: transport endpoint is not connected\""),
    ("enum.errno_name_storage", "storage_io", "write error: ENOSPC"),
    ("enum.errno_name_storage", "storage_io", "Error: EIO: i/o error, read"),
    ("enum.errno_name_storage", "storage_io", "Error: EROFS: read-only file system, open '/data/out.json'"),
    ("enum.errno_name_storage", "storage_io", "write /ckpt/state.bin: ESTALE"),
    ("enum.errno_name_storage", "storage_io", "fsync(/lustre/ckpt/step_100.pt) = EIO"),
    ("enum.errno_enomem", "host_oom", "Error: ENOMEM: not enough memory, read"),
    ("enum.errno_enoent_path", "data_input", "Error: ENOENT: no such file or directory, open '/data/train.csv'"),
    ("enum.errno_enoent_path", "data_input", "Error: ENOENT: no such file or directory, scandir '/data/images'"),
    ("enum.spawn_enoent", "import_env", "Error: spawn python3 ENOENT"),
]


LOOKALIKES = [
    # Success members and all-clear lines.
    ("enum.lib_env_mismatch", "cudnnStatus: CUDNN_STATUS_SUCCESS"),
    ("enum.accel_oom", "hipblas status: HIPBLAS_STATUS_SUCCESS"),
    ("enum.accel_oom_weak", "nrt_execute status=0 (NRT_SUCCESS)"),
    ("enum.accel_hw", "amdgpu 0000:c3:00.0: amdgpu: no uncorrectable hardware errors detected in umc block"),
    ("enum.accel_hw", "amdgpu 0000:c3:00.0: amdgpu: 0 uncorrectable hardware errors detected in umc block"),
    ("enum.accel_hang", "amdgpu 0000:03:00.0: amdgpu: GPU reset succeeded, trying to resume"),
    ("enum.no_rocm_device", "Found 8 ROCm-capable devices"),
    ("enum.rocm_env", "rocBLAS info: loaded TensileLibrary for gfx942"),
    # Members the taxonomy leaves to other rules or that are ambiguous.
    ("enum.lib_env_mismatch", "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED"),
    ("enum.cuda_env", "CUDA_ERROR_OUT_OF_MEMORY: out of memory"),
    ("enum.mpi_error_class", "[n1:42] *** MPI_ERR_OTHER: known error not in list"),
    ("enum.mpi_error_class", "Fatal error in PMPI_Init_thread: Other MPI error, error stack:"),
    ("enum.hydra_crash", "=   EXIT CODE: 1"),
    ("enum.hydra_sigkill", "=   EXIT CODE: 0"),
    ("enum.grpc_unavailable", "status: UNAVAILABLE"),
    # Lower-case "erofs" is a filesystem type; inotify's ENOSPC is a watcher limit; an
    # identifier that contains EIO is not the errno.
    ("enum.errno_name_storage", "erofs: (device loop3): mounted with root inode @ nid 36."),
    ("enum.errno_name_storage", "Error: ENOSPC: System limit for number of file watchers reached, watch '/src'"),
    ("enum.errno_name_storage", "reading EIO_prices_2020.csv (eio, 12 MB)"),
    ("enum.errno_storage", "Warning: File too large to display inline, showing the first 1000 lines"),
    ("enum.spawn_enoent", "spawned 8 workers"),
    # JAX probing platforms it does not have logs the same words at glog level I.
    ("enum.jax_backend_env", "I0403 15:25:16.346253 1401 xla_bridge.py:897] Unable to initialize backend 'cuda':"
                             " INTERNAL: no supported devices found"),
    ("enum.tpu_in_use", "I0403 15:25:16.346253 1401 xla_bridge.py:897] Unable to initialize backend 'tpu': INTERNAL:"
                        " Failed to open libtpu.so: libtpu.so: cannot open shared object file"),
    ("enum.mpich_ofi", "MPIDI_OFI_init: using provider cxi (ofi_init.c)"),
    ("enum.go_errno_storage", "read-only file system mounted at /sw (expected)"),
    # nvidia-smi's infoROM warning: the GPU still runs; pynvml's success/other members.
    ("enum.nvml_hw", "WARNING: infoROM is corrupted at gpu 0000:3B:00.0"),
    ("enum.nvml_driver", "pynvml.nvml.NVMLError_NotSupported: Not Supported"),
    # Slurm lines with the same lead-in and another member.
    ("enum.slurm_bad_request", "srun: error: Unable to create step for job 1234: Job/step already completing or"
                               " completed"),
    ("enum.slurm_launch_comm", "srun: launch/slurm: launch_p_step_launch: StepId=881.0 aborted before step completely"
                               " launched."),
    ("enum.slurmd_setup", "slurmd could not be reached; retrying in 5 s"),
    # Informational and warning lines with the same words never match.
    ("enum.accel_oom", "WARNING: UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY on first try; retried after freeing the cache"),
    ("enum.rocm_env", "[W1102 10:11:12.000 hip_util.cpp:42] hipErrorNoBinaryForGpu for optional kernel, using fallback"),
    ("enum.ucx_status", "n1:11:22 [0] NCCL INFO NET/UCX : UCS_ERR_UNREACHABLE from iface mlx5_1:1, trying next"),
    ("enum.accel_hang", "INFO: ZE_RESULT_ERROR_DEVICE_LOST is retried by the watchdog"),
]


# ---- precedence: the cause over what it causes ---------------------------------------

def test_memory_access_fault_outranks_the_gpu_hang_it_causes() -> None:
    # HSA prints the job's page fault first, then the hang of the queue it broke.
    r = cls("Memory access fault by GPU node-1 (Agent handle: 0x55d1) on address 0x7f52c3f5f000. Reason: Page not"
            " present or supervisor privilege.\n"
            "HW Exception by GPU node-1 (Agent handle: 0x563e71) reason :GPU Hang\nAborted (core dumped)\n")
    assert r.category == "cuda_runtime", r.rule


def test_arch_mismatch_beats_the_generic_cuda_error() -> None:
    # cuda.error reads every CUBLAS_STATUS_* as the kernel's fault; this member is the GPU.
    r = cls(tb("RuntimeError: CUDA error: CUBLAS_STATUS_ARCH_MISMATCH when calling `cublasLtMatmul( ltHandle, ...)`"))
    assert (r.category, r.rule) == ("import_env", "enum.lib_env_mismatch")


def test_the_cause_before_mpi_abort_wins() -> None:
    r = cls(tb("ModuleNotFoundError: No module named 'petsc4py'")
            + "Abort(1) on node 0 (rank 0 in comm 0): application called MPI_Abort(MPI_COMM_WORLD, 1) - process 0\n")
    assert r.category == "import_env", r.rule


def test_mpi_abort_keeps_a_completion_line_from_reading_as_success() -> None:
    r = cls("{'train_runtime': 12.0, 'epoch': 1.0}\n"
            "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD\nwith errorcode 1.\n")
    assert r.category != "success", r.rule


def test_ucx_peer_loss_after_the_jobs_exception_is_a_symptom() -> None:
    r = cls(tb("KeyError: 'labels'") + "transfer failed: UCS_ERR_CONNECTION_RESET\n")
    assert r.category == "software_exception", r.rule


def test_amdgpu_ras_in_the_kernel_log_outranks_the_jobs_hip_error() -> None:
    r = classify(ClassifyInput(logs=[
        LogText("stderr", "RuntimeError: HIP error: an illegal memory access was encountered\n"),
        LogText("kernel", "amdgpu 0000:c1:00.0: amdgpu: 4 uncorrectable hardware errors detected in umc block\n"),
    ]))
    assert (r.category, r.rule) == ("gpu_hardware", "enum.accel_hw")


def test_rocm_missing_arch_is_the_environment_not_a_hip_runtime_fault() -> None:
    # src.cuda_runtime reads hipError* as the kernel's fault; this member is the build.
    r = cls(tb("RuntimeError: HIP error: hipErrorNoBinaryForGpu: Unable to find code object for all current"
               " devices!"))
    assert r.category == "import_env", r.rule
