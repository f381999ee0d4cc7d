"""How jobs end in other tools' words (gcm_checks/classify/rules_s4.py).

Every row is written from the format string the tool's source or documentation
prints (hosts, users, ids and numbers made up), never copied from a corpus
excerpt; each family also has look-alikes that must not be read as it:
informational lines, settings, and the same words inside ordinary output.
"""

from __future__ import annotations

import pytest

from gcm_checks.classify.rules_s4 import S4_RULES
from classify_cases import cls, tb  # noqa: E402 - tests/classify_cases.py

BY_ID = {r.id: r for r in S4_RULES}


CASES = [
    # ---- time limits
    ("ci.build_timeout", "timeout_walltime",
     "+ make check\nBuild timed out (after 45 minutes). Marking the build as aborted.\n"
     "Build was aborted\nFinished: ABORTED"),
    ("ci.build_timeout", "timeout_walltime", "Build timed out (after 10 minutes). Marking the build as failed."),
    ("lightning.requeue_signal", "timeout_walltime",
     "Epoch 7:  41%|####      | 410/1000 [12:01<17:18,  1.76s/it, loss=0.412]\n"
     "Handling auto-requeue signal: 10\nrequeing job 4242...\n"
     "slurmstepd: error: *** STEP 4242.0 ON gpu-7 CANCELLED AT 2026-01-02T03:04:05 ***"),
    ("lightning.requeue_signal", "timeout_walltime", "INFO: [rank: 0] Handling auto-requeue signal: 10"),
    ("airflow.task_timeout", "timeout_walltime",
     "[2026-01-02, 03:04:05 UTC] {timeout.py:68} ERROR - Process timed out, PID: 4242\n"
     + tb("airflow.exceptions.AirflowTaskTimeout: Timeout, PID: 4242")),
    # ---- preemption
    ("cloud.spot_notice", "preempted", "SpotInstanceRequest sir-1234 status: marked-for-termination"),
    ("cloud.spot_notice", "preempted", "Status code: instance-stopped-no-capacity"),
    # ---- cancels
    ("ci.jenkins_aborted_by", "cancelled_user", "[Pipeline] sh\n+ python train.py\nAborted by alice\nFinished: ABORTED"),
    ("ci.jenkins_aborted_by", "cancelled_user", "Sending interrupt signal to process\nAborted by Alice Smith"),
    ("ci.jenkins_aborted", "cancelled_user", "[Pipeline] End of Pipeline\nFinished: ABORTED"),
    ("mpi.ctrl_c", "cancelled_user",
     "step 120 residual 1.2e-3\n^Cmpirun: abort is already in progress...hit ctrl-c again to forcibly terminate"),
    ("mpi.ctrl_c", "cancelled_user",
     "[mpiexec@node17] Sending Ctrl-C to processes as requested\n[mpiexec@node17] Press Ctrl-C again to force abort"),
    ("compose.ctrl_c", "cancelled_user",
     "trainer-1  | step 900 loss 1.93\n^CGracefully stopping... (press Ctrl+C again to force)\n[+] Stopping 2/2"),
    ("lightning.keyboard_interrupt", "cancelled_user",
     "/opt/venv/lib/python3.11/site-packages/lightning/pytorch/trainer/call.py:54: UserWarning: Detected"
     " KeyboardInterrupt, attempting graceful shutdown..."),
    ("lightning.keyboard_interrupt", "cancelled_user",
     "Epoch 2:  11%|#         | 49/435 [00:02<00:21]\nDetected KeyboardInterrupt, attempting graceful shutdown ..."),
    ("lightning.sigterm", "cancelled_user", "[rank: 1] Received SIGTERM: 15\nBypassing SIGTERM: 15"),
    ("lightning.sigterm", "cancelled_user",
     tb("lightning.pytorch.utilities.exceptions.SIGTERMException")),
    ("airflow.sigterm", "cancelled_user",
     "[2026-01-02, 03:04:05 UTC] {taskinstance.py:1540} ERROR - Received SIGTERM. Terminating subprocesses.\n"
     + tb("airflow.exceptions.AirflowException: Task received SIGTERM signal")),
    # ---- memory
    ("airflow.sigkill", "host_oom",
     "[2026-01-02, 03:04:05 UTC] {local_task_job.py:212} INFO - Task exited with return code Negsignal.SIGKILL"),
    ("condor.oom", "host_oom",
     "012 (4242.000.000) 2026-01-02 03:04:05 Job was held.\n"
     "\tJob raised a signal 9. Handling signal as if job has gone over memory limit.\n\tCode 34 Subcode 0"),
    ("condor.oom", "host_oom", "Hold reason: Job has encountered an out-of-memory event."),
    ("condor.oom", "host_oom", "  17 0 Removed due to memory use"),
    ("py.pool_worker_killed", "host_oom",
     tb("concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated abruptly"
        " while the future was running or pending.")),
    ("ray.worker_crashed", "unknown",
     tb("ray.exceptions.WorkerCrashedError: The worker died unexpectedly while executing this task. Check"
        " python-core-worker-*.log files for more information.")),
    ("ray.worker_crashed", "unknown",
     "ray.exceptions.LocalRayletDiedError: The task's local raylet died. Check raylet.out for more information."),
    # ---- nccl-tests' end
    ("nccltests.wrong_results", "nccl_comm",
     "  1048576   262144   float   sum   -1   88.1   11.90   22.31   4021   87.9   11.93   22.37   4019\n"
     "# Out of bounds values : 8040 FAILED\n# Avg bus bandwidth    : 20.114"),
    # ---- completion
    ("ci.succeeded", "success", "[Pipeline] End of Pipeline\nFinished: SUCCESS"),
    ("ci.succeeded", "success", "Uploading artifacts for successful job\nCleaning up project directory and file"
                                " based variables\nJob succeeded"),
    ("nccltests.ok", "success", " 8388608  2097152  float  sum  -1  180.2  46.55  87.28  0  179.9  46.63  87.43  0\n"
                                "# Out of bounds values : 0 OK"),
    ("wf.pipeline_completed", "success", "-[nf-core/sarek] Pipeline completed successfully-"),
    ("wf.pipeline_completed", "success",
     "Jan-02 03:04:05.678 [main] DEBUG nextflow.trace.StatsObserver - Workflow completed > WorkflowStats["
     "succeedCount=42; failedCount=0; ignoredCount=0; cachedCount=3; succeedDuration=1h]"),
    ("timm.best_metric", "success",
     "Test: [  48/48]  Time: 0.112 (0.301)  Loss:  0.8011 (0.9120)  Acc@1: 81.2500 (78.4120)\n"
     "Current checkpoints:\n ('./output/train/ckpt/checkpoint-297.pth.tar', 78.412)\n"
     "*** Best metric: 78.412 (epoch 297)"),
    ("sci.normal_end", "success",
     "               Core t (s)   Wall t (s)        (%)\n       Time:     3012.4      188.3     1600.0\n"
     "Performance:       91.774        0.262\nFinished mdrun on rank 0 Tue Mar  3 04:05:06 2026"),
    ("sci.normal_end", "success", " Normal termination of Gaussian 16 at Tue Mar  3 04:05:06 2026."),
    ("sci.normal_end", "success", "                             ****ORCA TERMINATED NORMALLY****\nTOTAL RUN TIME: 0 days 0 hours"),
    ("sci.normal_end", "success", "Loop time of 12.34 on 4 procs for 1000 steps with 4000 atoms\nTotal wall time: 0:00:13"),
    ("sci.normal_end", "success", "# Accounting: time=64 threads=1\n# Ended (code 0) at Tue Mar  3 04:05:06 UTC 2026,"
                                  " elapsed time 64 seconds"),
    ("sci.normal_end", "success", "2026-03-03T04:05:06 (asr.sh:1234:main) Successfully finished. [elapsed=4321s]"),
    ("run.failed_end", "unknown", " Error termination via Lnk1e in /opt/g16/l502.exe at Tue Mar  3 04:05:06 2026."),
    ("run.failed_end", "unknown", "ORCA finished by error termination in SCF\nCalling Command: mpirun -np 4 orca_scf_mpi"),
    ("run.failed_end", "unknown", "# Accounting: time=3 threads=1\n# Ended (code 1) at Tue Mar  3 04:05:06 UTC 2026,"
                                  " elapsed time 3 seconds"),
    ("run.failed_end", "unknown", "-[nf-core/rnaseq] Pipeline completed with errors-"),
    ("run.failed_end", "unknown", "[Pipeline] End of Pipeline\nFinished: FAILURE"),
    ("run.failed_end", "unknown", "ERROR: Job failed: exit code 2"),
    ("llama.timings", "success",
     "llama_print_timings:        load time =    512.31 ms\n"
     "llama_print_timings:      sample time =     20.02 ms /   128 runs   (    0.16 ms per token)\n"
     "llama_print_timings:       total time =   4100.55 ms"),
    ("llama.timings", "success", "llama_perf_context_print:        load time =     402.10 ms"),
    ("llama.timings", "success",
     '{"function":"print_timings","level":"INFO","line":290,"msg":"          total time =  1530.12 ms","slot_id":0}'),
]


