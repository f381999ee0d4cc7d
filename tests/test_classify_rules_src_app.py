"""Rules for the job's own failures, from the tools' source (gcm_checks/classify/rules_src_app.py).

Every row is written from the format string the tool's source or documentation
prints (hosts, ids, paths and numbers made up), never copied from a corpus
excerpt; each family also has look-alikes that must not be read as it.
"""

from __future__ import annotations


from classify_cases import cls, tb  # noqa: E402 - tests/classify_cases.py


CASES = [
    # ---- accelerator memory
    ("src.accel_oom", "gpu_oom", tb("RuntimeError: MPS backend out of memory (MPS allocated: 17.91 GB, other allocations:"
                                    " 1.02 GB, max allowed: 18.13 GB). Tried to allocate 256.00 MB on private pool.")),
    ("src.accel_oom", "gpu_oom", tb("torch.OutOfMemoryError: XPU out of memory. Tried to allocate 3.00 GiB. GPU 0 has a"
                                    " total capacity of 47.98 GiB.")),
    ("src.accel_oom", "gpu_oom", tb("RuntimeError: NPU out of memory. Tried to allocate 1.50 GiB (NPU 3; 60.97 GiB total"
                                    " capacity)")),
    ("src.accel_oom", "gpu_oom", "RuntimeError: HIP error: hipErrorOutOfMemory"),
    ("src.accel_oom", "gpu_oom", tb("cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 4,294,967,296 bytes"
                                    " (allocated so far: 12,884,901,888 bytes).")),
    ("src.accel_oom", "gpu_oom", tb("RuntimeError: cusolver error: CUSOLVER_STATUS_ALLOC_FAILED, when calling"
                                    " `cusolverDnCreate(handle)`")),
    ("src.accel_oom", "gpu_oom", tb("RuntimeError: cuFFT error: CUFFT_ALLOC_FAILED")),
    ("src.accel_oom", "gpu_oom", tb("RuntimeError: Triton Error [CUDA]: out of memory")),
    ("src.accel_oom", "gpu_oom", tb("RuntimeError: No executable batch size found, reached zero.")),
    ("src.bfc_oom", "gpu_oom",
     "2024-03-01 10:11:12.345678: W tensorflow/tsl/framework/bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out of"
     " memory trying to allocate 4.00GiB (rounded to 4294967296)requested by op MatMul"),
    ("src.tf_dst_tensor", "gpu_oom", tb("tensorflow.python.framework.errors_impl.InternalError: Dst tensor is not"
                                        " initialized.")),
    # ---- host memory
    ("src.host_oom", "host_oom",
     "Container [pid=4242,containerID=container_1700000000000_0001_01_000002] is running beyond physical memory limits."
     " Current usage: 4.1 GB of 4 GB physical memory used; 6.2 GB of 8.4 GB virtual memory used. Killing container."),
    ("src.host_oom", "host_oom",
     "Container [pid=4242,containerID=container_1_0001_01_000002] is running 123456B beyond the 'PHYSICAL' memory limit."),
    ("src.host_oom", "host_oom",
     "ExecutorLostFailure (executor 7 exited caused by one of the running tasks) Reason: Container killed by YARN for"
     " exceeding memory limits. 11.2 GB of 11 GB physical memory used."),
    ("src.host_oom", "host_oom", "Error: cannot allocate vector of size 3.7 Gb\nExecution halted"),
    ("src.host_oom", "host_oom", "fatal error: runtime: out of memory\n\ngoroutine 1 [running]:"),
    ("src.host_oom", "host_oom",
     "Mar 01 10:11:12 n3 systemd-oomd[812]: Killed /user.slice/user-1000.slice/session-3.scope due to memory pressure"
     " for /user.slice/user-1000.slice being 81.20% > 80.00% for > 20s with reclaim activity"),
    ("src.sigkill", "host_oom",
     "subprocess.CalledProcessError: Command '['python', 'prep.py']' died with <Signals.SIGKILL: 9>."),
    ("src.sigkill", "host_oom",
     "mpirun noticed that process rank 5 with PID 4242 on node n12 exited on signal 9 (Killed)."),
    # ---- CUDA runtime
    ("src.cuda_runtime", "cuda_runtime", "cudaGetLastError() failed: too many resources requested for launch"),
    ("src.cuda_runtime", "cuda_runtime", "kernel launch: the launch timed out and was terminated"),
    ("src.cuda_runtime", "cuda_runtime",
     "OSError: (External) CUDA error(719), unspecified launch failure.\n  [Hint: 'cudaErrorLaunchFailure'.]"),
    ("src.cuda_runtime", "cuda_runtime",
     "OSError: (External) CUBLAS error(13).\n  [Hint: Please search for the error code(13) on website.]"),
    ("src.cuda_runtime", "cuda_runtime",
     "tensorflow.python.framework.errors_impl.InternalError: Blas GEMM launch failed : a.shape=(64, 512),"
     " b.shape=(512, 10), m=64, n=10, k=512"),
    ("src.cuda_runtime", "cuda_runtime", "tensorflow.python.framework.errors_impl.InternalError: GPU sync failed"),
    ("src.cuda_runtime", "cuda_runtime", tb("RuntimeError: Triton Error [CUDA]: invalid argument")),
    ("src.cuda_runtime", "cuda_runtime",
     "numba.cuda.cudadrv.driver.CudaAPIError: [719] Call to cuCtxSynchronize results in UNKNOWN_CUDA_ERROR"),
    ("src.cuda_runtime", "cuda_runtime",
     "Memory access fault by GPU node-2 (Agent handle: 0x55d1c2a0b3f0) on address 0x7f1234500000. Reason: Page not"
     " present or supervisor privilege."),
    ("src.cuda_runtime", "cuda_runtime", tb("RuntimeError: HIP error: an illegal memory access was encountered")),
    ("src.cuda_runtime", "cuda_runtime", tb("RuntimeError: HIP error: hipErrorLaunchFailure")),
    ("src.cuda_runtime", "cuda_runtime", tb("RuntimeError: cusolver error: CUSOLVER_STATUS_EXECUTION_FAILED, when calling"
                                            " `cusolverDnSgetrf( handle, m, n, dA, ldda, dwork, ipiv, info)`")),
    ("src.cuda_runtime", "cuda_runtime", tb("RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR")),
    ("src.cuda_runtime", "cuda_runtime", "cupy_backends.cuda.libs.nvrtc.NVRTCError: NVRTC_ERROR_COMPILATION (6)"),
    ("src.triton_resources", "cuda_runtime",
     tb("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 131072, Hardware limit:"
        " 101376. Reducing block sizes or `num_stages` may help.")),
    ("src.xla_internal_gpu", "cuda_runtime",
     tb("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: run time error:"
        " custom call 'xla.gpu.gemm' failed: cuBLAS status 13")),
    # ---- numeric divergence
    ("src.numeric", "numeric_divergence",
     "Monitored metric val_loss = nan is not finite. Previous best value was 0.412. Signaling Trainer to stop."),
    ("src.numeric", "numeric_divergence",
     tb("tensorflow.python.training.basic_session_run_hooks.NanLossDuringTrainingError: NaN loss during training.")),
    ("src.numeric", "numeric_divergence",
     tb("RuntimeError: Rank 3, node n7, device 3, iteration 1200: Unexpected result nan (message='found NaN in local"
        " forward loss calculation')")),
    ("src.numeric", "numeric_divergence",
     tb("RuntimeError: (PreconditionNotMet) There are NAN or INF (num_nan=12, num_inf=0, num_zero=0) in [device=gpu:0,"
        " op=matmul_v2, tensor=linear_3.tmp_0, dtype=fp32].")),
    # ---- environment
    ("src.loader", "import_env",
     "python: /lib/x86_64-linux-gnu/libm.so.6: version `GLIBC_2.38' not found (required by python)"),
    ("src.loader", "import_env",
     tb("ImportError: /usr/lib/libstdc++.so.6: version `CXXABI_1.3.15' not found (required by"
        " /opt/venv/lib/python3.11/site-packages/tokenizers/tokenizers.so)")),
    ("src.loader", "import_env", tb("ImportError: /opt/x/libfoo.so: wrong ELF class: ELFCLASS32")),
    ("src.loader", "import_env", tb("OSError: /opt/x/libfoo.so: invalid ELF header")),
    ("src.loader", "import_env",
     tb("ImportError: /lib/aarch64-linux-gnu/libgomp.so.1: cannot allocate memory in static TLS block")),
    ("src.loader", "import_env", "/usr/bin/env: 'python': No such file or directory"),
    ("src.loader", "import_env", "/usr/bin/env: \u2018python3\\r\u2019: No such file or directory"),
    ("src.loader", "import_env", "python3: Command not found."),
    ("src.loader", "import_env", "fish: Unknown command: torchrun"),
    ("src.toolchain", "import_env",
     tb("RuntimeError: module compiled against API version 0x10 but this version of numpy is 0xe")),
    ("src.toolchain", "import_env",
     tb("RuntimeError: jaxlib version 0.4.31 is newer than and incompatible with jax version 0.4.14. Please update"
        " your jax and/or jaxlib packages.")),
    ("src.toolchain", "import_env",
     "RuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: CUDA backend failed to initialize:"
     " Found cuDNN version 8600, but JAX was built against version 8907, which is newer."),
    ("src.toolchain", "import_env",
     "E0301 10:11:12.000000 4242 cuda_dnn.cc:502] Loaded runtime CuDNN library: 8.6.0 but source was compiled with:"
     " 8.9.4.  CuDNN library needs to have matching major version and equal or higher minor version."),
    ("src.toolchain", "import_env",
     tb("deepspeed.ops.op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to compile CUDA op(s)")),
    ("src.toolchain", "import_env",
     tb("deepspeed.ops.op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: Installed CUDA version 11.7"
        " does not match the version torch was compiled with 12.4, unable to compile cuda/cpp extensions without a"
        " matching cuda version.")),
    ("src.toolchain", "import_env", tb("RuntimeError: Failed to find C compiler. Please specify via CC environment"
                                       " variable.")),
    ("src.toolchain", "import_env",
     tb("ImportError: FlashAttention2 has been toggled on, but it cannot be used due to the following error: the"
        " package flash_attn seems to be not installed. Please refer to the documentation.")),
    ("src.toolchain", "import_env",
     tb("NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:")),
    ("src.toolchain", "import_env", "RuntimeError: CUDA Setup failed despite GPU being available. Please run"
                                    " the following command to get more information:"),
    ("src.toolchain", "import_env", tb("RuntimeError: nvrtc: error: invalid value for --gpu-architecture (-arch)")),
    ("src.invalid_device_function", "import_env", tb("RuntimeError: HIP error: invalid device function")),
    ("src.invalid_device_function", "import_env",
     tb("RuntimeError: CUDA error: invalid device function\nCUDA kernel errors might be asynchronously reported at"
        " some other API call")),
    # ---- input data
    ("src.data_corrupt", "data_input", tb("_pickle.UnpicklingError: pickle data was truncated")),
    ("src.data_corrupt", "data_input",
     tb("EOFError: Compressed file ended before the end-of-stream marker was reached")),
    ("src.data_corrupt", "data_input", tb("zlib.error: Error -3 while decompressing data: invalid stored block lengths")),
    ("src.data_corrupt", "data_input", tb("gzip.BadGzipFile: Not a gzipped file (b'<!')")),
    ("src.data_corrupt", "data_input", tb("tarfile.ReadError: unexpected end of data")),
    ("src.data_corrupt", "data_input",
     tb("safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer")),
    ("src.data_corrupt", "data_input",
     tb("RuntimeError: PytorchStreamReader failed locating file data/12: file not found")),
    ("src.data_corrupt", "data_input", tb("RuntimeError: Invalid magic number; corrupt file?")),
    ("src.data_corrupt", "data_input", tb("OSError: broken data stream when reading image file")),
    ("src.data_corrupt", "data_input",
     tb("OSError: Unable to synchronously open file (file signature not found)")),
    ("src.data_corrupt", "data_input",
     tb("OSError: Unable to open file (truncated file: eof = 1048576, sblock->base_addr = 0, stored_eof = 2097152)")),
    ("src.data_corrupt", "data_input", tb("KeyError: \"Unable to open object (object 'images' doesn't exist)\"")),
    ("src.data_corrupt", "data_input",
     tb("pyarrow.lib.ArrowInvalid: Parquet magic bytes not found in footer. Either the file is corrupted or this is"
        " not a parquet file.")),
    ("src.data_corrupt", "data_input",
     tb("OSError: Failed to interpret file 'feats/0001.npy' as a pickle")),
    ("src.data_corrupt", "data_input",
     tb("datasets.utils.info_utils.NonMatchingChecksumError: Checksums didn't match for dataset source files:")),
    ("src.data_corrupt", "data_input",
     tb("datasets.exceptions.DatasetGenerationCastError: An error occurred while generating the dataset")),
    ("src.data_corrupt", "data_input",
     tb("tensorflow.python.framework.errors_impl.DataLossError: corrupted record at 123456789")),
    ("src.data_corrupt", "data_input", tb("_csv.Error: line contains NUL")),
    ("src.data_corrupt", "data_input",
     tb("soundfile.LibsndfileError: Error opening 'clips/a.wav': Format not recognised.")),
    ("src.data_corrupt", "data_input", "[mov,mp4,m4a,3gp,3g2,mj2 @ 0x5581c0] moov atom not found"),
    ("src.data_corrupt", "data_input",
     tb("RuntimeError: Found 0 files in subfolders of: /data/train\nSupported extensions are: .jpg,.png")),
    ("src.data_corrupt", "data_input",
     tb("ValueError: num_samples should be a positive integer value, but got num_samples=0")),
    ("src.data_path_errno", "data_input", tb("IsADirectoryError: [Errno 21] Is a directory: 'data/train'")),
    ("src.data_path_errno", "data_input", tb("NotADirectoryError: [Errno 20] Not a directory: 'data/x.tar/0'")),
    ("src.data_path_errno", "data_input", tb("OSError: [Errno 36] File name too long: 'out/aaaa'")),
    # ---- crash signals
    ("src.crash_signal", "segfault_signal",
     "*** SIGFPE received at time=1712345678 on cpu 12 ***\nPC: @     0x7f0000001234  (unknown)  (unknown)"),
    ("src.crash_signal", "segfault_signal",
     "*** SIGFPE (@0x7f3c2a1b4c5d) received by PID 4242 (TID 0x7f3c29fff700) from PID 712; stack trace: ***"),
    ("src.crash_signal", "segfault_signal", "./run.sh: line 7:  4242 Trace/breakpoint trap   (core dumped) ./train"),
    ("src.crash_signal", "segfault_signal", "./run.sh: line 7:  4242 Bad system call         ./train"),
    ("src.crash_signal", "segfault_signal", "zsh: illegal hardware instruction  python train.py"),
    ("src.crash_signal", "segfault_signal", "Abort trap: 6"),
    ("src.crash_signal", "segfault_signal", "./run.sh: line 12:  4242 Aborted                 python train.py"),
    ("src.crash_signal", "segfault_signal",
     tb("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Aborted. ")),
    ("src.crash_signal", "segfault_signal",
     "mpirun noticed that process rank 2 with PID 4242 on node n5 exited on signal 6 (Aborted)."),
    ("src.crash_signal", "segfault_signal", "srun: error: n17: task 3: Aborted"),
    ("src.crash_signal", "segfault_signal", "corrupted size vs. prev_size"),
    ("src.crash_signal", "segfault_signal", "munmap_chunk(): invalid pointer"),
    ("src.crash_signal", "segfault_signal",
     "==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000010 at pc 0x0000004f"),
    ("src.accel_oom", "gpu_oom",
     "[03/01/2024-10:11:12] [TRT] [E] 1: [defaultAllocator.cpp::allocate::31] Error Code 1: Cuda Runtime (out of memory)"),
    ("src.cuda_runtime", "cuda_runtime",
     "[TRT] [E] 1: [runner.cpp::execute::416] Error Code 1: Cuda Runtime (an illegal instruction was encountered)"),
    ("src.cuda_runtime", "cuda_runtime",
     "[TRT] [E] 1: [convolutionRunner.cpp::execute::391] Error Code 1: Cuda Driver (invalid resource handle)"),
    ("src.numeric", "numeric_divergence",
     tb("ValueError: Expected parameter loc (Tensor of shape (256, 6)) of distribution Normal(loc: torch.Size([256, 6]),"
        " scale: torch.Size([256, 6])) to satisfy the constraint Real(), but found invalid values:\n"
        "tensor([[nan, nan, nan, nan, nan, nan],")),
    ("src.numeric", "numeric_divergence",
     tb("RuntimeError: probability tensor contains either `inf`, `nan` or element < 0")),
    ("src.numeric_linalg", "numeric_divergence",
     tb("torch._C._LinAlgError: linalg.cholesky: The factorization could not be completed because the input is not"
        " positive-definite (the leading minor of order 7 is not positive-definite).")),
    ("src.numeric_linalg", "numeric_divergence",
     tb("torch._C._LinAlgError: linalg.eigh: The algorithm failed to converge because the input matrix is"
        " ill-conditioned or has too many repeated eigenvalues (error code: 31).")),
    ("src.numeric_linalg", "numeric_divergence", tb("numpy.linalg.LinAlgError: SVD did not converge")),
    ("src.no_device", "import_env", tb("RuntimeError: CUDA error: no CUDA-capable device is detected")),
    ("src.no_device", "import_env",
     tb("RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you"
        " are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu').")),
    ("src.no_device", "import_env", tb("RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!")),
    ("src.no_device", "import_env",
     tb("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla V100-SXM2-32GB"
        " GPU has compute capability 7.0.")),
    ("src.no_device", "import_env",
     tb("tensorflow.python.framework.errors_impl.NotFoundError: Op type not registered 'TRTEngineOp' in binary running"
        " on gpu17. Make sure the Op and Kernel are registered in the binary running in this process.")),
    ("src.no_device", "import_env",
     tb("torch._inductor.exc.InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx:"
        " (None, 'g++')")),
    ("src.data_missing", "data_input",
     tb("tensorflow.python.framework.errors_impl.NotFoundError: data/train-00003.tfrecord; No such file or directory")),
    ("src.data_missing", "data_input",
     tb("tensorflow.python.framework.errors_impl.NotFoundError: Failed to find any matching files for data/*.tfrecord")),
    ("src.data_missing", "data_input",
     tb("OSError: acme/llm-7b is not a local folder and is not a valid model identifier listed on"
        " 'https://huggingface.co/models'")),
    ("src.data_missing", "data_input",
     tb("huggingface_hub.errors.GatedRepoError: 403 Client Error. (Request ID: Root=1-65f)\nCannot access gated repo"
        " for url https://huggingface.co/acme/llm-7b/resolve/main/config.json.")),
    ("src.accel_oom", "gpu_oom", tb("RuntimeError: CUDA driver error: out of memory")),
    ("src.cuda_runtime", "cuda_runtime",
     tb("RuntimeError: cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph.")),
    ("src.cuda_runtime", "cuda_runtime", tb("RuntimeError: GET was unable to find an engine to execute this computation")),
    ("src.xla_internal_gpu", "cuda_runtime",
     "2024-03-01 10:11:12.000000: E external/xla/xla/pjrt/pjrt_stream_executor_client.cc:2766] Execution of replica 0"
     " failed: INTERNAL: Failed to launch CUDA kernel: fusion_12 with block dimensions: 128x1x1"),
    ("src.toolchain", "import_env", tb("RuntimeError: FlashAttention is only supported on CUDA 11.7 and above.  Note:"
                                       " make sure nvcc has a supported version by running nvcc -V.")),
    ("src.build_failed", "import_env", "collect2: error: ld returned 1 exit status\nninja: build stopped: subcommand failed."),
    ("src.build_failed", "import_env", "collect2: error: ld returned 1 exit status"),
    ("src.build_failed", "import_env",
     "  error: subprocess-exited-with-error\n  \n  x python setup.py egg_info did not run successfully.\n"),
    ("src.build_failed", "import_env",
     "ERROR: Could not build wheels for flash-attn, which is required to install pyproject.toml-based projects"),
    ("src.host_oom", "host_oom",
     "2024-03-01 10:11:12,345 - distributed.nanny.memory - WARNING - Worker tcp://10.0.0.7:40123 (pid=4242) exceeded"
     " 95% memory budget. Restarting..."),
    ("src.host_oom", "host_oom",
     "2024-03-01 10:11:12,345 WARN org.apache.hadoop.yarn.server.nodemanager.containermanager.monitor."
     "ContainersMonitorImpl: Container [pid=4242,containerID=container_1_0001_01_000002] is running beyond physical"
     " memory limits. Current usage: 8.1 GB of 8 GB physical memory used; Killing container."),
    ("src.host_oom", "host_oom",
     tb("RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: not enough memory: you tried to"
        " allocate 8589934592 bytes.")),
    ("src.host_oom", "host_oom",
     "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"),
    ("src.sigkill", "host_oom",
     tb("joblib.externals.loky.process_executor.TerminatedWorkerError: A worker process managed by the executor was"
        " unexpectedly terminated. This could be caused by a segmentation fault while calling the function or by an"
        " excessive memory usage causing the Operating System to kill the worker.\n\nThe exit codes of the workers are"
        " {SIGKILL(-9)}")),
    ("src.accel_oom", "gpu_oom",
     "[TRT] [E] 2: [executionContext.cpp::ExecutionContext::564] Requested amount of GPU memory (2147483648 bytes)"
     " could not be allocated. There may not be enough free memory for allocation to succeed."),
    ("src.accel_oom", "gpu_oom",
     "onnxruntime.capi.onnxruntime_pybind11_state.RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero"
     " status code returned while running Conv node. Name:'/conv1/Conv' Status Message: CUDA failure 2: out of memory"
     " ; GPU=0 ; hostname=n12 ; file=cuda_allocator.cc ; line=48 ; expr=cudaMalloc((void**)&p, size);"),
    ("src.cuda_runtime", "cuda_runtime",
     "Status Message: CUDA failure 700: an illegal memory access was encountered ; GPU=0 ; hostname=n12 ;"
     " file=cuda_execution_provider.cc ; line=245 ; expr=cudaStreamSynchronize(stream);"),
    # No code for this GPU is the environment, even in ONNX Runtime's words (env.cuda_mismatch).
    ("src.cuda_runtime", "import_env",
     "Status Message: CUDA failure 209: no kernel image is available for execution on the device ; GPU=0 ;"
     " hostname=n12"),
    ("src.data_corrupt", "data_input",
     tb("cv2.error: OpenCV(4.8.0) /io/opencv/modules/imgproc/src/resize.cpp:4062: error: (-215:Assertion failed)"
        " !ssize.empty() in function 'resize'")),
    ("src.data_corrupt", "data_input", tb("    raise JSONDecodeError(\"Expecting value\", s, err.value) from None\n"
                                          "ValueError: Expecting value: line 1 column 1 (char 0)")),
    ("src.data_corrupt", "data_input", "ValueError: Extra data: line 2 column 1 (char 37)"),
    ("src.data_corrupt", "data_input",
     tb("Exception: expected value at line 1 column 1")),
    ("src.data_corrupt", "data_input", tb("KeyError: \"There is no item named 'data.pkl' in the archive\"")),
    ("src.toolchain", "import_env",
     "OMP: Error #15: Initializing libiomp5.so, but found libiomp5.so already initialized.\nOMP: Hint This means that"
     " multiple copies of the OpenMP runtime have been linked into the program."),
    ("src.toolchain", "import_env",
     tb("TypeError: Descriptors cannot be created directly.\nIf this call came from a _pb2.py file, your generated code"
        " is out of date and must be regenerated with protoc >= 3.19.0.")),
    ("src.toolchain", "import_env", tb("RuntimeError: Error compiling objects for extension")),
    ("src.toolchain", "import_env", tb("AssertionError: libcuda.so cannot found!")),
    ("src.crash_signal", "segfault_signal",
     tb("joblib.externals.loky.process_executor.TerminatedWorkerError: A worker process managed by the executor was"
        " unexpectedly terminated.\nThe exit codes of the workers are {SIGSEGV(-11)}")),
    ("src.cuda_runtime", "cuda_runtime",
     "!!!! kernel execution error. (m: 1024, n: 2048, k: 512, error: 13) \n!!!! kernel execution error. (m: 512,"
     " n: 2048, k: 1024, error: 13)"),
    ("src.accel_oom", "gpu_oom", "!!!! kernel execution error. (m: 4096, n: 8192, k: 4096, error: 3) "),
    ("src.data_corrupt", "data_input",
     "I0301 10:11:12.000000  4242 image_data_layer.cpp:38] Opening file data/train.txt\n"
     "I0301 10:11:12.000100  4242 image_data_layer.cpp:53] A total of 0 images.\n"
     "*** Aborted at 1709287872 (unix time) try \"date -d @1709287872\" if you are using GNU date ***\n"
     "*** SIGSEGV (@0x0) received by PID 4242 (TID 0x7f00) from PID 0; stack trace: ***\n"),
    ("src.cpp_terminate_frame", "software_exception",
     "    @     0x7f0a1b2c3428 gsignal\n    @     0x7f0a1b2c502a abort\n"
     "    @     0x7f0a1b8f184d __gnu_cxx::__verbose_terminate_handler()\n    @     0x7f0a1b8ef701 std::terminate()\n"
     "    @     0x7f0a1b8ef919 __cxa_throw\nAborted (core dumped)\n"),
    # ---- exceptions in other languages
    ("src.panic", "software_exception",
     "thread 'main' panicked at src/loader.rs:42:17:\ncalled `Result::unwrap()` on an `Err` value: Io(Kind(NotFound))"),
    ("src.panic", "software_exception",
     "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.main()"),
    ("src.panic", "software_exception", "ERROR: LoadError: BoundsError: attempt to access 3-element Vector{Int64} at"
                                        " index [4]"),
]


