"""Rules for the job's own failures, written from what the tools print (issue 14).

The user-side classes (GPU and host memory, CUDA runtime, numeric divergence,
environment, input data, crash signals, exceptions) scored well on the
excerpts the earlier tables were tuned on and much worse on logs nobody had
read: a rule copied from one excerpt knows that excerpt's wording. Each rule
here is written from the message *family* the program itself prints - the
format string in its source or its documentation - so that it knows every
member of the family, not one thread's:

* memory on other accelerators and libraries: PyTorch's MPS/XPU allocators,
  HIP's hipErrorOutOfMemory, CuPy's pool ("Out of memory allocating N bytes"),
  the ALLOC_FAILED statuses of cuSOLVER/cuSPARSE/cuFFT/cuRAND, tsl's BFC
  allocator ("Allocator (GPU_0_bfc) ran out of memory trying to allocate"),
  accelerate's find_executable_batch_size; host memory as YARN, R, Go and
  systemd-oomd report it;
* cudaGetErrorString texts printed without torch's "CUDA error:" prefix,
  Paddle's "CUDA error(719)", TF's "Blas GEMM launch failed", Triton's
  "Triton Error [CUDA]" and OutOfResources, Numba's CudaAPIError, HIP/HSA
  errors, the CUDA math libraries' status enums, NVRTC;
* non-finite training as Lightning's EarlyStopping (check_finite), TF's
  NanTensorHook, Megatron-core's forward-loss check and Paddle's
  FLAGS_check_nan_inf report it;
* the dynamic linker's version and ELF errors, env(1) and csh/fish when the
  interpreter is missing, NumPy's C-API version check, JAX/TF/DeepSpeed/apex/
  Triton/xformers/bitsandbytes/flash-attn refusing the installed toolchain,
  "invalid device function" (NVIDIA: no code for this architecture);
* corrupt or unreadable inputs as pickle, gzip/zlib/lzma/tarfile, safetensors,
  torch.load, PIL, h5py, pyarrow, numpy, HF datasets, TFRecord, libsndfile,
  ffmpeg report them, and the OSError errnos that name the user's path;
* crash signals as absl's and glog's failure handlers, bash/zsh, srun, Open
  MPI, Python's subprocess and glibc's heap checks print them; panics of
  Rust and Go programs.

Same conventions as rules.py: lower-case literal keywords gate each rule (and
start with characters the other keywords already start with, so the keyword
trie gains no branch; and hold no digits: every keyword with a digit costs a
containment test of the whole text of every log), every repetition is bounded,
no hosts/paths/numbers.
Each rule has rows in tests/test_classify_rules_src_app.py: lines in the
documented format and look-alikes that must not match.
"""

from __future__ import annotations

from typing import Tuple

from gcm_checks.classify.rules import (
    R_CUDA, R_DATA, R_ENV, R_ENV_CUDA, R_EXCEPTION, R_NUMERIC, R_OOM, R_SIGNAL, Rule,
)