LOOKALIKES = [
    # Settings and informational lines that name the same things.
    ("ci.build_timeout", "timeout(time: 30, unit: 'MINUTES')  // build timed out after this"),
    ("ci.build_timeout", "Job failed: exit code 1"),
    ("lightning.requeue_signal", "SLURM auto-requeueing enabled. Setting signal handlers for SIGUSR1."),
    ("lightning.requeue_signal", "#SBATCH --signal=SIGUSR1@90  # lightning auto-requeue"),
    ("cloud.spot_notice", "The pod is marked for termination; waiting 30s grace period"),
    ("cloud.spot_notice", "instance-terminated-by-user"),
    ("ci.jenkins_aborted_by", "Aborted by the watchdog after 3 retries, restarting stage"),
    ("ci.jenkins_aborted", "Stage 'Deploy' skipped; Finished: ABORTED stages are not retried"),
    ("mpi.ctrl_c", "Use Ctrl-C to stop the server"),
    ("compose.ctrl_c", "Gracefully stopping the server, draining 3 connections"),
    ("airflow.task_timeout", "execution_timeout=timedelta(hours=2)  # raises AirflowTaskTimeout after that"),
    ("airflow.sigterm", "Registered a handler: on SIGTERM the task terminates its subprocesses"),
    ("airflow.sigkill", "Task exited with return code 0"),
    ("lightning.keyboard_interrupt", "except KeyboardInterrupt: handled by the trainer"),
    ("lightning.sigterm", "Registered SIGTERM handler for graceful shutdown"),
    ("lightning.sigterm", "from lightning.pytorch.utilities.exceptions import SIGTERMException"),
    ("condor.oom", "request_memory = 4096  # job goes over memory limit otherwise"),
    ("py.pool_worker_killed", "Using ProcessPoolExecutor with 8 workers; a process in the pool is idle"),
    ("ray.worker_crashed", "(raylet) Started worker 42 for task 7"),
    ("nccltests.wrong_results", "# Out of bounds values : 0 OK"),
    ("nccltests.ok", "# Out of bounds values : 3 FAILED"),
    ("ci.succeeded", "Finished: FAILURE"),
    ("ci.succeeded", "Job succeeded on retry 2 of 3, continuing with the next stage"),
    ("wf.pipeline_completed", "-[nf-core/rnaseq] Pipeline completed with errors-"),
    ("wf.pipeline_completed",
     "Workflow completed > WorkflowStats[succeedCount=10; failedCount=1; ignoredCount=0; cachedCount=0]"),
    ("timm.best_metric", "Best metric so far: 77.9 at epoch 120 (current 76.2)"),
    ("sci.normal_end", "grep -q 'Finished mdrun' md.log || echo 'mdrun did not finish'"),
    ("sci.normal_end", "Total wall time estimate for this run: 4 hours"),
    ("sci.normal_end", "# Ended (code 1) at Tue Mar  3 04:05:06 UTC 2026, elapsed time 3 seconds"),
    ("run.failed_end", "# Ended (code 0) at Tue Mar  3 04:05:06 UTC 2026, elapsed time 3 seconds"),
    ("run.failed_end", "Finished: SUCCESS"),
    ("run.failed_end", "Job failed: exit code 0 is not an error"),
    ("llama.timings", '{"print_timings": false, "n_ctx": 4096}'),
    ("llama.timings", "llama_print_timings is disabled with --no-perf"),
]


