"""Rules written from status and error ENUMERATIONS, and from accelerators the tables barely knew (issue 14).

The earlier tables key on the messages that NVIDIA + PyTorch + Slurm print. A
library's status enum is a closed list: once its names and the strings its
``*GetErrorString`` prints are known, every member can be put in the class
the taxonomy gives it, not only the members someone happened to see in a
log. This module does that for the members the other tables leave in the
wrong class or in none:

* CUDA runtime/driver (``cudaError_t`` / ``CUresult``) members that mean the
  software environment, not the kernel the job ran (``cuda.error`` would
  read them as ``cuda_runtime``); the ``*_ARCH_MISMATCH`` / version-mismatch
  statuses of cuDNN, cuBLAS, cuSOLVER, cuSPARSE, cuRAND and NVML;
* AMD ROCm/HIP (hipError_t, rocBLAS/Tensile, MIOpen, hipBLAS statuses, the
  amdgpu kernel driver's RAS, ring-timeout, reset and page-fault lines, the
  HSA runtime's "HW Exception ... GPU Hang"), Intel XPU (Level Zero
  ``ze_result_t``, Unified Runtime ``ur_result_t``, SYCL PI / OpenCL), Intel
  Gaudi (SynapseAI ``synStatus``, the PyTorch bridge's PT_DEVMEM) and AWS
  Neuron (``NRT_STATUS``);
* MPI: Open MPI's and MPICH's abort lines and error classes, Hydra's
  "BAD TERMINATION" block, UCX ``ucs_status_t`` names, gRPC UNAVAILABLE;
* errno names and strings as C, Python, libuv (Node) and Go print them.

Ambiguous members stay out (CUDNN_STATUS_NOT_INITIALIZED, CUBLAS_STATUS_NOT_
INITIALIZED: often an OOM in disguise, often a broken install; MPI_ERR_OTHER,
MPI_ERR_NO_MEM; EBUSY, EAGAIN, EMFILE; PMIx's "PMIX ERROR: UNREACHABLE",
which Open MPI prints after ranks already died, as fallout). Same conventions
as rules.py: lower-case literal keywords without digits gate each rule and
start with characters the keyword trie already branches on, every repetition
is bounded, no hosts/paths/numbers. Tests: tests/test_classify_rules_enum.py.
"""

from __future__ import annotations

from typing import Tuple

from gcm_checks.classify.rules import (
    R_CUDA, R_DATA, R_ENV, R_ENV_CUDA, R_EXCEPTION, R_GPU_HW, R_GPU_HW_WEAK, R_NET, R_NODE_FAIL, R_OOM, R_SIGNAL, R_STORAGE, R_VAGUE,
    Rule,
)