LOOKALIKES = [
    # TF's BFC warning that says it is not a failure.
    ("src.bfc_oom", "W bfc_allocator.cc:290] Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.1GiB with"
                    " freed_by_count=0. The caller indicates that this is not a failure, but this may mean that there"
                    " could be performance gains if more memory were available."),
    # A batch size that was found.
    ("src.accel_oom", "INFO: find_executable_batch_size: trying batch size 64"),
    # YARN usage inside limits; an R vector that was allocated.
    ("src.host_oom", "Current usage: 1.1 GB of 4 GB physical memory used; 2.2 GB of 8.4 GB virtual memory used"),
    ("src.host_oom", "allocated vector of size 3.7 Gb"),
    # A subprocess that exited with a status, not a signal.
    ("src.sigkill", "subprocess.CalledProcessError: Command 'make' returned non-zero exit status 9."),
    # The success codes and prose.
    ("src.cuda_runtime", "cusolver status: CUSOLVER_STATUS_SUCCESS"),
    ("src.cuda_runtime", "hipSuccess"),
    ("src.triton_resources", "autotune: config fits, shared memory 49152 of 101376"),
    # An early-stopping line with a finite value; Paddle's check with no NaN.
    ("src.numeric", "Monitored metric val_loss did not improve in the last 3 records. Best score: 0.412."),
    ("src.numeric", "FLAGS_check_nan_inf is set; checking for nan or inf values"),
    # The loader finding a version; env(1) printing the environment.
    ("src.loader", "GLIBC_2.38 found; version check passed"),
    ("src.loader", "env: PATH=/usr/bin:/bin"),
    # A data file named in a shell redirect is not an interpreter (env. rules), a
    # lock on an HDF5 file is the filesystem, not a corrupt file.
    ("src.data_corrupt", "OSError: Unable to open file (unable to lock file, errno = 11, error message = 'Resource"
                         " temporarily unavailable')"),
    ("src.data_corrupt", "Reading records from shard 3 of 8 (no corrupted record found)"),
    ("src.data_path_errno", "OSError: [Errno 2] No such file or directory: 'data/train'"),
    # Abseil's SIGTERM is a cancel, not a crash; "Aborted!" is click's Ctrl-C.
    ("src.crash_signal", "*** SIGTERM received at time=1712345678 on cpu 5 ***"),
    ("src.crash_signal", "Aborted!"),
    ("src.crash_signal", "NCCL communicator was aborted on rank 3."),
    # Python's FileNotFoundError is data.missing's (rules.py), not the TensorFlow form.
    ("src.data_missing", "FileNotFoundError: [Errno 2] No such file or directory: 'data/x.json'"),
    ("src.data_missing", "ModuleNotFoundError: No module named 'acme'"),
    # A device that was found; a converged solver.
    ("src.no_device", "INFO: 8 CUDA-capable devices detected"),
    ("src.numeric_linalg", "solver converged after 12 iterations"),
    ("src.numeric", "ValueError: Expected parameter loc to be a tensor"),
    # TensorRT's OOM is accel_oom's, not a runtime fault.
    ("src.cuda_runtime", "[TRT] [E] 1: [defaultAllocator.cpp::allocate::31] Error Code 1: Cuda Runtime (out of memory)"),
    # A build that succeeded; XLA INTERNAL without a GPU cause.
    ("src.build_failed", "Successfully built flash-attn"),
    ("src.xla_internal_gpu", "Execution of replica 0 failed: INTERNAL: RET_CHECK failure (shape_util.cc:120)"),
    # joblib workers that were stopped (SIGTERM) or exited with a status are neither.
    ("src.sigkill", "The exit codes of the workers are {SIGTERM(-15), SIGTERM(-15)}"),
    ("src.crash_signal", "The exit codes of the workers are {EXIT(1), EXIT(1)}"),
    # Dask pausing a worker is not a restart; a JSON line that parsed.
    ("src.host_oom", "distributed.worker.memory - WARNING - Worker is at 81% memory usage. Pausing worker."),
    ("src.data_corrupt", "step 12 (char rnn): loss 1.23, line 4 column 2"),
    # Caffe reading a non-empty list; a GEMM wrapper line in prose.
    ("src.data_corrupt", "I0301 10:11:12.000100  4242 image_data_layer.cpp:53] A total of 1200 images."),
    ("src.cuda_runtime", "INFO: no kernel execution errors in 1000 steps"),
    # "panic" in prose.
    ("src.panic", "INFO: don't panic: the job resumes from the last checkpoint"),
]