# Ordinary training output that carries the families' words must stay harmless.
HARMLESS = [
    "Epoch 3/10: loss=0.412 acc=0.88 | preempt_checkpoint_every=500 | spot=False",
    "INFO: checkpoint saved to /scratch/run7/last.ckpt (sigterm-safe)",
    "[rank: 0] Seed set to 1234",
    "Using 16bit Automatic Mixed Precision (AMP)",
    "llama_model_loader: loaded meta data with 24 key-value pairs",
]


@pytest.mark.parametrize("text", HARMLESS)
def test_training_chatter_matches_none_of_these(text: str) -> None:
    assert cls(text).rule not in BY_ID


def test_airflow_timeout_makes_its_sigterm_fallout() -> None:
    text = ("ERROR - Process timed out, PID: 77\nairflow.exceptions.AirflowTaskTimeout: Timeout, PID: 77\n"
            "ERROR - Received SIGTERM. Terminating subprocesses.")
    assert cls(text).category == "timeout_walltime"


def test_a_failed_step_after_a_normal_end_is_not_a_success() -> None:
    # Gaussian runs several job steps: a later step's error termination wins.
    text = (" Normal termination of Gaussian 16 at Tue Mar  3 04:05:06 2026.\n"
            " Link1:  Proceeding to internal job step number  2.\n"
            " Error termination via Lnk1e in /opt/g16/l9999.exe at Tue Mar  3 05:06:07 2026.")
    assert cls(text).category != "success"