ENUM_RULES: Tuple[Rule, ...] = (
    # ---- CUDA runtime / driver: environment members -----------------------------------
    # cuda.h CUresult and cuGetErrorString (cuda_runtime_api.h cudaError_t mirrors them):
    # CUDA_ERROR_STUB_LIBRARY (34) "CUDA driver is a stub library" - the toolkit's
    # lib/stubs/libcuda.so was loaded instead of the driver; CUDA_ERROR_INVALID_IMAGE (200)
    # "device kernel image is invalid"; CUDA_ERROR_INVALID_PTX (218) "a PTX JIT compilation
    # failed"; CUDA_ERROR_JIT_COMPILER_NOT_FOUND (221) "PTX JIT compiler library not found";
    # CUDA_ERROR_JIT_COMPILATION_DISABLED (223) "PTX JIT compilation was disabled";
    # cudaErrorCallRequiresNewerDriver (36) "API call is not supported in the installed CUDA
    # driver". HIP reuses the image string (hip_error.cpp: hipErrorInvalidImage). The members
    # doc.env already maps (insufficient driver, unsupported PTX version, system driver
    # mismatch, compat not supported) are not repeated here.
    Rule("enum.cuda_env", "import_env", R_ENV_CUDA, 0.85,
         ("stub library", "stub_library", "stublibrary", "kernel image is invalid", "invalidkernelimage",
          "invalid_image", "invalidimage", "jit compil", "jitcompil", "jit_compil", "invalid_ptx", "invalidptx",
          "callrequiresnewerdriver", "not supported in the installed cuda driver"),
         r"\bcudaErrorStubLibrary\b|\bCUDA_ERROR_STUB_LIBRARY\b|CUDA driver is a stub library"
         r"|\b(?:cudaErrorInvalidKernelImage|hipErrorInvalidImage|CUDA_ERROR_INVALID_IMAGE)\b|device kernel image is invalid"
         r"|\bcudaErrorJitCompiler(?:NotFound|ationDisabled)\b|\bCUDA_ERROR_JIT_COMPIL(?:ER_NOT_FOUND|ATION_DISABLED)\b"
         r"|PTX JIT compiler library not found|PTX JIT compilation was disabled"
         r"|\b(?:cudaErrorInvalidPtx|CUDA_ERROR_INVALID_PTX)\b|a PTX JIT compilation failed"
         r"|\bcudaErrorCallRequiresNewerDriver\b|API call is not supported in the installed CUDA driver",
         "the CUDA installation does not fit this node (stub libcuda, driver too old for the code, no PTX JIT)"),
    # cudnn_graph.h cudnnStatus_t: CUDNN_STATUS_ARCH_MISMATCH ("requires a feature absent from
    # the current GPU device"), cuDNN 9's CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH,
    # CUDNN_STATUS_VERSION_MISMATCH and CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH /
    # _SUBLIBRARY_LOADING_FAILED (two cuDNN copies mixed: a pip wheel and the system one);
    # cublas_api.h / cusolver_common.h / cusparse.h / curand.h *_STATUS_ARCH_MISMATCH (GPU too
    # old for the routine), and hipBLAS' mirror; nvml.h NVML_ERROR_LIB_RM_VERSION_MISMATCH
    # ("Driver/library version mismatch", doc.env reads the string). cuda.error would read
    # every one of these as a runtime fault of the job's kernel.
    Rule("enum.lib_env_mismatch", "import_env", R_ENV_CUDA, 0.8,
         ("arch_mismatch", "version_mismatch", "sublibrary_loading_failed"),
         r"\b(?:CUDNN|CUBLAS|CUSOLVER|CUSPARSE|CURAND|HIPBLAS|HIPSOLVER|HIPSPARSE)_STATUS_(?:NOT_SUPPORTED_)?ARCH_MISMATCH\b"
         r"|\bCUDNN_STATUS_(?:SUBLIBRARY_)?VERSION_MISMATCH\b|\bCUDNN_STATUS_SUBLIBRARY_LOADING_FAILED\b"
         r"|\bNVML_ERROR_LIB_RM_VERSION_MISMATCH\b",
         "a GPU library does not match this GPU or the other libraries loaded with it (architecture or version)"),
    # NVML (nvml.h nvmlReturn_t) as pynvml raises it - one class per member, "NVMLError_" + the
    # CamelCase name: NVMLError_LibraryNotFound ("NVML Shared Library Not Found": no
    # libnvidia-ml in the container or on the path) and NVMLError_LibRmVersionMismatch ("RM
    # has detected an NVML/RM version mismatch.": the user-space driver libraries do not
    # match the loaded kernel module). Note that py.exception cannot read these: the class
    # name does not end in Error.
    Rule("enum.nvml_env", "import_env", R_ENV_CUDA, 0.75,
         ("nvmlerror_librarynotfound", "nvml_error_library_not_found", "nvml shared library not found",
          "nvmlerror_librmversionmismatch", "nvml/rm version mismatch"),
         r"\bNVMLError_LibraryNotFound\b|\bNVML_ERROR_LIBRARY_NOT_FOUND\b|NVML Shared Library Not Found"
         r"|\bNVMLError_LibRmVersionMismatch\b|RM has detected an NVML/RM version mismatch",
         "the NVIDIA management library is missing or does not match the loaded driver"),
    # torch/backends/cudnn/__init__.py: "RuntimeError: cuDNN version incompatibility: PyTorch
    # was compiled against (9, 8, 0) but found runtime version (9, 7, 0)" (older: "... but
    # linked against ..."): a module's or the system's cuDNN on LD_LIBRARY_PATH shadows the
    # one torch ships with.
    Rule("enum.cudnn_version", "import_env", R_ENV_CUDA, 0.85,
         ("cudnn version incompatibility",), r"cuDNN version incompatibility: PyTorch was compiled\s+against",
         "the cuDNN library loaded is not the one PyTorch was built against"),
    # JAX's xla_bridge.backends() raises "RuntimeError: Unable to initialize backend 'cuda':
    # FAILED_PRECONDITION: No visible GPU devices." / "...: INTERNAL: no supported devices found
    # for platform CUDA (you may need to uninstall the failing plugin package, or set
    # JAX_PLATFORMS=cpu to skip this backend.)" when the requested platform's plugin cannot
    # start: an absl status code (FAILED_PRECONDITION, INTERNAL, NOT_FOUND) from the plugin,
    # mostly a jax/jaxlib/CUDA mismatch or hidden devices. Only the raised RuntimeError: the
    # same words at glog level I ("I0403 ... xla_bridge.py:897] Unable to initialize backend
    # 'tpu': ...") are JAX probing platforms on a machine without them. A TPU that another
    # process holds ("ABORTED: The TPU is already in use by process with pid N", "Couldn't
    # mmap: Resource temporarily unavailable" on /dev/accel0) is tpu.busy's class.
    Rule("enum.jax_backend_env", "import_env", R_ENV_CUDA, 0.65,
         ("unable to initialize backend",), r"RuntimeError: Unable to initialize backend '(?:cuda|gpu|rocm)': [A-Z_]{4,}:",
         "JAX could not start its GPU backend (jax/jaxlib/CUDA plugin mismatch or no visible GPU)"),
    Rule("enum.tpu_in_use", "node_failure", R_NODE_FAIL - 10, 0.7,
         ("unable to initialize backend",),
         r"RuntimeError: Unable to initialize backend 'tpu': (?:ABORTED: The TPU is already in use"
         r"|FAILED_PRECONDITION: Couldn't mmap)",
         "the node's TPU could not be initialised (held by another process or broken)"),
    # ---- AMD ROCm / HIP: environment ---------------------------------------------------
    # hip_runtime_api.h hipErrorNoBinaryForGpu (209), printed by the HIP runtime as
    # "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!" (no gfx
    # target in the build); rocBLAS/rocBLASLt's Tensile loader: "rocBLAS error: Cannot read
    # .../TensileLibrary.dat: No such file or directory for GPU arch : gfx1100" and "rocBLAS
    # error: Could not initialize Tensile host: No devices found" (tensile_host.cpp).
    Rule("enum.rocm_env", "import_env", R_ENV_CUDA, 0.8,
         ("hiperrornobinaryforgpu", "unable to find code object", "tensile"),
         r"\bhipErrorNoBinaryForG[Pp][Uu]\b|Unable to find code object for all current devices"
         r"|(?i:rocblas(?:lt)? error): (?:Cannot read .{0,300}?TensileLibrary|Could not initialize Tensile host)",
         "the ROCm build has no code for this GPU's architecture (gfx target missing)"),
    # hipErrorNoDevice (100), whose hipGetErrorString is "no ROCm-capable device is
    # detected", and torch's "RuntimeError: No HIP GPUs are available" (torch/cuda/__init__.py
    # on a ROCm build): ROCR_/HIP_VISIBLE_DEVICES or the build hide every GPU. Same class and
    # confidence as src.no_device (its CUDA twin); node evidence of a lost GPU outranks it.
    Rule("enum.no_rocm_device", "import_env", R_ENV_CUDA, 0.65,
         ("hiperrornodevice", "rocm-capable device", "no hip gpus"),
         r"\bhipErrorNoDevice\b|no ROCm-capable device is detected|\bNo HIP GPUs are available\b",
         "no usable AMD GPU is visible to the job (device visibility, or a build without this GPU)"),
    # ---- accelerator memory ------------------------------------------------------------
    # miopen.h miopenStatusAllocFailed ("Memory allocation error"); hipBLAS/hipSOLVER/hipSPARSE
    # *_STATUS_ALLOC_FAILED (what rocblas_status_memory_error becomes in hipBLAS);
    # ze_api.h ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY and ur_api.h
    # UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (39), which torch's XPU allocator and llama.cpp's
    # SYCL backend print; PI/OpenCL CL_MEM_OBJECT_ALLOCATION_FAILURE (-4); SynapseAI
    # synapse_common_types.h synOutOfDeviceMemory (4) / synFailedToAllocateDeviceMemory (14),
    # whose status string is "Out of Device memory (OOM)"; the Gaudi PyTorch bridge's
    # "FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::N (M)MB" (Habana's docs:
    # the model does not fit, raise the tensor-parallel size; accelerate's
    # find_executable_batch_size treats it as OOM).
    Rule("enum.accel_oom", "gpu_oom", R_OOM, 0.85,
         ("miopenstatusallocfailed", "hipblas_status_alloc_failed", "hipsolver_status_alloc_failed",
          "hipsparse_status_alloc_failed", "out_of_device_memory", "mem_object_allocation_failure",
          "synoutofdevicememory", "synfailedtoallocatedevicememory", "out of device memory (oom)",
          "pt_devmem allocation failed"),
         r"\bmiopenStatusAllocFailed\b|\bHIP(?:BLAS|SOLVER|SPARSE)_STATUS_ALLOC_FAILED\b"
         r"|\b(?:UR|ZE)_RESULT_ERROR_OUT_OF_DEVICE_MEMORY\b|\b(?:PI_ERROR|CL)_MEM_OBJECT_ALLOCATION_FAILURE\b"
         r"|\bsyn(?:OutOfDeviceMemory|FailedToAllocateDeviceMemory)\b|Out of Device memory \(OOM\)"
         r"|MODULE:PT_DEVMEM Allocation failed",
         "the accelerator (AMD, Intel or Gaudi) ran out of device memory"),
    # Members that are mostly, not only, device memory: PI_ERROR_OUT_OF_RESOURCES (-5), which
    # the SYCL PI layer maps UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY *and* _OUT_OF_RESOURCES to
    # (pi2ur.hpp); rocblas.h rocblas_status_memory_error ("Failed internal memory allocation,
    # copy or dealloc"); Neuron nrt_status.h NRT_RESOURCE ("Failed to allocate a resource for
    # requested operation").
    Rule("enum.accel_oom_weak", "gpu_oom", R_OOM - 4, 0.6,
         ("pi_error_out_of_resources", "ur_result_error_out_of_resources", "rocblas_status_memory_error",
          "nrt_resource"),
         r"\b(?:PI_ERROR|UR_RESULT_ERROR)_OUT_OF_RESOURCES\b|\brocblas_status_memory_error\b|\bNRT_RESOURCE\b",
         "the accelerator ran out of device memory (or another device resource)"),
    # ---- accelerator hardware ----------------------------------------------------------
    # Neuron nrt_status.h: NRT_EXEC_HW_ERR_HBM_UE (1201, "HBM Unrepairable Uncorrectable
    # hardware error"), _NC_UE (1202), _DMA_ABORT (1203), _REPAIRABLE_HBM_UE (1205) and
    # NRT_HW_ERROR; hip_runtime_api.h hipErrorECCNotCorrectable (214); the amdgpu driver's
    # RAS report (amdgpu_ras.c) "amdgpu 0000:c1:00.0: amdgpu: 2 uncorrectable hardware errors
    # detected in umc block" - only a count of one or more: "no uncorrectable hardware errors
    # detected" is its all-clear.
    Rule("enum.accel_hw", "gpu_hardware", R_GPU_HW, 0.85,
         ("nrt_exec_hw_err", "nrt_hw_error", "hiperroreccnotcorrectable", "uncorrectable hardware errors detected"),
         r"\bNRT_EXEC_HW_ERR_(?:HBM_UE|NC_UE|DMA_ABORT|REPAIRABLE_HBM_UE)\b|\bNRT_HW_ERROR\b|\bhipErrorECCNotCorrectable\b"
         r"|\bamdgpu\b.{0,200}?(?<![\d.])[1-9]\d* (?:new )?uncorrectable hardware errors detected in\b",
         "the accelerator reported an uncorrectable hardware (memory) error"),
    # NVML members that are the GPU or its board, by nvml.h name, pynvml class or the
    # nvmlErrorString / go-nvml text: NVML_ERROR_CORRUPTED_INFOROM ("Corrupted infoROM",
    # "infoROM is corrupted"), NVML_ERROR_IRQ_ISSUE ("NVIDIA Kernel detected an interrupt issue
    # with a GPU"), NVML_ERROR_INSUFFICIENT_POWER ("external power cables are not properly
    # attached"), NVML_ERROR_RESET_REQUIRED. nvidia-smi's "WARNING: infoROM is corrupted at
    # gpu ..." is a warning line and does not count: the GPU may still run.
    Rule("enum.nvml_hw", "gpu_hardware", R_GPU_HW_WEAK, 0.75,
         ("corrupted_inforom", "corruptedinforom", "corrupted inforom", "inforom is corrupted", "irq_issue", "irqissue",
          "interrupt issue with a gpu", "insufficient_power", "insufficientpower", "power cables are not properly",
          "reset_required", "resetrequired"),
         r"\bNVML_ERROR_(?:CORRUPTED_INFOROM|IRQ_ISSUE|INSUFFICIENT_POWER|RESET_REQUIRED)\b"
         r"|\bNVMLError_(?:CorruptedInforom|IrqIssue|InsufficientPower|ResetRequired)\b"
         r"|(?i:corrupted infoROM)|infoROM is corrupted|detected an interrupt issue with a GPU"
         r"|external power cables are not properly attached",
         "the GPU's board reported a fault (corrupted infoROM, interrupt issue, power, reset required)"),
    # NVML_ERROR_DRIVER_NOT_LOADED / pynvml's NVMLError_DriverNotLoaded ("Driver Not Loaded")
    # inside a job: the node's NVIDIA kernel module is not loaded - the same reading and
    # confidence as gpu.cuda_unknown_error's "couldn't communicate with the NVIDIA driver".
    # (nvidia-container-cli's "initialization error: nvml error: driver not loaded" before
    # the container starts is doc.env's, a container setup error.)
    Rule("enum.nvml_driver", "gpu_hardware", R_GPU_HW_WEAK, 0.55,
         ("nvmlerror_drivernotloaded", "nvml_error_driver_not_loaded"),
         r"\bNVMLError_DriverNotLoaded\b|\bNVML_ERROR_DRIVER_NOT_LOADED\b",
         "the NVIDIA driver is not loaded on the node"),
    # A device that stopped: ze_api.h / ur_api.h *_RESULT_ERROR_DEVICE_LOST; the HSA runtime's
    # "HW Exception by GPU node-1 (Agent handle: 0x..) reason :GPU Hang"; the amdgpu driver's
    # scheduler timeout "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout,
    # signaled seq=N, emitted seq=M" (newer kernels name the ring "gfx_0.0.0") and the reset
    # it starts, "amdgpu 0000:03:00.0: amdgpu: GPU reset begin!"; Neuron
    # NRT_EXEC_HW_ERR_COLLECTIVES ("Suspected hang in collectives operation due to hardware
    # errors on this or other workers"). A kernel that runs too
    # long or faults hangs a GPU too (like NVIDIA's XID 8/109), so: gpu_hardware at the
    # confidence of gpu.cuda_unknown_error, ranked under the job's own CUDA/HIP errors
    # (a "Memory access fault by GPU" before the hang is the cause).
    Rule("enum.accel_hang", "gpu_hardware", R_CUDA - 2, 0.55,
         ("error_device_lost", "gpu hang", "timeout, signaled seq", "gpu reset begin", "nrt_exec_hw_err_collectives"),
         r"\b(?:UR|ZE)_RESULT_ERROR_DEVICE_LOST\b|HW Exception by GPU node-\d+\b.{0,120}?reason ?:\s?GPU Hang"
         r"|\bring [\w.]+ timeout, signaled seq=|\bamdgpu\b.{0,200}?\bGPU reset begin!|\bNRT_EXEC_HW_ERR_COLLECTIVES\b",
         "the accelerator hung or was lost (GPU hang, ring timeout, reset, device lost)"),
    # The amdgpu driver's GPU page fault (gmc_v9_0.c): "amdgpu 0000:c1:00.0: amdgpu: [gfxhub0]
    # no-retry page fault (src_id:0 ring:24 vmid:8 pasid:32769, for process python pid ...)"
    # and older "amdgpu: VM fault (0x02, vmid 5, pasid 32772) at page N": the job's kernel
    # touched memory it does not own - AMD's counterpart of XID 31 (an MMU fault), which the
    # taxonomy counts as the application's.
    Rule("enum.amdgpu_page_fault", "cuda_runtime", R_CUDA - 1, 0.65,
         ("page fault (src_id", "vm fault ("),
         r"\bamdgpu\b.{0,200}?\[\w+\] (?:no-retry |retry )?page fault \(src_id|\bamdgpu\b.{0,200}?\bVM fault \(",
         "a GPU kernel accessed memory it does not own (amdgpu page fault)"),
    # Busy devices, like gpu.unavailable (CUDA's "busy or unavailable"): SynapseAI
    # synNoDeviceFound (8, "Device not found") as the Gaudi bridge prints it, "synStatus=8
    # [Device not found] Device acquire failed." (a previous process still holds the HPU);
    # Neuron NRT_EXEC_NC_BUSY (1005, "The NeuronCore is locked (in use) by another
    # model/thread").
    Rule("enum.accel_busy", "gpu_hardware", R_CUDA + 1, 0.55,
         ("device acquire failed", "synstatus=", "nrt_exec_nc_busy"),
         r"\bDevice acquire failed\b|synStatus=8 \[Device not found\]|\bNRT_EXEC_NC_BUSY\b",
         "the accelerator is held by another process or unavailable"),
    # ---- MPI ---------------------------------------------------------------------------
    # Open MPI help-mpi-api.txt [mpi-abort]: "MPI_ABORT was invoked on rank 0 in communicator
    # MPI_COMM_WORLD\nwith errorcode 1."; MPICH / Cray MPICH / Intel MPI: "application called
    # MPI_Abort(MPI_COMM_WORLD, 1) - process 0" (after "Abort(1) on node 0 (rank 0 in comm
    # 0):" or "MPICH ERROR [Rank 3] ..."). The program stopped itself after some error - its
    # own, a missing file, a failed allocation - and the errorcode does not say which, so,
    # like torchrun's "exitcode: 1" summary (vague.failed), this is a failure marker without a
    # cause: `unknown`, which a stronger rule's cause in the same log replaces and which keeps
    # a completion line from reading as a success.
    Rule("enum.mpi_abort", "unknown", R_VAGUE, 0.3,
         ("mpi_abort was invoked", "called mpi_abort("),
         r"\bMPI_ABORT was invoked on rank \d+|\bapplication called MPI_Abort\(",
         "the program aborted itself through MPI_Abort; the log does not say why"),
    # Error classes that are a wrong call in the program. Open MPI's fatal handler
    # (errhandler_predefined.c) prints "[host:pid] *** MPI_ERR_TRUNCATE: message truncated"
    # under "*** An error occurred in MPI_Recv"; MPICH's error stack header (errnames.txt)
    # reads "Fatal error in PMPI_Allreduce: Invalid communicator, error stack:" /
    # "Fatal error in PMPI_Test: Message truncated". MPI_ERR_OTHER / "Other MPI error",
    # MPI_ERR_INTERN and MPI_ERR_NO_MEM are left to the fabric and memory rules.
    Rule("enum.mpi_error_class", "software_exception", R_EXCEPTION, 0.65,
         ("mpi_err_", "fatal error in pmpi_", "fatal error in mpi_"),
         r"\*{3} MPI_ERR_(?:TRUNCATE|COMM|RANK|TYPE|COUNT|TAG|ROOT|BUFFER|ARG|OP|GROUP|REQUEST|DIMS|TOPOLOGY):"
         r"|Fatal error in P?MPI_\w+: (?:Invalid (?:root|rank|communicator|count|datatype|tag|argument|buffer pointer"
         r"|MPI_Op|MPI_Request|group)|Message truncated)\b",
         "the program made an invalid MPI call (wrong rank, communicator, count or a truncated message)"),
    # MPICH's Hydra launcher (pm/pmiserv): "=   BAD TERMINATION OF ONE OF YOUR APPLICATION
    # PROCESSES\n=   RANK 1 PID 4242 RUNNING AT n1\n=   KILLED BY SIGNAL: 9 (Killed)" or, in
    # older Hydra, "=   EXIT CODE: 9" / "EXIT CODE: 137". A SIGKILL with no cause printed is
    # what the OOM killer does: the same moderate confidence as shell.sigkill/src.sigkill.
    Rule("enum.hydra_sigkill", "host_oom", R_SIGNAL - 3, 0.55,
         ("killed by signal: ", "exit code: "),
         r"^\s*=\s+KILLED BY SIGNAL: 9\b|^\s*=\s+EXIT CODE: (?:9|137)\s*$",
         "an MPI rank was SIGKILLed with no other error, which is what the OOM killer does"),
    # The same block with a crash status: 128 + SIGILL/SIGTRAP/SIGABRT/SIGBUS/SIGFPE/SIGSEGV
    # ("=   EXIT CODE: 139"); "KILLED BY SIGNAL: 11 (Segmentation fault)" is sig.fatal's.
    Rule("enum.hydra_crash", "segfault_signal", R_SIGNAL, 0.75,
         ("exit code: ",), r"^\s*=\s+EXIT CODE: 1(?:3[2-6]|39)\s*$",
         "an MPI rank crashed with a fatal signal"),
    # MPICH's PMI wire-up (src/util/mpir_pmi.c, ch4 MPID_Init): "MPID_Init(286).......:  PMI2
    # init failed: 1", "MPIR_pmi_init(142)...: PMI_Get_appnum returned -1": the binary was
    # started without the process manager it was built for (no srun/--mpi=pmi2, a login node,
    # the wrong mpiexec); NERSC's and Slurm's MPI guides give exactly this stack.
    Rule("enum.mpich_pmi", "import_env", R_ENV, 0.7,
         ("init failed", "pmi_get_appnum returned"),  # no digit: "pmi2 init failed" would bypass the line memory
         r"\bPMI2 init failed\b|\bPMI_Get_appnum returned -1|\bPMI2?_Init failed\b",
         "MPI could not start: it was launched without the process manager (PMI) it was built for"),
    # MPICH ch4's OFI netmod (ofi_init.c / ofi_events.c) in its error stack: "open_fabric(1559):
    # OFI fi_getinfo() failed (ofi_init.c:1559:open_fabric:No data available)" - no usable
    # libfabric provider (CXI, verbs, EFA) on this node - and "OFI poll failed
    # (ofi_events.c:...)". Same class as net.libfabric's "fi_getinfo: provider X output empty
    # list".
    Rule("enum.mpich_ofi", "network_fabric", R_NET - 4, 0.7,
         ("failed (ofi_",), r"\bOFI \w+(?:\(\))? failed \(ofi_\w+\.c:",
         "MPI's network layer (libfabric) could not be set up or failed"),
    # ---- Slurm's own error table (src/common/slurm_errno.c, slurm_strerror) -------------
    # The step could not be started on a node: the communication members
    # (SLURM_COMMUNICATIONS_CONNECTION_ERROR "Communication connection failure", _SEND_ERROR
    # "Message send failure", _RECEIVE_ERROR "Message receive failure",
    # SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT "Zero Bytes were transmitted or received") after
    # srun's "Application launch failed:" / "Task launch for StepId=N.0 failed on node X:".
    # (doc.node_lost reads the connection-failure form with a node name already.)
    Rule("enum.slurm_launch_comm", "node_failure", R_NODE_FAIL - 12, 0.65,
         ("application launch failed", "task launch for"),
         r"(?:Application launch failed|Task launch for \S+ failed on node \S+): (?:Communication connection failure"
         r"|Message (?:send|receive) failure|Zero Bytes were transmitted or received|Communication shutdown failure)",
         "srun could not start the job's tasks on a node (the node or its slurmd did not answer)"),
    # slurmd's own members: ESLURMD_* "Slurmd could not create a batch directory or file",
    # "... set up environment for batch job", "... fork job", "... execve job", "... connect
    # IO", "... spawn I/O thread", "... set UID or GID", "Slurmd shared memory error", "User not
    # found on host", ESLURMD_PROLOG_FAILED "Job prolog failed": the node failed while setting
    # the job up, as slurm.node_setup reads "Prolog failure on node".
    Rule("enum.slurmd_setup", "node_failure", R_NODE_FAIL - 10, 0.7,
         ("slurmd could not", "slurmd shared memory error", "user not found on host", "job prolog failed"),
         r"\bSlurmd could not (?:create a batch|chown or chmod|set up environment|set UID or GID|set session ID"
         r"|spawn I/O thread|fork job|execve job|connect IO)|\bSlurmd shared memory error\b|\bUser not found on host\b"
         r"|\bJob prolog failed\b",
         "the node failed while setting up the job (slurmd could not prepare or start it)"),
    # Request members: the step or job asked for what the allocation or partition cannot give
    # (ESLURM_INVALID_TASK_MEMORY "Memory required by task is not available",
    # ESLURM_TOO_MANY_REQUESTED_CPUS "More processors requested than permitted",
    # ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE / _PART_CONFIG_UNAVAILABLE, "Requested more tasks
    # than available processors", the count/time/account/QOS/TRES/feature validations),
    # after srun's "Unable to create step for job N:" / "Unable to allocate resources:" or
    # sbatch's "Batch job submission failed:". The job's own request, like slurm.bad_option
    # (an option sbatch does not know): `software_exception`, "fix the configuration". (A
    # first version followed slurm.bad_request's `import_env`; two tuning rows of d and f,
    # labelled by two gatherers, read these as software_exception, and the taxonomy's
    # import_env is a broken environment, which a too-large --mem is not.)
    Rule("enum.slurm_bad_request", "software_exception", R_EXCEPTION + 5, 0.7,
         ("unable to create step for job", "unable to allocate resources", "batch job submission failed"),
         r"(?:Unable to create step for job \d+|Unable to allocate resources|Batch job submission failed): "
         r"(?:Memory required by task is not available|More processors requested than permitted"
         r"|Requested (?:node|partition) configuration (?:is )?not available|Requested more tasks than available processors"
         r"|(?:Task|Node|CPU) count specification invalid|Requested time limit is invalid"
         r"|Invalid account or account/partition combination specified|Invalid qos specification"
         r"|Job violates accounting/QOS policy|Invalid partition name specified|Invalid feature specification"
         r"|Invalid Trackable RESource \(TRES\) specification|Invalid job array specification"
         r"|Requested node configuration is not available)",
         "Slurm refused the job or step as requested (memory, CPUs, nodes, partition, account or QOS)"),
    # ---- network -----------------------------------------------------------------------
    # UCX ucs/type/status.h names as applications print them (UCX itself prints the strings,
    # which net.rdma_error/src.ucx_cqe read): UCS_ERR_ENDPOINT_TIMEOUT ("Endpoint timeout"),
    # _UNREACHABLE, _CONNECTION_RESET, _IO_ERROR, _REJECTED, _NOT_CONNECTED. UCX itself logs
    # reset/timeout at debug level when a peer simply went away, so a peer's earlier crash
    # is the cause (symptom).
    Rule("enum.ucx_status", "network_fabric", R_NET - 6, 0.6,
         ("ucs_err_",),
         r"\bUCS_ERR_(?:ENDPOINT_TIMEOUT|UNREACHABLE|CONNECTION_RESET|IO_ERROR|REJECTED|NOT_CONNECTED)\b",
         "the UCX transport between nodes failed", symptom=True),
    # gRPC status 14 as absl/gRPC print it: "UNAVAILABLE: failed to connect to all addresses"
    # (TensorFlow's distributed runtime, Triton clients, Beam workers): the peer could not be
    # reached over the network.
    Rule("enum.grpc_unavailable", "network_fabric", R_NET - 6, 0.55,
         ("failed to connect to all addresses",), r"\bUNAVAILABLE: failed to connect to all addresses",
         "a network peer could not be reached (gRPC UNAVAILABLE)", symptom=True),
    # ---- errno -------------------------------------------------------------------------
    # strerror texts the io.errno table lacked, as Python ("OSError: [Errno 117] Structure
    # needs cleaning: 'x'") and C programs print them: EFBIG 27 "File too large", EUCLEAN 117
    # "Structure needs cleaning" (a corrupted filesystem), ENOLCK 37 "No locks available"
    # (NFS lock daemon), ESHUTDOWN 108 "Cannot send after transport endpoint shutdown" (a
    # Lustre client evicted by its server).
    Rule("enum.errno_storage", "storage_io", R_STORAGE, 0.8,
         ("file too large", "structure needs cleaning", "no locks available",
          "cannot send after transport endpoint shutdown"),
         r"\[Errno 27\] File too large|: File too large\s*$|Structure needs cleaning|No locks available"
         r"|Cannot send after transport endpoint shutdown",
         "the filesystem refused the operation (file size limit, corruption, locks, or a lost server)"),
    # Go's syscall.Errno strings are lower-case (syscall/zerrors_linux_amd64.go: "input/output
    # error", "read-only file system", "stale file handle", "transport endpoint is not
    # connected", "remote I/O error", ...) inside os.PathError's "op path: err" (containerd,
    # docker, rclone, Go tools): "write /ckpt/shard.bin: input/output error". io.errno reads
    # glibc's capitalised strerror only; "no space left on device" and "disk quota exceeded"
    # are io.enospc's and fam.quota's already.
    Rule("enum.go_errno_storage", "storage_io", R_STORAGE, 0.8,
         ("input/output error", "read-only file system", "stale file handle", "stale nfs file handle",
          "transport endpoint is not connected", "remote i/o error", "structure needs cleaning", "file too large",
          "no locks available", "cannot send after transport endpoint shutdown"),
         r"\b(?:open|write|read|mkdir|stat|lstat|rename|remove|unlinkat|fsync|sync|close|create|readdirent|truncate)"
         r" \S{1,300}: (?:input/output error|read-only file system|stale (?:NFS )?file handle"
         r"|transport endpoint is not connected|remote I/O error|structure needs cleaning|file too large"
         r"|no locks available|cannot send after transport endpoint shutdown)\b",
         "the filesystem refused the operation (I/O error, read-only, stale handle, lost mount)"),
    # errno NAMES, as libuv (Node: "Error: ENOSPC: no space left on device, write"), Go
    # (syscall.Errno names in wrapped errors), Rust's ErrorKind-less errors and C programs
    # print them: ENOSPC, EDQUOT, EROFS, ESTALE, EIO, EUCLEAN, ENOLCK, EFBIG. Case-sensitive:
    # lower-case "erofs" is a filesystem type, not an errno. libuv's inotify "ENOSPC: System
    # limit for number of file watchers reached" is not a full disk.
    Rule("enum.errno_name_storage", "storage_io", R_STORAGE - 1, 0.75,
         ("enospc", "edquot", "erofs", "estale", "eio", "euclean", "enolck", "efbig"),
         r"(?<![\w-])E(?:NOSPC(?!: System limit for number of file watchers)|DQUOT|ROFS|STALE|IO|UCLEAN|NOLCK|FBIG)"
         r"\b(?![\w-])",
         "the filesystem refused the operation (full, quota, read-only, stale handle or I/O error)"),
    # ENOMEM by name (libuv "Error: ENOMEM: not enough memory, read"): the strerror "Cannot
    # allocate memory" is host.alloc_failed's.
    Rule("enum.errno_enomem", "host_oom", R_OOM - 2, 0.7,
         ("enomem",), r"(?<![\w-])ENOMEM\b(?![\w-])",
         "host memory allocation failed (ENOMEM)"),
    # libuv's fs errors name the path the job opened: "Error: ENOENT: no such file or
    # directory, open '/data/train.csv'" (scandir, stat, lstat, ...): the job's own input.
    Rule("enum.errno_enoent_path", "data_input", R_DATA - 3, 0.6,
         ("enoent: no such file",), r"\bENOENT: no such file or directory, \w+ '",
         "an input file the job opened does not exist"),
    # Node's child_process: "Error: spawn python3 ENOENT" - the program to run is not on PATH.
    Rule("enum.spawn_enoent", "import_env", R_ENV, 0.75,
         ("enoent",), r"\bspawn \S{1,200} ENOENT\b",
         "the program the job starts is not installed or not on PATH"),
)