SRC_APP_RULES: Tuple[Rule, ...] = (
    # ---- accelerator memory ---------------------------------------------------------
    # PyTorch's allocators: "MPS backend out of memory (MPS allocated: 1.2 GB, other
    # allocations: ...)", "XPU out of memory. Tried to allocate ...", torch_npu's "NPU
    # out of memory"; HIP's enum; CuPy's pool "Out of memory allocating 1,024 bytes
    # (allocated so far: 0 bytes)"; the math libraries' allocation statuses (cuBLAS/
    # cuDNN's are rules.py's cuda.oom); Triton's driver "Triton Error [CUDA]: out of
    # memory"; accelerate's find_executable_batch_size halves the batch on every OOM
    # and gives up with "No executable batch size found, reached zero."; TensorRT's
    # allocator "[TRT] [E] [defaultAllocator.cpp::allocate::31] Error Code 1: Cuda
    # Runtime (out of memory)"; c10's driver-API path (expandable segments) "CUDA driver
    # error: out of memory", which rules.py's cuda.error would read as a runtime fault;
    # TensorRT's "Requested amount of GPU memory (N bytes) could not be allocated", ONNX
    # Runtime's CUDA provider "CUDA failure 2: out of memory ; GPU=0 ; hostname=...";
    # DeepSpeed's cuBLAS wrappers with status 3 (CUBLAS_STATUS_ALLOC_FAILED), see below.
    Rule("src.accel_oom", "gpu_oom", R_OOM, 0.9,
         ("mps backend out of memory", "xpu out of memory", "npu out of memory", "hiperroroutofmemory",
          "out of memory allocating", "cufft_alloc_failed", "cusolver_status_alloc_failed",
          "cusparse_status_alloc_failed", "curand_status_allocation_failed", "triton error [",
          "no executable batch size found", "cuda runtime (out of memory)", "cuda driver error: out of memory",
          "requested amount of gpu memory", "cuda failure ", "kernel execution error"),
         r"\bMPS backend out of memory\b|\b[XN]PU out of memory\b|\bhipErrorOutOfMemory\b"
         r"|\bOut of memory allocating [\d,]+ bytes\b|\bCUFFT_ALLOC_FAILED\b|\bCU(?:SOLVER|SPARSE)_STATUS_ALLOC_FAILED\b"
         r"|\bCURAND_STATUS_ALLOCATION_FAILED\b|Triton Error \[(?:CUDA|HIP)\]: out of memory"
         r"|No executable batch size found, reached zero|Error Code \d+: Cuda Runtime \(out of memory\)"
         r"|CUDA driver error: out of memory|Requested amount of GPU memory \(\d+ bytes\) could not be allocated"
         r"|CUDA failure \d+: out of memory|!!!! kernel execution error\. \(m: \d+, n: \d+, k: \d+, error: 3\)",
         "the job ran out of accelerator memory", warnings_ok=True),
    # tsl's BFC allocator (TensorFlow, JAX/XLA on GPU): "Allocator (GPU_0_bfc) ran out of
    # memory trying to allocate 2.00GiB (rounded to 2147483648)". The same line with "The
    # caller indicates that this is not a failure" is a performance warning only.
    Rule("src.bfc_oom", "gpu_oom", R_OOM - 4, 0.8,
         ("ran out of memory trying to allocate",),
         r"Allocator \(\w+\) ran out of memory trying to allocate[^\n]{0,400}",
         "the GPU allocator ran out of device memory", warnings_ok=True, exclude=r"not a failure"),
    # TensorFlow: "InternalError: Dst tensor is not initialized." is raised when the copy
    # to the GPU cannot get its destination buffer - device memory, in practice.
    Rule("src.tf_dst_tensor", "gpu_oom", R_OOM - 8, 0.6,
         ("dst tensor is not initialized",), r"Dst tensor is not initialized",
         "TensorFlow could not allocate a GPU buffer (device memory exhausted)"),
    # ---- host memory ------------------------------------------------------------------
    # YARN's container monitor: "Container [pid=1,containerID=c_1] is running beyond
    # physical memory limits. Current usage: 2.1 GB of 2 GB physical memory used" (Hadoop
    # 3: "is running 123B beyond the 'PHYSICAL' memory limit"); Spark: "Container killed
    # by YARN for exceeding memory limits"; R: "Error: cannot allocate vector of size
    # 1.2 Gb"; Go's runtime: "fatal error: runtime: out of memory"; systemd-oomd (oomd.c):
    # "Killed /user.slice/... due to memory pressure for ... being 82.36% > 80.00%" /
    # "due to memory used (...) / total (...)"; Dask's nanny "Worker exceeded 95% memory
    # budget. Restarting"; PyTorch on Windows "DefaultCPUAllocator: not enough memory: you
    # tried to allocate N bytes"; Node's "JavaScript heap out of memory"; glibc's "cannot
    # allocate memory for thread-local data". YARN, Spark and Dask log these at WARN.
    Rule("src.host_oom", "host_oom", R_OOM - 2, 0.85,
         ("beyond physical memory", "beyond virtual memory", "beyond the 'physical'", "beyond the 'virtual'",
          "killed by yarn for exceeding", "cannot allocate vector", "runtime: out of memory",
          "due to memory pressure for", "due to memory used", "memory budget. restarting",
          "defaultcpuallocator: not enough memory", "javascript heap out of memory", "memory for thread-local data"),
         r"is running (?:[\d.]+\w?B )?beyond (?:the '(?:PHYSICAL|VIRTUAL)' memory limit|(?:physical|virtual) memory limits)"
         r"|Container killed by YARN for exceeding (?:physical |virtual )?memory limits|cannot allocate vector of size"
         r"|fatal error: runtime: out of memory|systemd-oomd\[\d+\]: Killed \S+ due to memory (?:pressure for|used)"
         r"|exceeded \d+% memory budget\. Restarting|DefaultCPUAllocator: not enough memory"
         r"|JavaScript heap out of memory|cannot allocate memory for thread-local data",
         "the node or its resource manager ran out of memory for the job", warnings_ok=True),
    # Python's subprocess: "Command '[...]' died with <Signals.SIGKILL: 9>."; Open MPI:
    # "mpirun noticed that process rank 0 ... exited on signal 9 (Killed)." - a SIGKILL
    # with no cause printed, like rules_more's shell.sigkill (issue 14 item 4); joblib/loky's
    # TerminatedWorkerError: "The exit codes of the workers are {SIGKILL(-9)}".
    Rule("src.sigkill", "host_oom", R_SIGNAL - 3, 0.55,
         ("died with <signals.sigkill", "exited on signal", "exit codes of the workers are"),
         r"died with <Signals\.SIGKILL: 9>|exited on signal 9 \(Killed\)|exit codes of the workers are \{SIGKILL\(-9\)",
         "a process was SIGKILLed with no other error, which is what the OOM killer does"),
    # ---- CUDA runtime -----------------------------------------------------------------
    # cudaGetErrorString texts that other frameworks print without torch's "CUDA error:"
    # prefix; Paddle's "ExternalError: CUDA error(719), unspecified launch failure."
    # (and "CUBLAS error(13)", "CUDNN error(8)"); TensorFlow's "Blas GEMM launch failed :
    # a.shape=(...)", "cuDNN launch failure", "GPU sync failed"; cuBLASLt's
    # "cublasLt ran into an error!"; Triton's driver "Triton Error [CUDA]: <string>"
    # (its OOM is src.accel_oom); Numba's "CudaAPIError: [719] Call to cuCtxSynchronize
    # results in UNKNOWN_CUDA_ERROR"; ROCm: "HIP error: ...", hipError* enums, "Memory
    # access fault by GPU node-2 (Agent handle: 0x..) on address 0x..", HSA_STATUS_ERROR_*;
    # the math libraries' status enums and NVRTC's; TensorRT's "Error Code 1: Cuda
    # Runtime (an illegal memory access was encountered)"; cuDNN's v8/frontend API in
    # PyTorch: "cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support
    # the graph.", "GET was unable to find an engine to execute this computation"; ONNX
    # Runtime's "CUDA failure 700: an illegal memory access was encountered ; GPU=0";
    # DeepSpeed's cuBLAS/rocBLAS GEMM wrappers (csrc cublas_wrappers): "!!!! kernel
    # execution error. (m: 768, n: 4608, k: 3072, error: 13)" - the cublasStatus_t.
    Rule("src.cuda_runtime", "cuda_runtime", R_CUDA - 1, 0.8,
         ("the launch timed out", "too many resources requested", "invalid configuration argument",
          "operation not permitted when stream is capturing", "invalid resource handle", "cuda error(",
          "cublas error(", "cudnn error(", "gemm launch failed", "cudnn launch failure", "gpu sync failed",
          "cublaslt ran into an error", "triton error [", "cudaapierror", "hip error:", "hiperror",
          "memory access fault by gpu", "hsa_status_error", "cusolver_status_", "cusparse_status_", "cufft_",
          "curand_status_", "nvrtc_error_", "cuda runtime (", "cuda driver (",
          "cudnn frontend error", "unable to find an engine", "cuda failure ", "kernel execution error"),
         r"the launch timed out and was terminated|too many resources requested for launch"
         r"|invalid configuration argument|operation not permitted when stream is capturing|invalid resource handle"
         r"|\b(?:CUDA|CUBLAS|CUDNN) error\(\d+\)|Blas \w*GEMM launch failed|cuDNN launch failure|GPU sync failed"
         r"|cublasLt ran into an error|Triton Error \[(?:CUDA|HIP)\]: |\bCudaAPIError: \[\d+\] Call to \w+ results in"
         r"|HIP error: |\bhipError(?!OutOfMemory\b|Success\b)\w+|Memory access fault by GPU node-\d+|HSA_STATUS_ERROR_\w+"
         r"|\bCUSOLVER_STATUS_(?!SUCCESS\b)\w+|\bCUSPARSE_STATUS_(?!SUCCESS\b)\w+"
         r"|\bCUFFT_(?:EXEC_FAILED|INTERNAL_ERROR|INVALID_PLAN|SETUP_FAILED|INVALID_VALUE|INVALID_SIZE|INVALID_DEVICE)\b"
         r"|\bCURAND_STATUS_(?!SUCCESS\b)\w+|\bNVRTC_ERROR_\w+|Error Code \d+: Cuda (?:Runtime|Driver) \((?!out of memory\))"
         r"|cuDNN Frontend error: |GET was unable to find an engine to execute this computation"
         r"|CUDA failure \d+: (?!out of memory)|!!!! kernel execution error\. \(m: \d+, n: \d+, k: \d+, error: (?!3\))\d+\)",
         "a GPU kernel, library call or launch failed"),
    # Triton: "triton.runtime.errors.OutOfResources: out of resource: shared memory,
    # Required: 98304, Hardware limit: 65536. Reducing block sizes or `num_stages` may
    # help." - the kernel's configuration does not fit this GPU.
    Rule("src.triton_resources", "cuda_runtime", R_CUDA - 1, 0.75,
         ("out of resource:",), r"out of resource: (?:shared memory|threads|registers)\b",
         "a Triton kernel asked for more shared memory or threads than this GPU has"),
    # XLA (JAX) wraps a failed GPU call as "XlaRuntimeError: INTERNAL: ..." with the
    # CUDA/cuDNN/cuBLAS cause inside the message; PJRT logs it as "Execution of replica 0
    # failed: INTERNAL: Failed to launch CUDA kernel ...".
    Rule("src.xla_internal_gpu", "cuda_runtime", R_CUDA - 2, 0.7,
         ("xlaruntimeerror: internal", "failed: internal:"),
         r"(?:XlaRuntimeError|Execution of replica \d+ failed): INTERNAL: [^\n]{0,300}?(?:CUDA|cuDNN|cudnn|cuBLAS|cublas|Failed to launch)",
         "an XLA GPU kernel or library call failed"),
    # ---- numeric divergence -----------------------------------------------------------
    # Lightning EarlyStopping(check_finite=True): "Monitored metric val_loss = nan is not
    # finite. Previous best value was 0.123. Signaling Trainer to stop."; TF's
    # NanTensorHook raises NanLossDuringTrainingError("NaN loss during training.");
    # Megatron-core: "found NaN in local forward loss calculation"; Paddle's
    # FLAGS_check_nan_inf: "There are NAN or INF (num_nan=1, num_inf=0, num_zero=0) in
    # [op=divide ...]"; torch.distributions' argument validation: "Expected parameter loc
    # (Tensor of shape (64, 2)) of distribution Normal(...) to satisfy the constraint
    # Real(), but found invalid values:\ntensor([[nan, nan], ..." (the network's outputs
    # went NaN); torch.multinomial during sampling: "probability tensor contains either
    # `inf`, `nan` or element < 0".
    Rule("src.numeric", "numeric_divergence", R_NUMERIC, 0.85,
         ("is not finite. previous best", "nanlossduringtrainingerror", "nan loss during training",
          "found nan in local forward", "found inf in local forward", "nan or inf", "but found invalid values",
          "probability tensor contains"),
         r"Monitored metric \S+ = [^\n]{0,80}? is not finite\. Previous best|NanLossDuringTrainingError"
         r"|NaN loss during training|found (?:NaN|Inf) in local forward loss|There are NAN or INF \(num_nan="
         r"|to satisfy the constraint [^\n]{1,120}, but found invalid values"
         r"|probability tensor contains either `inf`, `nan` or element < 0",
         "the loss or the monitored metric became NaN/Inf"),
    # ---- software environment ---------------------------------------------------------
    # The dynamic linker: "version `GLIBCXX_3.4.30' not found (required by ...)" for any
    # versioned symbol set (GLIBC, GLIBCXX, CXXABI, GCC, OMP, libcublasLt), "wrong ELF
    # class: ELFCLASS32", "invalid ELF header", "cannot enable executable stack as shared
    # object requires", "cannot allocate memory in static TLS block" (a library dlopen'ed
    # too late, e.g. libgomp on aarch64 - not host memory); env(1): "/usr/bin/env:
    # 'python': No such file or directory" (also "python\r" from a DOS line end);
    # csh/tcsh "python: Command not found."; fish "fish: Unknown command: python".
    Rule("src.loader", "import_env", R_ENV, 0.85,
         ("not found (required by", "wrong elf class", "invalid elf header", "cannot enable executable stack",
          "static tls block", "no such file or directory", "command not found.", "unknown command"),
         r"version [`'\u2018][^\s'\u2019]{1,80}['\u2019] not found \(required by|wrong ELF class: ELFCLASS\d+"
         r"|invalid ELF header|cannot enable executable stack as shared object requires"
         r"|cannot allocate memory in static TLS block"
         r"|(?:^|\s)(?:/usr)?(?:/bin/)?env: [^\s:]{1,80}: No such file or directory"
         r"|^[\w.+-]{1,80}: Command not found\.\s*$|^fish: Unknown command:? ",
         "the program or a library it needs cannot be loaded in this environment"),
    # Version checks in the tools' own code: NumPy's C API ("module compiled against API
    # version 0x10 but this version of numpy is 0xe"); JAX ("jaxlib version 0.4.30 is newer
    # than and incompatible with jax version 0.4.13", "Found CUDA version 12000, but JAX
    # was built against version 12020"); TensorFlow ("Loaded runtime CuDNN library: 9.1.0
    # but source was compiled with: 9.3.0", "DNN library is not found."); DeepSpeed's op
    # builder ("CUDA_HOME does not exist, unable to compile CUDA op(s)", "Installed CUDA
    # version 11.8 does not match the version torch was compiled with 12.1"); apex ("Cuda
    # extensions are being compiled with a version of Cuda that does not match the version
    # used to compile Pytorch binaries"); Triton ("Failed to find C compiler. Please
    # specify via CC environment variable.", "... which is too old to be supported by the
    # triton GPU compiler"); transformers ("the package flash_attn seems to be not
    # installed", flash-attn's setup "FlashAttention is only supported on CUDA 11.7 and
    # above"); xformers ("No operator found for `memory_efficient_attention_forward`");
    # bitsandbytes ("CUDA Setup failed despite GPU being available"); NVRTC ("nvrtc:
    # error: invalid value for --gpu-architecture (-arch)"); Intel OpenMP loaded twice ("OMP:
    # Error #15: Initializing libiomp5.so, but found libiomp5.so already initialized.");
    # protobuf's generated code older than the runtime ("TypeError: Descriptors cannot be
    # created directly."); torch.utils.cpp_extension ("RuntimeError: Error compiling
    # objects for extension"); old Triton ("AssertionError: libcuda.so cannot found!").
    Rule("src.toolchain", "import_env", R_ENV_CUDA, 0.85,
         ("module compiled against", "incompatible with jax version", "but jax was built against",
          "but source was compiled with", "dnn library is not found", "unable to compile cuda op",
          "does not match the version torch was compiled with", "does not match the version used to compile",
          "failed to find c compiler", "too old to be supported by the triton", "flash_attn seems to be not installed",
          "no operator found for", "cuda setup failed despite", "nvrtc: error:", "is only supported on cuda",
          "omp: error #", "descriptors cannot be created directly", "error compiling objects for extension",
          "libcuda.so cannot found"),
         r"module compiled against (?:ABI|API) version 0x[0-9a-fA-F]+ but this version of numpy is"
         r"|is newer than and incompatible with jax version|but JAX was built against version"
         r"|Loaded runtime CuDNN library: \S+ (?:\(compatibility version \d+\) )?but source was compiled with"
         r"|DNN library is not found|CUDA_HOME does not exist, unable to compile CUDA op"
         # DeepSpeed's op builder goes on "... compiled with 11.7 but since the APIs are compatible,
         # accepting this combination": a note, not an error.
         r"|does not match the version torch was compiled with(?! \S+ but since the APIs are compatible)"
         r"|does not match the version used to compile Pytorch"
         r"|Failed to find C compiler\. Please specify via CC|too old to be supported by the triton GPU compiler"
         r"|package flash_attn seems to be not installed|No operator found for `\w+`"
         r"|CUDA Setup failed despite GPU being available|OMP: Error #15: Initializing \S+, but found \S+ already initialized"
         r"|Descriptors cannot be created directly|Error compiling objects for extension|libcuda\.so cannot found"
         r"|FlashAttention is only supported on CUDA [\d.]+ and above|nvrtc: error: (?:invalid value for --gpu-architecture|failed to open)",
         "the installed libraries or toolchain do not match what the code was built for"),
    # A build the job (or its setup step) runs that fails: GNU ld through gcc
    # ("collect2: error: ld returned 1 exit status"), pip ("error: subprocess-exited-with-
    # error", "ERROR: Could not build wheels for flash-attn, which is required to install
    # pyproject.toml-based projects", "ERROR: Failed building wheel for x" is
    # rules_more's).
    Rule("src.build_failed", "import_env", R_ENV - 1, 0.75,
         ("ld returned", "subprocess-exited-with-error", "could not build wheels for"),
         r"collect2: error: ld returned \d+ exit status|error: subprocess-exited-with-error"
         r"|ERROR: Could not build wheels for \S+",
         "building or installing a package for the job failed"),
    # CUDA's cudaErrorInvalidDeviceFunction ("invalid device function": "the requested
    # device function does not exist or is not compiled for the proper device
    # architecture") and HIP's, the classic ROCm gfx-version mismatch: the build, not
    # the job's code. Above cuda.error, which would read it as a runtime fault.
    Rule("src.invalid_device_function", "import_env", R_ENV_CUDA, 0.75,
         ("invalid device function", "invaliddevicefunction"),
         r"\binvalid device function\b|\b(?:cuda|hip)ErrorInvalidDeviceFunction\b",
         "the GPU code was not built for this GPU's architecture"),
    # Linear algebra that fails on non-finite or degenerate inputs: torch.linalg
    # ("linalg.cholesky: The factorization could not be completed because the input is
    # not positive-definite (the leading minor of order 3 is not positive-definite).",
    # "linalg.eigh: The algorithm failed to converge because the input matrix is
    # ill-conditioned or has too many repeated eigenvalues"); numpy.linalg ("LinAlgError:
    # SVD did not converge", "Matrix is not positive definite"). Usually NaN upstream;
    # moderate confidence.
    Rule("src.numeric_linalg", "numeric_divergence", R_NUMERIC - 4, 0.65,
         ("factorization could not be completed", "failed to converge because", "did not converge",
          "matrix is not positive definite"),
         r"factorization could not be completed because the input is not positive-definite"
         r"|failed to converge because the input matrix is ill-conditioned|LinAlgError: SVD did not converge"
         r"|LinAlgError: Matrix is not positive definite",
         "a linear-algebra routine failed on non-finite or degenerate values"),
    # ---- environment: no GPU where the code needs one, code built for another ---------
    # cudaErrorNoDevice "no CUDA-capable device is detected" (CUDA_VISIBLE_DEVICES empty,
    # no --gres); torch.load of a CUDA checkpoint on a CPU-only setup: "Attempting to
    # deserialize object on a CUDA device but torch.cuda.is_available() is False"; c10d:
    # "ProcessGroupNCCL is only supported with GPUs, no GPUs found!"; vLLM: "Bfloat16 is
    # only supported on GPUs with compute capability of at least 8.0"; TensorFlow: "Op
    # type not registered 'X' in binary running on host" (the graph needs an op this
    # TensorFlow build lacks); Inductor: "InvalidCxxCompiler: No working C++ compiler
    # found". Node evidence (a GPU that fell off the bus) outranks these.
    Rule("src.no_device", "import_env", R_ENV_CUDA, 0.65,
         ("no cuda-capable device is detected", "cudaerrornodevice", "cuda_error_no_device",
          "torch.cuda.is_available() is false", "no gpus found", "is only supported on gpus with compute capability",
          "op type not registered", "invalidcxxcompiler", "no working c++ compiler"),
         r"no CUDA-capable device is detected|\bcudaErrorNoDevice\b|\bCUDA_ERROR_NO_DEVICE\b"
         r"|Attempting to deserialize object on a CUDA device but torch\.cuda\.is_available\(\) is False"
         r"|ProcessGroupNCCL is only supported with GPUs, no GPUs found"
         r"|Bfloat16 is only supported on GPUs with compute capability of at least"
         r"|Op type not registered '\w+' in binary running on|InvalidCxxCompiler|No working C\+\+ compiler found",
         "the job needs a GPU, a feature or a compiler this environment does not provide"),
    # ---- input data -------------------------------------------------------------------
    # TensorFlow's file system: "NotFoundError: data/train-0.tfrecord; No such file or
    # directory", tf.io.gfile.glob "NotFoundError: Failed to find any matching files for
    # data/*.tfrecord"; Hugging Face Hub: "OSError: org/model is not a local folder and is
    # not a valid model identifier listed on 'https://huggingface.co/models'",
    # RepositoryNotFoundError / RevisionNotFoundError / EntryNotFoundError / GatedRepoError
    # (the model or dataset the job names is not there, or not readable with its token).
    Rule("src.data_missing", "data_input", R_DATA - 2, 0.75,
         ("notfounderror", "not a valid model identifier", "gatedrepoerror"),
         r"NotFoundError: [^\n]{0,300}; No such file or directory|NotFoundError: Failed to find any matching files for"
         r"|is not a local folder and is not a valid model identifier"
         r"|\b(?:RepositoryNotFoundError|RevisionNotFoundError|EntryNotFoundError|GatedRepoError)\b",
         "a file, dataset or model the job names does not exist or cannot be read"),
    # What readers raise on a corrupt or unreadable file: pickle ("pickle data was
    # truncated"), gzip/zlib/lzma/tarfile, safetensors (SafetensorError), torch.load
    # ("PytorchStreamReader failed reading zip archive", "Invalid magic number; corrupt
    # file?"), PIL ("cannot identify image file", "broken data stream when reading image
    # file"), h5py ("Unable to synchronously open file (file signature not found)",
    # "(truncated file: eof = ...)", "Unable to open object (object 'x' doesn't exist)"),
    # pyarrow ("Parquet magic bytes not found in footer"), numpy ("Failed to interpret
    # file 'x.npy' as a pickle", "Cannot load file containing pickled data when
    # allow_pickle=False"), HF datasets (NonMatchingChecksumError,
    # NonMatchingSplitsSizesError, DatasetGenerationCastError), TensorFlow (DataLossError,
    # "corrupted record at 12", "Invalid JPEG data or crop window"), csv ("line contains
    # NUL"), libsndfile ("Format not recognised", "File contains data in an unknown
    # format"), ffmpeg ("moov atom not found", "Invalid data found when processing
    # input"), torchvision ("Found 0 files in subfolders of"), DataLoader on an empty
    # dataset ("num_samples should be a positive integer value, but got num_samples=0");
    # OpenCV on an image that did not load ("error: (-215:Assertion failed) !ssize.empty()
    # in function 'resize'"); Python's json decoder ("Expecting value: line 1 column 1
    # (char 0)", "Extra data: line 2 column 1 (char 12)"), serde_json inside tokenizers
    # ("Exception: expected value at line 1 column 1" - a tokenizer.json that is an LFS
    # pointer or an HTML page); zipfile ("There is no item named 'x' in the archive");
    # Caffe's ImageData/VideoData layers reading an empty list ("image_data_layer.cpp:51]
    # A total of 0 images." - the crash that follows is its consequence).
    Rule("src.data_corrupt", "data_input", R_DATA, 0.8,
         ("pickle data was truncated", "compressed file ended before", "while decompressing data",
          "not a gzipped file", "badgzipfile", "readerror", "lzmaerror", "safetensorerror", "pytorchstreamreader failed",
          "invalid magic number", "cannot identify image file", "broken data stream", "open file (",
          "open object (", "magic bytes not found", "failed to interpret file", "allow_pickle=false",
          "nonmatchingchecksumerror", "nonmatchingsplitssizeserror", "datasetgenerationcasterror", "datalosserror",
          "corrupted record at", "truncated record at", "invalid jpeg data", "line contains nul", "format not recognised",
          "data in an unknown format", "moov atom not found", "invalid data found when processing input",
          "in subfolders of", "num_samples should be a positive integer",
          "empty() in function", "(char ", "expected value at line", "in the archive", "a total of"),
         r"pickle data was truncated|Compressed file ended before the end-of-stream marker was reached"
         r"|Error -?\d+ while decompressing data|Not a gzipped file|BadGzipFile|tarfile\.ReadError"
         r"|\bReadError: (?:file could not be opened successfully|unexpected end of data|empty file|bad checksum"
         r"|truncated header|invalid header)|LZMAError: (?:Input format not supported|Corrupt input data|Compressed data ended)"
         r"|SafetensorError|PytorchStreamReader failed|Invalid magic number; corrupt file"
         r"|cannot identify image file|broken data stream when reading image file"
         r"|Unable to (?:synchronously )?open file \((?:file signature not found|truncated file|bad object header"
         r"|bad symbol table|addr overflow)|Unable to (?:synchronously )?open object \(object '[^'\n]{1,200}' doesn't exist\)"
         r"|Parquet magic bytes not found in footer|Failed to interpret file \S{1,300} as a pickle"
         r"|Cannot load file containing pickled data when allow_pickle=False"
         r"|NonMatchingChecksumError|NonMatchingSplitsSizesError|DatasetGenerationCastError"
         r"|DataLossError|(?:corrupted|truncated) record at \d+|Invalid JPEG data"
         r"|line contains NUL|Format not recognised|File contains data in an unknown format|moov atom not found"
         r"|Invalid data found when processing input|Found 0 (?:files|images) in subfolders of"
         r"|num_samples should be a positive integer value, but got num_samples=0"
         r"|\(-215(?::Assertion failed)?\) ?!_?\w+\.empty\(\) in function"
         r"|(?:Expecting (?:value|property name enclosed in double quotes|',' delimiter|':' delimiter)"
         r"|Unterminated string starting at|Extra data|Invalid control character at): line \d+ column \d+ \(char \d+\)"
         r"|Exception: expected value at line \d+ column \d+|There is no item named '[^'\n]{1,200}' in the archive"
         r"|\] A total of 0 (?:images|batches)\.",
         "an input file is corrupt, empty or in the wrong format"),
    # OSError errnos that name the job's own path: EISDIR ("IsADirectoryError: [Errno 21]
    # Is a directory: 'data/'"), ENOTDIR ([Errno 20]), ENAMETOOLONG ([Errno 36]).
    Rule("src.data_path_errno", "data_input", R_DATA - 2, 0.7,
         ("is a directory", "not a directory", "file name too long"),
         r"\[Errno 21\] Is a directory|\[Errno 20\] Not a directory|\[Errno 36\] File name too long",
         "a path the job was given is not what the job expects"),
    # ---- crash signals ----------------------------------------------------------------
    # absl's failure signal handler (TensorFlow, JAX, Ray, gRPC): "*** SIGSEGV received at
    # time=1690000000 on cpu 3 ***"; glog's: "*** SIGFPE (@0x7f..) received by PID 23626
    # (TID 0x7f..) from PID 0; stack trace: ***"; shells: "Trace/breakpoint trap",
    # "Bad system call", macOS "Abort trap: 6", zsh "illegal hardware instruction", bash's
    # job status "./run.sh: line 12: 4242 Aborted (core dumped) python train.py";
    # DataLoader "killed by signal: Aborted." (and other crash signals); Python's
    # subprocess "died with <Signals.SIGSEGV: 11>."; Open MPI "exited on signal 6
    # (Aborted)"; srun "task 0: Aborted"; glibc's heap checks ("corrupted size vs.
    # prev_size", "corrupted double-linked list", "munmap_chunk(): invalid pointer",
    # "realloc(): invalid next size"); AddressSanitizer reports; joblib/loky's "The exit
    # codes of the workers are {SIGSEGV(-11)}".
    Rule("src.crash_signal", "segfault_signal", R_SIGNAL, 0.8,
         ("received at time=", "received by pid", "trace/breakpoint trap", "bad system call", "abort trap",
          "illegal hardware instruction", "aborted", "killed by signal:", "died with <signals.", "exited on signal",
          "corrupted size", "corrupted double-linked", "munmap_chunk", "realloc():", "addresssanitizer",
          "exit codes of the workers are"),
         r"\*\*\* SIG(?:SEGV|ABRT|BUS|ILL|FPE|TRAP) received at time=\d+|\*\*\* SIG(?:SEGV|ABRT|BUS|ILL|FPE) \(@0?x?[0-9a-f]*\) received by PID"
         r"|Trace/breakpoint trap|Bad system call|Abort trap: 6|illegal hardware instruction"
         r"|^(?:\S+: line \d+:\s+\d+\s+)?Aborted(?:\s+\(core dumped\))?(?:\s{2,}\S[^\n]{0,400})?$"
         r"|killed by signal: (?:Aborted|Illegal instruction|Floating point exception|Trace/breakpoint trap)"
         r"|died with <Signals\.SIG(?:SEGV|ABRT|BUS|ILL|FPE): \d+>|exited on signal (?:4|6|7|8|11) \("
         r"|tasks? [\d,-]+: (?:Aborted|Illegal instruction|Floating point exception)"
         r"|corrupted size vs\. prev_size|corrupted double-linked list|munmap_chunk\(\): invalid pointer"
         r"|realloc\(\): invalid|ERROR: AddressSanitizer: |exit codes of the workers are \{SIG(?:SEGV|ABRT|BUS|ILL|FPE)\(",
         "a process crashed with a fatal signal"),
    # ---- exceptions in other languages ----------------------------------------------
    # libstdc++'s terminate handler in a glog/absl stack trace ("@ 0x7f.. __gnu_cxx::
    # __verbose_terminate_handler()", then std::terminate, __cxa_throw): an uncaught C++
    # exception, also when the "terminate called after throwing" line itself was lost.
    # Below rules_more's cpp.uncaught_exception, above the abort it causes.
    Rule("src.cpp_terminate_frame", "software_exception", R_SIGNAL + 2, 0.6,
         ("verbose_terminate_handler",), r"__gnu_cxx::__verbose_terminate_handler\(\)",
         "an uncaught C++ exception aborted the process"),
    # Rust: "thread 'main' panicked at src/main.rs:2:5:" (older: "panicked at 'msg',");
    # Go: "panic: runtime error: index out of range [3] with length 3"; Julia:
    # "ERROR: LoadError: ArgumentError: ...".
    Rule("src.panic", "software_exception", R_EXCEPTION, 0.7,
         ("panicked at", "panic: ", "error: loaderror"),
         r"^thread '[^'\n]{1,80}' panicked at |^panic: |^ERROR: LoadError: ",
         "the program panicked (an unhandled error in Rust, Go or Julia code)"),
)