def test_a_time_limit_beats_the_aborted_result() -> None:
    r = cls("Build timed out (after 60 minutes). Marking the build as aborted.\nFinished: ABORTED")
    assert (r.category, r.rule) == ("timeout_walltime", "ci.build_timeout")


def test_sigterm_exception_after_a_time_limit_is_fallout() -> None:
    text = ("slurmstepd: error: *** JOB 77 ON gpu-3 CANCELLED AT 2026-01-02T03:04:05 DUE TO TIME LIMIT ***\n"
            + tb("lightning.pytorch.utilities.exceptions.SIGTERMException"))
    assert cls(text).category == "timeout_walltime"


def test_sigterm_exception_is_not_the_jobs_bug() -> None:
    r = cls(tb("lightning.pytorch.utilities.exceptions.SIGTERMException"))
    assert r.category != "software_exception" and r.confidence < 0.5


def test_a_real_error_beats_the_ctrl_c_that_followed_it() -> None:
    text = tb("ValueError: shapes (3,4) and (5,) not aligned") + "[mpiexec@n1] Sending Ctrl-C to processes as requested"
    assert cls(text).category == "software_exception"


def test_a_crash_after_the_timings_block_is_the_answer() -> None:
    text = ("llama_print_timings:       total time =   4100.55 ms\n"
            "CUDA error: an illegal memory access was encountered\n  current device: 0, in function ggml_cuda_op")
    assert cls(text).category != "success"


def test_the_timings_block_with_a_failed_exit_is_not_a_success() -> None:
    r = cls("llama_print_timings:       total time =   4100.55 ms", exit_code=1)
    assert r.category != "success"


def test_shutdown_import_error_is_neither_environment_nor_bug() -> None:
    text = ("Exception ignored in: <function Engine.__del__ at 0x7f00>\n"
            "Traceback (most recent call last):\n"
            '  File "/srv/app/engine.py", line 40, in __del__\n'
            "ImportError: sys.meta_path is None, Python is likely shutting down")
    assert cls(text).category not in ("import_env", "software_exception")
    # A real ImportError is still the environment.
    assert cls(tb("ImportError: cannot import name 'foo' from 'bar'")).category == "import_env"


def test_broken_pool_with_a_named_signal_keeps_the_signal() -> None:
    text = ("Fatal Python error: Segmentation fault\n"
            + tb("concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated"
                 " abruptly while the future was running or pending."))
    assert cls(text).category == "segfault_signal"