# ---- precedence: the cause over what it causes ---------------------------------------

def test_linker_error_inside_a_generic_exception_is_the_environment() -> None:
    r = cls(tb("ImportError: /opt/venv/lib/libfoo.so: version `GLIBCXX_3.4.32' not found (required by x.so)")
            + "RuntimeError: Failed to import transformers.models.llama\n")
    assert r.category == "import_env"


def test_glog_check_failure_outranks_the_abseil_abort_it_causes() -> None:
    r = cls("F0301 10:11:12.000000 4242 op.cc:42] Check failed: dims == 4 (3 vs. 4)\n"
            "*** Check failure stack trace: ***\n"
            "*** SIGABRT received at time=1712345678 on cpu 3 ***\n")
    assert r.category == "software_exception"


def test_benign_bfc_warning_is_no_memory_evidence() -> None:
    # The allocator's own words say it is not a failure: neither GPU memory nor (through
    # rules_more's "ran out of memory" hint) host memory.
    r = cls("W bfc_allocator.cc:290] Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.1GiB. The caller"
            " indicates that this is not a failure, but this may mean that there could be performance gains.\n"
            "Epoch 10/10\n")
    assert r.category not in ("gpu_oom", "host_oom"), r.rule


def test_corrupt_checkpoint_beats_the_wrapper_exception() -> None:
    r = cls(tb("safetensors_rust.SafetensorError: Error while deserializing header: InvalidHeaderDeserialization")
            + "OSError: Unable to load weights from checkpoint file for 'model.safetensors'\n")
    assert r.category == "data_input"
